/* models/exec.c: binding a model to a micro-batch size, and running one layer's forward and
 * backward over its ops (the profiler and the pipeline runtime both call these). */
#include <stdio.h>
#include <string.h>

#include "op_class.h"

#define MAX_TENSOR_ELEMS ((size_t)1 << 40)
#define MAX_GEMM_DIM     ((size_t)1 << 31)

sp_status sp_model_bind(sp_ctx *ctx, struct sp_model *m, uint32_t batch, uint32_t seq) {
    if (batch == 0)
        return sp_fail(ctx, SP_ERR_INVALID_ARG, "%s: the micro-batch size must be at least 1",
                       m->name);
    struct sp_shape shape = m->input;
    if (m->tokens)
        shape.c = seq ? seq : m->seq_len;
    for (size_t i = 0; i < m->n_layers; i++) {
        struct sp_model_layer *L = &m->layers[i];
        L->saved_elems = L->work_elems = L->param_elems = 0;
        L->fwd_flops = 0;
        size_t mid_max = 0;
        for (size_t j = 0; j < L->n_ops; j++) {
            struct sp_op *op = &L->ops[j];
            const char *why = "";
            if (!sp_op_bind(op, shape, batch, &why))
                return sp_fail(ctx, SP_ERR_INVALID_ARG,
                               "%s: layer %zu (%s): %s (input %u x %u x %u per sample)", m->name, i,
                               L->name, why, shape.c, shape.h, shape.w);
            size_t rows = (size_t)batch * op->out.c * op->out.h;
            if (op->out_elems > MAX_TENSOR_ELEMS || op->saved_elems > MAX_TENSOR_ELEMS ||
                op->work_elems > MAX_TENSOR_ELEMS || op->param_elems > MAX_TENSOR_ELEMS ||
                rows >= MAX_GEMM_DIM)
                return sp_fail(ctx, SP_ERR_LIMIT,
                               "%s: layer %zu (%s): a tensor exceeds 2^40 elements at micro-batch "
                               "size %u",
                               m->name, i, L->name, batch);
            if (j == 0)
                L->in_elems = op->in_elems;
            op->param_offset = L->param_elems;
            L->param_elems += op->param_elems;
            L->saved_elems += op->saved_elems;
            if (j + 1 < L->n_ops) { /* an inner activation, kept for the next op's backward */
                L->saved_elems += op->out_elems;
                mid_max = op->out_elems > mid_max ? op->out_elems : mid_max;
            }
            L->work_elems = op->work_elems > L->work_elems ? op->work_elems : L->work_elems;
            L->fwd_flops += sp_op_fwd_flops(op, batch);
            shape = op->out;
        }
        L->saved_elems += L->in_elems;
        L->out_elems = L->ops[L->n_ops - 1].out_elems;
        L->work_elems += 2 * mid_max; /* the inner gradients, ping-pong */
    }
    m->bound_batch = batch;
    m->bound_seq = m->tokens ? (seq ? seq : m->seq_len) : 0;
    return SP_OK;
}

void sp_layer_init_params(const struct sp_model *m, size_t i, uint64_t seed, float *params) {
    const struct sp_model_layer *L = &m->layers[i];
    uint64_t rng = seed ^ (0x5851f42d4c957f2dull * (i + 1));
    for (size_t j = 0; j < L->n_ops; j++)
        sp_op_init_params(&L->ops[j], &rng, params + L->ops[j].param_offset);
}

static void cpu_copy(void *device, float *dst, const float *src, size_t n) {
    (void)device;
    memcpy(dst, src, n * sizeof *dst);
}

const struct sp_op_runner sp_op_runner_cpu = {sp_op_forward, sp_op_backward, cpu_copy};

void sp_layer_forward_on(const struct sp_op_runner *r, void *device, const struct sp_model *m,
                         size_t i, const struct sp_batch *b, const float *params, float *saved,
                         float *y, float *work) {
    const struct sp_model_layer *L = &m->layers[i];
    struct sp_op_io io = {b, m->bound_batch, NULL, NULL, work, NULL, device};
    const float *x = saved;
    size_t off = L->in_elems;
    if (i == 0 && !m->tokens) /* the images are the first layer's input */
        r->copy(device, saved, b->images, L->in_elems);
    for (size_t j = 0; j < L->n_ops; j++) {
        const struct sp_op *op = &L->ops[j];
        float *op_saved = saved + off;
        off += op->saved_elems;
        float *out = y;
        if (j + 1 < L->n_ops) {
            out = saved + off;
            off += op->out_elems;
        }
        io.params = params + op->param_offset;
        r->forward(op, &io, x, out, op_saved);
        x = out;
    }
}

void sp_layer_backward_on(const struct sp_op_runner *r, void *device, const struct sp_model *m,
                          size_t i, const struct sp_batch *b, const float *params,
                          const float *saved, const float *dy, float *dx, float *dparams,
                          float *work, double *wgrad_ms) {
    const struct sp_model_layer *L = &m->layers[i];
    /* where each op's input and saved part lie */
    const float *op_x[SP_MAX_OPS_PER_LAYER], *op_saved[SP_MAX_OPS_PER_LAYER];
    size_t off = L->in_elems, mid_max = 0, op_work = 0;
    const float *x = saved;
    for (size_t j = 0; j < L->n_ops; j++) {
        const struct sp_op *op = &L->ops[j];
        op_x[j] = x;
        op_saved[j] = saved + off;
        off += op->saved_elems;
        if (j + 1 < L->n_ops) {
            x = saved + off;
            off += op->out_elems;
            mid_max = op->out_elems > mid_max ? op->out_elems : mid_max;
        }
        op_work = op->work_elems > op_work ? op->work_elems : op_work;
    }
    float *grad[2] = {work + op_work, work + op_work + mid_max};
    struct sp_op_io io = {b, m->bound_batch, NULL, NULL, work, wgrad_ms, device};
    const float *d = dy;
    for (size_t j = L->n_ops; j-- > 0;) {
        const struct sp_op *op = &L->ops[j];
        float *dout = j == 0 ? dx : grad[j % 2];
        io.params = params + op->param_offset;
        io.dparams = dparams + op->param_offset;
        r->backward(op, &io, op_x[j], op_saved[j], d, dout);
        d = dout;
    }
}

void sp_layer_forward(const struct sp_model *m, size_t i, const struct sp_batch *b,
                      const float *params, float *saved, float *y, float *work) {
    sp_layer_forward_on(&sp_op_runner_cpu, NULL, m, i, b, params, saved, y, work);
}

void sp_layer_backward(const struct sp_model *m, size_t i, const struct sp_batch *b,
                       const float *params, const float *saved, const float *dy, float *dx,
                       float *dparams, float *work, double *wgrad_ms) {
    sp_layer_backward_on(&sp_op_runner_cpu, NULL, m, i, b, params, saved, dy, dx, dparams, work,
                         wgrad_ms);
}

/* Token models: each sample is a walk t(s+1) = (5 t(s) + 3) mod vocab from a random start, and
 * each position's label is the next token, a rule the model can learn (so a run's loss falls).
 * Images: uniform pixels; the label is the sign pattern of the first channels' means. The LM
 * head takes one label per row of its input: B x S next tokens for the usual token model, one
 * label per image after global pooling; when a chain gives the head another number of rows per
 * sample, row q of a sample takes position q mod S's label (token models) or the sample's. */
sp_status sp_batch_make(sp_ctx *ctx, const struct sp_model *m, uint64_t seed, struct sp_batch *b) {
    memset(b, 0, sizeof *b);
    uint32_t B = m->bound_batch;
    uint64_t rng = seed * 0x9e3779b97f4a7c15ull + 1;
    size_t n_labels, n_tokens, n_images;
    sp_batch_counts(m, &n_labels, &n_tokens, &n_images);
    size_t per_row = n_labels / B; /* the head's rows per sample */
    b->labels = sp_mallocarray(n_labels, sizeof *b->labels);
    if (m->tokens) {
        size_t S = m->bound_seq, n = n_tokens;
        b->tokens = sp_mallocarray(n, sizeof *b->tokens);
        int32_t *next = sp_mallocarray(n, sizeof *next);
        if (!b->tokens || !b->labels || !next) {
            sp_free(next);
            sp_batch_release(b);
            return sp_oom(ctx, "a micro-batch of tokens");
        }
        for (uint32_t s = 0; s < B; s++) {
            uint64_t t = sp_rand_next(&rng) % m->classes;
            for (size_t k = 0; k < S; k++) {
                uint64_t after = (5 * t + 3) % m->classes;
                b->tokens[s * S + k] = (int32_t)t;
                next[s * S + k] = (int32_t)after;
                t = after;
            }
        }
        for (uint32_t s = 0; s < B; s++)
            for (size_t q = 0; q < per_row; q++)
                b->labels[s * per_row + q] = next[s * S + q % S];
        sp_free(next);
        return SP_OK;
    }
    size_t per = (size_t)m->input.c * m->input.h * m->input.w;
    b->images = sp_mallocarray(n_images, sizeof *b->images);
    if (!b->images || !b->labels) {
        sp_batch_release(b);
        return sp_oom(ctx, "a micro-batch of images");
    }
    size_t hw = (size_t)m->input.h * m->input.w;
    for (uint32_t s = 0; s < B; s++) {
        float *img = b->images + s * per;
        sp_fill_uniform(&rng, img, per, 1.0f);
        uint32_t label = 0;
        for (uint32_t c = 0; c < m->input.c && c < 3; c++) {
            double sum = 0.0;
            for (size_t q = 0; q < hw; q++)
                sum += (double)img[c * hw + q];
            label |= (sum > 0.0 ? 1u : 0u) << c;
        }
        for (size_t q = 0; q < per_row; q++)
            b->labels[s * per_row + q] = (int32_t)(label % m->classes);
    }
    return SP_OK;
}

void sp_batch_counts(const struct sp_model *m, size_t *labels, size_t *tokens, size_t *images) {
    const struct sp_model_layer *last = &m->layers[m->n_layers - 1];
    const struct sp_op *head = &last->ops[last->n_ops - 1];
    size_t B = m->bound_batch;
    *labels = B * head->in.c * head->in.h;
    *tokens = m->tokens ? B * m->bound_seq : 0;
    *images = m->tokens ? 0 : B * (size_t)m->input.c * m->input.h * m->input.w;
}

bool sp_batch_alloc_on(const struct sp_exec_backend *be, const struct sp_model *m,
                       struct sp_batch *b) {
    size_t labels, tokens, images;
    sp_batch_counts(m, &labels, &tokens, &images);
    memset(b, 0, sizeof *b);
    bool ok = (b->labels = be->alloc_zeroed(be->device, labels * sizeof *b->labels)) &&
              (!tokens || (b->tokens = be->alloc_zeroed(be->device, tokens * sizeof *b->tokens))) &&
              (!images || (b->images = be->alloc_zeroed(be->device, images * sizeof *b->images)));
    if (!ok)
        sp_batch_release_on(be, b);
    return ok;
}

bool sp_batch_upload(const struct sp_exec_backend *be, const struct sp_model *m,
                     const struct sp_batch *host, struct sp_batch *dst) {
    size_t labels, tokens, images;
    sp_batch_counts(m, &labels, &tokens, &images);
    return be->upload(be->device, dst->labels, host->labels, labels * sizeof *host->labels) &&
           (!tokens ||
            be->upload(be->device, dst->tokens, host->tokens, tokens * sizeof *host->tokens)) &&
           (!images ||
            be->upload(be->device, dst->images, host->images, images * sizeof *host->images));
}

void sp_batch_release_on(const struct sp_exec_backend *be, struct sp_batch *b) {
    if (b->labels)
        be->release(be->device, b->labels);
    if (b->tokens)
        be->release(be->device, b->tokens);
    if (b->images)
        be->release(be->device, b->images);
    memset(b, 0, sizeof *b);
}

void sp_batch_release(struct sp_batch *b) {
    sp_free(b->tokens);
    sp_free(b->labels);
    sp_free(b->images);
    memset(b, 0, sizeof *b);
}

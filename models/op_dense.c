/* models/op_dense.c: the ops that map features: embedding, a standalone norm, linear, and the
 * LM head with its softmax cross-entropy loss. */
#include <math.h>
#include <string.h>

#include "op_class.h"
#include "op_common.h"
#include "op_layout.h"

/* ---- embedding: y[b,s] = tok[token(b,s)] + pos[s]; tables [vocab][H] then [max_seq][H] */

static bool embedding_bind(struct sp_op *op, struct sp_shape in, uint32_t B, const char **why) {
    (void)B;
    if (in.c > op->max_seq || in.c == 0) {
        *why = "the sequence length exceeds the embedding's position table (max_seq_len)";
        return false;
    }
    op->out = (struct sp_shape){in.c, 1, op->hidden};
    op->param_elems = ((size_t)op->vocab + op->max_seq) * op->hidden;
    op->saved_elems = 0;
    op->work_elems = 0;
    return true;
}

static void embedding_forward(const struct sp_op *op, const struct sp_op_io *io, const float *x,
                              float *y, float *saved) {
    (void)x, (void)saved;
    size_t H = op->hidden, S = op->out.c;
    const float *pos = io->params + (size_t)op->vocab * H;
    for (size_t r = 0; r < (size_t)io->B * S; r++) {
        const float *t = io->params + (size_t)io->batch->tokens[r] * H, *p = pos + (r % S) * H;
        for (size_t k = 0; k < H; k++)
            y[r * H + k] = t[k] + p[k];
    }
}

static void embedding_backward(const struct sp_op *op, const struct sp_op_io *io, const float *x,
                               const float *saved, const float *dy, float *dx) {
    (void)x, (void)saved, (void)dx; /* tokens have no gradient */
    size_t H = op->hidden, S = op->out.c;
    double t0 = sp_wgrad_begin(io);
    float *dpos = io->dparams + (size_t)op->vocab * H;
    for (size_t r = 0; r < (size_t)io->B * S; r++) {
        float *dt = io->dparams + (size_t)io->batch->tokens[r] * H, *dp = dpos + (r % S) * H;
        for (size_t k = 0; k < H; k++) {
            dt[k] += dy[r * H + k];
            dp[k] += dy[r * H + k];
        }
    }
    sp_wgrad_end(io, t0);
}

static uint64_t no_flops(const struct sp_op *op, uint32_t B) {
    (void)op, (void)B;
    return 0;
}

static void embedding_init(const struct sp_op *op, uint64_t *rng, float *params) {
    sp_fill_uniform(rng, params, op->param_elems, 0.05f);
}

const struct sp_op_class sp_op_embedding = {"embedding",        embedding_bind, embedding_forward,
                                            embedding_backward, no_flops,       embedding_init};

/* ---- norm: layernorm or rmsnorm over the last dimension (a final norm, e.g. ln_f) */

static bool norm_bind(struct sp_op *op, struct sp_shape in, uint32_t B, const char **why) {
    if (in.w != op->hidden) {
        *why = "the norm's hidden size differs from its input's last dimension";
        return false;
    }
    op->out = in;
    op->param_elems = sp_norm_params(op->norm, op->hidden);
    op->saved_elems = 2 * sp_rows_of(in, B);
    op->work_elems = 0;
    return true;
}

static void norm_forward(const struct sp_op *op, const struct sp_op_io *io, const float *x,
                         float *y, float *saved) {
    const float *beta = op->norm == SP_NORM_LAYER ? io->params + op->hidden : NULL;
    sp_norm_forward(op->norm, sp_rows_of(op->in, io->B), op->hidden, x, io->params, beta, y, saved);
}

static void norm_backward(const struct sp_op *op, const struct sp_op_io *io, const float *x,
                          const float *saved, const float *dy, float *dx) {
    size_t rows = sp_rows_of(op->in, io->B);
    if (dx)
        memset(dx, 0, rows * op->hidden * sizeof *dx);
    float *dbeta = op->norm == SP_NORM_LAYER ? io->dparams + op->hidden : NULL;
    sp_norm_backward(io, op->norm, rows, op->hidden, x, saved, io->params, dy, dx, io->dparams,
                     dbeta);
}

static void norm_init(const struct sp_op *op, uint64_t *rng, float *params) {
    (void)rng;
    sp_fill_const(params, op->param_elems, 0.0f);
    sp_fill_const(params, op->hidden, 1.0f);
}

const struct sp_op_class sp_op_norm = {"norm",        norm_bind, norm_forward,
                                       norm_backward, no_flops,  norm_init};

/* ---- linear: y = x W^T + b over the last dimension */

static bool linear_bind(struct sp_op *op, struct sp_shape in, uint32_t B, const char **why) {
    (void)B;
    if (in.w != op->in_features || op->out_features == 0) {
        *why = "linear's in_features differ from its input's last dimension";
        return false;
    }
    op->out = (struct sp_shape){in.c, in.h, op->out_features};
    op->param_elems =
        (size_t)op->out_features * op->in_features + (op->bias ? op->out_features : 0);
    op->saved_elems = 0;
    op->work_elems = 0;
    return true;
}

static void linear_forward(const struct sp_op *op, const struct sp_op_io *io, const float *x,
                           float *y, float *saved) {
    (void)saved;
    const float *b = op->bias ? io->params + (size_t)op->out_features * op->in_features : NULL;
    sp_mm_forward(sp_rows_of(op->in, io->B), op->in_features, op->out_features, x, io->params, b,
                  y);
}

static void linear_backward(const struct sp_op *op, const struct sp_op_io *io, const float *x,
                            const float *saved, const float *dy, float *dx) {
    (void)saved;
    size_t rows = sp_rows_of(op->in, io->B);
    float *db = op->bias ? io->dparams + (size_t)op->out_features * op->in_features : NULL;
    sp_mm_dw(io, rows, op->in_features, op->out_features, dy, x, io->dparams, db);
    if (dx)
        sp_mm_dx(rows, op->in_features, op->out_features, dy, io->params, dx, 0);
}

static uint64_t linear_flops(const struct sp_op *op, uint32_t B) {
    return 2 * (uint64_t)sp_rows_of(op->in, B) * op->in_features * op->out_features;
}

static void linear_init(const struct sp_op *op, uint64_t *rng, float *params) {
    size_t w = (size_t)op->out_features * op->in_features;
    sp_fill_uniform(rng, params, w, 1.0f / sqrtf((float)op->in_features));
    sp_fill_const(params + w, op->param_elems - w, 0.0f);
}

const struct sp_op_class sp_op_linear = {"linear",        linear_bind,  linear_forward,
                                         linear_backward, linear_flops, linear_init};

/* ---- lm_head: logits = x W^T ([vocab][hidden], no bias); y[b] = mean over sample b's rows of
 * -log softmax(logits)[label]. The micro-batch's loss is the mean of y; its gradient flows back
 * with weight 1 / rows. Saved: the probabilities (rows x vocab); scratch: their gradient. */

static bool head_bind(struct sp_op *op, struct sp_shape in, uint32_t B, const char **why) {
    if (in.w != op->hidden || op->vocab == 0) {
        *why = "the LM head's hidden size differs from its input's last dimension";
        return false;
    }
    op->out = (struct sp_shape){1, 1, 1};
    op->param_elems = (size_t)op->vocab * op->hidden;
    op->saved_elems = sp_rows_of(in, B) * op->vocab;
    op->work_elems = sp_rows_of(in, B) * op->vocab;
    return true;
}

static void head_forward(const struct sp_op *op, const struct sp_op_io *io, const float *x,
                         float *y, float *saved) {
    size_t rows = sp_rows_of(op->in, io->B), V = op->vocab, per = rows / io->B;
    sp_mm_forward(rows, op->hidden, V, x, io->params, NULL, saved);
    for (uint32_t b = 0; b < io->B; b++) {
        double loss = 0.0;
        for (size_t r = b * per; r < (b + 1) * per; r++) {
            float *p = saved + r * V;
            sp_softmax_row(p, V);
            float pl = p[io->batch->labels[r]];
            loss -= log((double)(pl > 1e-30f ? pl : 1e-30f));
        }
        y[b] = (float)(loss / (double)per);
    }
}

static void head_backward(const struct sp_op *op, const struct sp_op_io *io, const float *x,
                          const float *saved, const float *dy, float *dx) {
    (void)dy;
    size_t rows = sp_rows_of(op->in, io->B), V = op->vocab;
    float *dlogits = io->work, inv = 1.0f / (float)rows;
    for (size_t r = 0; r < rows; r++) {
        for (size_t k = 0; k < V; k++)
            dlogits[r * V + k] = saved[r * V + k] * inv;
        dlogits[r * V + (size_t)io->batch->labels[r]] -= inv;
    }
    sp_mm_dw(io, rows, op->hidden, V, dlogits, x, io->dparams, NULL);
    if (dx)
        sp_mm_dx(rows, op->hidden, V, dlogits, io->params, dx, 0);
}

static uint64_t head_flops(const struct sp_op *op, uint32_t B) {
    return 2 * (uint64_t)sp_rows_of(op->in, B) * op->hidden * op->vocab;
}

static void head_init(const struct sp_op *op, uint64_t *rng, float *params) {
    sp_fill_uniform(rng, params, op->param_elems, 1.0f / sqrtf((float)op->hidden));
}

const struct sp_op_class sp_op_lm_head = {"lm_head",     head_bind,  head_forward,
                                          head_backward, head_flops, head_init};

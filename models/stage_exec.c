/* models/stage_exec.c: consecutive layers on one worker, with a saved area per micro-batch slot.
 *
 * Layer l's output is written straight into layer l+1's saved area (its input slot), so a
 * forward copies nothing between layers, and what a slot holds is exactly the sum of its layers'
 * saved_elems: the number profiles report as saved_bytes. */
#include <string.h>

#include "blas.h"
#include "model_impl.h"

static void *cpu_alloc_zeroed(void *device, size_t bytes) {
    (void)device;
    return sp_calloc(1, bytes);
}

static void cpu_release(void *device, void *p) {
    (void)device;
    sp_free(p);
}

/* both directions: the stage's memory is the host's */
static bool cpu_copy(void *device, void *dst, const void *src, size_t bytes) {
    (void)device;
    memcpy(dst, src, bytes);
    return true;
}

static void cpu_sgd(void *device, float *params, float *dparams, size_t n, float lr) {
    (void)device;
    for (size_t q = 0; q < n; q++) {
        params[q] -= lr * dparams[q];
        dparams[q] = 0.0f;
    }
}

static bool cpu_copy_to(void *device, void *dst, void *dst_device, const void *src, size_t bytes) {
    (void)dst_device;
    return cpu_copy(device, dst, src, bytes);
}

static bool cpu_nothing(void *device) {
    (void)device;
    return true;
}

static bool cpu_synchronize(void *device, char *why, size_t cap) {
    (void)device, (void)why, (void)cap;
    return true;
}

static void cpu_mark(void *device) {
    (void)device;
}

static double cpu_marked_ms(void *device) {
    (void)device;
    return -1.0;
}

static void *cpu_alloc_host(void *device, size_t bytes) {
    return cpu_alloc_zeroed(device, bytes);
}

static void cpu_release_host(void *device, void *p) {
    cpu_release(device, p);
}

const struct sp_exec_backend sp_exec_backend_cpu = {
    .ops = &sp_op_runner_cpu,
    .alloc_zeroed = cpu_alloc_zeroed,
    .release = cpu_release,
    .upload = cpu_copy,
    .download = cpu_copy,
    .sgd = cpu_sgd,
    .copy = cpu_copy,
    .copy_to = cpu_copy_to,
    .synchronize = cpu_synchronize,
    .bind_thread = cpu_nothing,
    .mark = cpu_mark,
    .marked_ms = cpu_marked_ms,
    .alloc_host = cpu_alloc_host,
    .release_host = cpu_release_host,
};

void sp_stage_exec_destroy(struct sp_stage_exec *se) {
    if (!se)
        return;
    const struct sp_exec_backend *be = se->be;
    sp_budget_release(se->blas_bytes);
    size_t n = se->last - se->first + 1;
    for (size_t k = 0; se->params && k < n; k++)
        be->release(be->device, se->params[k]);
    for (size_t k = 0; se->dparams && k < n; k++)
        be->release(be->device, se->dparams[k]);
    for (size_t k = 0; se->saved && k < n * se->slots; k++)
        be->release(be->device, se->saved[k]);
    sp_free(se->params);
    sp_free(se->dparams);
    sp_free(se->saved);
    be->release(be->device, se->work);
    be->release(be->device, se->grad[0]);
    be->release(be->device, se->grad[1]);
    sp_free(se);
}

static float *zeros(const struct sp_exec_backend *be, size_t n, size_t *bytes) {
    *bytes += (n ? n : 1) * sizeof(float);
    return be->alloc_zeroed(be->device, (n ? n : 1) * sizeof(float));
}

/* a layer's initial weights, made on the host and uploaded */
static bool init_params(const struct sp_exec_backend *be, const struct sp_model *m, size_t layer,
                        uint64_t seed, float *params) {
    size_t n = m->layers[layer].param_elems;
    if (be == &sp_exec_backend_cpu) {
        sp_layer_init_params(m, layer, seed, params);
        return true;
    }
    float *host = sp_mallocarray(n ? n : 1, sizeof *host);
    if (!host)
        return false;
    sp_layer_init_params(m, layer, seed, host);
    bool ok = be->upload(be->device, params, host, n * sizeof *host);
    sp_free(host);
    return ok;
}

sp_status sp_stage_exec_create(sp_ctx *ctx, const struct sp_model *m, size_t first, size_t last,
                               uint32_t slots, uint64_t seed, struct sp_stage_exec **out) {
    return sp_stage_exec_create_on(ctx, &sp_exec_backend_cpu, m, first, last, slots, seed, out);
}

sp_status sp_stage_exec_create_on(sp_ctx *ctx, const struct sp_exec_backend *be,
                                  const struct sp_model *m, size_t first, size_t last,
                                  uint32_t slots, uint64_t seed, struct sp_stage_exec **out) {
    *out = NULL;
    if (first > last || last >= m->n_layers || slots == 0)
        return sp_fail(ctx, SP_ERR_INVALID_ARG, "layers %zu..%zu with %u slots: no stage of %s",
                       first, last, slots, m->name);
    sp_status loaded = be == &sp_exec_backend_cpu ? sp_blas_open(ctx) : SP_OK;
    if (loaded != SP_OK)
        return loaded;
    /* the CPU's stages compute at once, each with its own OpenBLAS buffer, which OpenBLAS maps
     * at its first product and, when the mapping fails, retries for ever: so the buffer is
     * counted against the memory budget here, where a stage that does not fit can say so */
    size_t blas = be == &sp_exec_backend_cpu ? sp_blas_thread_bytes() : 0;
    if (blas && !sp_budget_reserve(blas))
        return sp_oom(ctx, "reserving OpenBLAS's buffer and a thread's stack for a stage (the "
                           "128 MiB of address space OpenBLAS maps for each stage computing on "
                           "the CPU)");
    size_t n = last - first + 1, work = 0, act = 0, need = 0;
    for (size_t l = first; l <= last; l++) {
        const struct sp_model_layer *L = &m->layers[l];
        need += 2 * L->param_elems + slots * L->saved_elems;
        work = L->work_elems > work ? L->work_elems : work;
        act = L->out_elems > act ? L->out_elems : act;
        act = L->in_elems > act ? L->in_elems : act;
    }
    need = (need + work + 2 * act) * sizeof(float);
    struct sp_stage_exec *se = sp_calloc(1, sizeof *se);
    if (!se) {
        sp_budget_release(blas);
        return sp_oom(ctx, "a stage");
    }
    se->be = be, se->m = m, se->first = first, se->last = last, se->slots = slots;
    se->blas_bytes = blas;
    se->params = sp_calloc(n, sizeof *se->params);
    se->dparams = sp_calloc(n, sizeof *se->dparams);
    se->saved = sp_calloc(n * slots, sizeof *se->saved);
    bool ok = se->params && se->dparams && se->saved;
    for (size_t k = 0; ok && k < n; k++) {
        const struct sp_model_layer *L = &m->layers[first + k];
        ok = (se->params[k] = zeros(be, L->param_elems, &se->bytes)) &&
             (se->dparams[k] = zeros(be, L->param_elems, &se->bytes)) &&
             init_params(be, m, first + k, seed, se->params[k]);
        for (uint32_t s = 0; ok && s < slots; s++)
            ok = (se->saved[s * n + k] = zeros(be, L->saved_elems, &se->bytes)) != NULL;
    }
    ok = ok && (se->work = zeros(be, work, &se->bytes)) &&
         (se->grad[0] = zeros(be, act, &se->bytes)) && (se->grad[1] = zeros(be, act, &se->bytes));
    if (!ok) {
        sp_stage_exec_destroy(se);
        char buf[16];
        return sp_fail(ctx, SP_ERR_NOMEM,
                       "out of memory: layers %zu..%zu of %s need %s (weights, gradients, %u "
                       "micro-batch%s of saved tensors, scratch)",
                       first, last, m->name, sp_format_bytes(need, buf, sizeof buf), slots,
                       slots == 1 ? "" : "es");
    }
    *out = se;
    return SP_OK;
}

float *sp_stage_exec_input(struct sp_stage_exec *se, uint32_t slot) {
    const struct sp_model_layer *L = &se->m->layers[se->first];
    return L->in_elems ? se->saved[slot * (se->last - se->first + 1)] : NULL;
}

void sp_stage_exec_forward(struct sp_stage_exec *se, uint32_t slot, const struct sp_batch *b,
                           float *y, double *fwd_ms) {
    size_t n = se->last - se->first + 1;
    float **saved = se->saved + slot * n;
    for (size_t k = 0; k < n; k++) {
        /* the next layer's input slot, or the caller's buffer after the last layer */
        float *out = k + 1 < n ? saved[k + 1] : y;
        double t0 = fwd_ms ? sp_now_ms() : 0.0;
        sp_layer_forward_on(se->be->ops, se->be->device, se->m, se->first + k, b, se->params[k],
                            saved[k], out, se->work);
        if (fwd_ms)
            fwd_ms[k] = sp_now_ms() - t0;
    }
}

void sp_stage_exec_backward(struct sp_stage_exec *se, uint32_t slot, const struct sp_batch *b,
                            const float *dy, float *dx, double *bwd_ms, double *wgrad_ms) {
    size_t n = se->last - se->first + 1;
    float **saved = se->saved + slot * n;
    const float *d = dy;
    for (size_t k = n; k-- > 0;) {
        float *dout = k > 0 ? se->grad[k % 2] : dx;
        double t0 = bwd_ms ? sp_now_ms() : 0.0, w = 0.0;
        sp_layer_backward_on(se->be->ops, se->be->device, se->m, se->first + k, b, se->params[k],
                             saved[k], d, dout, se->dparams[k], se->work, wgrad_ms ? &w : NULL);
        if (bwd_ms)
            bwd_ms[k] = sp_now_ms() - t0;
        if (wgrad_ms)
            wgrad_ms[k] = w;
        d = dout;
    }
}

void sp_stage_exec_sgd(struct sp_stage_exec *se, float lr) {
    for (size_t k = 0; k <= se->last - se->first; k++) {
        size_t np = se->m->layers[se->first + k].param_elems;
        se->be->sgd(se->be->device, se->params[k], se->dparams[k], np, lr);
    }
}

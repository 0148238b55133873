/* models/op_mlp.c: pre-norm MLP with its residual,
 *   h = norm(x); a = h W1^T + b1; g = gelu(a)            (GELU, GPT-2 / BERT)
 *                  or g = silu(a) * (h W3^T)             (SwiGLU, Llama: W3 the "up" matrix)
 *   y = x + g W2^T + b2
 * x, y (rows, H); a, g (rows, F). Saved: norm stats, h, a, [c = h W3^T], g. Scratch: dg, dc, dh. */
#include <math.h>
#include <string.h>

#include "op_class.h"
#include "op_common.h"
#include "op_layout.h"

static bool bind(struct sp_op *op, struct sp_shape in, uint32_t B, const char **why) {
    if (in.w != op->hidden || op->ffn == 0) {
        *why = "mlp expects an input whose last dimension is its hidden size, and ffn > 0";
        return false;
    }
    op->out = in;
    struct sp_mlp_layout L = sp_mlp_layout(op, B);
    op->param_elems = L.n_params;
    op->saved_elems = L.n_saved;
    op->work_elems = 2 * L.rows * L.F + L.rows * L.H;
    return true;
}

/* GELU, tanh approximation (GPT-2's), and its derivative */
static float gelu(float a) {
    const float k = 0.7978845608f; /* sqrt(2 / pi) */
    return 0.5f * a * (1.0f + tanhf(k * (a + 0.044715f * a * a * a)));
}
static float gelu_grad(float a) {
    const float k = 0.7978845608f;
    float u = k * (a + 0.044715f * a * a * a), t = tanhf(u);
    return 0.5f * (1.0f + t) + 0.5f * a * (1.0f - t * t) * k * (1.0f + 3.0f * 0.044715f * a * a);
}
static float sigmoid(float a) {
    return 1.0f / (1.0f + expf(-a));
}

static void forward(const struct sp_op *op, const struct sp_op_io *io, const float *x, float *y,
                    float *saved) {
    struct sp_mlp_layout L = sp_mlp_layout(op, io->B);
    const float *P = io->params;
    size_t n = L.rows * L.F;
    float *h = saved + L.h, *a = saved + L.a, *c = saved + L.c, *g = saved + L.act;
    sp_norm_forward(op->norm, L.rows, L.H, x, P + L.g,
                    op->norm == SP_NORM_LAYER ? P + L.beta : NULL, h, saved + L.stats);
    sp_mm_forward(L.rows, L.H, L.F, h, P + L.w1, op->bias ? P + L.b1 : NULL, a);
    if (op->act == SP_ACT_SWIGLU) {
        sp_mm_forward(L.rows, L.H, L.F, h, P + L.w3, NULL, c);
        for (size_t k = 0; k < n; k++)
            g[k] = a[k] * sigmoid(a[k]) * c[k];
    } else {
        for (size_t k = 0; k < n; k++)
            g[k] = gelu(a[k]);
    }
    sp_mm_forward(L.rows, L.F, L.H, g, P + L.w2, op->bias ? P + L.b2 : NULL, y);
    for (size_t k = 0; k < L.rows * L.H; k++)
        y[k] += x[k];
}

static void backward(const struct sp_op *op, const struct sp_op_io *io, const float *x,
                     const float *saved, const float *dy, float *dx) {
    struct sp_mlp_layout L = sp_mlp_layout(op, io->B);
    const float *P = io->params;
    float *D = io->dparams;
    size_t n = L.rows * L.F;
    const float *h = saved + L.h, *a = saved + L.a, *c = saved + L.c, *g = saved + L.act;
    float *dg = io->work, *dc = dg + n, *dh = dc + n;
    sp_mm_dw(io, L.rows, L.F, L.H, dy, g, D + L.w2, op->bias ? D + L.b2 : NULL);
    sp_mm_dx(L.rows, L.F, L.H, dy, P + L.w2, dg, 0);
    if (op->act == SP_ACT_SWIGLU) {
        for (size_t k = 0; k < n; k++) { /* dg becomes da */
            float s = sigmoid(a[k]), silu = a[k] * s;
            dc[k] = dg[k] * silu;
            dg[k] = dg[k] * c[k] * (s + silu * (1.0f - s));
        }
        sp_mm_dw(io, L.rows, L.H, L.F, dc, h, D + L.w3, NULL);
    } else {
        for (size_t k = 0; k < n; k++)
            dg[k] *= gelu_grad(a[k]);
    }
    sp_mm_dw(io, L.rows, L.H, L.F, dg, h, D + L.w1, op->bias ? D + L.b1 : NULL);
    sp_mm_dx(L.rows, L.H, L.F, dg, P + L.w1, dh, 0);
    if (op->act == SP_ACT_SWIGLU)
        sp_mm_dx(L.rows, L.H, L.F, dc, P + L.w3, dh, 1);
    if (dx)
        memcpy(dx, dy, L.rows * L.H * sizeof *dx);
    sp_norm_backward(io, op->norm, L.rows, L.H, x, saved + L.stats, P + L.g, dh, dx, D + L.g,
                     op->norm == SP_NORM_LAYER ? D + L.beta : NULL);
}

static uint64_t fwd_flops(const struct sp_op *op, uint32_t B) {
    uint64_t rows = (uint64_t)B * op->in.c * op->in.h;
    return 2 * rows * op->hidden * op->ffn * (op->act == SP_ACT_SWIGLU ? 3 : 2);
}

static void init(const struct sp_op *op, uint64_t *rng, float *params) {
    struct sp_mlp_layout L = sp_mlp_layout(op, 1);
    sp_fill_const(params, L.n_params, 0.0f);
    sp_fill_const(params + L.g, L.H, 1.0f);
    sp_fill_uniform(rng, params + L.w1, L.F * L.H, 1.0f / sqrtf((float)L.H));
    if (op->act == SP_ACT_SWIGLU)
        sp_fill_uniform(rng, params + L.w3, L.F * L.H, 1.0f / sqrtf((float)L.H));
    sp_fill_uniform(rng, params + L.w2, L.H * L.F, 1.0f / sqrtf((float)L.F));
}

const struct sp_op_class sp_op_mlp = {"mlp", bind, forward, backward, fwd_flops, init};

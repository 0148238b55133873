/* models/op_attention.c: pre-norm multi-head self-attention with its residual,
 *   h = norm(x); [q k v] = h Wqkv^T + bqkv; per head P = softmax(q k^T / sqrt(d) [+ causal mask]);
 *   o = P v; y = x + o Wo^T + bo
 * x, y (B*S, H); heads of size d = H / heads. Saved per micro-batch: norm stats (2 per row), h,
 * qkv, P (B x heads x S x S) and o; the backward's scratch holds do, dqkv, one head's dP, dh. */
#include <math.h>
#include <string.h>

#include "blas.h"
#include "op_class.h"
#include "op_common.h"
#include "op_layout.h"

static bool bind(struct sp_op *op, struct sp_shape in, uint32_t B, const char **why) {
    if (in.h != 1 || in.w != op->hidden) {
        *why = "attention expects a sequence (S, hidden) input of its hidden size";
        return false;
    }
    if (op->heads == 0 || op->hidden % op->heads) {
        *why = "attention: hidden must be a multiple of heads";
        return false;
    }
    op->out = in;
    struct sp_attn_layout L = sp_attn_layout(op, B);
    op->param_elems = L.n_params;
    op->saved_elems = L.n_saved;
    op->work_elems = 5 * L.rows * L.H + L.S * L.S;
    return true;
}

static void forward(const struct sp_op *op, const struct sp_op_io *io, const float *x, float *y,
                    float *saved) {
    struct sp_attn_layout L = sp_attn_layout(op, io->B);
    const float *P = io->params;
    size_t H = L.H, S = L.S, d = L.d, H3 = 3 * H;
    float *h = saved + L.h, *qkv = saved + L.qkv, *o = saved + L.o;
    sp_norm_forward(op->norm, L.rows, H, x, P + L.g, op->norm == SP_NORM_LAYER ? P + L.beta : NULL,
                    h, saved + L.stats);
    sp_mm_forward(L.rows, H, H3, h, P + L.wqkv, op->bias ? P + L.bqkv : NULL, qkv);
    float scale = 1.0f / sqrtf((float)d);
    for (uint32_t b = 0; b < io->B; b++)
        for (uint32_t hd = 0; hd < op->heads; hd++) {
            const float *q = qkv + b * S * H3 + hd * d, *k = q + H, *v = q + 2 * H;
            float *p = saved + L.p + ((size_t)b * op->heads + hd) * S * S;
            sp_sgemm(false, true, (int)S, (int)S, (int)d, scale, q, (int)H3, k, (int)H3, 0.0f, p,
                     (int)S);
            for (size_t i = 0; i < S; i++) { /* row softmax, future positions masked */
                float *row = p + i * S;
                size_t n = op->causal ? i + 1 : S;
                sp_softmax_row(row, n);
                for (size_t j = n; j < S; j++)
                    row[j] = 0.0f;
            }
            sp_sgemm(false, false, (int)S, (int)d, (int)S, 1.0f, p, (int)S, v, (int)H3, 0.0f,
                     o + b * S * H + hd * d, (int)H);
        }
    sp_mm_forward(L.rows, H, H, o, P + L.wo, op->bias ? P + L.bo : NULL, y);
    for (size_t k = 0; k < L.rows * H; k++)
        y[k] += x[k];
}

static void backward(const struct sp_op *op, const struct sp_op_io *io, const float *x,
                     const float *saved, const float *dy, float *dx) {
    struct sp_attn_layout L = sp_attn_layout(op, io->B);
    const float *P = io->params;
    float *dP_ = io->dparams;
    size_t H = L.H, S = L.S, d = L.d, H3 = 3 * H, rows = L.rows;
    const float *h = saved + L.h, *qkv = saved + L.qkv, *o = saved + L.o;
    float *d_o = io->work, *dqkv = d_o + rows * H, *dh = dqkv + rows * H3, *dp = dh + rows * H;
    /* output projection */
    sp_mm_dw(io, rows, H, H, dy, o, dP_ + L.wo, op->bias ? dP_ + L.bo : NULL);
    sp_mm_dx(rows, H, H, dy, P + L.wo, d_o, 0);
    float scale = 1.0f / sqrtf((float)d);
    for (uint32_t b = 0; b < io->B; b++)
        for (uint32_t hd = 0; hd < op->heads; hd++) {
            size_t off = b * S * H3 + hd * d;
            const float *q = qkv + off, *k = q + H, *v = q + 2 * H;
            float *dq = dqkv + off, *dk = dq + H, *dv = dq + 2 * H;
            const float *p = saved + L.p + ((size_t)b * op->heads + hd) * S * S;
            const float *dob = d_o + b * S * H + hd * d;
            /* dP = do v^T; dv = P^T do */
            sp_sgemm(false, true, (int)S, (int)S, (int)d, 1.0f, dob, (int)H, v, (int)H3, 0.0f, dp,
                     (int)S);
            sp_sgemm(true, false, (int)S, (int)d, (int)S, 1.0f, p, (int)S, dob, (int)H, 0.0f, dv,
                     (int)H3);
            for (size_t i = 0; i < S; i++) { /* softmax backward: dS = P (dP - rowsum(P dP)) */
                const float *pr = p + i * S;
                float *dr = dp + i * S;
                double dot = 0.0;
                for (size_t j = 0; j < S; j++)
                    dot += (double)pr[j] * (double)dr[j];
                for (size_t j = 0; j < S; j++)
                    dr[j] = pr[j] * (dr[j] - (float)dot);
            }
            /* dq = dS k scale; dk = dS^T q scale */
            sp_sgemm(false, false, (int)S, (int)d, (int)S, scale, dp, (int)S, k, (int)H3, 0.0f, dq,
                     (int)H3);
            sp_sgemm(true, false, (int)S, (int)d, (int)S, scale, dp, (int)S, q, (int)H3, 0.0f, dk,
                     (int)H3);
        }
    sp_mm_dw(io, rows, H, H3, dqkv, h, dP_ + L.wqkv, op->bias ? dP_ + L.bqkv : NULL);
    sp_mm_dx(rows, H, H3, dqkv, P + L.wqkv, dh, 0);
    if (dx)
        memcpy(dx, dy, rows * H * sizeof *dx); /* the residual */
    sp_norm_backward(io, op->norm, rows, H, x, saved + L.stats, P + L.g, dh, dx, dP_ + L.g,
                     op->norm == SP_NORM_LAYER ? dP_ + L.beta : NULL);
}

static uint64_t fwd_flops(const struct sp_op *op, uint32_t B) {
    uint64_t rows = (uint64_t)B * op->in.c, H = op->hidden, S = op->in.c;
    return 2 * rows * H * 4 * H + 4 * (uint64_t)B * S * S * H;
}

static void init(const struct sp_op *op, uint64_t *rng, float *params) {
    struct sp_attn_layout L = sp_attn_layout(op, 1);
    float s = 1.0f / sqrtf((float)op->hidden);
    sp_fill_const(params + L.g, op->hidden, 1.0f);
    sp_fill_const(params + L.beta, L.wqkv - L.beta, 0.0f);
    sp_fill_uniform(rng, params + L.wqkv, 3 * L.H * L.H, s);
    sp_fill_const(params + L.bqkv, L.wo - L.bqkv, 0.0f);
    sp_fill_uniform(rng, params + L.wo, L.H * L.H, s);
    sp_fill_const(params + L.bo, L.n_params - L.bo, 0.0f);
}

const struct sp_op_class sp_op_attention = {"attention", bind, forward, backward, fwd_flops, init};

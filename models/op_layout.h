/* models/op_layout.h: where each op keeps its parameters and saved tensors, as offsets in
 * floats. The CPU ops (models/op_*.c) and the CUDA ops (models/cuda/) read the same layouts, so a
 * profile's byte counts and a checkpoint of weights mean the same on both. */
#ifndef SP_MODELS_OP_LAYOUT_H
#define SP_MODELS_OP_LAYOUT_H

#include "model_impl.h"

/* elements of a shape for B samples */
static inline size_t sp_shape_elems(struct sp_shape s, uint32_t B) {
    return (size_t)B * s.c * s.h * s.w;
}

/* rows of a (c, h, w) tensor for B samples: what a map over w sees */
static inline size_t sp_rows_of(struct sp_shape s, uint32_t B) {
    return (size_t)B * s.c * s.h;
}

/* conv2d's im2col height: Cin x k x k */
static inline size_t sp_conv_k(const struct sp_op *op) {
    return (size_t)op->in_ch * op->kernel * op->kernel;
}

/* attention: parameters [g][beta][Wqkv][bqkv][Wo][bo], saved [stats][h][qkv][P][o] */
struct sp_attn_layout { /* offsets into params and saved */
    size_t g, beta, wqkv, bqkv, wo, bo, n_params;
    size_t stats, h, qkv, p, o, n_saved;
    size_t rows, S, H, d;
};

static inline struct sp_attn_layout sp_attn_layout(const struct sp_op *op, uint32_t B) {
    struct sp_attn_layout L;
    size_t H = op->hidden, S = op->in.c, rows = (size_t)B * S;
    L.rows = rows, L.S = S, L.H = H, L.d = H / op->heads;
    size_t k = 0;
    L.g = k, k += H;
    L.beta = k, k += op->norm == SP_NORM_LAYER ? H : 0;
    L.wqkv = k, k += 3 * H * H;
    L.bqkv = k, k += op->bias ? 3 * H : 0;
    L.wo = k, k += H * H;
    L.bo = k, k += op->bias ? H : 0;
    L.n_params = k;
    k = 0;
    L.stats = k, k += 2 * rows;
    L.h = k, k += rows * H;
    L.qkv = k, k += 3 * rows * H;
    L.p = k, k += (size_t)B * op->heads * S * S;
    L.o = k, k += rows * H;
    L.n_saved = k;
    return L;
}

/* mlp: parameters [g][beta][W1][b1][W3][W2][b2], saved [stats][h][a][c][act] */
struct sp_mlp_layout {
    size_t g, beta, w1, b1, w3, w2, b2, n_params;
    size_t stats, h, a, c, act, n_saved;
    size_t rows, H, F;
};

static inline struct sp_mlp_layout sp_mlp_layout(const struct sp_op *op, uint32_t B) {
    struct sp_mlp_layout L;
    size_t H = op->hidden, F = op->ffn, rows = (size_t)B * op->in.c * op->in.h;
    bool glu = op->act == SP_ACT_SWIGLU;
    L.rows = rows, L.H = H, L.F = F;
    size_t k = 0;
    L.g = k, k += H;
    L.beta = k, k += op->norm == SP_NORM_LAYER ? H : 0;
    L.w1 = k, k += F * H;
    L.b1 = k, k += op->bias ? F : 0;
    L.w3 = k, k += glu ? F * H : 0;
    L.w2 = k, k += H * F;
    L.b2 = k, k += op->bias ? H : 0;
    L.n_params = k;
    k = 0;
    L.stats = k, k += 2 * rows;
    L.h = k, k += rows * H;
    L.a = k, k += rows * F;
    L.c = k, k += glu ? rows * F : 0;
    L.act = k, k += rows * F;
    L.n_saved = k;
    return L;
}

#endif

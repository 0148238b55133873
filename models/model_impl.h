/* models/model_impl.h: the built-in models' private layout: ops, layers' math and the op runners,
 * shared by models/ (and models/cuda/) and the tests. Other rooms use models/stage_exec.h.
 *
 * A model is a chain of layers (what a profile and a plan see); each layer runs one or more ops
 * in sequence (a "transformer" layer is an attention op then an mlp op). Every activation is a
 * float tensor of B samples, each of shape (c, h, w) with w the last, fastest dimension:
 *   sequences    (S, 1, H): S positions of H features
 *   images       (C, H, W)
 *   feature rows (1, 1, F): after global pooling
 * A linear map acts on w; "rows" are B * c * h. All math is fp32 on the CPU (OpenBLAS sgemm).
 *
 * Binding a model to a micro-batch size B and sequence length S (sp_model_bind) fixes every
 * op's element counts: its input, output, what it keeps for the backward ("saved"), its
 * scratch ("work") and its parameters. The byte figures of profiles come from these counts. */
#ifndef SP_MODELS_MODEL_IMPL_H
#define SP_MODELS_MODEL_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "internal.h"
#include "stage_exec.h"

enum sp_op_kind {
    SP_OP_EMBEDDING, /* tokens -> (S,1,H): token table [vocab][H] + position table [max_seq][H] */
    SP_OP_NORM,      /* layernorm or rmsnorm over w */
    SP_OP_ATTENTION, /* x + Wo attn(Wqkv norm(x)): pre-norm self-attention with its residual */
    SP_OP_MLP,       /* x + W2 act(W1 norm(x)): pre-norm MLP (GELU, or SwiGLU with W3) + residual */
    SP_OP_LINEAR,    /* y = x W^T + b over w */
    SP_OP_LM_HEAD,   /* logits = x W^T over w, then mean softmax cross-entropy: output is 1 loss */
    SP_OP_CONV2D,    /* (Cin,H,W) -> (Cout,H',W'), im2col + sgemm, bias */
    SP_OP_BATCHNORM, /* per channel over B x H x W (training statistics) */
    SP_OP_RELU,
    SP_OP_POOL, /* max pool k x k stride s, or global average -> (1,1,C) */
    SP_OP_KIND_COUNT
};

enum sp_norm_kind { SP_NORM_LAYER, SP_NORM_RMS };
enum sp_act_kind { SP_ACT_GELU, SP_ACT_SWIGLU };
enum sp_pool_kind { SP_POOL_MAX, SP_POOL_AVG_GLOBAL };

struct sp_op {
    enum sp_op_kind kind;
    /* configuration (only the fields of the kind are used) */
    uint32_t hidden, heads, ffn, vocab, max_seq; /* transformer ops */
    enum sp_norm_kind norm;
    enum sp_act_kind act;
    bool causal, bias;
    uint32_t in_features, out_features;          /* linear */
    uint32_t in_ch, out_ch, kernel, stride, pad; /* conv2d, pool */
    enum sp_pool_kind pool;
    /* fixed by sp_model_bind; counts of floats for the whole micro-batch */
    struct sp_shape in, out; /* per sample */
    size_t in_elems, out_elems, saved_elems, work_elems;
    size_t param_elems, param_offset; /* in the layer's parameter block */
};

#define SP_MAX_OPS_PER_LAYER 16 /* a layer lists at most 8 ops, and a "transformer" counts 2 */

/* ---- execution (models/exec.c, the ops in models/op_*.c) */

/* sp_layer_init_params: deterministic initial weights of layer i (from seed and i, so that any
 * stage can make its own layers' weights). params[param_elems]. */
void sp_layer_init_params(const struct sp_model *m, size_t i, uint64_t seed, float *params);

/* A layer's saved area, per micro-batch in flight: [its input x: in_elems][op 0 saved][op 0
 * output][op 1 saved][op 1 output]...[last op saved]. The last op's output is the layer's y,
 * which the next layer keeps as its x. So the caller puts x at saved[0] before the forward (the
 * pipeline receives an activation straight into it), and saved_elems is what the layer really
 * holds for its backward. */

/* Forward of layer i: saved[0..in_elems) holds x (layer 0 of an image model copies the batch's
 * images there itself) (nothing for the embedding) -> y[out_elems],
 * the rest of saved[saved_elems] filled; work[work_elems] is scratch. The LM head's y[0] is the
 * micro-batch's loss. */
void sp_layer_forward(const struct sp_model *m, size_t i, const struct sp_batch *b,
                      const float *params, float *saved, float *y, float *work);
/* Backward of layer i: dy[out_elems] (unused by the LM head, whose loss gradient is 1) ->
 * dx[in_elems] (overwritten; NULL when not wanted), dparams[param_elems] accumulated (+=).
 * *wgrad_ms (may be NULL) gains the time spent in the weight-gradient products. */
void sp_layer_backward(const struct sp_model *m, size_t i, const struct sp_batch *b,
                       const float *params, const float *saved, const float *dy, float *dx,
                       float *dparams, float *work, double *wgrad_ms);

/* Op-level entry points (models/op_*.c). Each takes the op with its bound counts. */
struct sp_op_io {
    const struct sp_batch *batch;
    uint32_t B;
    const float *params; /* the op's own parameters */
    float *dparams;      /* their gradients (+=) */
    float *work;         /* op.work_elems */
    double *wgrad_ms;    /* time in weight-gradient products (+=), may be NULL */
    void *device;        /* the CUDA ops' handles (models/cuda/); NULL on the CPU */
};
/* x[in_elems] -> y[out_elems], saved[saved_elems] */
void sp_op_forward(const struct sp_op *op, const struct sp_op_io *io, const float *x, float *y,
                   float *saved);
/* dy[out_elems] -> dx[in_elems] (overwritten, NULL: not wanted) and dparams (+=) */
void sp_op_backward(const struct sp_op *op, const struct sp_op_io *io, const float *x,
                    const float *saved, const float *dy, float *dx);
/* Who runs the ops: the CPU (sp_op_runner_cpu: sp_op_forward, sp_op_backward, memcpy) or the
 * CUDA executor (models/cuda/). The layer code below is the same for both: where each op reads
 * its input and keeps its saved part and output is decided once, here. For a device runner every
 * tensor pointer, and the batch's arrays, are device memory. */
struct sp_op_runner {
    void (*forward)(const struct sp_op *op, const struct sp_op_io *io, const float *x, float *y,
                    float *saved);
    void (*backward)(const struct sp_op *op, const struct sp_op_io *io, const float *x,
                     const float *saved, const float *dy, float *dx);
    void (*copy)(void *device, float *dst, const float *src, size_t n); /* n floats */
};
extern const struct sp_op_runner sp_op_runner_cpu;
void sp_layer_forward_on(const struct sp_op_runner *r, void *device, const struct sp_model *m,
                         size_t i, const struct sp_batch *b, const float *params, float *saved,
                         float *y, float *work);
void sp_layer_backward_on(const struct sp_op_runner *r, void *device, const struct sp_model *m,
                          size_t i, const struct sp_batch *b, const float *params,
                          const float *saved, const float *dy, float *dx, float *dparams,
                          float *work, double *wgrad_ms);

/* sp_op_bind: the op's output shape, saved, work and parameter counts for input shape `in` and
 * micro-batch B; false with *why set when the input does not fit the op. */
bool sp_op_bind(struct sp_op *op, struct sp_shape in, uint32_t B, const char **why);
uint64_t sp_op_fwd_flops(const struct sp_op *op, uint32_t B);
/* sp_op_init_params: initial weights of the op (norm gains 1, biases 0, matrices uniform with
 * scale 1/sqrt(fan-in)) */
void sp_op_init_params(const struct sp_op *op, uint64_t *rng, float *params);

/* Deterministic pseudo-random numbers (splitmix64) for weights and data. */
uint64_t sp_rand_next(uint64_t *state);
float sp_rand_uniform(uint64_t *state); /* [-1, 1) */

#endif

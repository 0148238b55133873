/* models/ops.c: dispatch from an op's kind to its class (models/op_<kind>.c), and the
 * deterministic random numbers weights and data are made from. */
#include "op_class.h"

static const struct sp_op_class *const classes[SP_OP_KIND_COUNT] = {
    [SP_OP_EMBEDDING] = &sp_op_embedding, [SP_OP_NORM] = &sp_op_norm,
    [SP_OP_ATTENTION] = &sp_op_attention, [SP_OP_MLP] = &sp_op_mlp,
    [SP_OP_LINEAR] = &sp_op_linear,       [SP_OP_LM_HEAD] = &sp_op_lm_head,
    [SP_OP_CONV2D] = &sp_op_conv2d,       [SP_OP_BATCHNORM] = &sp_op_batchnorm,
    [SP_OP_RELU] = &sp_op_relu,           [SP_OP_POOL] = &sp_op_pool,
};

bool sp_op_bind(struct sp_op *op, struct sp_shape in, uint32_t B, const char **why) {
    op->in = in;
    if (!classes[op->kind]->bind(op, in, B, why))
        return false;
    op->in_elems = sp_shape_elems(in, B);
    op->out_elems = sp_shape_elems(op->out, B);
    return true;
}

void sp_op_forward(const struct sp_op *op, const struct sp_op_io *io, const float *x, float *y,
                   float *saved) {
    classes[op->kind]->forward(op, io, x, y, saved);
}

void sp_op_backward(const struct sp_op *op, const struct sp_op_io *io, const float *x,
                    const float *saved, const float *dy, float *dx) {
    classes[op->kind]->backward(op, io, x, saved, dy, dx);
}

uint64_t sp_op_fwd_flops(const struct sp_op *op, uint32_t B) {
    return classes[op->kind]->fwd_flops(op, B);
}

void sp_op_init_params(const struct sp_op *op, uint64_t *rng, float *params) {
    classes[op->kind]->init(op, rng, params);
}

uint64_t sp_rand_next(uint64_t *state) { /* splitmix64 */
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

float sp_rand_uniform(uint64_t *state) {
    return (float)((double)(sp_rand_next(state) >> 11) * 0x1.0p-53 * 2.0 - 1.0);
}

void sp_fill_uniform(uint64_t *rng, float *p, size_t n, float scale) {
    for (size_t k = 0; k < n; k++)
        p[k] = scale * sp_rand_uniform(rng);
}

void sp_fill_const(float *p, size_t n, float v) {
    for (size_t k = 0; k < n; k++)
        p[k] = v;
}

/* models/op_class.h: one table entry per op kind (models/ops.c dispatches through it); each
 * models/op_<kind>.c defines its entry. */
#ifndef SP_MODELS_OP_CLASS_H
#define SP_MODELS_OP_CLASS_H

#include "model_impl.h"
#include "op_layout.h"

struct sp_op_class {
    const char *name;
    /* fill out, saved_elems, work_elems, param_elems from in and B; false with *why */
    bool (*bind)(struct sp_op *op, struct sp_shape in, uint32_t B, const char **why);
    void (*forward)(const struct sp_op *op, const struct sp_op_io *io, const float *x, float *y,
                    float *saved);
    void (*backward)(const struct sp_op *op, const struct sp_op_io *io, const float *x,
                     const float *saved, const float *dy, float *dx);
    uint64_t (*fwd_flops)(const struct sp_op *op, uint32_t B);
    void (*init)(const struct sp_op *op, uint64_t *rng, float *params);
};

extern const struct sp_op_class sp_op_embedding, sp_op_norm, sp_op_attention, sp_op_mlp,
    sp_op_linear, sp_op_lm_head, sp_op_conv2d, sp_op_batchnorm, sp_op_relu, sp_op_pool;

/* helpers for init: fill n floats with uniform(-scale, scale), or with a constant */
void sp_fill_uniform(uint64_t *rng, float *p, size_t n, float scale);
void sp_fill_const(float *p, size_t n, float v);

#endif

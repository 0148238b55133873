/* models/stage_exec.h: what the rooms that run a built-in model (runtime/, profiler/) use of
 * models/: a bound model's layers and sizes, a micro-batch of inputs, and a stage executor that
 * runs a run of consecutive layers forward and backward on a backend (the CPU, or a GPU from
 * models/cuda/stage_cuda.h). The ops and the layers' math behind it are models/model_impl.h,
 * private to models/. */
#ifndef SP_MODELS_STAGE_EXEC_H
#define SP_MODELS_STAGE_EXEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "internal.h"

struct sp_op;        /* models/model_impl.h */
struct sp_op_runner; /* models/model_impl.h */

struct sp_shape {
    uint32_t c, h, w;
};

struct sp_model_layer {
    char *name; /* first: sp_json_check_unique_names reads it there */
    char *kind; /* kind as the profile records it: "transformer", "embedding", ... */
    struct sp_op *ops;
    size_t n_ops;
    /* fixed by sp_model_bind */
    size_t in_elems, out_elems; /* the layer's input (0 for embedding) and output */
    size_t saved_elems;         /* every op's saved part plus the inner activations */
    size_t work_elems;          /* largest op scratch */
    size_t param_elems;         /* all ops */
    uint64_t fwd_flops;         /* multiply-adds x 2 of the matrix products, forward */
};

struct sp_model {
    char *name, *source, *preset;
    char *dtype; /* "fp32" or "bf16": what a GPU run uses; the CPU computes in fp32 */
    uint32_t micro_batch_size, seq_len; /* the sample's defaults */
    struct sp_shape input; /* per sample: (S,1,0) for token models, (C,H,W) for images */
    bool tokens;           /* the first layer is an embedding: inputs are token ids */
    uint32_t classes;      /* label range: vocab of the LM head (or the classifier's outputs) */
    struct sp_model_layer *layers;
    size_t n_layers;
    /* bound size */
    uint32_t bound_batch, bound_seq;
};

/* sp_model_bind: fix the element counts for micro-batch size `batch` and sequence length
 * `seq` (token models; 0 keeps the model's). SP_ERR_INVALID_ARG when a shape does not chain
 * (the message names the layer) or seq exceeds a position table, SP_ERR_LIMIT when a tensor
 * would exceed 2^40 elements. */
sp_status sp_model_bind(sp_ctx *ctx, struct sp_model *m, uint32_t batch, uint32_t seq);

/* One micro-batch of inputs: token ids [B*S] or images [B*C*H*W], and labels, one per row of
 * the LM head's input (B*S next tokens for a token model, B for pooled images). Made from a seed,
 * so every stage of a pipeline, and a single worker, see the same data. */
struct sp_batch {
    int32_t *tokens, *labels;
    float *images;
};
sp_status sp_batch_make(sp_ctx *ctx, const struct sp_model *m, uint64_t seed, struct sp_batch *b);
void sp_batch_release(struct sp_batch *b);
/* the lengths of a micro-batch's arrays: labels (one per row of the LM head's input), tokens
 * (token models, else 0), images (floats; image models, else 0) */
void sp_batch_counts(const struct sp_model *m, size_t *labels, size_t *tokens, size_t *images);

/* ---- a run of consecutive layers on one worker (models/stage_exec.c): what the profiler runs
 * (every layer, one slot) and what each pipeline stage runs (its layers, one slot per
 * micro-batch it can hold in flight) */
/* Where a stage's tensors live and how its weights are updated: the CPU (sp_exec_backend_cpu),
 * or a GPU (models/cuda/stage_cuda.c). Sizes are in bytes. */
struct sp_exec_backend {
    const struct sp_op_runner *ops;
    void *device; /* passed to every call below and to the ops */
    void *(*alloc_zeroed)(void *device, size_t bytes);
    void (*release)(void *device, void *p);
    bool (*upload)(void *device, void *dst, const void *src, size_t bytes);   /* host -> stage */
    bool (*download)(void *device, void *dst, const void *src, size_t bytes); /* after the work */
    void (*sgd)(void *device, float *params, float *dparams, size_t n, float lr);
    /* the calls below return when the copy (or the work queued so far) is done; false on a
     * device error */
    bool (*copy)(void *device, void *dst, const void *src, size_t bytes); /* within the stage */
    /* into the memory of another stage of the same process (dst_device: its backend's device) */
    bool (*copy_to)(void *device, void *dst, void *dst_device, const void *src, size_t bytes);
    bool (*synchronize)(void *device, char *why, size_t cap); /* why: the device's error */
    /* make the device current on the calling thread (a worker calls it once, first) */
    bool (*bind_thread)(void *device);
    /* the device's own clock: marked_ms() is the time on the device from mark() to the end of
     * the work the next synchronize() waited for (CUDA events); -1 where there is no such clock
     * (the CPU: the host clock is the measure) */
    void (*mark)(void *device);
    double (*marked_ms)(void *device);
    /* host memory the device copies to and from at full speed (page-locked on a GPU), zeroed:
     * what a stage's tensors cross a network through (the MPI transport's buffers) */
    void *(*alloc_host)(void *device, size_t bytes);
    void (*release_host)(void *device, void *p);
};
extern const struct sp_exec_backend sp_exec_backend_cpu;

struct sp_stage_exec {
    const struct sp_exec_backend *be;
    const struct sp_model *m;
    size_t first, last; /* layers, inclusive */
    uint32_t slots;
    float **params, **dparams; /* [layer - first] */
    float **saved;             /* [slot * n + layer - first] */
    float *work;               /* the largest layer scratch */
    float *grad[2];            /* gradients between layers, ping-pong */
    size_t bytes;              /* everything allocated */
    size_t blas_bytes;         /* OpenBLAS's buffer, counted against the memory budget */
};
/* sp_stage_exec_create: weights from seed (sp_layer_init_params), zero gradients. SP_ERR_NOMEM
 * names the bytes it needed. */
sp_status sp_stage_exec_create(sp_ctx *ctx, const struct sp_model *m, size_t first, size_t last,
                               uint32_t slots, uint64_t seed, struct sp_stage_exec **out);
/* the same on a backend (the weights are made on the host, from the same seed, and uploaded) */
sp_status sp_stage_exec_create_on(sp_ctx *ctx, const struct sp_exec_backend *be,
                                  const struct sp_model *m, size_t first, size_t last,
                                  uint32_t slots, uint64_t seed, struct sp_stage_exec **out);
void sp_stage_exec_destroy(struct sp_stage_exec *se);
/* where the stage's input activation goes for a slot (in_elems of the first layer; NULL when
 * the first layer is the embedding, whose input is the batch's tokens) */
float *sp_stage_exec_input(struct sp_stage_exec *se, uint32_t slot);
/* Forward through the stage: y[out_elems of the last layer]; fwd_ms[n] (may be NULL) gets each
 * layer's time. */
void sp_stage_exec_forward(struct sp_stage_exec *se, uint32_t slot, const struct sp_batch *b,
                           float *y, double *fwd_ms);
/* Backward: dy (NULL when the stage ends in the loss) -> dx[in_elems of the first layer] (NULL:
 * not wanted); gradients accumulate. bwd_ms[n], wgrad_ms[n] (may be NULL) get each layer's
 * backward time and its weight-gradient part. */
void sp_stage_exec_backward(struct sp_stage_exec *se, uint32_t slot, const struct sp_batch *b,
                            const float *dy, float *dx, double *bwd_ms, double *wgrad_ms);
/* plain SGD: params -= lr * dparams, then the gradients are zeroed */
void sp_stage_exec_sgd(struct sp_stage_exec *se, float lr);

/* A micro-batch's arrays in a stage's memory (a GPU's, for the executor there): made zeroed
 * (false when out of memory, nothing left allocated), filled from a host batch (false on a
 * device error), released. */
bool sp_batch_alloc_on(const struct sp_exec_backend *be, const struct sp_model *m,
                       struct sp_batch *b);
bool sp_batch_upload(const struct sp_exec_backend *be, const struct sp_model *m,
                     const struct sp_batch *host, struct sp_batch *dst);
void sp_batch_release_on(const struct sp_exec_backend *be, struct sp_batch *b);

#endif

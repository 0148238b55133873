/* stagepart/models.h: the built-in models, measured by the profiler and trained by the runtime
 * (models/). */
#ifndef STAGEPART_MODELS_H
#define STAGEPART_MODELS_H

#include "stagepart/devices.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------------------------
 * Built-in models (format "stagepart-model", version 1; docs/models.md)
 *
 * A chain of layers that stagepart can run itself, forward and backward, with real math: the
 * CPU backend profiles them (sp_model_profile_cpu) and the runtime trains them pipelined
 * (sp_run). Presets "gpt", "llama", "bert" and "resnet" expand into layers from a few numbers.
 * ------------------------------------------------------------------------------------------- */
typedef struct sp_model sp_model;

#define SP_MODEL_MAX_LAYERS 100000u

/* sp_model_load / sp_model_parse: read, expand and validate a model; it is bound to its own
 * micro_batch_size and seq_len. Returns SP_ERR_IO, SP_ERR_PARSE, SP_ERR_SCHEMA (the message
 * names the file and JSON path), SP_ERR_INVALID_ARG (shapes that do not chain: the message names
 * the layer), SP_ERR_LIMIT, SP_ERR_NOMEM. */
SP_API sp_status sp_model_load(sp_ctx *ctx, const char *path, sp_model **out);
SP_API sp_status sp_model_parse(sp_ctx *ctx, const char *name, const char *data, size_t len,
                                sp_model **out);
SP_API void sp_model_destroy(sp_model *model);

/* sp_model_set_shape: run the model at micro_batch_size samples per micro-batch and, for token
 * models, seq_len positions (0 keeps the current value). Every byte count and the work change
 * with it. Returns SP_ERR_INVALID_ARG (seq_len beyond the position table, or 0 samples),
 * SP_ERR_LIMIT. */
SP_API sp_status sp_model_set_shape(sp_ctx *ctx, sp_model *model, uint32_t micro_batch_size,
                                    uint32_t seq_len);

typedef struct sp_model_info {
    const char *name, *source, *preset; /* preset "" when the layers are explicit */
    const char *dtype;                  /* "fp32" or "bf16" (the CPU always computes in fp32) */
    uint32_t micro_batch_size, seq_len; /* seq_len 0 for image models */
    size_t layers;
    uint64_t param_count; /* parameters of every layer */
} sp_model_info;
SP_API void sp_model_get_info(const sp_model *model, sp_model_info *out);

/* sp_models_load_blas: load OpenBLAS, which the built-in models compute with on the CPU, now
 * rather than when a model first computes (the library loads it at run time, so programs that
 * only read models, profiles and plans never load it). OpenBLAS starts its own thread pool as
 * it loads unless OPENBLAS_NUM_THREADS is set; stagepart computes on one BLAS thread per stage
 * and never uses the pool. Returns SP_ERR_UNSUPPORTED (the library and the loader's reason) or
 * SP_ERR_NOMEM; later calls return the first call's result. */
SP_API sp_status sp_models_load_blas(sp_ctx *ctx);

/* What one layer holds and moves per micro-batch, in fp32 (4 bytes an element), exactly as the
 * executor allocates it. */
typedef struct sp_model_layer_info {
    const char *name, *kind;   /* kind as profiles record it: "transformer", "embedding", ... */
    uint64_t activation_bytes; /* its output (the LM head's: one loss per sample) */
    uint64_t saved_bytes;      /* kept for the backward: its input and every inner tensor */
    uint64_t param_bytes;
    uint64_t fwd_flops; /* of its matrix products, forward (2 x multiply-adds) */
} sp_model_layer_info;
/* sp_model_get_layer: layer i; false when i is out of range. */
SP_API bool sp_model_get_layer(const sp_model *model, size_t i, sp_model_layer_info *out);

typedef struct sp_model_profile_opts {
    uint32_t warmup;        /* untimed iterations first (default 1) */
    uint32_t iters;         /* timed iterations; medians over them (default 5) */
    int core;               /* pin the measuring thread to this core; -1: the last core this process
                             * may run on (default -1) */
    uint64_t seed;          /* weights and data (default 1) */
    const char *model_name; /* the profile's "model"; NULL: the model's own name (default) */
    /* called after each iteration (may be NULL) */
    void (*progress)(void *arg, uint32_t done, uint32_t total);
    void *progress_arg;
    const volatile int *cancel; /* when it becomes nonzero the measurement stops with
                                 * SP_ERR_INTERRUPTED (may be NULL); read by an atomic load, so
                                 * set it by an atomic store (as sp_run_opts.cancel) */
} sp_model_profile_opts;
SP_API void sp_model_profile_opts_init(sp_model_profile_opts *opts);

/* Repeatability of a CPU profile. */
typedef struct sp_model_profile_summary {
    double iteration_ms;      /* median forward + backward of the whole chain */
    double max_cv;            /* largest per-layer coefficient of variation (stddev / median) of
                               * fwd + bwd, over layers taking at least 1 % of the iteration */
    const char *max_cv_layer; /* borrowed from the model */
    double median_cv;
    unsigned threads; /* BLAS threads used: 1 */
    int core;         /* the core measured on, -1 when pinning failed */
} sp_model_profile_summary;

/* One layer as the CPU profile measured it: medians over the timed iterations. */
typedef struct sp_model_layer_timing {
    double fwd_ms, bwd_ms;
    double wgrad_ms; /* the weight-gradient part of bwd_ms */
    double cv;       /* stddev / median of fwd + bwd: how repeatable the layer was */
} sp_model_layer_timing;

/* sp_model_profile_cpu: run the model forward and backward on one pinned thread (OpenBLAS on
 * one thread), warmup + iters times, timing every layer's forward, backward and weight-gradient
 * part with the monotonic clock; *json gets a "stagepart-profile" (docs/formats.md) with the
 * medians, the exact byte counts, and a "measurement" object (per layer: samples, stddev, cv),
 * freed with sp_free. summary may be NULL; layers (NULL: not wanted) gets each of the model's
 * layers' figures, as the profile records them (an array of sp_model_get_info's layer count).
 * Returns SP_ERR_NOMEM (the message says how much the
 * model needs), SP_ERR_INTERRUPTED, SP_ERR_NO_DEVICE (the thread could not start). */
SP_API sp_status sp_model_profile_cpu(sp_ctx *ctx, const sp_model *model,
                                      const sp_model_profile_opts *opts, char **json,
                                      sp_model_profile_summary *summary,
                                      sp_model_layer_timing *layers);

#ifdef __cplusplus
}
#endif
#endif

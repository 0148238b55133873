/* stagepart/plan.h: the plan, a profile cut into stages with every figure: its stages, its
 * summary, and its document (formats/). */
#ifndef STAGEPART_PLAN_H
#define STAGEPART_PLAN_H

#include "stagepart/partition.h"

#ifdef __cplusplus
extern "C" {
#endif

SP_API void sp_plan_destroy(sp_plan *plan);

/* One stage of a plan. Layer indices are 0-based and inclusive: the stage holds layers
 * first_layer .. last_layer, layer_count of them. A stage may be empty (layer_count 0) only in a
 * plan made with allow_empty_stages (a split given with one, as Megatron-LM's layouts allow, or
 * sp_partition with more stages than the profile has places to cut): it holds no layer, costs
 * no time and passes the activation on; first_layer = last_layer = the layer the stages after it
 * begin at (n_layers when none do), first_name and last_name are "". Read layer_count before
 * indexing layers with first_layer or last_layer. */
typedef struct sp_stage {
    uint32_t index;
    uint32_t device; /* index in the device list: s, or with chunks sp_chunk_device(chunk_layout,
                      * P, k), or the device the placement search chose */
    const char *device_name; /* that device's name; "" without a device list */
    size_t first_layer, last_layer;
    size_t layer_count; /* last_layer - first_layer + 1, or 0 for an empty stage */
    const char *first_name, *last_name;
    double fwd_ms, bwd_ms;
    double time_ms; /* fwd_ms + bwd_ms: one micro-batch's forward and backward */
    uint64_t param_bytes;
    uint64_t resident_bytes;  /* sum of the layers' memory_bytes */
    uint64_t saved_bytes;     /* sum of saved_bytes, per micro-batch in flight */
    uint32_t inflight;        /* micro-batches in flight at its device's memory peak: under 1F1B
                               * min(P - index, M); with chunks, read off the schedule's order */
    uint64_t memory_bytes;    /* resident_bytes + inflight * saved_bytes, + (weight_versions - 1)
                               * * param_bytes */
    uint32_t weight_versions; /* weight versions the stage holds: 1, or under pipedream one per
                               * micro-batch in flight (P - index), under 2bw 2 */
    double wgrad_ms;          /* weight-gradient part of bwd_ms; -1 when a layer lacks it */
    double send_ms;           /* transfer of this stage's output to the next stage, and of the
                               * gradient back; 0 for the last stage or without links */
    uint32_t chunk;           /* model chunk on its device (interleaved plans), else 0 */
    double comm_ms;           /* blocking transfers inside time_ms: 2 x (in + out); else 0 */
    double recompute_ms;      /* recomputation inside bwd_ms (those layers keep no saved_bytes) */
    /* replicated stages (sp_partition_replicated): the stage runs on devices device ..
     * device + replicas - 1, each holding all of it and taking every replicas-th micro-batch;
     * time_ms is one micro-batch on one of them */
    uint32_t replicas;   /* 1 unless replicated */
    double allreduce_ms; /* the ring all-reduce of param_bytes among the replicas (0 for one):
                          * once per iteration under a flushing schedule, after every
                          * micro-batch without flushes */
    double share_ms;     /* one micro-batch's share of the stage's devices: time_ms / replicas +
                          * allreduce_ms / M when the schedule flushes, max(time_ms, allreduce_ms)
                          * / replicas when it does not; time_ms for one replica. A replicated
                          * plan's bottleneck is the largest */
} sp_stage;

typedef struct sp_plan_schedule {
    bool present; /* false until a schedule was simulated for the plan */
    sp_schedule schedule;
    uint32_t micro_batches, chunks;
    double iteration_ms, bubble_fraction, efficiency;
} sp_plan_schedule;

/* Figures of the whole plan. */
typedef struct sp_plan_summary {
    sp_solver solver;
    sp_objective objective;
    sp_guarantee guarantee; /* what the solver proved of this plan */
    bool optimal;           /* the plan is optimal for the objective: guarantee exact or proven */
    uint32_t stages, micro_batches;
    uint64_t memory_limit_bytes;     /* 0: none */
    sp_framework framework;          /* the layout its cuts keep to (sp_partition_opts) */
    sp_replica_cost replica_cost;    /* how its all-reduces were charged (replicated plans) */
    double activation_ratio;         /* > 0: PipeDream's activation term was charged */
    bool memory_saved_unknown;       /* the profile's layers record no saved_bytes: the stages'
                                      * memory (and any limit's check) is what stays resident
                                      * alone, without the activations kept for backward */
    bool forward_only;               /* the profile has no backward times (an inference trace):
                                      * the stages balance forward passes alone */
    double bottleneck_ms;            /* largest stage time */
    uint32_t bottleneck_stage;       /* first stage reaching it */
    double lower_bound_ms;           /* max(heaviest layer, total / P) */
    double mean_ms, stddev_ms;       /* over stages; population stddev */
    double imbalance;                /* bottleneck / mean (1.0 = perfect balance) */
    double total_ms;                 /* sum of all layers' fwd_ms + bwd_ms */
    double even_split_bottleneck_ms; /* bottleneck of equal layer counts, same P */
    bool even_split_over_memory;     /* that even split does not fit the memory limits, so its
                                      * bottleneck is no alternative to this plan's */
    double solve_ms;                 /* wall time spent in the solver */
    uint32_t chunks;                 /* model chunks per device: 1, or V for interleaved */
    sp_chunk_layout chunk_layout;    /* where the chunks run: in a loop, or V-shape (zbv and
                                      * dualpipev plans) */
    double target_efficiency;        /* with --micro-batches auto: the target; else 0 */
    sp_comm comm;                    /* how the plan's transfers are charged */
    double formula_iteration_ms;     /* (M-1) x bottleneck + sum of device times (Alpa's formula,
                                      * what --objective iteration minimizes) */
    sp_plan_schedule schedule;       /* the simulated schedule, when present */
    /* ilp solver: how the search ended */
    double mip_gap;            /* relative gap of the objective (0 when optimal) */
    double best_bound_ms;      /* proven lower bound of the objective */
    double objective_ms;       /* the program's objective value */
    const char *solver_status; /* "optimal", "time limit", ...; static; NULL otherwise */
    long long nodes;           /* branch-and-bound nodes */
    uint64_t free_binaries;    /* binaries left after window fixing */
    sp_placement placement;    /* how the stages' devices were chosen */
    double transfer_ms;        /* sum of the stages' send_ms, each boundary's transfer time one
                                * way (what the placement search minimizes second) */
    uint32_t gpus;             /* replicated plans: the devices used (the stages' replicas
                                * summed); 0: one device per stage */
    uint32_t profile_sms;      /* the GPU SMs the profile's times were measured on (profile
                                * --sms N); 0: a whole GPU. `run --gpu-split` judges balance only
                                * where each stage's partition has that many */
} sp_plan_summary;

SP_API const sp_plan_summary *sp_plan_get_summary(const sp_plan *plan);
SP_API size_t sp_plan_get_stage_count(const sp_plan *plan);
/* sp_plan_get_stage: stage i, or NULL when out of range. Borrowed. */
SP_API const sp_stage *sp_plan_get_stage(const sp_plan *plan, size_t i);
SP_API const char *sp_plan_get_model(const sp_plan *plan);
/* The names and kinds of the profile's layers the plan was made from, in order (plans record
 * them so that `check` can match a changed profile and `export` can name modules). Borrowed;
 * NULL when i is out of range or the plan file did not record them. */
SP_API const char *sp_plan_get_layer_name(const sp_plan *plan, size_t i);
SP_API const char *sp_plan_get_layer_kind(const sp_plan *plan, size_t i);
SP_API size_t sp_plan_get_layer_count(const sp_plan *plan);
/* sp_plan_get_layer_recomputed: whether the plan recomputes layer i's forward in the backward. */
SP_API bool sp_plan_get_layer_recomputed(const sp_plan *plan, size_t i);

/* With SP_MICRO_BATCHES_AUTO: every micro-batch count tried and its simulated efficiency, in
 * increasing M; *count = 0 otherwise. Borrowed. */
typedef struct sp_mb_point {
    uint32_t micro_batches;
    double efficiency;
} sp_mb_point;
SP_API const sp_mb_point *sp_plan_get_micro_batch_search(const sp_plan *plan, size_t *count);

/* sp_plan_load: read and validate a "stagepart-plan" file; sp_plan_parse: the same from a
 * buffer (`name` is used in messages). Every problem is reported with the file and JSON path.
 * The stages must cover layers 0..profile_layers-1 contiguously, in order. Returns SP_ERR_IO,
 * SP_ERR_PARSE, SP_ERR_SCHEMA, SP_ERR_LIMIT or SP_ERR_NOMEM. */
SP_API sp_status sp_plan_load(sp_ctx *ctx, const char *path, sp_plan **out);
SP_API sp_status sp_plan_parse(sp_ctx *ctx, const char *name, const char *data, size_t len,
                               sp_plan **out);

/* sp_plan_set_command: record the command line that made the plan (written as
 * generator.command). The string is copied. Returns SP_ERR_NOMEM or SP_ERR_INVALID_ARG. */
SP_API sp_status sp_plan_set_command(sp_ctx *ctx, sp_plan *plan, const char *command);

/* sp_plan_to_json: the plan as a "stagepart-plan" version 1 document (docs/formats.md),
 * pretty-printed, ending in a newline. *out is freed with sp_free(). */
SP_API sp_status sp_plan_to_json(sp_ctx *ctx, const sp_plan *plan, char **out);
/* sp_plan_write: sp_plan_to_json written atomically to path (sp_write_file_atomic). */
SP_API sp_status sp_plan_write(sp_ctx *ctx, const sp_plan *plan, const char *path);

#ifdef __cplusplus
}
#endif
#endif

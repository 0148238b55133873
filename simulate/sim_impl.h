/* simulate/sim_impl.h: the schedule simulator's internals, shared by the simulate command's writers
 * and by the partitioner (which simulates candidate plans). */
#ifndef SP_SIMULATE_SIM_IMPL_H
#define SP_SIMULATE_SIM_IMPL_H

#include "internal.h"

/* A pipeline to simulate: K = P * V virtual stages, virtual stage k on device
 * sp_chunk_device(layout, P, k). */
struct sp_pipeline {
    uint32_t P, V, M;
    sp_schedule schedule;
    sp_chunk_layout layout;
    const double *f;          /* f[K]: forward time of one micro-batch */
    const double *b;          /* b[K]: full backward time (input + weight gradients) */
    const double *w;          /* w[K]: weight-gradient part of b; required when the schedule
                               * splits backwards (sp_schedule_splits_backward) */
    const double *send;       /* send[K]: delay of the boundary k -> k+1, both directions */
    const uint64_t *saved;    /* saved[K]: bytes held per micro-batch in flight; may be NULL */
    const uint64_t *resident; /* resident[devices]: bytes held regardless; may be NULL */
    /* replicated stages (one chunk each): stage k runs on replicas[k] devices, one after the
     * other in stage order, micro-batch m on its replica m mod replicas[k]; under a flushing
     * schedule each stage then all-reduces its gradients for allreduce[k] after its last
     * backward. NULL: one device per stage, no all-reduce */
    const uint32_t *replicas;
    const double *allreduce;
};

/* sp_pipeline_devices: the devices the pipeline runs on: P, or the stages' replicas summed. */
static inline uint32_t sp_pipeline_devices(const struct sp_pipeline *pl) {
    if (!pl->replicas)
        return pl->P;
    uint32_t n = 0;
    for (uint32_t k = 0; k < pl->P; k++)
        n += pl->replicas[k];
    return n;
}

/* One op of a device's list, in the schedule's order. kind: 'F' forward, 'B' full backward,
 * 'I' its input-gradient part, 'W' its weight-gradient part, 'O' a forward of (stage, mb)
 * overlapped with a full backward of (stage2, mb2) (DualPipeV). */
struct sp_sched_op {
    uint32_t stage, mb;
    char kind;
    uint32_t stage2, mb2;
};

/* sp_schedule_async: whether the schedule runs without flushes (pipedream, 2bw): the simulator
 * measures its steady state (async.c) and stages keep several weight versions. */
static inline bool sp_schedule_async(sp_schedule schedule) {
    return schedule == SP_SCHEDULE_PIPEDREAM || schedule == SP_SCHEDULE_2BW;
}
/* sp_stage_weight_versions: the weight versions stage s of P holds: one per micro-batch in flight
 * under pipedream (P - s), two under 2bw, else one. */
static inline uint32_t sp_stage_weight_versions(sp_schedule schedule, uint32_t s, uint32_t p) {
    return schedule == SP_SCHEDULE_PIPEDREAM ? p - s : schedule == SP_SCHEDULE_2BW ? 2 : 1;
}

/* sp_schedule_splits_backward: whether the schedule runs I and W apart (needs wgrad_ms). */
bool sp_schedule_splits_backward(sp_schedule schedule);
/* sp_schedule_chunks_needed: chunks per device the schedule runs: 1, 2 (V-shape), or 0 for any
 * V >= 2. */
uint32_t sp_schedule_chunks_needed(sp_schedule schedule);

/* sp_schedule_build: every device's op list for the pipeline, concatenated: device d's ops are
 * ops[offset[d] .. offset[d+1]). Checks what the schedule needs (wgrad when it splits backwards,
 * chunks and their layout, M a multiple of the rounds for the interleaved ones, M >= 2P for
 * DualPipeV) and fails with SP_ERR_INVALID_ARG naming it. */
sp_status sp_schedule_build(sp_ctx *ctx, const struct sp_pipeline *pl, struct sp_sched_op **ops,
                            size_t **offset);

/* sp_schedule_build_devices: sp_schedule_build, and with replicated stages each stage's list
 * dealt to its replicas (micro-batch m to replica m mod r, the order kept): device d's ops are
 * ops[offset[d] .. offset[d+1]) for d < sp_pipeline_devices(pl) (replicas.c). */
sp_status sp_schedule_build_devices(sp_ctx *ctx, const struct sp_pipeline *pl,
                                    struct sp_sched_op **ops, size_t **offset);
/* sp_plan_device_ops: each device's op list for the plan under `schedule` with M micro-batches,
 * as the simulator orders and keeps them (ops[offset[d] .. offset[d+1]) for d < *devices: the
 * plan's stages, or its replicas). Both freed with sp_free (plan_ops.c). */
sp_status sp_plan_device_ops(sp_ctx *ctx, const sp_plan *plan, sp_schedule schedule, uint32_t M,
                             struct sp_sched_op **ops, size_t **offset, uint32_t *devices);
/* sp_replica_policy_lists: replicated stages under 1f1b, pipedream or 2bw: each replica's op
 * list as PipeDream's workers' policy runs it on the pipeline's times (f, b and send required):
 * offset[D + 1] and ops[2 x M x P] (replicas_policy.c). */
sp_status sp_replica_policy_lists(sp_ctx *ctx, const struct sp_pipeline *pl,
                                  struct sp_sched_op *ops, size_t *offset);
/* sp_replica_device: the device of stage k's micro-batch mb (replicated stages, replicas.c's
 * order); base[k] = the replicas of the stages before k. */
static inline uint32_t sp_replica_device(const struct sp_pipeline *pl, const uint32_t *base,
                                         uint32_t k, uint32_t mb) {
    return base[k] + mb % pl->replicas[k];
}

/* sp_schedule_to_csv: the pipeline's op order as torch's schedule CSV, one row per rank
 * (schedule_csv.c). *out is freed with sp_free. */
sp_status sp_schedule_to_csv(sp_ctx *ctx, const struct sp_pipeline *pl, char **out);
/* sp_schedule_parse_csv: a torch schedule CSV read as op lists for the pipeline (P rows; every
 * forward once, every backward once as B or as I and W, on its stage's rank), as
 * sp_schedule_build gives them. SP_ERR_PARSE naming the row and action. */
sp_status sp_schedule_parse_csv(sp_ctx *ctx, const char *name, const char *text, size_t len,
                                const struct sp_pipeline *pl, struct sp_sched_op **ops,
                                size_t **offset);

struct sp_sim {
    sp_sim_summary summary;
    sp_sim_device *devices; /* [P] */
    sp_sim_op *ops;         /* every op with its times, when kept */
    size_t n_ops;
    char *title; /* model and plan, for timelines */
};

/* sp_simulate_ops: the event simulation of given op lists (borrowed); sp_simulate_pipeline
 * builds the schedule's lists first (sp_simulate wraps it for plans). */
sp_status sp_simulate_ops(sp_ctx *ctx, const struct sp_pipeline *pl, const struct sp_sched_op *ops,
                          const size_t *offset, bool keep_ops, sp_sim **out);
sp_status sp_simulate_pipeline(sp_ctx *ctx, const struct sp_pipeline *pl, bool keep_ops,
                               sp_sim **out);
/* sp_simulate_steady_state: a schedule without flushes (sp_schedule_async) run for M + 3P
 * micro-batches, its figures those of M micro-batches in the steady state (async.c) */
sp_status sp_simulate_steady_state(sp_ctx *ctx, const struct sp_pipeline *pl, bool keep_ops,
                                   sp_sim **out);

/* sp_simulate_plan: sp_simulate without starting a new call on ctx (keeps its warnings), for
 * the partitioner. */
sp_status sp_simulate_plan(sp_ctx *ctx, const sp_plan *plan, const sp_sim_opts *opts, sp_sim **out);

/* ---- in-flight micro-batches (simulate/inflight.c) */

/* sp_device_chunk_stage: the virtual stage of device d's chunk c (c = stage / P) under the
 * layout: cP + d in a loop; d, then 2P-1-d V-shape. */
static inline uint32_t sp_device_chunk_stage(sp_chunk_layout layout, uint32_t P, uint32_t d,
                                             uint32_t c) {
    return layout == SP_CHUNKS_V && c == 1 ? 2 * P - 1 - d : c * P + d;
}

/* sp_chunk_states: device d of a pipeline with chunks (P devices, V chunks, M micro-batches,
 * the schedule's op order and chunk layout): the in-flight micro-batches of each of its chunks
 * (c = stage / P) right after each forward, keeping only states no other state holds at least as
 * much of in every chunk (a memory peak, for any non-negative bytes per chunk, is one of them).
 * *states gets n x V counts (chunk c of state i at [i * V + c]), freed with sp_free. */
sp_status sp_chunk_states(sp_ctx *ctx, sp_schedule schedule, uint32_t P, uint32_t V, uint32_t M,
                          uint32_t d, uint32_t **states, size_t *n_states);

/* sp_stage_inflight: micro-batches whose activations stage s of p holds at its peak with m
 * micro-batches, one chunk per device, counted as the simulator counts (+1 per forward, -1 per
 * full backward or W): GPipe m; 1F1B min(p - s, m); ZB-H1 min(p, m), since its deferred Ws keep
 * the later stages' activations as long as stage 0 keeps its own. tests/unit/test_simulate.c
 * checks each against the simulation. */
uint32_t sp_stage_inflight(sp_schedule schedule, uint32_t s, uint32_t p, uint32_t m);

/* sp_chunk_peak_counts: device d of a pipeline with chunks: how many micro-batches of each of
 * its chunks it holds at its memory peak for saved[V] bytes per chunk, counts[V] out. */
sp_status sp_chunk_peak_counts(sp_ctx *ctx, sp_schedule schedule, uint32_t P, uint32_t V,
                               uint32_t M, uint32_t d, const uint64_t *saved, uint32_t *counts);

#endif

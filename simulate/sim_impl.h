/* simulate/sim_impl.h: the schedule simulator's internals, shared by the simulate command's writers
 * and by the partitioner (which simulates candidate plans). */
#ifndef SP_SIMULATE_SIM_IMPL_H
#define SP_SIMULATE_SIM_IMPL_H

#include "internal.h"

/* A pipeline to simulate: K = P * V virtual stages, virtual stage k on device k mod P. */
struct sp_pipeline {
    uint32_t P, V, M;
    sp_schedule schedule;
    const double *f;          /* f[K]: forward time of one micro-batch */
    const double *b;          /* b[K]: full backward time (input + weight gradients) */
    const double *w;          /* w[K]: weight-gradient part of b; required for ZB-H1 */
    const double *send;       /* send[K]: delay of the boundary k -> k+1, both directions */
    const uint64_t *saved;    /* saved[K]: bytes held per micro-batch in flight; may be NULL */
    const uint64_t *resident; /* resident[P]: bytes held regardless; may be NULL */
};

/* One op of a device's list, in the schedule's order. */
struct sp_sched_op {
    uint32_t stage, mb;
    char kind; /* 'F', 'B', 'W' */
};

/* sp_schedule_build: every device's op list for the pipeline, concatenated: device d's ops are
 * ops[offset[d] .. offset[d+1]). Checks what the schedule needs (wgrad for ZB-H1, M a multiple
 * of P for interleaved) and fails with SP_ERR_INVALID_ARG naming it. */
sp_status sp_schedule_build(sp_ctx *ctx, const struct sp_pipeline *pl, struct sp_sched_op **ops,
                            size_t **offset);

struct sp_sim {
    sp_sim_summary summary;
    sp_sim_device *devices; /* [P] */
    sp_sim_op *ops;         /* every op with its times, when kept */
    size_t n_ops;
    char *title; /* model and plan, for timelines */
};

/* sp_simulate_pipeline: the event simulation itself (sp_simulate wraps it for plans). */
sp_status sp_simulate_pipeline(sp_ctx *ctx, const struct sp_pipeline *pl, bool keep_ops,
                               sp_sim **out);

/* sp_simulate_plan: sp_simulate without starting a new call on ctx (keeps its warnings), for
 * the partitioner. */
sp_status sp_simulate_plan(sp_ctx *ctx, const sp_plan *plan, const sp_sim_opts *opts, sp_sim **out);

/* ---- in-flight micro-batches (simulate/inflight.c) */

/* sp_interleaved_states: device d of an interleaved pipeline (P devices, V chunks, M
 * micro-batches, Megatron's op order as the simulator runs it): the in-flight micro-batches of
 * each chunk right after each forward, keeping only states no other state holds at least as much
 * of in every chunk (a memory peak, for any non-negative bytes per chunk, is one of them).
 * *states gets n x V counts (chunk c of state i at [i * V + c]), freed with sp_free. */
sp_status sp_interleaved_states(sp_ctx *ctx, uint32_t P, uint32_t V, uint32_t M, uint32_t d,
                                uint32_t **states, size_t *n_states);

/* sp_stage_inflight: micro-batches whose activations stage s of p holds under 1F1B with m
 * micro-batches: min(p - s, m). */
uint32_t sp_stage_inflight(uint32_t s, uint32_t p, uint32_t m);

/* sp_interleaved_peak_counts: device d of an interleaved pipeline: how many micro-batches of each
 * chunk it holds at its memory peak for saved[V] bytes per chunk, counts[V] out. */
sp_status sp_interleaved_peak_counts(sp_ctx *ctx, uint32_t P, uint32_t V, uint32_t M, uint32_t d,
                                     const uint64_t *saved, uint32_t *counts);

#endif

/* formats/plan_impl.h: the plan object, built by the partitioner from stage boundaries. */
#ifndef SP_FORMATS_PLAN_IMPL_H
#define SP_FORMATS_PLAN_IMPL_H

#include "internal.h"

struct sp_plan {
    char *model;
    char *command; /* NULL until sp_plan_set_command */
    char profile_sha256[65];
    size_t n_layers;
    sp_plan_summary summary;
    size_t n_stages;
    sp_stage *stages;         /* stages[n_stages] */
    char *names;              /* first/last names of the stages, NUL-separated */
    const char **layer_names; /* layer_names[n_layers] (and kinds), or NULL when not recorded */
    const char **layer_kinds;
    char *layer_pool;
    bool *recomputed;    /* recomputed[n_layers], or NULL when no layer is */
    sp_mb_point *search; /* search[n_search]: the M tried by --micro-batches auto */
    size_t n_search;
    char *device_pool; /* the stages' device names, NUL-separated */
};

/* sp_plan_set_devices: stage k runs on device[k] (NULL: keep each stage's) named names[k]
 * (copied; NULL: every name ""). */
sp_status sp_plan_set_devices(sp_ctx *ctx, sp_plan *plan, const uint32_t *device,
                              const char *const *names);

/* sp_plan_build: a plan with the given stage boundaries: stage s holds layers
 * [bounds[s], bounds[s+1]) with bounds[0] = 0 < ... < bounds[P] = n. Computes every stage figure
 * and the summary except solver, objective, optimal, even_split_bottleneck_ms, solve_ms and the
 * schedule, which the caller sets. `opts` must be resolved (micro_batches > 0). speed[P] (or
 * NULL) divides stage s's times; opts->links gives each boundary's send_ms. */
sp_status sp_plan_build(sp_ctx *ctx, const sp_profile *profile, const sp_partition_opts *opts,
                        const double *speed, const size_t *bounds, sp_plan **out);
/* the same, with recompute[n] (or NULL): the layers whose forward the backward recomputes
 * (their recompute_ms joins bwd_ms, their saved_bytes are not kept) */
sp_status sp_plan_build_recompute(sp_ctx *ctx, const sp_profile *profile,
                                  const sp_partition_opts *opts, const double *speed,
                                  const size_t *bounds, const bool *recompute, sp_plan **out);

/* sp_plan_set_layers: record the profile's layer names and kinds (copied). */
sp_status sp_plan_set_layers(sp_ctx *ctx, sp_plan *plan, size_t n, const char *const *names,
                             const char *const *kinds);

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

#endif

/* partitioner/model/cost.h: a plan from stage boundaries, with every figure
 * (partitioner/model/cost.c). */
#ifndef SP_PARTITIONER_COST_H
#define SP_PARTITIONER_COST_H

#include "plan_impl.h"

/* sp_plan_build: a plan with the given stage boundaries: stage s holds layers
 * [bounds[s], bounds[s+1]) with bounds[0] = 0 < ... < bounds[P] = n (<= where the caller allows
 * empty stages). Computes every stage figure
 * and the summary except solver, objective, optimal, even_split_bottleneck_ms, solve_ms and the
 * schedule, which the caller sets. `opts` must be resolved (micro_batches > 0). speed[P] (or
 * NULL) divides stage s's times; opts->links gives each boundary's send_ms. */
sp_status sp_plan_build(sp_ctx *ctx, const sp_profile *profile, const sp_partition_opts *opts,
                        const double *speed, const size_t *bounds, sp_plan **out);
/* the same without the layers' names and kinds (sp_plan_get_layer_name gives NULL): a plan only
 * compared or simulated, never written (the even split, a search's candidates), for which
 * copying a 100,000-layer profile's names was half a millisecond a plan */
sp_status sp_plan_figures(sp_ctx *ctx, const sp_profile *profile, const sp_partition_opts *opts,
                          const double *speed, const size_t *bounds, sp_plan **out);
/* the plan simulated under `schedule`, its figures attached: every plan carries what its schedule
 * is predicted to achieve */
sp_status sp_plan_simulate(sp_ctx *ctx, sp_plan *plan, sp_schedule schedule);
/* sp_plan_build with recompute[n] (or NULL): the layers whose forward the backward recomputes
 * (their recompute_ms joins bwd_ms, their saved_bytes are not kept) */
sp_status sp_plan_build_recompute(sp_ctx *ctx, const sp_profile *profile,
                                  const sp_partition_opts *opts, const double *speed,
                                  const size_t *bounds, const bool *recompute, sp_plan **out);

/* whether no layer of the profile saves anything for backward (every saved_bytes 0, as when
 * the profile has none): its plans' memory is then only what stays resident */
bool sp_profile_saves_nothing(const sp_profile *profile);
/* whether the profile times forward passes alone: no layer has a backward time, some a forward
 * (an inference trace; imports mark it "forward_only") */
bool sp_profile_forward_only(const sp_profile *profile);

#endif

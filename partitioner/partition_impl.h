/* partitioner/partition_impl.h: what the partitioner's files share: the devices the stages run
 * on and the chain for the options (setup.c), and the steps of sp_partition (partition.c) that
 * live in their own files: the solvers (solve_dp.c, solve_vshape.c, solve_interleaved.c, the
 * GLPK program's set-up in ilp_setup.c, placement in solve_placed.c), a plan against the memory
 * limits (plan_memory.c), a solved plan's completion (plan_finish.c), empty stages
 * (empty_stages.c) and a given split (given.c). The files call one way: partition.c calls the
 * solvers and the plan's completion, the solvers call setup.c, chain.c and each other (the ilp
 * starts from the DP), and nothing calls back into partition.c. */
#ifndef SP_PARTITIONER_PARTITION_IMPL_H
#define SP_PARTITIONER_PARTITION_IMPL_H

#include "chain.h"
#include "ilp.h"
#include "placement.h"
#include "plan_impl.h"

/* The devices the stages run on (opts, else the profile's), as per-stage speeds and memory. */
struct sp_stage_devices {
    double *speed;    /* [P] or NULL when every speed is 1 */
    uint64_t *memory; /* [P] or NULL */
    const sp_devices *list;
};

/* the stages' devices (sp_stage_devices_init) and their release */
void sp_stage_devices_release(struct sp_stage_devices *d);
sp_status sp_stage_devices_init(sp_ctx *ctx, const sp_profile *profile, const sp_partition_opts *o,
                                struct sp_stage_devices *d);

/* the chain the DP solves for these options and devices (partitioner/chain.h) */
sp_status sp_chain_for_opts(sp_ctx *ctx, struct sp_chain *c, const sp_profile *profile,
                            const sp_partition_opts *o, const struct sp_stage_devices *d);

/* why no plan exists: too few allowed cuts, a block that fits nowhere, or how far the best
 * placement reaches (SP_ERR_INFEASIBLE with the reason) */
sp_status sp_explain_infeasible(sp_ctx *ctx, const sp_profile *profile, const struct sp_chain *c,
                                const sp_partition_opts *o);

/* the largest stage time of these boundaries, in ticks */
int64_t sp_max_stage_time(const struct sp_chain *c, const size_t *bounds);

/* the exact DP's boundaries for o->objective (solve_dp.c) */
sp_status sp_solve_dp(sp_ctx *ctx, const sp_profile *profile, const sp_partition_opts *o,
                      const struct sp_stage_devices *d, size_t *bounds);

/* SP_ERR_INVALID_ARG unless M fits a loop-chunk schedule's rounds (torch's rule: M a multiple of
 * max(1, M / P)); SP_OK for one chunk or a V layout (partition.c) */
sp_status sp_check_rounds(sp_ctx *ctx, const sp_partition_opts *o);

/* the exact V-shape partition (zbv, dualpipev) into 2P chunks: bounds[2P + 1] (solve_vshape.c).
 * slack_64ths > 0 relaxes the device-load cap to the least bottleneck x (1 + slack_64ths / 64),
 * under which the chunks are balanced (--objective iteration searches over it). */
sp_status sp_solve_vshape(sp_ctx *ctx, const sp_profile *profile, const sp_partition_opts *o,
                          const struct sp_stage_devices *d, unsigned slack_64ths, size_t *bounds);

/* the exact partition of loop-placed chunks (interleaved schedules, --chunks V >= 2):
 * bounds[P V + 1] (layer indices) and, in res, whether it is proven and its bound and gap, as the
 * ilp reports them (solve_interleaved.c; res->bounds stays NULL) */
sp_status sp_solve_interleaved(sp_ctx *ctx, const sp_profile *profile, const sp_partition_opts *o,
                               const struct sp_stage_devices *d, size_t *bounds,
                               struct sp_ilp_result *res);

/* --allow-empty-stages (empty_stages.c): the stages that can hold layers, min(P, places to cut
 * + 1), P when empty stages are not allowed or when the dp solver places chunks in a loop (the
 * interleaved search places empty chunks itself); and the P-stage plan of a plan solved for that
 * many, with the empty stages first and every figure, the solver's own kept */
uint32_t sp_stages_with_layers(const sp_profile *profile, const sp_partition_opts *o);
sp_status sp_plan_with_empty_stages(sp_ctx *ctx, const sp_profile *profile,
                                    const sp_partition_opts *o, const struct sp_stage_devices *d,
                                    const sp_plan *solved, sp_plan **out);

/* SP_ERR_INFEASIBLE naming the stage when a built plan passes a memory limit */
sp_status sp_check_plan_memory(sp_ctx *ctx, const sp_plan *plan, const sp_partition_opts *o,
                               const struct sp_stage_devices *d);

/* drop recomputation where the stage fits without it (the ILP may choose more than needed) */
void sp_trim_recompute(const sp_profile *profile, const struct sp_chain *c, const size_t *bounds,
                       bool *recompute);

/* the GLPK program's boundaries, recomputed layers and placement (ilp_setup.c) */
sp_status sp_solve_ilp(sp_ctx *ctx, const sp_profile *profile, const sp_partition_opts *o,
                       const struct sp_stage_devices *d, size_t *bounds, bool *recompute,
                       const struct sp_placement_classes *pc, bool inject,
                       struct sp_ilp_result *res);

/* the plan for solved boundaries (and recomputed layers, or NULL): build, check memory,
 * compare with the even split on the same devices, record the ilp's figures (or NULL),
 * simulate (plan_finish.c) */
sp_status sp_plan_finish(sp_ctx *ctx, const sp_profile *profile, const sp_partition_opts *o,
                         const struct sp_stage_devices *d, const size_t *bounds,
                         const bool *recompute, const struct sp_ilp_result *ilp, double solve_ms,
                         sp_plan **out);

/* the plan simulated under `schedule`, its figures attached (plan_finish.c) */
sp_status sp_plan_simulate(sp_ctx *ctx, sp_plan *plan, sp_schedule schedule);

/* stage k runs on device[k] of list: record it in the plan */
sp_status sp_record_placement(sp_ctx *ctx, sp_plan *plan, const sp_devices *list,
                              const size_t *device);

/* --placement search: the GLPK program chooses every stage's device */
sp_status sp_plan_placed(sp_ctx *ctx, const sp_profile *profile, const sp_partition_opts *o,
                         const struct sp_stage_devices *d, sp_plan **out);

#endif

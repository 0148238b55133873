/* partitioner/partition_impl.h: what the partitioner's three parts share. The entry points
 * (the files directly in partitioner/: sp_partition in partition.c, the solver table in
 * solver_table.c, a plan's completion in plan_finish.c, empty stages, given splits, data parallel,
 * replicated stages); the model every solver shares (model/: the devices the stages run on and the
 * chain for the options in setup.c, the chain in chain.c, a plan's figures in cost.c, memory
 * against the limits in plan_memory.c and chunk_memory.c, recomputation covers, device classes);
 * and the solvers (solvers/: dp*, vshape*, interleaved*, ilp*, placed*, baselines, replicated_*).
 * One flow: sp_partition resolves the options, picks one solver from the table, builds the chain
 * once, runs the solver (sp_solver_fn) and finishes its solution into the plan once. The parts
 * call one way: entry points call solvers and the model, solvers call the model and each other
 * (the ilp starts from the DP), the model calls only itself (scripts/check-layers.sh). */
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

/* the chain the DP solves for these options and devices (partitioner/model/chain.h), built from the
 * profile, or restaged from `base` (same profile) when base is not NULL */
sp_status sp_chain_for_opts(sp_ctx *ctx, struct sp_chain *c, const sp_profile *profile,
                            const struct sp_chain *base, const sp_partition_opts *o,
                            const struct sp_stage_devices *d);

/* What sp_partition hands to every solver: the profile, the resolved options, the devices the
 * stages run on, and the profile's chain under the options' stage model (its sums built once per
 * sp_partition; restaged per micro-batch count tried). A solver needing another stage model
 * (chunks as virtual stages, no memory caps) restages `chain`. */
struct sp_problem {
    const sp_profile *profile;
    const sp_partition_opts *o;
    const struct sp_stage_devices *d;
    const struct sp_chain *chain;
};

/* What a solver returns; sp_solution_init allocates bounds (and recompute with o->recompute),
 * sp_solution_release frees what the solver added. */
struct sp_solution {
    size_t *bounds;              /* [P V + 1] layer indices */
    bool *recompute;             /* [n] layers recomputed, or NULL */
    struct sp_ilp_result search; /* search.found: the search's figures, recorded in the plan */
    sp_guarantee guarantee;      /* what the solver proved of its plan: every solver sets it
                                  * (sp_solution_init: SP_GUARANTEE_NONE, which claims nothing) */
    /* --placement search: the chosen devices in stage order (owned), and each pipeline stage's
     * index in the full list; NULL otherwise */
    sp_devices *devices;
    sp_links *links;
    size_t *device;
};
sp_status sp_solution_init(sp_ctx *ctx, const struct sp_problem *pb, struct sp_solution *sol);
void sp_solution_release(struct sp_solution *sol);

/* One interface for every solver: boundaries (and choices) for the problem, or a status with
 * the context's message. SP_ERR_INFEASIBLE without a message: sp_partition explains it. */
typedef sp_status (*sp_solver_fn)(sp_ctx *ctx, const struct sp_problem *pb,
                                  struct sp_solution *sol);

/* why no plan exists: too few allowed cuts, a block that fits nowhere, or how far the best
 * placement reaches (SP_ERR_INFEASIBLE with the reason) */
sp_status sp_explain_infeasible(sp_ctx *ctx, const sp_profile *profile, const struct sp_chain *c,
                                const sp_partition_opts *o);

/* the largest stage time of these boundaries, in ticks */
int64_t sp_max_stage_time(const struct sp_chain *c, const size_t *bounds);

/* SP_ERR_INVALID_ARG unless M fits a loop-chunk schedule's rounds (torch's rule: M a multiple of
 * max(1, M / P)); SP_OK for one chunk or a V layout (setup.c) */
sp_status sp_check_rounds(sp_ctx *ctx, const sp_partition_opts *o);

/* ---- the solvers */

/* the exact DP on pb->chain for o->objective (dp.c); sp_dp_bounds: its boundaries alone */
sp_status sp_solve_dp(sp_ctx *ctx, const struct sp_problem *pb, struct sp_solution *sol);
sp_status sp_dp_bounds(sp_ctx *ctx, const struct sp_problem *pb, size_t *bounds);

/* the exact V-shape partition (zbv, dualpipev) into 2P chunks (vshape.c); and for
 * --objective iteration, the best simulated of the balanced-chunk plans under relaxed device-load
 * caps (vshape_iteration.c) */
sp_status sp_solve_vshape(sp_ctx *ctx, const struct sp_problem *pb, struct sp_solution *sol);
sp_status sp_solve_vshape_iteration(sp_ctx *ctx, const struct sp_problem *pb,
                                    struct sp_solution *sol);
/* slack_64ths > 0 relaxes the device-load cap to the least bottleneck x (1 + slack_64ths / 64),
 * under which the chunks are balanced: bounds[2P + 1] */
sp_status sp_vshape_bounds(sp_ctx *ctx, const struct sp_problem *pb, unsigned slack_64ths,
                           size_t *bounds);

/* the exact partition of loop-placed chunks (interleaved schedules, --chunks V >= 2), whether it
 * is proven and its bound and gap in sol->search (interleaved.c) */
sp_status sp_solve_interleaved(sp_ctx *ctx, const struct sp_problem *pb, struct sp_solution *sol);

/* the GLPK program (ilp.c): boundaries and recomputed layers; sp_ilp_program with
 * placement classes (pc) also each stage's class, in sol->search.stage_class */
sp_status sp_solve_ilp(sp_ctx *ctx, const struct sp_problem *pb, struct sp_solution *sol);
sp_status sp_ilp_program(sp_ctx *ctx, const struct sp_problem *pb, struct sp_placement_classes *pc,
                         struct sp_solution *sol);

/* --placement search: the GLPK program chooses every stage's device (placed.c) */
sp_status sp_solve_placed(sp_ctx *ctx, const struct sp_problem *pb, struct sp_solution *sol);

/* the baselines (baselines.c): equal layer counts, balanced param_bytes */
sp_status sp_solve_uniform(sp_ctx *ctx, const struct sp_problem *pb, struct sp_solution *sol);
sp_status sp_solve_parameters(sp_ctx *ctx, const struct sp_problem *pb, struct sp_solution *sol);

/* --allow-empty-stages (empty_stages.c): the stages that can hold layers, min(P, places to cut
 * + 1), P when empty stages are not allowed or when the dp solver places chunks in a loop (the
 * interleaved search places empty chunks itself); and the P-stage plan of a plan solved for that
 * many, with the empty stages first and every figure, the solver's own kept */
uint32_t sp_stages_with_layers(const sp_profile *profile, const sp_partition_opts *o);
sp_status sp_plan_with_empty_stages(sp_ctx *ctx, const sp_profile *profile,
                                    const sp_partition_opts *o, const struct sp_stage_devices *d,
                                    const sp_plan *solved, sp_plan **out);

/* SP_ERR_INFEASIBLE naming the stage when a built plan passes a memory limit */
/* sp_partition_framed (framework_cuts.c): what sp_partition (gpus 0) or sp_partition_replicated
 * make of opts, on a copy of the profile with the cuts opts->framework's layout cannot make
 * forbidden; the plan records the framework, so check and evaluate re-plan under it.
 * SP_ERR_INVALID_ARG naming why when the profile's layers do not make the framework's groups */
sp_status sp_partition_framed(sp_ctx *ctx, const sp_profile *profile, const sp_partition_opts *opts,
                              uint32_t gpus, sp_plan **out);
/* sp_warn_resident_only: when a memory limit was given and the profile saves nothing for
 * backward (sp_profile_saves_nothing, cost.h), a warning that only resident memory was checked */
void sp_warn_resident_only(sp_ctx *ctx, const sp_profile *profile, bool limited);
/* sp_warn_profile_caveats: a warning when the profile has no backward times (the plan balances
 * forward passes, sp_profile_forward_only), and when the schedule runs weight gradients apart on
 * estimated wgrad_ms */
void sp_warn_profile_caveats(sp_ctx *ctx, const sp_profile *profile, sp_schedule schedule);
sp_status sp_check_plan_memory(sp_ctx *ctx, const sp_plan *plan, const sp_partition_opts *o,
                               const struct sp_stage_devices *d);
/* the same as a yes or no, with no message */
bool sp_plan_fits_memory(const sp_plan *plan, const sp_partition_opts *o,
                         const struct sp_stage_devices *d);

/* drop recomputation where the stage fits without it (the ILP may choose more than needed) */
void sp_trim_recompute(const sp_profile *profile, const struct sp_chain *c, const size_t *bounds,
                       bool *recompute);

/* The plan for a solution of the solver `by`: built on its devices (the chosen ones with
 * placement), checked against memory when the solver does not keep to it, compared with the even
 * split on the same devices, what the solver proved and its search's figures recorded, simulated
 * (plan_finish.c) */
sp_status sp_plan_finish(sp_ctx *ctx, const struct sp_problem *pb, const sp_solver_info *by,
                         const struct sp_solution *sol, double solve_ms, sp_plan **out);

/* stage k runs on device[k] of list: record it in the plan */
sp_status sp_record_placement(sp_ctx *ctx, sp_plan *plan, const sp_devices *list,
                              const size_t *device);

#endif

/* partitioner/plan_finish.c: a solved plan made complete: built with its figures, checked against
 * memory, compared with the even split on the same devices, simulated under its schedule; and the
 * devices a placed plan's stages run on recorded. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "baselines.h"
#include "chunk_memory.h"
#include "cost.h"
#include "partition_impl.h"
#include "placement.h"
#include "sim_impl.h"

/* The even split to compare with: equal layer counts; with --allow-empty-stages and more
 * stages than places to cut, the stages that can hold layers split evenly and the others empty
 * first (as empty_stages.c places them) */
static sp_status even_bounds(sp_ctx *ctx, const struct sp_problem *pb, uint32_t K, size_t *even) {
    size_t places = pb->chain->n_pos - 2;
    uint32_t filled = pb->o->allow_empty_stages && places + 1 < K ? (uint32_t)places + 1 : K;
    for (uint32_t k = 0; k < K - filled; k++)
        even[k] = 0;
    return sp_uniform_bounds(ctx, pb->profile, pb->chain, filled, even + (K - filled));
}

/* the search's figures in the plan, and a warning when it stopped short of a proof */
static void record_search(sp_ctx *ctx, const sp_partition_opts *o, const sp_solver_info *by,
                          const struct sp_ilp_result *ilp, sp_plan *plan) {
    sp_plan_summary *m = &plan->summary;
    m->mip_gap = ilp->mip_gap;
    m->best_bound_ms = ilp->best_bound;
    m->objective_ms = ilp->objective_ms;
    m->solver_status = ilp->status;
    m->nodes = ilp->nodes;
    m->free_binaries = ilp->free_binaries;
    if (!ilp->optimal && ilp->status && strcmp(ilp->status, "search limit") == 0)
        sp_warn(ctx,
                "the interleaved search tries only the round boundaries nearest the chain DP's "
                "plan, too many to try them all at %u x %u chunks over these layers%s: the plan "
                "is the best found, %.2f%% above the proven bound, not proven optimal; with "
                "fewer --chunks it tries them all",
                o->stages, o->chunks, ilp->stopped ? ", and stopped at the time limit" : "",
                100 * ilp->mip_gap);
    else if (!ilp->optimal)
        sp_warn(ctx,
                "the %s stopped at the time limit (%g s): the plan is the best found, %.2f%% "
                "above the proven bound; raise --time-limit to prove it",
                by->solver == SP_SOLVER_ILP ? "ilp solver" : "interleaved search", o->time_limit_s,
                100 * ilp->mip_gap);
}

/* The plan on the solution's devices (o, d: the problem's, or the chosen ones with placement) */
static sp_status finish_on(sp_ctx *ctx, const struct sp_problem *pb, const sp_partition_opts *o,
                           const struct sp_stage_devices *d, const sp_solver_info *by,
                           const struct sp_solution *sol, double solve_ms, sp_plan **out) {
    uint32_t K = o->stages * o->chunks; /* virtual stages */
    size_t *even = sp_mallocarray((size_t)K + 1, sizeof *even);
    if (!even)
        return sp_oom(ctx, "partitioning");
    sp_plan *plan = NULL;
    sp_status st =
        sp_plan_build_recompute(ctx, pb->profile, o, d->speed, sol->bounds, sol->recompute, &plan);
    if (st == SP_OK && !(by->takes & SP_SOLVER_TAKES_MEMORY)) /* its plans ignore the limits */
        st = sp_check_plan_memory(ctx, plan, o, d);
    if (st == SP_OK)
        st = even_bounds(ctx, pb, K, even);
    if (st == SP_OK) {
        /* what the solver proved, in its own word */
        plan->summary.guarantee = sol->guarantee;
        plan->summary.optimal =
            sol->guarantee == SP_GUARANTEE_EXACT || sol->guarantee == SP_GUARANTEE_PROVEN;
        if (sol->search.found)
            record_search(ctx, o, by, &sol->search, plan);
        plan->summary.solve_ms = solve_ms;
        /* the even split on the same devices and links, figured the same way */
        sp_plan *even_plan = NULL;
        st = sp_plan_figures(ctx, pb->profile, o, d->speed, even, &even_plan);
        if (st == SP_OK) {
            plan->summary.even_split_bottleneck_ms = even_plan->summary.bottleneck_ms;
            plan->summary.even_split_over_memory = !sp_plan_fits_memory(even_plan, o, d);
        }
        sp_plan_destroy(even_plan);
    }
    if (st == SP_OK)
        st = sp_plan_simulate(ctx, plan, o->schedule);
    sp_free(even);
    if (st != SP_OK) {
        sp_plan_destroy(plan);
        return st;
    }
    *out = plan;
    return SP_OK;
}

sp_status sp_plan_finish(sp_ctx *ctx, const struct sp_problem *pb, const sp_solver_info *by,
                         const struct sp_solution *sol, double solve_ms, sp_plan **out) {
    *out = NULL;
    if (!sol->devices)
        return finish_on(ctx, pb, pb->o, pb->d, by, sol, solve_ms, out);
    /* placement: figured on the devices chosen (and the links between them) in stage order */
    sp_partition_opts o2 = *pb->o;
    o2.devices = sol->devices;
    o2.links = sol->links;
    o2.placement = SP_PLACEMENT_ORDER;
    struct sp_stage_devices d2;
    sp_plan *plan = NULL;
    sp_status st = sp_stage_devices_init(ctx, pb->profile, &o2, &d2);
    if (st == SP_OK)
        st = finish_on(ctx, pb, &o2, &d2, by, sol, solve_ms, &plan);
    if (st == SP_OK)
        st = sp_record_placement(ctx, plan, pb->d->list, sol->device);
    sp_stage_devices_release(&d2);
    if (st != SP_OK) {
        sp_plan_destroy(plan);
        return st;
    }
    *out = plan;
    return SP_OK;
}

/* A plan built on devices chosen from `list` (device[s]: pipeline stage s's index there) records
 * their indices and names in the full list, chunk k on stage k mod P's device: the placement
 * search's plans, and a placed plan re-evaluated (sp_plan_from_split with placed_as). */
sp_status sp_record_placement(sp_ctx *ctx, sp_plan *plan, const sp_devices *list,
                              const size_t *device) {
    size_t K = sp_plan_get_stage_count(plan);
    uint32_t P = plan->summary.stages;
    uint32_t *index = sp_mallocarray(K, sizeof *index);
    const char **names = sp_mallocarray(K, sizeof *names);
    sp_status st = index && names ? SP_OK : sp_oom(ctx, "placing stages");
    for (size_t k = 0; st == SP_OK && k < K; k++) {
        index[k] = (uint32_t)device[k % P];
        names[k] = sp_devices_get_device(list, device[k % P])->name;
    }
    if (st == SP_OK)
        st = sp_plan_set_devices(ctx, plan, index, names);
    if (st == SP_OK)
        plan->summary.placement = SP_PLACEMENT_SEARCH;
    sp_free(index);
    sp_free(names);
    return st;
}

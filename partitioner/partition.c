/* partitioner/partition.c: sp_partition, the entry point and its one flow: validate and resolve
 * the options, find the devices the stages run on (setup.c), pick the solver from the table
 * (solver_table.c), build the profile's chain once, solve, and finish the plan (plan_finish.c);
 * once, or for --micro-batches auto once per micro-batch count tried. And sp_plan_options, the
 * options a plan was made with. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cost.h"
#include "devices_impl.h"
#include "partition_impl.h"
#include "sim_impl.h"
#include "solver_table.h"

void sp_partition_opts_init(sp_partition_opts *opts) {
    memset(opts, 0, sizeof *opts);
    opts->stages = 4;
    opts->micro_batches = 0;
    opts->target_efficiency = 0.9;
    opts->objective = SP_OBJECTIVE_BOTTLENECK;
    opts->solver = SP_SOLVER_DP;
    opts->schedule = SP_SCHEDULE_1F1B;
    opts->memory_limit_bytes = 0;
    opts->devices = NULL;
    opts->links = NULL;
    opts->comm = SP_COMM_OVERLAP;
    opts->chunks = 1;
    opts->time_limit_s = 30;
}

/* why a solver found no plan, when it did not say */
static sp_status explain(sp_ctx *ctx, const struct sp_problem *pb) {
    const sp_partition_opts *o = pb->o;
    uint32_t K = o->stages * o->chunks;
    if (o->chunks > 1 && sp_profile_get_layer_count(pb->profile) >= K)
        return sp_fail(ctx, SP_ERR_INFEASIBLE,
                       "no split into %u x %u interleaved chunks fits %s: each device holds its "
                       "chunks' memory_bytes and, at every point of the interleaved order, the "
                       "saved_bytes of the micro-batches in flight. Raise the limit, use more "
                       "stages, fewer micro-batches or --solver ilp --recompute auto",
                       o->stages, o->chunks,
                       o->memory_limit_bytes ? "the memory limit" : "the devices' memory");
    return sp_explain_infeasible(ctx, pb->profile, pb->chain, o);
}

/* One complete plan for resolved options: the profile's chain restaged for them, the solver
 * once, the plan finished once. */
static sp_status plan_once(sp_ctx *ctx, const sp_profile *profile, const struct sp_chain *base,
                           const sp_partition_opts *o, const struct sp_stage_devices *d,
                           const struct sp_solver_desc *solver, sp_plan **out) {
    *out = NULL;
    struct sp_chain chain;
    sp_status st = sp_chain_for_opts(ctx, &chain, profile, base, o, d);
    if (st != SP_OK)
        return st;
    struct sp_problem pb = {.profile = profile, .o = o, .d = d, .chain = &chain};
    struct sp_solution sol;
    st = sp_solution_init(ctx, &pb, &sol);
    double t0 = sp_now_ms();
    if (st == SP_OK)
        st = solver->solve(ctx, &pb, &sol);
    double solve_ms = sp_now_ms() - t0;
    if (st == SP_ERR_INFEASIBLE && !*sp_ctx_get_errmsg(ctx))
        st = explain(ctx, &pb);
    if (st == SP_OK)
        st = sp_plan_finish(ctx, &pb, &solver->info, &sol, solve_ms, out);
    sp_solution_release(&sol);
    sp_chain_release(&chain);
    if (st != SP_OK && !*sp_ctx_get_errmsg(ctx))
        sp_fail(ctx, st, "%s", sp_strerror(st));
    return st;
}

/* --micro-batches auto: the smallest M whose simulated efficiency reaches the target. M = P,
 * 2P, 4P, ... until it does, then bisection between the last two; every M tried is recorded.
 * A larger M never lowers the efficiency of the same split, but it can change the split (memory
 * holds min(P - s, M) micro-batches), so each M gets its own plan. */
#define SP_AUTO_MAX_FACTOR 4096u

struct mb_point {
    uint32_t m;
    double eff;
};

static sp_status plan_auto(sp_ctx *ctx, const sp_profile *profile, const struct sp_chain *base,
                           sp_partition_opts o, const struct sp_stage_devices *d,
                           const struct sp_solver_desc *solver, sp_plan **out) {
    struct mb_point tried[64];
    unsigned n_tried = 0;
    sp_plan *best = NULL;
    uint32_t lo = 0, hi = 0, m = o.stages;
    /* interleaved: multiples of P only (torch's and Megatron's rules both hold); dualpipev
     * needs M >= 2P */
    uint32_t step =
        o.chunks > 1 && sp_schedule_chunk_layout(o.schedule) == SP_CHUNKS_LOOP ? o.stages : 1;
    if (o.schedule == SP_SCHEDULE_DUALPIPEV)
        m = 2 * o.stages;
    uint64_t limit = (uint64_t)o.stages * SP_AUTO_MAX_FACTOR;
    if (limit > SP_MAX_MICRO_BATCHES)
        limit = SP_MAX_MICRO_BATCHES;
    sp_status st = SP_OK;
    while (st == SP_OK) {
        o.micro_batches = m;
        sp_plan *plan = NULL;
        st = plan_once(ctx, profile, base, &o, d, solver, &plan);
        if (st != SP_OK)
            break;
        double eff = plan->summary.schedule.efficiency;
        /* For M >= P the split no longer changes with M (in-flight counts stop growing), and
         * as M grows the efficiency tends to mean / bottleneck stage time: beyond that no M
         * helps. */
        double ceiling = plan->summary.bottleneck_ms > 0
                             ? plan->summary.mean_ms / plan->summary.bottleneck_ms
                             : 1.0;
        if (m >= o.stages && ceiling < o.target_efficiency && eff < o.target_efficiency) {
            sp_plan_destroy(plan);
            st = sp_fail(ctx, SP_ERR_INFEASIBLE,
                         "no micro-batch count reaches %.1f%% efficiency: the best split into %u "
                         "stages has an imbalance of %.3f, which caps the efficiency of any "
                         "schedule at %.1f%% however large M grows (%.1f%% at M = %u). Use fewer "
                         "stages, a lower --target-efficiency, or a profile with finer layers",
                         100 * o.target_efficiency, o.stages, 1 / ceiling, 100 * ceiling, 100 * eff,
                         m);
            break;
        }
        if (n_tried < 64)
            tried[n_tried++] = (struct mb_point){m, eff};
        if (eff >= o.target_efficiency) {
            sp_plan_destroy(best);
            best = plan;
            hi = m;
        } else {
            sp_plan_destroy(plan);
            lo = m;
        }
        if (!hi) { /* still growing */
            if ((uint64_t)m * 2 > limit) {
                st = sp_fail(ctx, SP_ERR_INFEASIBLE,
                             "no micro-batch count up to %u reaches %.1f%% efficiency under %s "
                             "(best: %.1f%% at M = %u)",
                             m, 100 * o.target_efficiency, sp_schedule_name(o.schedule), 100 * eff,
                             m);
                break;
            }
            m *= 2;
        } else if (hi - lo > step) {
            m = lo + (hi - lo) / step / 2 * step;
        } else {
            break;
        }
    }
    if (st != SP_OK) {
        sp_plan_destroy(best);
        return st;
    }
    /* sort the tried points by M for the record */
    for (unsigned i = 1; i < n_tried; i++)
        for (unsigned k = i; k > 0 && tried[k - 1].m > tried[k].m; k--) {
            struct mb_point t = tried[k];
            tried[k] = tried[k - 1];
            tried[k - 1] = t;
        }
    best->search = sp_mallocarray(n_tried, sizeof *best->search);
    if (!best->search) {
        sp_plan_destroy(best);
        return sp_oom(ctx, "recording the micro-batch search");
    }
    for (unsigned i = 0; i < n_tried; i++) {
        best->search[i].micro_batches = tried[i].m;
        best->search[i].efficiency = tried[i].eff;
    }
    best->n_search = n_tried;
    best->summary.target_efficiency = o.target_efficiency;
    *out = best;
    return SP_OK;
}

/* --allow-empty-stages with fewer places to cut than stages - 1: the plan for `filled` stages,
 * then the empty ones placed (empty_stages.c) */
static sp_status plan_some_empty(sp_ctx *ctx, const sp_profile *profile,
                                 const struct sp_chain *base, const sp_partition_opts *o,
                                 const struct sp_stage_devices *d,
                                 const struct sp_solver_desc *solver, bool automatic,
                                 uint32_t filled, sp_plan **out) {
    if (o->chunks > 1 || d->list || o->links || o->placement == SP_PLACEMENT_SEARCH)
        return sp_fail(ctx, SP_ERR_UNSUPPORTED,
                       "--allow-empty-stages: %u stages, and the profile has places to cut for "
                       "only %u; empty stages are placed on one chunk per device, identical "
                       "devices and no links (no --chunks, V schedules, --devices, --links or "
                       "--placement search)%s",
                       o->stages, filled,
                       o->chunks > 1 && sp_schedule_chunk_layout(o->schedule) == SP_CHUNKS_LOOP
                           ? "; the default solver places empty interleaved chunks"
                           : "");
    sp_partition_opts part = *o;
    part.stages = filled;
    part.allow_empty_stages = false;
    struct sp_stage_devices none = {0};
    sp_plan *solved = NULL;
    sp_status st = automatic ? plan_auto(ctx, profile, base, part, &none, solver, &solved)
                             : plan_once(ctx, profile, base, &part, &none, solver, &solved);
    if (st == SP_OK)
        st = sp_plan_with_empty_stages(ctx, profile, o, d, solved, out);
    if (st == SP_OK)
        sp_warn(ctx,
                "the profile has places to cut for %u stages: the plan's first %u stages are "
                "empty (--allow-empty-stages)",
                filled, o->stages - filled);
    sp_plan_destroy(solved);
    return st;
}

void sp_plan_options(const sp_plan *plan, sp_partition_opts *opts) {
    sp_partition_opts_init(opts);
    if (!plan)
        return;
    const sp_plan_summary *m = &plan->summary;
    opts->stages = m->stages;
    opts->chunks = m->chunks;
    opts->micro_batches = m->micro_batches;
    opts->objective = m->objective;
    opts->solver = m->solver == SP_SOLVER_GIVEN ? SP_SOLVER_DP : m->solver;
    opts->schedule = m->schedule.present ? m->schedule.schedule : SP_SCHEDULE_1F1B;
    opts->memory_limit_bytes = m->memory_limit_bytes;
    opts->comm = m->comm;
    opts->placement = m->placement;
    opts->placed_as = m->placement == SP_PLACEMENT_SEARCH ? plan : NULL;
    opts->framework = m->framework;
    opts->replica_cost = m->replica_cost;
    opts->activation_ratio = m->activation_ratio;
    for (size_t k = 0; k < plan->n_stages; k++) /* a plan with an empty stage keeps allowing */
        opts->allow_empty_stages |= plan->stages[k].layer_count == 0;
}

/* What every solver needs of the options: their ranges and names, and the chunk layout made
 * whole (a V schedule runs 2 chunks per device; chunks in a loop run an interleaved schedule);
 * what a solver takes is the solver table's to say (solver_table.c). */
static sp_status resolve_layout(sp_ctx *ctx, sp_partition_opts *o) {
    const char *schedule = sp_schedule_name(o->schedule);
    if (o->chunks > SP_MAX_STAGES || (uint64_t)o->chunks * o->stages > SP_MAX_STAGES)
        return sp_fail(ctx, SP_ERR_INVALID_ARG, "stages x chunks must be at most %u, got %u x %u",
                       SP_MAX_STAGES, o->stages, o->chunks);
    if (sp_schedule_chunk_layout(o->schedule) == SP_CHUNKS_V) {
        if (o->chunks != 1 && o->chunks != 2)
            return sp_fail(ctx, SP_ERR_INVALID_ARG,
                           "%s runs 2 chunks per device, V-shape; --chunks %u does not fit",
                           schedule, o->chunks);
        o->chunks = 2;
    } else if (o->chunks > 1 && sp_schedule_async(o->schedule)) {
        return sp_fail(ctx, SP_ERR_INVALID_ARG,
                       "--chunks %u with --schedule %s: %s runs the 1F1B order without flushes, "
                       "one chunk per device",
                       o->chunks, schedule, schedule);
    } else if (o->chunks > 1) {
        if (o->schedule != SP_SCHEDULE_INTERLEAVED_ZB) /* chunks in a loop run interleaved */
            o->schedule = SP_SCHEDULE_INTERLEAVED;
    } else if (sp_schedule_chunks_needed(o->schedule) == 0) {
        return sp_fail(ctx, SP_ERR_INVALID_ARG,
                       "the %s schedule needs a plan with chunks (--chunks V, V >= 2)", schedule);
    }
    return SP_OK;
}

static sp_status resolve_opts(sp_ctx *ctx, sp_partition_opts *o) {
    if (o->stages < 1 || o->stages > SP_MAX_STAGES)
        return sp_fail(ctx, SP_ERR_INVALID_ARG, "stages must be in [1, %u], got %u", SP_MAX_STAGES,
                       o->stages);
    if (!sp_objective_name(o->objective) || !sp_solver_name(o->solver) ||
        o->solver == SP_SOLVER_GIVEN || !sp_schedule_name(o->schedule) || !sp_comm_name(o->comm))
        return sp_fail(ctx, SP_ERR_INVALID_ARG, "unknown objective, solver or schedule");
    if (!sp_placement_name(o->placement))
        return sp_fail(ctx, SP_ERR_INVALID_ARG, "unknown placement");
    if (!(o->time_limit_s > 0) || o->time_limit_s > 1e6)
        return sp_fail(ctx, SP_ERR_INVALID_ARG, "the time limit must be in (0, 1e6] s");
    if (o->chunks == 0)
        o->chunks = 1;
    sp_status st = resolve_layout(ctx, o);
    if (st != SP_OK)
        return st;
    bool automatic = o->micro_batches == SP_MICRO_BATCHES_AUTO;
    if (o->micro_batches == 0)
        o->micro_batches = o->stages * 4;
    if (!automatic && sp_check_rounds(ctx, o) != SP_OK)
        return SP_ERR_INVALID_ARG;
    if (!automatic && o->micro_batches > SP_MAX_MICRO_BATCHES)
        return sp_fail(ctx, SP_ERR_INVALID_ARG, "micro-batches must be in [1, %u], got %u",
                       SP_MAX_MICRO_BATCHES, o->micro_batches);
    if (automatic && !(o->target_efficiency > 0 && o->target_efficiency < 1))
        return sp_fail(ctx, SP_ERR_INVALID_ARG, "the target efficiency must be in (0, 1), got %g",
                       o->target_efficiency);
    return SP_OK;
}

/* the links against the stages, and what the profile cannot tell the solver */
static sp_status check_inputs(sp_ctx *ctx, const sp_profile *profile, const sp_partition_opts *o,
                              const struct sp_stage_devices *d) {
    if (o->comm == SP_COMM_BLOCKING && !o->links)
        sp_warn(ctx, "--comm blocking has no effect without --links");
    if (o->links && sp_links_get_count(o->links) < o->stages)
        return sp_fail(ctx, SP_ERR_INFEASIBLE,
                       "%u stages need %u devices in the links file; it has %zu", o->stages,
                       o->stages, sp_links_get_count(o->links));
    sp_warn_resident_only(ctx, profile, o->memory_limit_bytes || d->memory);
    sp_warn_profile_caveats(ctx, profile, o->schedule);
    return SP_OK;
}

/* The steps: the options resolved, the stages' devices, the solver from the table, the
 * profile's chain built once (every plan below restages it), the plan or plans. */
sp_status sp_partition(sp_ctx *ctx, const sp_profile *profile, const sp_partition_opts *opts,
                       sp_plan **out) {
    if (!ctx)
        return SP_ERR_INVALID_ARG;
    sp_ctx_begin(ctx);
    if (!profile || !opts || !out)
        return sp_fail(ctx, SP_ERR_INVALID_ARG, "sp_partition: NULL argument");
    *out = NULL;
    if (opts->framework != SP_FRAMEWORK_ANY) /* the same call on the framework's profile */
        return sp_partition_framed(ctx, profile, opts, 0, out);
    sp_partition_opts o = *opts;
    sp_status st = resolve_opts(ctx, &o);
    if (st != SP_OK)
        return st;
    bool automatic = o.micro_batches == SP_MICRO_BATCHES_AUTO;
    struct sp_stage_devices d;
    const struct sp_solver_desc *solver = NULL;
    st = sp_stage_devices_init(ctx, profile, &o, &d);
    if (st == SP_OK)
        st = sp_solver_pick(ctx, &o, &d, &solver);
    if (st == SP_OK)
        st = check_inputs(ctx, profile, &o, &d);
    struct sp_chain base = {0};
    if (st == SP_OK)
        st = sp_chain_for_opts(ctx, &base, profile, NULL, &o, &d);
    uint32_t filled = sp_stages_with_layers(profile, &o);
    if (st == SP_OK && filled < o.stages)
        st = plan_some_empty(ctx, profile, &base, &o, &d, solver, automatic, filled, out);
    else if (st == SP_OK)
        st = automatic ? plan_auto(ctx, profile, &base, o, &d, solver, out)
                       : plan_once(ctx, profile, &base, &o, &d, solver, out);
    sp_chain_release(&base);
    sp_stage_devices_release(&d);
    return st;
}

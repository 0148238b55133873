/* partitioner/partition.c: sp_partition, the entry point: validates options, runs the chosen
 * solver, explains infeasibility, and builds the plan with its figures. */
#include <stdio.h>
#include <string.h>

#include "baselines.h"
#include "chain.h"
#include "plan_impl.h"

static const char *const objective_names[] = {"bottleneck", "variance"};
static const char *const solver_names[] = {"dp", "uniform", "parameters"};

const char *sp_objective_name(sp_objective o) {
    return (unsigned)o < sizeof objective_names / sizeof *objective_names ? objective_names[o]
                                                                          : NULL;
}
const char *sp_solver_name(sp_solver s) {
    return (unsigned)s < sizeof solver_names / sizeof *solver_names ? solver_names[s] : NULL;
}
sp_status sp_objective_from_name(const char *name, sp_objective *out) {
    for (unsigned i = 0; name && i < sizeof objective_names / sizeof *objective_names; i++)
        if (strcmp(name, objective_names[i]) == 0) {
            *out = (sp_objective)i;
            return SP_OK;
        }
    return SP_ERR_INVALID_ARG;
}
sp_status sp_solver_from_name(const char *name, sp_solver *out) {
    for (unsigned i = 0; name && i < sizeof solver_names / sizeof *solver_names; i++)
        if (strcmp(name, solver_names[i]) == 0) {
            *out = (sp_solver)i;
            return SP_OK;
        }
    return SP_ERR_INVALID_ARG;
}

void sp_partition_opts_init(sp_partition_opts *opts) {
    memset(opts, 0, sizeof *opts);
    opts->stages = 4;
    opts->micro_batches = 0;
    opts->objective = SP_OBJECTIVE_BOTTLENECK;
    opts->solver = SP_SOLVER_DP;
    opts->memory_limit_bytes = 0;
}

static const char *layer_name(const sp_profile *p, size_t l) { return sp_profile_layer(p, l)->name; }

/* Explains why no plan exists: too few allowed cuts, a block that fits nowhere, or how far the
 * best placement gets. */
static sp_status explain_infeasible(sp_ctx *ctx, const sp_profile *profile,
                                    const struct sp_chain *c, const sp_partition_opts *o) {
    size_t n = sp_profile_layer_count(profile), cuts = c->n_pos - 2;
    if (n < o->stages)
        return sp_fail(ctx, SP_ERR_INFEASIBLE,
                       "cannot cut %zu layers into %u non-empty stages; use at most %zu stages", n,
                       o->stages, n);
    if (cuts + 1 < o->stages)
        return sp_fail(ctx, SP_ERR_INFEASIBLE,
                       "%u stages exceed the allowed cuts: only %zu stage boundaries are allowed "
                       "(%zu layers have cut_after: false), so at most %zu stages",
                       o->stages, cuts, n - 1 - cuts, cuts + 1);
    char lim[16], need[16];
    sp_format_bytes(o->memory_limit_bytes, lim, sizeof lim);
    uint32_t last_stage = c->p - 1; /* holds the fewest micro-batches, so fits the most */
    for (size_t k = 0; k + 1 < c->n_pos; k++) {
        if (!sp_chain_mem_ok(c, last_stage, k, k + 1)) {
            uint64_t mem = c->mem[k + 1] - c->mem[k], saved = c->saved[k + 1] - c->saved[k];
            sp_format_bytes(mem + c->inflight[last_stage] * saved, need, sizeof need);
            size_t a = c->pos[k], b = c->pos[k + 1] - 1;
            if (a == b)
                return sp_fail(ctx, SP_ERR_INFEASIBLE,
                               "layer '%s' alone needs %s (memory_bytes %llu + %u x saved_bytes "
                               "%llu), more than the memory limit of %s on any stage",
                               layer_name(profile, a), need, (unsigned long long)mem,
                               c->inflight[last_stage], (unsigned long long)saved, lim);
            return sp_fail(ctx, SP_ERR_INFEASIBLE,
                           "layers '%s'..'%s' (joined by cut_after: false) need %s together, "
                           "more than the memory limit of %s on any stage",
                           layer_name(profile, a), layer_name(profile, b), need, lim);
        }
    }
    size_t end = 0;
    sp_chain_greedy_covers(c, SP_NO_CAP, &end);
    size_t covered = c->pos[end];
    return sp_fail(ctx, SP_ERR_INFEASIBLE,
                   "no split into %u stages fits the memory limit of %s: the stages can hold at "
                   "most the first %zu layers (through '%s'), leaving %zu; stage 0 holds %u "
                   "micro-batches of saved activations under 1F1B. Raise --memory-limit, use "
                   "more stages or fewer micro-batches",
                   o->stages, lim, covered, covered ? layer_name(profile, covered - 1) : "-",
                   n - covered, c->inflight[0]);
}

static sp_status solve_dp(sp_ctx *ctx, const sp_profile *profile, const sp_partition_opts *o,
                          size_t *bounds) {
    struct sp_chain c;
    sp_status st = sp_chain_init(ctx, &c, profile, SP_WEIGHT_TIME, o->stages, o->micro_batches,
                                 o->memory_limit_bytes);
    if (st != SP_OK)
        return st;
    int64_t cap = SP_NO_CAP;
    if (c.n_pos - 1 < o->stages)
        st = SP_ERR_INFEASIBLE;
    else if (o->objective == SP_OBJECTIVE_BOTTLENECK)
        st = sp_chain_min_bottleneck(ctx, &c, &cap);
    if (st == SP_OK)
        st = sp_chain_min_sum_squares(ctx, &c, cap, bounds);
    if (st == SP_ERR_INFEASIBLE)
        st = explain_infeasible(ctx, profile, &c, o);
    if (st == SP_OK)
        for (uint32_t s = 0; s <= o->stages; s++)
            bounds[s] = c.pos[bounds[s]];
    sp_chain_release(&c);
    return st;
}

/* A baseline's plan must still satisfy the memory limit to be usable. */
static sp_status check_memory(sp_ctx *ctx, const sp_plan *plan, const sp_partition_opts *o) {
    if (!o->memory_limit_bytes)
        return SP_OK;
    for (size_t s = 0; s < plan->n_stages; s++) {
        const sp_stage *st = &plan->stages[s];
        if (st->memory_bytes > o->memory_limit_bytes) {
            char need[16], lim[16];
            return sp_fail(ctx, SP_ERR_INFEASIBLE,
                           "the %s split does not fit the memory limit: stage %zu needs %s "
                           "(resident %llu + %u x saved %llu bytes), the limit is %s; "
                           "--solver dp finds a plan within the limit when one exists",
                           sp_solver_name(o->solver), s,
                           sp_format_bytes(st->memory_bytes, need, sizeof need),
                           (unsigned long long)st->resident_bytes, st->inflight,
                           (unsigned long long)st->saved_bytes,
                           sp_format_bytes(o->memory_limit_bytes, lim, sizeof lim));
        }
    }
    return SP_OK;
}

static double bottleneck_of(const sp_profile *profile, const size_t *bounds, uint32_t p) {
    int64_t best = 0;
    for (uint32_t s = 0; s < p; s++) {
        int64_t t = 0;
        for (size_t l = bounds[s]; l < bounds[s + 1]; l++)
            t += sp_layer_ticks(sp_profile_layer(profile, l));
        if (t > best)
            best = t;
    }
    return sp_ticks_to_ms(best);
}

sp_status sp_partition(sp_ctx *ctx, const sp_profile *profile, const sp_partition_opts *opts,
                       sp_plan **out) {
    if (!ctx)
        return SP_ERR_INVALID_ARG;
    sp_ctx_begin(ctx);
    if (!profile || !opts || !out)
        return sp_fail(ctx, SP_ERR_INVALID_ARG, "sp_partition: NULL argument");
    *out = NULL;
    sp_partition_opts o = *opts;
    if (o.stages < 1 || o.stages > SP_MAX_STAGES)
        return sp_fail(ctx, SP_ERR_INVALID_ARG, "stages must be in [1, %u], got %u",
                       SP_MAX_STAGES, o.stages);
    if (!sp_objective_name(o.objective) || !sp_solver_name(o.solver))
        return sp_fail(ctx, SP_ERR_INVALID_ARG, "unknown objective or solver");
    if (o.micro_batches == 0)
        o.micro_batches = o.stages * 4;
    if (o.micro_batches > SP_MAX_MICRO_BATCHES)
        return sp_fail(ctx, SP_ERR_INVALID_ARG, "micro-batches must be in [1, %u], got %u",
                       SP_MAX_MICRO_BATCHES, o.micro_batches);
    if (o.solver != SP_SOLVER_DP && o.objective != SP_OBJECTIVE_BOTTLENECK)
        sp_warn(ctx, "the %s solver has no objective; --objective %s is ignored",
                sp_solver_name(o.solver), sp_objective_name(o.objective));

    size_t *bounds = sp_mallocarray((size_t)o.stages + 1, sizeof *bounds);
    size_t *even = sp_mallocarray((size_t)o.stages + 1, sizeof *even);
    if (!bounds || !even) {
        sp_free(bounds);
        sp_free(even);
        return sp_oom(ctx, "partitioning");
    }
    double t0 = sp_now_ms();
    sp_status st;
    switch (o.solver) {
    case SP_SOLVER_UNIFORM:
        st = sp_uniform_bounds(ctx, profile, o.stages, bounds);
        break;
    case SP_SOLVER_PARAMETERS:
        st = sp_parameters_bounds(ctx, profile, o.stages, bounds);
        break;
    default:
        st = solve_dp(ctx, profile, &o, bounds);
        break;
    }
    double solve_ms = sp_now_ms() - t0;
    if (st == SP_ERR_INFEASIBLE && !*sp_ctx_errmsg(ctx)) {
        struct sp_chain c;
        if (sp_chain_init(ctx, &c, profile, SP_WEIGHT_TIME, o.stages, o.micro_batches,
                          o.memory_limit_bytes) == SP_OK) {
            st = explain_infeasible(ctx, profile, &c, &o);
            sp_chain_release(&c);
        }
    }
    sp_plan *plan = NULL;
    if (st == SP_OK)
        st = sp_plan_build(ctx, profile, &o, bounds, &plan);
    if (st == SP_OK && o.solver != SP_SOLVER_DP)
        st = check_memory(ctx, plan, &o);
    if (st == SP_OK)
        st = sp_uniform_bounds(ctx, profile, o.stages, even);
    if (st != SP_OK) {
        sp_plan_destroy(plan);
        sp_free(bounds);
        sp_free(even);
        if (!*sp_ctx_errmsg(ctx))
            sp_fail(ctx, st, "%s", sp_strerror(st));
        return st;
    }
    plan->summary.optimal = o.solver == SP_SOLVER_DP;
    plan->summary.solve_ms = solve_ms;
    plan->summary.even_split_bottleneck_ms = bottleneck_of(profile, even, o.stages);
    sp_free(bounds);
    sp_free(even);
    *out = plan;
    return SP_OK;
}

/* partitioner/solvers/ilp.c: setting up the GLPK program for sp_partition (solved in ilp_glpk.c):
 * its chain, recomputation choices and placement classes, and checking the plan it returns
 * against the memory limits. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "baselines.h"
#include "chunk_memory.h"
#include "partition_impl.h"
#include "placement.h"

/* --solver ilp: the chain over the K = P x V virtual stages (each with its device's speed), an
 * incumbent from the exact DP (V = 1) or the uniform chunk split, then the program. */
/* The ilp's incumbent when no plan fits without recomputation: the exact DP (stage s on
 * device s) with every block that can recompute recomputing, so nothing of it is saved. */
static sp_status recompute_all_bounds(sp_ctx *ctx, const struct sp_problem *pb, size_t *bounds) {
    const sp_partition_opts *o = pb->o;
    const struct sp_stage_devices *d = pb->d;
    struct sp_chain_model model = {.weight = SP_WEIGHT_TIME,
                                   .stages = o->stages,
                                   .micro_batches = o->micro_batches,
                                   .schedule = o->schedule,
                                   .mem_cap = o->memory_limit_bytes,
                                   .speed = d->speed,
                                   .device_mem = d->memory,
                                   .recompute_all = true};
    struct sp_chain c;
    sp_status st = sp_chain_restage(ctx, &c, pb->chain, &model);
    if (st != SP_OK)
        return st;
    st = sp_chain_best_bounds(ctx, &c, bounds, NULL);
    sp_chain_release(&c);
    return st;
}

/* Where the program starts: an incumbent plan (the exact DP's with one chunk per device, else the
 * uniform chunk split; with recomputation possibly every recomputable block recomputed) and a
 * proven lower bound of the bottleneck, when it has them */
struct ilp_start {
    bool have_incumbent, inc_recomputes;
    double t_lower;
    double optimum_ms; /* > 0: the incumbent's bottleneck is proven optimal (placement search) */
};

/* When the DP found no plan (st SP_ERR_INFEASIBLE): with recomputation, the DP with every block
 * that can recompute recomputing; else the program starts without an incumbent. The bound: the
 * DP without memory caps (recomputation only adds time). Fills out, returns the status. */
static sp_status without_plan(sp_ctx *ctx, const struct sp_problem *pb,
                              const struct sp_chain *free_chain, sp_status st, size_t *inc,
                              struct ilp_start *out) {
    const sp_partition_opts *o = pb->o;
    out->have_incumbent = true;
    out->inc_recomputes = false;
    out->t_lower = 0;
    if (st == SP_ERR_INFEASIBLE && o->recompute) {
        sp_ctx_begin(ctx);
        st = recompute_all_bounds(ctx, pb, inc);
        out->inc_recomputes = st == SP_OK;
    }
    if (st == SP_ERR_INFEASIBLE) {
        out->have_incumbent = false;
        st = SP_OK;
        sp_ctx_begin(ctx);
    }
    int64_t free_cap = 0;
    if (st == SP_OK && sp_chain_min_bottleneck(ctx, free_chain, &free_cap) == SP_OK)
        out->t_lower = (double)free_cap / SP_TICKS_PER_MS;
    return st;
}

/* With placement, one chunk per device, the bottleneck and no recomputation choices: the least
 * bottleneck found exactly (placed_search.c) and a plan reaching it, which the program starts
 * from and only breaks the ties of. *decided false: the program searches as before. */
static sp_status placed_optimum(sp_ctx *ctx, const struct sp_problem *pb,
                                struct sp_placement_classes *pc, size_t *inc, struct ilp_start *out,
                                bool *decided) {
    const sp_partition_opts *o = pb->o;
    *decided = false;
    if (!pc || o->chunks != 1 || o->recompute || o->objective != SP_OBJECTIVE_BOTTLENECK ||
        o->ilp_cold)
        return SP_OK;
    int64_t cap = 0;
    sp_status st = sp_placement_least_bottleneck(ctx, pb, pc, inc, pc->incumbent, &cap, decided);
    if (st == SP_OK && *decided) {
        out->have_incumbent = true;
        out->inc_recomputes = false;
        out->optimum_ms = (double)cap / SP_TICKS_PER_MS;
    }
    return st;
}

static sp_status ilp_start(sp_ctx *ctx, const struct sp_problem *pb,
                           struct sp_placement_classes *pc, const struct sp_chain *c,
                           const struct sp_chain *free_chain, const struct sp_chunk_memory *cm,
                           const int64_t *rc, size_t *inc, struct ilp_start *out) {
    const sp_profile *profile = pb->profile;
    const sp_partition_opts *o = pb->o;
    uint32_t K = o->stages * o->chunks;
    size_t B = c->n_pos - 1;
    bool have_incumbent = true, inc_recomputes = false;
    double t_lower = 0;
    sp_status st = SP_OK;
    if (c->n_pos - 1 < K) {
        st = SP_ERR_INFEASIBLE;
    } else if (pc && o->chunks == 1) {
        bool decided = false;
        st = placed_optimum(ctx, pb, pc, inc, out, &decided);
        if (st != SP_OK || decided)
            return st;
        /* the incumbent: the exact DP with stage s on device s; the bound: the DP with every
         * stage on the fastest device and no memory limit */
        st = sp_dp_bounds(ctx, pb, inc);
        for (uint32_t k = 0; st == SP_OK && k <= K; k++)
            inc[k] = sp_chain_position_of(c, inc[k]);
        /* another placement may fit where this one does not */
        st = without_plan(ctx, pb, free_chain, st, inc, out);
        have_incumbent = out->have_incumbent;
        inc_recomputes = out->inc_recomputes;
        t_lower = out->t_lower;
    } else if (o->chunks == 1) {
        st = sp_chain_best_bounds(ctx, c, inc, NULL);
        if (st == SP_OK && !o->recompute) /* the DP's bottleneck is exact: it bounds T */
            t_lower = (double)sp_max_stage_time(c, inc) / SP_TICKS_PER_MS;
        if (o->recompute) {
            /* without recomputation the memory limit may leave no plan: then the program starts
             * without an incumbent. Its bottleneck is at least the DP's without memory caps
             * (recomputation only adds time) */
            st = without_plan(ctx, pb, free_chain, st, inc, out);
            have_incumbent = out->have_incumbent;
            inc_recomputes = out->inc_recomputes;
            t_lower = out->t_lower;
        }
    } else {
        st = sp_uniform_bounds(ctx, profile, c, K, inc);
        if (st == SP_OK && cm->any_cap) { /* the uniform chunk split, if it fits (GLPK does not
                                           * check an injected plan) */
            bool fits = true, fits_recomputed = rc != NULL;
            bool *all = rc ? sp_calloc(sp_profile_get_layer_count(profile), sizeof *all) : NULL;
            for (size_t b = 0; all && b < B; b++)
                for (size_t l = c->pos[b]; l < c->pos[b + 1]; l++)
                    all[l] = rc[b] >= 0;
            for (uint32_t dev = 0; dev < o->stages; dev++) {
                fits &= sp_chunk_memory_fits(cm, profile, inc, NULL, dev);
                fits_recomputed &= all && sp_chunk_memory_fits(cm, profile, inc, all, dev);
            }
            sp_free(all);
            have_incumbent = fits || fits_recomputed;
            inc_recomputes = !fits && fits_recomputed;
        }
        for (uint32_t k = 0; st == SP_OK && k <= K; k++)
            inc[k] = sp_chain_position_of(c, inc[k]);
    }
    out->have_incumbent = have_incumbent;
    out->inc_recomputes = inc_recomputes;
    out->t_lower = t_lower;
    return st;
}

/* With recomputation choices, one chunk per device, equal speeds and the bottleneck objective,
 * the program is not needed: a stage's least recomputation that fits its memory is an exact
 * covering knapsack (recompute_cover.c), the stage time with it keeps the chain's monotone
 * admissibility, and the chain's DP then gives the least bottleneck and, among the plans
 * reaching it, the least sum of squared stage times. *decided is false when a knapsack search
 * stopped at its node limit: the program runs instead. */
static bool chain_search_applies(const struct sp_chain *c, const sp_partition_opts *o,
                                 const struct sp_placement_classes *pc) {
    return o->recompute && !pc && o->chunks == 1 && o->objective == SP_OBJECTIVE_BOTTLENECK &&
           !c->speed && !c->blocking;
}

static sp_status chain_search(sp_ctx *ctx, const struct sp_problem *pb,
                              const struct sp_chain_model *model, struct sp_ilp_result *res,
                              bool *recompute, bool *decided) {
    *decided = false;
    struct sp_chain_model m = *model;
    m.recompute_choice = true;
    m.profile = pb->profile;
    struct sp_chain c;
    sp_status st = sp_chain_restage(ctx, &c, pb->chain, &m);
    if (st != SP_OK)
        return st;
    memset(res, 0, sizeof *res);
    size_t K = c.p;
    res->bounds = sp_mallocarray(K + 1, sizeof *res->bounds);
    int64_t cap = 0;
    if (!res->bounds)
        st = sp_oom(ctx, "partitioning");
    else
        st = sp_chain_best_bounds(ctx, &c, res->bounds, &cap);
    for (uint32_t s = 0; st == SP_OK && s < K; s++) /* per layer, into the solution */
        sp_recompute_cover_ticks(&c, s, res->bounds[s], res->bounds[s + 1], SP_RECOMPUTE_NEVER,
                                 recompute);
    *decided = !sp_recompute_cover_overflowed(c.cover);
    sp_chain_release(&c);
    if (st == SP_OK && *decided) {
        res->found = res->optimal = true;
        res->objective_ms = res->best_bound = (double)cap / SP_TICKS_PER_MS;
        res->status = "optimal";
        return SP_OK;
    }
    sp_free(res->bounds);
    memset(res, 0, sizeof *res);
    memset(recompute, 0, sp_profile_get_layer_count(pb->profile) * sizeof *recompute);
    return *decided || st == SP_ERR_NOMEM ? st : SP_OK; /* not decided: the program runs */
}

/* The searched placement's plan as the result when the program is too large to break its ties:
 * its bottleneck is proven all the same. */
static sp_status keep_optimum(sp_ctx *ctx, const struct sp_chain *c, const size_t *inc,
                              const struct sp_placement_classes *pc, double optimum_ms,
                              struct sp_ilp_result *res) {
    sp_ctx_begin(ctx);
    memset(res, 0, sizeof *res);
    size_t K = c->p;
    res->bounds = sp_mallocarray(K + 1, sizeof *res->bounds);
    res->stage_class = sp_mallocarray(K, sizeof *res->stage_class);
    if (!res->bounds || !res->stage_class)
        return sp_oom(ctx, "partitioning");
    sp_ilp_result_take_optimum(res, (uint32_t)K, inc, pc->incumbent, optimum_ms);
    res->status = "optimal objective; tie-breaks not run: the program would be too large";
    return SP_OK;
}

/* The chain the program solves (chunks as K virtual stages, each at its device's speed; with
 * placement search no speeds or device memory, which the program chooses) and the same without
 * memory caps, every stage at the fastest speed: it bounds T from below. */
static sp_status program_chains(sp_ctx *ctx, const struct sp_problem *pb,
                                const struct sp_placement_classes *pc, struct sp_chain_model *model,
                                struct sp_chain *c, struct sp_chain *free_chain) {
    const sp_partition_opts *o = pb->o;
    const struct sp_stage_devices *d = pb->d;
    uint32_t K = o->stages * o->chunks;
    double fastest = pc ? sp_placement_fastest(pc) : 1.0;
    double *speed = NULL, *free_speed = NULL;
    if (d->speed || fastest != 1.0) {
        speed = sp_mallocarray(K, sizeof *speed);
        free_speed = sp_mallocarray(K, sizeof *free_speed);
        if (!speed || !free_speed) {
            sp_free(speed);
            sp_free(free_speed);
            return sp_oom(ctx, "building the integer program");
        }
        for (uint32_t k = 0; k < K; k++)
            free_speed[k] = speed[k] = pc ? fastest : d->speed[k % o->stages];
    }
    *model = (struct sp_chain_model){.weight = SP_WEIGHT_TIME,
                                     .stages = K,
                                     .micro_batches = o->micro_batches,
                                     .schedule = o->schedule,
                                     .mem_cap = o->chunks > 1 ? 0 : o->memory_limit_bytes,
                                     .speed = pc ? NULL : speed,
                                     .device_mem = o->chunks > 1 || pc ? NULL : d->memory};
    sp_status st = sp_chain_restage(ctx, c, pb->chain, model);
    struct sp_chain_model free_model = *model;
    free_model.mem_cap = 0;
    free_model.device_mem = NULL;
    free_model.speed = free_speed;
    if (st == SP_OK && (st = sp_chain_restage(ctx, free_chain, pb->chain, &free_model)) != SP_OK)
        sp_chain_release(c);
    sp_free(speed);
    sp_free(free_speed);
    model->speed = NULL; /* freed: the chain keeps its own */
    return st;
}

/* each block's recomputation ticks: a block recomputes when all its layers can (-1: it cannot) */
static void block_recompute(const sp_profile *profile, const struct sp_chain *c, int64_t *rc) {
    for (size_t b = 0; b + 1 < c->n_pos; b++) {
        rc[b] = 0;
        for (size_t l = c->pos[b]; l < c->pos[b + 1] && rc[b] >= 0; l++) {
            double ms = sp_profile_get_layer(profile, l)->recompute_ms;
            rc[b] = ms < 0 ? -1 : rc[b] + sp_ms_to_ticks(ms);
        }
    }
}

/* why the program found no plan, when it did not say */
static sp_status explain_none(sp_ctx *ctx, const struct sp_problem *pb,
                              const struct sp_placement_classes *pc, bool chunk_rows,
                              const struct sp_chain *c) {
    const sp_partition_opts *o = pb->o;
    if (pc)
        return sp_fail(ctx, SP_ERR_INFEASIBLE,
                       "no placement of %u stages on the %zu devices fits: every choice of "
                       "devices leaves a stage over its device's memory%s",
                       o->stages, sp_devices_get_count(pb->d->list),
                       o->memory_limit_bytes ? " or the memory limit" : "");
    if (chunk_rows)
        return sp_fail(ctx, SP_ERR_INFEASIBLE,
                       "no split into %u x %u interleaved chunks fits %s: each device holds its "
                       "chunks' memory_bytes and, at every point of the interleaved order, the "
                       "saved_bytes of the micro-batches in flight. Raise the limit, use more "
                       "stages, fewer micro-batches%s",
                       o->stages, o->chunks,
                       o->memory_limit_bytes ? "the memory limit" : "the devices' memory",
                       o->recompute ? "" : " or --recompute auto");
    if (o->chunks == 1)
        return sp_explain_infeasible(ctx, pb->profile, c, o);
    return SP_ERR_INFEASIBLE;
}

/* the program's blocks back to layers; recomputation trimmed where a stage fits without it */
static void take_result(const struct sp_problem *pb, const struct sp_placement_classes *pc,
                        const struct sp_chain *c, const struct sp_chunk_memory *cm,
                        const struct sp_ilp_result *res, struct sp_solution *sol) {
    uint32_t K = pb->o->stages * pb->o->chunks;
    for (uint32_t k = 0; k <= K; k++)
        sol->bounds[k] = c->pos[res->bounds[k]];
    for (size_t b = 0; sol->recompute && res->recompute && b + 1 < c->n_pos; b++)
        for (size_t l = c->pos[b]; l < c->pos[b + 1]; l++)
            sol->recompute[l] = res->recompute[b];
    if (!pc && cm->any_cap) /* per device, over its chunks */
        sp_chunk_memory_trim(cm, pb->profile, sol->bounds, sol->recompute);
    else if (!pc && pb->o->chunks == 1) /* placement trims against the chosen devices */
        sp_trim_recompute(pb->profile, c, sol->bounds, sol->recompute);
}

sp_status sp_ilp_program(sp_ctx *ctx, const struct sp_problem *pb, struct sp_placement_classes *pc,
                         struct sp_solution *sol) {
    const sp_partition_opts *o = pb->o;
    const struct sp_stage_devices *d = pb->d;
    struct sp_ilp_result *res = &sol->search;
    bool inject = !o->ilp_cold;
    struct sp_chain_model model;
    struct sp_chain c, free_chain;
    sp_status st = program_chains(ctx, pb, pc, &model, &c, &free_chain);
    if (st != SP_OK)
        return st;
    size_t *inc = sp_mallocarray((size_t)o->stages * o->chunks + 1, sizeof *inc);
    int64_t *rc = o->recompute ? sp_mallocarray(c.n_pos - 1, sizeof *rc) : NULL;
    if (!inc || (o->recompute && !rc))
        st = sp_oom(ctx, "building the integer program");
    else if (rc)
        block_recompute(pb->profile, &c, rc);
    /* chunks: cm has the in-flight states of stage s's devices (s), for the incumbent and, without
     * placement, the program's memory rows; with placement the rows take the limit alone (the
     * program adds each class's memory) */
    struct sp_chunk_memory cm = {0}, cm_rows = {0};
    bool class_memory = false;
    for (uint32_t cls = 0; pc && cls < pc->ilp.classes; cls++)
        class_memory |= pc->memory[cls] != 0;
    if (st == SP_OK && o->chunks > 1 && (o->memory_limit_bytes || d->memory))
        st = sp_chunk_memory_init(ctx, o->schedule, o->stages, o->chunks, o->micro_batches,
                                  o->memory_limit_bytes, d->memory, &cm);
    bool chunk_rows = o->chunks > 1 && (pc ? o->memory_limit_bytes || class_memory : cm.any_cap);
    if (st == SP_OK && pc && chunk_rows)
        st = sp_chunk_memory_init(ctx, o->schedule, o->stages, o->chunks, o->micro_batches,
                                  o->memory_limit_bytes, NULL, &cm_rows);
    struct ilp_start start = {0};
    if (st == SP_OK)
        st = ilp_start(ctx, pb, pc, &c, &free_chain, &cm, rc, inc, &start);
    bool decided = false;
    if (st == SP_OK && inject && chain_search_applies(&c, o, pc))
        st = chain_search(ctx, pb, &model, res, sol->recompute, &decided);
    if (st == SP_OK && !decided) {
        /* !inject: the program alone (the oracle tests check it against enumeration) */
        struct sp_ilp_input in = {.c = &c,
                                  .devices = o->stages,
                                  .micro_batches = o->micro_batches,
                                  .objective = o->objective,
                                  .time_limit_s = o->time_limit_s,
                                  .incumbent = inject && start.have_incumbent ? inc : NULL,
                                  .recompute = rc,
                                  .t_lower_ms = inject ? start.t_lower : 0,
                                  .optimum_ms = start.optimum_ms, /* 0 with ilp_cold */
                                  .incumbent_recomputes = start.inc_recomputes,
                                  .place = pc ? &pc->ilp : NULL,
                                  .chunk_memory = !chunk_rows ? NULL
                                                  : pc        ? &cm_rows.ilp
                                                              : &cm.ilp};
        st = sp_ilp_solve(ctx, &in, res);
        if (st == SP_ERR_LIMIT && in.optimum_ms > 0) /* the plan stands without its tie-breaks */
            st = keep_optimum(ctx, &c, inc, pc, in.optimum_ms, res);
    }
    if (st == SP_ERR_INFEASIBLE && !*sp_ctx_get_errmsg(ctx))
        st = explain_none(ctx, pb, pc, chunk_rows, &c);
    if (st == SP_OK)
        take_result(pb, pc, &c, &cm, res, sol);
    sp_chunk_memory_release(&cm);
    sp_chunk_memory_release(&cm_rows);
    sp_free(inc);
    sp_free(rc);
    sp_chain_release(&c);
    sp_chain_release(&free_chain);
    return st;
}

sp_status sp_solve_ilp(sp_ctx *ctx, const struct sp_problem *pb, struct sp_solution *sol) {
    sp_status st = sp_ilp_program(ctx, pb, NULL, sol);
    sol->guarantee = sol->search.optimal ? SP_GUARANTEE_PROVEN : SP_GUARANTEE_BOUNDED;
    return st;
}

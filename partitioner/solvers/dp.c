/* partitioner/solvers/dp.c: the exact DP's entry for sp_partition (the chain DP itself is chain.c
 * and dp_general.c): the bottleneck, variance and iteration objectives, and why no plan exists when
 * none does. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "partition_impl.h"

static const char *layer_name(const sp_profile *p, size_t l) {
    return sp_profile_get_layer(p, l)->name;
}

/* Explains why no plan exists: too few allowed cuts, a block that fits nowhere, or how far the
 * best placement gets. */
sp_status sp_explain_infeasible(sp_ctx *ctx, const sp_profile *profile, const struct sp_chain *c,
                                const sp_partition_opts *o) {
    size_t n = sp_profile_get_layer_count(profile), cuts = c->n_pos - 2;
    if (n < o->stages)
        return sp_fail(ctx, SP_ERR_INFEASIBLE,
                       "cannot cut %zu layers into %u non-empty stages; use at most %zu stages "
                       "(or --allow-empty-stages)",
                       n, o->stages, n);
    if (cuts + 1 < o->stages)
        return sp_fail(ctx, SP_ERR_INFEASIBLE,
                       "%u stages exceed the allowed cuts: only %zu stage boundaries are allowed "
                       "(%zu layers have cut_after: false or come right before the loss), so "
                       "at most %zu stages (--allow-empty-stages leaves the others empty, as "
                       "Megatron-LM allows)",
                       o->stages, cuts, n - 1 - cuts, cuts + 1);
    char lim[16], need[16];
    /* the stage with the largest cap (the later one on a tie: it holds fewer micro-batches) */
    uint64_t widest = 0;
    uint32_t roomiest = c->p - 1;
    for (uint32_t s = 0; s < c->p; s++) {
        uint64_t cap = c->cap[s] ? c->cap[s] : UINT64_MAX;
        if (cap >= widest) {
            widest = cap;
            roomiest = s;
        }
    }
    sp_format_bytes(widest, lim, sizeof lim);
    for (size_t k = 0; k + 1 < c->n_pos; k++) {
        bool fits = false;
        for (uint32_t s = 0; s < c->p && !fits; s++)
            fits = sp_chain_mem_ok(c, s, k, k + 1);
        if (fits)
            continue;
        uint64_t mem = c->mem[k + 1] - c->mem[k], saved = c->saved[k + 1] - c->saved[k];
        sp_format_bytes(mem + c->inflight[roomiest] * saved, need, sizeof need);
        size_t a = c->pos[k], b = c->pos[k + 1] - 1;
        if (a == b)
            return sp_fail(ctx, SP_ERR_INFEASIBLE,
                           "layer '%s' alone needs %s (memory_bytes %llu + %u x saved_bytes "
                           "%llu), more than the memory limit of %s on any stage",
                           layer_name(profile, a), need, (unsigned long long)mem,
                           c->inflight[roomiest], (unsigned long long)saved, lim);
        return sp_fail(ctx, SP_ERR_INFEASIBLE,
                       "layers '%s'..'%s' (joined by cut_after: false) need %s together, "
                       "more than the memory limit of %s on any stage",
                       layer_name(profile, a), layer_name(profile, b), need, lim);
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

int64_t sp_max_stage_time(const struct sp_chain *c, const size_t *bounds) {
    int64_t m = 0;
    for (uint32_t s = 0; s < c->p; s++) {
        int64_t t = sp_chain_time(c, s, bounds[s], bounds[s + 1]);
        m = t > m ? t : m;
    }
    return m;
}

/* --objective iteration: minimum J = (M-1) x max t + sum t. J* = min over caps T of
 * (M-1) T + S(T), S(T) the least sum with every stage <= T, attained at the J-optimal plan's
 * bottleneck. So scan the candidate bottlenecks upward from the min-max optimum, and stop once
 * (M-1) T + (a lower bound of S) reaches the best J found. Without speeds or blocking transfers
 * the sum is the same for every plan and the bottleneck plan is J-optimal. */
static sp_status solve_iteration(sp_ctx *ctx, const struct sp_chain *c, uint32_t M, int64_t t_star,
                                 size_t *bounds) {
    sp_i128 sum = 0;
    sp_status st = sp_general_min_sum(ctx, c, t_star, SP_SUM_LINEAR, bounds, &sum);
    if (st != SP_OK)
        return st;
    if (M == 1) /* J is the sum alone */
        return sp_general_min_sum(ctx, c, SP_NO_CAP, SP_SUM_LINEAR, bounds, &sum);
    size_t *trial = sp_mallocarray(c->p + 1, sizeof *trial);
    if (!trial)
        return sp_oom(ctx, "minimizing the iteration time");
    sp_i128 best = (sp_i128)(M - 1) * sp_max_stage_time(c, bounds) + sum;
    /* lower bound of any plan's sum: the whole chain on the fastest device, compute only */
    int64_t lb = SP_NO_CAP;
    for (uint32_t s = 0; s < c->p; s++) {
        int64_t t = sp_chain_compute(c, s, 0, c->n_pos - 1);
        lb = t < lb ? t : lb;
    }
    sp_i128 hi128 = (best - lb) / (M - 1);
    int64_t hi = hi128 > (sp_i128)SP_NO_CAP / 2 ? SP_NO_CAP / 2 : (int64_t)hi128;
    int64_t *cand = NULL;
    size_t n_cand = 0;
    if (hi > t_star)
        st = sp_general_stage_times(ctx, c, t_star, hi, &cand, &n_cand);
    for (size_t i = 0; st == SP_OK && i < n_cand; i++) {
        int64_t T = cand[i];
        if ((sp_i128)(M - 1) * T + lb >= best)
            break;
        sp_i128 s_T = 0;
        st = sp_general_min_sum(ctx, c, T, SP_SUM_LINEAR, trial, &s_T);
        if (st == SP_ERR_INFEASIBLE) {
            st = SP_OK;
            continue;
        }
        sp_i128 j = (sp_i128)(M - 1) * sp_max_stage_time(c, trial) + s_T;
        if (st == SP_OK && j < best) {
            best = j;
            memcpy(bounds, trial, (c->p + 1) * sizeof *bounds);
        }
    }
    sp_free(cand);
    sp_free(trial);
    return st;
}

sp_status sp_dp_bounds(sp_ctx *ctx, const struct sp_problem *pb, size_t *bounds) {
    const struct sp_chain *c = pb->chain;
    const sp_partition_opts *o = pb->o;
    sp_status st = SP_OK;
    int64_t cap = SP_NO_CAP;
    /* the monotone engine (greedy + windows) unless a stage's cost depends on where it ends */
    bool general = c->blocking;
    bool sum_varies = c->blocking || c->speed;
    if (c->n_pos - 1 < o->stages)
        st = SP_ERR_INFEASIBLE;
    else if (o->objective != SP_OBJECTIVE_VARIANCE)
        st = general ? sp_general_min_bottleneck(ctx, c, &cap)
                     : sp_chain_min_bottleneck(ctx, c, &cap);
    if (st == SP_OK) {
        if (o->objective == SP_OBJECTIVE_ITERATION && sum_varies)
            st = solve_iteration(ctx, c, o->micro_batches, cap, bounds);
        else if (general)
            st = sp_general_min_sum(ctx, c, cap, SP_SUM_SQUARES, bounds, NULL);
        else
            st = sp_chain_min_sum_squares(ctx, c, cap, bounds);
    }
    if (st == SP_ERR_INFEASIBLE)
        st = sp_explain_infeasible(ctx, pb->profile, c, o);
    if (st == SP_OK)
        for (uint32_t s = 0; s <= o->stages; s++)
            bounds[s] = c->pos[bounds[s]];
    return st;
}

sp_status sp_solve_dp(sp_ctx *ctx, const struct sp_problem *pb, struct sp_solution *sol) {
    sol->guarantee = SP_GUARANTEE_EXACT;
    return sp_dp_bounds(ctx, pb, sol->bounds);
}

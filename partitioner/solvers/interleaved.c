/* partitioner/solvers/interleaved.c: the exact partition for chunks placed in a loop (interleaved
 * 1F1B, interleaved zero bubble; Megatron-LM's virtual pipeline): K = P x V chunks, chunk k on
 * device k mod P, a device's load the sum of its V chunks.
 *
 * Round r holds chunks rP .. rP + P - 1, one per device, between round boundaries b_r and
 * b_{r+1} (b_0 = 0, b_V = n). Taken device by device, the state after devices 0..d-1 is the tuple
 * t_d = (where device d's chunk starts in each round); device d moves every coordinate forward
 * (a non-empty chunk per round) and its load is the sum of the V chunks it passed. From
 * t_0 = (b_0 .. b_{V-1}) the last device must end at (b_1 .. b_V). For fixed round boundaries
 * this is a shortest-path-like DP over tuples: what remains from state (d, t_d) does not depend on
 * how it was reached, so each state's result is cached (interleaved_memo.c). The round boundaries
 * are enumerated (C(n, V - 1) tuples at most; nearest to a good guess first).
 *
 * The objective, each step proven: the least largest chunk (the chain DP over the K chunks: a
 * round of the interleaved order moves at the pace of its longest chunk, and the device-load
 * optimum alone ran slower than the equal split), then the least largest device load with every
 * chunk within it, then the least sum of squared chunk times (docs/partitioning.md).
 *
 * Under a cap T on every device's load the remaining work bounds each step from below: devices
 * d+1 .. P-1 can carry at most sum (T x their speed) more, so device d must take the rest. With
 * equal speeds the slack P T - total is shared by all devices, and near the optimum it is a
 * fraction of a layer: each device's load then lies in a window narrower than one layer, and the
 * search is small. Exact: ticks are integers and nothing is pruned that a plan could use.
 *
 * The device-load step: (1) a plan to start from (the chain DP's over the K chunks, else the
 * uniform split), then probes for any plan under a cap halfway between the proven bound and the
 * best so far, each given up after IL_PROBE_NODES states (a cap with plans is found quickly, one
 * without costs a pass over every round tuple). (2) One pass over every round tuple, each
 * searched under the best largest load so far for its least largest load and, at the cap, its
 * least sum of squared chunk times (sp_il_solve_cap with SP_IL_BEST): when it ends, no tuple has a
 * plan below the cap, so the cap is optimal. Iteration: with equal speeds (M - 1) max + sum orders
 * plans as the bottleneck does; with speeds the least sum under caps T descending from the
 * largest where (M - 1) T alone could beat the best found (the argument of solve_iteration in
 * dp.c). Memory limits: every in-flight state of the device's chunks under the schedule
 * fits (chunk_memory.h), checked per step. A time limit stops any step; the plan then carries the
 * proven bound and its gap. */
#include <string.h>

#include "baselines.h"
#include "interleaved_search.h"
#include "partition_impl.h"

#define IL_MAX_VIRTUAL_STAGES 4096u /* the search recurses once per device and round */
#define IL_PROBE_NODES        20000u
#define IL_MEMO_MAX_SLOTS     ((size_t)1 << 20) /* 56 MB with V = 4 */

static int64_t max_load(const struct sp_il *s, const size_t *bounds, int64_t *sum) {
    int64_t mx = 0, total = 0;
    for (uint32_t d = 0; d < s->P; d++) {
        int64_t l = 0;
        for (uint32_t r = 0; r < s->V; r++) {
            size_t k = (size_t)r * s->P + d;
            l += sp_il_chunk_ticks(s, d, r, bounds[k], bounds[k + 1]);
        }
        mx = l > mx ? l : mx;
        total += l;
    }
    if (sum)
        *sum = total;
    return mx;
}

/* whether the chunk split bounds (positions) can start the search: every chunk non-empty (unless
 * allowed), within the chunk cap, and each device within its memory */
static bool usable(struct sp_il *s, const size_t *bounds) {
    uint32_t K = s->P * s->V;
    for (uint32_t k = 0; k < K; k++)
        if (bounds[k] + s->min_chunk > bounds[k + 1])
            return false;
    uint32_t *t = s->trace, *e = s->trace + s->V;
    for (uint32_t d = 0; d < s->P; d++) {
        for (uint32_t r = 0; r < s->V; r++) {
            t[r] = (uint32_t)bounds[(size_t)r * s->P + d];
            e[r] = (uint32_t)bounds[(size_t)r * s->P + d + 1];
            if (sp_il_chunk_ticks(s, d, r, t[r], e[r]) > s->chunk_cap)
                return false;
        }
        if (!sp_il_device_fits(s, d, t, e))
            return false;
    }
    return true;
}

/* A plan to start from: the chain DP's over the K chunks (the least largest chunk, then balanced
 * chunks), else the uniform chunk split, when usable */
static bool incumbent(sp_ctx *ctx, const sp_profile *profile, struct sp_il *s, size_t *bounds) {
    uint32_t K = s->P * s->V;
    if (s->min_chunk && sp_chain_best_bounds(ctx, s->c, bounds, NULL) == SP_OK && usable(s, bounds))
        return true;
    sp_ctx_begin(ctx);
    if (sp_uniform_bounds(ctx, profile, s->c, K, bounds) != SP_OK) {
        sp_ctx_begin(ctx);
        return false;
    }
    for (uint32_t k = 0; k <= K; k++)
        bounds[k] = sp_chain_position_of(s->c, bounds[k]);
    return usable(s, bounds);
}

struct il_result {
    bool proven;
    bool partial;  /* only the round tuples near the chain DP's plan were tried */
    int64_t bound; /* proven lower bound of the objective, ticks */
    int64_t value; /* the plan's objective, ticks */
};

/* the least bottleneck (bisection), then the most balanced plan reaching it */
static sp_status solve_bottleneck(sp_ctx *ctx, const sp_profile *profile, struct sp_il *s,
                                  const sp_partition_opts *o, size_t *bounds, size_t *trial,
                                  struct il_result *out) {
    const struct sp_chain *c = s->c;
    uint32_t K = s->P * s->V;
    int64_t W = c->w[s->n];
    double speeds = 0;
    int64_t hi = 0;
    for (uint32_t d = 0; d < s->P; d++) {
        double sp = c->speed ? c->speed[d] : 1.0;
        speeds += sp;
        int64_t all = (int64_t)((double)W / sp) + s->V + 1;
        hi = all > hi ? all : hi;
    }
    int64_t lo = c->speed ? (int64_t)((double)(W - s->P) / speeds) - s->V : (W + s->P - 1) / s->P;
    lo = lo < 0 ? 0 : lo;
    bool have = incumbent(ctx, profile, s, bounds);
    uint32_t *hint = sp_mallocarray(3 * ((size_t)s->V + 1), sizeof *hint);
    if (!hint)
        return sp_oom(ctx, "partitioning interleaved chunks");
    uint32_t *win_lo = hint + s->V + 1, *win_hi = win_lo + s->V + 1;
    for (uint32_t r = 0; r <= s->V; r++)
        hint[r] = have ? (uint32_t)bounds[(size_t)r * s->P] : (uint32_t)(s->n * r / s->V);
    sp_il_round_windows(s, win_lo, win_hi);
    struct sp_il_rounds R;
    sp_status st =
        sp_il_rounds_init(ctx, &R, s->V, (size_t)s->P * s->min_chunk, s->n, win_lo, win_hi, hint);
    sp_free(hint);
    if (st != SP_OK)
        return st;
    if (!have && sp_il_solve_cap(s, &R, hi, SP_IL_FEASIBLE, bounds) == SP_IL_FAIL) {
        sp_free(R.b);
        if (s->stopped)
            return sp_fail(ctx, SP_ERR_INFEASIBLE,
                           "no split into %u x %u interleaved chunks found within the time "
                           "limit (%g s); raise --time-limit",
                           o->stages, o->chunks, o->time_limit_s);
        return SP_ERR_INFEASIBLE; /* the memory: the caller explains */
    }
    hi = max_load(s, bounds, NULL);
    /* A good plan first, cheaply: bisection probes for any plan under a cap, each given up after
     * IL_PROBE_NODES states (a cap with no plan costs a pass over every round tuple; one with
     * plans is found quickly). A probe that ends without a plan proves its cap too low. */
    for (int64_t guess = lo; guess < hi && !s->stopped;) {
        int64_t mid = guess + (hi - guess) / 2;
        s->node_limit = s->nodes + IL_PROBE_NODES;
        sp_i128 v = sp_il_solve_cap(s, &R, mid, SP_IL_FEASIBLE, trial);
        bool gave_up = s->over_budget;
        s->stopped = s->over_budget = false;
        s->node_limit = UINT64_MAX;
        if (v != SP_IL_FAIL) {
            memcpy(bounds, trial, ((size_t)K + 1) * sizeof *bounds);
            hi = max_load(s, bounds, NULL);
        } else {
            guess = mid + 1;
            if (!gave_up && !R.partial && sp_now_ms() <= s->deadline_ms)
                lo = mid + 1; /* every round tuple tried: no plan under mid */
        }
        s->stopped = sp_now_ms() > s->deadline_ms;
    }
    /* One pass over every round tuple, each searched under the best largest load so far: for
     * its least largest load (which lowers the cap when it beats it) and its least sum of
     * squared chunk times at the cap. When the pass ends, no tuple has a plan below the cap:
     * the cap is the optimum, and the plan the most balanced reaching it. */
    if (sp_il_solve_cap(s, &R, hi, SP_IL_BEST, trial) != SP_IL_FAIL) {
        memcpy(bounds, trial, ((size_t)K + 1) * sizeof *bounds);
        hi = max_load(s, bounds, NULL);
    }
    out->proven = (!s->stopped && !R.partial) || hi <= lo;
    out->partial = R.partial;
    out->bound = out->proven ? hi : lo;
    out->value = hi;
    /* with speeds and --objective iteration: (M - 1) max + sum, scanning caps down from the
     * largest that can still beat the best found */
    if (o->objective == SP_OBJECTIVE_ITERATION && c->speed && out->proven && !s->stopped) {
        uint32_t M1 = o->micro_batches - 1;
        int64_t sum = 0, mx = max_load(s, bounds, &sum);
        sp_i128 best = (sp_i128)M1 * mx + sum;
        double fastest = 0;
        for (uint32_t d = 0; d < s->P; d++)
            fastest = c->speed[d] > fastest ? c->speed[d] : fastest;
        int64_t least_sum = (int64_t)((double)W / fastest) - K; /* below every plan's sum */
        sp_i128 top = M1 ? out->value + (best - least_sum) / M1 : (sp_i128)hi * 2 + W;
        int64_t T = top > SP_NO_CAP / 4 ? SP_NO_CAP / 4 : (int64_t)top;
        while (T >= out->value && !s->stopped) {
            if (sp_il_solve_cap(s, &R, T, SP_IL_SUM, trial) == SP_IL_FAIL)
                break;
            int64_t tsum = 0, tmax = max_load(s, trial, &tsum);
            sp_i128 j = (sp_i128)M1 * tmax + tsum;
            if (j < best) {
                best = j;
                memcpy(bounds, trial, ((size_t)K + 1) * sizeof *bounds);
            }
            T = tmax - 1;
        }
        out->proven = !s->stopped && !R.partial;
        out->value = (int64_t)best;
        out->bound = out->proven ? out->value : (int64_t)((sp_i128)M1 * lo + least_sum);
    }
    sp_free(R.b);
    return SP_OK;
}

/* The least largest chunk first (the chain DP over the K chunks, exact), then the search under
 * it. When no plan with chunks that small fits the memory, the search without it, said in a
 * warning. */
static sp_status chunk_capped(sp_ctx *ctx, const sp_profile *profile, struct sp_il *s,
                              const sp_partition_opts *o, size_t *bounds, size_t *trial,
                              struct il_result *r) {
    sp_status st = s->min_chunk ? sp_chain_min_bottleneck(ctx, s->c, &s->chunk_cap) : SP_OK;
    if (st != SP_OK)
        return st;
    st = solve_bottleneck(ctx, profile, s, o, bounds, trial, r);
    if (st != SP_ERR_INFEASIBLE || s->chunk_cap == SP_NO_CAP || *sp_ctx_get_errmsg(ctx))
        return st;
    s->chunk_cap = SP_NO_CAP;
    st = solve_bottleneck(ctx, profile, s, o, bounds, trial, r);
    if (st == SP_OK)
        sp_warn(ctx,
                "no split into %u x %u chunks with every chunk within the least largest chunk "
                "fits the memory: the plan balances the device loads alone, its chunks may "
                "be uneven",
                o->stages, o->chunks);
    return st;
}

sp_status sp_solve_interleaved(sp_ctx *ctx, const struct sp_problem *pb, struct sp_solution *sol) {
    const sp_profile *profile = pb->profile;
    const sp_partition_opts *o = pb->o;
    const struct sp_stage_devices *d = pb->d;
    size_t *bounds = sol->bounds;
    struct sp_ilp_result *res = &sol->search;
    uint32_t P = o->stages, V = o->chunks, K = P * V;
    memset(res, 0, sizeof *res);
    if (K > IL_MAX_VIRTUAL_STAGES)
        return sp_fail(ctx, SP_ERR_LIMIT,
                       "the interleaved search takes up to %u chunks in all, got %u x %u; use "
                       "--solver uniform or --solver ilp",
                       IL_MAX_VIRTUAL_STAGES, P, V);
    double *speed = NULL;
    if (d->speed) {
        if (!(speed = sp_mallocarray(K, sizeof *speed)))
            return sp_oom(ctx, "partitioning interleaved chunks");
        for (uint32_t k = 0; k < K; k++)
            speed[k] = d->speed[k % P];
    }
    /* the chunks as K virtual stages, each with its device's speed; memory is the chunks' */
    struct sp_chain_model model = {.weight = SP_WEIGHT_TIME,
                                   .stages = K,
                                   .micro_batches = o->micro_batches,
                                   .schedule = o->schedule,
                                   .speed = speed};
    struct sp_chain c;
    sp_status st = sp_chain_restage(ctx, &c, pb->chain, &model);
    sp_free(speed);
    if (st != SP_OK)
        return st;
    struct sp_il s = {.c = &c,
                      .P = P,
                      .V = V,
                      .n = c.n_pos - 1,
                      /* allowed, empty chunks go wherever they balance the devices best */
                      .min_chunk = o->allow_empty_stages ? 0 : 1,
                      .chunk_cap = SP_NO_CAP,
                      .node_limit = UINT64_MAX};

    struct sp_chunk_memory cm = {0};
    if (o->memory_limit_bytes || d->memory)
        st = sp_chunk_memory_init(ctx, o->schedule, P, V, o->micro_batches, o->memory_limit_bytes,
                                  d->memory, &cm);
    s.cm = cm.any_cap ? &cm : NULL;
    s.work_rest = sp_mallocarray((size_t)P + 1, sizeof *s.work_rest);
    s.b = sp_mallocarray((size_t)V + 1, sizeof *s.b);
    s.key = sp_mallocarray(((size_t)P + 1) * (V + 1), sizeof *s.key);
    s.e = sp_mallocarray((size_t)K, sizeof *s.e);
    s.best_e = sp_mallocarray((size_t)K, sizeof *s.best_e);
    s.trace = sp_mallocarray(2 * (size_t)V, sizeof *s.trace);
    size_t *trial = sp_mallocarray((size_t)K + 1, sizeof *trial);
    if (st == SP_OK && (!s.work_rest || !s.b || !s.key || !s.e || !s.best_e || !s.trace || !trial))
        st = sp_oom(ctx, "partitioning interleaved chunks");
    if (st == SP_OK)
        st = sp_tuple_memo_init(ctx, &s.memo, V + 1, V, IL_MEMO_MAX_SLOTS);
    double t0 = sp_now_ms();
    s.deadline_ms = t0 + o->time_limit_s * 1000;
    struct il_result r = {0};
    if (st == SP_OK && s.n < (size_t)K * s.min_chunk)
        st = SP_ERR_INFEASIBLE;
    else if (st == SP_OK)
        st = chunk_capped(ctx, profile, &s, o, bounds, trial, &r);
    if (st == SP_OK) {
        for (uint32_t k = 0; k <= K; k++)
            bounds[k] = c.pos[bounds[k]];
        res->found = true;
        res->optimal = r.proven;
        sol->guarantee = r.proven ? SP_GUARANTEE_PROVEN : SP_GUARANTEE_BOUNDED;
        res->objective_ms = (double)r.value / SP_TICKS_PER_MS;
        res->best_bound = (double)r.bound / SP_TICKS_PER_MS;
        res->mip_gap = r.value > 0 ? (double)(r.value - r.bound) / (double)r.value : 0;
        res->status = r.proven ? "optimal" : r.partial ? "search limit" : "time limit";
        res->stopped = s.stopped;
        res->nodes = (long long)s.nodes;
        res->solve_ms = sp_now_ms() - t0;
    }
    sp_tuple_memo_release(&s.memo);
    sp_free(s.work_rest);
    sp_free(s.b);
    sp_free(s.key);
    sp_free(s.e);
    sp_free(s.best_e);
    sp_free(s.trace);
    sp_free(trial);
    sp_chunk_memory_release(&cm);
    sp_chain_release(&c);
    return st;
}

/* partitioner/partition.c: sp_partition, the entry point: validates options, runs the chosen
 * solver, explains infeasibility, and builds the plan with its figures. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "baselines.h"
#include "chain.h"
#include "chunk_memory.h"
#include "cost.h"
#include "devices_impl.h"
#include "ilp.h"
#include "placement.h"
#include "plan_impl.h"
#include "sim_impl.h"

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

static const char *layer_name(const sp_profile *p, size_t l) {
    return sp_profile_layer(p, l)->name;
}

/* The devices the stages run on (opts, else the profile's), as per-stage speeds and memory. */
struct stage_devices {
    double *speed;    /* [P] or NULL when every speed is 1 */
    uint64_t *memory; /* [P] or NULL */
    const sp_devices *list;
};

static void stage_devices_release(struct stage_devices *d) {
    sp_free(d->speed);
    sp_free(d->memory);
}

/* The partitioner counts a stage's time in integer nanoseconds (64 bits). Refuse inputs whose
 * largest possible total could pass 2^62 ns: every layer's work on the slowest device, and with
 * blocking transfers four transfers (in and out, forward and backward) of every layer's output
 * over the slowest link. The profile reader bounds the work alone; speeds and links scale it. */
static sp_status check_tick_range(sp_ctx *ctx, const sp_profile *profile,
                                  const sp_partition_opts *o, const sp_devices *list) {
    double slowest = 1;
    for (size_t i = 0; list && i < sp_devices_count(list); i++)
        slowest = fmin(slowest, sp_devices_get(list, i)->speed);
    double latency_ms = 0, ms_per_GB = 0; /* the slowest link's (an upper bound) */
    bool blocking = o->links && o->comm == SP_COMM_BLOCKING;
    size_t n_links = blocking ? sp_links_count(o->links) : 0;
    for (size_t i = 0; i < n_links; i++)
        for (size_t j = 0; j < n_links; j++) {
            double alpha = sp_links_transfer_ms(o->links, i, j, 0);
            latency_ms = fmax(latency_ms, alpha);
            ms_per_GB = fmax(ms_per_GB, sp_links_transfer_ms(o->links, i, j, 1000000000) - alpha);
        }
    size_t n = sp_profile_layer_count(profile);
    double work_ms = 0, activation_bytes = 0;
    for (size_t l = 0; l < n; l++) {
        const sp_layer *L = sp_profile_layer(profile, l);
        work_ms += L->fwd_ms + L->bwd_ms + (L->recompute_ms > 0 ? L->recompute_ms : 0);
        activation_bytes += (double)L->activation_bytes;
    }
    double boundaries = fmin((double)n, (double)o->stages * (o->chunks ? o->chunks : 1));
    double transfer_ms =
        blocking ? 4 * (boundaries * latency_ms + activation_bytes / 1e9 * ms_per_GB) : 0;
    if (work_ms / slowest + transfer_ms <= SP_PROFILE_MAX_TOTAL_MS)
        return SP_OK;
    if (!blocking)
        return sp_fail(ctx, SP_ERR_LIMIT,
                       "the profile's %.4g ms of work would take %.4g ms on the slowest device "
                       "(speed %g), above the limit of %.4g ms (2^62 ns) the partitioner counts "
                       "exactly",
                       work_ms, work_ms / slowest, slowest, SP_PROFILE_MAX_TOTAL_MS);
    return sp_fail(ctx, SP_ERR_LIMIT,
                   "the profile's %.4g ms of work would take %.4g ms on the slowest device "
                   "(speed %g), plus up to %.4g ms of blocking transfers over the slowest link: "
                   "above the limit of %.4g ms (2^62 ns) the partitioner counts exactly",
                   work_ms, work_ms / slowest, slowest, transfer_ms, SP_PROFILE_MAX_TOTAL_MS);
}

static sp_status stage_devices_init(sp_ctx *ctx, const sp_profile *profile,
                                    const sp_partition_opts *o, struct stage_devices *d) {
    memset(d, 0, sizeof *d);
    d->list = o->devices ? o->devices : sp_profile_devices(profile);
    sp_status st = check_tick_range(ctx, profile, o, d->list);
    if (st != SP_OK || !d->list)
        return st;
    size_t n = sp_devices_count(d->list);
    if (n < o->stages)
        return sp_fail(ctx, SP_ERR_INFEASIBLE,
                       "%u stages need %u devices (stage s runs on device s); the device list "
                       "has %zu",
                       o->stages, o->stages, n);
    bool speeds = false, memory = false;
    for (uint32_t s = 0; s < o->stages; s++) {
        speeds |= sp_devices_get(d->list, s)->speed != 1.0;
        memory |= sp_devices_get(d->list, s)->memory_bytes != 0;
    }
    if (speeds && !(d->speed = sp_mallocarray(o->stages, sizeof *d->speed)))
        return sp_oom(ctx, "reading devices");
    if (memory && !(d->memory = sp_mallocarray(o->stages, sizeof *d->memory)))
        return sp_oom(ctx, "reading devices");
    for (uint32_t s = 0; s < o->stages; s++) {
        if (d->speed)
            d->speed[s] = sp_devices_get(d->list, s)->speed;
        if (d->memory)
            d->memory[s] = sp_devices_get(d->list, s)->memory_bytes;
    }
    return SP_OK;
}

static sp_status chain_for(sp_ctx *ctx, struct sp_chain *c, const sp_profile *profile,
                           const sp_partition_opts *o, const struct stage_devices *d) {
    struct sp_chain_model model = {.weight = SP_WEIGHT_TIME,
                                   .stages = o->stages,
                                   .micro_batches = o->micro_batches,
                                   .mem_cap = o->memory_limit_bytes,
                                   .speed = d->speed,
                                   .device_mem = d->memory,
                                   .links = o->links,
                                   .blocking = o->comm == SP_COMM_BLOCKING};
    return sp_chain_init(ctx, c, profile, &model);
}

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

static int64_t max_stage_time(const struct sp_chain *c, const size_t *bounds) {
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
    sp_i128 best = (sp_i128)(M - 1) * max_stage_time(c, bounds) + sum;
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
        sp_i128 j = (sp_i128)(M - 1) * max_stage_time(c, trial) + s_T;
        if (st == SP_OK && j < best) {
            best = j;
            memcpy(bounds, trial, (c->p + 1) * sizeof *bounds);
        }
    }
    sp_free(cand);
    sp_free(trial);
    return st;
}

static sp_status solve_dp(sp_ctx *ctx, const sp_profile *profile, const sp_partition_opts *o,
                          const struct stage_devices *d, size_t *bounds) {
    struct sp_chain c;
    sp_status st = chain_for(ctx, &c, profile, o, d);
    if (st != SP_OK)
        return st;
    int64_t cap = SP_NO_CAP;
    /* the monotone engine (greedy + windows) unless a stage's cost depends on where it ends */
    bool general = c.blocking;
    bool sum_varies = c.blocking || c.speed;
    if (c.n_pos - 1 < o->stages)
        st = SP_ERR_INFEASIBLE;
    else if (o->objective != SP_OBJECTIVE_VARIANCE)
        st = general ? sp_general_min_bottleneck(ctx, &c, &cap)
                     : sp_chain_min_bottleneck(ctx, &c, &cap);
    if (st == SP_OK) {
        if (o->objective == SP_OBJECTIVE_ITERATION && sum_varies)
            st = solve_iteration(ctx, &c, o->micro_batches, cap, bounds);
        else if (general)
            st = sp_general_min_sum(ctx, &c, cap, SP_SUM_SQUARES, bounds, NULL);
        else
            st = sp_chain_min_sum_squares(ctx, &c, cap, bounds);
    }
    if (st == SP_ERR_INFEASIBLE)
        st = explain_infeasible(ctx, profile, &c, o);
    if (st == SP_OK)
        for (uint32_t s = 0; s <= o->stages; s++)
            bounds[s] = c.pos[bounds[s]];
    sp_chain_release(&c);
    return st;
}

/* A baseline's plan must still satisfy the memory limits to be usable (per device: the sum of
 * its chunks when interleaved). */
static sp_status check_memory(sp_ctx *ctx, const sp_plan *plan, const sp_partition_opts *o,
                              const struct stage_devices *d) {
    for (uint32_t dev = 0; dev < o->stages; dev++) {
        uint64_t cap = o->memory_limit_bytes, dm = d->memory ? d->memory[dev] : 0;
        if (dm && (!cap || dm < cap))
            cap = dm;
        uint64_t need = 0, resident = 0, saved_held = 0;
        for (size_t k = dev; k < plan->n_stages; k += o->stages) {
            const sp_stage *st = &plan->stages[k];
            need += st->memory_bytes;
            resident += st->resident_bytes;
            saved_held += st->memory_bytes - st->resident_bytes;
        }
        if (cap && need > cap) {
            char nb[16], lim[16];
            return sp_fail(ctx, SP_ERR_INFEASIBLE,
                           "the %s split does not fit the memory limit: %s %u needs %s "
                           "(resident %llu + saved activations %llu bytes), the limit is %s%s",
                           sp_solver_name(o->solver), o->chunks > 1 ? "device" : "stage", dev,
                           sp_format_bytes(need, nb, sizeof nb), (unsigned long long)resident,
                           (unsigned long long)saved_held, sp_format_bytes(cap, lim, sizeof lim),
                           o->chunks > 1 ? ""
                                         : "; --solver dp finds a plan within the limit when one "
                                           "exists");
        }
    }
    return SP_OK;
}

static size_t position_of(const struct sp_chain *c, size_t layer) {
    size_t lo = 0, hi = c->n_pos - 1;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (c->pos[mid] >= layer)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

/* Keep recomputation only where memory needs it: the program may recompute a layer it need not
 * (at equal bottleneck); undoing that only shortens its stage. Layers with the longest
 * recomputation are undone first. c gives each stage's memory cap and in-flight count. */
static void trim_recompute(const sp_profile *profile, const struct sp_chain *c,
                           const size_t *bounds, bool *recompute) {
    for (uint32_t k = 0; recompute && k < c->p; k++) {
        size_t a = bounds[k], e = bounds[k + 1];
        uint64_t cap = c->cap[k];
        uint64_t mem = 0, saved = 0;
        for (size_t l = a; l < e; l++) {
            mem += sp_profile_layer(profile, l)->memory_bytes;
            saved += recompute[l] ? 0 : sp_profile_layer(profile, l)->saved_bytes;
        }
        for (;;) {
            size_t best = SIZE_MAX;
            for (size_t l = a; l < e; l++) {
                const sp_layer *L = sp_profile_layer(profile, l);
                sp_u128 need = (sp_u128)mem + (sp_u128)c->inflight[k] * (saved + L->saved_bytes);
                if (recompute[l] && (!cap || need <= cap) &&
                    (best == SIZE_MAX ||
                     L->recompute_ms > sp_profile_layer(profile, best)->recompute_ms))
                    best = l;
            }
            if (best == SIZE_MAX)
                break;
            recompute[best] = false;
            saved += sp_profile_layer(profile, best)->saved_bytes;
        }
    }
}

/* --solver ilp: the chain over the K = P x V virtual stages (each with its device's speed), an
 * incumbent from the exact DP (V = 1) or the uniform chunk split, then the program. */
/* The ilp's incumbent when no plan fits without recomputation: the exact DP (stage s on
 * device s) with every block that can recompute recomputing, so nothing of it is saved. */
static sp_status recompute_all_bounds(sp_ctx *ctx, const sp_profile *profile,
                                      const sp_partition_opts *o, const struct stage_devices *d,
                                      size_t *bounds) {
    struct sp_chain_model model = {.weight = SP_WEIGHT_TIME,
                                   .stages = o->stages,
                                   .micro_batches = o->micro_batches,
                                   .mem_cap = o->memory_limit_bytes,
                                   .speed = d->speed,
                                   .device_mem = d->memory,
                                   .recompute_all = true};
    struct sp_chain c;
    sp_status st = sp_chain_init(ctx, &c, profile, &model);
    if (st != SP_OK)
        return st;
    st = sp_chain_best_bounds(ctx, &c, bounds, NULL);
    sp_chain_release(&c);
    return st;
}

static sp_status solve_ilp(sp_ctx *ctx, const sp_profile *profile, const sp_partition_opts *o,
                           const struct stage_devices *d, size_t *bounds, bool *recompute,
                           const struct sp_placement_classes *pc, bool inject,
                           struct sp_ilp_result *res) {
    uint32_t K = o->stages * o->chunks;
    /* With placement search the chain has no speeds or device memory (the program chooses
     * them); its free chain, which bounds T from below, runs every stage at the fastest speed */
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
    struct sp_chain_model model = {.weight = SP_WEIGHT_TIME,
                                   .stages = K,
                                   .micro_batches = o->micro_batches,
                                   .mem_cap = o->chunks > 1 ? 0 : o->memory_limit_bytes,
                                   .speed = pc ? NULL : speed,
                                   .device_mem = o->chunks > 1 || pc ? NULL : d->memory};
    struct sp_chain c, free_chain; /* free_chain: the same without memory caps */
    sp_status st = sp_chain_init(ctx, &c, profile, &model);
    struct sp_chain_model free_model = model;
    free_model.mem_cap = 0;
    free_model.device_mem = NULL;
    free_model.speed = free_speed;
    if (st == SP_OK && (st = sp_chain_init(ctx, &free_chain, profile, &free_model)) != SP_OK)
        sp_chain_release(&c);
    sp_free(speed);
    sp_free(free_speed);
    if (st != SP_OK)
        return st;
    size_t B = c.n_pos - 1;
    size_t *inc = sp_mallocarray((size_t)K + 1, sizeof *inc);
    int64_t *rc = o->recompute ? sp_mallocarray(B, sizeof *rc) : NULL;
    if (!inc || (o->recompute && !rc)) {
        st = sp_oom(ctx, "building the integer program");
        goto out;
    }
    for (size_t b = 0; rc && b < B; b++) { /* a block recomputes when all its layers can */
        rc[b] = 0;
        for (size_t l = c.pos[b]; l < c.pos[b + 1] && rc[b] >= 0; l++) {
            double ms = sp_profile_layer(profile, l)->recompute_ms;
            rc[b] = ms < 0 ? -1 : rc[b] + sp_ms_to_ticks(ms);
        }
    }
    /* chunks: cm has the in-flight states of stage s's devices (s), for the incumbent and, without
     * placement, the program's memory rows; with placement the rows take the limit alone (the
     * program adds each class's memory) */
    struct sp_chunk_memory cm = {0}, cm_rows = {0};
    bool class_memory = false;
    for (uint32_t cls = 0; pc && cls < pc->ilp.classes; cls++)
        class_memory |= pc->memory[cls] != 0;
    if (o->chunks > 1 && (o->memory_limit_bytes || d->memory))
        st = sp_chunk_memory_init(ctx, o->stages, o->chunks, o->micro_batches,
                                  o->memory_limit_bytes, d->memory, &cm);
    bool chunk_rows = o->chunks > 1 && (pc ? o->memory_limit_bytes || class_memory : cm.any_cap);
    if (st == SP_OK && pc && chunk_rows)
        st = sp_chunk_memory_init(ctx, o->stages, o->chunks, o->micro_batches,
                                  o->memory_limit_bytes, NULL, &cm_rows);
    bool have_incumbent = true, inc_recomputes = false;
    double t_lower = 0;
    if (st != SP_OK)
        goto out;
    if (c.n_pos - 1 < K) {
        st = SP_ERR_INFEASIBLE;
    } else if (pc && o->chunks == 1) {
        /* the incumbent: the exact DP with stage s on device s; the bound: the DP with every
         * stage on the fastest device and no memory limit */
        st = solve_dp(ctx, profile, o, d, inc);
        for (uint32_t k = 0; st == SP_OK && k <= K; k++)
            inc[k] = position_of(&c, inc[k]);
        if (st == SP_ERR_INFEASIBLE && o->recompute) {
            sp_ctx_begin(ctx);
            st = recompute_all_bounds(ctx, profile, o, d, inc);
            inc_recomputes = st == SP_OK;
        }
        if (st == SP_ERR_INFEASIBLE) { /* another placement may fit where this one does not */
            have_incumbent = false;
            st = SP_OK;
            sp_ctx_begin(ctx);
        }
        int64_t free_cap = 0;
        if (st == SP_OK && sp_chain_min_bottleneck(ctx, &free_chain, &free_cap) == SP_OK)
            t_lower = (double)free_cap / SP_TICKS_PER_MS;
    } else if (o->chunks == 1) {
        st = sp_chain_best_bounds(ctx, &c, inc, NULL);
        if (st == SP_OK && !o->recompute) /* the DP's bottleneck is exact: it bounds T */
            t_lower = (double)max_stage_time(&c, inc) / SP_TICKS_PER_MS;
        if (o->recompute) {
            /* without recomputation the memory limit may leave no plan: then the program starts
             * without an incumbent. Its bottleneck is at least the DP's without memory caps
             * (recomputation only adds time) */
            if (st == SP_ERR_INFEASIBLE) {
                sp_ctx_begin(ctx);
                st = recompute_all_bounds(ctx, profile, o, d, inc);
                inc_recomputes = st == SP_OK;
            }
            if (st == SP_ERR_INFEASIBLE) {
                have_incumbent = false;
                st = SP_OK;
                sp_ctx_begin(ctx);
            }
            int64_t free_cap = 0;
            if (st == SP_OK && sp_chain_min_bottleneck(ctx, &free_chain, &free_cap) == SP_OK)
                t_lower = (double)free_cap / SP_TICKS_PER_MS;
        }
    } else {
        st = sp_uniform_bounds(ctx, profile, K, inc);
        if (st == SP_OK && cm.any_cap) { /* the uniform chunk split, if it fits (GLPK does not
                                          * check an injected plan) */
            bool fits = true, fits_recomputed = rc != NULL;
            bool *all = rc ? sp_calloc(sp_profile_layer_count(profile), sizeof *all) : NULL;
            for (size_t b = 0; all && b < B; b++)
                for (size_t l = c.pos[b]; l < c.pos[b + 1]; l++)
                    all[l] = rc[b] >= 0;
            for (uint32_t dev = 0; dev < o->stages; dev++) {
                fits &= sp_chunk_memory_fits(&cm, profile, inc, NULL, dev);
                fits_recomputed &= all && sp_chunk_memory_fits(&cm, profile, inc, all, dev);
            }
            sp_free(all);
            have_incumbent = fits || fits_recomputed;
            inc_recomputes = !fits && fits_recomputed;
        }
        for (uint32_t k = 0; st == SP_OK && k <= K; k++)
            inc[k] = position_of(&c, inc[k]);
    }
    if (!inject) { /* the program alone (the oracle tests check it against enumeration) */
        have_incumbent = false;
        t_lower = 0;
    }
    if (st == SP_OK) {
        struct sp_ilp_input in = {.c = &c,
                                  .devices = o->stages,
                                  .micro_batches = o->micro_batches,
                                  .objective = o->objective,
                                  .time_limit_s = o->time_limit_s,
                                  .incumbent = have_incumbent ? inc : NULL,
                                  .recompute = rc,
                                  .t_lower_ms = t_lower,
                                  .incumbent_recomputes = inc_recomputes,
                                  .place = pc ? &pc->ilp : NULL,
                                  .chunk_memory = !chunk_rows ? NULL
                                                  : pc        ? &cm_rows.ilp
                                                              : &cm.ilp};
        st = sp_ilp_solve(ctx, &in, res);
    }
    if (st == SP_ERR_INFEASIBLE && !*sp_ctx_errmsg(ctx) && pc)
        st = sp_fail(ctx, SP_ERR_INFEASIBLE,
                     "no placement of %u stages on the %zu devices fits: every choice of devices "
                     "leaves a stage over its device's memory%s",
                     o->stages, sp_devices_count(d->list),
                     o->memory_limit_bytes ? " or the memory limit" : "");
    else if (st == SP_ERR_INFEASIBLE && !*sp_ctx_errmsg(ctx) && chunk_rows)
        st = sp_fail(ctx, SP_ERR_INFEASIBLE,
                     "no split into %u x %u interleaved chunks fits %s: each device holds its "
                     "chunks' memory_bytes and, at every point of the interleaved order, the "
                     "saved_bytes of the micro-batches in flight. Raise the limit, use more "
                     "stages, fewer micro-batches%s",
                     o->stages, o->chunks,
                     o->memory_limit_bytes ? "the memory limit" : "the devices' memory",
                     o->recompute ? "" : " or --recompute auto");
    else if (st == SP_ERR_INFEASIBLE && !*sp_ctx_errmsg(ctx) && o->chunks == 1)
        st = explain_infeasible(ctx, profile, &c, o);
    if (st == SP_OK) {
        for (uint32_t k = 0; k <= K; k++)
            bounds[k] = c.pos[res->bounds[k]];
        for (size_t b = 0; recompute && res->recompute && b < B; b++)
            for (size_t l = c.pos[b]; l < c.pos[b + 1]; l++)
                recompute[l] = res->recompute[b];
        if (!pc && cm.any_cap) /* per device, over its chunks */
            sp_chunk_memory_trim(&cm, profile, bounds, recompute);
        else if (!pc && o->chunks == 1) /* placement trims against the chosen devices */
            trim_recompute(profile, &c, bounds, recompute);
    }
out:
    sp_chunk_memory_release(&cm);
    sp_chunk_memory_release(&cm_rows);
    sp_free(inc);
    sp_free(rc);
    sp_chain_release(&c);
    sp_chain_release(&free_chain);
    return st;
}

/* The plan for solved boundaries (and recomputed layers, or NULL): build, check, compare with
 * the even split on the same devices, record the ilp's figures (or NULL), simulate. */
static sp_status plan_finish(sp_ctx *ctx, const sp_profile *profile, const sp_partition_opts *o,
                             const struct stage_devices *d, const size_t *bounds,
                             const bool *recompute, const struct sp_ilp_result *ilp,
                             double solve_ms, sp_plan **out) {
    *out = NULL;
    uint32_t K = o->stages * o->chunks; /* virtual stages */
    size_t *even = sp_mallocarray((size_t)K + 1, sizeof *even);
    if (!even)
        return sp_oom(ctx, "partitioning");
    sp_plan *plan = NULL;
    sp_status st = sp_plan_build_recompute(ctx, profile, o, d->speed, bounds, recompute, &plan);
    if (st == SP_OK && o->solver != SP_SOLVER_DP && o->solver != SP_SOLVER_ILP)
        st = check_memory(ctx, plan, o, d);
    if (st == SP_OK)
        st = sp_uniform_bounds(ctx, profile, K, even);
    sp_sim *sim = NULL;
    if (st == SP_OK) {
        plan->summary.optimal = o->solver == SP_SOLVER_DP || (ilp && ilp->optimal);
        if (ilp) {
            sp_plan_summary *m = &plan->summary;
            m->mip_gap = ilp->mip_gap;
            m->best_bound_ms = ilp->best_bound;
            m->objective_ms = ilp->objective_ms;
            m->solver_status = ilp->status;
            m->nodes = ilp->nodes;
            m->free_binaries = ilp->free_binaries;
            if (!ilp->optimal)
                sp_warn(ctx,
                        "the ilp solver stopped at the time limit (%g s): the plan is the best "
                        "found, %.2f%% above the proven bound; raise --time-limit to prove it",
                        o->time_limit_s, 100 * ilp->mip_gap);
        }
        plan->summary.solve_ms = solve_ms;
        /* the even split on the same devices and links, figured the same way */
        sp_plan *even_plan = NULL;
        st = sp_plan_build(ctx, profile, o, d->speed, even, &even_plan);
        if (st == SP_OK)
            plan->summary.even_split_bottleneck_ms = even_plan->summary.bottleneck_ms;
        sp_plan_destroy(even_plan);
    }
    if (st == SP_OK) {
        /* every plan carries what its schedule is predicted to achieve */
        sp_sim_opts so;
        sp_sim_opts_init(&so);
        so.schedule = o->schedule;
        so.keep_ops = false;
        st = sp_simulate_plan(ctx, plan, &so, &sim);
        if (st == SP_OK)
            sp_plan_attach_schedule(plan, sim);
    }
    sp_sim_destroy(sim);
    sp_free(even);
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
static sp_status record_placement(sp_ctx *ctx, sp_plan *plan, const sp_devices *list,
                                  const size_t *device) {
    size_t K = sp_plan_stage_count(plan);
    uint32_t P = plan->summary.stages;
    uint32_t *index = sp_mallocarray(K, sizeof *index);
    const char **names = sp_mallocarray(K, sizeof *names);
    sp_status st = index && names ? SP_OK : sp_oom(ctx, "placing stages");
    for (size_t k = 0; st == SP_OK && k < K; k++) {
        index[k] = (uint32_t)device[k % P];
        names[k] = sp_devices_get(list, device[k % P])->name;
    }
    if (st == SP_OK)
        st = sp_plan_set_devices(ctx, plan, index, names);
    if (st == SP_OK)
        plan->summary.placement = SP_PLACEMENT_SEARCH;
    sp_free(index);
    sp_free(names);
    return st;
}

/* --placement search: the program picks a class of interchangeable devices for each stage; the
 * stages then take the lowest-numbered free device of their class, and the plan is figured on
 * those devices (and the links between them) in stage order. */
static sp_status plan_placed(sp_ctx *ctx, const sp_profile *profile, const sp_partition_opts *o,
                             const struct stage_devices *d, sp_plan **out) {
    *out = NULL;
    size_t n_layers = sp_profile_layer_count(profile);
    struct sp_placement_classes pc;
    sp_status st = sp_placement_classes_init(ctx, profile, d->list, o->links, o->stages, &pc);
    if (st != SP_OK)
        return st;
    uint32_t K = o->stages * o->chunks;
    size_t *bounds = sp_mallocarray((size_t)K + 1, sizeof *bounds);
    size_t *device = sp_mallocarray(o->stages, sizeof *device);
    bool *recompute = o->recompute ? sp_calloc(n_layers, sizeof *recompute) : NULL;
    struct sp_ilp_result ilp = {0};
    sp_devices *chosen = NULL;
    sp_links *chosen_links = NULL;
    struct stage_devices d2 = {0};
    if (!bounds || !device || (o->recompute && !recompute))
        st = sp_oom(ctx, "placing stages");
    double t0 = sp_now_ms();
    if (st == SP_OK)
        st = solve_ilp(ctx, profile, o, d, bounds, recompute, &pc, !o->ilp_cold, &ilp);
    double solve_ms = sp_now_ms() - t0;
    if (st == SP_OK)
        sp_placement_devices(&pc, ilp.stage_class, o->stages, device);
    if (st == SP_OK)
        st = sp_placement_select(ctx, &pc, d->list, o->links, device, o->stages, &chosen,
                                 &chosen_links);
    sp_partition_opts o2 = *o;
    o2.devices = chosen;
    o2.links = chosen_links;
    o2.placement = SP_PLACEMENT_ORDER;
    if (st == SP_OK)
        st = stage_devices_init(ctx, profile, &o2, &d2);
    if (st == SP_OK && recompute && o->chunks > 1) { /* trimmed against the chosen devices */
        struct sp_chunk_memory cm;
        st = sp_chunk_memory_init(ctx, o->stages, o->chunks, o->micro_batches,
                                  o->memory_limit_bytes, d2.memory, &cm);
        if (st == SP_OK)
            sp_chunk_memory_trim(&cm, profile, bounds, recompute);
        sp_chunk_memory_release(&cm);
    } else if (st == SP_OK && recompute) {
        struct sp_chain c;
        st = chain_for(ctx, &c, profile, &o2, &d2);
        if (st == SP_OK) {
            trim_recompute(profile, &c, bounds, recompute);
            sp_chain_release(&c);
        }
    }
    sp_plan *plan = NULL;
    if (st == SP_OK)
        st = plan_finish(ctx, profile, &o2, &d2, bounds, recompute, &ilp, solve_ms, &plan);
    if (st == SP_OK)
        st = record_placement(ctx, plan, d->list, device);
    stage_devices_release(&d2);
    sp_devices_destroy(chosen);
    sp_links_destroy(chosen_links);
    sp_free(ilp.bounds);
    sp_free(ilp.recompute);
    sp_free(ilp.stage_class);
    sp_free(bounds);
    sp_free(device);
    sp_free(recompute);
    sp_placement_classes_release(&pc);
    if (st != SP_OK) {
        sp_plan_destroy(plan);
        if (!*sp_ctx_errmsg(ctx))
            sp_fail(ctx, st, "%s", sp_strerror(st));
        return st;
    }
    *out = plan;
    return SP_OK;
}

/* One complete plan for resolved options: solve, then plan_finish. */
static sp_status plan_once(sp_ctx *ctx, const sp_profile *profile, const sp_partition_opts *o,
                           const struct stage_devices *d, sp_plan **out) {
    *out = NULL;
    if (o->placement == SP_PLACEMENT_SEARCH)
        return plan_placed(ctx, profile, o, d, out);
    uint32_t K = o->stages * o->chunks; /* virtual stages */
    size_t *bounds = sp_mallocarray((size_t)K + 1, sizeof *bounds);
    size_t n_layers = sp_profile_layer_count(profile);
    bool *recompute = o->recompute ? sp_calloc(n_layers, sizeof *recompute) : NULL;
    if (!bounds || (o->recompute && !recompute)) {
        sp_free(bounds);
        sp_free(recompute);
        return sp_oom(ctx, "partitioning");
    }
    double t0 = sp_now_ms();
    sp_status st;
    struct sp_ilp_result ilp = {0};
    switch (o->solver) {
    case SP_SOLVER_ILP:
        st = solve_ilp(ctx, profile, o, d, bounds, recompute, NULL, !o->ilp_cold, &ilp);
        break;
    case SP_SOLVER_UNIFORM:
        st = sp_uniform_bounds(ctx, profile, K, bounds);
        break;
    case SP_SOLVER_PARAMETERS:
        st = sp_parameters_bounds(ctx, profile, o->stages, bounds);
        break;
    default:
        st = solve_dp(ctx, profile, o, d, bounds);
        break;
    }
    double solve_ms = sp_now_ms() - t0;
    if (st == SP_ERR_INFEASIBLE && !*sp_ctx_errmsg(ctx)) {
        struct sp_chain c;
        if (chain_for(ctx, &c, profile, o, d) == SP_OK) {
            st = explain_infeasible(ctx, profile, &c, o);
            sp_chain_release(&c);
        }
    }
    if (st == SP_OK)
        st = plan_finish(ctx, profile, o, d, bounds, recompute,
                         o->solver == SP_SOLVER_ILP ? &ilp : NULL, solve_ms, out);
    sp_free(bounds);
    sp_free(ilp.bounds);
    sp_free(ilp.recompute);
    sp_free(recompute);
    if (st != SP_OK && !*sp_ctx_errmsg(ctx))
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

static sp_status plan_auto(sp_ctx *ctx, const sp_profile *profile, sp_partition_opts o,
                           const struct stage_devices *d, sp_plan **out) {
    struct mb_point tried[64];
    unsigned n_tried = 0;
    sp_plan *best = NULL;
    uint32_t lo = 0, hi = 0, m = o.stages;
    uint32_t step = o.chunks > 1 ? o.stages : 1; /* interleaved: multiples of P only */
    uint64_t limit = (uint64_t)o.stages * SP_AUTO_MAX_FACTOR;
    if (limit > SP_MAX_MICRO_BATCHES)
        limit = SP_MAX_MICRO_BATCHES;
    sp_status st = SP_OK;
    while (st == SP_OK) {
        o.micro_batches = m;
        sp_plan *plan = NULL;
        st = plan_once(ctx, profile, &o, d, &plan);
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
    if (m->chunks > 1 && opts->solver == SP_SOLVER_DP)
        opts->solver = SP_SOLVER_UNIFORM;
    opts->schedule = m->schedule.present ? m->schedule.schedule : SP_SCHEDULE_1F1B;
    opts->memory_limit_bytes = m->memory_limit_bytes;
    opts->comm = m->comm;
    opts->placement = m->placement;
    opts->placed_as = m->placement == SP_PLACEMENT_SEARCH ? plan : NULL;
}

/* The devices (and links, matched by name) a plan placed its pipeline stages on, in stage order:
 * what sp_plan_from_split runs stage s on when opts->placed_as is set. *device_out gets each
 * stage's index in `list` (freed by the caller). */
static sp_status devices_placed_as(sp_ctx *ctx, const sp_plan *placed, const sp_devices *list,
                                   const sp_links *links, uint32_t stages, sp_devices **devices_out,
                                   sp_links **links_out, size_t **device_out) {
    *devices_out = NULL;
    *links_out = NULL;
    size_t *device = sp_mallocarray(stages, sizeof *device), *link = NULL;
    if (!device)
        return sp_oom(ctx, "placing stages");
    sp_status st = SP_OK;
    if (!list || sp_plan_stage_count(placed) < stages)
        st = sp_fail(ctx, SP_ERR_INVALID_ARG,
                     "placing stages as a plan did needs its devices and its %u stages", stages);
    for (uint32_t s = 0; st == SP_OK && s < stages; s++) {
        device[s] = sp_plan_stage(placed, s)->device;
        if (device[s] >= sp_devices_count(list))
            st = sp_fail(ctx, SP_ERR_INVALID_ARG,
                         "the plan places stage %u on device %zu; the device list has %zu", s,
                         device[s], sp_devices_count(list));
    }
    if (st == SP_OK && links && !(link = sp_mallocarray(stages, sizeof *link)))
        st = sp_oom(ctx, "placing stages");
    for (uint32_t s = 0; st == SP_OK && link && s < stages; s++) {
        const char *name = sp_devices_get(list, device[s])->name;
        link[s] = sp_links_find(links, name);
        if (link[s] == sp_links_count(links))
            st = sp_fail(ctx, SP_ERR_INVALID_ARG,
                         "device '%s' (stage %u) has no entry in the links file (its \"devices\" "
                         "must name every device the plan uses)",
                         name, s);
    }
    if (st == SP_OK)
        st = sp_devices_select(ctx, list, device, stages, devices_out);
    if (st == SP_OK && link)
        st = sp_links_select(ctx, links, link, stages, links_out);
    sp_free(link);
    if (st != SP_OK) {
        sp_devices_destroy(*devices_out);
        *devices_out = NULL;
        sp_free(device);
        return st;
    }
    *device_out = device;
    return SP_OK;
}

sp_status sp_plan_from_split(sp_ctx *ctx, const sp_profile *profile, const sp_partition_opts *opts,
                             const size_t *first_layers, size_t count, sp_plan **out) {
    if (!ctx)
        return SP_ERR_INVALID_ARG;
    sp_ctx_begin(ctx);
    if (!profile || !opts || !first_layers || !out)
        return sp_fail(ctx, SP_ERR_INVALID_ARG, "sp_plan_from_split: NULL argument");
    *out = NULL;
    sp_partition_opts o = *opts;
    o.solver = SP_SOLVER_GIVEN;
    if (o.chunks == 0)
        o.chunks = 1;
    o.placement = SP_PLACEMENT_ORDER; /* a given split keeps stage s on device s */
    if (o.micro_batches == 0 || o.micro_batches == SP_MICRO_BATCHES_AUTO)
        o.micro_batches = 4 * o.stages;
    if (o.chunks > 1)
        o.schedule = SP_SCHEDULE_INTERLEAVED;
    size_t n = sp_profile_layer_count(profile);
    if (o.stages < 1 || (uint64_t)o.stages * o.chunks != count || count > SP_MAX_STAGES)
        return sp_fail(ctx, SP_ERR_INVALID_ARG,
                       "the split has %zu stages; expected stages x chunks = %u x %u", count,
                       o.stages, o.chunks);
    if (o.chunks > 1 && o.micro_batches % o.stages)
        return sp_fail(ctx, SP_ERR_INVALID_ARG,
                       "the interleaved schedule needs the micro-batch count to be a multiple of "
                       "the pipeline stages: M = %u, P = %u",
                       o.micro_batches, o.stages);
    size_t *bounds = sp_mallocarray(count + 1, sizeof *bounds);
    if (!bounds)
        return sp_oom(ctx, "evaluating a split");
    for (size_t s = 0; s < count; s++)
        bounds[s] = first_layers[s];
    bounds[count] = n;
    sp_status st = SP_OK;
    if (bounds[0] != 0)
        st = sp_fail(ctx, SP_ERR_INVALID_ARG, "stage 0 must start at layer 0, not %zu", bounds[0]);
    for (size_t s = 0; st == SP_OK && s < count; s++)
        if (bounds[s + 1] <= bounds[s])
            st = sp_fail(ctx, SP_ERR_INVALID_ARG,
                         "stage %zu is empty or out of order (starts at layer %zu, the next at "
                         "%zu; the profile has %zu layers): every stage needs at least one layer",
                         s, bounds[s], bounds[s + 1], n);
    for (size_t s = 1; st == SP_OK && s < count; s++)
        if (!sp_profile_layer(profile, bounds[s] - 1)->cut_after)
            sp_warn(ctx, "stage %zu starts after layer '%s', which has cut_after: false", s,
                    sp_profile_layer(profile, bounds[s] - 1)->name);
    sp_devices *placed_devices = NULL; /* with opts->placed_as: stage s's device at s */
    sp_links *placed_links = NULL;
    size_t *placed_index = NULL;
    if (st == SP_OK && o.placed_as) {
        st =
            devices_placed_as(ctx, o.placed_as, o.devices ? o.devices : sp_profile_devices(profile),
                              o.links, o.stages, &placed_devices, &placed_links, &placed_index);
        o.devices = placed_devices;
        o.links = placed_links;
    }
    struct stage_devices d;
    if (st == SP_OK)
        st = stage_devices_init(ctx, profile, &o, &d);
    sp_plan *plan = NULL;
    if (st == SP_OK) {
        st = sp_plan_build(ctx, profile, &o, d.speed, bounds, &plan);
        if (st == SP_OK && placed_index)
            st = record_placement(ctx, plan,
                                  opts->devices ? opts->devices : sp_profile_devices(profile),
                                  placed_index);
        if (st == SP_OK) {
            plan->summary.even_split_bottleneck_ms = plan->summary.bottleneck_ms;
            size_t *even = sp_mallocarray(count + 1, sizeof *even);
            sp_plan *even_plan = NULL;
            if (even && sp_uniform_bounds(ctx, profile, (uint32_t)count, even) == SP_OK &&
                sp_plan_build(ctx, profile, &o, d.speed, even, &even_plan) == SP_OK)
                plan->summary.even_split_bottleneck_ms = even_plan->summary.bottleneck_ms;
            sp_plan_destroy(even_plan);
            sp_free(even);
            sp_sim_opts so;
            sp_sim_opts_init(&so);
            so.schedule = o.schedule;
            so.keep_ops = false;
            sp_sim *sim = NULL;
            st = sp_simulate_plan(ctx, plan, &so, &sim);
            if (st == SP_OK)
                sp_plan_attach_schedule(plan, sim);
            sp_sim_destroy(sim);
        }
        stage_devices_release(&d);
    }
    sp_free(bounds);
    sp_devices_destroy(placed_devices);
    sp_links_destroy(placed_links);
    sp_free(placed_index);
    if (st != SP_OK) {
        sp_plan_destroy(plan);
        return st;
    }
    *out = plan;
    return SP_OK;
}

/* name -> index in a profile, for matching plans to changed profiles */
struct name_index {
    size_t cap;
    size_t *slot; /* layer index or SIZE_MAX */
};

static uint64_t fnv(const char *s) {
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static size_t name_find(const struct name_index *ix, const sp_profile *p, const char *name) {
    size_t k = (size_t)fnv(name) & (ix->cap - 1);
    while (ix->slot[k] != SIZE_MAX) {
        if (strcmp(sp_profile_layer(p, ix->slot[k])->name, name) == 0)
            return ix->slot[k];
        k = (k + 1) & (ix->cap - 1);
    }
    return SIZE_MAX;
}

sp_status sp_plan_remap(sp_ctx *ctx, const sp_plan *plan, const sp_profile *profile,
                        size_t *first_layers) {
    if (!ctx)
        return SP_ERR_INVALID_ARG;
    sp_ctx_begin(ctx);
    if (!plan || !profile || !first_layers)
        return sp_fail(ctx, SP_ERR_INVALID_ARG, "sp_plan_remap: NULL argument");
    if (!plan->layer_names)
        return sp_fail(ctx, SP_ERR_SCHEMA,
                       "the plan records no layer names (made by an older stagepart?); "
                       "partition again to check it against a profile");
    size_t n = sp_profile_layer_count(profile);
    struct name_index ix = {16, NULL};
    while (ix.cap < 2 * n)
        ix.cap *= 2;
    ix.slot = sp_mallocarray(ix.cap, sizeof *ix.slot);
    bool *seen = sp_calloc(n, sizeof *seen);
    if (!ix.slot || !seen) {
        sp_free(ix.slot);
        sp_free(seen);
        return sp_oom(ctx, "matching layers");
    }
    for (size_t k = 0; k < ix.cap; k++)
        ix.slot[k] = SIZE_MAX;
    for (size_t l = 0; l < n; l++) {
        size_t k = (size_t)fnv(sp_profile_layer(profile, l)->name) & (ix.cap - 1);
        while (ix.slot[k] != SIZE_MAX)
            k = (k + 1) & (ix.cap - 1);
        ix.slot[k] = l;
    }
    unsigned removed = 0, added = 0, moved = 0;
    size_t expect = 0;
    for (size_t i = 0; i < plan->n_layers; i++) {
        size_t at = name_find(&ix, profile, plan->layer_names[i]);
        if (at == SIZE_MAX) {
            if (removed++ < 20)
                sp_problem(ctx, "layer '%s' of the plan is not in the profile (removed or renamed)",
                           plan->layer_names[i]);
            continue;
        }
        seen[at] = true;
        if (at < expect && moved++ < 20)
            sp_problem(ctx, "layer '%s' moved: it now comes before a layer that preceded it",
                       plan->layer_names[i]);
        expect = at + 1;
    }
    for (size_t l = 0; l < n; l++)
        if (!seen[l] && added++ < 20)
            sp_problem(ctx, "layer '%s' of the profile is not in the plan (added or renamed)",
                       sp_profile_layer(profile, l)->name);
    if (!removed && !added && !moved) {
        for (size_t s = 0; s < plan->n_stages; s++)
            first_layers[s] =
                name_find(&ix, profile, plan->layer_names[plan->stages[s].first_layer]);
    }
    sp_free(ix.slot);
    sp_free(seen);
    if (removed || added || moved) {
        sp_problem(ctx,
                   "the profile's layers differ from the plan's: %u removed, %u added, %u "
                   "moved",
                   removed, added, moved);
        ctx->status = SP_ERR_SCHEMA;
        return SP_ERR_SCHEMA;
    }
    return SP_OK;
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
        return sp_fail(ctx, SP_ERR_INVALID_ARG, "stages must be in [1, %u], got %u", SP_MAX_STAGES,
                       o.stages);
    if (!sp_objective_name(o.objective) || !sp_solver_name(o.solver) ||
        o.solver == SP_SOLVER_GIVEN || !sp_schedule_name(o.schedule) || !sp_comm_name(o.comm))
        return sp_fail(ctx, SP_ERR_INVALID_ARG, "unknown objective, solver or schedule");
    if (o.chunks == 0)
        o.chunks = 1;
    if (!sp_placement_name(o.placement))
        return sp_fail(ctx, SP_ERR_INVALID_ARG, "unknown placement");
    if (o.placement == SP_PLACEMENT_SEARCH) {
        if (o.solver != SP_SOLVER_ILP)
            return sp_fail(ctx, SP_ERR_INVALID_ARG,
                           "--placement search needs --solver ilp (choosing each stage's device "
                           "is no chain problem for the dynamic program)");
        if (!o.devices && !sp_profile_devices(profile))
            return sp_fail(ctx, SP_ERR_INVALID_ARG,
                           "--placement search needs devices to choose from: --devices FILE, "
                           "or a profile with \"devices\"");
    }
    if (o.chunks > SP_MAX_STAGES || (uint64_t)o.chunks * o.stages > SP_MAX_STAGES)
        return sp_fail(ctx, SP_ERR_INVALID_ARG, "stages x chunks must be at most %u, got %u x %u",
                       SP_MAX_STAGES, o.stages, o.chunks);
    if (o.solver == SP_SOLVER_ILP) {
        if (o.objective == SP_OBJECTIVE_VARIANCE)
            return sp_fail(ctx, SP_ERR_INVALID_ARG,
                           "the ilp solver is linear: variance is quadratic; use --objective "
                           "deviation (the sum of |load - mean|), range or bottleneck");
        if (o.comm == SP_COMM_BLOCKING && o.links)
            return sp_fail(ctx, SP_ERR_UNSUPPORTED,
                           "the ilp solver models overlapped transfers only; --comm blocking "
                           "needs --solver dp");
        if (!(o.time_limit_s > 0) || o.time_limit_s > 1e6)
            return sp_fail(ctx, SP_ERR_INVALID_ARG, "the time limit must be in (0, 1e6] s");
    } else if (o.recompute) {
        return sp_fail(ctx, SP_ERR_INVALID_ARG,
                       "--recompute auto needs --solver ilp (choosing layers to recompute is "
                       "not a chain problem)");
    } else if (o.objective == SP_OBJECTIVE_RANGE || o.objective == SP_OBJECTIVE_DEVIATION) {
        return sp_fail(ctx, SP_ERR_INVALID_ARG, "--objective %s needs --solver ilp",
                       sp_objective_name(o.objective));
    }
    if (o.chunks > 1) {
        if (o.solver != SP_SOLVER_UNIFORM && o.solver != SP_SOLVER_ILP)
            return sp_fail(ctx, SP_ERR_UNSUPPORTED,
                           "--chunks %u with --solver %s: balancing interleaved chunks exactly "
                           "is not a chain problem (each device's load sums %u non-contiguous "
                           "chunks) and no exact dynamic program is known for it. --solver ilp "
                           "balances them exactly (GLPK); --solver uniform --chunks %u makes "
                           "Megatron-LM's equal split",
                           o.chunks, sp_solver_name(o.solver), o.chunks, o.chunks);
        o.schedule = SP_SCHEDULE_INTERLEAVED; /* a chunked plan runs the interleaved schedule */
    } else if (o.schedule == SP_SCHEDULE_INTERLEAVED) {
        return sp_fail(ctx, SP_ERR_INVALID_ARG,
                       "the interleaved schedule needs a plan with chunks (--chunks V, V >= 2)");
    }
    bool automatic = o.micro_batches == SP_MICRO_BATCHES_AUTO;
    if (o.micro_batches == 0)
        o.micro_batches = o.stages * 4;
    if (!automatic && o.chunks > 1 && o.micro_batches % o.stages)
        return sp_fail(ctx, SP_ERR_INVALID_ARG,
                       "the interleaved schedule needs the micro-batch count to be a multiple of "
                       "the pipeline stages: M = %u, P = %u",
                       o.micro_batches, o.stages);
    if (!automatic && o.micro_batches > SP_MAX_MICRO_BATCHES)
        return sp_fail(ctx, SP_ERR_INVALID_ARG, "micro-batches must be in [1, %u], got %u",
                       SP_MAX_MICRO_BATCHES, o.micro_batches);
    if (automatic && !(o.target_efficiency > 0 && o.target_efficiency < 1))
        return sp_fail(ctx, SP_ERR_INVALID_ARG, "the target efficiency must be in (0, 1), got %g",
                       o.target_efficiency);
    if (o.solver != SP_SOLVER_DP && o.solver != SP_SOLVER_ILP &&
        o.objective != SP_OBJECTIVE_BOTTLENECK)
        sp_warn(ctx, "the %s solver has no objective; --objective %s is ignored",
                sp_solver_name(o.solver), sp_objective_name(o.objective));
    struct stage_devices d;
    sp_status st = stage_devices_init(ctx, profile, &o, &d);
    bool blocking = o.links && o.comm == SP_COMM_BLOCKING;
    if (st == SP_OK && (d.speed || blocking) && o.objective == SP_OBJECTIVE_VARIANCE &&
        o.solver == SP_SOLVER_DP)
        st = sp_fail(ctx, SP_ERR_INVALID_ARG,
                     "--objective variance needs devices of equal speed and overlapped "
                     "transfers: otherwise the total time differs between plans, so minimum "
                     "variance is not the minimum sum of squares this solver finds; use "
                     "--objective bottleneck or iteration");
    if (st == SP_OK && o.comm == SP_COMM_BLOCKING && !o.links)
        sp_warn(ctx, "--comm blocking has no effect without --links");
    if (st == SP_OK && o.links && sp_links_count(o.links) < o.stages)
        st = sp_fail(ctx, SP_ERR_INFEASIBLE,
                     "%u stages need %u devices in the links file; it has %zu", o.stages, o.stages,
                     sp_links_count(o.links));
    if (st == SP_OK)
        st = automatic ? plan_auto(ctx, profile, o, &d, out) : plan_once(ctx, profile, &o, &d, out);
    stage_devices_release(&d);
    return st;
}

/* partitioner/solvers/vshape.c: the exact partition for V-shape schedules (zbv, dualpipev).
 *
 * The chain is cut into 2P non-empty contiguous chunks; device d runs chunk d and chunk 2P-1-d,
 * so its load is the sum of two chunks, one on each side of the middle cut m. Write the left
 * cuts 0 = a_0 < a_1 < ... < a_P = m and the right cuts n = b_0 > b_1 > ... > b_P = m: device d
 * holds [a_d, a_{d+1}) and [b_{d+1}, b_d). Choosing the devices from the outside in, a state
 * after d devices is the pair (a_d, b_d), and device d's load from state (a, b) to (a', b') is
 *     (T[a'] - T[a]) + (T[b] - T[b']) = (T[b] - T[a]) - (T[b'] - T[a'])
 * with T the prefix sums of layer ticks.
 *
 * Bottleneck: bisection on an integer threshold L over "is there a partition with every load
 * <= L". The test, level by level: (a', b') is reachable iff some reachable (a, b) with a < a',
 * b > b' has T[b] - T[a] <= L + T[b'] - T[a'], a dominance minimum that a 2D prefix-minimum
 * table answers for all (a', b') in O(n^2); so one test is O(P n^2). Exact: ticks are integers.
 * Then, among the partitions at the bottleneck, the least sum of squared chunk loads (balanced
 * chunks; see chunk_squares below), or under --objective variance the least sum of squared
 * device loads among all: a DP over the same states, O(P x states x moves), with moves
 * pruned by the bottleneck; memory limits are checked per device in the same DP (each device's
 * in-flight states under the schedule, partitioner/model/chunk_memory.h). All of it runs over the
 * chain's positions (blocks of layers between allowed cuts). The DP runs up to
 * SP_VSHAPE_DP_MAX_LAYERS blocks; beyond, without memory limits, the bottleneck's partition is
 * kept without the variance tie-break (said in a warning). tests/oracle/test_vshape.c checks
 * both against brute force. */
#include <math.h>
#include <string.h>

#include "chunk_memory.h"
#include "partition_impl.h"

#define SP_VSHAPE_MAX_LAYERS    2048u /* the bisection's tables: (n+1)^2 entries */
#define SP_VSHAPE_DP_MAX_LAYERS 512u  /* the variance DP's parents: P (n+1)^2 entries */

/* Over the chain's positions: layers joined by forbidden cuts move as one block, so every
 * position is a place to cut. */
struct vshape {
    uint32_t P;
    size_t n, w;                         /* blocks; w = n + 1, the states' row length */
    const int64_t *T;                    /* prefix ticks [n + 1] */
    const struct sp_chunk_memory *cm;    /* NULL: no memory limit */
    const uint64_t *pre_mem, *pre_saved; /* prefix memory_bytes, saved_bytes [n + 1] */
};

static bool inner_room(const struct vshape *v, uint32_t d, size_t a, size_t b) {
    /* after device d (0-based) the inner interval [a, b) needs 2 layers per device left */
    return b >= a && b - a >= 2 * (size_t)(v->P - 1 - d);
}

/* does device d fit with chunks [a, a2) and [b2, b) under the memory limit? */
static bool device_fits(const struct vshape *v, uint32_t d, size_t a, size_t a2, size_t b2,
                        size_t b) {
    const struct sp_chunk_memory *cm = v->cm;
    if (!cm || !cm->cap[d])
        return true;
    sp_u128 resident = (sp_u128)(v->pre_mem[a2] - v->pre_mem[a]) + (v->pre_mem[b] - v->pre_mem[b2]);
    uint64_t s0 = v->pre_saved[a2] - v->pre_saved[a], s1 = v->pre_saved[b] - v->pre_saved[b2];
    for (size_t i = cm->offset[d]; i < cm->offset[d + 1]; i++) {
        sp_u128 need = resident + (sp_u128)cm->held[2 * i] * s0 + (sp_u128)cm->held[2 * i + 1] * s1;
        if (need > cm->cap[d])
            return false;
    }
    return true;
}

/* One bisection test: is there a partition with every device load <= L (no memory limit)?
 * reach[d] gets the states reachable after d devices (bitmaps, (n+1)^2 bits each). */
static bool feasible(const struct vshape *v, int64_t L, uint8_t **reach, int64_t *Q) {
    size_t n = v->n, w = v->w;
    memset(reach[0], 0, (w * w + 7) / 8);
    reach[0][(0 * w + n) / 8] |= (uint8_t)(1u << ((0 * w + n) % 8));
    const int64_t INF = INT64_MAX / 4;
#define BIT(r, a, b) (((r)[((a)*w + (b)) / 8] >> (((a)*w + (b)) % 8)) & 1u)
    for (uint32_t d = 0; d < v->P; d++) {
        const uint8_t *R = reach[d];
        uint8_t *R2 = reach[d + 1];
        memset(R2, 0, (w * w + 7) / 8);
        bool last = d + 1 == v->P, any = false;
        /* Q[x][y] = min over reachable (a, b), a <= x-1, b >= y+1, of T[b] - T[a] */
        for (size_t x = 0; x <= n; x++)
            for (size_t y = n + 1; y-- > 0;) {
                int64_t q = INF;
                if (x > 0) {
                    q = Q[(x - 1) * w + y];
                    if (y < n && BIT(R, x - 1, y + 1)) {
                        int64_t val = v->T[y + 1] - v->T[x - 1];
                        q = val < q ? val : q;
                    }
                }
                if (y < n && Q[x * w + y + 1] < q)
                    q = Q[x * w + y + 1];
                Q[x * w + y] = q;
            }
        for (size_t a2 = 1; a2 < n; a2++) {
            for (size_t b2 = last ? a2 : a2; b2 <= (last ? a2 : n - 1); b2++) {
                if (!inner_room(v, d, a2, b2))
                    continue;
                if (Q[a2 * w + b2] < INF && Q[a2 * w + b2] - (v->T[b2] - v->T[a2]) <= L) {
                    R2[(a2 * w + b2) / 8] |= (uint8_t)(1u << ((a2 * w + b2) % 8));
                    any = true;
                }
            }
        }
        if (!any)
            return false;
    }
    return true;
}

/* the boundaries of a partition found by feasible(L): back from the middle */
static void trace_back(const struct vshape *v, int64_t L, uint8_t *const *reach, size_t *bounds) {
    size_t n = v->n, w = v->w, P = v->P, a2 = 0, b2 = 0;
    for (size_t m = 1; m < n; m++)
        if (BIT(reach[P], m, m)) {
            a2 = b2 = m;
            break;
        }
    bounds[P] = a2;
    for (size_t d = P; d-- > 0;) {
        bool found = false;
        for (size_t a = 0; a < a2 && !found; a++)
            for (size_t b = n; b > b2 && !found; b--)
                if (BIT(reach[d], a, b) && (v->T[a2] - v->T[a]) + (v->T[b] - v->T[b2]) <= L) {
                    bounds[d] = a;
                    bounds[2 * P - d] = b;
                    a2 = a;
                    b2 = b;
                    found = true;
                }
    }
#undef BIT
}

/* Minimum sum of squares with every device load <= L (INT64_MAX: none) and the memory limit:
 * of the chunks' loads (chunk_squares) or of the devices' loads; 1 with bounds set, 0 when
 * nothing fits, -1 out of memory. */
static int min_sumsq(const struct vshape *v, int64_t L, bool chunk_squares, size_t *bounds) {
    size_t n = v->n, w = v->w, cells = w * w, P = v->P;
    double *cur = sp_mallocarray(cells, sizeof *cur), *next = sp_mallocarray(cells, sizeof *next);
    uint32_t *parent = sp_mallocarray(P * cells, sizeof *parent);
    int ok = 0;
    if (!cur || !next || !parent) {
        ok = -1;
        goto out;
    }
    for (size_t i = 0; i < cells; i++)
        cur[i] = (double)INFINITY;
    cur[0 * w + n] = 0;
    for (uint32_t d = 0; d < P; d++) {
        bool last = d + 1 == P;
        for (size_t i = 0; i < cells; i++)
            next[i] = (double)INFINITY;
        for (size_t a = 0; a < n; a++)
            for (size_t b = a; b <= n; b++) {
                double base = cur[a * w + b];
                if (!(base < (double)INFINITY))
                    continue;
                for (size_t a2 = a + 1; a2 < b; a2++) {
                    int64_t left = v->T[a2] - v->T[a];
                    if (left > L)
                        break;
                    size_t lo = last ? a2 : a2, hi = last ? a2 : b - 1;
                    for (size_t b2 = hi + 1; b2-- > lo;) {
                        int64_t load = left + (v->T[b] - v->T[b2]);
                        if (load > L)
                            break;
                        if (!inner_room(v, d, a2, b2) || !device_fits(v, d, a, a2, b2, b))
                            continue;
                        int64_t right = load - left;
                        double val = base + (chunk_squares ? (double)left * (double)left +
                                                                 (double)right * (double)right
                                                           : (double)load * (double)load);
                        if (val < next[a2 * w + b2]) {
                            next[a2 * w + b2] = val;
                            parent[d * cells + a2 * w + b2] = (uint32_t)(a * w + b);
                        }
                    }
                }
            }
        double *t = cur;
        cur = next;
        next = t;
    }
    size_t best = SIZE_MAX;
    for (size_t m = 1; m < n; m++)
        if (cur[m * w + m] < (double)INFINITY && (best == SIZE_MAX || cur[m * w + m] < cur[best]))
            best = m * w + m;
    if (best != SIZE_MAX) {
        ok = 1;
        bounds[P] = best / w;
        size_t s = best;
        for (size_t d = P; d-- > 0;) {
            s = parent[d * cells + s];
            bounds[d] = s / w;
            bounds[2 * P - d] = s % w;
        }
    }
out:
    sp_free(cur);
    sp_free(next);
    sp_free(parent);
    return ok;
}

/* what the V-shape solver cannot partition: too few layers or blocks, tables too large */
static sp_status check_size(sp_ctx *ctx, const struct sp_problem *pb, bool has_cap) {
    const sp_partition_opts *o = pb->o;
    size_t layers = sp_profile_get_layer_count(pb->profile), n = pb->chain->n_pos - 1;
    uint32_t P = o->stages;
    if (layers < 2 * (size_t)P)
        return sp_fail(ctx, SP_ERR_INFEASIBLE,
                       "%s places 2 chunks on each of %u devices: it needs at least %u layers, the "
                       "profile has %zu",
                       sp_schedule_name(o->schedule), P, 2 * P, layers);
    if (n < 2 * (size_t)P)
        return sp_fail(ctx, SP_ERR_INFEASIBLE,
                       "no V-shape partition into %u non-empty chunks respects the profile's "
                       "forbidden cuts (cut_after: false, or before the loss): its %zu layers "
                       "make %zu blocks",
                       2 * P, layers, n);
    if (n > SP_VSHAPE_MAX_LAYERS)
        return sp_fail(ctx, SP_ERR_LIMIT,
                       "the V-shape solver takes up to %u blocks between allowed cuts (its tables "
                       "grow as n^2); the profile has %zu: merge layers into blocks",
                       SP_VSHAPE_MAX_LAYERS, n);
    if (has_cap && n > SP_VSHAPE_DP_MAX_LAYERS)
        return sp_fail(ctx, SP_ERR_LIMIT,
                       "V-shape partitions under a memory limit take up to %u blocks between "
                       "allowed cuts; the profile has %zu",
                       SP_VSHAPE_DP_MAX_LAYERS, n);
    return SP_OK;
}

/* the least bottleneck without memory limits: bisection over feasible(L); SP_ERR_INFEASIBLE when
 * the forbidden cuts leave no partition */
static sp_status least_bottleneck(sp_ctx *ctx, const struct vshape *v, uint8_t **reach, int64_t *Q,
                                  int64_t *out) {
    int64_t lo = -1, hi = v->T[v->n]; /* lo infeasible (loads >= 0 and n >= 2P), hi feasible? */
    if (!feasible(v, hi, reach, Q))
        return sp_fail(ctx, SP_ERR_INFEASIBLE,
                       "no V-shape partition into %u non-empty chunks respects the profile's "
                       "forbidden cuts (cut_after: false, or before the loss)",
                       2 * v->P);
    while (hi - lo > 1) {
        int64_t mid = lo + (hi - lo) / 2;
        if (feasible(v, mid, reach, Q))
            hi = mid;
        else
            lo = mid;
    }
    *out = hi;
    return SP_OK;
}

/* the least bottleneck under memory limits: bisection with the DP itself as the test */
static sp_status least_bottleneck_capped(sp_ctx *ctx, const struct sp_partition_opts *o,
                                         const struct vshape *v, bool chunk_squares, size_t *bounds,
                                         int64_t *out) {
    int64_t lo = -1, hi = v->T[v->n];
    int r = min_sumsq(v, hi, chunk_squares, bounds);
    if (r == 0)
        return sp_fail(ctx, SP_ERR_INFEASIBLE,
                       "no V-shape partition into %u chunks fits the memory limit with %u "
                       "micro-batches under %s",
                       2 * v->P, o->micro_batches, sp_schedule_name(o->schedule));
    while (r > 0 && hi - lo > 1) {
        int64_t mid = lo + (hi - lo) / 2;
        int at_mid = min_sumsq(v, mid, chunk_squares, bounds);
        if (at_mid > 0)
            hi = mid;
        else if (at_mid == 0)
            lo = mid;
        else
            r = at_mid;
    }
    if (r < 0)
        return sp_oom(ctx, "partitioning V-shape");
    *out = hi;
    return SP_OK;
}

sp_status sp_vshape_bounds(sp_ctx *ctx, const struct sp_problem *pb, unsigned slack_64ths,
                           size_t *bounds) {
    const sp_partition_opts *o = pb->o;
    const struct sp_stage_devices *d = pb->d;
    const struct sp_chain *c = pb->chain;
    size_t n = c->n_pos - 1;
    uint32_t P = o->stages;
    bool has_cap = o->memory_limit_bytes || d->memory;
    sp_status st = check_size(ctx, pb, has_cap);
    if (st != SP_OK)
        return st;
    struct vshape v = {P, n, n + 1, c->w, NULL, c->mem, c->saved};
    struct sp_chunk_memory cm = {0};
    size_t w = n + 1, cells = w * w;
    uint8_t **reach = sp_calloc((size_t)P + 1, sizeof *reach);
    int64_t *Q = sp_mallocarray(cells, sizeof *Q);
    if (!reach || !Q)
        st = sp_oom(ctx, "partitioning V-shape");
    for (uint32_t i = 0; st == SP_OK && i <= P; i++)
        if (!(reach[i] = sp_malloc((cells + 7) / 8)))
            st = sp_oom(ctx, "partitioning V-shape");
    if (st == SP_OK && has_cap)
        st = sp_chunk_memory_init(ctx, o->schedule, P, 2, o->micro_batches, o->memory_limit_bytes,
                                  d->memory, &cm);
    v.cm = has_cap ? &cm : NULL;
    bounds[0] = 0;
    bounds[2 * P] = n;
    int64_t L = INT64_MAX;
    /* at the least bottleneck, balanced chunks: the device loads are already bounded, and the
     * schedule's warm-up and cool-down run chunk by chunk along the V, so one long chunk beside a
     * short one stalls its neighbours (llama3-8b, P = 4, zbv: 5130 ms with the devices' squares
     * as the tie-break, 4579 ms with the chunks'). --objective variance: the devices' loads. */
    bool chunk_squares = o->objective != SP_OBJECTIVE_VARIANCE, done = false;
    if (st == SP_OK && chunk_squares)
        st = has_cap ? least_bottleneck_capped(ctx, o, &v, chunk_squares, bounds, &L)
                     : least_bottleneck(ctx, &v, reach, Q, &L);
    if (st == SP_OK && chunk_squares)
        L += (int64_t)((double)L * slack_64ths / 64.0);
    if (st == SP_OK && chunk_squares && !has_cap && n > SP_VSHAPE_DP_MAX_LAYERS) {
        feasible(&v, L, reach, Q);
        trace_back(&v, L, reach, bounds);
        sp_warn(ctx,
                "%zu blocks between allowed cuts: the partition reaches the least bottleneck, but "
                "the variance among such partitions is minimized only up to %u blocks",
                n, SP_VSHAPE_DP_MAX_LAYERS);
        done = true;
    }
    int r = st == SP_OK && !done ? min_sumsq(&v, L, chunk_squares, bounds) : 1;
    if (r < 0)
        st = sp_oom(ctx, "partitioning V-shape");
    else if (r == 0)
        st = sp_fail(ctx, SP_ERR_INFEASIBLE,
                     "no V-shape partition into %u chunks fits the limits with %u micro-batches "
                     "under %s",
                     2 * P, o->micro_batches, sp_schedule_name(o->schedule));
    for (uint32_t i = 0; reach && i <= P; i++)
        sp_free(reach[i]);
    sp_free(reach);
    sp_free(Q);
    sp_chunk_memory_release(&cm);
    if (st == SP_OK) /* positions to layer indices */
        for (uint32_t k = 0; k <= 2 * P; k++)
            bounds[k] = c->pos[bounds[k]];
    return st;
}

sp_status sp_solve_vshape(sp_ctx *ctx, const struct sp_problem *pb, struct sp_solution *sol) {
    sol->guarantee = SP_GUARANTEE_EXACT;
    return sp_vshape_bounds(ctx, pb, 0, sol->bounds);
}

/* partitioner/solvers/dp_sum_squares.c: minimum sum of squared stage weights under a cap, exactly p
 * stages.
 *
 * Used for the variance tie-break of the bottleneck objective (cap = optimal bottleneck) and
 * for the variance objective (no time cap): with a constant total, minimum variance is minimum
 * sum of squares. Suffix recurrence over positions, restricted to the stage windows:
 *     F[s](a) = min over b in window(s), b > a, [a,b) admissible:  (w[b]-w[a])^2 + F[s+1](b)
 * Squares of interval sums obey the quadrangle inequality and admissibility is a "staircase"
 * (b <= R_s(a), R_s non-decreasing), so the leftmost optimal b is non-decreasing in a and
 * divide and conquer computes each stage in O(W log W) evaluations. A start a with no finite
 * option splits the search at a itself: rows above it can only use b <= a, rows below b > a.
 * Reconstructing forward from a = 0 with the leftmost argmins gives the lexicographically
 * smallest optimal boundaries. Arithmetic is exact (128-bit integers). */
#include <string.h>

#include "chain.h"

#define SP_I128_INF              ((sp_i128)1 << 125)
#define SP_SUMSQ_MAX_TABLE_BYTES ((size_t)2 << 30) /* 2 GiB of argmin tables at most */

struct stage_dp {
    const struct sp_chain *c;
    uint32_t s;
    int64_t cap;
    size_t a_lo;           /* start positions a_lo.. (window of stage s-1, or {0}) */
    size_t b_lo, b_hi;     /* end positions (window of stage s) */
    const sp_i128 *f_next; /* F[s+1] indexed by b - b_lo */
    sp_i128 *f_cur;        /* F[s] indexed by a - a_lo */
    uint32_t *arg;         /* argmin b - b_lo, indexed by a - a_lo */
};

/* Rows a in [a1, a2], candidate ends b in [b1, b2] (positions). */
static void solve_rows(struct stage_dp *d, size_t a1, size_t a2, size_t b1, size_t b2) {
    while (a1 <= a2) {
        size_t a = a1 + (a2 - a1) / 2;
        sp_i128 best = SP_I128_INF;
        size_t best_b = 0;
        size_t start = b1 > a + 1 ? b1 : a + 1;
        for (size_t b = start; b <= b2; b++) {
            if (!sp_chain_admissible(d->c, d->s, a, b, d->cap))
                break; /* admissibility is a prefix in b */
            sp_i128 fn = d->f_next[b - d->b_lo];
            if (fn >= SP_I128_INF)
                continue;
            sp_i128 t = (sp_i128)sp_chain_time(d->c, d->s, a, b);
            sp_i128 v = t * t + fn;
            if (v < best) {
                best = v;
                best_b = b;
            }
        }
        size_t split; /* rows above use b <= split, rows below b >= split */
        if (best < SP_I128_INF) {
            d->f_cur[a - d->a_lo] = best;
            d->arg[a - d->a_lo] = (uint32_t)(best_b - d->b_lo);
            split = best_b;
        } else {
            d->f_cur[a - d->a_lo] = SP_I128_INF;
            d->arg[a - d->a_lo] = 0;
            split = a < b1 ? b1 : (a > b2 ? b2 : a);
        }
        /* recurse on the smaller half, loop on the larger (bounded stack depth) */
        if (a - a1 < a2 - a) {
            if (a > a1)
                solve_rows(d, a1, a - 1, b1, split);
            a1 = a + 1;
            b1 = split;
        } else {
            if (a < a2)
                solve_rows(d, a + 1, a2, split, b2);
            if (a == a1)
                break;
            a2 = a - 1;
            b2 = split;
        }
    }
}

/* With device speeds each stage's time is rounded separately, which can break the quadrangle
 * inequality by a tick, and a stage's chosen recomputation is no function of its sum; scan every
 * candidate instead (windows at the optimum are small). */
static void scan_rows(struct stage_dp *d, size_t a1, size_t a2, size_t b1, size_t b2) {
    for (size_t a = a1; a <= a2; a++) {
        sp_i128 best = SP_I128_INF;
        size_t best_b = 0;
        for (size_t b = b1 > a + 1 ? b1 : a + 1; b <= b2; b++) {
            if (!sp_chain_admissible(d->c, d->s, a, b, d->cap))
                break;
            sp_i128 fn = d->f_next[b - d->b_lo];
            if (fn >= SP_I128_INF)
                continue;
            sp_i128 t = (sp_i128)sp_chain_time(d->c, d->s, a, b);
            if (t * t + fn < best) {
                best = t * t + fn;
                best_b = b;
            }
        }
        d->f_cur[a - d->a_lo] = best;
        d->arg[a - d->a_lo] = best < SP_I128_INF ? (uint32_t)(best_b - d->b_lo) : 0;
    }
}

sp_status sp_chain_min_sum_squares(sp_ctx *ctx, const struct sp_chain *c, int64_t cap,
                                   size_t *bounds_out) {
    uint32_t p = c->p;
    size_t last = c->n_pos - 1;
    size_t *lo = sp_mallocarray(p, sizeof *lo), *hi = sp_mallocarray(p, sizeof *hi);
    size_t *arg_off = sp_mallocarray(p, sizeof *arg_off);
    sp_i128 *f_next = NULL, *f_cur = NULL;
    uint32_t *args = NULL;
    sp_status st = SP_OK;
    if (!lo || !hi || !arg_off) {
        st = sp_oom(ctx, "balancing stages");
        goto out;
    }
    if (!sp_chain_windows(c, cap, lo, hi)) {
        st = SP_ERR_INFEASIBLE;
        goto out;
    }
    /* start window of stage s: {0} for s = 0, else the end window of stage s-1 */
    size_t total_rows = 0, maxw = 1;
    for (uint32_t s = 0; s < p; s++) {
        size_t rows = s == 0 ? 1 : hi[s - 1] - lo[s - 1] + 1;
        arg_off[s] = total_rows;
        total_rows += rows;
        if (rows > maxw)
            maxw = rows;
        if (hi[s] - lo[s] + 1 > maxw)
            maxw = hi[s] - lo[s] + 1;
    }
    if (total_rows > SP_SUMSQ_MAX_TABLE_BYTES / sizeof(uint32_t)) {
        st = sp_fail(ctx, SP_ERR_LIMIT,
                     "balancing needs %zu MiB of tables, more than the limit of %zu MiB; use "
                     "fewer layers or stages",
                     total_rows * sizeof(uint32_t) >> 20, SP_SUMSQ_MAX_TABLE_BYTES >> 20);
        goto out;
    }
    args = sp_mallocarray(total_rows, sizeof *args);
    f_next = sp_mallocarray(maxw, sizeof *f_next);
    f_cur = sp_mallocarray(maxw, sizeof *f_cur);
    if (!args || !f_next || !f_cur) {
        st = sp_oom(ctx, "balancing stages");
        goto out;
    }
    f_next[0] = 0; /* F[p] at the end position */
    for (uint32_t s = p; s-- > 0;) {
        struct stage_dp d = {c, s, cap, 0, lo[s], hi[s], f_next, f_cur, args + arg_off[s]};
        size_t a_hi = 0;
        if (s > 0) {
            d.a_lo = lo[s - 1];
            a_hi = hi[s - 1];
        }
        if (c->speed || c->cover)
            scan_rows(&d, d.a_lo, a_hi, lo[s], hi[s]);
        else
            solve_rows(&d, d.a_lo, a_hi, lo[s], hi[s]);
        sp_i128 *t = f_next;
        f_next = f_cur;
        f_cur = t;
    }
    if (f_next[0] >= SP_I128_INF) {
        st = SP_ERR_INFEASIBLE;
        goto out;
    }
    size_t a = 0;
    bounds_out[0] = 0;
    for (uint32_t s = 0; s < p; s++) {
        size_t a_lo = s == 0 ? 0 : lo[s - 1];
        size_t b = lo[s] + args[arg_off[s] + (a - a_lo)];
        bounds_out[s + 1] = b;
        a = b;
    }
    if (a != last)
        st = sp_fail(ctx, SP_ERR_INTERNAL, "balancing did not reach the last layer");
out:
    sp_free(lo);
    sp_free(hi);
    sp_free(arg_off);
    sp_free(args);
    sp_free(f_next);
    sp_free(f_cur);
    return st;
}

sp_status sp_chain_best_bounds(sp_ctx *ctx, const struct sp_chain *c, size_t *bounds_out,
                               int64_t *cap_out) {
    int64_t cap = 0;
    sp_status st = sp_chain_min_bottleneck(ctx, c, &cap);
    if (st == SP_OK)
        st = sp_chain_min_sum_squares(ctx, c, cap, bounds_out);
    if (st == SP_OK && cap_out)
        *cap_out = cap;
    return st;
}

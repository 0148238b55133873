/* partitioner/solvers/dp_general.c: the exact engine for models where a stage's time is not
 * monotone in where it ends: with blocking transfers, a stage pays for the link at each of its two
 * cuts, and a later cut after a smaller activation can make the stage cheaper. The greedy probe and
 * its windows then no longer apply; reachability does:
 *
 *   R[s][b]   [0, b) can be covered by stages 0..s, each admissible under the cap T
 *   Rb[s][a]  [a, n) can be covered by stages s..p-1
 *
 * For equal speeds a stage's condition separates into a part of its start and a part of its
 * end: (w[b] - w[a]) + in(a) + out(b) <= T  <=>  in(a) - w[a] <= T - out(b) - w[b], and the
 * memory cap bounds a from below by a non-decreasing function of b, so a sliding-window
 * minimum (monotone deque) decides each b in O(1) amortized: O(n p) per cap. With device
 * speeds the rounding of each stage's time does not separate, so starts are scanned: O(n^2 p).
 * The possible ends of stage s are exactly R[s] intersected with Rb[s+1]; the sum DP (squares
 * for the tie-break, linear for the iteration objective) runs over those sets. */
#include <stdlib.h>
#include <string.h>

#include "chain.h"

#define SP_GENERAL_MAX_SCAN ((uint64_t)4e9) /* starts x ends x stages scanned with speeds */

struct reach {
    size_t n; /* positions */
    uint32_t p;
    unsigned char *fw; /* fw[s * n + b] */
    unsigned char *bw; /* bw[s * n + a]; row p is the end */
    size_t *dq;        /* deque storage [n] */
};

static void reach_release(struct reach *r) {
    sp_free(r->fw);
    sp_free(r->bw);
    sp_free(r->dq);
}

static sp_status reach_init(sp_ctx *ctx, const struct sp_chain *c, struct reach *r) {
    r->n = c->n_pos;
    r->p = c->p;
    r->fw = sp_calloc((size_t)c->p * c->n_pos, 1);
    r->bw = sp_calloc(((size_t)c->p + 1) * c->n_pos, 1);
    r->dq = sp_mallocarray(c->n_pos, sizeof *r->dq);
    if (!r->fw || !r->bw || !r->dq) {
        reach_release(r);
        return sp_oom(ctx, "partitioning with blocking transfers");
    }
    return SP_OK;
}

/* cost of the start a of stage s that does not depend on the end (equal speeds) */
static int64_t start_key(const struct sp_chain *c, uint32_t s, size_t a) {
    return (s > 0 ? 2 * sp_chain_link_ticks(c, s - 1, a) : 0) - c->w[a];
}
static int64_t end_key(const struct sp_chain *c, uint32_t s, size_t b) {
    return (s + 1 < c->p ? 2 * sp_chain_link_ticks(c, s, b) : 0) + c->w[b];
}

static void forward(const struct sp_chain *c, int64_t cap, struct reach *r) {
    size_t n = r->n, last = n - 1;
    memset(r->fw, 0, (size_t)r->p * n);
    for (uint32_t s = 0; s < r->p; s++) {
        unsigned char *cur = r->fw + (size_t)s * n;
        const unsigned char *prev = s ? r->fw + (size_t)(s - 1) * n : NULL;
        size_t head = 0, tail = 0, lm = 0; /* deque r->dq[head..tail) of starts */
        for (size_t b = 1; b <= last; b++) {
            size_t a_new = b - 1;
            if (!c->speed) {
                if (s == 0 ? a_new == 0 : prev[a_new]) {
                    int64_t k = start_key(c, s, a_new);
                    while (tail > head && start_key(c, s, r->dq[tail - 1]) >= k)
                        tail--;
                    r->dq[tail++] = a_new;
                }
                while (lm < b && !sp_chain_mem_ok(c, s, lm, b))
                    lm++;
                while (head < tail && r->dq[head] < lm)
                    head++;
                cur[b] = head < tail &&
                         (sp_i128)start_key(c, s, r->dq[head]) + end_key(c, s, b) <= (sp_i128)cap;
            } else {
                while (lm < b && !sp_chain_mem_ok(c, s, lm, b))
                    lm++;
                for (size_t a = lm; a < b && !cur[b]; a++) {
                    if (s == 0 && a > 0)
                        break; /* stage 0 starts at 0 */
                    if ((s == 0 || prev[a]) && sp_chain_time(c, s, a, b) <= cap)
                        cur[b] = 1;
                }
            }
        }
    }
}

static void backward(const struct sp_chain *c, int64_t cap, struct reach *r) {
    size_t n = r->n, last = n - 1;
    memset(r->bw, 0, ((size_t)r->p + 1) * n);
    r->bw[(size_t)r->p * n + last] = 1;
    for (uint32_t s = r->p; s-- > 0;) {
        unsigned char *cur = r->bw + (size_t)s * n;
        const unsigned char *next = r->bw + (size_t)(s + 1) * n;
        size_t head = 0, tail = 0, rm = last; /* ends in the deque, entered in decreasing order */
        for (size_t a = last; a-- > 0;) {
            size_t b_new = a + 1;
            while (rm > a && !sp_chain_mem_ok(c, s, a, rm))
                rm--;
            if (!c->speed) {
                if (next[b_new]) {
                    int64_t k = end_key(c, s, b_new);
                    while (tail > head && end_key(c, s, r->dq[tail - 1]) >= k)
                        tail--;
                    r->dq[tail++] = b_new;
                }
                while (head < tail && r->dq[head] > rm)
                    head++;
                cur[a] = head < tail &&
                         (sp_i128)end_key(c, s, r->dq[head]) + start_key(c, s, a) <= (sp_i128)cap;
            } else {
                for (size_t b = a + 1; b <= rm && !cur[a]; b++)
                    if (next[b] && sp_chain_time(c, s, a, b) <= cap)
                        cur[a] = 1;
            }
        }
    }
}

static bool too_big_for_scan(const struct sp_chain *c) {
    return c->speed && (uint64_t)c->n_pos * c->n_pos * c->p / 2 > SP_GENERAL_MAX_SCAN;
}

static sp_status limit_error(sp_ctx *ctx, const struct sp_chain *c) {
    return sp_fail(ctx, SP_ERR_LIMIT,
                   "blocking transfers with device speeds scan every stage start: %zu cut "
                   "positions in %u stages is beyond the limit; use equal speeds or the "
                   "overlapped transfer model",
                   c->n_pos, c->p);
}

sp_status sp_general_min_bottleneck(sp_ctx *ctx, const struct sp_chain *c, int64_t *out_cap) {
    if (too_big_for_scan(c))
        return limit_error(ctx, c);
    struct reach r;
    sp_status st = reach_init(ctx, c, &r);
    if (st != SP_OK)
        return st;
    size_t last = c->n_pos - 1;
    /* upper end: every stage over the whole chain with its most expensive cuts fits */
    int64_t hi = 0, max_link = 0;
    for (uint32_t s = 0; s + 1 < c->p; s++)
        for (size_t k = 1; k < last; k++) {
            int64_t t = sp_chain_link_ticks(c, s, k);
            max_link = t > max_link ? t : max_link;
        }
    /* Transfers only add time, so the compute-only optimum (the monotone engine, microseconds)
     * is a lower bound, and that plan with its transfers added an upper bound: every stage pays
     * at most two cuts, forward and back. */
    struct sp_chain compute_only = *c;
    compute_only.blocking = false;
    int64_t lo = 0;
    st = sp_chain_min_bottleneck(ctx, &compute_only, &lo);
    if (st == SP_ERR_INFEASIBLE) {
        reach_release(&r);
        return st;
    }
    if (st != SP_OK)
        lo = 0;
    for (uint32_t s = 0; s < c->p; s++) {
        int64_t t = sp_chain_compute(c, s, 0, last);
        hi = t > hi ? t : hi;
    }
    hi = (st == SP_OK ? lo : hi) + 4 * max_link;
    st = SP_OK;
    forward(c, hi, &r);
    if (!r.fw[(size_t)(c->p - 1) * r.n + last]) {
        reach_release(&r);
        return SP_ERR_INFEASIBLE;
    }
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        forward(c, mid, &r);
        if (r.fw[(size_t)(c->p - 1) * r.n + last])
            hi = mid;
        else
            lo = mid + 1;
    }
    reach_release(&r);
    *out_cap = lo;
    return SP_OK;
}

#define SUM_INF ((sp_i128)1 << 125)

sp_status sp_general_min_sum(sp_ctx *ctx, const struct sp_chain *c, int64_t cap,
                             enum sp_sum_kind kind, size_t *bounds_out, sp_i128 *out_sum) {
    if (too_big_for_scan(c))
        return limit_error(ctx, c);
    struct reach r;
    sp_status st = reach_init(ctx, c, &r);
    if (st != SP_OK)
        return st;
    size_t n = r.n, last = n - 1;
    uint32_t p = c->p;
    forward(c, cap, &r);
    backward(c, cap, &r);
    /* ends[s]: the possible ends of stage s, increasing; starts of stage s = ends[s-1] or {0} */
    size_t *list = sp_mallocarray((size_t)p * n, sizeof *list),
           *count = sp_calloc(p, sizeof *count);
    sp_i128 *f_next = sp_mallocarray(n, sizeof *f_next), *f_cur = sp_mallocarray(n, sizeof *f_cur);
    uint32_t *arg = sp_mallocarray((size_t)p * n, sizeof *arg);
    if (!list || !count || !f_next || !f_cur || !arg) {
        st = sp_oom(ctx, "partitioning with blocking transfers");
        goto out;
    }
    for (uint32_t s = 0; s < p; s++)
        for (size_t b = 1; b <= last; b++)
            if (r.fw[(size_t)s * n + b] && r.bw[(size_t)(s + 1) * n + b] &&
                (s + 1 < p || b == last))
                list[(size_t)s * n + count[s]++] = b;
    if (!count[p - 1]) {
        st = SP_ERR_INFEASIBLE;
        goto out;
    }
    /* f_next over ends of stage s (index into its list); stage p-1 ends at `last` only */
    f_next[0] = 0;
    for (uint32_t s = p; s-- > 0;) {
        const size_t *ends = list + (size_t)s * n;
        size_t n_ends = count[s];
        size_t zero = 0;
        const size_t *starts = s ? list + (size_t)(s - 1) * n : &zero;
        size_t n_starts = s ? count[s - 1] : 1;
        for (size_t i = 0; i < n_starts; i++) {
            size_t a = starts[i];
            sp_i128 best = SUM_INF;
            uint32_t best_j = 0;
            for (size_t j = 0; j < n_ends; j++) {
                size_t b = ends[j];
                if (b <= a || f_next[j] >= SUM_INF || !sp_chain_admissible(c, s, a, b, cap))
                    continue;
                sp_i128 t = sp_chain_time(c, s, a, b);
                sp_i128 v = (kind == SP_SUM_SQUARES ? t * t : t) + f_next[j];
                if (v < best) {
                    best = v;
                    best_j = (uint32_t)j;
                }
            }
            f_cur[i] = best;
            arg[(size_t)s * n + i] = best_j;
        }
        sp_i128 *t = f_next;
        f_next = f_cur;
        f_cur = t;
    }
    if (f_next[0] >= SUM_INF) {
        st = SP_ERR_INFEASIBLE;
        goto out;
    }
    if (out_sum)
        *out_sum = f_next[0];
    size_t i = 0;
    bounds_out[0] = 0;
    for (uint32_t s = 0; s < p; s++) {
        size_t j = arg[(size_t)s * n + i];
        bounds_out[s + 1] = list[(size_t)s * n + j];
        i = j;
    }
out:
    sp_free(list);
    sp_free(count);
    sp_free(f_next);
    sp_free(f_cur);
    sp_free(arg);
    reach_release(&r);
    return st;
}

static int cmp_i64(const void *x, const void *y) {
    int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
    return (a > b) - (a < b);
}

sp_status sp_general_stage_times(sp_ctx *ctx, const struct sp_chain *c, int64_t lo, int64_t hi,
                                 int64_t **out, size_t *n_out) {
    *out = NULL;
    *n_out = 0;
    if (too_big_for_scan(c))
        return limit_error(ctx, c);
    struct reach r;
    sp_status st = reach_init(ctx, c, &r);
    if (st != SP_OK)
        return st;
    forward(c, hi, &r);
    backward(c, hi, &r);
    size_t n = r.n, last = n - 1, cap = 1024, len = 0;
    int64_t *vals = sp_mallocarray(cap, sizeof *vals);
    if (!vals) {
        reach_release(&r);
        return sp_oom(ctx, "collecting stage times");
    }
    for (uint32_t s = 0; s < c->p && st == SP_OK; s++) {
        for (size_t a = 0; a < last && st == SP_OK; a++) {
            bool start_ok =
                s == 0 ? a == 0 : r.fw[(size_t)(s - 1) * n + a] && r.bw[(size_t)s * n + a];
            if (!start_ok)
                continue;
            for (size_t b = a + 1; b <= last; b++) {
                if (!r.bw[(size_t)(s + 1) * n + b] || (s + 1 == c->p && b != last))
                    continue;
                if (!sp_chain_mem_ok(c, s, a, b))
                    break;
                int64_t t = sp_chain_time(c, s, a, b);
                if (t <= lo || t > hi)
                    continue;
                if (len == cap) {
                    if (cap >= SP_GENERAL_MAX_TIMES) {
                        st = sp_fail(ctx, SP_ERR_LIMIT,
                                     "the iteration objective would try more than %u candidate "
                                     "bottlenecks; use more micro-batches, fewer layers or the "
                                     "bottleneck objective",
                                     (unsigned)SP_GENERAL_MAX_TIMES);
                        break;
                    }
                    int64_t *nv = sp_realloc(vals, 2 * cap * sizeof *vals);
                    if (!nv) {
                        st = sp_oom(ctx, "collecting stage times");
                        break;
                    }
                    vals = nv;
                    cap *= 2;
                }
                vals[len++] = t;
            }
        }
    }
    reach_release(&r);
    if (st != SP_OK) {
        sp_free(vals);
        return st;
    }
    qsort(vals, len, sizeof *vals, cmp_i64);
    size_t u = 0;
    for (size_t i = 0; i < len; i++)
        if (!u || vals[i] != vals[u - 1])
            vals[u++] = vals[i];
    *out = vals;
    *n_out = u;
    return SP_OK;
}

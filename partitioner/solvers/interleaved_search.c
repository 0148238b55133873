/* partitioner/solvers/interleaved_search.c: the exact search over loop-placed chunks
 * (partitioner/solvers/interleaved_search.h; why it is exact: interleaved.c). */
#include <stdlib.h>
#include <string.h>

#include "interleaved_search.h"

#define IL_MAX_ROUND_TUPLES ((size_t)1 << 22)
#define IL_CLOCK_EVERY      4096u

/* does device d fit with chunks [t_r, e_r)? */
bool sp_il_device_fits(const struct sp_il *s, uint32_t d, const uint32_t *t, const uint32_t *e) {
    const struct sp_chunk_memory *cm = s->cm;
    if (!cm || !cm->cap[d])
        return true;
    const struct sp_chain *c = s->c;
    sp_u128 resident = 0;
    for (uint32_t r = 0; r < s->V; r++)
        resident += c->mem[e[r]] - c->mem[t[r]];
    for (size_t i = cm->offset[d]; i < cm->offset[d + 1]; i++) {
        sp_u128 need = resident;
        for (uint32_t r = 0; r < s->V; r++)
            need += (sp_u128)cm->held[i * s->V + r] * (c->saved[e[r]] - c->saved[t[r]]);
        if (need > cm->cap[d])
            return false;
    }
    return true;
}

static sp_i128 search(struct sp_il *s, uint32_t d, const uint32_t *t, int64_t *least_max);

/* One state's successors, built round by round (r), with the device's load and work so far. */
struct step {
    uint32_t d;
    const uint32_t *t;
    bool last;
    int64_t need;       /* the least work this device must take */
    int64_t *more_work; /* [V]: the most work rounds r+1.. can still add */
    int64_t *min_load;  /* [V]: the least load rounds r+1.. add (one block each) */
    sp_i128 best;       /* the goal's value */
    int64_t best_max;   /* the least largest load of any successor's plan; -1: none yet */
    bool done;
};

/* smallest e in [lo, hi] with w[e] >= target (hi + 1 when none) */
static size_t first_reaching(const int64_t *w, size_t lo, size_t hi, int64_t target) {
    while (lo <= hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (w[mid] >= target) {
            if (mid == lo)
                return lo;
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    return lo;
}

/* one past the largest e in [lo, hi] with chunk (d, r) over [a, e) at most cap ticks (lo when
 * none): one past, so that an empty chunk (e = a = 0) needs no index below zero */
static size_t fitting_end(const struct sp_il *s, uint32_t d, uint32_t r, size_t a, size_t lo,
                          size_t hi, int64_t cap) {
    if (lo > hi || sp_il_chunk_ticks(s, d, r, a, lo) > cap)
        return lo;
    while (lo < hi) {
        size_t mid = lo + (hi - lo + 1) / 2;
        if (sp_il_chunk_ticks(s, d, r, a, mid) <= cap)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo + 1;
}

/* whether the time limit has passed, read every IL_CLOCK_EVERY chunk ends tried: one state can
 * try very many (every round's chunk end, nested, with many chunks per device) */
static bool out_of_time(struct sp_il *s, struct step *x) {
    if (++s->steps % IL_CLOCK_EVERY == 0 && sp_now_ms() > s->deadline_ms)
        s->stopped = true;
    x->done |= s->stopped;
    return s->stopped;
}

/* what one chunk may take: what the device has left, and no more than the chunk cap */
static int64_t chunk_room(const struct sp_il *s, int64_t device_room) {
    return device_room < s->chunk_cap ? device_room : s->chunk_cap;
}

/* the sum of squared chunk times of device d's chunks [t_r, e_r) */
static sp_i128 chunk_squares(const struct sp_il *s, uint32_t d, const uint32_t *t,
                             const uint32_t *e) {
    sp_i128 sum = 0;
    for (uint32_t r = 0; r < s->V; r++) {
        int64_t c = sp_il_chunk_ticks(s, d, r, t[r], e[r]);
        sum += (sp_i128)c * c;
    }
    return sum;
}

static void finish(struct sp_il *s, struct step *x, int64_t load) {
    uint32_t d = x->d, V = s->V;
    const uint32_t *e = s->e + (size_t)d * V;
    if (!sp_il_device_fits(s, d, x->t, e))
        return;
    int64_t rest_max = 0;
    sp_i128 rest = d + 1 == s->P ? 0 : search(s, d + 1, e, &rest_max);
    if (s->stopped) {
        x->done = true;
        return;
    }
    if (rest == SP_IL_FAIL)
        return;
    int64_t mx = load > rest_max ? load : rest_max;
    x->best_max = x->best_max < 0 || mx < x->best_max ? mx : x->best_max;
    sp_i128 v = s->goal == SP_IL_FEASIBLE ? 0
                : s->goal == SP_IL_BEST   ? chunk_squares(s, d, x->t, e) + rest
                                          : (sp_i128)load + rest;
    if (x->best == SP_IL_FAIL || v < x->best) {
        x->best = v;
        memcpy(s->best_e + (size_t)d * V, e, V * sizeof *e);
    }
    if (s->goal == SP_IL_FEASIBLE)
        x->done = true;
}

/* where round r's chunk of this device may end: [lo, hi] before the load and work bounds */
static void end_range(const struct sp_il *s, const struct step *x, uint32_t r, size_t *lo,
                      size_t *hi) {
    *hi = x->last ? s->b[r + 1] : s->b[r + 1] - (s->P - 1 - x->d) * s->min_chunk;
    *lo = x->last ? *hi : x->t[r] + s->min_chunk;
}

/* The last two rounds together: as round V-2's chunk shrinks, the last round's chunk may end
 * further on both sides (more load left, more work needed), so both ends of its range move one
 * way: two pointers instead of a search per chunk. */
static void expand_last_two(struct sp_il *s, struct step *x, int64_t load, int64_t work) {
    const struct sp_chain *c = s->c;
    uint32_t V = s->V, d = x->d, r = V - 2, q = V - 1;
    uint32_t *e = s->e + (size_t)d * V;
    size_t a = x->t[r], aq = x->t[q], lo, hi, lo_q, hi_q;
    end_range(s, x, r, &lo, &hi);
    end_range(s, x, q, &lo_q, &hi_q);
    size_t past = fitting_end(s, d, r, a, lo, hi, chunk_room(s, s->T - load - x->min_load[r]));
    size_t low = first_reaching(c->w, lo, past - 1 + (past == lo), /* (none when past == lo) */
                                x->need - work - x->more_work[r] + c->w[a]);
    bool started = false;
    size_t top = 0, bot = 0; /* the last chunk ends in [bot, top) */
    for (size_t end = past; end-- > low && !x->done;) {
        e[r] = (uint32_t)end;
        int64_t l2 = load + sp_il_chunk_ticks(s, d, r, a, end), w2 = work + (c->w[end] - c->w[a]);
        int64_t cap = chunk_room(s, s->T - l2), target = x->need - w2 + c->w[aq];
        if (!started) {
            top = fitting_end(s, d, q, aq, lo_q, hi_q, cap);
            bot = first_reaching(c->w, lo_q, hi_q, target);
            started = true;
        } else {
            while (top <= hi_q && sp_il_chunk_ticks(s, d, q, aq, top) <= cap)
                top++;
            while (bot <= hi_q && c->w[bot] < target)
                bot++;
        }
        for (size_t eq = top; eq-- > bot && !x->done && !out_of_time(s, x);) {
            e[q] = (uint32_t)eq;
            finish(s, x, l2 + sp_il_chunk_ticks(s, d, q, aq, eq));
        }
    }
}

static void expand(struct sp_il *s, struct step *x, uint32_t r, int64_t load, int64_t work) {
    if (r + 2 == s->V) {
        expand_last_two(s, x, load, work);
        return;
    }
    const struct sp_chain *c = s->c;
    uint32_t d = x->d;
    uint32_t *e = s->e + (size_t)d * s->V;
    size_t a = x->t[r], lo, hi;
    end_range(s, x, r, &lo, &hi);
    /* the chunk must leave room for the later rounds' least load, and with their most work
     * reach the device's least work */
    size_t past = fitting_end(s, d, r, a, lo, hi, chunk_room(s, s->T - load - x->min_load[r]));
    size_t low = first_reaching(c->w, lo, past - 1 + (past == lo),
                                x->need - work - x->more_work[r] + c->w[a]);
    for (size_t end = past; end-- > low && !x->done && !out_of_time(s, x);) {
        e[r] = (uint32_t)end;
        expand(s, x, r + 1, load + sp_il_chunk_ticks(s, d, r, a, end),
               work + (c->w[end] - c->w[a]));
    }
}

/* the goal's best of devices d .. P-1 from tuple t (SP_IL_FAIL: none under the cap), and the
 * least largest load of their plans under the cap in *least_max */
static sp_i128 search(struct sp_il *s, uint32_t d, const uint32_t *t, int64_t *least_max) {
    uint32_t V = s->V;
    uint32_t *key = s->key + (size_t)d * (V + 1);
    key[0] = d;
    memcpy(key + 1, t, V * sizeof *t);
    sp_i128 cached;
    if (sp_tuple_memo_get(&s->memo, key, &cached, least_max, NULL))
        return cached;
    if (++s->nodes % IL_CLOCK_EVERY == 0 && sp_now_ms() > s->deadline_ms)
        s->stopped = true;
    if (s->nodes > s->node_limit) /* a probe's budget spent: stopped, not out of time */
        s->stopped = s->over_budget = true;
    if (s->stopped)
        return SP_IL_FAIL;
    const struct sp_chain *c = s->c;
    int64_t rest = 0, more[64], least[64];
    int64_t *more_work = V <= 64 ? more : sp_mallocarray(V, sizeof *more_work);
    int64_t *min_load = V <= 64 ? least : sp_mallocarray(V, sizeof *min_load);
    if (!more_work || !min_load) { /* out of memory: stop as at the time limit */
        if (V > 64) {
            sp_free(more_work);
            sp_free(min_load);
        }
        s->stopped = true;
        return SP_IL_FAIL;
    }
    for (uint32_t r = 0; r < V; r++)
        rest += c->w[s->b[r + 1]] - c->w[t[r]];
    more_work[V - 1] = min_load[V - 1] = 0;
    for (uint32_t r = V - 1; r > 0; r--) {
        size_t hi = d + 1 == s->P ? s->b[r + 1] : s->b[r + 1] - (s->P - 1 - d) * s->min_chunk;
        more_work[r - 1] = more_work[r] + (c->w[hi] - c->w[t[r]]);
        min_load[r - 1] = min_load[r] + sp_il_chunk_ticks(s, d, r, t[r], t[r] + s->min_chunk);
    }
    struct step x = {.d = d,
                     .t = t,
                     .last = d + 1 == s->P,
                     .need = rest - s->work_rest[d + 1],
                     .more_work = more_work,
                     .min_load = min_load,
                     .best = SP_IL_FAIL,
                     .best_max = -1};
    if (rest <= s->work_rest[d])
        expand(s, &x, 0, 0, 0);
    if (V > 64) {
        sp_free(more_work);
        sp_free(min_load);
    }
    if (s->stopped)
        return SP_IL_FAIL;
    key = s->key + (size_t)d * (V + 1); /* (unchanged: deeper states use their own rows) */
    sp_tuple_memo_put(&s->memo, key, x.best, x.best_max,
                      x.best == SP_IL_FAIL ? NULL : s->best_e + (size_t)d * V);
    *least_max = x.best_max;
    return x.best;
}

/* ---- round boundaries ---- */

/* every round tuple with b_r in [lo_r, hi_r] and each round at least `least` blocks */
static void rounds_fill(struct sp_il_rounds *R, uint32_t V, size_t least, size_t n,
                        const uint32_t *lo, const uint32_t *hi, uint32_t *cur, uint32_t r,
                        bool write) {
    if (r == V) {
        if (write)
            memcpy(R->b + R->count * (V + 1), cur, (V + 1) * sizeof *cur);
        R->count++;
        return;
    }
    size_t last = n - (V - r) * least; /* round r starts here at the latest */
    last = last < hi[r] ? last : hi[r];
    size_t first = cur[r - 1] + least;
    first = first > lo[r] ? first : lo[r];
    for (size_t x = first; x <= last && R->count < IL_MAX_ROUND_TUPLES; x++) {
        cur[r] = (uint32_t)x;
        rounds_fill(R, V, least, n, lo, hi, cur, r + 1, write);
    }
}

void sp_il_round_windows(const struct sp_il *s, uint32_t *lo, uint32_t *hi) {
    uint32_t P = s->P, V = s->V;
    for (uint32_t r = 0; r <= V; r++) {
        lo[r] = 0;
        hi[r] = (uint32_t)s->n;
    }
    if (s->chunk_cap >= SP_NO_CAP)
        return;
    /* the furthest the first rP chunks reach, each within the cap: greedily, since a chunk
     * starting further ends no nearer */
    size_t a = 0;
    for (uint32_t k = 0; k < P * V; k++) {
        if (k % P == 0)
            hi[k / P] = (uint32_t)a;
        size_t past = fitting_end(s, k % P, k / P, a, a + 1, s->n, s->chunk_cap);
        a = past > a ? past - 1 : a; /* (no layer fits: the chunk stays empty, a looser bound) */
    }
    /* the nearest the last (V - r) P chunks reach back, each within the cap */
    size_t e = s->n;
    for (uint32_t k = P * V; k-- > 0;) {
        size_t lo_a = 0, hi_a = e; /* the least a with the chunk [a, e) within the cap */
        while (lo_a < hi_a) {
            size_t mid = lo_a + (hi_a - lo_a) / 2;
            if (sp_il_chunk_ticks(s, k % P, k / P, mid, e) <= s->chunk_cap)
                hi_a = mid;
            else
                lo_a = mid + 1;
        }
        e = lo_a;
        if (k % P == 0)
            lo[k / P] = (uint32_t)e;
    }
    lo[0] = hi[0] = 0;
    lo[V] = hi[V] = (uint32_t)s->n;
}

struct ranked {
    uint64_t distance;
    size_t index;
};
static int cmp_ranked(const void *x, const void *y) {
    const struct ranked *a = x, *b = y;
    if (a->distance != b->distance)
        return (a->distance > b->distance) - (a->distance < b->distance);
    return (a->index > b->index) - (a->index < b->index);
}

/* the count of round tuples in the windows, up to the most the search takes */
static size_t rounds_count(uint32_t V, size_t least, size_t n, const uint32_t *lo,
                           const uint32_t *hi, uint32_t *cur) {
    struct sp_il_rounds R = {NULL, 0, false};
    rounds_fill(&R, V, least, n, lo, hi, cur, 1, false);
    return R.count;
}

/* Narrow the windows to within w of the hint, w the widest that leaves fewer tuples than the
 * search takes (the hint's own tuple at w = 0 always fits). */
static void narrow_to_hint(uint32_t V, size_t least, size_t n, uint32_t *lo, uint32_t *hi,
                           const uint32_t *hint, uint32_t *cur) {
    uint32_t *wlo = cur + V + 1, *whi = wlo + V + 1;
    size_t good = 0, bad = n; /* w = good fits, w = bad does not */
    while (bad - good > 1) {
        size_t w = good + (bad - good) / 2;
        for (uint32_t r = 0; r <= V; r++) {
            size_t h = hint[r] < lo[r] ? lo[r] : hint[r] > hi[r] ? hi[r] : hint[r];
            wlo[r] = (uint32_t)(h > lo[r] + w ? h - w : lo[r]);
            whi[r] = (uint32_t)(h + w < hi[r] ? h + w : hi[r]);
        }
        if (rounds_count(V, least, n, wlo, whi, cur) < IL_MAX_ROUND_TUPLES)
            good = w;
        else
            bad = w;
    }
    for (uint32_t r = 0; r <= V; r++) {
        size_t h = hint[r] < lo[r] ? lo[r] : hint[r] > hi[r] ? hi[r] : hint[r];
        lo[r] = (uint32_t)(h > lo[r] + good ? h - good : lo[r]);
        hi[r] = (uint32_t)(h + good < hi[r] ? h + good : hi[r]);
    }
}

/* every tuple of round boundaries in the windows (each round at least `least` blocks), nearest
 * to hint first; when they are too many, those within the widest distance of the hint that
 * leaves few enough (R->partial) */
sp_status sp_il_rounds_init(sp_ctx *ctx, struct sp_il_rounds *R, uint32_t V, size_t least, size_t n,
                            const uint32_t *win_lo, const uint32_t *win_hi, const uint32_t *hint) {
    memset(R, 0, sizeof *R);
    uint32_t *cur = sp_mallocarray(5 * ((size_t)V + 1), sizeof *cur);
    if (!cur)
        return sp_oom(ctx, "enumerating round boundaries");
    uint32_t *lo = cur + 3 * ((size_t)V + 1), *hi = lo + V + 1;
    memcpy(lo, win_lo, ((size_t)V + 1) * sizeof *lo);
    memcpy(hi, win_hi, ((size_t)V + 1) * sizeof *hi);
    cur[0] = 0;
    cur[V] = (uint32_t)n;
    size_t count = rounds_count(V, least, n, lo, hi, cur);
    if (count >= IL_MAX_ROUND_TUPLES) {
        narrow_to_hint(V, least, n, lo, hi, hint, cur);
        count = rounds_count(V, least, n, lo, hi, cur);
        R->partial = true;
    }
    R->b = sp_mallocarray(count * (V + 1), sizeof *R->b);
    struct ranked *order = sp_mallocarray(count, sizeof *order);
    uint32_t *sorted = sp_mallocarray(count * (V + 1), sizeof *sorted);
    if (!R->b || !order || !sorted) {
        sp_free(cur);
        sp_free(order);
        sp_free(sorted);
        sp_free(R->b);
        R->b = NULL;
        return sp_oom(ctx, "enumerating round boundaries");
    }
    R->count = 0;
    rounds_fill(R, V, least, n, lo, hi, cur, 1, true);
    R->count = count;
    sp_free(cur);
    for (size_t i = 0; i < count; i++) {
        const uint32_t *b = R->b + i * (V + 1);
        order[i] = (struct ranked){0, i};
        for (uint32_t r = 1; r < V; r++)
            order[i].distance += b[r] > hint[r] ? b[r] - hint[r] : hint[r] - b[r];
    }
    qsort(order, count, sizeof *order, cmp_ranked);
    for (size_t i = 0; i < count; i++)
        memcpy(sorted + i * (V + 1), R->b + order[i].index * (V + 1), (V + 1) * sizeof *sorted);
    sp_free(R->b);
    sp_free(order);
    R->b = sorted;
    return SP_OK;
}

/* ---- one cap ---- */

/* the most work (speed-1 ticks) device d carries at load <= T: a chunk's ticks are its forward
 * and backward parts each divided by the speed and rounded, so at least work / speed - 1 */
static int64_t device_work_cap(const struct sp_il *s, uint32_t d, int64_t T) {
    if (!s->c->speed)
        return T;
    double w = s->c->speed[d] * ((double)T + s->V) + 1;
    return w >= (double)SP_NO_CAP / 4 ? SP_NO_CAP / 4 : (int64_t)w;
}

void sp_il_set_cap(struct sp_il *s, int64_t T, enum sp_il_goal goal) {
    s->T = T;
    s->goal = goal;
    s->work_rest[s->P] = 0;
    for (uint32_t d = s->P; d-- > 0;) {
        int64_t w = s->work_rest[d + 1] + device_work_cap(s, d, T);
        s->work_rest[d] = w > SP_NO_CAP / 4 ? SP_NO_CAP / 4 : w;
    }
}

/* the chunk bounds [K + 1] (positions) of the plan cached from round tuple b */
static void trace_plan(struct sp_il *s, size_t *bounds) {
    uint32_t P = s->P, V = s->V, *t = s->trace, *e = s->trace + V;
    memcpy(t, s->b, V * sizeof *t);
    for (uint32_t d = 0; d < P; d++) {
        sp_i128 v;
        int64_t mx;
        uint32_t *key = s->key + (size_t)d * (V + 1);
        key[0] = d;
        memcpy(key + 1, t, V * sizeof *t);
        if (!sp_tuple_memo_get(&s->memo, key, &v, NULL, e)) { /* evicted: search it again */
            search(s, d, t, &mx);
            sp_tuple_memo_get(&s->memo, key, &v, NULL, e);
        }
        for (uint32_t r = 0; r < V; r++)
            bounds[(size_t)r * P + d] = t[r];
        memcpy(t, e, V * sizeof *t);
    }
    bounds[(size_t)P * V] = s->n;
}

/* The best plan under cap T for the goal over every round tuple, into bounds; SP_IL_FAIL when none
 * (or when stopped: s->stopped). SP_IL_FEASIBLE stops at the first. SP_IL_BEST lowers the cap to
 * the least largest load of each tuple that beats it (searching that tuple again under its own
 * value), so it ends with the cap at the least largest load, and the plan with the least sum of
 * squared chunk times among those reaching it. */
sp_i128 sp_il_solve_cap(struct sp_il *s, const struct sp_il_rounds *R, int64_t T,
                        enum sp_il_goal goal, size_t *bounds) {
    sp_il_set_cap(s, T, goal);
    sp_i128 best = SP_IL_FAIL;
    size_t best_i = 0;
    for (size_t i = 0; i < R->count && !s->stopped; i++) {
        memcpy(s->b, R->b + i * (s->V + 1), (s->V + 1) * sizeof *s->b);
        sp_tuple_memo_clear(&s->memo);
        int64_t mx = 0;
        sp_i128 v = search(s, 0, s->b, &mx);
        if (goal == SP_IL_BEST && v != SP_IL_FAIL && mx < s->T && !s->stopped) {
            sp_il_set_cap(s, mx, goal); /* every plan so far is beaten: this tuple again */
            sp_tuple_memo_clear(&s->memo);
            best = SP_IL_FAIL;
            v = search(s, 0, s->b, &mx);
        }
        if (s->stopped || v == SP_IL_FAIL || (best != SP_IL_FAIL && v >= best))
            continue;
        best = v;
        best_i = i;
        if (goal == SP_IL_FEASIBLE)
            break;
    }
    if (best == SP_IL_FAIL || s->stopped)
        return SP_IL_FAIL;
    memcpy(s->b, R->b + best_i * (s->V + 1), (s->V + 1) * sizeof *s->b);
    sp_tuple_memo_clear(&s->memo);
    int64_t mx;
    search(s, 0, s->b, &mx);
    if (!s->stopped)
        trace_plan(s, bounds);
    return s->stopped ? SP_IL_FAIL : best;
}

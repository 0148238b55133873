/* partitioner/solvers/placed_search.c: the least bottleneck of --placement search, found exactly
 * without the program (one chunk per device, the bottleneck objective, no recomputation choices).
 *
 * With transfers overlapped a stage's time and memory depend only on its device's speed and
 * memory, so the bottleneck sees the devices through their kinds (speed, memory) alone: which
 * kind each stage takes, at most a kind's device count of stages per kind. Under a cap T, let
 * S[u] be the positions a chain of |u| non-empty admissible stages can end at when it used u[j]
 * devices of kind j. Then S[0] = {0} and
 *     S[u] = union over kinds j with u[j] > 0, over a in S[u - e_j], of (a, R(j, |u| - 1, a)]
 * where R(j, s, a) is the furthest end of stage s from a on a device of kind j (admissibility
 * shrinks monotonically, chain.h, so the ends from a are a prefix). T is feasible exactly when
 * the chain's end lies in S[u] for some u with |u| = P, and bisection over integer ticks gives
 * the least T. The sets are exact (no relaxation), so the least T is the program's optimum.
 *
 * The plan returned reaches it: a kind sequence read back from the sets, its stages rebalanced by
 * the chain's DP for that sequence (the least sum of squares under T), and each kind's stages
 * given to its classes so that consecutive stages share a class where they can (the latency
 * tie-break, which depends on the links, is the program's, starting from this plan). */
#include <string.h>

#include "partition_impl.h"
#include "placement.h"

/* the reach sets' 64-bit words and the reach table's entries, at most */
#define MAX_SET_WORDS     (1u << 23)
#define MAX_REACH_ENTRIES (1u << 24)

struct search {
    uint32_t P, kinds;
    size_t last, words, states;
    uint32_t *kind_of;  /* [C] each class's kind */
    double *speed;      /* [kinds] */
    uint64_t *memory;   /* [kinds] 0: not limited */
    uint32_t *count;    /* [kinds] devices, at most P */
    size_t *step;       /* [kinds] index step of one more device of kind j */
    uint32_t *used;     /* [states] stages of state i */
    struct sp_chain *c; /* [kinds] the chain with every stage on kind j */
    uint32_t **row;     /* [kinds x P] R(j, s, .), shared by the stages of a kind without caps */
    uint64_t **fits;    /* [kinds x P] bit b: R(j, s, b - 1) >= b (block b - 1 fits alone) */
    uint32_t *reach;    /* the rows' storage */
    uint64_t *fit_bits; /* the fits' storage */
    uint64_t *set;      /* [states x words] */
};

static uint32_t digit(const struct search *s, size_t i, uint32_t j) {
    return (uint32_t)(i / s->step[j] % (s->count[j] + 1));
}

static void release(struct search *s) {
    for (uint32_t j = 0; s->c && j < s->kinds; j++)
        sp_chain_release(&s->c[j]);
    sp_free(s->c);
    sp_free(s->kind_of);
    sp_free(s->speed);
    sp_free(s->memory);
    sp_free(s->count);
    sp_free(s->step);
    sp_free(s->used);
    sp_free(s->row);
    sp_free(s->fits);
    sp_free(s->reach);
    sp_free(s->fit_bits);
    sp_free(s->set);
}

/* The kinds of the classes and the state space; *fits false when it is too large to search. */
static sp_status kinds_init(sp_ctx *ctx, const struct sp_placement_classes *pc, uint32_t P,
                            struct search *s, bool *fits) {
    uint32_t C = pc->ilp.classes;
    s->kind_of = sp_mallocarray(C, sizeof *s->kind_of);
    s->speed = sp_mallocarray(C, sizeof *s->speed);
    s->memory = sp_mallocarray(C, sizeof *s->memory);
    s->count = sp_calloc(C, sizeof *s->count);
    s->step = sp_mallocarray(C, sizeof *s->step);
    if (!s->kind_of || !s->speed || !s->memory || !s->count || !s->step)
        return sp_oom(ctx, "placing stages");
    for (uint32_t cls = 0; cls < C; cls++) {
        uint32_t j = 0;
        while (j < s->kinds && !(s->speed[j] == pc->speed[cls] && s->memory[j] == pc->memory[cls]))
            j++;
        if (j == s->kinds) {
            s->speed[j] = pc->speed[cls];
            s->memory[j] = pc->memory[cls];
            s->kinds++;
        }
        s->kind_of[cls] = j;
        s->count[j] += pc->size[cls];
    }
    size_t states = 1;
    *fits = true;
    for (uint32_t j = 0; j < s->kinds; j++) {
        s->count[j] = s->count[j] < P ? s->count[j] : P;
        s->step[j] = states;
        if (states > MAX_SET_WORDS / (s->count[j] + 1))
            *fits = false;
        else
            states *= s->count[j] + 1;
    }
    s->states = states;
    s->words = s->last / 64 + 1;
    if (*fits && states > MAX_SET_WORDS / s->words)
        *fits = false;
    return SP_OK;
}

/* The chain with stage k on a device of kind kind_seq[k]: its speed and memory. */
static sp_status chain_on_kinds(sp_ctx *ctx, const struct sp_problem *pb, const struct search *s,
                                const uint32_t *kind_seq, struct sp_chain *out) {
    double *speed = sp_mallocarray(s->P, sizeof *speed);
    uint64_t *mem = sp_mallocarray(s->P, sizeof *mem);
    sp_status st = speed && mem ? SP_OK : sp_oom(ctx, "placing stages");
    for (uint32_t k = 0; st == SP_OK && k < s->P; k++) {
        speed[k] = s->speed[kind_seq[k]];
        mem[k] = s->memory[kind_seq[k]];
    }
    struct sp_chain_model model = {.weight = SP_WEIGHT_TIME,
                                   .stages = s->P,
                                   .micro_batches = pb->o->micro_batches,
                                   .schedule = pb->o->schedule,
                                   .mem_cap = pb->o->memory_limit_bytes,
                                   .speed = speed,
                                   .device_mem = mem};
    if (st == SP_OK)
        st = sp_chain_restage(ctx, out, pb->chain, &model);
    sp_free(speed);
    sp_free(mem);
    return st;
}

/* One chain per kind (every stage on it), the reach rows, the sets. */
static sp_status tables_init(sp_ctx *ctx, const struct sp_problem *pb, struct search *s,
                             bool *fits) {
    uint32_t P = s->P;
    uint32_t *all = sp_mallocarray(P, sizeof *all);
    s->c = sp_calloc(s->kinds, sizeof *s->c);
    s->row = sp_calloc((size_t)s->kinds * P, sizeof *s->row);
    s->fits = sp_calloc((size_t)s->kinds * P, sizeof *s->fits);
    s->used = sp_mallocarray(s->states, sizeof *s->used);
    sp_status st =
        all && s->c && s->row && s->fits && s->used ? SP_OK : sp_oom(ctx, "placing stages");
    size_t rows = 0;
    for (uint32_t j = 0; st == SP_OK && j < s->kinds; j++) {
        for (uint32_t k = 0; k < P; k++)
            all[k] = j;
        st = chain_on_kinds(ctx, pb, s, all, &s->c[j]);
        rows += s->c[j].any_cap ? P : 1; /* without caps the stage's index does not matter */
    }
    sp_free(all);
    if (st != SP_OK)
        return st;
    if (rows > MAX_REACH_ENTRIES / s->last) {
        *fits = false;
        return SP_OK;
    }
    s->reach = sp_mallocarray(rows * s->last, sizeof *s->reach);
    s->fit_bits = sp_mallocarray(rows * s->words, sizeof *s->fit_bits);
    s->set = sp_mallocarray(s->states * s->words, sizeof *s->set);
    if (!s->reach || !s->fit_bits || !s->set)
        return sp_oom(ctx, "placing stages");
    uint32_t *next = s->reach;
    uint64_t *next_bits = s->fit_bits;
    for (uint32_t j = 0; j < s->kinds; j++)
        for (uint32_t k = 0; k < P; k++) {
            size_t at = (size_t)j * P + k;
            if (k == 0 || s->c[j].any_cap) {
                s->row[at] = next;
                s->fits[at] = next_bits;
                next += s->last;
                next_bits += s->words;
            } else {
                s->row[at] = s->row[at - k];
                s->fits[at] = s->fits[at - k];
            }
        }
    for (size_t i = 0; i < s->states; i++) {
        uint32_t n = 0;
        for (uint32_t j = 0; j < s->kinds; j++)
            n += digit(s, i, j);
        s->used[i] = n;
    }
    return SP_OK;
}

/* R(j, k, a) for every a under cap: two pointers, since R is non-decreasing in a */
static void fill_reach(const struct search *s, int64_t cap) {
    for (uint32_t j = 0; j < s->kinds; j++)
        for (uint32_t k = 0; k < s->P; k++) {
            uint32_t *r = s->row[(size_t)j * s->P + k];
            if (k > 0 && r == s->row[(size_t)j * s->P + k - 1])
                continue;
            size_t b = 1;
            for (size_t a = 0; a < s->last; a++) {
                if (b < a + 1)
                    b = a + 1;
                if (!sp_chain_admissible(&s->c[j], k, a, b, cap)) {
                    r[a] = (uint32_t)a; /* a sub-range of the last stage: b == a + 1 */
                    continue;
                }
                while (b < s->last && sp_chain_admissible(&s->c[j], k, a, b + 1, cap))
                    b++;
                r[a] = (uint32_t)b;
            }
            uint64_t *fits = s->fits[(size_t)j * s->P + k];
            memset(fits, 0, s->words * sizeof *fits);
            for (size_t e = 1; e <= s->last; e++)
                if (r[e - 1] >= e)
                    fits[e / 64] |= (uint64_t)1 << (e % 64);
        }
}

static void set_range(uint64_t *w, size_t lo, size_t hi) { /* bits lo..hi */
    for (size_t x = lo; x <= hi;) {
        if (x % 64 == 0 && hi - x >= 63) {
            w[x / 64] = ~(uint64_t)0;
            x += 64;
        } else {
            w[x / 64] |= (uint64_t)1 << (x % 64);
            x++;
        }
    }
}

static bool has_bit(const uint64_t *w, size_t x) {
    return (w[x / 64] >> (x % 64)) & 1;
}

/* dst |= the ends of one more stage (row r) from every position of src, up to `room`. Within a
 * run of positions of src, b is reached exactly when block b - 1 fits alone (R is non-decreasing:
 * no earlier start reaches further than b - 1 does), so (src << 1) & fits; past a run's last
 * position y, every b up to R(y). */
static void step(const struct search *s, const uint64_t *src, uint64_t *dst, const uint32_t *r,
                 const uint64_t *fits, size_t room) {
    size_t top = room / 64;
    uint64_t carry = 0;
    for (size_t wi = 0; wi <= top; wi++) {
        uint64_t w = src[wi], next = wi + 1 < s->words ? src[wi + 1] : 0;
        dst[wi] |= ((w << 1) | carry) & fits[wi];
        carry = w >> 63;
        for (uint64_t ends = w & ~((w >> 1) | (next << 63)); ends; ends &= ends - 1) {
            size_t y = wi * 64 + (size_t)__builtin_ctzll(ends);
            size_t hi = y < s->last && r[y] < room ? r[y] : room;
            if (y < s->last && hi > y)
                set_range(dst, y + 1, hi);
        }
    }
    if (room % 64 != 63)
        dst[top] &= ((uint64_t)1 << (room % 64 + 1)) - 1;
}

/* The sets under cap; true when the chain's end is reachable with P stages. */
static bool probe(const struct search *s, int64_t cap) {
    fill_reach(s, cap);
    memset(s->set, 0, s->states * s->words * sizeof *s->set);
    s->set[0] = 1;
    bool ok = false;
    for (size_t i = 1; i < s->states; i++) {
        uint32_t k = s->used[i];
        if (k > s->P)
            continue;
        uint64_t *dst = s->set + i * s->words;
        size_t room = s->last - (s->P - k); /* each later stage needs a position */
        for (uint32_t j = 0; j < s->kinds; j++)
            if (digit(s, i, j) > 0)
                step(s, s->set + (i - s->step[j]) * s->words, dst, s->row[(size_t)j * s->P + k - 1],
                     s->fits[(size_t)j * s->P + k - 1], room);
        ok |= k == s->P && has_bit(dst, s->last);
    }
    return ok;
}

/* the last position before b in set w with R(a) >= b, or SIZE_MAX */
static size_t start_before(const uint64_t *w, const uint32_t *r, size_t b) {
    for (size_t a = b; a-- > 0;)
        if (has_bit(w, a))
            return r[a] >= b ? a : SIZE_MAX; /* R is non-decreasing: earlier ones reach less */
    return SIZE_MAX;
}

/* A kind for every stage reaching the end under cap (the sets filled by probe(cap)): the final
 * state using the fastest devices, read back stage by stage, keeping the next stage's kind where
 * it can (fewer changes of kind, fewer changes of node). */
static bool read_kinds(const struct search *s, uint32_t *kind_seq) {
    size_t best = SIZE_MAX;
    double best_speed = -1;
    for (size_t i = 0; i < s->states; i++) {
        if (s->used[i] != s->P || !has_bit(s->set + i * s->words, s->last))
            continue;
        double sum = 0;
        for (uint32_t j = 0; j < s->kinds; j++)
            sum += digit(s, i, j) * s->speed[j];
        if (sum > best_speed) {
            best_speed = sum;
            best = i;
        }
    }
    size_t i = best, b = s->last;
    for (uint32_t k = s->P; best != SIZE_MAX && k-- > 0;) {
        uint32_t prefer = k + 1 < s->P ? kind_seq[k + 1] : 0, n = 0;
        for (; n < s->kinds; n++) {
            uint32_t j = (prefer + n) % s->kinds;
            if (digit(s, i, j) == 0)
                continue;
            const uint64_t *w = s->set + (i - s->step[j]) * s->words;
            size_t a = start_before(w, s->row[(size_t)j * s->P + k], b);
            if (a != SIZE_MAX) {
                kind_seq[k] = j;
                i -= s->step[j];
                b = a;
                break;
            }
        }
        if (n == s->kinds)
            return false;
    }
    return best != SIZE_MAX && b == 0;
}

/* The least bottleneck's cap, by bisection; SP_ERR_INFEASIBLE when no cap admits a plan. */
static sp_status least_cap(const struct search *s, int64_t *cap_out) {
    int64_t hi = 0; /* every stage's time fits: the whole chain on the slowest kind */
    for (uint32_t j = 0; j < s->kinds; j++) {
        int64_t t = sp_chain_compute(&s->c[j], 0, 0, s->last);
        hi = t > hi ? t : hi;
    }
    if (!probe(s, hi))
        return SP_ERR_INFEASIBLE; /* memory, whatever the cap */
    int64_t lo = 0;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (probe(s, mid))
            hi = mid;
        else
            lo = mid + 1;
    }
    *cap_out = hi;
    return SP_OK;
}

/* Each stage's class: the previous stage's when it is of the same kind and has a device left,
 * else the class of the kind with a device left and the cheapest link from the previous one
 * (then the most devices left). */
static void assign_classes(const struct search *s, const struct sp_placement_classes *pc,
                           const uint32_t *kind_seq, const size_t *bounds, uint32_t *left,
                           uint32_t *stage_class) {
    uint32_t C = pc->ilp.classes;
    for (uint32_t cls = 0; cls < C; cls++)
        left[cls] = pc->size[cls];
    for (uint32_t k = 0; k < s->P; k++) {
        uint32_t prev = k > 0 ? stage_class[k - 1] : C, pick = C;
        bool stay = prev < C && s->kind_of[prev] == kind_seq[k] && left[prev] > 0;
        if (stay)
            pick = prev;
        double best = 0;
        for (uint32_t cls = 0; !stay && cls < C; cls++) {
            if (s->kind_of[cls] != kind_seq[k] || left[cls] == 0)
                continue;
            double cost = 0;
            if (prev < C && pc->latency_ms) {
                size_t i = (size_t)prev * C + cls;
                cost = pc->latency_ms[i] + pc->cut_bytes[bounds[k] - 1] * pc->ms_per_byte[i];
            }
            if (pick == C || cost < best || (cost == best && left[cls] > left[pick])) {
                pick = cls;
                best = cost;
            }
        }
        stage_class[k] = pick; /* one is left: the sequence uses at most a kind's devices */
        left[pick]--;
    }
}

/* The kind sequence's stages rebalanced: the chain's DP with each stage on its kind (its
 * bottleneck is cap: no more since the sequence reaches cap, no less since cap is least). */
static sp_status rebalance(sp_ctx *ctx, const struct sp_problem *pb, const struct search *s,
                           const uint32_t *kind_seq, int64_t cap, size_t *bounds) {
    struct sp_chain c;
    sp_status st = chain_on_kinds(ctx, pb, s, kind_seq, &c);
    if (st == SP_OK) {
        int64_t got = 0;
        st = sp_chain_best_bounds(ctx, &c, bounds, &got);
        if (st == SP_OK && got != cap)
            st = sp_fail(ctx, SP_ERR_SOLVER,
                         "placement search: the stages of the least bottleneck (%lld ticks) "
                         "rebalanced to %lld",
                         (long long)cap, (long long)got);
        sp_chain_release(&c);
    }
    return st;
}

sp_status sp_placement_least_bottleneck(sp_ctx *ctx, const struct sp_problem *pb,
                                        const struct sp_placement_classes *pc, size_t *bounds,
                                        uint32_t *stage_class, int64_t *cap_out, bool *decided) {
    *decided = false;
    struct search s = {.P = pb->o->stages, .last = pb->chain->n_pos - 1};
    if (s.last < s.P)
        return SP_OK; /* the program says why */
    bool fits = false;
    sp_status st = kinds_init(ctx, pc, s.P, &s, &fits);
    if (st == SP_OK && fits)
        st = tables_init(ctx, pb, &s, &fits);
    uint32_t *kind_seq = NULL, *left = NULL;
    if (st == SP_OK && fits) {
        kind_seq = sp_mallocarray(s.P, sizeof *kind_seq);
        left = sp_mallocarray(pc->ilp.classes, sizeof *left);
        st = kind_seq && left ? least_cap(&s, cap_out) : sp_oom(ctx, "placing stages");
    }
    if (st == SP_OK && fits) {
        if (!probe(&s, *cap_out) || !read_kinds(&s, kind_seq))
            st = sp_fail(ctx, SP_ERR_SOLVER,
                         "placement search: no plan read back at its least "
                         "bottleneck");
        else
            st = rebalance(ctx, pb, &s, kind_seq, *cap_out, bounds);
    }
    if (st == SP_OK && fits) {
        assign_classes(&s, pc, kind_seq, bounds, left, stage_class);
        *decided = true;
    }
    sp_free(kind_seq);
    sp_free(left);
    release(&s);
    return st;
}

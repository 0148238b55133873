/* partitioner/model/recompute_cover.c: which layers a stage recomputes, exactly.
 *
 * Under a memory cap a stage over positions [a, b) of stage s needs
 *     mem(a, b) + inflight[s] * (saved(a, b) - freed(R)) <= cap
 * where R is the set of layers with recompute_ms it recomputes and freed(R) their saved bytes;
 * each adds its recompute_ms to the stage's time. The cheapest R is a covering knapsack: the
 * least sum of recompute ticks over layers whose saved bytes reach
 *     need = ceil((mem(a, b) + inflight[s] * saved(a, b) - cap) / inflight[s]).
 * It is solved exactly by depth-first branch and bound over the layers in order of ticks per
 * freed byte, pruned by the fractional (LP) bound rounded up (costs are integers) and by
 * dominance (below). A stage holds a few dozen layers, so the search is small; a node limit
 * (2 million per stage evaluated) stops pathological cases, and the chain's user then falls
 * back to the program.
 *
 * The cheapest recomputation never falls when a stage grows (the part of a larger stage's R
 * inside a smaller one still covers the smaller one's need), so the stage time
 * w(a, b) + cheapest(a, b) keeps the chain's monotone admissibility, and every chain solver
 * (bottleneck bisection, windows, the sum of squares) works on it unchanged. */
#include <stdlib.h>
#include <string.h>

#include "chain.h"

#define SP_COVER_NODE_LIMIT 2000000u /* per stage evaluated */

struct sp_recompute_cover {
    size_t layers, n_pos;
    const size_t *pos; /* the chain's positions (layer index of each) */
    int64_t *ticks;    /* [layers] recomputation ticks; -1: cannot recompute */
    uint64_t *kept;    /* [n_pos] prefix sums of the saved bytes no recomputation frees */
    int64_t *rc_sum;   /* [n_pos] prefix sums of every possible recomputation's ticks */
    const sp_profile *profile;
    /* scratch for one evaluation (the chain is used from one thread) */
    struct item {
        int64_t ticks;
        uint64_t freed;
        size_t layer;
    } * items;
    uint64_t *suffix_freed; /* [layers + 1] */
    unsigned char *take, *best_take;
    size_t *skipped; /* [layers] items left out on the current path */
    struct frame {
        size_t i;
        uint64_t need;
        int64_t cost;
        unsigned char stage; /* 0: entering, 1: after taking item i, 2: after leaving it out */
    } * frames;              /* [layers + 1] the search's stack */
    size_t n_skipped;
    uint64_t nodes;
    bool overflow;
};

void sp_recompute_cover_destroy(struct sp_recompute_cover *rc) {
    if (!rc)
        return;
    sp_free(rc->ticks);
    sp_free(rc->kept);
    sp_free(rc->rc_sum);
    sp_free(rc->items);
    sp_free(rc->suffix_freed);
    sp_free(rc->take);
    sp_free(rc->best_take);
    sp_free(rc->skipped);
    sp_free(rc->frames);
    sp_free(rc);
}

sp_status sp_recompute_cover_create(sp_ctx *ctx, const sp_profile *profile,
                                    const struct sp_chain_sums *m,
                                    struct sp_recompute_cover **out) {
    size_t n = sp_profile_get_layer_count(profile);
    struct sp_recompute_cover *rc = sp_calloc(1, sizeof *rc);
    if (rc) {
        rc->layers = n;
        rc->n_pos = m->n_pos;
        rc->pos = m->pos;
        rc->profile = profile;
        rc->ticks = sp_mallocarray(n, sizeof *rc->ticks);
        rc->kept = sp_mallocarray(m->n_pos, sizeof *rc->kept);
        rc->rc_sum = sp_mallocarray(m->n_pos, sizeof *rc->rc_sum);
        rc->items = sp_mallocarray(n, sizeof *rc->items);
        rc->suffix_freed = sp_mallocarray(n + 1, sizeof *rc->suffix_freed);
        rc->take = sp_malloc(n);
        rc->best_take = sp_malloc(n);
        rc->skipped = sp_mallocarray(n, sizeof *rc->skipped);
        rc->frames = sp_mallocarray(n + 1, sizeof *rc->frames);
    }
    if (!rc || !rc->ticks || !rc->kept || !rc->rc_sum || !rc->items || !rc->suffix_freed ||
        !rc->take || !rc->best_take || !rc->skipped || !rc->frames) {
        sp_recompute_cover_destroy(rc);
        return sp_oom(ctx, "choosing layers to recompute");
    }
    uint64_t kept = 0;
    int64_t rc_sum = 0;
    rc->kept[0] = 0;
    rc->rc_sum[0] = 0;
    for (size_t k = 0; k + 1 < m->n_pos; k++) {
        for (size_t l = m->pos[k]; l < m->pos[k + 1]; l++) {
            const sp_layer *L = sp_profile_get_layer(profile, l);
            rc->ticks[l] = L->recompute_ms < 0 ? -1 : sp_ms_to_ticks(L->recompute_ms);
            if (rc->ticks[l] < 0)
                kept += L->saved_bytes;
            else
                rc_sum += rc->ticks[l];
        }
        rc->kept[k + 1] = kept;
        rc->rc_sum[k + 1] = rc_sum;
    }
    *out = rc;
    return SP_OK;
}

const uint64_t *sp_recompute_cover_kept(const struct sp_recompute_cover *rc) {
    return rc->kept;
}

int64_t sp_recompute_cover_all_ticks(const struct sp_recompute_cover *rc) {
    return rc->rc_sum[rc->n_pos - 1];
}

bool sp_recompute_cover_overflowed(const struct sp_recompute_cover *rc) {
    return rc && rc->overflow;
}

/* x before y when x frees more per tick: x.ticks / x.freed < y.ticks / y.freed */
static int by_ratio(const void *px, const void *py) {
    const struct item *x = px, *y = py;
    sp_u128 l = (sp_u128)(uint64_t)x->ticks * y->freed, r = (sp_u128)(uint64_t)y->ticks * x->freed;
    if (l != r)
        return l < r ? -1 : 1;
    return x->layer < y->layer ? -1 : x->layer > y->layer;
}

/* ceil of the fractional cover of `need` by items i.. in ratio order, plus `cost` */
static sp_i128 lp_bound(const struct sp_recompute_cover *rc, size_t i, size_t m, uint64_t need,
                        int64_t cost) {
    sp_i128 lb = cost;
    for (; i < m && need; i++) {
        const struct item *it = &rc->items[i];
        if (it->freed <= need) {
            lb += it->ticks;
            need -= it->freed;
        } else {
            sp_u128 part = (sp_u128)(uint64_t)it->ticks * need;
            lb += (sp_i128)((part + it->freed - 1) / it->freed);
            need = 0;
        }
    }
    return lb;
}

struct search {
    struct sp_recompute_cover *rc;
    size_t m;
    int64_t best; /* least cost found, or the budget + 1 */
    bool found;
};

/* Whether taking item i is dominated: a layer that frees at least as much for at most the time
 * was left out on this path, so taking that one instead is never worse (the lexicographically
 * first optimum never takes a dominated one). Without it, equal layers (a transformer's blocks)
 * make the search try every subset of the same size. */
static bool dominated(const struct sp_recompute_cover *rc, size_t i) {
    const struct item *it = &rc->items[i];
    for (size_t k = 0; k < rc->n_skipped; k++) {
        const struct item *o = &rc->items[rc->skipped[k]];
        if (o->freed >= it->freed && o->ticks <= it->ticks)
            return true;
    }
    return false;
}

/* Depth-first over "take item i, then leave it out", with an explicit stack (a stage may hold
 * thousands of layers; recursion that deep is no library's to risk). */
static void search_run(struct search *s, uint64_t need) {
    struct sp_recompute_cover *rc = s->rc;
    struct frame *fr = rc->frames;
    size_t depth = 1;
    fr[0] = (struct frame){0, need, 0, 0};
    while (depth > 0) {
        struct frame *f = &fr[depth - 1];
        if (f->stage == 0) { /* entering the node */
            if (f->need == 0) {
                if (f->cost < s->best) {
                    s->best = f->cost;
                    s->found = true;
                    memcpy(rc->best_take, rc->take, s->m);
                }
                depth--;
                continue;
            }
            if (f->i == s->m || rc->suffix_freed[f->i] < f->need || rc->overflow ||
                lp_bound(rc, f->i, s->m, f->need, f->cost) >= s->best) {
                depth--;
                continue;
            }
            if (++rc->nodes > SP_COVER_NODE_LIMIT) {
                rc->overflow = true;
                depth--;
                continue;
            }
            f->stage = 1;
            if (!dominated(rc, f->i)) {
                const struct item *it = &rc->items[f->i];
                rc->take[f->i] = 1;
                fr[depth++] =
                    (struct frame){f->i + 1, f->need > it->freed ? f->need - it->freed : 0,
                                   f->cost + it->ticks, 0};
            }
        } else if (f->stage == 1) { /* the take branch is done (or was dominated): leave it out */
            rc->take[f->i] = 0;
            f->stage = 2;
            rc->skipped[rc->n_skipped++] = f->i;
            fr[depth++] = (struct frame){f->i + 1, f->need, f->cost, 0};
        } else {
            rc->n_skipped--;
            depth--;
        }
    }
}

int64_t sp_recompute_cover_ticks(const struct sp_chain *c, uint32_t s, size_t a, size_t b,
                                 int64_t budget, bool *chosen) {
    struct sp_recompute_cover *rc = c->cover;
    uint64_t cap = c->cap[s];
    if (!rc || !cap)
        return 0;
    uint32_t f = c->inflight[s];
    sp_u128 mem = c->mem[b] - c->mem[a], saved = c->saved[b] - c->saved[a];
    mem += sp_chain_stash_bytes(c, s, a, b); /* stashed weights stay whatever recomputes */
    sp_u128 use = mem + (sp_u128)f * saved;
    if (use <= cap)
        return 0;
    if (mem > cap || f == 0)
        return SP_RECOMPUTE_NEVER;
    sp_u128 need128 = (use - cap + f - 1) / f;
    size_t m = 0;
    for (size_t l = rc->pos[a]; l < rc->pos[b]; l++) {
        uint64_t freed = sp_profile_get_layer(rc->profile, l)->saved_bytes;
        if (rc->ticks[l] >= 0 && freed > 0) /* one that frees nothing is never worth it */
            rc->items[m++] = (struct item){rc->ticks[l], freed, l};
    }
    qsort(rc->items, m, sizeof *rc->items, by_ratio);
    rc->suffix_freed[m] = 0;
    for (size_t i = m; i-- > 0;) {
        uint64_t sum = rc->suffix_freed[i + 1] + rc->items[i].freed;
        rc->suffix_freed[i] = sum < rc->items[i].freed ? UINT64_MAX : sum;
    }
    if (need128 > rc->suffix_freed[0])
        return SP_RECOMPUTE_NEVER;
    struct search sr = {rc, m, budget < SP_RECOMPUTE_NEVER ? budget + 1 : SP_RECOMPUTE_NEVER,
                        false};
    memset(rc->take, 0, m);
    rc->nodes = 0;
    rc->n_skipped = 0;
    search_run(&sr, (uint64_t)need128);
    if (!sr.found)
        return budget < SP_RECOMPUTE_NEVER ? budget + 1 : SP_RECOMPUTE_NEVER;
    if (chosen)
        for (size_t i = 0; i < m; i++)
            if (rc->best_take[i])
                chosen[rc->items[i].layer] = true;
    return sr.best;
}

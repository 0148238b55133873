/* partitioner/model/chain.c: building the chain of candidate positions and the greedy primitives
 * (reach, greedy cover, windows, exact feasibility) that the solvers share. */
#include "chain.h"

#include <string.h>

#include "sim_impl.h"

size_t sp_chain_position_of(const struct sp_chain *c, size_t layer) {
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

static void sums_release(struct sp_chain_sums *m) {
    if (!m)
        return;
    sp_free(m->pos);
    sp_free(m->w_time);
    sp_free(m->wf);
    sp_free(m->w_rc);
    sp_free(m->w_params);
    sp_free(m->mem);
    sp_free(m->saved);
    sp_free(m->saved_rc);
    sp_free(m->act);
    sp_free(m);
}

void sp_chain_release(struct sp_chain *c) {
    if (c->owns_sums)
        sums_release(c->sums);
    sp_free(c->inflight);
    sp_free(c->cap);
    sp_free(c->stash);
    sp_free(c->speed);
    sp_free(c->link_of);
    sp_free(c->link_ticks);
    sp_recompute_cover_destroy(c->cover);
    memset(c, 0, sizeof *c);
}

#define SP_LINK_CACHE_MAX_ENTRIES ((size_t)32 << 20) /* 256 MiB of cached transfer times */

/* Links with the same latency and bandwidth cost the same: cache one array of transfer ticks
 * per distinct link. Without the cache (allocation failure, or too large) the costs are
 * computed on the fly, which gives the same numbers. */
static void cache_links(struct sp_chain *c) {
    uint32_t p = c->p, distinct = 0;
    double *lat = sp_mallocarray(p, sizeof *lat), *gb = sp_mallocarray(p, sizeof *gb);
    c->link_of = sp_calloc(p, sizeof *c->link_of);
    if (!lat || !gb || !c->link_of)
        goto fail;
    for (uint32_t s = 0; s + 1 < p; s++) {
        double l0 = sp_links_transfer_ms(c->links, s, s + 1, 0);
        double l1 = sp_links_transfer_ms(c->links, s, s + 1, 1000000000);
        uint32_t id = 0;
        while (id < distinct && !(lat[id] == l0 && gb[id] == l1))
            id++;
        if (id == distinct) {
            lat[distinct] = l0;
            gb[distinct++] = l1;
        }
        c->link_of[s] = id;
    }
    if ((size_t)distinct * c->n_pos > SP_LINK_CACHE_MAX_ENTRIES || !distinct)
        goto fail;
    c->link_ticks = sp_mallocarray((size_t)distinct * c->n_pos, sizeof *c->link_ticks);
    if (!c->link_ticks)
        goto fail;
    for (uint32_t s = 0, done = 0; s + 1 < p && done < distinct; s++) {
        if (c->link_of[s] != done)
            continue; /* ids appear in order of first use */
        for (size_t k = 0; k < c->n_pos; k++)
            c->link_ticks[(size_t)done * c->n_pos + k] =
                sp_ms_to_ticks(sp_links_transfer_ms(c->links, s, s + 1, c->act[k]));
        done++;
    }
    sp_free(lat);
    sp_free(gb);
    return;
fail:
    sp_free(lat);
    sp_free(gb);
    sp_free(c->link_of);
    c->link_of = NULL;
    c->link_ticks = NULL;
}

bool sp_cut_allowed(const sp_profile *profile, size_t l) {
    if (!sp_profile_get_layer(profile, l)->cut_after)
        return false;
    return l + 1 >= sp_profile_get_layer_count(profile) ||
           !sp_str_eq(sp_profile_get_layer(profile, l + 1)->kind, "loss");
}

/* One pass over the layers: the positions and every prefix sum (struct sp_chain_sums). */
static sp_status build_sums(sp_ctx *ctx, const sp_profile *profile, struct sp_chain_sums **out) {
    size_t n = sp_profile_get_layer_count(profile);
    size_t n_pos = 1;
    for (size_t l = 0; l + 1 < n; l++)
        n_pos += sp_cut_allowed(profile, l);
    n_pos += 1;
    struct sp_chain_sums *m = sp_calloc(1, sizeof *m);
    if (m) {
        m->n_pos = n_pos;
        m->pos = sp_mallocarray(n_pos, sizeof *m->pos);
        m->w_time = sp_mallocarray(n_pos, sizeof *m->w_time);
        m->wf = sp_mallocarray(n_pos, sizeof *m->wf);
        m->w_rc = sp_mallocarray(n_pos, sizeof *m->w_rc);
        m->w_params = sp_mallocarray(n_pos, sizeof *m->w_params);
        m->mem = sp_mallocarray(n_pos, sizeof *m->mem);
        m->saved = sp_mallocarray(n_pos, sizeof *m->saved);
        m->saved_rc = sp_mallocarray(n_pos, sizeof *m->saved_rc);
        m->act = sp_mallocarray(n_pos, sizeof *m->act);
    }
    if (!m || !m->pos || !m->w_time || !m->wf || !m->w_rc || !m->w_params || !m->mem || !m->saved ||
        !m->saved_rc || !m->act) {
        sums_release(m);
        return sp_oom(ctx, "building the partitioner's chain");
    }
    int64_t w = 0, wf = 0, w_rc = 0, w_params = 0;
    uint64_t mem = 0, saved = 0, saved_rc = 0, block_saved = 0;
    int64_t block_rc = 0; /* the block's recomputation ticks; -1 when a layer cannot */
    size_t k = 0;
    m->pos[0] = 0;
    m->w_time[0] = m->wf[0] = m->w_rc[0] = m->w_params[0] = 0;
    m->mem[0] = m->saved[0] = m->saved_rc[0] = m->act[0] = 0;
    for (size_t l = 0; l < n; l++) {
        const sp_layer *L = sp_profile_get_layer(profile, l);
        int64_t f = sp_layer_fwd_ticks(L), t = f + sp_layer_bwd_ticks(L);
        w += t;
        wf += f;
        w_rc += t;
        w_params += (int64_t)L->param_bytes;
        mem += L->memory_bytes;
        block_saved += L->saved_bytes;
        block_rc =
            L->recompute_ms < 0 || block_rc < 0 ? -1 : block_rc + sp_ms_to_ticks(L->recompute_ms);
        if (l + 1 == n || sp_cut_allowed(profile, l)) {
            saved += block_saved;
            if (block_rc >= 0)
                w_rc += block_rc; /* recomputed in the backward, nothing saved */
            else
                saved_rc += block_saved;
            block_saved = 0;
            block_rc = 0;
            k++;
            m->pos[k] = l + 1;
            m->w_time[k] = w;
            m->wf[k] = wf;
            m->w_rc[k] = w_rc;
            m->w_params[k] = w_params;
            m->mem[k] = mem;
            m->saved[k] = saved;
            m->saved_rc[k] = saved_rc;
            m->act[k] = L->activation_bytes;
        }
    }
    *out = m;
    return SP_OK;
}

/* The stage model over c->sums: the weight's arrays, in-flight counts, caps, speeds, links. */
static sp_status apply_model(sp_ctx *ctx, struct sp_chain *c, const struct sp_chain_model *model) {
    const struct sp_chain_sums *m = c->sums;
    uint32_t stages = model->stages;
    bool time = model->weight == SP_WEIGHT_TIME, rc = time && model->recompute_all;
    c->n_pos = m->n_pos;
    c->pos = m->pos;
    c->w = !time ? m->w_params : rc ? m->w_rc : m->w_time;
    c->wf = m->wf;
    c->mem = m->mem;
    c->saved = rc ? m->saved_rc : m->saved;
    c->p = stages;
    c->inflight = sp_mallocarray(stages, sizeof *c->inflight);
    c->cap = sp_calloc(stages, sizeof *c->cap);
    bool speeds = false;
    for (uint32_t s = 0; model->speed && s < stages; s++)
        speeds |= model->speed[s] != 1.0;
    c->speed = speeds && time ? sp_mallocarray(stages, sizeof *c->speed) : NULL;
    if (!c->inflight || !c->cap || (speeds && time && !c->speed))
        return sp_oom(ctx, "building the partitioner's chain");
    for (uint32_t s = 0; s < stages; s++) {
        c->inflight[s] = sp_stage_inflight(model->schedule, s, stages, model->micro_batches);
        uint64_t cap = model->mem_cap, dm = model->device_mem ? model->device_mem[s] : 0;
        if (dm && (!cap || dm < cap))
            cap = dm;
        c->cap[s] = cap;
        c->any_cap |= cap != 0;
        if (c->speed)
            c->speed[s] = model->speed[s];
    }
    if (sp_stage_weight_versions(model->schedule, 0, stages) > 1 && c->any_cap) {
        c->stash = sp_mallocarray(stages, sizeof *c->stash);
        if (!c->stash)
            return sp_oom(ctx, "building the partitioner's chain");
        for (uint32_t s = 0; s < stages; s++)
            c->stash[s] = sp_stage_weight_versions(model->schedule, s, stages) - 1;
    }
    if (model->recompute_choice && model->profile && time && !rc && c->any_cap) {
        sp_status st = sp_recompute_cover_create(ctx, model->profile, m, &c->cover);
        if (st != SP_OK)
            return st;
    }
    if (model->blocking && model->links && stages > 1) {
        c->blocking = true;
        c->links = model->links;
        c->act = m->act;
        cache_links(c);
    }
    return SP_OK;
}

sp_status sp_chain_init(sp_ctx *ctx, struct sp_chain *c, const sp_profile *profile,
                        const struct sp_chain_model *model) {
    memset(c, 0, sizeof *c);
    sp_status st = build_sums(ctx, profile, &c->sums);
    c->owns_sums = st == SP_OK;
    if (st == SP_OK)
        st = apply_model(ctx, c, model);
    if (st != SP_OK)
        sp_chain_release(c);
    return st;
}

sp_status sp_chain_restage(sp_ctx *ctx, struct sp_chain *c, const struct sp_chain *base,
                           const struct sp_chain_model *model) {
    memset(c, 0, sizeof *c);
    c->sums = base->sums;
    sp_status st = apply_model(ctx, c, model);
    if (st != SP_OK)
        sp_chain_release(c);
    return st;
}

size_t sp_chain_reach_forward(const struct sp_chain *c, uint32_t s, size_t a, int64_t cap) {
    size_t lo = a + 1, hi = c->n_pos - 1;
    if (lo > hi || !sp_chain_admissible(c, s, a, lo, cap))
        return a;
    while (lo < hi) { /* invariant: lo admissible */
        size_t mid = lo + (hi - lo + 1) / 2;
        if (sp_chain_admissible(c, s, a, mid, cap))
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

size_t sp_chain_reach_backward(const struct sp_chain *c, uint32_t s, size_t b, int64_t cap) {
    if (b == 0 || !sp_chain_admissible(c, s, b - 1, b, cap))
        return b;
    size_t lo = 0, hi = b - 1; /* invariant: hi admissible */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (sp_chain_admissible(c, s, mid, b, cap))
            hi = mid;
        else
            lo = mid + 1;
    }
    return hi;
}

bool sp_chain_greedy_covers(const struct sp_chain *c, int64_t cap, size_t *end_out) {
    size_t a = 0, last = c->n_pos - 1;
    /* A stage that cannot take the next block stays empty: the later stages hold fewer
     * micro-batches and may fit it. With empty stages allowed the greedy is exact (exchange
     * argument), so this is a relaxation of "exactly p non-empty stages". */
    for (uint32_t s = 0; s < c->p && a < last; s++)
        a = sp_chain_reach_forward(c, s, a, cap);
    if (end_out)
        *end_out = a;
    return a == last;
}

bool sp_chain_windows(const struct sp_chain *c, int64_t cap, size_t *lo, size_t *hi) {
    size_t last = c->n_pos - 1;
    uint32_t p = c->p;
    if (last < p)
        return false;
    /* Forward: greedy ends every stage at or after any feasible partition does; the clamp
     * leaves at least one position for each later stage. A stuck stage (nothing fits) keeps
     * the bound at its start. */
    size_t a = 0;
    for (uint32_t s = 0; s < p; s++) {
        size_t b = sp_chain_reach_forward(c, s, a, cap);
        size_t room = last - (p - 1 - s);
        hi[s] = b < room ? b : room;
        a = hi[s];
    }
    /* Backward: symmetric; stage s starts no earlier than this pass says. */
    size_t b = last;
    lo[p - 1] = last;
    for (uint32_t s = p - 1; s > 0; s--) {
        size_t start = sp_chain_reach_backward(c, s, b, cap);
        if (start < s)
            start = s;
        lo[s - 1] = start;
        b = start;
    }
    for (uint32_t s = 0; s < p; s++)
        if (lo[s] > hi[s] || lo[s] < (size_t)s + 1)
            return false;
    return true;
}

sp_status sp_chain_feasible(sp_ctx *ctx, const struct sp_chain *c, int64_t cap, bool *out) {
    *out = false;
    uint32_t p = c->p;
    size_t *lo = sp_mallocarray(p, sizeof *lo), *hi = sp_mallocarray(p, sizeof *hi);
    if (!lo || !hi) {
        sp_free(lo);
        sp_free(hi);
        return sp_oom(ctx, "checking feasibility");
    }
    if (!sp_chain_windows(c, cap, lo, hi)) {
        sp_free(lo);
        sp_free(hi);
        return SP_OK;
    }
    size_t maxw = 1;
    for (uint32_t s = 0; s < p; s++)
        if (hi[s] - lo[s] + 1 > maxw)
            maxw = hi[s] - lo[s] + 1;
    /* reach flags of the previous stage's window as prefix counts: cnt[i] = reachable ends
     * among the first i positions of that window */
    size_t *prev = sp_calloc(maxw + 1, sizeof *prev), *cur = sp_calloc(maxw + 1, sizeof *cur);
    if (!prev || !cur) {
        sp_free(lo);
        sp_free(hi);
        sp_free(prev);
        sp_free(cur);
        return sp_oom(ctx, "checking feasibility");
    }
    bool any = true;
    for (uint32_t s = 0; s < p && any; s++) {
        any = false;
        size_t wn = hi[s] - lo[s] + 1;
        cur[0] = 0;
        for (size_t i = 0; i < wn; i++) {
            size_t b = lo[s] + i;
            bool ok;
            if (s == 0) {
                ok = sp_chain_admissible(c, 0, 0, b, cap);
            } else {
                size_t from = sp_chain_reach_backward(c, s, b, cap); /* admissible a >= from */
                size_t plo = lo[s - 1], phi = hi[s - 1];
                size_t x = from > plo ? from : plo, y = b - 1 < phi ? b - 1 : phi;
                ok = from < b && x <= y && prev[y - plo + 1] - prev[x - plo] > 0;
            }
            cur[i + 1] = cur[i] + ok;
            any |= ok;
        }
        size_t *t = prev;
        prev = cur;
        cur = t;
    }
    *out = any; /* the last window is the single position n_pos - 1 */
    sp_free(lo);
    sp_free(hi);
    sp_free(prev);
    sp_free(cur);
    return SP_OK;
}

sp_status sp_chain_min_bottleneck(sp_ctx *ctx, const struct sp_chain *c, int64_t *out_cap) {
    size_t last = c->n_pos - 1;
    int64_t total = c->w[last], max_block = 0;
    for (size_t k = 0; k < last; k++)
        if (c->w[k + 1] - c->w[k] > max_block)
            max_block = c->w[k + 1] - c->w[k];
    int64_t avg = (total + (int64_t)c->p - 1) / (int64_t)c->p;
    int64_t lo = max_block > avg ? max_block : avg;
    int64_t hi = avg + max_block < total ? avg + max_block : total;
    if (c->speed) { /* speeds: no useful closed-form bounds; every stage fits under `total` */
        lo = 0;
        total = 0;
        for (uint32_t s = 0; s < c->p; s++) {
            int64_t t = sp_chain_time(c, s, 0, last);
            total = t > total ? t : total;
        }
        hi = total;
    }
    if (c->cover) /* recomputation only adds: every layer recomputed bounds any stage */
        total = c->w[last] + sp_recompute_cover_all_ticks(c->cover);
    if (hi < lo)
        hi = lo;
    /* The greedy solves the "at most p stages" relaxation exactly, so its optimum is a lower
     * bound for exactly p; avg + heaviest block always suffices without a memory cap. */
    if (!sp_chain_greedy_covers(c, hi, NULL)) {
        if (!sp_chain_greedy_covers(c, total, NULL))
            return SP_ERR_INFEASIBLE;
        lo = hi + 1;
        hi = total;
    }
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (sp_chain_greedy_covers(c, mid, NULL))
            hi = mid;
        else
            lo = mid + 1;
    }
    /* Confirm with the exact check for exactly p non-empty stages and continue upward if it
     * fails. Without a memory cap it never does (splitting a stage keeps both parts within
     * the cap); with one, the relaxation's empty stages can hide an infeasible T. */
    bool ok = false;
    sp_status st = sp_chain_feasible(ctx, c, lo, &ok);
    if (st != SP_OK)
        return st;
    if (!ok) {
        int64_t a = lo + 1, b = total;
        if ((st = sp_chain_feasible(ctx, c, b, &ok)) != SP_OK)
            return st;
        if (!ok)
            return SP_ERR_INFEASIBLE;
        while (a < b) {
            int64_t mid = a + (b - a) / 2;
            if ((st = sp_chain_feasible(ctx, c, mid, &ok)) != SP_OK)
                return st;
            if (ok)
                b = mid;
            else
                a = mid + 1;
        }
        lo = a;
    }
    *out_cap = lo;
    return SP_OK;
}

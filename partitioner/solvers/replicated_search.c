/* partitioner/solvers/replicated_search.c: the exact search over cuts and replica counts
 * (docs/partitioning.md#replicated-stages).
 *
 * Stages take devices in order from device 0, stage s r_s consecutive ones after stage s - 1's,
 * a device between stages possibly idle. For a cap T on every stage's share, a table over (k
 * stages still to place, g devices passed) keeps the furthest position any placement reaches;
 * from (k, g) at position a, a stage on devices g .. g + r - 1 may end anywhere its share and
 * memory allow (both only grow with its end), and the furthest such end is kept at
 * (k - 1, g + r); (k, g) also passes to (k, g + 1), device g idle. The memory a stage needs
 * depends on k alone (its in-flight micro-batches and stashed weights count the stages after
 * it), so every stage count P starts at (P, 0) in one table. A plan exists under T exactly when
 * some (0, g) reaches the end: the furthest position dominates a nearer one unless it leaves a
 * later stage empty, and then dropping that stage (its devices idle, the stages after it where
 * they were) gives a plan with fewer stages, whose earlier stages hold no more in flight (by
 * induction on P the table finds one). Bisection on the integer cap gives the least bottleneck;
 * scanning P upward with one start at a time then gives the fewest stages reaching it (a P
 * missed would mean a plan with fewer), and its table the fewest devices spanned. The table is
 * O(N^2) states of O(N) moves, each a binary search over positions: O(N^3 log L) per cap,
 * independent of the layer count otherwise. tests/oracle/test_replicated.c checks it against
 * enumeration. */
#include <math.h>
#include <string.h>

#include "devices_impl.h"
#include "replicated.h"
#include "sim_impl.h"

void sp_replica_model_release(struct sp_replica_model *m) {
    sp_free(m->ring);
    sp_free(m->ring_pairs);
    sp_free(m->slowest);
    sp_free(m->room);
    m->ring = NULL;
    m->ring_pairs = NULL;
    m->slowest = NULL;
    m->room = NULL;
}

/* the devices' slowest speed and least room for every (g, r) */
static bool device_ranges(struct sp_replica_model *m) {
    uint32_t N = m->gpus;
    size_t slots = (size_t)N * (N + 1) + 1;
    m->slowest = sp_mallocarray(slots, sizeof *m->slowest);
    m->room = sp_calloc(slots, sizeof *m->room);
    if (!m->slowest || !m->room)
        return false;
    for (uint32_t g = 0; g < N; g++) {
        double speed = (double)INFINITY;
        uint64_t room = m->mem_cap;
        for (uint32_t r = 1; g + r <= N; r++) {
            const sp_device_info *d =
                m->devices ? sp_devices_get_device(m->devices, g + r - 1) : NULL;
            speed = d && d->speed < speed ? d->speed : speed;
            if (d && d->memory_bytes && (!room || d->memory_bytes < room))
                room = d->memory_bytes;
            m->slowest[(size_t)g * (N + 1) + r] = speed < (double)INFINITY ? speed : 1.0;
            m->room[(size_t)g * (N + 1) + r] = room;
        }
    }
    return true;
}

double sp_replica_speed(const struct sp_replica_model *m, uint32_t g, uint32_t r) {
    return m->slowest[(size_t)g * (m->gpus + 1) + r];
}

uint64_t sp_replica_room(const struct sp_replica_model *m, uint32_t g, uint32_t r) {
    return m->room[(size_t)g * (m->gpus + 1) + r];
}

/* whether link p is never slower than link q for any size (so q's time is the larger) */
static bool link_dominated(const sp_links *l, uint32_t p, uint32_t q) {
    return l->latency_us[p] <= l->latency_us[q] && l->bw_GBps[p] >= l->bw_GBps[q];
}

/* ring g, r's undominated links into pairs[0 ..), their count returned */
static size_t ring_links(const sp_links *l, uint32_t g, uint32_t r, uint32_t *pairs) {
    size_t used = 0;
    for (uint32_t i = 0; i < r; i++) {
        uint32_t p = (g + i) * (uint32_t)l->n + (g + (i + 1) % r);
        bool drop = false;
        for (size_t j = 0; j < used && !drop; j++)
            drop = link_dominated(l, p, pairs[j]);
        if (drop)
            continue;
        size_t keep = 0; /* drop the kept ones this link dominates */
        for (size_t j = 0; j < used; j++)
            if (!link_dominated(l, pairs[j], p))
                pairs[keep++] = pairs[j];
        used = keep;
        pairs[used++] = p;
    }
    return used;
}

sp_status sp_replica_model_init(sp_ctx *ctx, struct sp_replica_model *m) {
    uint32_t N = m->gpus;
    size_t slots = (size_t)N * (N + 1) + 1, room = (size_t)N + 1, used = 0;
    m->ring = sp_calloc(slots, sizeof *m->ring);
    m->ring_pairs = sp_mallocarray(room, sizeof *m->ring_pairs);
    uint32_t *one = sp_mallocarray((size_t)N + 1, sizeof *one);
    sp_status st = m->ring && m->ring_pairs && one ? SP_OK : SP_ERR_NOMEM;
    for (uint32_t g = 0; st == SP_OK && g < N; g++)
        for (uint32_t r = 0; st == SP_OK && r <= N; r++) {
            m->ring[(size_t)g * (N + 1) + r] = used;
            if (r < 2 || g + r > N)
                continue;
            size_t n = ring_links(m->links, g, r, one);
            if (used + n > room) { /* most rings keep one or two links: grow as needed */
                room = 2 * (used + n);
                uint32_t *grown = sp_realloc(m->ring_pairs, room * sizeof *grown);
                if (!grown) {
                    st = SP_ERR_NOMEM;
                    break;
                }
                m->ring_pairs = grown;
            }
            memcpy(m->ring_pairs + used, one, n * sizeof *one);
            used += n;
        }
    sp_free(one);
    if (st != SP_OK || !device_ranges(m)) {
        sp_replica_model_release(m);
        return sp_oom(ctx, "planning replicated stages");
    }
    m->ring[slots - 1] = used;
    return SP_OK;
}

double sp_replica_allreduce_ms(const struct sp_replica_model *m, uint32_t g, uint32_t r,
                               uint64_t bytes) {
    if (r < 2)
        return 0;
    size_t slot = (size_t)g * (m->gpus + 1) + r;
    size_t n = m->links->n;
    if (m->cost == SP_REPLICA_COST_PIPEDREAM) { /* 4 (r - 1) / r x bytes at the least bandwidth */
        double bw_GBps = (double)INFINITY;
        for (size_t j = m->ring[slot]; j < m->ring[slot + 1]; j++)
            bw_GBps = fmin(bw_GBps, m->links->bw_GBps[m->ring_pairs[j]]);
        return 4.0 * (double)(r - 1) / r * (double)bytes / (bw_GBps * 1e6);
    }
    uint64_t chunk = (bytes + r - 1) / r; /* as sp_ring_allreduce_ms cuts it */
    double slowest = 0;
    for (size_t j = m->ring[slot]; j < m->ring[slot + 1]; j++) {
        uint32_t p = m->ring_pairs[j];
        double t = sp_links_transfer_ms(m->links, p / n, p % n, chunk);
        slowest = t > slowest ? t : slowest;
    }
    return 2.0 * (double)(r - 1) * slowest;
}

int64_t sp_replica_allreduce_ticks(const struct sp_replica_model *m, uint32_t g, uint32_t r,
                                   uint64_t bytes) {
    return sp_ms_to_ticks(sp_replica_allreduce_ms(m, g, r, bytes));
}

/* one micro-batch on the slowest of devices g .. g + r - 1: forward and backward each scaled
 * and rounded to a tick, as a plan's stage times are (sp_chain_compute) */
static int64_t compute_ticks(const struct sp_replica_model *m, size_t a, size_t b, uint32_t g,
                             uint32_t r) {
    const struct sp_chain *c = m->chain;
    int64_t w = c->w[b] - c->w[a];
    double speed = sp_replica_speed(m, g, r);
    if (speed == 1.0)
        return w;
    int64_t f = c->wf[b] - c->wf[a];
    return sp_speed_scale(f, speed) + sp_speed_scale(w - f, speed);
}

int64_t sp_replica_share_ticks(const struct sp_replica_model *m, size_t a, size_t b, uint32_t g,
                               uint32_t r) {
    int64_t compute = compute_ticks(m, a, b, g, r);
    uint64_t params = (uint64_t)(m->chain->sums->w_params[b] - m->chain->sums->w_params[a]);
    int64_t ar = sp_replica_allreduce_ticks(m, g, r, params);
    if (sp_schedule_async(m->schedule)) /* a replica's turn: its compute, then its all-reduce */
        return (compute + ar + r - 1) / r;
    /* ceil(compute / r + ar / M) over one denominator */
    sp_i128 den = (sp_i128)r * m->micro_batches;
    sp_i128 num = (sp_i128)compute * m->micro_batches + (sp_i128)ar * r;
    return (int64_t)((num + den - 1) / den);
}

sp_u128 sp_replica_memory(const struct sp_replica_model *m, size_t a, size_t b, uint32_t k) {
    const struct sp_chain *c = m->chain;
    uint32_t inflight = sp_stage_inflight(m->schedule, 0, k, m->micro_batches);
    uint32_t versions = sp_stage_weight_versions(m->schedule, 0, k);
    uint64_t params = (uint64_t)(c->sums->w_params[b] - c->sums->w_params[a]);
    return (sp_u128)(c->mem[b] - c->mem[a]) + (sp_u128)inflight * (c->saved[b] - c->saved[a]) +
           (sp_u128)(versions - 1) * params;
}

static bool admissible(const struct sp_replica_model *m, size_t a, size_t b, uint32_t k, uint32_t g,
                       uint32_t r, int64_t cap) {
    uint64_t room = sp_replica_room(m, g, r);
    if (room && sp_replica_memory(m, a, b, k) > room)
        return false;
    return sp_replica_share_ticks(m, a, b, g, r) <= cap;
}

/* the furthest end b > a of an admissible stage, a when none; the last stage must end at `end` */
static size_t reach(const struct sp_replica_model *m, size_t a, size_t end, uint32_t k, uint32_t g,
                    uint32_t r, int64_t cap) {
    if (k == 1)
        return admissible(m, a, end, k, g, r, cap) ? end : a;
    if (!admissible(m, a, a + 1, k, g, r, cap))
        return a;
    size_t lo = a + 1, hi = end; /* lo admissible; find the last admissible in [lo, hi] */
    while (lo < hi) {
        size_t mid = lo + (hi - lo + 1) / 2;
        if (admissible(m, a, mid, k, g, r, cap))
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

#define SKIPPED UINT32_MAX /* parent of a state reached by leaving device g - 1 idle */

struct table {
    uint32_t K, N;
    long long *best;  /* [(K + 1) * (N + 1)]: furthest position, -1: unreached */
    uint32_t *parent; /* [(K + 1) * (N + 1)]: the devices before the last stage placed, or
                       * SKIPPED */
};

static size_t cell(const struct table *t, uint32_t k, uint32_t g) {
    return (size_t)k * (t->N + 1) + g;
}

/* Fill the table under cap: every start P in [p_lo, p_hi]. A device may be left idle between
 * stages (a skip), which keeps the furthest position dominant when devices differ: a plan whose
 * later stage the furthest position empties drops that stage and leaves its devices idle, the
 * stages after it on the same devices as before. Returns the fewest devices spanned (the last
 * stage's end) with which some start reaches the end, UINT32_MAX when none does. */
static uint32_t fill(const struct sp_replica_model *m, struct table *t, int64_t cap, uint32_t p_lo,
                     uint32_t p_hi) {
    uint32_t K = t->K, N = t->N;
    size_t end = m->chain->n_pos - 1;
    for (size_t i = 0; i < (size_t)(K + 1) * (N + 1); i++)
        t->best[i] = -1;
    for (uint32_t p = p_lo; p <= p_hi; p++)
        t->best[cell(t, p, 0)] = 0;
    for (uint32_t k = p_hi; k >= 1; k--)
        for (uint32_t g = 0; g + k <= N; g++) {
            if (g > 0 && t->best[cell(t, k, g - 1)] > t->best[cell(t, k, g)]) {
                t->best[cell(t, k, g)] = t->best[cell(t, k, g - 1)];
                t->parent[cell(t, k, g)] = SKIPPED;
            }
            long long a = t->best[cell(t, k, g)];
            if (a < 0 || (size_t)a + k > end) /* each stage left needs a position */
                continue;
            for (uint32_t r = 1; g + r + (k - 1) <= N; r++) {
                size_t e = reach(m, (size_t)a, end, k, g, r, cap);
                size_t to = cell(t, k - 1, g + r);
                if (e > (size_t)a && (long long)e > t->best[to]) {
                    t->best[to] = (long long)e;
                    t->parent[to] = g;
                }
            }
        }
    for (uint32_t g = 1; g <= N; g++)
        if (t->best[cell(t, 0, g)] == (long long)end)
            return g;
    return UINT32_MAX;
}

void sp_replica_plan_release(struct sp_replica_plan *p) {
    sp_free(p->bounds);
    sp_free(p->replicas);
    sp_free(p->first_device);
    memset(p, 0, sizeof *p);
}

/* the plan the table holds for P stages ending at device `span` */
static sp_status trace_back(sp_ctx *ctx, const struct table *t, uint32_t P, uint32_t span,
                            struct sp_replica_plan *out) {
    out->stages = P;
    out->gpus_used = 0;
    out->bounds = sp_mallocarray((size_t)P + 1, sizeof *out->bounds);
    out->replicas = sp_mallocarray(P, sizeof *out->replicas);
    out->first_device = sp_mallocarray(P, sizeof *out->first_device);
    if (!out->bounds || !out->replicas || !out->first_device)
        return sp_oom(ctx, "planning replicated stages");
    uint32_t g = span, k = 0;
    while (k < P) {
        uint32_t prev = t->parent[cell(t, k, g)];
        if (prev == SKIPPED) { /* device g - 1 idle */
            g--;
            continue;
        }
        uint32_t s = P - 1 - k;
        out->bounds[s + 1] = (size_t)t->best[cell(t, k, g)];
        out->replicas[s] = g - prev;
        out->first_device[s] = prev;
        out->gpus_used += g - prev;
        g = prev;
        k++;
    }
    out->bounds[0] = 0;
    return SP_OK;
}

sp_status sp_replica_search(sp_ctx *ctx, const struct sp_replica_model *m,
                            struct sp_replica_plan *out) {
    memset(out, 0, sizeof *out);
    uint32_t N = m->gpus;
    size_t end = m->chain->n_pos - 1;
    struct table t = {(uint32_t)(end < N ? end : N), N, NULL, NULL};
    size_t cells = (size_t)(t.K + 1) * (N + 1);
    t.best = sp_mallocarray(cells, sizeof *t.best);
    t.parent = sp_calloc(cells, sizeof *t.parent);
    if (!t.best || !t.parent) {
        sp_free(t.best);
        sp_free(t.parent);
        return sp_oom(ctx, "planning replicated stages");
    }
    /* no stage of any plan has a larger share than the whole chain on its devices */
    int64_t lo = 0, hi = 0;
    for (uint32_t g = 0; g < N; g++)
        for (uint32_t r = 1; g + r <= N; r++) {
            int64_t s = sp_replica_share_ticks(m, 0, end, g, r);
            hi = s > hi ? s : hi;
        }
    sp_status st = SP_OK;
    if (fill(m, &t, hi, 1, t.K) == UINT32_MAX)
        st = SP_ERR_INFEASIBLE;
    while (st == SP_OK && lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (fill(m, &t, mid, 1, t.K) != UINT32_MAX)
            hi = mid;
        else
            lo = mid + 1;
    }
    for (uint32_t P = 1; st == SP_OK && P <= t.K; P++) {
        uint32_t used = fill(m, &t, hi, P, P);
        if (used == UINT32_MAX)
            continue;
        st = trace_back(ctx, &t, P, used, out);
        out->bottleneck_ticks = hi;
        break;
    }
    if (st == SP_OK && !out->stages) /* the scan always finds the bisection's plan */
        st = sp_fail(ctx, SP_ERR_INTERNAL, "replicated search: no stage count reaches the cap");
    sp_free(t.best);
    sp_free(t.parent);
    if (st != SP_OK)
        sp_replica_plan_release(out);
    return st;
}

/* simulate/replicas_policy.c: the order replicated stages run in under the 1F1B schedules
 * (1f1b, pipedream, 2bw). A replica's micro-batches arrive from replicas of the stage before
 * and return from those of the stage after in no fixed interleaving, so a fixed order leaves it
 * waiting on one micro-batch while another is ready. Each replica instead runs as PipeDream's
 * workers do: when it is free, the ready backward of its oldest micro-batch, else its next
 * forward (in micro-batch order) while it holds fewer than P - s in flight, the memory model's
 * count; a backward wins a tie. The policy is played out event by event (the op that can start
 * earliest of all goes next, so no op is placed before one that could have run sooner), and
 * the order it produced is each replica's op list; the simulator replays it to the same times.
 * With that window nothing waits forever: the last stage turns each micro-batch at once, and
 * by induction every micro-batch a replica holds comes back. */
#include <math.h>

#include "sim_impl.h"

struct lane {
    uint32_t s, j, r, n; /* stage, replica, replicas, its micro-batch count */
    uint32_t window, next_fwd, held;
    uint32_t *inflight; /* [window]: micro-batches held, oldest first */
    double free_at;
    size_t out; /* ops written so far */
};

struct play {
    const struct sp_pipeline *pl;
    double *end_f, *end_b; /* [P * M], -1: not yet */
};

static double *at(double *a, const struct sp_pipeline *pl, uint32_t s, uint32_t mb) {
    return &a[(size_t)s * pl->M + mb];
}

/* when lane L's forward of mb could start by its input, NAN when not arrived */
static double fwd_ready(struct play *p, const struct lane *L, uint32_t mb) {
    if (L->s == 0)
        return 0;
    double e = *at(p->end_f, p->pl, L->s - 1, mb);
    return e < 0 ? (double)NAN : e + p->pl->send[L->s - 1];
}

static double bwd_ready(struct play *p, const struct lane *L, uint32_t mb) {
    const struct sp_pipeline *pl = p->pl;
    if (L->s + 1 == pl->P) {
        double e = *at(p->end_f, pl, L->s, mb);
        return e < 0 ? (double)NAN : e;
    }
    double e = *at(p->end_b, pl, L->s + 1, mb);
    return e < 0 ? (double)NAN : e + pl->send[L->s];
}

/* lane L's next op by the policy: its start (INFINITY when none can run yet), kind and mb */
static double candidate(struct play *p, const struct lane *L, char *kind, uint32_t *mb,
                        uint32_t *slot) {
    double best = (double)INFINITY;
    for (uint32_t i = 0; i < L->held; i++) { /* oldest first: strictly earlier wins */
        double r = bwd_ready(p, L, L->inflight[i]);
        if (!isnan(r) && fmax(r, L->free_at) < best) {
            best = fmax(r, L->free_at);
            *kind = 'B';
            *mb = L->inflight[i];
            *slot = i;
        }
    }
    if (L->held < L->window && L->next_fwd < L->n) {
        uint32_t m = L->j + L->next_fwd * L->r;
        double r = fwd_ready(p, L, m);
        if (!isnan(r) && fmax(r, L->free_at) < best) { /* a backward wins a tie */
            best = fmax(r, L->free_at);
            *kind = 'F';
            *mb = m;
        }
    }
    return best;
}

static void run_op(struct play *p, struct lane *L, char kind, uint32_t mb, uint32_t slot, double t0,
                   struct sp_sched_op *out) {
    const struct sp_pipeline *pl = p->pl;
    double t1 = t0 + (kind == 'F' ? pl->f[L->s] : pl->b[L->s]);
    L->free_at = t1;
    out[L->out++] = (struct sp_sched_op){L->s, mb, kind, 0, 0};
    if (kind == 'F') {
        *at(p->end_f, pl, L->s, mb) = t1;
        L->inflight[L->held++] = mb;
        L->next_fwd++;
        return;
    }
    *at(p->end_b, pl, L->s, mb) = t1;
    for (uint32_t i = slot; i + 1 < L->held; i++)
        L->inflight[i] = L->inflight[i + 1];
    L->held--;
}

/* Each lane's next op is cached with its start and kept in a binary heap ordered by (start,
 * lane); an op changes only its own lane's next op and that of the lane its output goes to, so
 * each op costs O(log D + P) instead of a scan of every lane. Entries go stale when their lane's
 * candidate changes (ver). */
struct cand {
    double t;
    char kind;
    uint32_t mb, slot, ver;
};

struct heap_entry {
    double t;
    uint32_t d, ver;
};

static bool before(const struct heap_entry *a, const struct heap_entry *b) {
    return a->t < b->t || (a->t == b->t && a->d < b->d);
}

static void heap_push(struct heap_entry *h, size_t *n, struct heap_entry e) {
    size_t i = (*n)++;
    while (i > 0 && before(&e, &h[(i - 1) / 2])) {
        h[i] = h[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h[i] = e;
}

static struct heap_entry heap_pop(struct heap_entry *h, size_t *n) {
    struct heap_entry top = h[0], last = h[--*n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= *n)
            break;
        if (c + 1 < *n && before(&h[c + 1], &h[c]))
            c++;
        if (!before(&h[c], &last))
            break;
        h[i] = h[c];
        i = c;
    }
    if (*n)
        h[i] = last;
    return top;
}

static void refresh(struct play *p, struct lane *lanes, struct cand *c, uint32_t d,
                    struct heap_entry *h, size_t *n) {
    c[d].ver++;
    c[d].t = candidate(p, &lanes[d], &c[d].kind, &c[d].mb, &c[d].slot);
    if (c[d].t < (double)INFINITY)
        heap_push(h, n, (struct heap_entry){c[d].t, d, c[d].ver});
}

static sp_status play_out(sp_ctx *ctx, struct play *p, struct lane *lanes, const uint32_t *base,
                          uint32_t D, struct sp_sched_op *ops, const size_t *offset) {
    const struct sp_pipeline *pl = p->pl;
    size_t left = offset[D], n = 0;
    struct cand *c = sp_calloc(D, sizeof *c);
    /* each push follows a refresh: at most 3 per op plus the first D */
    struct heap_entry *h = sp_mallocarray(3 * left + D + 1, sizeof *h);
    if (!c || !h) {
        sp_free(c);
        sp_free(h);
        return sp_oom(ctx, "ordering replicas");
    }
    for (uint32_t d = 0; d < D; d++)
        refresh(p, lanes, c, d, h, &n);
    sp_status st = SP_OK;
    while (left && st == SP_OK) {
        if (!n) {
            st = sp_fail(ctx, SP_ERR_INTERNAL,
                         "replicated stages: no replica can run (%zu ops left)", left);
            break;
        }
        struct heap_entry e = heap_pop(h, &n);
        if (e.ver != c[e.d].ver)
            continue;
        struct lane *L = &lanes[e.d];
        char kind = c[e.d].kind;
        uint32_t s = L->s, mb = c[e.d].mb;
        run_op(p, L, kind, mb, c[e.d].slot, e.t, ops + offset[e.d]);
        left--;
        refresh(p, lanes, c, e.d, h, &n);
        if (kind == 'F' && s + 1 < pl->P)
            refresh(p, lanes, c, sp_replica_device(pl, base, s + 1, mb), h, &n);
        else if (kind == 'B' && s > 0)
            refresh(p, lanes, c, sp_replica_device(pl, base, s - 1, mb), h, &n);
    }
    sp_free(c);
    sp_free(h);
    return st;
}

sp_status sp_replica_policy_lists(sp_ctx *ctx, const struct sp_pipeline *pl,
                                  struct sp_sched_op *ops, size_t *offset) {
    uint32_t P = pl->P, D = sp_pipeline_devices(pl);
    size_t cells = (size_t)P * pl->M;
    struct lane *lanes = sp_calloc(D, sizeof *lanes);
    struct play p = {pl, sp_mallocarray(cells, sizeof(double)),
                     sp_mallocarray(cells, sizeof(double))};
    uint32_t *held = sp_mallocarray((size_t)D * P + 1, sizeof *held);
    uint32_t *base = sp_mallocarray((size_t)P + 1, sizeof *base);
    sp_status st =
        lanes && p.end_f && p.end_b && held && base ? SP_OK : sp_oom(ctx, "ordering replicas");
    for (size_t i = 0; st == SP_OK && i < cells; i++)
        p.end_f[i] = p.end_b[i] = -1;
    size_t used = 0;
    for (uint32_t s = 0, d = 0; st == SP_OK && s < P; s++) {
        base[s] = d;
        for (uint32_t j = 0; j < pl->replicas[s]; j++, d++) {
            struct lane *L = &lanes[d];
            L->s = s;
            L->j = j;
            L->r = pl->replicas[s];
            L->n = pl->M / L->r + (j < pl->M % L->r ? 1 : 0);
            L->window = P - s;
            L->inflight = held + (size_t)d * P;
            offset[d] = used;
            used += 2 * (size_t)L->n;
        }
    }
    if (st == SP_OK) {
        base[P] = D;
        offset[D] = used;
        st = play_out(ctx, &p, lanes, base, D, ops, offset);
    }
    sp_free(lanes);
    sp_free(p.end_f);
    sp_free(p.end_b);
    sp_free(held);
    sp_free(base);
    return st;
}

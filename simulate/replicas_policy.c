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

static sp_status play_out(sp_ctx *ctx, struct play *p, struct lane *lanes, uint32_t D,
                          struct sp_sched_op *ops, const size_t *offset) {
    size_t left = offset[D];
    while (left) {
        double best = (double)INFINITY;
        uint32_t who = D, mb = 0, slot = 0;
        char kind = 0;
        for (uint32_t d = 0; d < D; d++) {
            char k = 0;
            uint32_t m = 0, sl = 0;
            double t = candidate(p, &lanes[d], &k, &m, &sl);
            if (t < best) {
                best = t;
                who = d;
                kind = k;
                mb = m;
                slot = sl;
            }
        }
        if (who == D)
            return sp_fail(ctx, SP_ERR_INTERNAL,
                           "replicated stages: no replica can run (%zu ops left)", left);
        run_op(p, &lanes[who], kind, mb, slot, best, ops + offset[who]);
        left--;
    }
    return SP_OK;
}

sp_status sp_replica_policy_lists(sp_ctx *ctx, const struct sp_pipeline *pl,
                                  struct sp_sched_op *ops, size_t *offset) {
    uint32_t P = pl->P, D = sp_pipeline_devices(pl);
    size_t cells = (size_t)P * pl->M;
    struct lane *lanes = sp_calloc(D, sizeof *lanes);
    struct play p = {pl, sp_mallocarray(cells, sizeof(double)),
                     sp_mallocarray(cells, sizeof(double))};
    uint32_t *held = sp_mallocarray((size_t)D * P + 1, sizeof *held);
    sp_status st = lanes && p.end_f && p.end_b && held ? SP_OK : sp_oom(ctx, "ordering replicas");
    for (size_t i = 0; st == SP_OK && i < cells; i++)
        p.end_f[i] = p.end_b[i] = -1;
    size_t used = 0;
    for (uint32_t s = 0, d = 0; st == SP_OK && s < P; s++)
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
    if (st == SP_OK) {
        offset[D] = used;
        st = play_out(ctx, &p, lanes, D, ops, offset);
    }
    sp_free(lanes);
    sp_free(p.end_f);
    sp_free(p.end_b);
    sp_free(held);
    return st;
}

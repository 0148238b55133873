/* simulate/schedule_torch.c: the orders torch.distributed.pipelining runs for its multi-stage
 * schedules, one device at a time (docs/schedules.md, "Op orders"). Written from the rules its
 * schedules.py follows; tests/unit/test_schedule_torch.c checks them against a separate
 * transcription and a separate simulator.
 *
 *   interleaved     Interleaved1F1B: rounds = max(1, M / P), m = M / rounds micro-batches per
 *                   round; chunk forwards in groups of m per chunk, chunk 0 first; warm-up
 *                   min((V-1) m + 2 (P-1-d), M V) forwards, then a forward and a backward in
 *                   turn, then the remaining backwards (the backward groups run the chunks in
 *                   reverse). With M a multiple of P this is Megatron's interleaved order.
 *   interleaved-zb  InterleavedZeroBubble (ZB1P): the same with a warm-up of
 *                   min((V-1) m + (P-1-d), M V), backwards split into I and W, and after the
 *                   first d backwards of the steady phase each I followed by the oldest W
 *                   waiting; the Ws left end the list.
 *   zbv             ZBVZeroBubble, chunks a = d and z = 2P-1-d: 2(P-d)-1 forwards of a, d pairs
 *                   (F z, F a), P-d triples (F z, I z, W z), then while forwards remain
 *                   (F a if any left, I a, W a, F z, I z, W z), then d pairs (I a, I z), P-d
 *                   pairs (I a, W a), the Ws of z left, the Ws of a left. Built for
 *                   max(M, 2P-1) micro-batches; the ops of those beyond M are dropped.
 *   dualpipev       DualPipeV: 2(P-1-d) forwards of a; d+1 pairs (F a, F z); P-1-d triples
 *                   (I z, W oldest, F z); M-2P+d+1 rounds of an overlapped (F a | B z) and
 *                   (F z | B a), the first not overlapped on the last device; P-1-d of (B z,
 *                   F z | B a); d+1 of (B z, B a), switched to I from the middle on; P-1-d of
 *                   (W oldest, B or I of a); d+1 Ws oldest. */
#include <string.h>

#include "schedule_impl.h"

/* per-chunk micro-batch counters of one device: F, backward (I or B), W */
struct counters {
    uint32_t f[2], b[2], w[2];
};

void sp_sched_interleaved(const struct sp_pipeline *pl, uint32_t d, struct sp_sched_list *l) {
    uint32_t P = pl->P, V = pl->V, M = pl->M;
    bool zb = pl->schedule == SP_SCHEDULE_INTERLEAVED_ZB;
    uint32_t rounds = M / P ? M / P : 1, per_round = M / rounds;
    uint64_t total = (uint64_t)M * V;
    uint64_t warm = (uint64_t)(V - 1) * per_round + (zb ? 1 : 2) * (uint64_t)(P - 1 - d);
    if (warm > total)
        warm = total;
    /* the micro-batch counters of this device's chunks (F, backward, W), in the scratch */
    uint32_t *fmb = l->scratch, *bmb = fmb + V, *wmb = bmb + V;
    memset(fmb, 0, 3 * (size_t)V * sizeof *fmb);
    uint64_t w_done = 0, b_done = 0;
#define FWD_CHUNK(op) ((uint32_t)(((op) / per_round) % V))
#define BWD_CHUNK(op) (V - 1 - (uint32_t)((((op)-warm) / per_round) % V))
    for (uint64_t op = 0; op < total + warm; op++) {
        if (op < total) {
            uint32_t c = FWD_CHUNK(op);
            sp_sched_push(l, 'F', c * P + d, fmb[c]++);
        }
        if (op < warm)
            continue;
        uint32_t c = BWD_CHUNK(op);
        sp_sched_push(l, zb ? 'I' : 'B', c * P + d, bmb[c]++);
        b_done++;
        if (zb && op - warm >= d) {
            uint32_t cw = BWD_CHUNK(warm + w_done);
            sp_sched_push(l, 'W', cw * P + d, wmb[cw]++);
            w_done++;
        }
    }
    for (; zb && w_done < b_done; w_done++) {
        uint32_t cw = BWD_CHUNK(warm + w_done);
        sp_sched_push(l, 'W', cw * P + d, wmb[cw]++);
    }
#undef FWD_CHUNK
#undef BWD_CHUNK
}

void sp_sched_zbv(const struct sp_pipeline *pl, uint32_t d, struct sp_sched_list *l) {
    uint32_t P = pl->P, M = pl->M < 2 * P - 1 ? 2 * P - 1 : pl->M;
    uint32_t a = d, z = 2 * P - 1 - d;
    uint32_t fa = 0, fz = 0, ba = 0, bz = 0;
    for (uint32_t i = 0; i < 2 * (P - d) - 1; i++)
        sp_sched_push(l, 'F', a, fa++);
    for (uint32_t i = 0; i < d; i++) {
        sp_sched_push(l, 'F', z, fz++);
        sp_sched_push(l, 'F', a, fa++);
    }
    for (uint32_t i = 0; i < P - d; i++) {
        sp_sched_push(l, 'F', z, fz++);
        sp_sched_push(l, 'I', z, bz);
        sp_sched_push(l, 'W', z, bz++);
    }
    while (fz < fa || fa < M) {
        if (fa < M)
            sp_sched_push(l, 'F', a, fa++);
        sp_sched_push(l, 'I', a, ba);
        sp_sched_push(l, 'W', a, ba++);
        sp_sched_push(l, 'F', z, fz++);
        sp_sched_push(l, 'I', z, bz);
        sp_sched_push(l, 'W', z, bz++);
    }
    uint32_t wa = ba, wz = bz;
    for (uint32_t i = 0; i < d; i++) {
        sp_sched_push(l, 'I', a, ba++);
        sp_sched_push(l, 'I', z, bz++);
    }
    for (uint32_t i = 0; i < P - d; i++) {
        sp_sched_push(l, 'I', a, ba++);
        sp_sched_push(l, 'W', a, wa++);
    }
    while (wz < bz)
        sp_sched_push(l, 'W', z, wz++);
    while (wa < ba)
        sp_sched_push(l, 'W', a, wa++);
}

/* DualPipeV keeps the Ws of its split backwards in a queue, oldest first: a ring in the list's
 * scratch (at most 2P + 1 are waiting at once, see sp_schedule_build). */
struct dpv {
    struct sp_sched_list *l;
    uint32_t stage[2]; /* chunk 0 (a), chunk 1 (z) */
    uint32_t f[2], b[2];
    uint32_t *wq; /* (stage, mb) pairs */
    size_t cap, head, len;
};

static void dpv_f(struct dpv *s, int c) {
    sp_sched_push(s->l, 'F', s->stage[c], s->f[c]++);
}
static void dpv_back(struct dpv *s, int c, bool split) {
    uint32_t mb = s->b[c]++;
    sp_sched_push(s->l, split ? 'I' : 'B', s->stage[c], mb);
    if (split) {
        size_t at = (s->head + s->len++) % s->cap;
        s->wq[2 * at] = s->stage[c];
        s->wq[2 * at + 1] = mb;
    }
}
static void dpv_w(struct dpv *s) {
    if (!s->len)
        return;
    sp_sched_push(s->l, 'W', s->wq[2 * s->head], s->wq[2 * s->head + 1]);
    s->head = (s->head + 1) % s->cap;
    s->len--;
}
/* a forward of chunk cf overlapped with a full backward of chunk cb: one op */
static void dpv_pair(struct dpv *s, int cf, int cb) {
    struct sp_sched_op *op = &s->l->ops[s->l->n++];
    *op = (struct sp_sched_op){s->stage[cf], s->f[cf]++, 'O', s->stage[cb], s->b[cb]++};
}

void sp_sched_dualpipev(const struct sp_pipeline *pl, uint32_t d, struct sp_sched_list *l) {
    uint32_t P = pl->P, M = pl->M;
    struct dpv s = {l, {d, 2 * P - 1 - d}, {0, 0}, {0, 0}, l->scratch, l->scratch_len / 2, 0, 0};
    for (uint32_t i = 0; i < 2 * (P - 1 - d); i++)
        dpv_f(&s, 0);
    for (uint32_t i = 0; i < d + 1; i++) {
        dpv_f(&s, 0);
        dpv_f(&s, 1);
    }
    for (uint32_t i = 0; i < P - 1 - d; i++) {
        dpv_back(&s, 1, true);
        dpv_w(&s);
        dpv_f(&s, 1);
    }
    for (uint32_t i = 0; i < M - 2 * P + d + 1; i++) {
        if (i == 0 && d == P - 1) { /* torch keeps these two apart to shorten the bubble */
            dpv_f(&s, 0);
            dpv_back(&s, 1, false);
        } else {
            dpv_pair(&s, 0, 1);
        }
        dpv_pair(&s, 1, 0);
    }
    for (uint32_t i = 0; i < P - 1 - d; i++) {
        dpv_back(&s, 1, false);
        dpv_pair(&s, 1, 0);
    }
    bool zb = false; /* from the middle of these on, backwards split (odd devices one earlier) */
    for (uint32_t i = 0; i < d + 1; i++) {
        if (i == (d + 1) / 2 && d % 2 == 1)
            zb = true;
        dpv_back(&s, 1, zb);
        if (i == (d + 1) / 2 && d % 2 == 0)
            zb = true;
        dpv_back(&s, 0, zb);
    }
    for (uint32_t i = 0; i < P - 1 - d; i++) {
        dpv_w(&s);
        dpv_back(&s, 0, zb);
    }
    for (uint32_t i = 0; i < d + 1; i++)
        dpv_w(&s);
}

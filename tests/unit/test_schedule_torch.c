/* tests/unit/test_schedule_torch.c: the torch.distributed.pipelining schedules (interleaved,
 * interleaved-zb, zbv, dualpipev) against an independent computation: each rank's action list
 * transcribed here step by step from torch's schedules.py (its counters, its queues, its
 * padding), timed by a separate longest-path relaxation (every op starts at the latest of its
 * device's previous op and its inputs, iterated to a fixed point), on equal and random unequal
 * chunk times; every op's start and end, each device's busy time and peak in flight, and the
 * iteration must agree to 1e-6 relative. Also the closed forms that hold (docs/schedules.md). */
#include <math.h>
#include <stagepart/stagepart.h>
#include <stdlib.h>
#include <string.h>

#include "../test.h"
#include "sim_impl.h"

static sp_ctx *ctx;

/* ---- torch's action lists, transcribed */
struct act {
    char kind; /* F I W B O */
    int stage, mb, stage2, mb2;
};
struct rank_list {
    struct act *a;
    int n, cap;
};
static void add(struct rank_list *r, char kind, int stage, int mb) {
    if (r->n == r->cap) {
        r->cap = r->cap ? 2 * r->cap : 64;
        r->a = realloc(r->a, (size_t)r->cap * sizeof *r->a);
    }
    r->a[r->n++] = (struct act){kind, stage, mb, 0, 0};
}

/* _get_warmup_ops and _get_1f1b_rank_ops for Interleaved1F1B / InterleavedZeroBubble */
static void torch_interleaved(int P, int V, int M, int rank, int zb, struct rank_list *r) {
    int rounds = M / P > 1 ? M / P : 1, mpr = M / rounds;
    int warm = (V - 1) * mpr + (zb ? 1 : 2) * (P - 1 - rank);
    if (warm > M * V)
        warm = M * V;
    int fwd_bwd = M * V - warm, cool = M * V - fwd_bwd, total = warm + fwd_bwd + cool;
    int fcount[64] = {0}, bcount[64] = {0}, wcount[64] = {0};
    int *bids = calloc((size_t)total + 1, sizeof *bids), nb = 0, nw = 0;
    for (int op = 0; op < total; op++) {
        int fs = ((op / mpr) % V) * P + rank;
        int bs = (V - 1 - ((op - warm) / mpr) % V) * P + rank;
        if (op < warm) {
            add(r, 'F', fs, fcount[fs]++);
            continue;
        }
        if (op < warm + fwd_bwd)
            add(r, 'F', fs, fcount[fs]++);
        add(r, zb ? 'I' : 'B', bs, bcount[bs]++);
        bids[nb++] = op;
        if (zb && op - warm >= rank) {
            int ws = (V - 1 - ((bids[nw] - warm) / mpr) % V) * P + rank;
            add(r, 'W', ws, wcount[ws]++);
            nw++;
        }
    }
    while (zb && nw < nb) {
        int ws = (V - 1 - ((bids[nw] - warm) / mpr) % V) * P + rank;
        add(r, 'W', ws, wcount[ws]++);
        nw++;
    }
    free(bids);
}

static void torch_zbv(int P, int M, int rank, struct rank_list *r) {
    int n_micro = M > 2 * P - 1 ? M : 2 * P - 1;
    int f0 = 0, f1 = 0, b0 = 0, b1 = 0, c0 = rank, c1 = 2 * P - 1 - rank;
    struct rank_list all = {0};
    for (int i = 0; i < 2 * (P - rank) - 1; i++)
        add(&all, 'F', c0, f0++);
    for (int i = 0; i < rank; i++) {
        add(&all, 'F', c1, f1++);
        add(&all, 'F', c0, f0++);
    }
    for (int i = 0; i < P - rank; i++) {
        add(&all, 'F', c1, f1++);
        add(&all, 'I', c1, b1);
        add(&all, 'W', c1, b1);
        b1++;
    }
    while (f1 < f0 || f0 < n_micro) {
        if (f0 < n_micro)
            add(&all, 'F', c0, f0++);
        add(&all, 'I', c0, b0);
        add(&all, 'W', c0, b0);
        b0++;
        add(&all, 'F', c1, f1++);
        add(&all, 'I', c1, b1);
        add(&all, 'W', c1, b1);
        b1++;
    }
    int w0 = b0, w1 = b1;
    for (int i = 0; i < rank; i++) {
        add(&all, 'I', c0, b0++);
        add(&all, 'I', c1, b1++);
    }
    for (int i = 0; i < P - rank; i++) {
        add(&all, 'I', c0, b0++);
        add(&all, 'W', c0, w0++);
    }
    while (w1 < b1)
        add(&all, 'W', c1, w1++);
    while (w0 < b0)
        add(&all, 'W', c0, w0++);
    for (int i = 0; i < all.n; i++) /* torch turns the padding's actions into None */
        if (all.a[i].mb < M)
            add(r, all.a[i].kind, all.a[i].stage, all.a[i].mb);
    free(all.a);
}

/* DualPipeV: counters keyed by (stage, type); a full backward counts as I and W */
static int cnt[128][3]; /* [stage][0 F, 1 I, 2 W] */
static int wq[4096][2], wq_head, wq_len;
static void dpv_add(struct rank_list *r, int stage, char type) {
    int key = type == 'F' ? 0 : 1;
    int mb = cnt[stage][key];
    add(r, type, stage, mb);
    if (type == 'B') {
        cnt[stage][1]++;
        cnt[stage][2]++;
    } else {
        if (type == 'I') {
            wq[(wq_head + wq_len) % 4096][0] = stage;
            wq[(wq_head + wq_len++) % 4096][1] = mb;
        }
        cnt[stage][key] = mb + 1;
    }
}
static void dpv_weight(struct rank_list *r) {
    if (!wq_len)
        return;
    add(r, 'W', wq[wq_head][0], wq[wq_head][1]);
    cnt[wq[wq_head][0]][2]++;
    wq_head = (wq_head + 1) % 4096;
    wq_len--;
}
static void dpv_overlap(struct rank_list *r, int fs, int bs) {
    add(r, 'O', fs, cnt[fs][0]);
    r->a[r->n - 1].stage2 = bs;
    r->a[r->n - 1].mb2 = cnt[bs][1];
    cnt[fs][0]++;
    cnt[bs][1]++;
    cnt[bs][2]++;
}
static void torch_dualpipev(int P, int M, int rank, struct rank_list *r) {
    memset(cnt, 0, sizeof cnt);
    wq_head = wq_len = 0;
    int s0 = rank, s1 = 2 * P - 1 - rank;
    for (int i = 0; i < (P - rank - 1) * 2; i++)
        dpv_add(r, s0, 'F');
    for (int i = 0; i < rank + 1; i++) {
        dpv_add(r, s0, 'F');
        dpv_add(r, s1, 'F');
    }
    for (int i = 0; i < P - rank - 1; i++) {
        dpv_add(r, s1, 'I');
        dpv_weight(r);
        dpv_add(r, s1, 'F');
    }
    for (int i = 0; i < M - P * 2 + rank + 1; i++) {
        if (i == 0 && rank == P - 1) {
            dpv_add(r, s0, 'F');
            dpv_add(r, s1, 'B');
        } else {
            dpv_overlap(r, s0, s1);
        }
        dpv_overlap(r, s1, s0);
    }
    for (int i = 0; i < P - rank - 1; i++) {
        dpv_add(r, s1, 'B');
        dpv_overlap(r, s1, s0);
    }
    int step6 = rank + 1, enable_zb = 0;
    for (int i = 0; i < step6; i++) {
        if (i == step6 / 2 && rank % 2 == 1)
            enable_zb = 1;
        dpv_add(r, s1, enable_zb ? 'I' : 'B');
        if (i == step6 / 2 && rank % 2 == 0)
            enable_zb = 1;
        dpv_add(r, s0, enable_zb ? 'I' : 'B');
    }
    for (int i = 0; i < P - rank - 1; i++) {
        dpv_weight(r);
        dpv_add(r, s0, enable_zb ? 'I' : 'B');
    }
    for (int i = 0; i < rank + 1; i++)
        dpv_weight(r);
}

/* ---- the separate timing: longest paths by relaxation to a fixed point */
struct times {
    double *f_end, *b_end; /* [M][K] */
};
static int dev_of(int layout_v, int P, int k) {
    return layout_v ? (k < P ? k : 2 * P - 1 - k) : k % P;
}

/* returns the iteration time; fills per-op start/end (by rank, index) and per-device figures */
static double relax(struct rank_list *ranks, int P, int K, int M, int layout_v, const double *f,
                    const double *b, const double *w, const double *send, double **start,
                    double **end, double *busy, int *peak) {
    double *fe = malloc(sizeof(double) * (size_t)M * K),
           *be = malloc(sizeof(double) * (size_t)M * K);
    for (int d = 0; d < P; d++)
        for (int i = 0; i < ranks[d].n; i++)
            start[d][i] = end[d][i] = 0;
    for (int pass = 0;; pass++) {
        int changed = 0;
        for (int i = 0; i < M * K; i++)
            fe[i] = be[i] = (double)INFINITY;
        for (int d = 0; d < P; d++)
            for (int i = 0; i < ranks[d].n; i++) {
                struct act *a = &ranks[d].a[i];
                if (a->kind == 'F' || a->kind == 'O')
                    fe[a->mb * K + a->stage] = end[d][i];
                if (a->kind == 'I' || a->kind == 'B')
                    be[a->mb * K + a->stage] = end[d][i];
                if (a->kind == 'O')
                    be[a->mb2 * K + a->stage2] = end[d][i];
            }
        for (int d = 0; d < P; d++)
            for (int i = 0; i < ranks[d].n; i++) {
                struct act *a = &ranks[d].a[i];
                double t = i ? end[d][i - 1] : 0, dur;
                int fk = -1, fmb = 0, bk = -1, bmb = 0;
                if (a->kind == 'F' || a->kind == 'O')
                    fk = a->stage, fmb = a->mb;
                if (a->kind == 'I' || a->kind == 'B')
                    bk = a->stage, bmb = a->mb;
                if (a->kind == 'O')
                    bk = a->stage2, bmb = a->mb2;
                if (fk > 0) {
                    double e = fe[fmb * K + fk - 1] +
                               (dev_of(layout_v, P, fk - 1) != d ? send[fk - 1] : 0);
                    t = e > t ? e : t;
                }
                if (bk >= 0) {
                    double e = bk == K - 1 ? fe[bmb * K + bk]
                                           : be[bmb * K + bk + 1] +
                                                 (dev_of(layout_v, P, bk + 1) != d ? send[bk] : 0);
                    t = e > t ? e : t;
                }
                if (a->kind == 'W') {
                    double e = be[a->mb * K + a->stage];
                    t = e > t ? e : t;
                }
                switch (a->kind) {
                case 'F':
                    dur = f[a->stage];
                    break;
                case 'I':
                    dur = b[a->stage] - w[a->stage];
                    break;
                case 'W':
                    dur = w[a->stage];
                    break;
                case 'B':
                    dur = b[a->stage];
                    break;
                default:
                    dur = f[a->stage] + b[a->stage2];
                }
                if (t != start[d][i] || t + dur != end[d][i])
                    changed = 1;
                start[d][i] = t;
                end[d][i] = t + dur;
            }
        if (!changed || pass > 100000)
            break;
    }
    double it = 0;
    for (int d = 0; d < P; d++) {
        busy[d] = 0;
        int in = 0;
        peak[d] = 0;
        for (int i = 0; i < ranks[d].n; i++) {
            struct act *a = &ranks[d].a[i];
            busy[d] += end[d][i] - start[d][i];
            if (a->kind == 'F' || a->kind == 'O')
                in++;
            peak[d] = in > peak[d] ? in : peak[d];
            if (a->kind == 'W' || a->kind == 'B' || a->kind == 'O')
                in--;
            it = end[d][i] > it ? end[d][i] : it;
        }
    }
    free(fe);
    free(be);
    return it;
}

#define CLOSE(a, b) (fabs((double)(a) - (double)(b)) <= 1e-6 * fmax(1, fabs((double)(b))))

static unsigned long long rng = 88172645463325252ull;
static double rnd(void) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (double)(rng % 1000000) / 1000000.0;
}

/* one case: the library's ops and times equal the transcription's */
static int compare(sp_schedule sched, int P, int V, int M, int random_times, int with_send) {
    int K = P * V, layout_v = sched == SP_SCHEDULE_ZBV || sched == SP_SCHEDULE_DUALPIPEV;
    double f[64], b[64], w[64], send[64];
    for (int k = 0; k < K; k++) {
        f[k] = random_times ? 0.2 + rnd() : 1;
        w[k] = random_times ? 0.1 + rnd() : 1;
        b[k] = random_times ? w[k] + 0.2 + 2 * rnd() : 2;
        send[k] = with_send ? 0.3 * rnd() : 0;
    }
    struct rank_list ranks[16] = {{0}};
    for (int d = 0; d < P; d++) {
        if (sched == SP_SCHEDULE_ZBV)
            torch_zbv(P, M, d, &ranks[d]);
        else if (sched == SP_SCHEDULE_DUALPIPEV)
            torch_dualpipev(P, M, d, &ranks[d]);
        else
            torch_interleaved(P, V, M, d, sched == SP_SCHEDULE_INTERLEAVED_ZB, &ranks[d]);
    }
    struct sp_pipeline pl = {
        (uint32_t)P, (uint32_t)V, (uint32_t)M, sched, layout_v ? SP_CHUNKS_V : SP_CHUNKS_LOOP,
        f,           b,           w,           send,  NULL,
        NULL,        NULL,        NULL};
    sp_sim *sim = NULL;
    sp_status st = sp_simulate_pipeline(ctx, &pl, true, &sim);
    SP_CHECK_STATUS(st, SP_OK);
    if (st != SP_OK) {
        fprintf(stderr, "%s P=%d V=%d M=%d: %s\n", sp_schedule_name(sched), P, V, M,
                sp_ctx_get_errmsg(ctx));
        return 0;
    }
    double *start[16], *end[16], busy[16];
    int peak[16];
    for (int d = 0; d < P; d++) {
        start[d] = calloc((size_t)ranks[d].n + 1, sizeof(double));
        end[d] = calloc((size_t)ranks[d].n + 1, sizeof(double));
    }
    double it = relax(ranks, P, K, M, layout_v, f, b, w, send, start, end, busy, peak);
    int ok = CLOSE(sp_sim_get_summary(sim)->iteration_ms, it);
    size_t at = 0;
    for (int d = 0; d < P; d++) {
        const sp_sim_device *dv = sp_sim_get_device(sim, (size_t)d);
        ok &= CLOSE(dv->busy_ms, busy[d]) && (int)dv->peak_inflight == peak[d];
        for (int i = 0; i < ranks[d].n; i++, at++) {
            const sp_sim_op *op = sp_sim_get_op(sim, at);
            const struct act *a = &ranks[d].a[i];
            ok &= op && op->kind == a->kind && (int)op->stage == a->stage &&
                  (int)op->micro_batch == a->mb && CLOSE(op->start_ms, start[d][i]) &&
                  CLOSE(op->end_ms, end[d][i]);
            if (a->kind == 'O')
                ok &= op && (int)op->stage2 == a->stage2 && (int)op->micro_batch2 == a->mb2;
        }
        free(start[d]);
        free(end[d]);
        free(ranks[d].a);
    }
    ok &= at == sp_sim_get_op_count(sim);
    /* the order written as torch's CSV reads back to the same op lists */
    char *csv = NULL;
    struct sp_sched_op *built = NULL, *read = NULL;
    size_t *boff = NULL, *roff = NULL;
    SP_CHECK_STATUS(sp_schedule_to_csv(ctx, &pl, &csv), SP_OK);
    SP_CHECK_STATUS(sp_schedule_build(ctx, &pl, &built, &boff), SP_OK);
    if (csv && built) {
        SP_CHECK_STATUS(sp_schedule_parse_csv(ctx, "rt.csv", csv, strlen(csv), &pl, &read, &roff),
                        SP_OK);
        int same = read && roff[P] == boff[P];
        for (size_t i = 0; same && i < boff[P]; i++)
            same = read[i].kind == built[i].kind && read[i].stage == built[i].stage &&
                   read[i].mb == built[i].mb && read[i].stage2 == built[i].stage2 &&
                   read[i].mb2 == built[i].mb2;
        for (int d = 0; same && d <= P; d++)
            same = roff[d] == boff[d];
        ok &= same;
    }
    sp_free(csv);
    sp_free(built);
    sp_free(boff);
    sp_free(read);
    sp_free(roff);
    if (!ok)
        fprintf(stderr, "%s P=%d V=%d M=%d random=%d send=%d: differs (iteration %.9g vs %.9g)\n",
                sp_schedule_name(sched), P, V, M, random_times, with_send,
                sp_sim_get_summary(sim)->iteration_ms, it);
    SP_CHECK(ok);
    sp_sim_destroy(sim);
    return ok;
}

static void test_against_transcription(void) {
    int cases = 0;
    for (int P = 1; P <= 5; P++)
        for (int M = 1; M <= 4 * P + 3; M++)
            for (int rt = 0; rt < 2; rt++) {
                int send = rt && M % 2;
                for (int V = 2; V <= 3; V++) {
                    int rounds = M / P > 1 ? M / P : 1;
                    if (M % rounds == 0) {
                        cases += compare(SP_SCHEDULE_INTERLEAVED, P, V, M, rt, send);
                        cases += compare(SP_SCHEDULE_INTERLEAVED_ZB, P, V, M, rt, send);
                    }
                }
                cases += compare(SP_SCHEDULE_ZBV, P, 2, M, rt, send);
                if (M >= 2 * P)
                    cases += compare(SP_SCHEDULE_DUALPIPEV, P, 2, M, rt, send);
            }
    printf("torch schedules: %d cases equal the transcription\n", cases);
}

/* ZBV with f = i = w = t and M >= 2P - 1: 6Mt + (P-1)t, and 2P chunk activations at the peak
 * of every device */
static void test_zbv_closed_form(void) {
    double f[32], b[32], w[32], send[32] = {0};
    for (uint32_t P = 1; P <= 8; P++)
        for (uint32_t M = 2 * P - 1; M <= 4 * P; M++) {
            for (uint32_t k = 0; k < 2 * P; k++)
                f[k] = 1.5, w[k] = 1.5, b[k] = 3;
            struct sp_pipeline pl = {
                P, 2, M, SP_SCHEDULE_ZBV, SP_CHUNKS_V, f, b, w, send, NULL, NULL, NULL, NULL};
            sp_sim *sim = NULL;
            SP_CHECK_STATUS(sp_simulate_pipeline(ctx, &pl, false, &sim), SP_OK);
            if (!sim)
                continue;
            const sp_sim_summary *m = sp_sim_get_summary(sim);
            SP_CHECK(CLOSE(m->iteration_ms, 6 * M * 1.5 + (P - 1) * 1.5));
            SP_CHECK(CLOSE(m->closed_form_ms, m->iteration_ms));
            for (uint32_t d = 0; d < P; d++)
                SP_CHECK(sp_sim_get_device(sim, d)->peak_inflight == 2 * P);
            sp_sim_destroy(sim);
        }
}

/* DualPipeV with equal chunks, f = i and w <= f: each device idles (P-1)(F&B + B - 3W), the
 * DualPipe README's bubble with its PP = 2P ranks, F&B = f + b, B = b the full backward; and
 * where it fails (f != i, or w > f) the simulation says otherwise */
static void test_dualpipev_bubble(void) {
    double f[32], b[32], w[32], send[32] = {0};
    const double cases[][4] = {/* f, i, w, holds */ {1, 1, 1, 1},
                               {1, 1, 0.5, 1},
                               {1.5, 1.5, 0.2, 1},
                               {2, 1, 0.5, 0},
                               {1, 2, 1, 0},
                               {1, 0.5, 0.5, 0},
                               {1, 1, 1.5, 0}};
    for (uint32_t P = 2; P <= 8; P++)
        for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
            uint32_t M = 2 * P + P % 3;
            for (uint32_t k = 0; k < 2 * P; k++)
                f[k] = cases[c][0], w[k] = cases[c][2], b[k] = cases[c][1] + cases[c][2];
            struct sp_pipeline pl = {
                P, 2, M, SP_SCHEDULE_DUALPIPEV, SP_CHUNKS_V, f, b, w, send, NULL, NULL, NULL, NULL};
            sp_sim *sim = NULL;
            SP_CHECK_STATUS(sp_simulate_pipeline(ctx, &pl, false, &sim), SP_OK);
            if (!sim)
                continue;
            double FB = f[0] + b[0], bubble = (P - 1) * (FB + b[0] - 3 * w[0]);
            double it = sp_sim_get_summary(sim)->iteration_ms, busy = 2 * M * FB;
            bool equal = CLOSE(it - busy, bubble);
            SP_CHECK(equal == (cases[c][3] != 0));
            SP_CHECK(cases[c][3] == 0 || CLOSE(sp_sim_get_summary(sim)->closed_form_ms, it));
            for (uint32_t d = 0; d < P; d++) /* every device is idle the same */
                SP_CHECK(CLOSE(it - sp_sim_get_device(sim, d)->busy_ms, it - busy));
            sp_sim_destroy(sim);
        }
}

int main(void) {
    sp_ctx_create(&ctx);
    test_against_transcription();
    test_zbv_closed_form();
    test_dualpipev_bubble();
    sp_ctx_destroy(ctx);
    return sp_test_finish("test_schedule_torch");
}

/* tests/unit/test_simulate.c: the schedule simulator against closed forms and bounds
 * (docs/schedules.md §3-§6): equal stages to 1e-9, the exact GPipe formula and the 1F1B
 * bounds on random unequal stages, transfer delays worked by hand, in-flight counts. */
#include <math.h>
#include <stagepart/stagepart.h>

#include "../test.h"
#include "sim_impl.h"

static sp_ctx *ctx;

static sp_sim *run(sp_schedule sched, uint32_t P, uint32_t V, uint32_t M, const double *f,
                   const double *b, const double *w, const double *send) {
    static const double zeros[4096];
    uint64_t saved[4096];
    for (int i = 0; i < 4096; i++)
        saved[i] = 10;
    struct sp_pipeline pl = {
        P,     V,    M,    sched, sp_schedule_chunk_layout(sched), f, b, w, send ? send : zeros,
        saved, NULL, NULL, NULL};
    sp_sim *sim = NULL;
    sp_status st = sp_simulate_pipeline(ctx, &pl, true, &sim);
    if (st != SP_OK)
        fprintf(stderr, "simulate: %s\n", sp_ctx_get_errmsg(ctx));
    return sim;
}

static void fill(double *a, uint32_t n, double v) {
    for (uint32_t i = 0; i < n; i++)
        a[i] = v;
}

#define CLOSE(a, b) (fabs((double)(a) - (double)(b)) <= 1e-9 * fmax(1, fabs((double)(b))))

static void test_equal_stages(void) {
    static double f[1024], b[1024], w[1024];
    struct {
        sp_schedule s;
        uint32_t P, V, M;
        double F, B, W, expected_iteration;
    } cases[] = {
        {SP_SCHEDULE_1F1B, 4, 1, 8, 1, 2, 0, 33},
        {SP_SCHEDULE_GPIPE, 4, 1, 8, 1, 2, 0, 33},
        {SP_SCHEDULE_1F1B, 8, 1, 32, 1, 2, 0, 39 * 3},
        {SP_SCHEDULE_1F1B, 16, 1, 64, 1, 2, 0, 79 * 3},
        {SP_SCHEDULE_1F1B, 8, 1, 3, 1, 2, 0, 10 * 3}, /* M < P */
        {SP_SCHEDULE_GPIPE, 8, 1, 1, 1, 2, 0, 8 * 3},
        /* interleaved: iteration = M(F+B) (1 + (P-1)/(V M)); F, B per device */
        {SP_SCHEDULE_INTERLEAVED, 8, 2, 32, 0.5, 1, 0, 32 * 3 * (1 + 7.0 / 64)},
        {SP_SCHEDULE_INTERLEAVED, 8, 4, 64, 0.25, 0.5, 0, 64 * 3 * (1 + 7.0 / 256)},
        {SP_SCHEDULE_INTERLEAVED, 4, 2, 4, 0.5, 1, 0, 4 * 3 * (1 + 3.0 / 8)},
        /* ZB-H1: bubble (P-1)(F+B-W), B the input part; b below is B + W */
        {SP_SCHEDULE_ZB_H1, 8, 1, 32, 1, 2, 1, 32 * 3 + 7},
        {SP_SCHEDULE_ZB_H1, 16, 1, 64, 1, 2.0, 0.8, 64 * 3 + 15 * (1 + 1.2 - 0.8)},
        {SP_SCHEDULE_ZB_H1, 8, 1, 32, 1, 2.0, 0.5, 32 * 3 + 7 * (1 + 1.5 - 0.5)},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        uint32_t K = cases[i].P * cases[i].V;
        fill(f, K, cases[i].F);
        fill(b, K, cases[i].B);
        fill(w, K, cases[i].W);
        sp_sim *sim = run(cases[i].s, cases[i].P, cases[i].V, cases[i].M, f, b, w, NULL);
        SP_CHECK(sim != NULL);
        if (!sim)
            continue;
        const sp_sim_summary *m = sp_sim_get_summary(sim);
        SP_CHECK_MSG(CLOSE(m->iteration_ms, cases[i].expected_iteration),
                     "case %zu (%s P=%u V=%u M=%u): %.12g, expected %.12g", i,
                     sp_schedule_name(cases[i].s), cases[i].P, cases[i].V, cases[i].M,
                     m->iteration_ms, cases[i].expected_iteration);
        SP_CHECK(m->equal_stages && CLOSE(m->closed_form_ms, m->iteration_ms));
        double busy = 0;
        for (size_t d = 0; d < sp_sim_get_device_count(sim); d++)
            busy += sp_sim_get_device(sim, d)->busy_ms;
        SP_CHECK(CLOSE(m->bubble_fraction, 1 - busy / (cases[i].P * m->iteration_ms)));
        sp_sim_destroy(sim);
    }
    /* bubble fractions of schedules.md §4 */
    fill(f, 16, 1);
    fill(b, 16, 2);
    sp_sim *sim = run(SP_SCHEDULE_1F1B, 8, 1, 32, f, b, NULL, NULL);
    SP_CHECK(CLOSE(sp_sim_get_summary(sim)->bubble_fraction, 7.0 / 39));
    sp_sim_destroy(sim);
}

static void test_inflight(void) {
    static double f[16], b[16];
    fill(f, 16, 1);
    fill(b, 16, 2);
    sp_sim *sim = run(SP_SCHEDULE_1F1B, 8, 1, 32, f, b, NULL, NULL);
    for (uint32_t d = 0; d < 8; d++) {
        SP_CHECK_EQ_INT(sp_sim_get_device(sim, d)->peak_inflight, 8 - d);
        SP_CHECK_EQ_INT(sp_sim_get_device(sim, d)->peak_memory_bytes, (8 - d) * 10);
    }
    sp_sim_destroy(sim);
    sim = run(SP_SCHEDULE_1F1B, 8, 1, 3, f, b, NULL, NULL);
    SP_CHECK_EQ_INT(sp_sim_get_device(sim, 0)->peak_inflight, 3); /* min(P - s, M) */
    sp_sim_destroy(sim);
    sim = run(SP_SCHEDULE_GPIPE, 4, 1, 16, f, b, NULL, NULL);
    for (uint32_t d = 0; d < 4; d++)
        SP_CHECK_EQ_INT(sp_sim_get_device(sim, d)->peak_inflight, 16);
    sp_sim_destroy(sim);
    /* the partitioner's memory model (sp_stage_inflight) is the simulator's count, schedule by
     * schedule: a plan made for GPipe holds M micro-batches, not 1F1B's P - s */
    static double w[16];
    fill(w, 16, 0.5);
    const sp_schedule one_chunk[] = {SP_SCHEDULE_GPIPE, SP_SCHEDULE_1F1B, SP_SCHEDULE_ZB_H1};
    for (size_t i = 0; i < 3; i++)
        for (uint32_t P = 1; P <= 8; P++)
            for (uint32_t M = 1; M <= 20; M++) {
                sim = run(one_chunk[i], P, 1, M, f, b, w, NULL);
                bool ok = sim != NULL;
                for (uint32_t d = 0; ok && d < P; d++)
                    ok = sp_sim_get_device(sim, d)->peak_inflight ==
                         sp_stage_inflight(one_chunk[i], d, P, M);
                if (!ok)
                    fprintf(stderr, "  in flight: %s P=%u M=%u differs\n",
                            sp_schedule_name(one_chunk[i]), P, M);
                SP_CHECK(ok);
                sp_sim_destroy(sim);
            }
}

static void test_transfer_delays(void) {
    /* schedules.md §6: p = 8, m = 64, F = 1, B = 2, c = 0.5: GPipe 220 exactly */
    static double f[8], b[8], c[8];
    fill(f, 8, 1);
    fill(b, 8, 2);
    fill(c, 8, 0.5);
    sp_sim *sim = run(SP_SCHEDULE_GPIPE, 8, 1, 64, f, b, NULL, c);
    SP_CHECK(CLOSE(sp_sim_get_summary(sim)->iteration_ms, (64 + 7) * 3 + 2 * 7 * 0.5));
    SP_CHECK(!sp_sim_get_summary(sim)->equal_stages);
    sp_sim_destroy(sim);
    /* 1F1B pays c per micro-batch: the fitted form (m+p-1)(F+B) + c[2m(p-1)/p + 2(p-2)] = 275 */
    sim = run(SP_SCHEDULE_1F1B, 8, 1, 64, f, b, NULL, c);
    SP_CHECK_MSG(CLOSE(sp_sim_get_summary(sim)->iteration_ms, 275), "%.12g",
                 sp_sim_get_summary(sim)->iteration_ms);
    sp_sim_destroy(sim);
    /* by hand: P = 2, M = 1, f = (1, 2), b = (3, 4), c = 0.5:
     * F0 on d0 [0,1], F0 on d1 [1.5,3.5], B0 on d1 [3.5,7.5], B0 on d0 [8,11] */
    double f2[2] = {1, 2}, b2[2] = {3, 4}, c2[2] = {0.5, 0};
    sim = run(SP_SCHEDULE_1F1B, 2, 1, 1, f2, b2, NULL, c2);
    SP_CHECK(sp_sim_get_op_count(sim) == 4);
    const sp_sim_op *last = sp_sim_get_op(sim, 1); /* device 0's second op: B */
    SP_CHECK(last->kind == 'B' && CLOSE(last->start_ms, 8) && CLOSE(last->end_ms, 11));
    const sp_sim_op *f1 = sp_sim_get_op(sim, 2);
    SP_CHECK(f1->kind == 'F' && f1->device == 1 && CLOSE(f1->start_ms, 1.5));
    SP_CHECK(CLOSE(sp_sim_get_summary(sim)->iteration_ms, 11));
    sp_sim_destroy(sim);
}

static uint64_t rng = 7;
static double unit(void) {
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(rng >> 11) / 9007199254740992.0;
}

static void test_unequal_bounds(void) {
    static double f[32], b[32];
    int trials = 2000, upper_tight = 0;
    for (int t = 0; t < trials; t++) {
        uint32_t P = 2 + (uint32_t)(unit() * 10), M = 1 + (uint32_t)(unit() * 4 * P);
        bool lower_applies = M >= P; /* the warm-up argument needs P - 1 - k forwards to run */
        for (uint32_t k = 0; k < P; k++) {
            f[k] = 0.2 + unit();
            b[k] = f[k] * (1.5 + unit());
        }
        double sf = 0, sb = 0, mf = 0, mb = 0, st = 0, mt = 0;
        for (uint32_t k = 0; k < P; k++) {
            sf += f[k];
            sb += b[k];
            mf = fmax(mf, f[k]);
            mb = fmax(mb, b[k]);
            st += f[k] + b[k];
            mt = fmax(mt, f[k] + b[k]);
        }
        sp_sim *g = run(SP_SCHEDULE_GPIPE, P, 1, M, f, b, NULL, NULL);
        double gpipe = sf + sb + (M - 1) * (mf + mb);
        SP_CHECK_MSG(CLOSE(sp_sim_get_summary(g)->iteration_ms, gpipe), "gpipe %.12g vs %.12g",
                     sp_sim_get_summary(g)->iteration_ms, gpipe);
        sp_sim_destroy(g);
        sp_sim *o = run(SP_SCHEDULE_1F1B, P, 1, M, f, b, NULL, NULL);
        double T = sp_sim_get_summary(o)->iteration_ms;
        double upper = st + (M - 1) * mt; /* Alpa's formula */
        double lower = 0;
        for (uint32_t k = 0; k < P; k++) {
            double before = 0, after = 0;
            for (uint32_t i = 0; i < k; i++)
                before += f[i] + b[i];
            for (uint32_t i = k + 1; i < P; i++)
                after += f[i] + b[i];
            double lb = before + M * (f[k] + b[k]) + fmax(0, after - (P - 1 - k) * f[k]) +
                        fmax(0, after - (P - 1 - k) * b[k]);
            lower = fmax(lower, lb);
        }
        SP_CHECK_MSG(T <= upper + 1e-9, "1F1B %.9g above Alpa's bound %.9g", T, upper);
        SP_CHECK_MSG(!lower_applies || T >= lower - 1e-9,
                     "1F1B %.9g below the lower bound %.9g (P=%u M=%u)", T, lower, P, M);
        upper_tight += T > upper - 1e-9;
        sp_sim_destroy(o);
    }
    printf("1f1b: %d of %d random instances reach Alpa's upper bound\n", upper_tight, trials);
}

/* Schedules without flushes (async.c): M micro-batches take M periods, the period the largest
 * over stage ranges [s, e] of their work and both directions of their transfers per e - s + 1
 * micro-batches (checked here by brute force over the ranges); with no transfer delays, the
 * slowest stage's f + b. And the simulation agrees: a long run completes micro-batches at that
 * rate once past its transient. */
static double brute_period(uint32_t P, const double *f, const double *b, const double *send) {
    double best = 0;
    for (uint32_t s = 0; s < P; s++)
        for (uint32_t e = s; e < P; e++) {
            double sum = 0;
            for (uint32_t k = s; k <= e; k++)
                sum += f[k] + b[k] + (k < e ? 2 * send[k] : 0);
            best = fmax(best, sum / (double)(e - s + 1));
        }
    return best;
}

/* the end of micro-batch mb's backward on stage 0 in a simulation that kept its ops */
static double completion(const sp_sim *sim, uint32_t mb) {
    for (size_t i = 0; i < sp_sim_get_op_count(sim); i++) {
        const sp_sim_op *op = sp_sim_get_op(sim, i);
        if (op->stage == 0 && op->micro_batch == mb && op->kind == 'B')
            return op->end_ms;
    }
    return (double)NAN;
}

static void test_async_steady_state(void) {
    static double f[32], b[32], send[32];
    int trials = 400, round_trips = 0;
    double worst_rate = 0;
    for (int t = 0; t < trials; t++) {
        uint32_t P = 1 + (uint32_t)(unit() * 10), M = 1 + (uint32_t)(unit() * 3 * P);
        bool delays = t % 2;
        double slowest = 0;
        for (uint32_t k = 0; k < P; k++) {
            f[k] = 0.2 + unit();
            b[k] = f[k] * (1.5 + unit());
            send[k] = delays && k + 1 < P ? 2 * unit() : 0;
            slowest = fmax(slowest, f[k] + b[k]);
        }
        double period = brute_period(P, f, b, send);
        round_trips += period > slowest + 1e-9;
        for (int v = 0; v < 2; v++) {
            sp_sim *sim =
                run(v ? SP_SCHEDULE_2BW : SP_SCHEDULE_PIPEDREAM, P, 1, M, f, b, NULL, send);
            double T = sp_sim_get_summary(sim)->iteration_ms;
            SP_CHECK_MSG(CLOSE(T, M * period), "%s P=%u M=%u: %.12g, M periods %.12g",
                         v ? "2bw" : "pipedream", P, M, T, M * period);
            SP_CHECK_EQ_INT(sp_sim_get_summary(sim)->micro_batches, M);
            sp_sim_destroy(sim);
        }
        /* the event simulation of a long run: micro-batches 40P .. 70P, past the transient and
         * before the drain, complete at the rate */
        sp_sim *lng = run(SP_SCHEDULE_PIPEDREAM, P, 1, 80 * P - 3 * P + 1, f, b, NULL, send);
        double rate = (completion(lng, 70 * P - 1) - completion(lng, 40 * P - 1)) / (30.0 * P);
        worst_rate = fmax(worst_rate, fabs(rate / period - 1));
        SP_CHECK_MSG(fabs(rate / period - 1) < 0.01, "P=%u: simulated rate %.9g, period %.9g", P,
                     rate, period);
        sp_sim_destroy(lng);
    }
    printf("pipedream, 2bw: M periods on %d random instances (%d set by a round trip); long runs "
           "within %.2g of the period\n",
           trials, round_trips, worst_rate);
    SP_CHECK(round_trips > 0);
}

static void test_errors(void) {
    static double f[8], b[8], w[8];
    fill(f, 8, 1);
    fill(b, 8, 2);
    fill(w, 8, -1);
    struct sp_pipeline pl = {4,    1,    8,   SP_SCHEDULE_ZB_H1, SP_CHUNKS_LOOP, f, b, w, f, NULL,
                             NULL, NULL, NULL};
    sp_sim *sim = NULL;
    SP_CHECK_STATUS(sp_simulate_pipeline(ctx, &pl, true, &sim), SP_ERR_INVALID_ARG);
    SP_CHECK_CONTAINS(sp_ctx_get_errmsg(ctx), "zb-h1 needs wgrad_ms");
    pl.schedule = SP_SCHEDULE_INTERLEAVED;
    SP_CHECK_STATUS(sp_simulate_pipeline(ctx, &pl, true, &sim), SP_ERR_INVALID_ARG);
    SP_CHECK_CONTAINS(sp_ctx_get_errmsg(ctx), "needs a plan made with --chunks V");
    pl.V = 2;
    pl.M = 6; /* torch's rounds: max(1, 6 / 4) = 1 divides 6 */
    SP_CHECK_STATUS(sp_simulate_pipeline(ctx, &pl, true, &sim), SP_OK);
    sp_sim_destroy(sim);
    sim = NULL;
    pl.M = 9; /* 2 rounds do not divide 9 */
    SP_CHECK_STATUS(sp_simulate_pipeline(ctx, &pl, true, &sim), SP_ERR_INVALID_ARG);
    SP_CHECK_CONTAINS(sp_ctx_get_errmsg(ctx), "M = 9, P = 4");
    pl.schedule = SP_SCHEDULE_ZBV; /* chunks in a loop */
    pl.M = 8;
    SP_CHECK_STATUS(sp_simulate_pipeline(ctx, &pl, true, &sim), SP_ERR_INVALID_ARG);
    SP_CHECK_CONTAINS(sp_ctx_get_errmsg(ctx), "placed in a loop");
    pl.layout = SP_CHUNKS_V;
    pl.schedule = SP_SCHEDULE_INTERLEAVED;
    SP_CHECK_STATUS(sp_simulate_pipeline(ctx, &pl, true, &sim), SP_ERR_INVALID_ARG);
    SP_CHECK_CONTAINS(sp_ctx_get_errmsg(ctx), "placed V-shape");
    pl.schedule = SP_SCHEDULE_ZBV; /* no wgrad */
    SP_CHECK_STATUS(sp_simulate_pipeline(ctx, &pl, true, &sim), SP_ERR_INVALID_ARG);
    SP_CHECK_CONTAINS(sp_ctx_get_errmsg(ctx), "zbv needs wgrad_ms");
    fill(w, 8, 0.5);
    pl.schedule = SP_SCHEDULE_DUALPIPEV;
    pl.M = 7;
    SP_CHECK_STATUS(sp_simulate_pipeline(ctx, &pl, true, &sim), SP_ERR_INVALID_ARG);
    SP_CHECK_CONTAINS(sp_ctx_get_errmsg(ctx), "M >= 2P = 8");
    pl.layout = SP_CHUNKS_LOOP;
    pl.schedule = SP_SCHEDULE_1F1B;
    SP_CHECK_STATUS(sp_simulate_pipeline(ctx, &pl, true, &sim), SP_ERR_INVALID_ARG);
    SP_CHECK_CONTAINS(sp_ctx_get_errmsg(ctx), "simulate it with --schedule interleaved");
    SP_CHECK(sim == NULL);
}

int main(void) {
    sp_ctx_create(&ctx);
    test_equal_stages();
    test_inflight();
    test_transfer_delays();
    test_unequal_bounds();
    test_async_steady_state();
    test_errors();
    sp_ctx_destroy(ctx);
    return sp_test_finish("test_simulate");
}

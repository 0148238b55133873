/* tests/oracle/test_ilp.c: the GLPK program against the exact DP and brute force.
 *
 * Bottleneck (V = 1, with memory limits and forbidden cuts): the same optimal bottleneck as the
 * DP. Interleaved chunks (V = 2, 3), range and deviation: brute force over every split. Plus the
 * time limit (best plan, not optimal) and the refusals. Skipped (77) in builds without GLPK. */
#include <inttypes.h>
#include <math.h>
#include <stagepart/stagepart.h>

#include "../test.h"

static sp_ctx *ctx;
static uint64_t rng = 11;
static unsigned rnd(unsigned n) {
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (unsigned)((rng >> 33) % n);
}

struct inst {
    int n;
    int64_t w[24]; /* ticks: fwd only */
    int cut[24];
    unsigned mem[24], saved[24];
};

static sp_profile *profile_of(const struct inst *in) {
    char buf[8192];
    size_t len = (size_t)snprintf(buf, sizeof buf,
                                  "{\"format\":\"stagepart-profile\",\"version\":1,\"model\":\"i\","
                                  "\"micro_batch_size\":1,\"layers\":[");
    for (int i = 0; i < in->n; i++)
        len += (size_t)snprintf(buf + len, sizeof buf - len,
                                "%s{\"name\":\"l%d\",\"fwd_ms\":%" PRId64 ".%06" PRId64
                                ",\"bwd_ms\":0,\"memory_bytes\":%u,\"saved_bytes\":%u,"
                                "\"cut_after\":%s}",
                                i ? "," : "", i, in->w[i] / 1000000, in->w[i] % 1000000, in->mem[i],
                                in->saved[i], in->cut[i] ? "true" : "false");
    snprintf(buf + len, sizeof buf - len, "]}");
    sp_profile *p = NULL;
    if (sp_profile_parse(ctx, "ilp.json", buf, strlen(buf), &p) != SP_OK)
        fprintf(stderr, "%s\n", sp_ctx_get_errmsg(ctx));
    return p;
}

static sp_status plan_with(const sp_profile *p, uint32_t P, uint32_t V, sp_solver solver,
                           sp_objective obj, uint64_t mem, sp_plan **out) {
    sp_partition_opts o;
    sp_partition_opts_init(&o);
    o.stages = P;
    o.chunks = V;
    o.solver = solver;
    o.objective = obj;
    o.memory_limit_bytes = mem;
    o.micro_batches = 4 * P;
    o.time_limit_s = 60;
    return sp_partition(ctx, p, &o, out);
}

/* brute force over splits into K stages: min of f(device loads), f = max, range or deviation */
static int64_t best_brute(const struct inst *in, int K, int P, int which, int *b, int s,
                          int64_t best) {
    if (s == K) {
        int64_t load[8] = {0};
        for (int k = 0; k < K; k++)
            for (int l = b[k]; l < b[k + 1]; l++)
                load[k % P] += in->w[l];
        int64_t mx = 0, mn = INT64_MAX, sum = 0;
        for (int d = 0; d < P; d++) {
            mx = load[d] > mx ? load[d] : mx;
            mn = load[d] < mn ? load[d] : mn;
            sum += load[d];
        }
        int64_t v = mx;
        if (which == 1)
            v = mx - mn;
        if (which == 2) { /* sum |load - mean| x P, integer */
            v = 0;
            for (int d = 0; d < P; d++)
                v += llabs(load[d] * P - sum);
        }
        return v < best ? v : best;
    }
    if (s == K - 1) {
        b[K] = in->n;
        return best_brute(in, K, P, which, b, K, best);
    }
    for (int e = b[s] + 1; e <= in->n - (K - 1 - s); e++) {
        if (!in->cut[e - 1])
            continue;
        b[s + 1] = e;
        best = best_brute(in, K, P, which, b, s + 1, best);
    }
    return best;
}

static int64_t plan_value(const sp_plan *plan, const struct inst *in, int P, int which) {
    int64_t load[8] = {0};
    for (size_t k = 0; k < sp_plan_get_stage_count(plan); k++) {
        const sp_stage *s = sp_plan_get_stage(plan, k);
        for (size_t l = s->first_layer; l <= s->last_layer; l++)
            load[k % (size_t)P] += in->w[l];
    }
    int64_t mx = 0, mn = INT64_MAX, sum = 0;
    for (int d = 0; d < P; d++) {
        mx = load[d] > mx ? load[d] : mx;
        mn = load[d] < mn ? load[d] : mn;
        sum += load[d];
    }
    if (which == 1)
        return mx - mn;
    if (which == 2) {
        int64_t v = 0;
        for (int d = 0; d < P; d++)
            v += llabs(load[d] * P - sum);
        return v;
    }
    return mx;
}

static void random_inst(struct inst *in, int n) {
    in->n = n;
    for (int i = 0; i < n; i++) {
        in->w[i] = (int64_t)(1 + rnd(9)) * 1000000 + (rnd(2) ? (int64_t)rnd(1000) * 1000 : 0);
        in->cut[i] = rnd(5) != 0;
        in->mem[i] = rnd(50);
        in->saved[i] = rnd(20);
    }
}

static void test_against_dp(void) {
    int agree = 0;
    for (int t = 0; t < 150; t++) {
        struct inst in;
        random_inst(&in, 4 + (int)rnd(16));
        uint32_t P = 1 + rnd(5);
        uint64_t mem = rnd(2) ? 0 : 250 + rnd(300);
        sp_profile *p = profile_of(&in);
        sp_plan *dp = NULL, *ilp = NULL;
        sp_status a = plan_with(p, P, 1, SP_SOLVER_DP, SP_OBJECTIVE_BOTTLENECK, mem, &dp);
        sp_status b = plan_with(p, P, 1, SP_SOLVER_ILP, SP_OBJECTIVE_BOTTLENECK, mem, &ilp);
        SP_CHECK_MSG(a == b, "dp %s, ilp %s (%s)", sp_status_name(a), sp_status_name(b),
                     sp_ctx_get_errmsg(ctx));
        if (a == SP_OK && b == SP_OK) {
            SP_CHECK(sp_plan_get_summary(ilp)->optimal);
            SP_CHECK_MSG(fabs(sp_plan_get_summary(dp)->bottleneck_ms -
                              sp_plan_get_summary(ilp)->bottleneck_ms) < 1e-9,
                         "dp %.6f vs ilp %.6f", sp_plan_get_summary(dp)->bottleneck_ms,
                         sp_plan_get_summary(ilp)->bottleneck_ms);
            for (size_t s = 0; mem && s < sp_plan_get_stage_count(ilp); s++)
                SP_CHECK(sp_plan_get_stage(ilp, s)->memory_bytes <= mem);
            agree++;
        }
        sp_plan_destroy(dp);
        sp_plan_destroy(ilp);
        sp_profile_destroy(p);
    }
    printf("ilp = dp on %d feasible instances\n", agree);
}

static void test_against_brute(void) {
    const char *names[] = {"bottleneck", "range", "deviation"};
    sp_objective objs[] = {SP_OBJECTIVE_BOTTLENECK, SP_OBJECTIVE_RANGE, SP_OBJECTIVE_DEVIATION};
    int checked = 0;
    for (int t = 0; t < 120; t++) {
        struct inst in;
        random_inst(&in, 6 + (int)rnd(6));
        for (int i = 0; i < in.n; i++)
            in.cut[i] = 1;
        int P = 2 + (int)rnd(2), V = 1 + (int)rnd(3), which = (int)rnd(3);
        if (P * V > in.n)
            continue;
        int b[32] = {0};
        int64_t brute = best_brute(&in, P * V, P, which, b, 0, INT64_MAX);
        sp_profile *p = profile_of(&in);
        sp_plan *plan = NULL;
        sp_status st = plan_with(p, (uint32_t)P, (uint32_t)V, SP_SOLVER_ILP, objs[which], 0, &plan);
        SP_CHECK_MSG(st == SP_OK, "%s: %s", names[which], sp_ctx_get_errmsg(ctx));
        if (st == SP_OK) {
            int64_t got = plan_value(plan, &in, P, which);
            SP_CHECK_MSG(sp_plan_get_summary(plan)->optimal, "%s not proven", names[which]);
            SP_CHECK_MSG(got == brute, "%s P=%d V=%d: ilp %" PRId64 ", brute force %" PRId64,
                         names[which], P, V, got, brute);
            checked++;
        }
        sp_plan_destroy(plan);
        sp_profile_destroy(p);
    }
    printf("ilp = brute force on %d instances (chunks, range, deviation)\n", checked);
}

/* recomputation: brute force over splits x subsets of recomputed layers, bottleneck under a
 * memory limit (fwd w, bwd 0, 1F1B in-flight counts); rc[l] < 0: the layer cannot recompute */
static int64_t brute_recompute(const struct inst *in, const int64_t *rc, int P, int M,
                               uint64_t cap) {
    int64_t best = INT64_MAX;
    int b[8];
    b[0] = 0;
    b[P] = in->n;
    for (unsigned mask = 0; mask < (1u << (in->n - 1)); mask++) { /* cut positions */
        if (__builtin_popcount(mask) != P - 1)
            continue;
        int s = 1;
        bool allowed = true;
        for (int i = 1; i < in->n; i++)
            if (mask & (1u << (i - 1))) {
                allowed &= in->cut[i - 1] != 0;
                b[s++] = i;
            }
        if (!allowed)
            continue;
        for (unsigned again = 0; again < (1u << in->n); again++) {
            bool valid = true;
            for (int l = 0; l < in->n; l++)
                valid &= !(again & (1u << l)) || rc[l] >= 0;
            int64_t mx = 0;
            bool fits = valid;
            for (int k = 0; k < P && fits; k++) {
                uint64_t need = 0;
                uint64_t infl = (uint64_t)(P - k) < (uint64_t)M ? (uint64_t)(P - k) : (uint64_t)M;
                int64_t t = 0;
                for (int l = b[k]; l < b[k + 1]; l++) {
                    bool r = again & (1u << l);
                    t += in->w[l] + (r ? rc[l] : 0);
                    need += in->mem[l] + (r ? 0 : infl * in->saved[l]);
                }
                fits = need <= cap;
                mx = t > mx ? t : mx;
            }
            if (fits && mx < best)
                best = mx;
        }
    }
    return best;
}

static sp_profile *recompute_profile(const struct inst *in, const int64_t *rc) {
    char buf[8192];
    size_t len = (size_t)snprintf(buf, sizeof buf,
                                  "{\"format\":\"stagepart-profile\",\"version\":1,"
                                  "\"model\":\"r\",\"micro_batch_size\":1,\"layers\":[");
    for (int i = 0; i < in->n; i++) {
        char extra[64] = "";
        if (rc[i] >= 0)
            snprintf(extra, sizeof extra, ",\"recompute_ms\":%" PRId64, rc[i] / 1000000);
        len += (size_t)snprintf(buf + len, sizeof buf - len,
                                "%s{\"name\":\"l%d\",\"fwd_ms\":%" PRId64
                                ",\"bwd_ms\":0%s,\"memory_bytes\":%u,\"saved_bytes\":%u,"
                                "\"cut_after\":%s}",
                                i ? "," : "", i, in->w[i] / 1000000, extra, in->mem[i],
                                in->saved[i], in->cut[i] ? "true" : "false");
    }
    snprintf(buf + len, sizeof buf - len, "]}");
    sp_profile *p = NULL;
    SP_CHECK_STATUS(sp_profile_parse(ctx, "rc.json", buf, strlen(buf), &p), SP_OK);
    return p;
}

/* Both paths: the exact chain search with each stage's cheapest recomputation (the default),
 * with forbidden cuts too, and the program alone (ilp_cold), which chooses per block and so gets
 * every cut allowed. Whole milliseconds, so every sum is exact. */
static void test_recompute(void) {
    int checked[2] = {0, 0}, helped = 0;
    for (int t = 0; t < 240; t++) {
        struct inst in;
        int64_t rc[24];
        random_inst(&in, 3 + (int)rnd(6));
        bool uniform = rnd(3) == 0; /* equal blocks: the knapsack's many equal subsets */
        bool cold = t % 3 == 0;
        for (int i = 0; i < in.n; i++) {
            in.cut[i] = cold || rnd(4) != 0;
            in.w[i] = uniform ? 4000000 : (int64_t)(1 + rnd(9)) * 1000000;
            in.saved[i] = uniform ? 20 : 5 + rnd(30);
            rc[i] = rnd(5) == 0 ? -1 : (uniform ? 2000000 : (int64_t)rnd(6) * 1000000);
        }
        int P = 1 + (int)rnd(4);
        if (P > in.n)
            continue;
        uint64_t cap = 40 + rnd(160);
        int64_t brute = brute_recompute(&in, rc, P, 4 * P, cap);
        sp_profile *p = recompute_profile(&in, rc);
        sp_partition_opts o;
        sp_partition_opts_init(&o);
        o.stages = (uint32_t)P;
        o.micro_batches = (uint32_t)(4 * P);
        o.solver = SP_SOLVER_ILP;
        o.recompute = true;
        o.memory_limit_bytes = cap;
        o.ilp_cold = cold;
        sp_plan *plan = NULL;
        sp_status st = sp_partition(ctx, p, &o, &plan);
        if (brute == INT64_MAX) {
            SP_CHECK_MSG(st == SP_ERR_INFEASIBLE, "brute force found no plan, ilp%s: %s",
                         o.ilp_cold ? " (program)" : "", sp_status_name(st));
        } else {
            SP_CHECK_MSG(st == SP_OK, "%s", sp_ctx_get_errmsg(ctx));
            if (st == SP_OK) {
                double bn = sp_plan_get_summary(plan)->bottleneck_ms;
                SP_CHECK_MSG(fabs(bn - (double)brute / 1e6) < 1e-9,
                             "ilp%s %.6f, brute force %.6f (instance %d)",
                             o.ilp_cold ? " (program)" : "", bn, (double)brute / 1e6, t);
                SP_CHECK(sp_plan_get_summary(plan)->optimal);
                for (size_t s = 0; s < sp_plan_get_stage_count(plan); s++)
                    SP_CHECK(sp_plan_get_stage(plan, s)->memory_bytes <= cap);
                for (size_t l = 0; l < (size_t)in.n; l++)
                    helped += sp_plan_get_layer_recomputed(plan, l);
                checked[o.ilp_cold]++;
            }
        }
        sp_plan_destroy(plan);
        sp_profile_destroy(p);
    }
    printf("recomputation: chain search = brute force on %d instances, program on %d (%d layers "
           "recomputed)\n",
           checked[0], checked[1], helped);
    SP_CHECK(helped > 0 && checked[0] > 50 && checked[1] > 20);
}

/* Beyond brute force: the chain search against the program alone on chains of 30 to 60
 * layers, stages holding dozens of recomputable layers of a few kinds (the knapsack's ties) */
static void test_recompute_vs_program(void) {
    int agreed = 0;
    for (int t = 0; t < 6; t++) {
        int n = 30 + (int)rnd(31);
        char buf[16384];
        size_t len = (size_t)snprintf(buf, sizeof buf,
                                      "{\"format\":\"stagepart-profile\",\"version\":1,"
                                      "\"model\":\"r\",\"micro_batch_size\":1,\"layers\":[");
        uint64_t total = 0;
        for (int i = 0; i < n; i++) {
            int kind = (int)rnd(3);
            int64_t w = 2 + kind, r = rnd(6) == 0 ? -1 : 1 + kind % 2;
            unsigned saved = 10 + 5 * (unsigned)kind, mem = 3;
            total += mem + 4 * saved;
            char extra[40] = "";
            if (r >= 0)
                snprintf(extra, sizeof extra, ",\"recompute_ms\":%" PRId64, r);
            len += (size_t)snprintf(buf + len, sizeof buf - len,
                                    "%s{\"name\":\"l%d\",\"fwd_ms\":%" PRId64
                                    ",\"bwd_ms\":0%s,\"memory_bytes\":%u,\"saved_bytes\":%u}",
                                    i ? "," : "", i, w, extra, mem, saved);
        }
        snprintf(buf + len, sizeof buf - len, "]}");
        sp_profile *p = NULL;
        SP_CHECK_STATUS(sp_profile_parse(ctx, "rcp.json", buf, strlen(buf), &p), SP_OK);
        sp_partition_opts o;
        sp_partition_opts_init(&o);
        o.stages = 2 + (uint32_t)rnd(2);
        o.micro_batches = 4 * o.stages;
        o.solver = SP_SOLVER_ILP;
        o.recompute = true;
        o.memory_limit_bytes = total / (o.stages + 1); /* binds: the first stages recompute */
        double bn[2] = {0, 0};
        for (int cold = 0; cold < 2; cold++) {
            o.ilp_cold = cold;
            sp_plan *plan = NULL;
            sp_status st = sp_partition(ctx, p, &o, &plan);
            SP_CHECK_MSG(st == SP_OK || st == SP_ERR_INFEASIBLE, "%s", sp_ctx_get_errmsg(ctx));
            bn[cold] = st == SP_OK ? sp_plan_get_summary(plan)->bottleneck_ms : -1;
            SP_CHECK(st != SP_OK || sp_plan_get_summary(plan)->optimal);
            sp_plan_destroy(plan);
        }
        SP_CHECK_MSG(fabs(bn[0] - bn[1]) < 1e-9, "chain search %.6f, program %.6f (instance %d)",
                     bn[0], bn[1], t);
        agreed += bn[0] > 0;
        sp_profile_destroy(p);
    }
    printf("recomputation: chain search = program on %d chains of 30 to 60 layers\n", agreed);
    SP_CHECK(agreed >= 3);
}

/* interleaved chunks under a memory limit: brute force over every split, each figured by
 * sp_plan_from_split (its per-device memory is the peak over the interleaved order) */
static void test_chunk_memory(void) {
    int checked = 0, bound = 0, infeasible = 0;
    for (int t = 0; t < 40; t++) {
        struct inst in;
        random_inst(&in, 6 + (int)rnd(4));
        for (int i = 0; i < in.n; i++)
            in.cut[i] = rnd(6) != 0;
        int P = 2, V = 2, K = P * V;
        sp_profile *p = profile_of(&in);
        sp_partition_opts o;
        sp_partition_opts_init(&o);
        o.stages = (uint32_t)P;
        o.chunks = (uint32_t)V;
        o.micro_batches = (uint32_t)(2 * P);
        /* a limit between the lightest and the heaviest split's memory binds now and then */
        o.memory_limit_bytes = 120 + rnd(200);
        int64_t best = INT64_MAX, free_best = INT64_MAX;
        size_t b[16];
        b[0] = 0;
        /* every split into K stages: choose K - 1 cut positions among the allowed ones */
        for (unsigned mask = 0; mask < (1u << (in.n - 1)); mask++) {
            if (__builtin_popcount(mask) != K - 1)
                continue;
            bool ok = true;
            size_t s = 1;
            for (int i = 1; i < in.n; i++)
                if (mask & (1u << (i - 1))) {
                    ok &= in.cut[i - 1] != 0;
                    b[s++] = (size_t)i;
                }
            if (!ok)
                continue;
            sp_plan *given = NULL;
            SP_CHECK_STATUS(sp_plan_from_split(ctx, p, &o, b, (size_t)K, &given), SP_OK);
            uint64_t dev[2] = {0, 0};
            for (size_t k = 0; k < sp_plan_get_stage_count(given); k++)
                dev[k % 2] += sp_plan_get_stage(given, k)->memory_bytes;
            int64_t v = plan_value(given, &in, P, 0);
            free_best = v < free_best ? v : free_best;
            if (dev[0] <= o.memory_limit_bytes && dev[1] <= o.memory_limit_bytes && v < best)
                best = v;
            sp_plan_destroy(given);
        }
        if (free_best == INT64_MAX)
            goto next;
        o.solver = SP_SOLVER_ILP;
        o.time_limit_s = 60;
        sp_plan *plan = NULL;
        sp_status st = sp_partition(ctx, p, &o, &plan);
        if (best == INT64_MAX) {
            SP_CHECK_MSG(st == SP_ERR_INFEASIBLE, "no split fits, ilp: %s", sp_status_name(st));
            SP_CHECK_CONTAINS(sp_ctx_get_errmsg(ctx), "interleaved chunks fits the memory limit");
            infeasible++;
        } else {
            SP_CHECK_MSG(st == SP_OK, "%s", sp_ctx_get_errmsg(ctx));
            if (st == SP_OK) {
                SP_CHECK(sp_plan_get_summary(plan)->optimal);
                int64_t got = plan_value(plan, &in, P, 0);
                SP_CHECK_MSG(got == best, "t %d: ilp %" PRId64 ", brute force %" PRId64, t, got,
                             best);
                uint64_t dev[2] = {0, 0};
                for (size_t k = 0; k < sp_plan_get_stage_count(plan); k++)
                    dev[k % 2] += sp_plan_get_stage(plan, k)->memory_bytes;
                SP_CHECK(dev[0] <= o.memory_limit_bytes && dev[1] <= o.memory_limit_bytes);
                bound += best > free_best;
                checked++;
            }
        }
        sp_plan_destroy(plan);
    next:
        sp_profile_destroy(p);
    }
    printf("chunks under a memory limit: ilp = brute force on %d instances (the limit binding on "
           "%d), %d infeasible agreed\n",
           checked, bound, infeasible);
    SP_CHECK(checked > 10 && bound > 0);
}

static void test_limits_and_refusals(void) {
    struct inst in;
    random_inst(&in, 20);
    sp_profile *p = profile_of(&in);
    sp_plan *plan = NULL;
    sp_partition_opts o;
    sp_partition_opts_init(&o);
    o.solver = SP_SOLVER_ILP;
    o.stages = 4;
    o.chunks = 3;
    o.micro_batches = 16;
    o.time_limit_s = 0.001; /* too short to prove: the incumbent or better, not optimal */
    SP_CHECK_STATUS(sp_partition(ctx, p, &o, &plan), SP_OK);
    SP_CHECK(plan && !sp_plan_get_summary(plan)->optimal);
    SP_CHECK_CONTAINS(sp_ctx_get_warnings(ctx), "the ilp solver stopped at the time limit");
    sp_plan_destroy(plan);
    o.time_limit_s = 30;
    o.objective = SP_OBJECTIVE_VARIANCE;
    SP_CHECK_STATUS(sp_partition(ctx, p, &o, &plan), SP_ERR_INVALID_ARG);
    SP_CHECK_CONTAINS(sp_ctx_get_errmsg(ctx), "variance is quadratic");
    o.objective = SP_OBJECTIVE_BOTTLENECK;
    o.chunks = 1;
    o.memory_limit_bytes = 1;
    SP_CHECK_STATUS(sp_partition(ctx, p, &o, &plan), SP_ERR_INFEASIBLE);
    o.memory_limit_bytes = 0;
    o.stages = 21;
    SP_CHECK_STATUS(sp_partition(ctx, p, &o, &plan), SP_ERR_INFEASIBLE);
    SP_CHECK_CONTAINS(sp_ctx_get_errmsg(ctx), "cannot cut 20 layers into 21");
    o.stages = 4;
    o.objective = SP_OBJECTIVE_RANGE;
    o.solver = SP_SOLVER_DP;
    SP_CHECK_STATUS(sp_partition(ctx, p, &o, &plan), SP_ERR_INVALID_ARG);
    SP_CHECK_CONTAINS(sp_ctx_get_errmsg(ctx), "--objective range needs --solver ilp");
    sp_profile_destroy(p);
}

int main(void) {
    sp_ctx_create(&ctx);
    if (!strstr(sp_features(), "glpk")) {
        printf("test_ilp: this build has no GLPK; skipped\n");
        sp_ctx_destroy(ctx);
        return 77;
    }
    test_against_dp();
    test_against_brute();
    test_recompute();
    test_recompute_vs_program();
    test_chunk_memory();
    test_limits_and_refusals();
    sp_ctx_destroy(ctx);
    return sp_test_finish("test_ilp");
}

/* tests/oracle/test_interleaved.c: the interleaved search (partitioner/solvers/interleaved.c)
 * against brute force over every split into P x V chunks.
 *
 * Each split is figured by sp_plan_from_split with the same options, so the oracle uses the
 * plan's own device loads (speeds rounded per chunk as the plan rounds them) and per-device
 * memory (the peak over the interleaved order). Bottleneck: the least largest device load, then
 * among those plans the least sum of squared device loads. Iteration (with device speeds, where
 * plans' sums differ): the least (M - 1) x largest + sum. Memory limits: the same over the splits
 * that fit, and infeasible exactly when none fits. Forbidden cuts, both loop-chunk schedules, and
 * empty chunks where allowed (more chunks than places to cut). */
#include <inttypes.h>
#include <math.h>
#include <stagepart/stagepart.h>
#include <stdlib.h>
#include <unistd.h>

#include "../test.h"

__extension__ typedef __int128 i128;

static sp_ctx *ctx;
static uint64_t rng = 29;
static unsigned rnd(unsigned n) {
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (unsigned)((rng >> 33) % n);
}

struct inst {
    int n;
    int64_t fwd[16], bwd[16]; /* ticks */
    int cut[16];
    unsigned mem[16], saved[16];
};

static sp_profile *profile_of(const struct inst *in) {
    char buf[8192];
    size_t len = (size_t)snprintf(buf, sizeof buf,
                                  "{\"format\":\"stagepart-profile\",\"version\":1,\"model\":\"i\","
                                  "\"micro_batch_size\":1,\"layers\":[");
    for (int i = 0; i < in->n; i++)
        len += (size_t)snprintf(
            buf + len, sizeof buf - len,
            "%s{\"name\":\"l%d\",\"fwd_ms\":%" PRId64 ".%06" PRId64 ",\"bwd_ms\":%" PRId64
            ".%06" PRId64 ",\"wgrad_ms\":%" PRId64 ".%06" PRId64
            ",\"memory_bytes\":%u,\"saved_bytes\":%u,\"cut_after\":%s}",
            i ? "," : "", i, in->fwd[i] / 1000000, in->fwd[i] % 1000000, in->bwd[i] / 1000000,
            in->bwd[i] % 1000000, in->bwd[i] / 2 / 1000000, in->bwd[i] / 2 % 1000000, in->mem[i],
            in->saved[i], in->cut[i] ? "true" : "false");
    snprintf(buf + len, sizeof buf - len, "]}");
    sp_profile *p = NULL;
    if (sp_profile_parse(ctx, "interleaved.json", buf, strlen(buf), &p) != SP_OK)
        fprintf(stderr, "%s\n", sp_ctx_get_errmsg(ctx));
    return p;
}

/* P devices with the given speeds, written to a file and loaded */
static sp_devices *devices_of(int P, const double *speed) {
    char path[] = "/tmp/sp-interleaved-devices-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0)
        return NULL;
    FILE *f = fdopen(fd, "w");
    fprintf(f, "{\"format\":\"stagepart-devices\",\"version\":1,\"devices\":[");
    for (int d = 0; d < P; d++)
        fprintf(f, "%s{\"name\":\"g%d\",\"speed\":%g}", d ? "," : "", d, speed[d]);
    fprintf(f, "]}");
    fclose(f);
    sp_devices *list = NULL;
    if (sp_devices_load(ctx, path, &list) != SP_OK)
        fprintf(stderr, "%s\n", sp_ctx_get_errmsg(ctx));
    unlink(path);
    return list;
}

/* a plan's figures per device: the largest load, the sum, the sum of squares (ticks), whether
 * every device's memory fits */
struct figures {
    int64_t max, sum, max_chunk;
    i128 squares; /* of the chunk times */
    bool fits;
};

static struct figures figures_of(const sp_plan *plan, int P, uint64_t limit) {
    int64_t load[8] = {0};
    uint64_t mem[8] = {0};
    struct figures f = {0, 0, 0, 0, true};
    for (size_t k = 0; k < sp_plan_get_stage_count(plan); k++) {
        const sp_stage *s = sp_plan_get_stage(plan, k);
        int64_t t = llround(s->time_ms * 1e6);
        load[k % (size_t)P] += t;
        mem[k % (size_t)P] += s->memory_bytes;
        f.max_chunk = t > f.max_chunk ? t : f.max_chunk;
        f.squares += (i128)t * t;
    }
    for (int d = 0; d < P; d++) {
        f.max = load[d] > f.max ? load[d] : f.max;
        f.sum += load[d];
        f.fits &= !limit || mem[d] <= limit;
    }
    return f;
}

static bool better(struct figures a, struct figures b, bool iteration, int M) {
    if (iteration) {
        i128 ja = (i128)(M - 1) * a.max + a.sum, jb = (i128)(M - 1) * b.max + b.sum;
        return ja < jb;
    }
    return a.max < b.max || (a.max == b.max && a.squares < b.squares); /* chunk squares */
}

static bool same(struct figures a, struct figures b, bool iteration, int M) {
    return !better(a, b, iteration, M) && !better(b, a, iteration, M);
}

/* every split into K chunks at allowed cuts, the best by `better` among those that fit with no
 * chunk over chunk_cap; *least_chunk gets the least largest chunk of any split (fitting or not) */
static bool brute(const sp_profile *p, const struct inst *in, const sp_partition_opts *o, int K,
                  bool iteration, int64_t chunk_cap, struct figures *best, int64_t *least_chunk) {
    bool found = false;
    size_t b[17];
    b[0] = 0;
    b[K] = (size_t)in->n;
    *least_chunk = INT64_MAX;
    for (unsigned mask = 0; mask < (1u << (in->n - 1)); mask++) {
        if (__builtin_popcount(mask) != K - 1)
            continue;
        bool ok = true;
        int s = 1;
        for (int i = 1; i < in->n; i++)
            if (mask & (1u << (i - 1))) {
                ok &= in->cut[i - 1] != 0;
                b[s++] = (size_t)i;
            }
        if (!ok)
            continue;
        sp_plan *given = NULL;
        SP_CHECK_STATUS(sp_plan_from_split(ctx, p, o, b, (size_t)K, &given), SP_OK);
        if (!given)
            continue;
        struct figures f = figures_of(given, (int)o->stages, o->memory_limit_bytes);
        *least_chunk = f.max_chunk < *least_chunk ? f.max_chunk : *least_chunk;
        if (f.fits && f.max_chunk <= chunk_cap &&
            (!found || better(f, *best, iteration, (int)o->micro_batches))) {
            *best = f;
            found = true;
        }
        sp_plan_destroy(given);
    }
    return found;
}

/* the objective: the least largest chunk over every split, then among the splits that fit with
 * no larger chunk the best by `better`; when none fits so, the best of all that fit */
static bool brute_best(const sp_profile *p, const struct inst *in, const sp_partition_opts *o,
                       int K, bool iteration, struct figures *best) {
    int64_t least = 0, ignored = 0;
    brute(p, in, o, K, iteration, INT64_MAX, best, &least);
    return brute(p, in, o, K, iteration, least, best, &ignored) ||
           brute(p, in, o, K, iteration, INT64_MAX, best, &ignored);
}

static void random_inst(struct inst *in, int n);

/* with empty chunks allowed: every non-decreasing split (at allowed cuts) */
static void brute_empty(const sp_profile *p, const struct inst *in, const sp_partition_opts *o,
                        int K, size_t *b, int k, struct figures *best, bool *found) {
    if (k == K) {
        sp_plan *given = NULL;
        SP_CHECK_STATUS(sp_plan_from_split(ctx, p, o, b, (size_t)K, &given), SP_OK);
        if (!given)
            return;
        struct figures f = figures_of(given, (int)o->stages, o->memory_limit_bytes);
        if (f.fits && (!*found || better(f, *best, false, 0))) {
            *best = f;
            *found = true;
        }
        sp_plan_destroy(given);
        return;
    }
    for (size_t x = b[k - 1]; x <= (size_t)in->n; x++) {
        if (x > 0 && x < (size_t)in->n && !in->cut[x - 1])
            continue;
        b[k] = x;
        brute_empty(p, in, o, K, b, k + 1, best, found);
    }
}

static void test_empty_chunks(void) {
    int checked = 0, emptied = 0;
    for (int t = 0; t < 120; t++) {
        struct inst in;
        random_inst(&in, 2 + (int)rnd(5));
        int P = 1 + (int)rnd(3), V = 2 + (int)rnd(2), K = P * V;
        sp_profile *p = profile_of(&in);
        sp_partition_opts o;
        sp_partition_opts_init(&o);
        o.stages = (uint32_t)P;
        o.chunks = (uint32_t)V;
        o.micro_batches = (uint32_t)P;
        o.allow_empty_stages = true;
        struct figures want = {0, 0, 0, 0, false};
        bool found = false;
        size_t b[17] = {0};
        brute_empty(p, &in, &o, K, b, 1, &want, &found);
        sp_plan *plan = NULL;
        SP_CHECK_STATUS(sp_partition(ctx, p, &o, &plan), SP_OK);
        if (plan && found) {
            struct figures got = figures_of(plan, P, 0);
            SP_CHECK(sp_plan_get_summary(plan)->optimal);
            SP_CHECK_MSG(same(got, want, false, 0),
                         "t %d P=%d V=%d n=%d: max %" PRId64 ", brute force %" PRId64, t, P, V,
                         in.n, got.max, want.max);
            for (size_t k = 0; k < sp_plan_get_stage_count(plan); k++)
                emptied += sp_plan_get_stage(plan, k)->layer_count == 0;
            checked++;
        }
        sp_plan_destroy(plan);
        sp_profile_destroy(p);
    }
    printf("empty chunks allowed: the search = brute force on %d instances (%d empty chunks)\n",
           checked, emptied);
    SP_CHECK(checked > 100 && emptied > 0);
}

static void random_inst(struct inst *in, int n) {
    in->n = n;
    for (int i = 0; i < n; i++) {
        /* few distinct sizes: many ties, the tie-break matters */
        in->fwd[i] = (int64_t)(1 + rnd(3)) * 1000000 + (rnd(3) ? 0 : (int64_t)rnd(1000) * 1000);
        in->bwd[i] = rnd(2) ? 2 * in->fwd[i] : (int64_t)rnd(7) * 1000000;
        in->cut[i] = rnd(6) != 0;
        in->mem[i] = rnd(50);
        in->saved[i] = rnd(20);
    }
}

static void test_against_brute(void) {
    int checked = 0, infeasible = 0, with_speeds = 0, iterations = 0, limited = 0;
    for (int t = 0; t < 500; t++) {
        struct inst in;
        random_inst(&in, 5 + (int)rnd(8));
        int P = 1 + (int)rnd(3), V = 2 + (int)rnd(3), K = P * V;
        if (K > in.n) {
            P = 2;
            V = 2;
            K = 4;
        }
        sp_profile *p = profile_of(&in);
        sp_partition_opts o;
        sp_partition_opts_init(&o);
        o.stages = (uint32_t)P;
        o.chunks = (uint32_t)V;
        o.micro_batches = (uint32_t)(rnd(2) ? P : 2 * P);
        o.schedule = rnd(4) ? SP_SCHEDULE_INTERLEAVED : SP_SCHEDULE_INTERLEAVED_ZB;
        o.memory_limit_bytes = rnd(3) ? 0 : 100 + rnd(250);
        double speed[3] = {1, 1, 1};
        sp_devices *list = NULL;
        if (rnd(3) == 0) {
            for (int d = 0; d < P; d++)
                speed[d] = d % 2 ? 0.6 : 1.0 + 0.25 * rnd(3);
            list = devices_of(P, speed);
            o.devices = list;
            with_speeds++;
        }
        bool iteration = list && rnd(2);
        o.objective = iteration ? SP_OBJECTIVE_ITERATION : SP_OBJECTIVE_BOTTLENECK;
        struct figures want = {0, 0, 0, 0, false};
        bool exists = brute_best(p, &in, &o, K, iteration, &want);
        sp_plan *plan = NULL;
        sp_status st = sp_partition(ctx, p, &o, &plan);
        if (!exists) {
            SP_CHECK_MSG(st == SP_ERR_INFEASIBLE, "t %d: no split fits, the search: %s (%s)", t,
                         sp_status_name(st), sp_ctx_get_errmsg(ctx));
            infeasible++;
        } else {
            SP_CHECK_MSG(st == SP_OK, "t %d: %s", t, sp_ctx_get_errmsg(ctx));
            if (st == SP_OK) {
                struct figures got = figures_of(plan, P, o.memory_limit_bytes);
                SP_CHECK(sp_plan_get_summary(plan)->optimal);
                SP_CHECK(got.fits);
                SP_CHECK_MSG(same(got, want, iteration, (int)o.micro_batches),
                             "t %d P=%d V=%d %s: max %" PRId64 " sum %" PRId64
                             ", brute force max %" PRId64 " sum %" PRId64,
                             t, P, V, iteration ? "iteration" : "bottleneck", got.max, got.sum,
                             want.max, want.sum);
                checked++;
                iterations += iteration;
                limited += o.memory_limit_bytes != 0;
            }
        }
        sp_plan_destroy(plan);
        sp_devices_destroy(list);
        sp_profile_destroy(p);
    }
    printf("interleaved search = brute force on %d instances (%d with device speeds, %d by "
           "iteration, %d under a memory limit), %d infeasible agreed\n",
           checked, with_speeds, iterations, limited, infeasible);
    SP_CHECK(checked > 300 && iterations > 20 && limited > 20 && infeasible > 0);
}

/* the time limit: the best plan found, its gap stated, not optimal */
static void test_time_limit(void) {
    struct inst in;
    rng = 5;
    in.n = 0;
    for (int i = 0; i < 16; i++) { /* nearly equal layers: many near-optimal plans */
        in.fwd[i] = 1000000 + (int64_t)rnd(1000) * 97;
        in.bwd[i] = 2 * in.fwd[i];
        in.cut[i] = 1;
        in.mem[i] = in.saved[i] = 0;
        in.n++;
    }
    sp_profile *p = profile_of(&in);
    sp_partition_opts o;
    sp_partition_opts_init(&o);
    o.stages = 2;
    o.chunks = 4;
    o.micro_batches = 4;
    o.time_limit_s = 1e-9;
    sp_plan *plan = NULL;
    SP_CHECK_STATUS(sp_partition(ctx, p, &o, &plan), SP_OK);
    if (plan) {
        const sp_plan_summary *m = sp_plan_get_summary(plan);
        SP_CHECK(!m->optimal);
        SP_CHECK(m->mip_gap > 0 && m->best_bound_ms > 0 && m->best_bound_ms < m->bottleneck_ms);
        SP_CHECK_CONTAINS(sp_ctx_get_warnings(ctx), "interleaved search stopped at the time limit");
    }
    sp_plan_destroy(plan);
    o.time_limit_s = 30;
    SP_CHECK_STATUS(sp_partition(ctx, p, &o, &plan), SP_OK);
    SP_CHECK(plan && sp_plan_get_summary(plan)->optimal);
    sp_plan_destroy(plan);
    o.objective = SP_OBJECTIVE_VARIANCE;
    SP_CHECK_STATUS(sp_partition(ctx, p, &o, &plan), SP_ERR_INVALID_ARG);
    SP_CHECK_CONTAINS(sp_ctx_get_errmsg(ctx), "--objective variance has no cap");
    sp_profile_destroy(p);
}

int main(void) {
    sp_ctx_create(&ctx);
    test_against_brute();
    test_empty_chunks();
    test_time_limit();
    sp_ctx_destroy(ctx);
    return sp_test_finish("test_interleaved");
}

/* tests/oracle/test_vshape.c: the V-shape partition (zbv, dualpipev) against brute force.
 *
 * Random small chains (whole-ms times with many ties, zeros, forbidden cuts, memory limits) are
 * partitioned through the public API with --schedule zbv or dualpipev and compared, by value,
 * with every split into 2P non-empty chunks: device d holds chunks d and 2P-1-d; the bottleneck
 * objective wants the least largest device load, then the least sum of squared chunk loads;
 * variance the least sum of squared device loads. Under a memory limit a split is allowed when
 * every device's peak memory, taken from a separate simulation of the schedule (the simulator's own
 * in-flight count, not the partitioner's states), fits.
 *
 * Usage: test_vshape [instances] [seed]  (defaults 1500 and 1). */
#include <inttypes.h>
#include <stagepart/stagepart.h>
#include <stdlib.h>
#include <string.h>

#include "../test.h"
#include "sim_impl.h"

#define MAXN 13

struct inst {
    int n, P, M;
    sp_schedule schedule;
    int64_t fwd[MAXN], bwd[MAXN]; /* whole ms */
    uint64_t mem[MAXN], saved[MAXN];
    int cut_after[MAXN];
    uint64_t cap;
    int variance;
};

static uint64_t rng_state;
static uint64_t rnd(void) { /* splitmix64 */
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static int rnd_int(int lo, int hi) {
    return lo + (int)(rnd() % (uint64_t)(hi - lo + 1));
}

static char *to_json(const struct inst *in) {
    size_t cap = 512 + (size_t)in->n * 256;
    char *s = malloc(cap);
    size_t len = (size_t)snprintf(s, cap,
                                  "{\"format\":\"stagepart-profile\",\"version\":1,\"model\":\"v\","
                                  "\"micro_batch_size\":1,\"layers\":[");
    for (int i = 0; i < in->n; i++)
        len += (size_t)snprintf(s + len, cap - len,
                                "%s{\"name\":\"l%d\",\"fwd_ms\":%" PRId64 ",\"bwd_ms\":%" PRId64
                                ",\"wgrad_ms\":%g,\"memory_bytes\":%" PRIu64
                                ",\"saved_bytes\":%" PRIu64 ",\"cut_after\":%s}",
                                i ? "," : "", i, in->fwd[i], in->bwd[i], (double)in->bwd[i] / 2,
                                in->mem[i], in->saved[i], in->cut_after[i] ? "true" : "false");
    snprintf(s + len, cap - len, "]}");
    return s;
}

/* ---- brute force over every split into 2P chunks */
struct best {
    int found;
    int64_t max;
    __int128 sq;
};

static sp_ctx *ctx;

/* every device's peak memory fits, by the simulator's count on this split */
static int split_fits(const struct inst *in, const int *b) {
    if (!in->cap)
        return 1;
    int P = in->P, K = 2 * P;
    double f[2 * MAXN], bw[2 * MAXN], w[2 * MAXN], send[2 * MAXN] = {0};
    uint64_t saved[2 * MAXN], resident[MAXN] = {0};
    for (int k = 0; k < K; k++) {
        f[k] = bw[k] = 1, w[k] = 0.5; /* times do not matter to the op order */
        saved[k] = 0;
        for (int l = b[k]; l < b[k + 1]; l++) {
            saved[k] += in->saved[l];
            resident[k < P ? k : K - 1 - k] += in->mem[l];
        }
    }
    struct sp_pipeline pl = {(uint32_t)P, 2,    (uint32_t)in->M, in->schedule, SP_CHUNKS_V, f,   bw,
                             w,           send, saved,           resident,     NULL,        NULL};
    sp_sim *sim = NULL;
    if (sp_simulate_pipeline(ctx, &pl, false, &sim) != SP_OK)
        return 0;
    int ok = 1;
    for (int d = 0; d < P; d++)
        ok &= sp_sim_get_device(sim, (size_t)d)->peak_memory_bytes <= in->cap;
    sp_sim_destroy(sim);
    return ok;
}

static void brute_rec(const struct inst *in, int *b, int k, struct best *best) {
    int K = 2 * in->P;
    if (k == K) {
        int64_t mx = 0;
        __int128 sq = 0;
        for (int d = 0; d < in->P; d++) {
            int64_t load = 0;
            int chunks[2] = {d, K - 1 - d};
            for (int c = 0; c < 2; c++) {
                int64_t chunk = 0;
                for (int l = b[chunks[c]]; l < b[chunks[c] + 1]; l++)
                    chunk += in->fwd[l] + in->bwd[l];
                load += chunk;
                if (!in->variance) /* the bottleneck's tie-break: balanced chunks */
                    sq += (__int128)chunk * chunk;
            }
            mx = load > mx ? load : mx;
            if (in->variance)
                sq += (__int128)load * load;
        }
        if (!split_fits(in, b))
            return;
        int better =
            !best->found ||
            (in->variance ? sq < best->sq : (mx < best->max || (mx == best->max && sq < best->sq)));
        if (better) {
            best->found = 1;
            best->max = mx;
            best->sq = sq;
        }
        return;
    }
    /* chunk k starts at b[k]; choose its end b[k+1] */
    for (int e = b[k] + 1; e <= in->n - (K - 1 - k); e++) {
        if (k + 1 < K && !in->cut_after[e - 1])
            continue;
        if (k + 1 == K && e != in->n)
            continue;
        b[k + 1] = e;
        brute_rec(in, b, k + 1, best);
    }
}

int main(int argc, char **argv) {
    int instances = argc > 1 ? atoi(argv[1]) : 1500;
    rng_state = argc > 2 ? strtoull(argv[2], NULL, 10) : 1;
    sp_ctx_create(&ctx);
    int compared = 0, infeasible = 0;
    for (int it = 0; it < instances; it++) {
        struct inst in = {0};
        in.P = rnd_int(1, 3);
        in.n = rnd_int(2 * in.P, in.P == 3 ? 11 : MAXN);
        in.schedule = rnd_int(0, 1) ? SP_SCHEDULE_ZBV : SP_SCHEDULE_DUALPIPEV;
        in.M = in.schedule == SP_SCHEDULE_DUALPIPEV ? rnd_int(2 * in.P, 3 * in.P + 2)
                                                    : rnd_int(1, 3 * in.P + 2);
        in.variance = rnd_int(0, 3) == 0;
        for (int l = 0; l < in.n; l++) {
            in.fwd[l] = rnd_int(0, 3);
            in.bwd[l] = rnd_int(0, 4);
            in.mem[l] = (uint64_t)rnd_int(0, 5) * 100;
            in.saved[l] = (uint64_t)rnd_int(0, 4) * 10;
            in.cut_after[l] = rnd_int(0, 6) != 0;
        }
        if (rnd_int(0, 2) == 0)
            in.cap = (uint64_t)rnd_int(3, 20) * 100;
        int b[2 * MAXN + 1] = {0};
        struct best best = {0};
        brute_rec(&in, b, 0, &best);

        char *json = to_json(&in);
        sp_profile *profile = NULL;
        SP_CHECK_STATUS(sp_profile_parse(ctx, "v.json", json, strlen(json), &profile), SP_OK);
        free(json);
        sp_partition_opts o;
        sp_partition_opts_init(&o);
        o.stages = (uint32_t)in.P;
        o.micro_batches = (uint32_t)in.M;
        o.schedule = in.schedule;
        o.memory_limit_bytes = in.cap;
        o.objective = in.variance ? SP_OBJECTIVE_VARIANCE : SP_OBJECTIVE_BOTTLENECK;
        sp_plan *plan = NULL;
        sp_status st = sp_partition(ctx, profile, &o, &plan);
        if (!best.found) {
            SP_CHECK_STATUS(st, SP_ERR_INFEASIBLE);
            infeasible++;
        } else {
            SP_CHECK_STATUS(st, SP_OK);
            if (st != SP_OK)
                fprintf(stderr, "  %s\n", sp_ctx_get_errmsg(ctx));
        }
        if (plan) {
            int64_t mx = 0;
            __int128 sq = 0;
            int bb[2 * MAXN + 1];
            for (size_t k = 0; k < sp_plan_get_stage_count(plan); k++)
                bb[k] = (int)sp_plan_get_stage(plan, k)->first_layer;
            bb[2 * in.P] = in.n;
            for (int d = 0; d < in.P; d++) {
                const sp_stage *s0 = sp_plan_get_stage(plan, (size_t)d),
                               *s1 = sp_plan_get_stage(plan, (size_t)(2 * in.P - 1 - d));
                SP_CHECK(s0->device == (uint32_t)d && s1->device == (uint32_t)d);
                int64_t c0 = (int64_t)(s0->time_ms + 0.5), c1 = (int64_t)(s1->time_ms + 0.5);
                int64_t load = c0 + c1;
                mx = load > mx ? load : mx;
                sq += in.variance ? (__int128)load * load : (__int128)c0 * c0 + (__int128)c1 * c1;
            }
            int ok = best.found && (in.variance || mx == best.max) && sq == best.sq &&
                     split_fits(&in, bb);
            if (!ok)
                fprintf(stderr,
                        "instance %d: n=%d P=%d M=%d %s cap=%" PRIu64
                        " variance=%d: library max %" PRId64 " brute %" PRId64 "\n",
                        it, in.n, in.P, in.M, sp_schedule_name(in.schedule), in.cap, in.variance,
                        mx, best.max);
            SP_CHECK(ok);
            compared++;
            sp_plan_destroy(plan);
        }
        sp_profile_destroy(profile);
    }
    printf("V-shape: %d plans equal brute force, %d infeasible instances refused\n", compared,
           infeasible);
    sp_ctx_destroy(ctx);
    return sp_test_finish("test_vshape");
}

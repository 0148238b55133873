/* tests/oracle/test_oracle.c: the exact solvers against brute force.
 *
 * Thousands of random small chains (integer weights with many ties, heavy-tailed weights,
 * zeros, forbidden cuts, memory limits, devices with speeds and memory, blocking transfers
 * over links, P from 1 to n + 1) are partitioned through the public
 * API and compared, boundary for boundary, with an exhaustive enumeration that applies the
 * documented objective and tie-break literally: minimum bottleneck, then minimum sum of squared
 * stage times (minimum variance), then the lexicographically smallest boundaries; for the
 * iteration objective, the minimum (M-1) x bottleneck + sum of stage times (by value). Larger
 * chains are compared by value (bottleneck, then sum of squares) with textbook O(n^2 p) dynamic
 * programs.
 *
 * Usage: test_oracle [instances] [seed]  (defaults 4000 and 1). */
#include <inttypes.h>
#include <math.h>
#include <stagepart/stagepart.h>
#include <stdint.h>

#include "../test.h"

__extension__ typedef __int128 i128;

#define MAXN 320
#define MAXP 40

struct instance {
    int n, p, m;
    int64_t fwd[MAXN], bwd[MAXN]; /* ticks (ns) */
    uint64_t mem[MAXN], saved[MAXN];
    int cut_after[MAXN];
    uint64_t cap;    /* 0: none */
    int use_devices; /* a "devices" list with speeds and memory */
    double speed[MAXN];
    uint64_t devmem[MAXN];                    /* 0: not limited */
    int blocking;                             /* links with blocking transfers */
    double lat_us[MAXN], bw_GBps[MAXN];       /* the link after stage s */
    uint64_t act[MAXN];                       /* activation_bytes of each layer */
    int64_t pre_t[MAXN + 1], pre_f[MAXN + 1]; /* prefix sums, filled by finish_instance */
    uint64_t pre_mem[MAXN + 1], pre_saved[MAXN + 1];
    int async;             /* 0: 1F1B; 1: pipedream, 2: 2bw (no flush, stashed weights) */
    uint64_t params[MAXN]; /* param_bytes: what a stashed weight version holds */
    uint64_t pre_params[MAXN + 1];
};

static void finish_instance(struct instance *in) {
    in->pre_t[0] = in->pre_f[0] = 0;
    in->pre_mem[0] = in->pre_saved[0] = in->pre_params[0] = 0;
    for (int i = 0; i < in->n; i++) {
        in->pre_params[i + 1] = in->pre_params[i] + in->params[i];
        in->pre_t[i + 1] = in->pre_t[i] + in->fwd[i] + in->bwd[i];
        in->pre_f[i + 1] = in->pre_f[i] + in->fwd[i];
        in->pre_mem[i + 1] = in->pre_mem[i] + in->mem[i];
        in->pre_saved[i + 1] = in->pre_saved[i] + in->saved[i];
    }
}

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
static double rnd_unit(void) {
    return (double)(rnd() >> 11) / 9007199254740992.0;
}

static int64_t random_ticks(int dist) {
    switch (dist) {
    case 0: /* small integers in whole ms: many ties */
        return (int64_t)rnd_int(0, 3) * 1000000;
    case 1: /* heavy-tailed (Pareto, alpha 1.2), microsecond resolution */
        return (int64_t)llround(1000.0 * 1000.0 / pow(1.0 - rnd_unit() * 0.999, 1.0 / 1.2)) / 1000 *
               1000;
    case 2: /* LLM-like: light first, heavy last, middle +-10% */
        return (int64_t)rnd_int(900, 1100) * 1000;
    default: /* uniform ns */
        return rnd_int(0, 5000000);
    }
}

static void random_instance(struct instance *in, int max_n) {
    memset(in, 0, sizeof *in);
    in->n = rnd_int(1, max_n);
    in->p = rnd_int(1, in->n + (rnd() % 8 == 0 ? 1 : 0));
    in->m = rnd_int(1, 2 * in->p + 1);
    int dist = rnd_int(0, 3);
    int forbid = rnd() % 3 == 0;
    for (int i = 0; i < in->n; i++) {
        int64_t t = random_ticks(dist);
        if (dist == 2 && i == in->n - 1)
            t = t * 24 / 10;
        in->fwd[i] = t / 3;
        in->bwd[i] = t - t / 3;
        in->mem[i] = (uint64_t)rnd_int(0, 100);
        in->saved[i] = (uint64_t)rnd_int(0, 40);
        in->params[i] = (uint64_t)rnd_int(0, 30);
        in->cut_after[i] = !(forbid && rnd() % 4 == 0);
    }
    in->async = rnd() % 4 == 0 ? rnd_int(1, 2) : 0;
    in->cap = 0;
    uint64_t total = 0;
    for (int i = 0; i < in->n; i++)
        total += in->mem[i] + in->saved[i] * (uint64_t)in->p;
    if (rnd() % 2)
        in->cap = total / (uint64_t)in->p + (uint64_t)rnd_int(0, 120);
    in->use_devices = rnd() % 3 == 0;
    in->blocking = rnd() % 3 == 0;
    for (int i = 0; i < in->n; i++)
        in->act[i] = (uint64_t)rnd_int(0, 4) * 250000; /* 0 .. 1 MB: 0 .. 0.4 ms at 2.5 GB/s */
    for (int s = 0; s < MAXN; s++) {
        in->lat_us[s] = (double)rnd_int(0, 3) * 10;
        in->bw_GBps[s] = rnd() % 2 ? 5.0 : 2.5;
    }
    static const double speeds[] = {1.0, 0.5, 0.6, 2.0, 1.25};
    for (int s = 0; s < in->p; s++) {
        in->speed[s] = in->use_devices ? speeds[rnd() % 5] : 1.0;
        in->devmem[s] =
            in->use_devices && rnd() % 2 ? total / (uint64_t)in->p + (uint64_t)rnd_int(0, 200) : 0;
    }
    finish_instance(in);
}

static char *to_json(const struct instance *in) {
    size_t cap = 1024 + (size_t)in->n * 256 + (size_t)in->p * 96;
    char *s = malloc(cap);
    size_t len = (size_t)snprintf(s, cap,
                                  "{\"format\":\"stagepart-profile\",\"version\":1,\"model\":\"r\","
                                  "\"micro_batch_size\":1,\"layers\":[");
    for (int i = 0; i < in->n; i++)
        len += (size_t)snprintf(
            s + len, cap - len,
            "%s{\"name\":\"l%d\",\"fwd_ms\":%" PRId64 ".%06" PRId64 ",\"bwd_ms\":%" PRId64
            ".%06" PRId64 ",\"memory_bytes\":%" PRIu64 ",\"saved_bytes\":%" PRIu64
            ",\"activation_bytes\":%" PRIu64 ",\"param_bytes\":%" PRIu64 ",\"cut_after\":%s}",
            i ? "," : "", i, in->fwd[i] / 1000000, in->fwd[i] % 1000000, in->bwd[i] / 1000000,
            in->bwd[i] % 1000000, in->mem[i], in->saved[i], in->act[i], in->params[i],
            in->cut_after[i] ? "true" : "false");
    len += (size_t)snprintf(s + len, cap - len, "]");
    if (in->use_devices) {
        len += (size_t)snprintf(s + len, cap - len, ",\"devices\":[");
        for (int d = 0; d < in->p; d++)
            len +=
                (size_t)snprintf(s + len, cap - len,
                                 "%s{\"name\":\"d%d\",\"speed\":%g,\"memory_bytes\":%" PRIu64 "}",
                                 d ? "," : "", d, in->speed[d], in->devmem[d]);
        len += (size_t)snprintf(s + len, cap - len, "]");
    }
    snprintf(s + len, cap - len, "}");
    return s;
}

/* ---- brute force over every boundary vector, in lexicographic order */
struct brute {
    const struct instance *in;
    int objective; /* 0 bottleneck, 1 variance */
    int b[MAXP + 1], best_b[MAXP + 1];
    int found;
    int64_t best_max;
    i128 best_sq, best_j;
};

/* one transfer over the link after stage s of the activation of layer l, in ticks */
static int64_t link_ticks(const struct instance *in, int s, int l) {
    return llround((in->lat_us[s] / 1e3 + (double)in->act[l] / (in->bw_GBps[s] * 1e6)) * 1e6);
}

/* stage s's time: forward and backward parts each divided by the speed and rounded, plus, with
 * blocking transfers, each cut's transfer forward and back */
static int64_t stage_time(const struct instance *in, int s, int a, int b) {
    int64_t f = in->pre_f[b] - in->pre_f[a], t = in->pre_t[b] - in->pre_t[a];
    if (in->speed[s] != 1.0)
        t = llround((double)f / in->speed[s]) + llround((double)(t - f) / in->speed[s]);
    if (in->blocking && in->p > 1) {
        if (s > 0)
            t += 2 * link_ticks(in, s - 1, a - 1);
        if (s + 1 < in->p)
            t += 2 * link_ticks(in, s, b - 1);
    }
    return t;
}

static char *links_json(const struct instance *in) {
    size_t cap = 256 + (size_t)in->p * in->p * 40, len = 0;
    char *s = malloc(cap);
    len += (size_t)snprintf(s + len, cap - len,
                            "{\"format\":\"stagepart-links\",\"version\":1,\"devices\":[");
    for (int d = 0; d < in->p; d++)
        len += (size_t)snprintf(s + len, cap - len, "%s\"d%d\"", d ? "," : "", d);
    for (int m = 0; m < 2; m++) {
        len +=
            (size_t)snprintf(s + len, cap - len, "],\"%s\":[", m ? "latency_us" : "bandwidth_GBps");
        for (int i = 0; i < in->p; i++) {
            len += (size_t)snprintf(s + len, cap - len, "%s[", i ? "," : "");
            for (int j = 0; j < in->p; j++) {
                double v = j == i + 1 ? (m ? in->lat_us[i] : in->bw_GBps[i]) : (m ? 0 : 1);
                len += (size_t)snprintf(s + len, cap - len, "%s%g", j ? "," : "", v);
            }
            len += (size_t)snprintf(s + len, cap - len, "]");
        }
    }
    snprintf(s + len, cap - len, "]}");
    return s;
}

static int range_fits(const struct instance *in, int s, int a, int b) {
    uint64_t cap = in->cap, dm = in->devmem[s];
    if (dm && (!cap || dm < cap))
        cap = dm;
    if (!cap)
        return 1;
    uint64_t k = (uint64_t)(in->p - s) < (uint64_t)in->m ? (uint64_t)(in->p - s) : (uint64_t)in->m;
    if (in->async) /* no flush: P - s in flight, and the stashed weight versions */
        k = (uint64_t)(in->p - s);
    uint64_t stashed = in->async == 1 ? (uint64_t)(in->p - s - 1) : in->async == 2 ? 1 : 0;
    uint64_t need = in->pre_mem[b] - in->pre_mem[a] + k * (in->pre_saved[b] - in->pre_saved[a]) +
                    stashed * (in->pre_params[b] - in->pre_params[a]);
    return need <= cap;
}

static void brute_rec(struct brute *br, int s) {
    const struct instance *in = br->in;
    if (s == in->p) {
        int64_t mx = 0;
        i128 sq = 0;
        for (int k = 0; k < in->p; k++) {
            if (!range_fits(in, k, br->b[k], br->b[k + 1]))
                return;
            int64_t t = stage_time(in, k, br->b[k], br->b[k + 1]);
            if (t > mx)
                mx = t;
            sq += (i128)t * t;
        }
        i128 j = 0;
        for (int k = 0; k < in->p; k++)
            j += stage_time(in, k, br->b[k], br->b[k + 1]);
        j += (i128)(in->m - 1) * mx;
        int better;
        if (!br->found)
            better = 1;
        else if (br->objective == 0)
            better = mx < br->best_max || (mx == br->best_max && sq < br->best_sq);
        else if (br->objective == 2)
            better = j < br->best_j;
        else
            better = sq < br->best_sq;
        if (better) {
            br->found = 1;
            br->best_max = mx;
            br->best_sq = sq;
            br->best_j = j;
            memcpy(br->best_b, br->b, sizeof br->b);
        }
        return;
    }
    int start = br->b[s];
    if (s == in->p - 1) {
        br->b[s + 1] = in->n;
        brute_rec(br, s + 1);
        return;
    }
    for (int e = start + 1; e <= in->n - (in->p - 1 - s); e++) {
        if (!in->cut_after[e - 1])
            continue;
        br->b[s + 1] = e;
        brute_rec(br, s + 1);
    }
}

/* ---- textbook DP by value: min over partitions of max (bottleneck) */
static int64_t naive_min_max(const struct instance *in, int *feasible) {
    static int64_t D[MAXP + 1][MAXN + 1];
    const int64_t INF = INT64_MAX;
    for (int s = 0; s <= in->p; s++)
        for (int j = 0; j <= in->n; j++)
            D[s][j] = INF;
    D[0][0] = 0;
    for (int s = 1; s <= in->p; s++)
        for (int j = 1; j <= in->n; j++) {
            if (j < in->n && !in->cut_after[j - 1])
                continue;
            for (int i = j - 1; i >= 0; i--) {
                if (D[s - 1][i] == INF || (i > 0 && !in->cut_after[i - 1]))
                    continue;
                if (!range_fits(in, s - 1, i, j))
                    continue;
                int64_t t = stage_time(in, s - 1, i, j);
                int64_t v = D[s - 1][i] > t ? D[s - 1][i] : t;
                if (v < D[s][j])
                    D[s][j] = v;
            }
        }
    *feasible = D[in->p][in->n] != INF;
    return D[in->p][in->n];
}

/* ---- textbook DP by value: min sum of squared stage times with every stage <= cap */
static i128 naive_min_sumsq(const struct instance *in, int64_t cap, int *feasible) {
    static i128 D[MAXP + 1][MAXN + 1];
    const i128 INF = (i128)1 << 120;
    for (int s = 0; s <= in->p; s++)
        for (int j = 0; j <= in->n; j++)
            D[s][j] = INF;
    D[0][0] = 0;
    for (int s = 1; s <= in->p; s++)
        for (int j = 1; j <= in->n; j++) {
            if (j < in->n && !in->cut_after[j - 1])
                continue;
            for (int i = j - 1; i >= 0; i--) {
                if (D[s - 1][i] == INF || (i > 0 && !in->cut_after[i - 1]))
                    continue;
                int64_t t = stage_time(in, s - 1, i, j);
                if (t > cap || !range_fits(in, s - 1, i, j))
                    continue;
                i128 v = D[s - 1][i] + (i128)t * t;
                if (v < D[s][j])
                    D[s][j] = v;
            }
        }
    *feasible = D[in->p][in->n] != INF;
    return D[in->p][in->n];
}

static i128 plan_sumsq(const struct instance *in, const size_t *bounds) {
    i128 sq = 0;
    for (int s = 0; s < in->p; s++) {
        int64_t t = stage_time(in, s, (int)bounds[s], (int)bounds[s + 1]);
        sq += (i128)t * t;
    }
    return sq;
}

static int run_library(const struct instance *in, sp_objective objective, sp_ctx *ctx,
                       size_t *bounds, double *bottleneck_ms) {
    char *json = to_json(in);
    if (getenv("SP_ORACLE_DUMP")) { /* the last instance, for reproducing a failure by hand */
        FILE *f = fopen("/tmp/oracle-profile.json", "w");
        if (f) {
            fputs(json, f);
            fclose(f);
        }
        char *lj = links_json(in);
        if ((f = fopen("/tmp/oracle-links.json", "w"))) {
            fputs(lj, f);
            fclose(f);
        }
        free(lj);
    }
    sp_profile *profile = NULL;
    sp_status st = sp_profile_parse(ctx, "oracle.json", json, strlen(json), &profile);
    free(json);
    if (st != SP_OK) {
        fprintf(stderr, "profile rejected: %s\n", sp_ctx_get_errmsg(ctx));
        return -2;
    }
    sp_partition_opts o;
    sp_partition_opts_init(&o);
    o.stages = (uint32_t)in->p;
    o.micro_batches = (uint32_t)in->m;
    o.objective = objective;
    o.memory_limit_bytes = in->cap;
    o.schedule = in->async == 1   ? SP_SCHEDULE_PIPEDREAM
                 : in->async == 2 ? SP_SCHEDULE_2BW
                                  : SP_SCHEDULE_1F1B;
    sp_links *links = NULL;
    if (in->blocking) {
        char *lj = links_json(in);
        st = sp_links_parse(ctx, "oracle-links.json", lj, strlen(lj), &links);
        free(lj);
        if (st != SP_OK) {
            fprintf(stderr, "links rejected: %s\n", sp_ctx_get_errmsg(ctx));
            sp_profile_destroy(profile);
            return -2;
        }
        o.links = links;
        o.comm = SP_COMM_BLOCKING;
    }
    sp_plan *plan = NULL;
    st = sp_partition(ctx, profile, &o, &plan);
    sp_links_destroy(links);
    int rc = 0;
    if (st == SP_ERR_INFEASIBLE) {
        rc = -1;
    } else if (st != SP_OK) {
        fprintf(stderr, "partition failed: %s: %s\n", sp_status_name(st), sp_ctx_get_errmsg(ctx));
        rc = -2;
    } else {
        for (size_t s = 0; s < sp_plan_get_stage_count(plan); s++)
            bounds[s] = sp_plan_get_stage(plan, s)->first_layer;
        bounds[sp_plan_get_stage_count(plan)] = (size_t)in->n;
        *bottleneck_ms = sp_plan_get_summary(plan)->bottleneck_ms;
        for (size_t s = 0; s < sp_plan_get_stage_count(plan); s++)
            if (!range_fits(in, (int)s, (int)bounds[s], (int)bounds[s + 1]))
                rc = -3;
    }
    sp_plan_destroy(plan);
    sp_profile_destroy(profile);
    return rc;
}

static void print_instance(const struct instance *in) {
    fprintf(stderr, "  n=%d p=%d m=%d cap=%" PRIu64 "\n  ticks:", in->n, in->p, in->m, in->cap);
    for (int i = 0; i < in->n; i++)
        fprintf(stderr, " %" PRId64 "(%" PRIu64 "+%" PRIu64 ")%s", in->fwd[i] + in->bwd[i],
                in->mem[i], in->saved[i], in->cut_after[i] ? "" : "|");
    fputc('\n', stderr);
}

int main(int argc, char **argv) {
    int instances = argc > 1 ? atoi(argv[1]) : 4000;
    rng_state = argc > 2 ? strtoull(argv[2], NULL, 10) : 1;
    sp_ctx *ctx = NULL;
    sp_ctx_create(&ctx);
    int infeasible = 0, mismatches = 0;
    for (int objective = 0; objective < 3; objective++) {
        for (int t = 0; t < instances; t++) {
            struct instance in;
            random_instance(&in, 12);
            if (objective == 1) { /* variance: equal speeds, overlapped transfers */
                for (int d = 0; d < in.p; d++)
                    in.speed[d] = 1.0;
                in.blocking = 0;
            }
            struct brute br;
            memset(&br, 0, sizeof br);
            br.in = &in;
            br.objective = objective;
            if (in.p <= in.n)
                brute_rec(&br, 0);
            size_t bounds[MAXP + 2];
            double bn = 0;
            int rc = run_library(&in, (sp_objective)objective, ctx, bounds, &bn);
            SP_CHECK(rc != -2 && rc != -3);
            if (!br.found) {
                infeasible++;
                SP_CHECK_MSG(rc == -1, "library found a plan where brute force found none");
                if (rc != -1)
                    print_instance(&in);
                continue;
            }
            int same = rc == 0;
            for (int s = 0; same && objective != 2 && s <= in.p; s++)
                same = bounds[s] == (size_t)br.best_b[s];
            if (!same && getenv("SP_ORACLE_DUMP"))
                exit(3);
            if (!same && (objective != 2 || rc != 0) && mismatches++ < 5) {
                fprintf(stderr, "mismatch (objective %d, rc %d):\n", objective, rc);
                print_instance(&in);
                fprintf(stderr, "  brute:");
                for (int s = 0; s <= in.p; s++)
                    fprintf(stderr, " %d", br.best_b[s]);
                fprintf(stderr, "\n  lib:  ");
                for (int s = 0; rc == 0 && s <= in.p; s++)
                    fprintf(stderr, " %zu", bounds[s]);
                fputc('\n', stderr);
            }
            if (objective == 2 && rc == 0) { /* iteration: compare J only (ties may differ) */
                i128 j = 0;
                int64_t mx = 0;
                for (int k = 0; k < in.p; k++) {
                    int64_t tk = stage_time(&in, k, (int)bounds[k], (int)bounds[k + 1]);
                    j += tk;
                    mx = tk > mx ? tk : mx;
                }
                j += (i128)(in.m - 1) * mx;
                same = j == br.best_j;
                if (!same && mismatches++ < 5) {
                    fprintf(stderr, "iteration objective: J %.6f vs brute %.6f\n", (double)j / 1e6,
                            (double)br.best_j / 1e6);
                    print_instance(&in);
                }
            }
            SP_CHECK(same);
            if (objective == 0 && rc == 0)
                SP_CHECK(fabs(bn - (double)br.best_max / 1e6) < 1e-9);
        }
    }
    /* larger chains: bottleneck value against the O(n^2 p) DP */
    int large = instances / 10;
    for (int t = 0; t < large; t++) {
        struct instance in;
        random_instance(&in, MAXN - 1);
        if (in.p > MAXP) { /* fewer stages: draw their devices again */
            in.p = rnd_int(1, MAXP);
            in.m = rnd_int(1, 2 * in.p + 1);
            for (int d = 0; d < in.p; d++) {
                in.speed[d] = in.use_devices && rnd() % 2 ? 0.5 + (double)(rnd() % 4) / 2 : 1.0;
                in.devmem[d] = 0;
            }
        }
        int feasible = 0;
        int64_t best = naive_min_max(&in, &feasible);
        size_t bounds[MAXP + 2];
        double bn = 0;
        int rc = run_library(&in, SP_OBJECTIVE_BOTTLENECK, ctx, bounds, &bn);
        SP_CHECK(rc != -2 && rc != -3);
        SP_CHECK_MSG((rc == 0) == (feasible != 0), "feasibility differs (n=%d p=%d)", in.n, in.p);
        if (rc == 0 && feasible) {
            SP_CHECK_MSG(llround(bn * 1e6) == best, "bottleneck %.6f vs naive %.6f (n=%d p=%d)", bn,
                         (double)best / 1e6, in.n, in.p);
            int f2 = 0;
            i128 sq = naive_min_sumsq(&in, best, &f2);
            SP_CHECK(f2 && plan_sumsq(&in, bounds) == sq);
        }
        /* variance objective: minimum sum of squares without a time cap (equal speeds) */
        for (int d = 0; d < in.p; d++)
            in.speed[d] = 1.0;
        in.blocking = 0;
        int f3 = 0;
        i128 sq = naive_min_sumsq(&in, INT64_MAX, &f3);
        rc = run_library(&in, SP_OBJECTIVE_VARIANCE, ctx, bounds, &bn);
        SP_CHECK_MSG((rc == 0) == (f3 != 0), "variance feasibility differs (n=%d p=%d)", in.n,
                     in.p);
        if (rc == 0 && f3)
            SP_CHECK_MSG(plan_sumsq(&in, bounds) == sq, "variance not minimal (n=%d p=%d)", in.n,
                         in.p);
    }
    printf("oracle: %d small instances for each of 3 objectives (%d infeasible), %d large\n",
           instances, infeasible, large);
    sp_ctx_destroy(ctx);
    return sp_test_finish("test_oracle");
}

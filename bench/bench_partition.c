/* bench/bench_partition.c: solver speed and plan quality against the baselines users have.
 *
 * usage: bench_partition [SAMPLES_DIR]
 * Prints two markdown tables: solver times (median of repeated solves, one core) on synthetic
 * LLM-like chains, and the bottleneck of dp, uniform and parameters on every sample profile
 * and on randomized LLM-like profiles, all in the same run. docs/benchmarks.md records the
 * output with the command that produced it. */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chain.h"
#include "llm_like.h"

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int k) {
    qsort(v, (size_t)k, sizeof *v, cmp_double);
    return k % 2 ? v[k / 2] : (v[k / 2 - 1] + v[k / 2]) / 2;
}

static sp_plan *solve(sp_ctx *ctx, const sp_profile *p, uint32_t stages, sp_objective obj,
                      sp_solver solver, uint64_t mem) {
    sp_partition_opts o;
    sp_partition_opts_init(&o);
    o.stages = stages;
    o.objective = obj;
    o.solver = solver;
    o.memory_limit_bytes = mem;
    sp_plan *plan = NULL;
    sp_status st = sp_partition(ctx, p, &o, &plan);
    if (st != SP_OK)
        fprintf(stderr, "bench: %s\n", sp_ctx_get_errmsg(ctx));
    return plan;
}

/* median solve_ms of `reps` solves */
static double time_solve(sp_ctx *ctx, const sp_profile *p, uint32_t stages, sp_objective obj,
                         uint64_t mem, int reps, double *bottleneck) {
    double t[64];
    for (int r = 0; r < reps; r++) {
        sp_plan *plan = solve(ctx, p, stages, obj, SP_SOLVER_DP, mem);
        t[r] = plan ? sp_plan_get_summary(plan)->solve_ms : (double)NAN;
        if (plan && bottleneck)
            *bottleneck = sp_plan_get_summary(plan)->bottleneck_ms;
        sp_plan_destroy(plan);
    }
    return median(t, reps);
}

static double time_bisection(sp_ctx *ctx, const sp_profile *p, uint32_t stages, int reps) {
    double t[64];
    struct sp_chain c;
    struct sp_chain_model model = {
        .weight = SP_WEIGHT_TIME, .stages = stages, .micro_batches = 4 * stages};
    sp_chain_init(ctx, &c, p, &model);
    for (int r = 0; r < reps; r++) {
        int64_t cap = 0;
        double t0 = sp_now_ms();
        sp_chain_min_bottleneck(ctx, &c, &cap);
        t[r] = sp_now_ms() - t0;
    }
    sp_chain_release(&c);
    return median(t, reps);
}

/* a links file for P devices: 300 GB/s and 5 us inside groups of 4, 25 GB/s and 10 us across */
static sp_links *two_level_links(sp_ctx *ctx, uint32_t P) {
    size_t cap = 256 + (size_t)P * P * 16, len = 0;
    char *buf = malloc(cap);
    len += (size_t)snprintf(buf + len, cap - len,
                            "{\"format\":\"stagepart-links\",\"version\":1,\"devices\":[");
    for (uint32_t d = 0; d < P; d++)
        len += (size_t)snprintf(buf + len, cap - len, "%s\"g%u\"", d ? "," : "", d);
    for (int m = 0; m < 2; m++) {
        len += (size_t)snprintf(buf + len, cap - len, "],\"%s\":[",
                                m ? "latency_us" : "bandwidth_GBps");
        for (uint32_t i = 0; i < P; i++) {
            len += (size_t)snprintf(buf + len, cap - len, "%s[", i ? "," : "");
            for (uint32_t j = 0; j < P; j++) {
                bool same = i / 4 == j / 4;
                len += (size_t)snprintf(buf + len, cap - len, "%s%g", j ? "," : "",
                                        m ? (same ? 5.0 : 10.0) : (same ? 300.0 : 25.0));
            }
            len += (size_t)snprintf(buf + len, cap - len, "]");
        }
    }
    snprintf(buf + len, cap - len, "]}");
    sp_links *l = NULL;
    if (sp_links_parse(ctx, "bench-links", buf, strlen(buf), &l) != SP_OK)
        fprintf(stderr, "bench: %s\n", sp_ctx_get_errmsg(ctx));
    free(buf);
    return l;
}

static double time_general(sp_ctx *ctx, const sp_profile *p, uint32_t stages, sp_objective obj,
                           const sp_links *links, sp_comm comm, int reps, double *bottleneck) {
    double t[16];
    for (int r = 0; r < reps; r++) {
        sp_partition_opts o;
        sp_partition_opts_init(&o);
        o.stages = stages;
        o.objective = obj;
        o.links = links;
        o.comm = comm;
        sp_plan *plan = NULL;
        if (sp_partition(ctx, p, &o, &plan) != SP_OK)
            fprintf(stderr, "bench: %s\n", sp_ctx_get_errmsg(ctx));
        t[r] = plan ? sp_plan_get_summary(plan)->solve_ms : (double)NAN;
        if (plan)
            *bottleneck = sp_plan_get_summary(plan)->bottleneck_ms;
        sp_plan_destroy(plan);
    }
    return median(t, reps);
}

static uint64_t binding_limit(sp_ctx *ctx, const sp_profile *p, uint32_t stages) {
    /* 98 % of the unconstrained optimum's largest stage memory: the limit must change the plan */
    sp_plan *plan = solve(ctx, p, stages, SP_OBJECTIVE_BOTTLENECK, SP_SOLVER_DP, 0);
    uint64_t mx = 0;
    for (size_t s = 0; plan && s < sp_plan_get_stage_count(plan); s++)
        if (sp_plan_get_stage(plan, s)->memory_bytes > mx)
            mx = sp_plan_get_stage(plan, s)->memory_bytes;
    sp_plan_destroy(plan);
    return mx / 100 * 98;
}

static void speed_table(sp_ctx *ctx) {
    printf("## Solver time (median of repeated solves, one core)\n\n");
    printf("| case | n | P | time | bottleneck ms |\n|---|---|---|---|---|\n");
    sp_profile *big = llm_like(ctx, 100000, 2.4, 2.5);
    sp_profile *mid = llm_like(ctx, 2000, 2.4, 2.5);
    double bn = 0;
    printf("| bisection alone (bottleneck value) | 100000 | 128 | %.3f ms | |\n",
           time_bisection(ctx, big, 128, 21));
    double t = time_solve(ctx, big, 128, SP_OBJECTIVE_BOTTLENECK, 0, 11, &bn);
    printf("| bottleneck + variance tie-break | 100000 | 128 | %.3f ms | %.3f |\n", t, bn);
    uint64_t lim = binding_limit(ctx, big, 128);
    t = time_solve(ctx, big, 128, SP_OBJECTIVE_BOTTLENECK, lim, 5, &bn);
    printf("| same, binding memory limit (%.4g GB) | 100000 | 128 | %.3f ms | %.3f |\n",
           (double)lim / 1e9, t, bn);
    t = time_solve(ctx, mid, 64, SP_OBJECTIVE_BOTTLENECK, 0, 21, &bn);
    printf("| bottleneck + variance tie-break | 2000 | 64 | %.3f ms | %.3f |\n", t, bn);
    lim = binding_limit(ctx, mid, 64);
    t = time_solve(ctx, mid, 64, SP_OBJECTIVE_BOTTLENECK, lim, 21, &bn);
    printf("| same, binding memory limit | 2000 | 64 | %.3f ms | %.3f |\n", t, bn);
    t = time_solve(ctx, mid, 64, SP_OBJECTIVE_VARIANCE, 0, 5, &bn);
    printf("| variance objective (no cap) | 2000 | 64 | %.3f ms | %.3f |\n", t, bn);
    t = time_solve(ctx, big, 128, SP_OBJECTIVE_VARIANCE, 0, 3, &bn);
    printf("| variance objective (no cap) | 100000 | 128 | %.3f ms | %.3f |\n", t, bn);
    sp_profile *ten = llm_like(ctx, 10000, 2.4, 2.5);
    sp_links *l64 = two_level_links(ctx, 64), *l8 = two_level_links(ctx, 8);
    t = time_general(ctx, ten, 64, SP_OBJECTIVE_BOTTLENECK, l64, SP_COMM_BLOCKING, 3, &bn);
    printf(
        "| blocking transfers, two-level links (general engine) | 10000 | 64 | %.3f ms | %.3f |\n",
        t, bn);
    t = time_general(ctx, mid, 8, SP_OBJECTIVE_ITERATION, l8, SP_COMM_BLOCKING, 3, &bn);
    printf("| iteration objective, blocking transfers | 2000 | 8 | %.3f ms | %.3f |\n\n", t, bn);
    sp_links_destroy(l64);
    sp_links_destroy(l8);
    sp_profile_destroy(ten);
    if (strstr(sp_features(), "glpk")) {
        printf("## The ILP on GLPK (one solve each, 30 s limit)\n\n");
        printf("| case | n | P x V | time | proven | free binaries | bottleneck ms |\n"
               "|---|---|---|---|---|---|---|\n");
        struct {
            size_t n;
            uint32_t p, v;
        } cases[] = {{512, 16, 1}, {1024, 8, 1}}; /* chunks: bench_interleaved.c */
        for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
            sp_profile *q = llm_like(ctx, cases[i].n, 2.4, 2.5);
            sp_partition_opts o;
            sp_partition_opts_init(&o);
            o.stages = cases[i].p;
            o.chunks = cases[i].v;
            o.solver = SP_SOLVER_ILP;
            o.time_limit_s = 30;
            sp_plan *plan = NULL;
            if (sp_partition(ctx, q, &o, &plan) == SP_OK) {
                const sp_plan_summary *m = sp_plan_get_summary(plan);
                printf("| bottleneck%s | %zu | %u x %u | %.0f ms | %s | %llu | %.3f |\n",
                       cases[i].v > 1 ? ", interleaved chunks" : "", cases[i].n, cases[i].p,
                       cases[i].v, m->solve_ms, m->optimal ? "yes" : "no (time limit)",
                       (unsigned long long)m->free_binaries, m->bottleneck_ms);
            } else {
                fprintf(stderr, "bench: %s\n", sp_ctx_get_errmsg(ctx));
            }
            sp_plan_destroy(plan);
            sp_profile_destroy(q);
        }
        printf("\n");
    }
    sp_profile_destroy(big);
    sp_profile_destroy(mid);
}

static double bottleneck(sp_ctx *ctx, const sp_profile *p, uint32_t stages, sp_solver solver) {
    sp_plan *plan = solve(ctx, p, stages, SP_OBJECTIVE_BOTTLENECK, solver, 0);
    double b = plan ? sp_plan_get_summary(plan)->bottleneck_ms : (double)NAN;
    sp_plan_destroy(plan);
    return b;
}

static void quality_row(sp_ctx *ctx, const char *name, const sp_profile *p, uint32_t stages) {
    double d = bottleneck(ctx, p, stages, SP_SOLVER_DP);
    double u = bottleneck(ctx, p, stages, SP_SOLVER_UNIFORM);
    double q = bottleneck(ctx, p, stages, SP_SOLVER_PARAMETERS);
    printf("| %s | %u | %.3f | %.3f (%.2fx) | %.3f (%.2fx) |\n", name, stages, d, u, u / d, q,
           q / d);
}

static int cmp_name(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void quality_table(sp_ctx *ctx, const char *dir) {
    printf("## Bottleneck stage time: dp against the baselines (same inputs, same run)\n\n");
    printf("Ratios are baseline / dp: how much longer each iteration's slowest stage takes.\n\n");
    printf("| profile | P | dp ms | uniform ms | parameters ms |\n|---|---|---|---|---|\n");
    DIR *d = opendir(dir);
    char *names[64];
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d)) && n < 64;)
        if (strstr(e->d_name, ".json"))
            names[n++] = strdup(e->d_name);
    if (d)
        closedir(d);
    qsort(names, (size_t)n, sizeof *names, cmp_name);
    for (int i = 0; i < n; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        sp_profile *p = NULL;
        if (sp_profile_load(ctx, path, &p) == SP_OK) {
            for (uint32_t s = 2; s <= 16; s *= 2)
                if (s <= sp_profile_get_layer_count(p))
                    quality_row(ctx, names[i], p, s);
        }
        sp_profile_destroy(p);
        free(names[i]);
    }
    printf("\n### Randomized LLM-like profiles (200 per row)\n\n");
    printf("Blocks +-10 %%, embedding 0.05 ms, LM head 1-4 x a block, 2P to 2P + 90 layers.\n\n");
    printf("| P | uniform: mean ratio | worst | suboptimal | parameters: mean ratio | worst | "
           "suboptimal |\n|---|---|---|---|---|---|---|\n");
    for (uint32_t s = 2; s <= 16; s *= 2) {
        double su = 0, wu = 0, sq = 0, wq = 0;
        int bu = 0, bq = 0, trials = 200;
        for (int t = 0; t < trials; t++) {
            size_t layers = 2 * s + 2 + (size_t)(unit() * 90);
            sp_profile *p = llm_like(ctx, layers, 1 + 3 * unit(), 1 + 3 * unit());
            double dp = bottleneck(ctx, p, s, SP_SOLVER_DP);
            double u = bottleneck(ctx, p, s, SP_SOLVER_UNIFORM) / dp;
            double q = bottleneck(ctx, p, s, SP_SOLVER_PARAMETERS) / dp;
            su += u;
            sq += q;
            wu = fmax(wu, u);
            wq = fmax(wq, q);
            bu += u > 1 + 1e-12;
            bq += q > 1 + 1e-12;
            sp_profile_destroy(p);
        }
        printf("| %u | %.3f | %.3f | %.0f %% | %.3f | %.3f | %.0f %% |\n", s, su / trials, wu,
               100.0 * bu / trials, sq / trials, wq, 100.0 * bq / trials);
    }
    printf("\n");
}

int main(int argc, char **argv) {
    sp_ctx *ctx = NULL;
    sp_ctx_create(&ctx);
    speed_table(ctx);
    quality_table(ctx, argc > 1 ? argv[1] : "samples/profiles");
    sp_ctx_destroy(ctx);
    return 0;
}

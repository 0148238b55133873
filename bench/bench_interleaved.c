/* bench/bench_interleaved.c: the exact interleaved search (--chunks V) on the sample profiles and
 * on synthetic LLM-like chains, against Megatron-LM's equal chunk split and the GLPK program.
 *
 * usage: bench_interleaved [SAMPLES_DIR]
 * Prints a markdown table: each case's solve time (one solve, one core), whether it is proven,
 * its bottleneck (the busiest device's load), the equal split's and the ratio, and the simulated
 * interleaved iteration of both at M = 4P. Then the GLPK program on the first case, for
 * contrast. docs/benchmarks.md records the output with the command that produced it. */
#include <stdio.h>
#include <string.h>

#include "llm_like.h"

static sp_plan *plan_for(sp_ctx *ctx, const sp_profile *p, uint32_t P, uint32_t V, sp_solver solver,
                         double time_limit_s) {
    sp_partition_opts o;
    sp_partition_opts_init(&o);
    o.stages = P;
    o.chunks = V;
    o.schedule = SP_SCHEDULE_INTERLEAVED;
    o.micro_batches = 4 * P;
    o.solver = solver;
    o.time_limit_s = time_limit_s;
    sp_plan *plan = NULL;
    if (sp_partition(ctx, p, &o, &plan) != SP_OK)
        fprintf(stderr, "bench: %s\n", sp_ctx_get_errmsg(ctx));
    return plan;
}

static void row(sp_ctx *ctx, const char *name, const sp_profile *p, uint32_t P, uint32_t V,
                const char *target) {
    sp_plan *exact = plan_for(ctx, p, P, V, SP_SOLVER_DP, 60);
    sp_plan *even = plan_for(ctx, p, P, V, SP_SOLVER_UNIFORM, 60);
    if (!exact || !even) {
        sp_plan_destroy(exact);
        sp_plan_destroy(even);
        return;
    }
    const sp_plan_summary *m = sp_plan_get_summary(exact), *u = sp_plan_get_summary(even);
    printf("| %s | %zu | %u x %u | %s | %.1f ms | %s | %.3f | %.3f (%.3fx) | %.1f / %.1f ms |\n",
           name, sp_profile_get_layer_count(p), P, V, target, m->solve_ms,
           m->optimal ? "yes" : "no (time limit)", m->bottleneck_ms, u->bottleneck_ms,
           u->bottleneck_ms / m->bottleneck_ms, m->schedule.iteration_ms, u->schedule.iteration_ms);
    sp_plan_destroy(exact);
    sp_plan_destroy(even);
}

int main(int argc, char **argv) {
    const char *dir = argc > 1 ? argv[1] : "samples/profiles";
    sp_ctx *ctx = NULL;
    sp_ctx_create(&ctx);
    printf("## Interleaved chunks: the exact search (one solve each, one core)\n\n");
    printf("Equal split: `--solver uniform --chunks V` (Megatron-LM's). Iterations simulated under "
           "the interleaved schedule, M = 4P.\n\n");
    printf("| case | n | P x V | target | time | proven | bottleneck ms | equal split ms | "
           "iteration exact / equal |\n|---|---|---|---|---|---|---|---|---|\n");
    char path[1024];
    sp_profile *gpt = NULL, *llama = NULL;
    snprintf(path, sizeof path, "%s/gpt3-2.7b.json", dir);
    if (sp_profile_load(ctx, path, &gpt) == SP_OK)
        row(ctx, "gpt3-2.7b", gpt, 8, 2, "< 10 s");
    snprintf(path, sizeof path, "%s/llama3-8b.json", dir);
    if (sp_profile_load(ctx, path, &llama) == SP_OK) {
        row(ctx, "llama3-8b", llama, 4, 2, "< 1 s");
        row(ctx, "llama3-8b", llama, 8, 4, "");
    }
    sp_profile *l128 = llm_like(ctx, 128, 2.4, 2.5), *l512 = llm_like(ctx, 512, 2.4, 2.5);
    if (l128) {
        row(ctx, "llm-like", l128, 8, 2, "< 10 s");
        row(ctx, "llm-like", l128, 8, 4, "< 10 s");
    }
    if (l512)
        row(ctx, "llm-like", l512, 16, 2, "< 10 s");
    if (gpt && strstr(sp_features(), "glpk")) {
        sp_plan *ilp = plan_for(ctx, gpt, 8, 2, SP_SOLVER_ILP, 20);
        if (ilp) {
            const sp_plan_summary *m = sp_plan_get_summary(ilp);
            printf("\nThe GLPK program on gpt3-2.7b, 8 x 2 (`--solver ilp --time-limit 20`): "
                   "%.0f ms, %s, bottleneck %.3f ms, %.1f %% above its proven bound.\n",
                   m->solve_ms, m->optimal ? "proven" : "not proven", m->bottleneck_ms,
                   100 * m->mip_gap);
        }
        sp_plan_destroy(ilp);
    }
    printf("\n");
    sp_profile_destroy(gpt);
    sp_profile_destroy(llama);
    sp_profile_destroy(l128);
    sp_profile_destroy(l512);
    sp_ctx_destroy(ctx);
    return 0;
}

/* bench/bench_simulate.c: simulator speed on large schedules (median of repeated runs).
 * usage: bench_simulate     prints a markdown table (docs/benchmarks.md) */
#include <stdio.h>
#include <stdlib.h>

#include "sim_impl.h"

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void row(sp_ctx *ctx, sp_schedule sched, uint32_t P, uint32_t V, uint32_t M) {
    uint32_t K = P * V;
    double *f = malloc(K * sizeof *f), *b = malloc(K * sizeof *b), *w = malloc(K * sizeof *w);
    double *send = calloc(K, sizeof *send);
    uint64_t *saved = malloc(K * sizeof *saved);
    for (uint32_t k = 0; k < K; k++) {
        f[k] = 1.0 + 0.01 * (k % 7); /* unequal, so no closed form shortcut is possible */
        b[k] = 2 * f[k];
        w[k] = f[k];
        send[k] = 0.05;
        saved[k] = 1000;
    }
    struct sp_pipeline pl = {
        P, V, M, sched, sp_schedule_chunk_layout(sched), f, b, w, send, saved, NULL, NULL, NULL};
    double t[7];
    uint64_t ops = 0;
    double eff = 0;
    for (int r = 0; r < 7; r++) {
        sp_sim *sim = NULL;
        double t0 = sp_now_ms();
        if (sp_simulate_pipeline(ctx, &pl, false, &sim) != SP_OK)
            fprintf(stderr, "bench: %s\n", sp_ctx_get_errmsg(ctx));
        t[r] = sp_now_ms() - t0;
        if (sim) {
            ops = sp_sim_get_summary(sim)->ops;
            eff = sp_sim_get_summary(sim)->efficiency;
        }
        sp_sim_destroy(sim);
    }
    qsort(t, 7, sizeof *t, cmp);
    printf("| %s | %u | %u | %u | %llu | %.1f ms | %.1f%% |\n", sp_schedule_name(sched), P, V, M,
           (unsigned long long)ops, t[3], 100 * eff);
    free(f);
    free(b);
    free(w);
    free(send);
    free(saved);
}

int main(void) {
    sp_ctx *ctx = NULL;
    sp_ctx_create(&ctx);
    printf("## Simulator speed (median of 7, one core, without keeping ops)\n\n");
    printf("| schedule | P | V | M | ops | time | efficiency |\n|---|---|---|---|---|---|---|\n");
    row(ctx, SP_SCHEDULE_1F1B, 128, 1, 4096);
    row(ctx, SP_SCHEDULE_GPIPE, 128, 1, 4096);
    row(ctx, SP_SCHEDULE_ZB_H1, 128, 1, 4096);
    row(ctx, SP_SCHEDULE_INTERLEAVED, 64, 4, 1024);
    printf("\n");
    sp_ctx_destroy(ctx);
    return 0;
}

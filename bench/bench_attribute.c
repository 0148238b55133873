/* bench/bench_attribute.c: the attribution engine on a large synthetic trace.
 * usage: bench_attribute [KERNELS]   (default 10,000,000) prints a markdown table
 * (docs/benchmarks.md): 10 steps of L layers, forward on one thread and backward on another,
 * two streams, one launch per kernel; the time is sp_attribute alone (the importers' parsing is
 * not part of it), the memory the process's peak resident set. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "attribute.h"

int main(int argc, char **argv) {
    size_t kernels = argc > 1 ? strtoull(argv[1], NULL, 10) : 10000000;
    const size_t steps = 10, layers = 1000;
    size_t per_range = kernels / (steps * layers * 2);
    if (!per_range)
        per_range = 1;
    sp_ctx *ctx = NULL;
    struct sp_trace t;
    if (sp_ctx_create(&ctx) != SP_OK || sp_trace_init(ctx, &t) != SP_OK)
        return 1;
    t.file = sp_strdup("synthetic");
    t.collector = sp_strdup("synthetic");
    uint32_t kname = 0, step_name = 0;
    sp_trace_intern(ctx, &t, "gemm", 4, &kname);
    sp_trace_intern(ctx, &t, "stagepart/step", 14, &step_name);
    uint32_t *names = malloc(2 * layers * sizeof *names);
    for (size_t l = 0; l < layers; l++)
        for (int ph = 0; ph < 2; ph++) {
            char buf[64];
            int n = snprintf(buf, sizeof buf, "layers.%zu/%s", l, ph ? "bwd" : "fwd");
            sp_trace_intern(ctx, &t, buf, (size_t)n, &names[2 * l + (size_t)ph]);
        }
    int64_t now = 0, gpu = 0;
    uint64_t corr = 0;
    for (size_t s = 0; s < steps; s++) {
        int64_t step_start = now;
        for (int ph = 0; ph < 2; ph++)
            for (size_t i = 0; i < layers; i++) {
                size_t l = ph ? layers - 1 - i : i;
                int64_t r0 = now;
                for (size_t k = 0; k < per_range; k++) {
                    struct sp_trace_launch la = {now + 1, ++corr, (uint32_t)(1 + ph)};
                    int64_t start = gpu > now + 2 ? gpu : now + 2;
                    struct sp_trace_activity a = {
                        start, start + 50,        corr,  0,
                        0,     (uint32_t)(k % 2), kname, SP_ACTIVITY_KERNEL};
                    sp_trace_add_launch(ctx, &t, &la);
                    sp_trace_add_activity(ctx, &t, &a);
                    gpu = start + 40; /* streams overlap a little */
                    now += 3;
                }
                now = (gpu > now ? gpu : now) + 10;
                struct sp_trace_range r = {r0, now,  (uint32_t)(1 + ph), names[2 * l + (size_t)ph],
                                           0,  false};
                sp_trace_add_range(ctx, &t, &r);
            }
        struct sp_trace_range r = {step_start, now + 1, 1, step_name, 0, false};
        sp_trace_add_range(ctx, &t, &r);
        now += 100;
    }
    double t0 = sp_now_ms();
    struct sp_attrib_opts o = {NULL, NULL, NULL, 1};
    struct sp_attribution res;
    sp_status st = sp_attribute(ctx, &t, &o, &res);
    double secs = (sp_now_ms() - t0) / 1e3;
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("## Attribution engine (sp_attribute, one core)\n\n");
    printf("| kernels | ranges | layers | steps | time | peak RSS | status |\n");
    printf("|---|---|---|---|---|---|---|\n");
    printf("| %zu | %zu | %zu | %zu | %.2f s | %ld MB | %s |\n", t.n_activities, t.n_ranges,
           res.n_layers, steps, secs, ru.ru_maxrss / 1024, sp_status_name(st));
    if (st == SP_OK)
        sp_attribution_release(&res);
    sp_trace_release(&t);
    free(names);
    sp_ctx_destroy(ctx);
    return st == SP_OK ? 0 : 1;
}

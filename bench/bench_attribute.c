/* bench/bench_attribute.c: the attribution engine on a large synthetic trace.
 * usage: bench_attribute [KERNELS]   (default 10,000,000) prints a markdown table
 * (docs/benchmarks.md): 10 steps of 1,000 layers, forward on one thread and backward on another,
 * two streams, one launch per kernel. Two rows:
 *   streamed  the ranges held, launches and activities generated and fed to the engine's stream
 *             one by one (sp_attrib_begin / launch / activity / end), as the event log's second
 *             pass does: memory is the engine's windows, not the records
 *   held      every record in a trace first, then sp_attribute (what the Kineto and Nsight
 *             importers do; they hold the file anyway)
 * The time is the engine alone (generation excluded where it can be); peak RSS is the process's
 * high-water mark after the row, so the streamed row runs first. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "attribute.h"

static const size_t steps = 10, layers = 1000;

struct gen {
    sp_ctx *ctx;
    struct sp_trace *t;
    struct sp_attrib_stream *stream; /* NULL: into the trace's arrays */
    bool ranges;                     /* this pass makes the ranges (and nothing else) */
    size_t per_range;
    uint32_t kname, step_name, *names;
    sp_status st;
};

/* the same trace every call: ranges on one pass, launches and activities on another */
static void generate(struct gen *g) {
    int64_t now = 0, gpu = 0;
    uint64_t corr = 0;
    for (size_t s = 0; s < steps && g->st == SP_OK; s++) {
        int64_t step_start = now;
        for (int ph = 0; ph < 2; ph++)
            for (size_t i = 0; i < layers; i++) {
                size_t l = ph ? layers - 1 - i : i;
                int64_t r0 = now;
                for (size_t k = 0; k < g->per_range && g->st == SP_OK; k++) {
                    struct sp_trace_launch la = {now + 1, ++corr, (uint32_t)(1 + ph)};
                    int64_t start = gpu > now + 2 ? gpu : now + 2;
                    struct sp_trace_activity a = {
                        start, start + 50,        corr,     0,
                        0,     (uint32_t)(k % 2), g->kname, SP_ACTIVITY_KERNEL};
                    if (g->ranges) { /* this pass makes ranges only */
                    } else if (g->stream) {
                        g->st = sp_attrib_launch(g->stream, &la) == SP_OK
                                    ? sp_attrib_activity(g->stream, &a)
                                    : SP_ERR_NOMEM;
                    } else if (sp_trace_add_launch(g->ctx, g->t, &la) != SP_OK ||
                               sp_trace_add_activity(g->ctx, g->t, &a) != SP_OK) {
                        g->st = SP_ERR_NOMEM;
                    }
                    gpu = start + 40; /* streams overlap a little */
                    now += 3;
                }
                now = (gpu > now ? gpu : now) + 10;
                struct sp_trace_range r = {
                    r0, now, (uint32_t)(1 + ph), g->names[2 * l + (size_t)ph], 0, false, 0};
                if (g->ranges && sp_trace_add_range(g->ctx, g->t, &r) != SP_OK)
                    g->st = SP_ERR_NOMEM;
            }
        struct sp_trace_range r = {step_start, now + 1, 1, g->step_name, 0, false, 0};
        if (g->ranges && sp_trace_add_range(g->ctx, g->t, &r) != SP_OK)
            g->st = SP_ERR_NOMEM;
        now += 100;
    }
}

static void row(const char *what, size_t kernels, size_t ranges, size_t n_layers, double secs,
                sp_status st) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("| %s | %zu | %zu | %zu | %zu | %.2f s | %ld MB | %s |\n", what, kernels, ranges,
           n_layers, steps, secs, ru.ru_maxrss / 1024, sp_status_name(st));
}

int main(int argc, char **argv) {
    size_t kernels = argc > 1 ? strtoull(argv[1], NULL, 10) : 10000000;
    size_t per_range = kernels / (steps * layers * 2);
    if (!per_range)
        per_range = 1;
    kernels = per_range * steps * layers * 2;
    sp_ctx *ctx = NULL;
    struct sp_trace t;
    if (sp_ctx_create(&ctx) != SP_OK || sp_trace_init(ctx, &t) != SP_OK)
        return 1;
    t.file = sp_strdup("synthetic");
    t.collector = sp_strdup("synthetic");
    struct gen g = {ctx, &t, NULL, true, per_range, 0, 0, NULL, SP_OK};
    sp_trace_intern(ctx, &t, "gemm", 4, &g.kname);
    sp_trace_intern(ctx, &t, "stagepart/step", 14, &g.step_name);
    g.names = malloc(2 * layers * sizeof *g.names);
    for (size_t l = 0; l < layers; l++)
        for (int ph = 0; ph < 2; ph++) {
            char buf[64];
            int n = snprintf(buf, sizeof buf, "layers.%zu/%s", l, ph ? "bwd" : "fwd");
            sp_trace_intern(ctx, &t, buf, (size_t)n, &g.names[2 * l + (size_t)ph]);
        }
    generate(&g); /* the ranges */
    printf("## Attribution engine (one core)\n\n");
    printf("| records | kernels | ranges | layers | steps | time | peak RSS | status |\n");
    printf("|---|---|---|---|---|---|---|---|\n");
    struct sp_attrib_opts o = {.warmup_steps = 1};
    struct sp_attribution res;

    double t0 = sp_now_ms();
    g.ranges = false;
    sp_status st = sp_attrib_begin(ctx, &t, &o, 0, 0, &g.stream);
    if (st == SP_OK) {
        generate(&g); /* includes making the records: an upper bound on the engine's time */
        st = g.st == SP_OK ? sp_attrib_end(g.stream, &res) : g.st;
        if (g.st != SP_OK)
            sp_attrib_abort(g.stream);
    }
    row("streamed", kernels, t.n_ranges, st == SP_OK ? res.n_layers : 0, (sp_now_ms() - t0) / 1e3,
        st);
    if (st == SP_OK)
        sp_attribution_release(&res);

    g.stream = NULL;
    generate(&g);
    t0 = sp_now_ms();
    st = g.st == SP_OK ? sp_attribute(ctx, &t, &o, &res) : g.st;
    row("held", kernels, t.n_ranges, st == SP_OK ? res.n_layers : 0, (sp_now_ms() - t0) / 1e3, st);
    if (st == SP_OK)
        sp_attribution_release(&res);
    sp_trace_release(&t);
    free(g.names);
    sp_ctx_destroy(ctx);
    return st == SP_OK ? 0 : 1;
}

/* bench/bench_event_log.c: the live collector's event log, both ends, on a synthetic run.
 * usage: bench_event_log [KERNELS] [DIR]   (default 10,000,000 kernels, /tmp) prints a markdown
 * table (docs/benchmarks.md):
 *   write   what the collector spends per kernel inside the program: per kernel the calls its
 *           buffer thread makes (the kernel's name by address, the API record with its range,
 *           the activity), per range its record; one thread
 *   read    sp_trace_load_events (the file back into the event store)
 *   profile sp_trace_to_profile (attribution and the profile document)
 * 10 steps of 1,000 layers, forward and backward; peak RSS is the whole process's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "event_log.h"
#include "internal.h"

int main(int argc, char **argv) {
    size_t kernels = argc > 1 ? strtoull(argv[1], NULL, 10) : 10000000;
    const char *dir = argc > 2 ? argv[2] : "/tmp";
    const size_t steps = 10, layers = 1000;
    size_t per_range = kernels / (steps * layers * 2);
    if (!per_range)
        per_range = 1;
    char path[4096];
    snprintf(path, sizeof path, "%s/bench-events-%ld.splog", dir, (long)getpid());
    struct sp_evlog *log = sp_evlog_open(path, (uint32_t)getpid());
    if (!log)
        return 1;
    double t0 = sp_now_ms();
    uint32_t step_name, names[2000];
    sp_evlog_string(log, "stagepart/step", 14, &step_name);
    for (size_t l = 0; l < layers; l++)
        for (int ph = 0; ph < 2; ph++) {
            char buf[64];
            int n = snprintf(buf, sizeof buf, "layers.%zu/%s", l, ph ? "bwd" : "fwd");
            sp_evlog_string(log, buf, (size_t)n, &names[2 * l + (size_t)ph]);
        }
    sp_evlog_thread(log, 0, 100, 1000);
    sp_evlog_thread(log, 1, 101, 1001);
    const int64_t base = 1700000000000000000;
    int64_t now = base, gpu = base;
    uint64_t corr = 0, range_id = 0, written = 0;
    const char *kname = "void gemm_kernel<float, 128, 128>(float const*, float*)";
    for (size_t s = 0; s < steps; s++) {
        int64_t step_start = now;
        uint64_t step_id = ++range_id;
        for (int ph = 0; ph < 2; ph++)
            for (size_t i = 0; i < layers; i++) {
                size_t l = ph ? layers - 1 - i : i;
                int64_t r0 = now;
                uint64_t id = ++range_id;
                for (size_t k = 0; k < per_range; k++) {
                    int64_t start = gpu > now + 2 ? gpu : now + 2;
                    uint32_t kn;
                    ++corr;
                    sp_evlog_api(log, now + 1, corr, (uint32_t)(100 + ph), id);
                    sp_evlog_name(log, kname, &kn);
                    sp_evlog_activity(log, 0, start, start + 50, corr, 0, 0, (uint32_t)(k % 2), kn);
                    written++;
                    gpu = start + 40;
                    now += 3;
                }
                now = (gpu > now ? gpu : now) + 10;
                sp_evlog_range(log, id, r0, now, (uint32_t)ph, names[2 * l + (size_t)ph], 0, false);
            }
        sp_evlog_range(log, step_id, step_start, now + 1, 0, step_name, 0, false);
        now += 100;
    }
    int err = sp_evlog_close(log);
    double write_s = (sp_now_ms() - t0) / 1e3;
    struct stat stt;
    stat(path, &stt);

    sp_ctx *ctx = NULL;
    sp_ctx_create(&ctx);
    sp_trace *trace = NULL;
    const char *paths[] = {path};
    t0 = sp_now_ms();
    sp_status st = err ? SP_ERR_IO : sp_trace_load_events(ctx, paths, 1, &trace);
    double read_s = (sp_now_ms() - t0) / 1e3;
    char *json = NULL;
    sp_trace_summary sum = {0};
    sp_trace_profile_opts o;
    sp_trace_profile_opts_init(&o);
    t0 = sp_now_ms();
    if (st == SP_OK)
        st = sp_trace_to_profile(ctx, trace, &o, &json, &sum);
    double prof_s = (sp_now_ms() - t0) / 1e3;
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("## Live collector's event log (one core)\n\n");
    printf("| kernels | log size | write | per kernel | read | profile | layers | peak RSS | "
           "status |\n");
    printf("|---|---|---|---|---|---|---|---|---|\n");
    printf("| %llu | %.0f MB | %.2f s | %.0f ns | %.2f s | %.2f s | %zu | %ld MB | %s |\n",
           (unsigned long long)written, (double)stt.st_size / 1e6, write_s,
           write_s * 1e9 / (double)written, read_s, prof_s, sum.layers, ru.ru_maxrss / 1024,
           sp_status_name(st));
    if (st != SP_OK)
        fprintf(stderr, "%s\n", sp_ctx_get_errmsg(ctx));
    sp_free(json);
    sp_trace_destroy(trace);
    sp_ctx_destroy(ctx);
    unlink(path);
    return st == SP_OK ? 0 : 1;
}

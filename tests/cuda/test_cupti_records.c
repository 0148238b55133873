/* tests/cuda/test_cupti_records.c: the collector's record parsing through the real libcupti,
 * without a GPU: libcupti's cuptiActivityGetNextRecord walks a hand-built buffer of CUPTI 13
 * records (it needs no driver for that), profiler/cuda/cupti_records.c writes the event log,
 * and the log goes through the reader and the attribution engine to a profile whose numbers are
 * the records' own. Also: the window cut (records after the traced steps), a graph launch, a
 * launch without external correlation attributed by its CUPTI thread id. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <unistd.h>

#include "../test.h"
#include "cupti_fixture.h"
#include "cupti_records.h"
#include "stagepart/stagepart.h"
#include "trace.h"

static const uint64_t ms = 1000000; /* integers: 1.7e18 + x is not exact in a double */

static cJSON *layer(cJSON *profile, const char *name) {
    cJSON *l;
    cJSON_ArrayForEach(l, cJSON_GetObjectItem(profile, "layers")) {
        if (strcmp(cJSON_GetObjectItem(l, "name")->valuestring, name) == 0)
            return l;
    }
    return NULL;
}

static double num(cJSON *o, const char *k) {
    cJSON *v = cJSON_GetObjectItem(o, k);
    return v ? v->valuedouble : (double)NAN;
}

int main(void) {
    uint32_t version = 0;
    SP_CHECK_EQ_INT(cuptiGetVersion(&version), CUPTI_SUCCESS);
    SP_CHECK_MSG(version >= 130000, "CUPTI %u: the record layouts are 13.0's", version);

    char dir[] = "/tmp/sp-cupti-records-XXXXXX";
    SP_CHECK(mkdtemp(dir) != NULL);
    char path[128];
    snprintf(path, sizeof path, "%s/events-1.splog", dir);
    struct sp_evlog *log = sp_evlog_open(path, 1);
    SP_CHECK(log != NULL);
    if (!log)
        return 1;

    /* the NVTX side: thread 0 (OS ids 99 / 0x1234) with L0/fwd [1, 5] ms and L1/fwd [5, 9] ms */
    const uint64_t t0 = 1700000000000000000ull; /* CUPTI's clock is the wall clock */
    uint32_t n_l0, n_l1;
    SP_CHECK(sp_evlog_string(log, "L0/fwd", 6, &n_l0));
    SP_CHECK(sp_evlog_string(log, "L1/fwd", 6, &n_l1));
    sp_evlog_thread(log, 0, 99, 0x1234);
    sp_evlog_range(log, 1, (int64_t)(t0 + 1 * ms), (int64_t)(t0 + 5 * ms), 0, n_l0, 0, false);
    sp_evlog_range(log, 2, (int64_t)(t0 + 5 * ms), (int64_t)(t0 + 9 * ms), 0, n_l1, 1 << 20, true);

    /* the CUDA side, as CUPTI would hand it over */
    struct fixture_buffer b = {calloc(1, 1 << 16), 0, 1 << 16};
    fixture_device(&b, 0, "Fake H200");
    fixture_extcorr(&b, 11, 1); /* launch 11 ran inside range 1 */
    fixture_api(&b, CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
                t0 + 2 * ms, 11, 99);
    fixture_kernel(&b, t0 + 10 * ms, t0 + 13 * ms, 11, 0, "_Z4gemmPf"); /* runs later: async */
    fixture_extcorr(&b, 12, 1);
    fixture_api(&b, CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020,
                t0 + 3 * ms, 12, 99);
    fixture_memset(&b, t0 + 13 * ms, t0 + 14 * ms, 12, 4096);
    /* launch 13 has no external correlation (made before CUPTI was ready): CUPTI's thread id
     * 99 is thread 0's gettid, and at 6 ms thread 0 is inside L1/fwd */
    fixture_api(&b, CUPTI_ACTIVITY_KIND_DRIVER, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, t0 + 6 * ms,
                13, 99);
    fixture_kernel(&b, t0 + 15 * ms, t0 + 17 * ms, 13, 0, "ncclDevKernel_SendRecv");
    fixture_extcorr(&b, 14, 2);
    fixture_api(&b, CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020,
                t0 + 7 * ms, 14, 99);
    fixture_memcpy(&b, t0 + 17 * ms, t0 + 18 * ms, 14, 1 << 20);
    fixture_extcorr(&b, 15, 2);
    fixture_api(&b, CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyPeerAsync_v4000,
                t0 + 8 * ms, 15, 99);
    fixture_p2p(&b, t0 + 18 * ms, t0 + 20 * ms, 15, 2 << 20);
    fixture_extcorr(&b, 16, 2);
    fixture_api(&b, CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000,
                t0 + 17 * ms / 2, 16, 99);
    fixture_kernel(&b, t0 + 20 * ms, t0 + 24 * ms, 16, 0, "graph_node_kernel");
    /* an external correlation whose API record does not follow it (as across two buffers) */
    fixture_extcorr(&b, 17, 2);
    fixture_kernel(&b, t0 + 24 * ms, t0 + 25 * ms, 17, 0, "tail");
    fixture_api(&b, CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
                t0 + 87 * ms / 10, 17, 4242); /* an unknown thread id: the range decides */
    /* a getter inside a range: makes no GPU work, so it is not written */
    fixture_extcorr(&b, 18, 2);
    fixture_api(&b, CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020,
                t0 + 88 * ms / 10, 18, 99);
    /* a kernel after the traced window: counted, not written */
    fixture_kernel(&b, t0 + 60 * ms, t0 + 61 * ms, 16, 0, "late");

    struct sp_record_counts c = {0};
    CUptiResult r = sp_cupti_records_write(&sp_cupti_real_ops, log, b.data, b.used,
                                           (int64_t)(t0 + 50 * ms), &c);
    SP_CHECK_MSG(r == CUPTI_ERROR_MAX_LIMIT_REACHED, "the walk ended with %d", (int)r);
    SP_CHECK_EQ_INT(c.kernels, 5);
    SP_CHECK_EQ_INT(c.copies, 2);
    SP_CHECK_EQ_INT(c.memsets, 1);
    SP_CHECK_EQ_INT(c.apis, 8);
    SP_CHECK_EQ_INT(c.apis_skipped, 1);
    SP_CHECK_EQ_INT(c.extcorrs, 7);
    SP_CHECK_EQ_INT(c.devices, 1);
    SP_CHECK_EQ_INT(c.graph_launches, 1);
    SP_CHECK_EQ_INT(c.after_window, 1);
    SP_CHECK_EQ_INT(c.other, 0);
    sp_evlog_dropped(log, 3);
    SP_CHECK_EQ_INT(sp_evlog_close(log), 0);

    sp_ctx *ctx = NULL;
    SP_CHECK_STATUS(sp_ctx_create(&ctx), SP_OK);
    sp_trace *trace = NULL;
    const char *paths[] = {path};
    SP_CHECK_STATUS(sp_trace_load_events(ctx, paths, 1, &trace), SP_OK);
    sp_trace_profile_opts opts;
    sp_trace_profile_opts_init(&opts);
    char *json = NULL;
    sp_trace_summary sum;
    SP_CHECK_STATUS(sp_trace_to_profile(ctx, trace, &opts, &json, &sum), SP_OK);
    SP_CHECK_EQ_INT(sum.activities, 7);
    /* launches are read again when attributed (the second pass): counted by the first */
    SP_CHECK_EQ_INT(((struct sp_trace *)trace)->replay.launches, 7);
    SP_CHECK_EQ_INT(sum.unmatched, 0);
    SP_CHECK_EQ_INT(sum.dropped_records, 3);
    SP_CHECK(fabs(sum.gpu_ms - 14.0) < 1e-9);
    SP_CHECK(sum.unattributed_ms == 0);
    cJSON *p = json ? cJSON_Parse(json) : NULL;
    SP_CHECK(p != NULL);
    cJSON *l0 = p ? layer(p, "L0") : NULL, *l1 = p ? layer(p, "L1") : NULL;
    SP_CHECK(l0 && l1);
    if (l0 && l1) {
        /* L0: the gemm (3 ms) and the memset (1 ms), back to back */
        SP_CHECK_MSG(fabs(num(l0, "fwd_ms") - 4.0) < 1e-9, "L0 fwd %.6f", num(l0, "fwd_ms"));
        /* L1: the graph's kernel (4 ms); the NCCL kernel and the copies are reported apart */
        cJSON *f1 = cJSON_GetObjectItem(cJSON_GetObjectItem(l1, "measured"), "fwd");
        SP_CHECK_MSG(fabs(num(f1, "nccl_ms") - 2.0) < 1e-9, "L1 nccl %.6f", num(f1, "nccl_ms"));
        SP_CHECK_EQ_INT(num(f1, "copies"), 2);
        SP_CHECK_EQ_INT(num(f1, "copy_bytes"), 3 << 20);
        SP_CHECK_EQ_INT(num(l1, "activation_bytes"), 1 << 20);
        SP_CHECK_MSG(fabs(num(f1, "kernel_ms") - 5.0) < 1e-9, "L1 kernel %.6f",
                     num(f1, "kernel_ms")); /* graph 4 + tail 1; NCCL apart */
        SP_CHECK_MSG(fabs(num(l1, "fwd_ms") - 5.0) < 1e-9, "L1 fwd %.6f", num(l1, "fwd_ms"));
    }
    cJSON *m = p ? cJSON_GetObjectItem(p, "measurement") : NULL;
    cJSON *devs = m ? cJSON_GetObjectItem(m, "devices") : NULL;
    SP_CHECK(devs && cJSON_GetArraySize(devs) == 1 &&
             strcmp(cJSON_GetObjectItem(cJSON_GetArrayItem(devs, 0), "name")->valuestring,
                    "Fake H200") == 0);
    cJSON_Delete(p);
    sp_free(json);
    sp_trace_destroy(trace);

    /* a log cut inside its last record (the program was killed) reads up to that record */
    FILE *f = fopen(path, "rb");
    SP_CHECK(f != NULL);
    if (f) {
        fseek(f, 0, SEEK_END);
        long len = ftell(f);
        fclose(f);
        SP_CHECK(truncate(path, len - 3) == 0);
        SP_CHECK_STATUS(sp_trace_load_events(ctx, paths, 1, &trace), SP_OK);
        sp_trace_destroy(trace);
    }
    unlink(path);
    rmdir(dir);
    sp_ctx_destroy(ctx);
    free(b.data);
    printf("%d checks, %d failures\n", sp_test_checks, sp_test_failures);
    return sp_test_failures ? 1 : 0;
}

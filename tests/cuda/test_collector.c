/* tests/cuda/test_collector.c: the live collector's life cycle against a fake CUPTI (the same
 * function table, profiler/cuda/cupti_ops.h) and a fake NVTX export table, without a GPU. One
 * scenario per process (the collector's state is per process, as in a real program):
 *   ok            NVTX handlers installed, CUPTI set up with CONCURRENT_KERNEL (never KERNEL),
 *                 external correlation pushed per range once CUPTI is ready, buffers completed
 *                 at exit, and the profile from the log has the fake kernels' times
 *   enable-fails  a failing cuptiActivityEnable: one message, recording off, the program goes on
 *   push-fails    a failing external-correlation push mid-run: the same
 *   steps         --steps 1 --warmup-steps 1: the third step is not recorded; when the window
 *                 closes the ranges stop pushing ids and CUPTI is asked to detach: at the next
 *                 API exit it is flushed, every kind and API record is disabled and cuptiFinalize
 *                 runs, once; nothing touches CUPTI after
 *   steps-taken   the same where another tool holds CUPTI's one subscription: the kinds and
 *                 API records are disabled when the window closes, CUPTI stays attached
 *   api-all, api-unsupported  STAGEPART_INJECT_API=all, or a CUPTI older than 12.5: every
 *                 runtime and driver call recorded (the RUNTIME and DRIVER kinds), as before
 *   idle          STAGEPART_INJECT_MODE=idle: hooks answer, nothing is written
 * In every other scenario only the launching calls' API records are enabled (by CUPTI's own
 * callback names: cudaLaunch*, cudaMemcpy*, cudaMemset*, cudaGraphLaunch*, cu* twins). */
#define _GNU_SOURCE
#define NVTX_NO_IMPL
#include <cjson/cJSON.h>
#include <math.h>
#include <nvtx3/nvToolsExt.h>
#include <stdlib.h>
#include <unistd.h>

#include "../test.h"
#include "collector.h"
#include "cupti_fixture.h"
#include "stagepart/stagepart.h"

int NVTX_API InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_table);

/* ---- fake CUPTI */
static uint64_t now_ns = 1000000000;
static CUpti_BuffersCallbackRequestFunc requested;
static CUpti_BuffersCallbackCompleteFunc completed;
static CUpti_ActivityKind enabled[32];
static int n_enabled, pushes, pops, flushes;
static uint64_t last_pushed;
static CUpti_ActivityKind fail_enable = CUPTI_ACTIVITY_KIND_INVALID;
static bool fail_push, api_unsupported, subscribe_taken;
static int disables, api_on[2], api_off[2], finalizes, domains;
static bool api_enabled[2][1024]; /* [0] runtime, [1] driver, by cbid */
static CUpti_CallbackFunc subscribed;
static struct fixture_buffer buf;

static CUptiResult f_version(uint32_t *v) {
    *v = 130001;
    return CUPTI_SUCCESS;
}
static CUptiResult f_timestamp(uint64_t *t) {
    *t = now_ns;
    return CUPTI_SUCCESS;
}
static CUptiResult f_result_string(CUptiResult r, const char **s) {
    *s = r == CUPTI_ERROR_UNKNOWN ? "CUPTI_ERROR_UNKNOWN" : "some error";
    return CUPTI_SUCCESS;
}
static CUptiResult f_set_attribute(CUpti_ActivityAttribute a, size_t *size, void *value) {
    (void)a;
    (void)size;
    (void)value;
    return CUPTI_SUCCESS;
}
static CUptiResult f_register(CUpti_BuffersCallbackRequestFunc r,
                              CUpti_BuffersCallbackCompleteFunc c) {
    requested = r;
    completed = c;
    return CUPTI_SUCCESS;
}
static CUptiResult f_enable(CUpti_ActivityKind k) {
    if (k == fail_enable)
        return CUPTI_ERROR_UNKNOWN;
    enabled[n_enabled++] = k;
    return CUPTI_SUCCESS;
}
static CUptiResult f_dropped(CUcontext c, uint32_t s, size_t *d) {
    (void)c;
    (void)s;
    *d = 0;
    return CUPTI_SUCCESS;
}
static CUptiResult f_flush(uint32_t flag) {
    (void)flag;
    flushes++;
    if (buf.data && completed) {
        uint8_t *b = buf.data;
        buf.data = NULL; /* CUPTI hands a buffer back once; the collector frees or pools it */
        completed(NULL, 0, b, buf.cap, buf.used);
    }
    return CUPTI_SUCCESS;
}
static CUptiResult f_push(CUpti_ExternalCorrelationKind k, uint64_t id) {
    if (fail_push)
        return CUPTI_ERROR_UNKNOWN;
    pushes += k == CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2;
    last_pushed = id;
    return CUPTI_SUCCESS;
}
static CUptiResult f_pop(CUpti_ExternalCorrelationKind k, uint64_t *last) {
    pops += k == CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2;
    *last = last_pushed;
    return finalizes ? CUPTI_ERROR_NOT_INITIALIZED : CUPTI_SUCCESS;
}
static CUptiResult f_disable(CUpti_ActivityKind k) {
    (void)k;
    disables++;
    return CUPTI_SUCCESS;
}
static CUptiResult api(int d, CUpti_CallbackId cbid, uint8_t on) {
    if (api_unsupported)
        return CUPTI_ERROR_NOT_SUPPORTED;
    SP_CHECK(cbid < 1024);
    if (cbid < 1024)
        api_enabled[d][cbid] = on;
    on ? api_on[d]++ : api_off[d]++;
    return CUPTI_SUCCESS;
}
static CUptiResult f_runtime_api(CUpti_CallbackId cbid, uint8_t on) {
    return api(0, cbid, on);
}
static CUptiResult f_driver_api(CUpti_CallbackId cbid, uint8_t on) {
    return api(1, cbid, on);
}
static CUptiResult f_subscribe(CUpti_SubscriberHandle *h, CUpti_CallbackFunc cb, void *u) {
    (void)u;
    if (subscribe_taken)
        return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
    *h = (CUpti_SubscriberHandle)&subscribed;
    subscribed = cb;
    return CUPTI_SUCCESS;
}
static CUptiResult f_enable_domain(uint32_t on, CUpti_SubscriberHandle h, CUpti_CallbackDomain d) {
    (void)h, (void)d;
    domains += on == 1;
    return CUPTI_SUCCESS;
}
static CUptiResult f_unsubscribe(CUpti_SubscriberHandle h) {
    (void)h;
    return CUPTI_SUCCESS;
}
static CUptiResult f_finalize(void) {
    finalizes++;
    return CUPTI_SUCCESS;
}

static const struct sp_cupti_ops fake = {
    .get_version = f_version,
    .get_timestamp = f_timestamp,
    .get_result_string = f_result_string,
    .set_attribute = f_set_attribute,
    .register_callbacks = f_register,
    .enable = f_enable,
    .get_next_record = cuptiActivityGetNextRecord, /* libcupti walks buffers without a driver */
    .get_num_dropped_records = f_dropped,
    .flush_all = f_flush,
    .push_external_correlation = f_push,
    .pop_external_correlation = f_pop,
    .get_callback_name = cuptiGetCallbackName, /* a static table in libcupti */
    .disable = f_disable,
    .enable_runtime_api = f_runtime_api,
    .enable_driver_api = f_driver_api,
    .subscribe = f_subscribe,
    .enable_domain = f_enable_domain,
    .unsubscribe = f_unsubscribe,
    .finalize = f_finalize,
};

static bool kind_enabled(CUpti_ActivityKind k) {
    for (int i = 0; i < n_enabled; i++)
        if (enabled[i] == k)
            return true;
    return false;
}

/* the launching calls' API records, and only those (or, all_apis, the RUNTIME and DRIVER kinds) */
static void check_api_records(bool all_apis) {
    SP_CHECK_EQ_INT(kind_enabled(CUPTI_ACTIVITY_KIND_RUNTIME), all_apis);
    SP_CHECK_EQ_INT(kind_enabled(CUPTI_ACTIVITY_KIND_DRIVER), all_apis);
    if (all_apis)
        return;
    SP_CHECK(api_enabled[0][CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000]);
    SP_CHECK(api_enabled[0][CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020]);
    SP_CHECK(api_enabled[0][CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020]);
    SP_CHECK(api_enabled[0][CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000]);
    SP_CHECK(!api_enabled[0][CUPTI_RUNTIME_TRACE_CBID_cudaGetDeviceCount_v3020]);
    SP_CHECK(!api_enabled[0][CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020]);
    SP_CHECK(api_enabled[1][CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel]);
    SP_CHECK(api_enabled[1][CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2]);
    SP_CHECK(!api_enabled[1][CUPTI_DRIVER_TRACE_CBID_cuCtxGetDevice]);
    /* a few dozen of the ~500 runtime and ~800 driver calls */
    SP_CHECK_MSG(api_on[0] > 20 && api_on[0] < 200 && api_on[1] > 20 && api_on[1] < 300,
                 "%d runtime, %d driver", api_on[0], api_on[1]);
}

/* CUPTI calls a subscriber back at an API's exit */
static void api_exit(void) {
    CUpti_CallbackData d;
    memset(&d, 0, sizeof d);
    d.callbackSite = CUPTI_API_EXIT;
    if (subscribed)
        subscribed(NULL, CUPTI_CB_DOMAIN_RUNTIME_API,
                   CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, &d);
}

/* ---- fake NVTX module: the slots a program's NVTX globals would have */
static NvtxFunctionPointer core[NVTX_CBID_CORE_SIZE], core2[NVTX_CBID_CORE2_SIZE];
static NvtxFunctionPointer *core_table[NVTX_CBID_CORE_SIZE], *core2_table[NVTX_CBID_CORE2_SIZE];

static int NVTX_API get_module(NvtxCallbackModule m, NvtxFunctionTable *out, unsigned *size) {
    if (m == NVTX_CB_MODULE_CORE) {
        *out = core_table;
        *size = NVTX_CBID_CORE_SIZE;
        return 1;
    }
    if (m == NVTX_CB_MODULE_CORE2) {
        *out = core2_table;
        *size = NVTX_CBID_CORE2_SIZE;
        return 1;
    }
    return 0;
}
static const NvtxExportTableCallbacks callbacks = {sizeof callbacks, get_module};
static const void *NVTX_API get_table(uint32_t id) {
    return id == NVTX_ETID_CALLBACKS ? &callbacks : NULL;
}

static int push(const char *name) {
    return ((int (*)(const char *))core[9])(name);
}
static int pop(void) {
    return ((int (*)(void))core[11])();
}

/* a kernel launched now inside the innermost range, running [start, start + dur) */
static uint32_t next_corr = 1;
static void launch(uint64_t start, uint64_t dur) {
    if (!buf.data) {
        uint8_t *b = NULL;
        size_t size = 0, max = 0;
        requested(&b, &size, &max);
        SP_CHECK(b != NULL && size >= 4096);
        buf = (struct fixture_buffer){b, 0, size};
    }
    uint32_t corr = next_corr++;
    if (pushes > pops)
        fixture_extcorr(&buf, corr, last_pushed);
    fixture_api(&buf, CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
                now_ns, corr, 4242);
    fixture_kernel(&buf, start, start + dur, corr, 0, "k");
}

static char dir[] = "/tmp/sp-collector-XXXXXX";

static sp_trace *read_back(size_t expect_logs) {
    char path[128];
    snprintf(path, sizeof path, "%s/events-%ld.splog", dir, (long)getpid());
    bool exists = access(path, F_OK) == 0;
    SP_CHECK_EQ_INT(exists, expect_logs);
    if (!exists)
        return NULL;
    sp_ctx *ctx = NULL;
    sp_ctx_create(&ctx);
    sp_trace *t = NULL;
    const char *paths[] = {path};
    SP_CHECK_STATUS(sp_trace_load_events(ctx, paths, 1, &t), SP_OK);
    sp_ctx_destroy(ctx);
    unlink(path);
    return t;
}

static double layer_fwd_ms(sp_trace *t, const char *layer, uint32_t warmup, uint32_t *steps) {
    sp_ctx *ctx = NULL;
    sp_ctx_create(&ctx);
    sp_trace_profile_opts o;
    sp_trace_profile_opts_init(&o);
    o.warmup_steps = warmup;
    char *json = NULL;
    sp_trace_summary s;
    double v = (double)NAN;
    SP_CHECK_STATUS(sp_trace_to_profile(ctx, t, &o, &json, &s), SP_OK);
    *steps = s.steps_total;
    cJSON *p = json ? cJSON_Parse(json) : NULL, *l;
    cJSON *layers = p ? cJSON_GetObjectItem(p, "layers") : NULL;
    cJSON_ArrayForEach(l, layers) {
        if (strcmp(cJSON_GetObjectItem(l, "name")->valuestring, layer) == 0)
            v = cJSON_GetObjectItem(l, "fwd_ms")->valuedouble;
    }
    cJSON_Delete(p);
    sp_free(json);
    sp_ctx_destroy(ctx);
    return v;
}

static bool stderr_has_one(const char *path, const char *needle) {
    fflush(stderr);
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    char line[1024];
    int n = 0, hits = 0;
    while (fgets(line, sizeof line, f)) {
        n += strncmp(line, "stagepart-inject:", 17) == 0;
        hits += strstr(line, needle) != NULL;
    }
    fclose(f);
    return n == 1 && hits == 1;
}

int main(int argc, char **argv) {
    const char *scenario = argc > 1 ? argv[1] : "ok";
    for (size_t i = 0; i < NVTX_CBID_CORE_SIZE; i++)
        core_table[i] = &core[i];
    for (size_t i = 0; i < NVTX_CBID_CORE2_SIZE; i++)
        core2_table[i] = &core2[i];
    SP_CHECK(mkdtemp(dir) != NULL);
    setenv("STAGEPART_INJECT_DIR", dir, 1);
    char err_path[160];
    snprintf(err_path, sizeof err_path, "%s/stderr", dir);
    int saved_stderr = dup(2); /* the collector's messages are checked; the checks' are shown */
    SP_CHECK(freopen(err_path, "w", stderr) != NULL);
    sp_collector_set_ops(&fake);
    const uint64_t ms = 1000000;

    if (strcmp(scenario, "idle") == 0) {
        setenv("STAGEPART_INJECT_MODE", "idle", 1);
        SP_CHECK_EQ_INT(InitializeInjectionNvtx2(get_table), 1);
        SP_CHECK_EQ_INT(sp_collector_init_cupti(), 1);
        SP_CHECK_EQ_INT(push("a/fwd"), 0);
        SP_CHECK_EQ_INT(push("b/fwd"), 1);
        SP_CHECK_EQ_INT(pop(), 1);
        SP_CHECK_EQ_INT(pop(), 0);
        SP_CHECK_EQ_INT(pop(), -1);
        SP_CHECK_EQ_INT(n_enabled + pushes, 0);
        sp_collector_finish();
        SP_CHECK(read_back(0) == NULL);
    } else if (strcmp(scenario, "api-all") == 0 || strcmp(scenario, "api-unsupported") == 0) {
        if (scenario[4] == 'a')
            setenv("STAGEPART_INJECT_API", "all", 1);
        else
            api_unsupported = true;
        SP_CHECK_EQ_INT(InitializeInjectionNvtx2(get_table), 1);
        SP_CHECK_EQ_INT(sp_collector_init_cupti(), 1);
        check_api_records(true);
        sp_collector_finish();
        sp_trace *t = read_back(1);
        SP_CHECK(t != NULL);
        sp_trace_destroy(t);
        SP_CHECK(stderr_has_one(err_path, "stagepart-inject") == false);
    } else if (strcmp(scenario, "steps") == 0 || strcmp(scenario, "steps-taken") == 0) {
        bool taken = strcmp(scenario, "steps-taken") == 0;
        subscribe_taken = taken;
        setenv("STAGEPART_INJECT_STEPS", "1", 1);
        setenv("STAGEPART_INJECT_WARMUP", "1", 1);
        SP_CHECK_EQ_INT(InitializeInjectionNvtx2(get_table), 1);
        SP_CHECK_EQ_INT(sp_collector_init_cupti(), 1);
        check_api_records(false);
        for (int s = 0; s < 3; s++) {
            push("stagepart/step");
            push("a/fwd");
            launch(now_ns + ms, (uint64_t)(s + 1) * ms); /* 1, 2, 3 ms */
            now_ns += 5 * ms;
            pop();
            now_ns += 5 * ms;
            pop();
            if (s == 1) { /* the window closed with the second step */
                SP_CHECK_EQ_INT(domains, taken ? 0 : 2);
                SP_CHECK_EQ_INT(disables > 0, taken); /* taken: off at once; else at detach */
                SP_CHECK_EQ_INT(pushes, 4);
            }
        }
        SP_CHECK_EQ_INT(pushes, 4); /* the third step's ranges left CUPTI alone */
        SP_CHECK_EQ_INT(pops, 4);
        api_exit(); /* CUPTI's next API exit: the detach, once */
        api_exit();
        SP_CHECK_EQ_INT(finalizes, taken ? 0 : 1);
        SP_CHECK_EQ_INT(flushes, taken ? 0 : 1);
        SP_CHECK_EQ_INT(disables, 6); /* every kind */
        SP_CHECK_EQ_INT(api_off[0], api_on[0]);
        SP_CHECK_EQ_INT(api_off[1], api_on[1]);
        push("a/fwd"); /* a range after the detach: no CUPTI call */
        pop();
        SP_CHECK_EQ_INT(pushes + pops, 8);
        sp_collector_finish();
        SP_CHECK_EQ_INT(flushes, 1); /* detached: flushed once, before; taken: at exit */
        sp_trace *t = read_back(1);
        uint32_t steps = 0;
        double fwd = t ? layer_fwd_ms(t, "a", 1, &steps) : (double)NAN;
        SP_CHECK_EQ_INT(steps, 2); /* the third step is past the window */
        SP_CHECK_MSG(fabs(fwd - 2.0) < 1e-9, "a/fwd %.6f ms: the second step's", fwd);
        sp_trace_destroy(t);
    } else if (strcmp(scenario, "enable-fails") == 0 || strcmp(scenario, "push-fails") == 0) {
        bool at_enable = scenario[0] == 'e';
        if (at_enable)
            fail_enable = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
        SP_CHECK_EQ_INT(InitializeInjectionNvtx2(get_table), 1);
        SP_CHECK_EQ_INT(sp_collector_init_cupti(), 1); /* the program runs on */
        fail_push = !at_enable;
        SP_CHECK_EQ_INT(push("a/fwd"), 0);
        SP_CHECK_EQ_INT(pop(), 0);
        fail_push = false;
        SP_CHECK_EQ_INT(push("b/fwd"), 0);
        SP_CHECK_EQ_INT(pop(), 0);
        SP_CHECK_EQ_INT(pushes, 0);
        sp_collector_finish();
        SP_CHECK_EQ_INT(flushes, 0); /* off: CUPTI is left alone */
        SP_CHECK(stderr_has_one(err_path, at_enable ? "cuptiActivityEnable(CONCURRENT_KERNEL)"
                                                    : "cuptiActivityPushExternalCorrelationId"));
        sp_trace *t = read_back(1); /* the log holds what came before the failure */
        SP_CHECK(t != NULL);
        sp_trace_destroy(t);
    } else {
        SP_CHECK_EQ_INT(InitializeInjectionNvtx2(get_table), 1);
        SP_CHECK(core[9] && core[11] && core2[4] && core2[5] && core2[10] && core2[12]);
        push("stagepart/step"); /* before cuInit: no correlation id to push yet */
        SP_CHECK_EQ_INT(sp_collector_init_cupti(), 1);
        SP_CHECK_EQ_INT(sp_collector_init_cupti(), 1); /* a second call changes nothing */
        check_api_records(false);
        bool concurrent = false, serializing = false;
        for (int i = 0; i < n_enabled; i++) {
            concurrent |= enabled[i] == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
            serializing |= enabled[i] == CUPTI_ACTIVITY_KIND_KERNEL;
        }
        SP_CHECK(concurrent && !serializing);
        SP_CHECK_EQ_INT(push("a/fwd"), 1);
        launch(now_ns + ms, 2 * ms);
        launch(now_ns + 2 * ms, 2 * ms); /* overlaps the first: 3 ms busy */
        now_ns += 4 * ms;
        SP_CHECK_EQ_INT(pop(), 1);
        SP_CHECK_EQ_INT(push("b/fwd"), 1);
        launch(now_ns + 10 * ms, 5 * ms);
        now_ns += 1 * ms;
        SP_CHECK_EQ_INT(pop(), 1);
        now_ns += 20 * ms;
        SP_CHECK_EQ_INT(pop(), 0);
        SP_CHECK_EQ_INT(pushes, 2);
        SP_CHECK_EQ_INT(pops, 2);
        sp_collector_finish();
        SP_CHECK_EQ_INT(flushes, 1);
        sp_trace *t = read_back(1);
        uint32_t steps = 0;
        double a = t ? layer_fwd_ms(t, "a", 0, &steps) : (double)NAN;
        double b = t ? layer_fwd_ms(t, "b", 0, &steps) : (double)NAN;
        SP_CHECK_MSG(fabs(a - 3.0) < 1e-9, "a/fwd %.6f ms", a);
        SP_CHECK_MSG(fabs(b - 5.0) < 1e-9, "b/fwd %.6f ms", b);
        SP_CHECK_EQ_INT(steps, 1);
        sp_trace_destroy(t);
        SP_CHECK(stderr_has_one(err_path, "stagepart-inject") == false); /* nothing to say */
    }
    fflush(stderr);
    FILE *f = fopen(err_path, "r");
    char line[1024];
    while (f && fgets(line, sizeof line, f))
        if (write(saved_stderr, line, strlen(line)) < 0)
            break;
    if (f)
        fclose(f);
    unlink(err_path);
    rmdir(dir);
    printf("%s: %d checks, %d failures\n", scenario, sp_test_checks, sp_test_failures);
    return sp_test_failures ? 1 : 0;
}

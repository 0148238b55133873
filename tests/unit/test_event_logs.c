/* tests/unit/test_event_logs.c: event logs of several processes, written by the collector's own
 * writer and read in two passes: each process's "device 0" stays its own (busy time adds up, no
 * record counts as late), each process's steps are its own (they overlap the other's in time),
 * and a log removed after loading still reads (the trace keeps it open). */
#include <math.h>
#include <stagepart/stagepart.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../test.h"
#include "event_log.h"
#include "trace.h"

/* one process: 2 steps of layer L0 (2 ms of kernels on device 0 per step), at the same times in
 * every process */
static void write_log(const char *path, uint32_t pid) {
    struct sp_evlog *log = sp_evlog_open(path, pid);
    SP_CHECK(log != NULL);
    if (!log)
        return;
    uint32_t step = 0, l0 = 0, k = 0;
    sp_evlog_string(log, "stagepart/step", 14, &step);
    sp_evlog_string(log, "L0/fwd", 6, &l0);
    sp_evlog_string(log, "gemm", 4, &k);
    sp_evlog_thread(log, 1, 100 + pid, 200 + pid);
    const int64_t ms = 1000000, base = 1000 * ms;
    uint64_t corr = 1, range = 1;
    for (int s = 0; s < 2; s++) {
        int64_t o = base + s * 10 * ms;
        uint64_t step_id = range++, layer_id = range++;
        for (int i = 0; i < 2; i++, corr++) { /* two 1 ms kernels back to back */
            sp_evlog_api(log, o + 1 * ms + i, corr, 100 + pid, layer_id);
            sp_evlog_activity(log, SP_ACTIVITY_KERNEL, o + 2 * ms + i * ms, o + 3 * ms + i * ms,
                              corr, 0, 0, 7, k);
        }
        sp_evlog_range(log, layer_id, o + 1 * ms, o + 5 * ms, 1, l0, 0, false);
        sp_evlog_range(log, step_id, o, o + 9 * ms, 1, step, 0, false);
    }
    SP_CHECK_EQ_INT(sp_evlog_close(log), 0);
}

/* two layers, L0 and L1, whose forward ranges each carry `payload` output bytes */
static void write_two_layers(const char *path, uint64_t payload) {
    struct sp_evlog *log = sp_evlog_open(path, 1);
    SP_CHECK(log != NULL);
    if (!log)
        return;
    uint32_t step = 0, names[2] = {0, 0}, k = 0;
    sp_evlog_string(log, "stagepart/step", 14, &step);
    sp_evlog_string(log, "L0/fwd", 6, &names[0]);
    sp_evlog_string(log, "L1/fwd", 6, &names[1]);
    sp_evlog_string(log, "gemm", 4, &k);
    sp_evlog_thread(log, 1, 100, 200);
    const int64_t ms = 1000000, o = 1000 * ms;
    uint64_t range = 1;
    for (uint64_t l = 0; l < 2; l++) {
        uint64_t id = range++;
        sp_evlog_api(log, o + (int64_t)(1 + 3 * l) * ms, l + 1, 100, id);
        sp_evlog_activity(log, SP_ACTIVITY_KERNEL, o + (int64_t)(2 + 3 * l) * ms,
                          o + (int64_t)(3 + 3 * l) * ms, l + 1, 0, 0, 7, k);
        sp_evlog_range(log, id, o + (int64_t)(1 + 3 * l) * ms, o + (int64_t)(4 + 3 * l) * ms, 1,
                       names[l], payload, true);
    }
    sp_evlog_range(log, range, o, o + 9 * ms, 1, step, 0, false);
    SP_CHECK_EQ_INT(sp_evlog_close(log), 0);
}

/* Each payload may reach 2^53 bytes, but a profile's layers together may not (a stage's sum
 * must be an exact JSON integer): a trace past that is refused, not written as a profile the
 * profile reader would refuse. */
static void check_byte_sums(sp_ctx *ctx, const char *path) {
    const uint64_t half = (uint64_t)1 << 52;
    for (int past = 0; past < 2; past++) {
        unlink(path);
        write_two_layers(path, half + (uint64_t)past);
        sp_trace *t = NULL;
        SP_CHECK_STATUS(sp_trace_load_events(ctx, &path, 1, &t), SP_OK);
        sp_trace_profile_opts o;
        sp_trace_profile_opts_init(&o);
        char *json = NULL;
        sp_status st = t ? sp_trace_to_profile(ctx, t, &o, &json, NULL) : SP_ERR_INTERNAL;
        if (past) {
            SP_CHECK_STATUS(st, SP_ERR_LIMIT);
            SP_CHECK(json == NULL);
            SP_CHECK_MSG(strstr(sp_ctx_get_errmsg(ctx),
                                "the layers' output bytes sum to 9.007e+15, "
                                "beyond a profile's 2^53 bytes") != NULL,
                         "%s", sp_ctx_get_errmsg(ctx));
        } else {
            SP_CHECK_STATUS(st, SP_OK);
            sp_profile *p = NULL;
            if (json)
                SP_CHECK_STATUS(sp_profile_parse(ctx, "events", json, strlen(json), &p), SP_OK);
            SP_CHECK(p && sp_profile_get_layer(p, 1)->activation_bytes == half);
            sp_profile_destroy(p);
        }
        sp_free(json);
        sp_trace_destroy(t);
    }
    unlink(path);
}

/* A built-in model's kinds and exact bytes go into the layers of the same names
 * (`profile MODEL --backend cuda`); a model layer the trace lacks is an error naming it. */
static void check_built_in(sp_ctx *ctx, const sp_trace *t) {
#define ONE_LAYER_MODEL                                                                            \
    "{\"format\": \"stagepart-model\", \"version\": 1, \"name\": \"m\", "                          \
    "\"micro_batch_size\": 2, \"input\": {\"channels\": 1, \"height\": 3, \"width\": 4}, "         \
    "\"layers\": [%s]}"
#define LINEAR "{\"op\": \"linear\", \"in_features\": 4, \"out_features\": 5}"
#define HEAD   "{\"op\": \"lm_head\", \"hidden\": 5, \"vocab\": 3}"
    char text[512];
    snprintf(text, sizeof text, ONE_LAYER_MODEL,
             "{\"name\": \"L0\", \"kind\": \"classifier\", \"ops\": [" LINEAR ", " HEAD "]}");
    sp_model *m = NULL;
    SP_CHECK_STATUS(sp_model_parse(ctx, "m.json", text, strlen(text), &m), SP_OK);
    sp_trace_profile_opts o;
    sp_trace_profile_opts_init(&o);
    o.built_in = m;
    char *json = NULL;
    sp_trace_summary sum;
    SP_CHECK_STATUS(sp_trace_to_profile(ctx, t, &o, &json, &sum), SP_OK);
    sp_profile *p = NULL;
    if (json)
        SP_CHECK_STATUS(sp_profile_parse(ctx, "events", json, strlen(json), &p), SP_OK);
    const sp_layer *L = p ? sp_profile_get_layer(p, 0) : NULL;
    sp_model_layer_info want;
    SP_CHECK(sp_model_get_layer(m, 0, &want));
    if (L) {
        SP_CHECK_EQ_INT(L->activation_bytes, want.activation_bytes);
        SP_CHECK_EQ_INT(L->param_bytes, want.param_bytes);
        SP_CHECK_EQ_INT(L->saved_bytes, want.saved_bytes);
        SP_CHECK(want.saved_bytes > 0 && want.param_bytes == (5 * 4 + 5 + 3 * 5) * 4);
        SP_CHECK(strcmp(L->kind, "classifier") == 0);
    }
    SP_CHECK(json && strstr(json, "\"model_dtype\":\t\"fp32\"") != NULL);
    sp_profile_destroy(p);
    sp_free(json);
    sp_model_destroy(m);
    snprintf(text, sizeof text, ONE_LAYER_MODEL,
             "{\"name\": \"L0\", \"op\": \"linear\", \"in_features\": 4, \"out_features\": 5}, "
             "{\"name\": \"cls\", \"op\": \"lm_head\", \"hidden\": 5, \"vocab\": 3}");
    m = NULL;
    SP_CHECK_STATUS(sp_model_parse(ctx, "m.json", text, strlen(text), &m), SP_OK);
    o.built_in = m;
    json = NULL;
    SP_CHECK_STATUS(sp_trace_to_profile(ctx, t, &o, &json, &sum), SP_ERR_INVALID_ARG);
    SP_CHECK(json == NULL);
    SP_CHECK(strstr(sp_ctx_get_errmsg(ctx), "layer 1 (cls) of model m") != NULL);
    sp_model_destroy(m);
}

int main(void) {
    sp_ctx *ctx = NULL;
    sp_ctx_create(&ctx);
    char a[64], b[64];
    snprintf(a, sizeof a, "/tmp/sp-evlog-a-%d.splog", (int)getpid());
    snprintf(b, sizeof b, "/tmp/sp-evlog-b-%d.splog", (int)getpid());
    unlink(a);
    unlink(b);
    write_log(a, 1);
    write_log(b, 2);
    const char *paths[] = {a, b};
    sp_trace *t = NULL;
    SP_CHECK_STATUS(sp_trace_load_events(ctx, paths, 2, &t), SP_OK);
    sp_trace_profile_opts o;
    sp_trace_profile_opts_init(&o);
    char *json = NULL;
    sp_trace_summary sum;
    SP_CHECK_STATUS(sp_trace_to_profile(ctx, t, &o, &json, &sum), SP_OK);
    SP_CHECK_EQ_INT(sum.activities, 8);
    SP_CHECK_EQ_INT(sum.unmatched, 0);
    SP_CHECK_EQ_INT(sum.late, 0);
    SP_CHECK_EQ_INT(sum.steps_total, 2); /* the two processes' steps overlap in time: one each */
    SP_CHECK_MSG(fabs(sum.layer_ms - 8.0) < 1e-9, "%g", sum.layer_ms);
    sp_profile *p = NULL;
    if (json)
        SP_CHECK_STATUS(sp_profile_parse(ctx, "events", json, strlen(json), &p), SP_OK);
    if (p) { /* per step: 2 ms on each process's device 0, which are two devices: 4 ms */
        SP_CHECK_MSG(fabs(sp_profile_get_layer(p, 0)->fwd_ms - 4.0) < 1e-9, "%g",
                     sp_profile_get_layer(p, 0)->fwd_ms);
        sp_profile_destroy(p);
    }
    sp_free(json);
    /* the files stay open with the trace: removed after loading, they still read */
    unlink(b);
    SP_CHECK_STATUS(sp_trace_to_profile(ctx, t, &o, &json, &sum), SP_OK);
    SP_CHECK_EQ_INT(sum.activities, 8);
    sp_free(json);
    check_built_in(ctx, t);
    sp_trace_destroy(t);
    unlink(a);
    check_byte_sums(ctx, a);
    sp_ctx_destroy(ctx);
    return sp_test_finish("test_event_logs");
}

/* tests/unit/test_attribute.c: the attribution engine on hand-built traces: foreign ranges
 * inside a layer, busy time merged per device (not across devices), launches without a range
 * or without a launch record, steps matched by time across threads, even step counts, layers
 * with only a backward, recomputation, and random traces against a brute-force recount. */
#include <math.h>
#include <stagepart/stagepart.h>

#include "../test.h"
#include "attribute.h"

static sp_ctx *ctx;

static uint32_t name(struct sp_trace *t, const char *s) {
    uint32_t id = 0;
    SP_CHECK_STATUS(sp_trace_intern(ctx, t, s, strlen(s), &id), SP_OK);
    return id;
}
static void range(struct sp_trace *t, const char *n, uint32_t tid, int64_t s, int64_t e) {
    struct sp_trace_range r = {s, e, tid, name(t, n), 0, false};
    SP_CHECK_STATUS(sp_trace_add_range(ctx, t, &r), SP_OK);
}
/* a launch at `at` on tid and its kernel [s, e) on device dev */
static void kernel(struct sp_trace *t, uint32_t tid, int64_t at, uint64_t corr, uint32_t dev,
                   int64_t s, int64_t e) {
    struct sp_trace_launch l = {at, corr, tid};
    struct sp_trace_activity a = {s, e, corr, 0, dev, 7, name(t, "k"), SP_ACTIVITY_KERNEL};
    SP_CHECK_STATUS(sp_trace_add_launch(ctx, t, &l), SP_OK);
    SP_CHECK_STATUS(sp_trace_add_activity(ctx, t, &a), SP_OK);
}

static const struct sp_layer_stats *layer(const struct sp_attribution *a, const char *n) {
    for (size_t i = 0; i < a->n_layers; i++)
        if (strcmp(a->layers[i].name, n) == 0)
            return &a->layers[i];
    return NULL;
}

static void test_cases(void) {
    struct sp_trace t;
    SP_CHECK_STATUS(sp_trace_init(ctx, &t), SP_OK);
    t.file = sp_strdup("unit");
    t.collector = sp_strdup("unit");
    const int64_t ms = 1000000;
    for (int step = 0; step < 2; step++) { /* two steps: the median is their mean */
        int64_t o = step * 100 * ms, sc = step ? 3 : 1;
        range(&t, "stagepart/step", 1, o, o + 90 * ms);
        range(&t, "a/fwd", 1, o + 1 * ms, o + 10 * ms);
        range(&t, "cub::DeviceReduce", 1, o + 2 * ms, o + 3 * ms); /* foreign, inside a/fwd */
        kernel(&t, 1, o + 2 * ms + 1, 1000 + (uint64_t)step * 100, 0, o + 2 * ms, o + 4 * ms);
        /* two devices at the same time: busy adds up across devices */
        kernel(&t, 1, o + 5 * ms, 1001 + (uint64_t)step * 100, 1, o + 2 * ms, o + 4 * ms);
        /* the backward on thread 2, under the step of thread 1 by time */
        range(&t, "b/bwd", 2, o + 20 * ms, o + 40 * ms);
        kernel(&t, 2, o + 21 * ms, 1002 + (uint64_t)step * 100, 0, o + 21 * ms,
               o + 21 * ms + sc * ms);
        range(&t, "b/fwd", 2, o + 30 * ms, o + 35 * ms); /* recomputation inside b/bwd */
        kernel(&t, 2, o + 31 * ms, 1003 + (uint64_t)step * 100, 0, o + 31 * ms, o + 33 * ms);
        kernel(&t, 3, o + 50 * ms, 1004 + (uint64_t)step * 100, 0, o + 50 * ms, o + 51 * ms);
        struct sp_trace_activity orphan = {o + 60 * ms,   o + 61 * ms,       99999, 0, 0, 7,
                                           name(&t, "k"), SP_ACTIVITY_KERNEL};
        SP_CHECK_STATUS(sp_trace_add_activity(ctx, &t, &orphan), SP_OK);
    }
    struct sp_attrib_opts o = {NULL, NULL, NULL, 0};
    struct sp_attribution a;
    SP_CHECK_STATUS(sp_attribute(ctx, &t, &o, &a), SP_OK);
    SP_CHECK_EQ_INT(a.n_layers, 2);
    SP_CHECK_EQ_INT(a.steps_total, 2);
    const struct sp_layer_stats *la = layer(&a, "a"), *lb = layer(&a, "b");
    SP_CHECK(la && lb && strcmp(a.layers[0].name, "a") == 0);
    if (la && lb) {
        SP_CHECK_MSG(fabs(la->phase[SP_PHASE_FWD].busy_ms - 4.0) < 1e-9, "%g",
                     la->phase[SP_PHASE_FWD].busy_ms);
        SP_CHECK_EQ_INT(la->phase[SP_PHASE_FWD].kernels, 2);
        SP_CHECK_MSG(fabs(lb->phase[SP_PHASE_BWD].busy_ms - 2.0) < 1e-9, "median of 1 and 3: %g",
                     lb->phase[SP_PHASE_BWD].busy_ms);
        SP_CHECK_MSG(fabs(lb->phase[SP_PHASE_BWD].stddev_ms - 1.0) < 1e-9, "%g",
                     lb->phase[SP_PHASE_BWD].stddev_ms);
        SP_CHECK(fabs(lb->phase[SP_PHASE_RECOMPUTE].busy_ms - 2.0) < 1e-9);
        SP_CHECK(lb->phase[SP_PHASE_FWD].busy_ms == 0); /* a layer with no forward of its own */
    }
    SP_CHECK_EQ_INT(a.unmatched, 2);
    SP_CHECK(fabs(a.class_ms[SP_PHASE_UNATTRIBUTED] - 4.0) < 1e-9); /* thread 3 and orphans */
    sp_attribution_release(&a);
    o.warmup_steps = 1;
    SP_CHECK_STATUS(sp_attribute(ctx, &t, &o, &a), SP_OK);
    SP_CHECK(fabs(layer(&a, "b")->phase[SP_PHASE_BWD].busy_ms - 3.0) < 1e-9);
    SP_CHECK(fabs(a.outside_steps_ms - 7.0) < 1e-9); /* step 0: a 2 x 2, b 1, recompute 2 */
    sp_attribution_release(&a);
    o.layer_pattern = "[";
    SP_CHECK_STATUS(sp_attribute(ctx, &t, &o, &a), SP_ERR_INVALID_ARG);
    SP_CHECK_CONTAINS(sp_ctx_errmsg(ctx), "--layer-pattern '['");
    sp_trace_release(&t);
}

/* random traces: every kernel inside exactly one layer range, the busy time recounted by brute
 * force over a nanosecond grid */
static void test_random_busy(void) {
    uint64_t rng = 5;
    for (int round = 0; round < 50; round++) {
        struct sp_trace t;
        SP_CHECK_STATUS(sp_trace_init(ctx, &t), SP_OK);
        t.file = sp_strdup("random");
        t.collector = sp_strdup("random");
        range(&t, "x/fwd", 1, 0, 1000);
        int n = 1 + (int)(rng % 12);
        static unsigned char busy[2][200];
        memset(busy, 0, sizeof busy);
        for (int k = 0; k < n; k++) {
            rng = rng * 6364136223846793005ull + 1442695040888963407ull;
            int64_t s = (int64_t)((rng >> 33) % 150), d = 1 + (int64_t)((rng >> 20) % 40);
            uint32_t dev = (uint32_t)((rng >> 10) % 2);
            /* odd rounds: sparse ids, so the hashed correlation table is used */
            uint64_t corr = round % 2 ? ((uint64_t)k + 1) * 1000000007ull : (uint64_t)k + 1;
            kernel(&t, 1, 10 + k, corr, dev, s, s + d);
            for (int64_t x = s; x < s + d && x < 200; x++)
                busy[dev][x] = 1;
        }
        int64_t want = 0;
        for (int d = 0; d < 2; d++)
            for (int x = 0; x < 200; x++)
                want += busy[d][x];
        struct sp_attrib_opts o = {NULL, NULL, NULL, 0};
        struct sp_attribution a;
        SP_CHECK_STATUS(sp_attribute(ctx, &t, &o, &a), SP_OK);
        double got = a.n_layers ? a.layers[0].phase[SP_PHASE_FWD].busy_ms * 1e6 : -1;
        SP_CHECK_MSG(fabs(got - (double)want) < 1e-6, "round %d: %g vs %lld", round, got,
                     (long long)want);
        sp_attribution_release(&a);
        sp_trace_release(&t);
    }
}

int main(void) {
    sp_ctx_create(&ctx);
    test_cases();
    test_random_busy();
    sp_ctx_destroy(ctx);
    return sp_test_finish("test_attribute");
}

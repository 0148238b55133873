/* tests/unit/test_attribute.c: the attribution engine on hand-built traces: foreign ranges
 * inside a layer, busy time merged per device (not across devices), launches without a range
 * or without a launch record, steps matched by time across threads, even step counts, layers
 * with only a backward, recomputation, and random traces against a brute-force recount; the
 * per-thread timeline against a brute-force search of the ranges; the streaming windows (records
 * out of order within them give the in-order result exactly; beyond them every activity is still
 * accounted for, as late or unmatched); the id map's removal against a plain array; the module
 * tree's level chosen for ResNet- and decoder-shaped models, and linked backward ops. */
#include <math.h>
#include <stagepart/stagepart.h>

#include "../test.h"
#include "attribute_impl.h"
#include "modules.h"
#include "u64_map.h"

static sp_ctx *ctx;

static uint32_t name(struct sp_trace *t, const char *s) {
    uint32_t id = 0;
    SP_CHECK_STATUS(sp_trace_intern(ctx, t, s, strlen(s), &id), SP_OK);
    return id;
}
static void range(struct sp_trace *t, const char *n, uint32_t tid, int64_t s, int64_t e) {
    struct sp_trace_range r = {s, e, tid, name(t, n), 0, false, 0};
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
    struct sp_attrib_opts o = {.warmup_steps = 0};
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
    SP_CHECK_CONTAINS(sp_ctx_get_errmsg(ctx), "--layer-pattern '['");
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
        struct sp_attrib_opts o = {.warmup_steps = 0};
        struct sp_attribution a;
        SP_CHECK_STATUS(sp_attribute(ctx, &t, &o, &a), SP_OK);
        double got = a.n_layers ? a.layers[0].phase[SP_PHASE_FWD].busy_ms * 1e6 : -1;
        SP_CHECK_MSG(fabs(got - (double)want) < 1e-6, "round %d: %g vs %lld", round, got,
                     (long long)want);
        sp_attribution_release(&a);
        sp_trace_release(&t);
    }
}

static uint64_t next_rand(uint64_t *rng) {
    *rng = *rng * 6364136223846793005ull + 1442695040888963407ull;
    return *rng >> 33;
}

/* properly nested random ranges on a thread: children inside [s, e), some layer ranges */
static void nested(struct sp_trace *t, uint64_t *rng, uint32_t tid, int64_t s, int64_t e,
                   int depth) {
    static const char *names[] = {"l0/fwd", "l1/fwd", "l2/bwd", "l3/bwd", "other", "opt/optimizer"};
    int64_t at = s;
    while (depth < 4 && e - at > 4) {
        int64_t a = at + (int64_t)(next_rand(rng) % (uint64_t)((e - at) / 2 + 1));
        int64_t b = a + 1 + (int64_t)(next_rand(rng) % (uint64_t)(e - a));
        if (b > e)
            b = e;
        range(t, names[next_rand(rng) % 6], tid, a, b);
        nested(t, rng, tid, a, b, depth + 1);
        at = b + (int64_t)(next_rand(rng) % 3);
        if (next_rand(rng) % 3 == 0)
            break;
    }
}

/* r encloses q: it holds q, and when both have the same bounds it came first (the engine opens
 * equal ranges in their order, the later inside) */
static bool encloses(const struct sp_trace_range *r, const struct sp_trace_range *q) {
    return r->start_ns <= q->start_ns && r->end_ns >= q->end_ns &&
           (r->start_ns < q->start_ns || r->end_ns > q->end_ns || r < q);
}

/* what a launch at T on tid belongs to, by brute force: of the ranges holding T (start <= T <=
 * end) the innermost is the one no other encloses (of two touching at T, the one starting
 * there); the layer is the innermost layer range of it and those around it, recomputation a
 * forward one inside a backward one */
static struct launch_result brute_lookup(const struct sp_trace *t, uint32_t tid, int64_t T) {
    const struct sp_trace_range *inner = NULL, *layer_r = NULL;
    bool opt = false;
    for (size_t i = 0; i < t->n_ranges; i++) {
        const struct sp_trace_range *r = &t->ranges[i];
        if (r->tid != tid || r->start_ns > T || r->end_ns < T)
            continue;
        if (!inner || encloses(inner, r) || (!encloses(r, inner) && r->start_ns > inner->start_ns))
            inner = r; /* of two touching at T, the one starting there (the other closed) */
    }
    for (size_t i = 0; inner && i < t->n_ranges; i++) { /* inner and the ranges around it */
        const struct sp_trace_range *r = &t->ranges[i];
        if (r->tid != tid || (r != inner && !encloses(r, inner)))
            continue;
        const char *n = t->strings[r->name];
        if (n[0] == 'l' && (!layer_r || encloses(layer_r, r)))
            layer_r = r;
        opt |= strcmp(n, "opt/optimizer") == 0;
    }
    if (!inner)
        return (struct launch_result){-1, SP_PHASE_UNATTRIBUTED, 0};
    if (!layer_r)
        return (struct launch_result){-1, opt ? SP_PHASE_OPTIMIZER : SP_PHASE_OTHER,
                                      inner->name + 1};
    const char *ln = t->strings[layer_r->name];
    bool fwd = strstr(ln, "/fwd") != NULL, in_bwd = false;
    for (size_t i = 0; fwd && i < t->n_ranges; i++) { /* a backward layer range around it */
        const struct sp_trace_range *r = &t->ranges[i];
        in_bwd |= r->tid == tid && r != layer_r && encloses(r, layer_r) &&
                  strstr(t->strings[r->name], "/bwd") != NULL;
    }
    uint8_t cls = fwd ? (in_bwd ? SP_PHASE_RECOMPUTE : SP_PHASE_FWD) : SP_PHASE_BWD;
    return (struct launch_result){ln[1] - '0', cls, inner->name + 1};
}

static void test_timeline(void) {
    uint64_t rng = 11;
    for (int round = 0; round < 40; round++) {
        struct sp_trace t;
        SP_CHECK_STATUS(sp_trace_init(ctx, &t), SP_OK);
        t.file = sp_strdup("timeline");
        t.collector = sp_strdup("timeline");
        /* intern the layer names first so that layer id = the digit in the name */
        for (int l = 0; l < 4; l++) {
            char nm[8];
            snprintf(nm, sizeof nm, "l%d", l);
            name(&t, nm);
        }
        for (uint32_t tid = 0; tid < 3; tid++)
            nested(&t, &rng, tid, 0, 200, 0);
        range(&t, "l0/fwd", 3, 500, 501); /* every layer exists, so ids stay as interned */
        range(&t, "l1/fwd", 3, 502, 503);
        range(&t, "l2/bwd", 3, 504, 505);
        range(&t, "l3/bwd", 3, 506, 507);
        struct sp_attrib_opts o = {.layer_pattern = "^(l[0-9])/(fwd|bwd)$"};
        struct sp_attrib_stream *s = NULL;
        SP_CHECK_STATUS(sp_attrib_begin(ctx, &t, &o, 0, 0, &s), SP_OK);
        /* the engine's layer ids follow first sight in classification: map names */
        int bad = 0;
        for (uint32_t tid = 0; s && tid < 4; tid++)
            for (int64_t T = -1; T <= 210; T++) {
                struct launch_result got = sp_attrib_lookup(s, tid, T);
                struct launch_result want = brute_lookup(&t, tid, T);
                const char *gname = got.layer >= 0 ? s->out.names.strings[got.layer] : "-";
                char wname[4] = "-";
                if (want.layer >= 0)
                    snprintf(wname, sizeof wname, "l%d", want.layer);
                if (got.cls != want.cls || strcmp(gname, wname) != 0 ||
                    got.range != want.range) { /* and the innermost range, by name */
                    if (bad++ < 3)
                        SP_CHECK_MSG(false, "round %d tid %u T %lld: got %s/%d/%u want %s/%d/%u",
                                     round, tid, (long long)T, gname, got.cls, got.range, wname,
                                     want.cls, want.range);
                }
            }
        SP_CHECK_EQ_INT(bad, 0);
        sp_attrib_abort(s);
        sp_trace_release(&t);
    }
}

struct rec { /* a launch (is_launch) or an activity, at some position of a stream */
    long pos;
    bool is_launch;
    size_t idx;
};

static int cmp_rec(const void *a, const void *b) {
    const struct rec *x = a, *y = b;
    return (x->pos > y->pos) - (x->pos < y->pos);
}

/* a trace's launches and activities streamed out of order: each record moves up to `jitter`
 * places from where time order puts it */
static sp_status stream_jittered(const struct sp_trace *t, const struct sp_attrib_opts *o,
                                 uint64_t *rng, long jitter, struct sp_attribution *out) {
    size_t n = t->n_launches + t->n_activities;
    struct rec *r = calloc(n, sizeof *r);
    for (size_t i = 0; i < t->n_launches; i++)
        r[i] = (struct rec){2 * (long)i, true, i};
    for (size_t i = 0; i < t->n_activities; i++)
        r[t->n_launches + i] = (struct rec){2 * (long)i + 1, false, i};
    for (size_t i = 0; i < n; i++)
        r[i].pos = r[i].pos * 1000 + (long)(next_rand(rng) % (uint64_t)(2 * jitter + 1)) * 2000 -
                   jitter * 2000;
    qsort(r, n, sizeof *r, cmp_rec);
    struct sp_attrib_stream *s = NULL;
    sp_status st = sp_attrib_begin(ctx, t, o, 0, 0, &s);
    for (size_t i = 0; st == SP_OK && i < n; i++)
        st = r[i].is_launch ? sp_attrib_launch(s, &t->launches[r[i].idx])
                            : sp_attrib_activity(s, &t->activities[r[i].idx]);
    if (st == SP_OK)
        st = sp_attrib_end(s, out);
    else
        sp_attrib_abort(s);
    free(r);
    return st;
}

static void test_stream_windows(void) {
    uint64_t rng = 23;
    for (int round = 0; round < 30; round++) {
        struct sp_trace t;
        SP_CHECK_STATUS(sp_trace_init(ctx, &t), SP_OK);
        t.file = sp_strdup("stream");
        t.collector = sp_strdup("stream");
        int64_t now = 0;
        uint64_t corr = 1;
        for (int step = 0; step < 3; step++) {
            int64_t s0 = now;
            for (int l = 0; l < 4; l++) {
                char nm[16];
                snprintf(nm, sizeof nm, "L%d/fwd", l);
                int64_t r0 = now;
                int k = 1 + (int)(next_rand(&rng) % 20);
                for (int i = 0; i < k; i++, now += 3) {
                    int64_t st = now + (int64_t)(next_rand(&rng) % 10);
                    kernel(&t, 0, now, corr++, (uint32_t)(next_rand(&rng) % 2), st,
                           st + 1 + (int64_t)(next_rand(&rng) % 12));
                }
                now += 20;
                range(&t, nm, 0, r0, now);
            }
            range(&t, "stagepart/step", 0, s0, now);
            now += 50;
        }
        struct sp_attrib_opts o = {.warmup_steps = 0};
        struct sp_attribution want, got;
        SP_CHECK_STATUS(sp_attribute(ctx, &t, &o, &want), SP_OK);
        o.launch_window = o.pending_window = o.reorder_window = 64;
        SP_CHECK_STATUS(stream_jittered(&t, &o, &rng, 8, &got), SP_OK);
        SP_CHECK_EQ_INT(got.n_layers, want.n_layers);
        SP_CHECK_EQ_INT(got.unmatched, want.unmatched);
        SP_CHECK_EQ_INT(got.late, 0);
        for (size_t l = 0; l < got.n_layers && l < want.n_layers; l++) {
            const struct sp_phase_stats *g = &got.layers[l].phase[SP_PHASE_FWD],
                                        *w = &want.layers[l].phase[SP_PHASE_FWD];
            SP_CHECK_MSG(g->busy_ms == w->busy_ms && g->kernel_ms == w->kernel_ms &&
                             g->span_ms == w->span_ms && g->kernels == w->kernels,
                         "round %d layer %zu: busy %g vs %g", round, l, g->busy_ms, w->busy_ms);
        }
        sp_attribution_release(&got);
        /* windows far too small for the disorder: nothing is lost from the accounting, and
         * what could not be placed is counted */
        for (int tight = 0; tight < 2; tight++) {
            o.launch_window = o.pending_window = tight ? 2 : 4096;
            o.reorder_window = tight ? 4096 : 2;
            SP_CHECK_STATUS(stream_jittered(&t, &o, &rng, 40, &got), SP_OK);
            double sum = 0;
            for (int c = 0; c < SP_PHASE_COUNT; c++)
                sum += got.class_ms[c];
            SP_CHECK_EQ_INT(got.activities, t.n_activities);
            SP_CHECK_MSG(fabs(sum - got.gpu_ms) < 1e-9 * (1 + got.gpu_ms), "%g vs %g", sum,
                         got.gpu_ms);
            if (tight)
                SP_CHECK_MSG(got.unmatched > want.unmatched, "round %d: unmatched %llu", round,
                             (unsigned long long)got.unmatched);
            else
                SP_CHECK_MSG(got.unmatched == want.unmatched && got.late > 0,
                             "round %d: unmatched %llu late %llu", round,
                             (unsigned long long)got.unmatched, (unsigned long long)got.late);
            sp_attribution_release(&got);
        }
        sp_attribution_release(&want);
        sp_trace_release(&t);
    }
}

static void test_map_remove(void) {
    uint64_t rng = 3;
    struct sp_u64_map m = {0};
    static uint64_t have[512]; /* key k in 0..511: value + 1, 0 when absent */
    memset(have, 0, sizeof have);
    for (int i = 0; i < 200000; i++) {
        uint64_t k = next_rand(&rng) % 512, key = k * 0x10000000ull; /* clustered hashes */
        if (next_rand(&rng) % 2) {
            SP_CHECK(sp_u64_map_set(&m, key, (uint64_t)i));
            have[k] = (uint64_t)i + 1;
        } else {
            sp_u64_map_remove(&m, key);
            have[k] = 0;
        }
        if (i % 997 == 0)
            for (uint64_t j = 0; j < 512; j++) {
                uint64_t v = 0;
                bool found = sp_u64_map_get(&m, j * 0x10000000ull, &v);
                SP_CHECK(found == (have[j] != 0) && (!found || v + 1 == have[j]));
            }
    }
    size_t n = 0;
    for (int j = 0; j < 512; j++)
        n += have[j] != 0;
    SP_CHECK_EQ_INT(m.n, n);
    SP_CHECK(m.cap <= 2048); /* removals make room: the table does not grow without bound */
    sp_u64_map_release(&m);
}

/* ---- module ranges: a tree given as (name, depth, own kernel ms), in call order */
struct mod {
    const char *name;
    int depth;
    double own_ms;
};

static void module_trace(struct sp_trace *t, const struct mod *m, size_t n) {
    SP_CHECK_STATUS(sp_trace_init(ctx, t), SP_OK);
    t->file = sp_strdup("unit");
    t->collector = sp_strdup("unit");
    const int64_t us = 1000;
    int64_t now = 0, gpu = 0;
    uint64_t corr = 1;
    /* each module: [start, end) covering its descendants; its own kernel launched first */
    int64_t start[64];
    int open_depth[64];
    size_t open = 0;
    char full[64][80];
    for (size_t i = 0; i <= n; i++) {
        int d = i < n ? m[i].depth : -1;
        while (open && open_depth[open - 1] >= d) { /* close the ones this is not inside */
            open--;
            range(t, full[open], 1, start[open], now);
            now += us;
        }
        if (i == n)
            break;
        snprintf(full[open], sizeof full[open], "nn.Module: %s", m[i].name);
        start[open] = now;
        open_depth[open++] = d;
        now += us;
        if (m[i].own_ms > 0) {
            int64_t dur = (int64_t)(m[i].own_ms * 1e6);
            gpu = gpu > now ? gpu : now;
            kernel(t, 1, now, corr++, 0, gpu, gpu + dur);
            gpu += dur;
            now += us;
        }
    }
}

static char last_folded[512];

static void check_chosen(const struct mod *m, size_t n, const char *how, const char *want) {
    struct sp_trace t;
    module_trace(&t, m, n);
    struct sp_attrib_opts o = {0};
    struct sp_module_tree tree;
    struct sp_module_choice choice = {0};
    char said[512];
    SP_CHECK_STATUS(sp_module_tree_build(ctx, &t, &o, &tree), SP_OK);
    SP_CHECK_STATUS(sp_module_choose(ctx, &t, &tree, how, &choice, said, sizeof said), SP_OK);
    const uint8_t *flags = choice.flags;
    char got[512] = "";
    for (size_t i = 0; flags && i < n; i++) { /* call order is the list's */
        char full[80];
        snprintf(full, sizeof full, "nn.Module: %s", m[i].name);
        uint32_t id = 0;
        SP_CHECK_STATUS(sp_trace_intern(ctx, &t, full, strlen(full), &id), SP_OK);
        if (id < t.n_strings && flags[id])
            snprintf(got + strlen(got), sizeof got - strlen(got), "%s%s", *got ? " " : "",
                     m[i].name);
    }
    SP_CHECK_MSG(strcmp(got, want) == 0, "%s: chose '%s', expected '%s'", how, got, want);
    last_folded[0] = '\0'; /* "A>B": A folded into B (no parameters) */
    for (size_t i = 0; choice.why && i < tree.n; i++)
        if (choice.why[i] == SP_WHY_FOLDED)
            snprintf(last_folded + strlen(last_folded), sizeof last_folded - strlen(last_folded),
                     "%s%s>%s", *last_folded ? " " : "",
                     sp_module_layer_name(t.strings[tree.modules[i].name]),
                     sp_module_layer_name(t.strings[tree.modules[choice.folded_into[i]].name]));
    sp_module_choice_release(&choice);
    sp_module_tree_release(&tree);
    sp_trace_release(&t);
}

static void test_module_level(void) {
    /* a ResNet: the stem's modules, each block (its Sequential opened), pooling, the head */
    const struct mod resnet[] = {
        {"ResNet_0", 0, 0},       {"Conv2d_0", 1, 2},      {"BatchNorm2d_0", 1, 1},
        {"ReLU_0", 1, 0.5},       {"MaxPool2d_0", 1, 0.5}, {"Sequential_0", 1, 0},
        {"Bottleneck_0", 2, 0.2}, {"Conv2d_1", 3, 3},      {"Conv2d_2", 3, 3},
        {"Bottleneck_1", 2, 0.2}, {"Conv2d_3", 3, 3},      {"Sequential_1", 1, 0},
        {"Bottleneck_2", 2, 0.2}, {"Conv2d_4", 3, 3},      {"AdaptiveAvgPool2d_0", 1, 0.1},
        {"Linear_0", 1, 0.5}};
    size_t nr = sizeof resnet / sizeof resnet[0];
    check_chosen(resnet, nr, "auto",
                 "Conv2d_0 BatchNorm2d_0 ReLU_0 MaxPool2d_0 Bottleneck_0 Bottleneck_1 "
                 "Bottleneck_2 AdaptiveAvgPool2d_0 Linear_0");
    /* the stem's ReLU and max pooling hold no parameters: part of the first block; the pooling
     * part of the head */
    SP_CHECK_MSG(strcmp(last_folded, "ReLU_0>Bottleneck_0 MaxPool2d_0>Bottleneck_0 "
                                     "AdaptiveAvgPool2d_0>Linear_0") == 0,
                 "folded: %s", last_folded);
    check_chosen(resnet, nr, "1",
                 "Conv2d_0 BatchNorm2d_0 ReLU_0 MaxPool2d_0 Sequential_0 Sequential_1 "
                 "AdaptiveAvgPool2d_0 Linear_0");
    check_chosen(resnet, nr, "3",
                 "Conv2d_0 BatchNorm2d_0 ReLU_0 MaxPool2d_0 Conv2d_1 Conv2d_2 Conv2d_3 Conv2d_4 "
                 "AdaptiveAvgPool2d_0 Linear_0");
    /* a decoder: the model's body holds more than half and is opened (it has work of its own,
     * so it is no container); its blocks hold less each */
    const struct mod decoder[] = {
        {"LMHead_0", 0, 0.3}, {"Decoder_0", 1, 0.1}, {"Embedding_0", 2, 0.2}, {"Layer_0", 2, 5},
        {"Layer_1", 2, 5},    {"Layer_2", 2, 5},     {"RMSNorm_0", 2, 0.1},   {"Linear_0", 1, 2}};
    check_chosen(decoder, sizeof decoder / sizeof decoder[0], "auto",
                 "Embedding_0 Layer_0 Layer_1 Layer_2 RMSNorm_0 Linear_0");
    /* one leaf holding most of the time stays (nothing to open) */
    const struct mod lopsided[] = {{"Net_0", 0, 0}, {"Big_0", 1, 9}, {"Small_0", 1, 1}};
    check_chosen(lopsided, 3, "auto", "Big_0 Small_0");

    static const struct {
        const char *name, *kind;
    } kinds[] = {{"nn.Module: GPT2Block_3", "transformer"},
                 {"LlamaDecoderLayer_0", "transformer"},
                 {"LlamaRMSNorm_12", "norm"},
                 {"Embedding_1", "embedding"},
                 {"BasicBlock_0", "conv"},
                 {"Conv2d_0", "conv"},
                 {"LlamaAttention_2", "attention"},
                 {"CrossEntropyLoss_0", "loss"},
                 {"BertLMPredictionHead_0", "head"},
                 {"Dropout_0", NULL},
                 {"Linear_7", NULL}};
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        const char *k = sp_module_kind(kinds[i].name);
        SP_CHECK_MSG((k == NULL) == (kinds[i].kind == NULL) &&
                         (!k || strcmp(k, kinds[i].kind) == 0),
                     "%s: kind %s", kinds[i].name, k ? k : "(none)");
    }
}

/* Linked backward ops: the innermost linked op wins; one whose forward ran in no layer marks
 * the backward (a module range inside it is recomputation) without taking the work */
static void test_links(void) {
    struct sp_trace t;
    SP_CHECK_STATUS(sp_trace_init(ctx, &t), SP_OK);
    t.file = sp_strdup("unit");
    t.collector = sp_strdup("unit");
    const int64_t ms = 1000000;
    range(&t, "a/fwd", 1, 0, 10 * ms);
    range(&t, "b/fwd", 1, 20 * ms, 30 * ms);
    struct sp_trace_link la = {5 * ms, 1}, lb = {25 * ms, 1}, lnone = {15 * ms, 1};
    uint32_t ra = 0, rb = 0, rn = 0;
    SP_CHECK_STATUS(sp_trace_add_link(ctx, &t, &la, &ra), SP_OK);
    SP_CHECK_STATUS(sp_trace_add_link(ctx, &t, &lb, &rb), SP_OK);
    SP_CHECK_STATUS(sp_trace_add_link(ctx, &t, &lnone, &rn), SP_OK);
    struct sp_trace_range op_b = {100 * ms, 140 * ms, 2, name(&t, "BBackward0"), 0, false, rb};
    struct sp_trace_range op_a = {110 * ms, 120 * ms, 2, name(&t, "ABackward0"), 0, false, ra};
    struct sp_trace_range ck = {200 * ms, 240 * ms, 2, name(&t, "CheckpointBackward"),
                                0,        false,    rn};
    SP_CHECK_STATUS(sp_trace_add_range(ctx, &t, &op_b), SP_OK);
    SP_CHECK_STATUS(sp_trace_add_range(ctx, &t, &op_a), SP_OK);
    SP_CHECK_STATUS(sp_trace_add_range(ctx, &t, &ck), SP_OK);
    range(&t, "a/fwd", 2, 210 * ms, 220 * ms); /* recomputed inside an unowned backward op */
    kernel(&t, 2, 101 * ms, 1, 0, 101 * ms, 103 * ms); /* b's op, outside a's: b */
    kernel(&t, 2, 111 * ms, 2, 0, 111 * ms, 115 * ms); /* inside a's op, inside b's: a */
    kernel(&t, 2, 211 * ms, 3, 0, 211 * ms, 212 * ms); /* a's recomputation */
    kernel(&t, 2, 230 * ms, 4, 0, 230 * ms, 238 * ms); /* the unowned op's own: no layer */
    struct sp_attrib_opts o = {0};
    struct sp_attribution a;
    SP_CHECK_STATUS(sp_attribute(ctx, &t, &o, &a), SP_OK);
    const struct sp_layer_stats *A = layer(&a, "a"), *B = layer(&a, "b");
    SP_CHECK(A && B);
    if (A && B) {
        SP_CHECK(fabs(A->phase[SP_PHASE_BWD].busy_ms - 4) < 1e-9);
        SP_CHECK(fabs(B->phase[SP_PHASE_BWD].busy_ms - 2) < 1e-9);
        SP_CHECK(fabs(A->phase[SP_PHASE_RECOMPUTE].busy_ms - 1) < 1e-9);
        SP_CHECK(A->phase[SP_PHASE_FWD].busy_ms == 0 && B->phase[SP_PHASE_FWD].busy_ms == 0);
    }
    SP_CHECK(fabs(a.class_ms[SP_PHASE_OTHER] - 8) < 1e-9);
    sp_attribution_release(&a);
    sp_trace_release(&t);
}

int main(void) {
    sp_ctx_create(&ctx);
    test_module_level();
    test_links();
    test_cases();
    test_random_busy();
    test_timeline();
    test_stream_windows();
    test_map_remove();
    sp_ctx_destroy(ctx);
    return sp_test_finish("test_attribute");
}

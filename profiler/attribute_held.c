/* profiler/attribute_held.c: sp_attribute, the attribution engine (attribute.c,
 * attribute_stream.c) run over a trace that holds its records (or replays them): fed in time
 * order, launches before the activities that start at or after them, so each activity finds its
 * launch in the window. */
#include <stdlib.h>
#include <string.h>

#include "attribute_impl.h"

static int cmp_key(const void *a, const void *b) {
    const struct time_key *x = a, *y = b;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    return (x->idx > y->idx) - (x->idx < y->idx);
}

static int64_t launch_time(const struct sp_trace *t, size_t i) {
    return t->launches[i].time_ns;
}
static int64_t activity_time(const struct sp_trace *t, size_t i) {
    return t->activities[i].start_ns;
}

/* the records' order by time: *keys NULL when they are in order already */
static sp_status time_order(sp_ctx *ctx, const struct sp_trace *t, size_t n,
                            int64_t (*time_of)(const struct sp_trace *, size_t),
                            struct time_key **keys) {
    *keys = NULL;
    bool sorted = true;
    for (size_t i = 1; i < n && sorted; i++)
        sorted = time_of(t, i - 1) <= time_of(t, i);
    if (sorted)
        return SP_OK;
    struct time_key *k = sp_mallocarray(n, sizeof *k);
    if (!k)
        return sp_oom(ctx, "attributing kernels");
    for (size_t i = 0; i < n; i++)
        k[i] = (struct time_key){0, time_of(t, i), 0, i};
    qsort(k, n, sizeof *k, cmp_key);
    *keys = k;
    return SP_OK;
}

static sp_status feed_arrays(struct sp_attrib_stream *s, const struct sp_trace *t) {
    struct time_key *lk = NULL, *ak = NULL;
    sp_status st = time_order(s->ctx, t, t->n_launches, launch_time, &lk);
    if (st == SP_OK)
        st = time_order(s->ctx, t, t->n_activities, activity_time, &ak);
    size_t li = 0;
    for (size_t ai = 0; st == SP_OK && ai <= t->n_activities; ai++) {
        int64_t until = INT64_MAX;
        const struct sp_trace_activity *a = NULL;
        if (ai < t->n_activities) {
            a = &t->activities[ak ? ak[ai].idx : ai];
            until = a->start_ns;
        }
        for (; st == SP_OK && li < t->n_launches; li++) {
            const struct sp_trace_launch *l = &t->launches[lk ? lk[li].idx : li];
            if (l->time_ns > until)
                break;
            st = sp_attrib_launch(s, l);
        }
        if (st == SP_OK && a)
            st = sp_attrib_activity(s, a);
    }
    sp_free(lk);
    sp_free(ak);
    return st;
}

sp_status sp_attribute(sp_ctx *ctx, const struct sp_trace *t, const struct sp_attrib_opts *opts,
                       struct sp_attribution *out) {
    memset(out, 0, sizeof *out);
    struct sp_attrib_stream *s = NULL;
    bool replay = t->replay.run != NULL;
    sp_status st = sp_attrib_begin(ctx, t, opts, replay ? t->replay.launches : t->n_launches,
                                   replay ? t->replay.activities : t->n_activities, &s);
    if (st != SP_OK)
        return st;
    st = replay ? t->replay.run(ctx, t, t->replay.state, s) : feed_arrays(s, t);
    if (st != SP_OK) {
        sp_attrib_abort(s);
        return st;
    }
    return sp_attrib_end(s, out);
}

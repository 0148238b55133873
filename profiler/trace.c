/* profiler/trace.c: the event store the importers fill (profiler/trace.h). */
#include <stdio.h>
#include <string.h>

#include "stagepart/stagepart.h"
#include "trace.h"

/* Open addressing over string indices; the table doubles at half full. */
struct sp_intern {
    uint32_t *slot; /* index + 1; 0: empty */
    size_t cap;
};

static uint64_t hash_bytes(const char *s, size_t len) {
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return h;
}

sp_status sp_trace_init(sp_ctx *ctx, struct sp_trace *t) {
    memset(t, 0, sizeof *t);
    t->intern = sp_calloc(1, sizeof *t->intern);
    if (!t->intern || !(t->intern->slot = sp_calloc(1024, sizeof *t->intern->slot))) {
        sp_free(t->intern);
        t->intern = NULL;
        return sp_oom(ctx, "reading a trace");
    }
    t->intern->cap = 1024;
    return SP_OK;
}

void sp_trace_release(struct sp_trace *t) {
    if (!t)
        return;
    if (t->replay.release)
        t->replay.release(t->replay.state);
    sp_free(t->thread_process);
    sp_free(t->ranges);
    sp_free(t->launches);
    sp_free(t->activities);
    sp_free(t->links);
    for (size_t i = 0; i < t->n_strings; i++)
        sp_free(t->strings[i]);
    sp_free(t->strings);
    if (t->intern)
        sp_free(t->intern->slot);
    sp_free(t->intern);
    sp_free(t->collector);
    sp_free(t->file);
    for (size_t i = 0; i < t->n_process_files; i++)
        sp_free(t->process_files[i]);
    sp_free(t->process_files);
    sp_free(t->versions);
    for (size_t i = 0; i < t->n_devices; i++)
        sp_free(t->devices[i]);
    sp_free(t->devices);
    memset(t, 0, sizeof *t);
}

static bool grow(void **arr, size_t *cap, size_t need, size_t elem) {
    if (need <= *cap)
        return true;
    size_t n = *cap ? *cap * 2 : 1024;
    while (n < need)
        n *= 2;
    void *p = sp_realloc(*arr, n * elem);
    if (!p)
        return false;
    *arr = p;
    *cap = n;
    return true;
}

static bool rehash(struct sp_trace *t) {
    size_t cap = t->intern->cap * 2;
    uint32_t *slot = sp_calloc(cap, sizeof *slot);
    if (!slot)
        return false;
    for (size_t i = 0; i < t->n_strings; i++) {
        size_t h = hash_bytes(t->strings[i], strlen(t->strings[i])) & (cap - 1);
        while (slot[h])
            h = (h + 1) & (cap - 1);
        slot[h] = (uint32_t)i + 1;
    }
    sp_free(t->intern->slot);
    t->intern->slot = slot;
    t->intern->cap = cap;
    return true;
}

sp_status sp_trace_intern(sp_ctx *ctx, struct sp_trace *t, const char *s, size_t len,
                          uint32_t *id) {
    struct sp_intern *in = t->intern;
    size_t h = hash_bytes(s, len) & (in->cap - 1);
    while (in->slot[h]) {
        const char *have = t->strings[in->slot[h] - 1];
        if (strncmp(have, s, len) == 0 && have[len] == '\0') {
            *id = in->slot[h] - 1;
            return SP_OK;
        }
        h = (h + 1) & (in->cap - 1);
    }
    if (t->n_strings >= UINT32_MAX - 1)
        return sp_fail(ctx, SP_ERR_LIMIT, "%s: more than 2^32 distinct names", t->file);
    char **strings = sp_realloc(t->strings, (t->n_strings + 1) * sizeof *strings);
    if (strings)
        t->strings = strings;
    char *copy = strings ? sp_malloc(len + 1) : NULL;
    if (!copy) {
        sp_free(copy);
        return sp_oom(ctx, "reading a trace");
    }
    memcpy(copy, s, len);
    copy[len] = '\0';
    t->strings[t->n_strings] = copy;
    in->slot[h] = (uint32_t)++t->n_strings;
    *id = (uint32_t)t->n_strings - 1;
    if (2 * t->n_strings > in->cap && !rehash(t))
        return sp_oom(ctx, "reading a trace");
    return SP_OK;
}

/* Times beyond +-2^61 ns (73 years) would overflow differences after rebasing: such records,
 * and those ending before they start, carry no usable time. */
static bool usable(int64_t start, int64_t end) {
    const int64_t lim = (int64_t)1 << 61;
    return start >= -lim && start <= lim && end >= start && end <= lim;
}

/* An activity at 0, 0 has no timestamp (CUPTI writes that) */
bool sp_trace_times_usable(int64_t start_ns, int64_t end_ns, bool activity) {
    return usable(start_ns, end_ns) && !(activity && start_ns == 0 && end_ns == 0);
}

sp_status sp_trace_add_link(sp_ctx *ctx, struct sp_trace *t, const struct sp_trace_link *l,
                            uint32_t *ref) {
    if (t->n_links >= UINT32_MAX - 1)
        return sp_fail(ctx, SP_ERR_LIMIT, "%s: more than 2^32 forward-backward links", t->file);
    if (!grow((void **)&t->links, &t->cap_links, t->n_links + 1, sizeof *l))
        return sp_oom(ctx, "reading a trace");
    t->links[t->n_links++] = *l;
    *ref = (uint32_t)t->n_links;
    return SP_OK;
}

sp_status sp_trace_add_range(sp_ctx *ctx, struct sp_trace *t, const struct sp_trace_range *r) {
    if (!usable(r->start_ns, r->end_ns)) {
        t->zero_time_records++;
        return SP_OK;
    }
    if (!grow((void **)&t->ranges, &t->cap_ranges, t->n_ranges + 1, sizeof *r))
        return sp_oom(ctx, "reading a trace");
    t->ranges[t->n_ranges++] = *r;
    if (r->has_payload && r->payload > ((uint64_t)1 << 53)) {
        t->ranges[t->n_ranges - 1].has_payload = false;
        t->unusable_payloads++;
    }
    if (r->tid + 1 > t->n_threads)
        t->n_threads = r->tid + 1;
    return SP_OK;
}

sp_status sp_trace_add_launch(sp_ctx *ctx, struct sp_trace *t, const struct sp_trace_launch *l) {
    if (!usable(l->time_ns, l->time_ns)) {
        t->zero_time_records++;
        return SP_OK;
    }
    if (!grow((void **)&t->launches, &t->cap_launches, t->n_launches + 1, sizeof *l))
        return sp_oom(ctx, "reading a trace");
    t->launches[t->n_launches++] = *l;
    if (l->tid + 1 > t->n_threads)
        t->n_threads = l->tid + 1;
    return SP_OK;
}

sp_status sp_trace_add_activity(sp_ctx *ctx, struct sp_trace *t,
                                const struct sp_trace_activity *a) {
    if (!sp_trace_times_usable(a->start_ns, a->end_ns, true)) { /* counted, not used */
        t->zero_time_records++;
        return SP_OK;
    }
    if (!grow((void **)&t->activities, &t->cap_activities, t->n_activities + 1, sizeof *a))
        return sp_oom(ctx, "reading a trace");
    t->activities[t->n_activities++] = *a;
    return SP_OK;
}

sp_status sp_trace_set_device(sp_ctx *ctx, struct sp_trace *t, uint32_t device, const char *name) {
    if (device >= 4096)
        return SP_OK; /* not a device index anyone uses; the name is only informative */
    if (device >= t->n_devices) {
        char **d = sp_realloc(t->devices, ((size_t)device + 1) * sizeof *d);
        if (!d)
            return sp_oom(ctx, "reading a trace");
        for (size_t i = t->n_devices; i <= device; i++)
            d[i] = NULL;
        t->devices = d;
        t->n_devices = (size_t)device + 1;
    }
    char *copy = sp_strdup(name);
    if (!copy)
        return sp_oom(ctx, "reading a trace");
    sp_free(t->devices[device]);
    t->devices[device] = copy;
    return SP_OK;
}

sp_status sp_trace_set_thread_process(sp_ctx *ctx, struct sp_trace *t, uint32_t tid,
                                      uint32_t process) {
    if (tid >= t->n_thread_process) {
        size_t n =
            (size_t)tid + 1 > 2 * t->n_thread_process ? (size_t)tid + 1 : 2 * t->n_thread_process;
        uint32_t *p = sp_realloc(t->thread_process, n * sizeof *p);
        if (!p)
            return sp_oom(ctx, "reading a trace");
        for (size_t i = t->n_thread_process; i < n; i++)
            p[i] = 0;
        t->thread_process = p;
        t->n_thread_process = n;
    }
    t->thread_process[tid] = process;
    return SP_OK;
}

uint32_t sp_trace_process_of(const struct sp_trace *t, uint32_t tid) {
    return tid < t->n_thread_process ? t->thread_process[tid] : 0;
}

void sp_trace_rebase(struct sp_trace *t, int64_t replayed_earliest_ns) {
    int64_t o = replayed_earliest_ns;
    for (size_t i = 0; i < t->n_ranges; i++)
        o = t->ranges[i].start_ns < o ? t->ranges[i].start_ns : o;
    for (size_t i = 0; i < t->n_launches; i++)
        o = t->launches[i].time_ns < o ? t->launches[i].time_ns : o;
    for (size_t i = 0; i < t->n_activities; i++)
        o = t->activities[i].start_ns < o ? t->activities[i].start_ns : o;
    if (o == INT64_MAX)
        return;
    t->origin_ns += o;
    for (size_t i = 0; i < t->n_ranges; i++) {
        t->ranges[i].start_ns -= o;
        t->ranges[i].end_ns -= o;
    }
    for (size_t i = 0; i < t->n_launches; i++)
        t->launches[i].time_ns -= o;
    for (size_t i = 0; i < t->n_links; i++)
        t->links[i].fwd_ns -= o;
    for (size_t i = 0; i < t->n_activities; i++) {
        t->activities[i].start_ns -= o;
        t->activities[i].end_ns -= o;
    }
}

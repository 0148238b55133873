/* profiler/import_events.c: the live collector's event logs (profiler/event_log.h) into one
 * trace. Several logs (one per process of the program) merge: each keeps its own threads, and
 * its correlation ids and device ordinals, which every process numbers from the start, are keyed
 * by the log's index (sp_trace_process_corr, sp_trace_process_device), so that launches find
 * their own process's kernels and intervals merge per physical device, not per ordinal.
 *
 * A launch goes to a thread by CUPTI's external correlation: the record names the innermost
 * range open on the launching thread, and so that range's thread. Launches without one (made
 * before the collector was ready, or outside every range) go to the thread whose OS id CUPTI
 * names; one with no range thread is outside every range.
 *
 * Two passes, so memory follows the ranges and not the kernels: the first reads strings,
 * threads, ranges, correlations and devices (and checks every record); launches and activities
 * are only counted. The trace keeps the files open; when it is attributed, the second pass (the
 * trace's replay) reads them again and feeds their launches and activities straight to the
 * engine's stream. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "attribute.h"
#include "event_log.h"
#include "stagepart/stagepart.h"
#include "trace.h"
#include "u64_map.h"

struct cursor {
    const unsigned char *p;
    size_t left;
};

static uint8_t get_u8(struct cursor *c) {
    uint8_t v = c->p[0];
    c->p++;
    c->left--;
    return v;
}
static uint32_t get_u32(struct cursor *c) {
    uint32_t v = 0;
    for (int i = 0; i < 4; i++)
        v |= (uint32_t)c->p[i] << (8 * i);
    c->p += 4;
    c->left -= 4;
    return v;
}
static uint64_t get_u64(struct cursor *c) {
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v |= (uint64_t)c->p[i] << (8 * i);
    c->p += 8;
    c->left -= 8;
    return v;
}

struct log_reader {
    sp_ctx *ctx;
    struct sp_trace *t;
    char *path;
    FILE *f; /* open from the first pass to the trace's end */
    uint64_t file_index;
    struct sp_u64_map strings;       /* the log's string id -> the trace's */
    struct sp_u64_map threads;       /* the log's thread id -> the trace's */
    struct sp_u64_map os_tids;       /* an OS thread id (either kind) -> the trace's thread */
    struct sp_u64_map range_tid;     /* range id -> the trace's thread */
    struct sp_u64_map corr_range;    /* correlation id -> range id (external correlations) */
    struct sp_attrib_stream *stream; /* the second pass: where launches and activities go */
    size_t launches, activities;     /* the first pass's count of usable ones */
    int64_t earliest_ns;             /* and their earliest time */
    char cupti[64], cuda[64];
};

static sp_status bad(struct log_reader *r, size_t off, const char *what) {
    return sp_fail(r->ctx, SP_ERR_PARSE,
                   "%s: byte %zu: %s (a stagepart event log, written by "
                   "libstagepart-inject.so)",
                   r->path, off, what);
}

static sp_status oom(struct log_reader *r) {
    return sp_oom(r->ctx, "reading an event log");
}

static sp_status string_of(struct log_reader *r, size_t off, uint32_t id, uint32_t *out) {
    uint64_t v;
    if (!sp_u64_map_get(&r->strings, id, &v))
        return bad(r, off, "a record names a string the log never defined");
    *out = (uint32_t)v;
    return SP_OK;
}

static sp_status thread_of(struct log_reader *r, uint32_t tid, uint32_t *out) {
    uint64_t v;
    if (!sp_u64_map_insert(&r->threads, tid, r->t->n_threads, &v))
        return oom(r);
    if (v == r->t->n_threads) {
        r->t->n_threads++;
        sp_status st =
            sp_trace_set_thread_process(r->ctx, r->t, (uint32_t)v, (uint32_t)r->file_index);
        if (st != SP_OK)
            return st;
    }
    *out = (uint32_t)v;
    return SP_OK;
}

/* a string the other records name by id */
static sp_status read_string(struct log_reader *r, struct cursor *c, size_t off) {
    struct sp_trace *t = r->t;
    sp_status st = SP_OK;
    if (c->left < 4)
        return bad(r, off, "a string record shorter than its id");
    uint32_t id = get_u32(c);
    uint32_t mine = 0;
    if (memchr(c->p, '\0', c->left))
        return bad(r, off, "a string with a NUL byte in it");
    if ((st = sp_trace_intern(r->ctx, t, (const char *)c->p, c->left, &mine)) != SP_OK)
        return st;
    return sp_u64_map_set(&r->strings, id, mine) ? SP_OK : oom(r);
}

/* a thread and its OS ids */
static sp_status read_thread(struct log_reader *r, struct cursor *c, size_t off) {
    sp_status st = SP_OK;
    uint32_t tid = 0;
    if (c->left < 12)
        return bad(r, off, "a thread record shorter than 12 bytes");
    if ((st = thread_of(r, get_u32(c), &tid)) != SP_OK)
        return st;
    uint32_t os = get_u32(c), pt = get_u32(c);
    return sp_u64_map_insert(&r->os_tids, os, tid, NULL) &&
                   sp_u64_map_insert(&r->os_tids, pt, tid, NULL)
               ? SP_OK
               : oom(r);
}

/* an NVTX range */
static sp_status read_range(struct log_reader *r, struct cursor *c, size_t off) {
    struct sp_trace *t = r->t;
    sp_status st = SP_OK;
    if (c->left < SP_EVLOG_RANGE_BYTES)
        return bad(r, off, "a range record shorter than 41 bytes");
    uint64_t id = get_u64(c);
    struct sp_trace_range rg = {0};
    rg.start_ns = (int64_t)get_u64(c);
    rg.end_ns = (int64_t)get_u64(c);
    uint32_t log_tid = get_u32(c);
    uint32_t log_name = get_u32(c);
    rg.payload = get_u64(c);
    rg.has_payload = get_u8(c) != 0;
    if ((st = thread_of(r, log_tid, &rg.tid)) != SP_OK ||
        (st = string_of(r, off, log_name, &rg.name)) != SP_OK)
        return st;
    if (!sp_u64_map_set(&r->range_tid, id, rg.tid))
        return oom(r);
    return sp_trace_add_range(r->ctx, t, &rg);
}

/* a launch's range by external correlation */
static sp_status read_extcorr(struct log_reader *r, struct cursor *c, size_t off) {
    if (c->left < 16)
        return bad(r, off, "an external-correlation record shorter than 16 bytes");
    uint64_t corr = get_u64(c), range = get_u64(c);
    return sp_u64_map_set(&r->corr_range, corr, range) ? SP_OK : oom(r);
}

/* a launch: counted in the first pass, attributed in the second */
static sp_status read_api(struct log_reader *r, struct cursor *c, size_t off) {
    struct sp_trace *t = r->t;
    if (c->left < SP_EVLOG_API_BYTES)
        return bad(r, off, "an API record shorter than 28 bytes");
    int64_t time_ns = (int64_t)get_u64(c);
    uint64_t corr = get_u64(c);
    uint32_t cupti_tid = get_u32(c);
    uint64_t range = get_u64(c), th = UINT64_MAX;
    if (!sp_trace_times_usable(time_ns, time_ns, false)) {
        t->zero_time_records += !r->stream;
        return SP_OK;
    }
    if (!r->stream) {
        r->launches++;
        r->earliest_ns = time_ns < r->earliest_ns ? time_ns : r->earliest_ns;
        return SP_OK;
    }
    if (range || sp_u64_map_get(&r->corr_range, corr, &range))
        sp_u64_map_get(&r->range_tid, range, &th);
    if (th == UINT64_MAX && !sp_u64_map_get(&r->os_tids, cupti_tid, &th))
        th = UINT32_MAX; /* a thread without ranges: outside every range */
    struct sp_trace_launch l = {time_ns - t->origin_ns, sp_trace_process_corr(r->file_index, corr),
                                (uint32_t)th};
    return sp_attrib_launch(r->stream, &l);
}

/* a kernel, copy or memset: counted in the first pass, attributed in the second */
static sp_status read_activity(struct log_reader *r, struct cursor *c, size_t off) {
    struct sp_trace *t = r->t;
    sp_status st = SP_OK;
    uint32_t name = 0;
    if (c->left < SP_EVLOG_ACTIVITY_BYTES)
        return bad(r, off, "an activity record shorter than 45 bytes");
    struct sp_trace_activity a = {0};
    a.kind = get_u8(c);
    a.start_ns = (int64_t)get_u64(c);
    a.end_ns = (int64_t)get_u64(c);
    uint64_t corr = get_u64(c);
    a.corr = sp_trace_process_corr(r->file_index, corr);
    a.bytes = get_u64(c);
    /* every process numbers its own devices from 0: the log's index keeps two processes'
     * "device 0" apart when busy intervals are merged per device */
    a.device = sp_trace_process_device((uint32_t)r->file_index, get_u32(c));
    a.stream = get_u32(c);
    name = get_u32(c);
    if (a.kind > SP_ACTIVITY_MEMSET)
        return bad(r, off, "an activity of an unknown kind");
    if ((st = string_of(r, off, name, &a.name)) != SP_OK)
        return st;
    if (!sp_trace_times_usable(a.start_ns, a.end_ns, true)) {
        t->zero_time_records += !r->stream;
        return SP_OK;
    }
    if (!r->stream) {
        r->activities++;
        r->earliest_ns = a.start_ns < r->earliest_ns ? a.start_ns : r->earliest_ns;
        return SP_OK;
    }
    a.start_ns -= t->origin_ns;
    a.end_ns -= t->origin_ns;
    return sp_attrib_activity(r->stream, &a);
}

/* a device's name */
static sp_status read_device(struct log_reader *r, struct cursor *c, size_t off) {
    struct sp_trace *t = r->t;
    sp_status st = SP_OK;
    uint32_t name = 0;
    if (c->left < 8)
        return bad(r, off, "a device record shorter than 8 bytes");
    uint32_t dev = get_u32(c);
    if ((st = string_of(r, off, get_u32(c), &name)) != SP_OK)
        return st;
    return sp_trace_set_device(r->ctx, t, dev, t->strings[name]);
}

/* the collector's versions and warnings */
static sp_status read_meta(struct log_reader *r, struct cursor *c, size_t off) {
    struct sp_trace *t = r->t;
    sp_status st = SP_OK;
    if (c->left < 8)
        return bad(r, off, "a meta record shorter than 8 bytes");
    uint32_t k = 0, v = 0;
    if ((st = string_of(r, off, get_u32(c), &k)) != SP_OK ||
        (st = string_of(r, off, get_u32(c), &v)) != SP_OK)
        return st;
    if (strcmp(t->strings[k], "cupti") == 0)
        snprintf(r->cupti, sizeof r->cupti, "%s", t->strings[v]);
    else if (strcmp(t->strings[k], "cuda") == 0)
        snprintf(r->cuda, sizeof r->cuda, "%s", t->strings[v]);
    else if (strcmp(t->strings[k], "warning") == 0)
        sp_warn(r->ctx, "%s: the collector said: %s", r->path, t->strings[v]);
    return SP_OK;
}

/* records the collector dropped */
static sp_status read_dropped(struct log_reader *r, struct cursor *c, size_t off) {
    struct sp_trace *t = r->t;
    if (c->left < 8)
        return bad(r, off, "a dropped-records record shorter than 8 bytes");
    t->dropped_records += get_u64(c);
    return SP_OK;
}

/* each record's reader by its tag; a tag without one is a later version's record */
typedef sp_status (*record_reader)(struct log_reader *r, struct cursor *c, size_t off);
static const record_reader readers[256] = {
    [SP_EVLOG_STRING] = read_string,   [SP_EVLOG_THREAD] = read_thread,
    [SP_EVLOG_RANGE] = read_range,     [SP_EVLOG_EXTCORR] = read_extcorr,
    [SP_EVLOG_API] = read_api,         [SP_EVLOG_ACTIVITY] = read_activity,
    [SP_EVLOG_DEVICE] = read_device,   [SP_EVLOG_META] = read_meta,
    [SP_EVLOG_DROPPED] = read_dropped,
};

static sp_status read_record(struct log_reader *r, uint8_t tag, struct cursor *c, size_t off) {
    if (r->stream && tag != SP_EVLOG_API && tag != SP_EVLOG_ACTIVITY)
        return SP_OK; /* the second pass: the rest was read in the first */
    return readers[tag] ? readers[tag](r, c, off) : SP_OK;
}

/* The log is read in chunks, so memory follows the event store, not the file's size. */
#define CHUNK_BYTES ((size_t)4 << 20) /* more than the largest record (a 64 KiB string) */

/* One pass over the log: the first when r->stream is NULL, else the second. The file stays open
 * between the passes (closed with the trace), so a log removed after loading still reads. */
static sp_status read_log(struct log_reader *r) {
    if (!r->f && !(r->f = fopen(r->path, "rb")))
        return sp_fail(r->ctx, SP_ERR_IO, "cannot open '%s': %s%s", r->path, strerror(errno),
                       errno == EMFILE ? " (one descriptor per log: raise ulimit -n)" : "");
    FILE *f = r->f;
    if (fseek(f, 0, SEEK_SET) != 0)
        return sp_fail(r->ctx, SP_ERR_IO, "%s: cannot read it again: %s", r->path, strerror(errno));
    unsigned char *buf = sp_malloc(CHUNK_BYTES);
    if (!buf)
        return oom(r);
    size_t have = fread(buf, 1, CHUNK_BYTES, f), pos = SP_EVLOG_HEADER_BYTES, base = 0;
    sp_status st = SP_OK;
    if (have < SP_EVLOG_HEADER_BYTES || memcmp(buf, SP_EVLOG_MAGIC, 8) != 0) {
        st = sp_fail(r->ctx, SP_ERR_PARSE,
                     "%s: not a stagepart event log (no \"SPEVLOG\" header): the files "
                     "libstagepart-inject.so writes, read by `stagepart profile --attach`",
                     r->path);
    } else {
        struct cursor h = {buf + 8, 8};
        uint32_t version = get_u32(&h);
        if (version != SP_EVLOG_VERSION)
            st = sp_fail(r->ctx, SP_ERR_SCHEMA,
                         "%s: event log version %u; this stagepart reads version %u (use the "
                         "libstagepart-inject.so of the same build)",
                         r->path, version, SP_EVLOG_VERSION);
    }
    while (st == SP_OK) {
        size_t left = have - pos;
        if (left >= SP_EVLOG_RECORD_HEADER_BYTES) {
            struct cursor c = {buf + pos, left};
            uint8_t tag = get_u8(&c);
            uint32_t n = get_u32(&c);
            if ((size_t)n > CHUNK_BYTES - SP_EVLOG_RECORD_HEADER_BYTES) {
                st = bad(r, base + pos, "a record longer than any the collector writes");
                break;
            }
            if (left >= SP_EVLOG_RECORD_HEADER_BYTES + (size_t)n) {
                struct cursor body = {c.p, n};
                st = read_record(r, tag, &body, base + pos);
                pos += SP_EVLOG_RECORD_HEADER_BYTES + n;
                continue;
            }
        }
        /* the next record is not whole in the buffer: move the rest down and refill */
        memmove(buf, buf + pos, left);
        base += pos;
        have = left;
        pos = 0;
        size_t got = fread(buf + have, 1, CHUNK_BYTES - have, f);
        if (ferror(f)) {
            st = sp_fail(r->ctx, SP_ERR_IO, "%s: read error", r->path);
            break;
        }
        if (got == 0)
            break; /* the end, or a record cut by the program's death: the tail is lost */
        have += got;
    }
    sp_free(buf);
    return st;
}

static void reader_release(struct log_reader *r) {
    if (r->f)
        fclose(r->f);
    sp_free(r->path);
    sp_u64_map_release(&r->strings);
    sp_u64_map_release(&r->threads);
    sp_u64_map_release(&r->os_tids);
    sp_u64_map_release(&r->range_tid);
    sp_u64_map_release(&r->corr_range);
}

struct events_replay {
    struct log_reader *readers;
    size_t n;
};

static void replay_release(void *state) {
    struct events_replay *e = state;
    for (size_t i = 0; e && i < e->n; i++)
        reader_release(&e->readers[i]);
    if (e)
        sp_free(e->readers);
    sp_free(e);
}

/* the second pass, log after log */
static sp_status replay_run(sp_ctx *ctx, const struct sp_trace *t, void *state,
                            struct sp_attrib_stream *stream) {
    (void)t;
    struct events_replay *e = state;
    sp_status st = SP_OK;
    for (size_t i = 0; st == SP_OK && i < e->n; i++) {
        struct log_reader *r = &e->readers[i];
        r->ctx = ctx;
        r->stream = stream;
        st = read_log(r);
        r->stream = NULL;
    }
    return st;
}

sp_status sp_trace_load_events(sp_ctx *ctx, const char *const *paths, size_t n, sp_trace **out) {
    if (!ctx)
        return SP_ERR_INVALID_ARG;
    sp_ctx_begin(ctx);
    if (!paths || !out || n == 0)
        return sp_fail(ctx, SP_ERR_INVALID_ARG, "sp_trace_load_events: no event log given");
    if (n > SP_TRACE_MAX_PROCESSES)
        return sp_fail(ctx, SP_ERR_LIMIT, "%zu event logs: at most %d processes' logs at once", n,
                       SP_TRACE_MAX_PROCESSES);
    *out = NULL;
    struct sp_trace *t = sp_calloc(1, sizeof *t);
    sp_status st = t ? sp_trace_init(ctx, t) : sp_oom(ctx, "reading an event log");
    struct events_replay *e = NULL;
    if (st == SP_OK) {
        t->collector = sp_strdup("stagepart-inject (CUPTI activity API, NVTX)");
        t->file = sp_strdup(paths[0]);
        e = sp_calloc(1, sizeof *e);
        if (e && !(e->readers = sp_calloc(n, sizeof *e->readers))) {
            sp_free(e);
            e = NULL;
        }
        if (!t->collector || !t->file || !e)
            st = sp_oom(ctx, "reading an event log");
    }
    if (st == SP_OK) { /* the trace owns the readers from here: they hold the second pass */
        t->replay = (struct sp_trace_replay){replay_run, replay_release, e, 0, 0};
    }
    char versions[256] = "";
    int64_t earliest = INT64_MAX;
    for (size_t i = 0; st == SP_OK && i < n; i++) {
        struct log_reader *r = &e->readers[i];
        e->n++;
        r->ctx = ctx;
        r->t = t;
        r->file_index = i;
        r->earliest_ns = INT64_MAX;
        if (!(r->path = sp_strdup(paths[i]))) {
            st = sp_oom(ctx, "reading an event log");
            break;
        }
        st = read_log(r);
        t->replay.launches += r->launches;
        t->replay.activities += r->activities;
        earliest = r->earliest_ns < earliest ? r->earliest_ns : earliest;
        if (st == SP_OK && !versions[0] && r->cuda[0])
            snprintf(versions, sizeof versions, "collector built with CUDA %s, CUPTI %s loaded",
                     r->cuda, r->cupti[0] ? r->cupti : "(unknown)");
        else if (st == SP_OK && !versions[0] && r->cupti[0])
            snprintf(versions, sizeof versions, "CUPTI %s loaded", r->cupti);
    }
    if (st == SP_OK && !(t->versions = sp_strdup(versions)))
        st = sp_oom(ctx, "reading an event log");
    if (st != SP_OK) {
        if (!t || !t->replay.state)
            replay_release(e);
        sp_trace_destroy(t);
        return st;
    }
    sp_trace_rebase(t, earliest);
    *out = t;
    return SP_OK;
}

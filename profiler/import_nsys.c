/* profiler/import_nsys.c: the SQLite export of an Nsight Systems report
 * (`nsys export --type sqlite REPORT.nsys-rep`), read with libsqlite3.
 *
 *   NVTX_EVENTS (eventType 59 push/pop, 60 start/end): start, end, text or textId -> StringIds,
 *       globalTid, and the u64 payload (uint64Value) when the column exists   -> host ranges
 *   CUPTI_ACTIVITY_KIND_RUNTIME (and _DRIVER): start, globalTid, correlationId -> launches
 *   CUPTI_ACTIVITY_KIND_KERNEL: start, end, deviceId, streamId, correlationId, demangledName or
 *       shortName -> StringIds; _MEMCPY and _MEMSET: the same with bytes     -> activities
 *   TARGET_INFO_GPU (id, name) names the devices; META_DATA_EXPORT the export's schema version.
 * Times are nanoseconds already. Tables that are absent count as empty (nsys creates them
 * lazily), but a file with no kernel table or no NVTX table is refused with the reason. */
#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>

#include "stagepart/stagepart.h"
#include "trace.h"
#include "u64_map.h"

static bool has_table(sqlite3 *db, const char *table) {
    sqlite3_stmt *q = NULL;
    bool found = false;
    if (sqlite3_prepare_v2(db, "SELECT 1 FROM sqlite_master WHERE type='table' AND name=?", -1, &q,
                           NULL) == SQLITE_OK &&
        sqlite3_bind_text(q, 1, table, -1, SQLITE_STATIC) == SQLITE_OK)
        found = sqlite3_step(q) == SQLITE_ROW;
    sqlite3_finalize(q);
    return found;
}

static bool has_column(sqlite3 *db, const char *table, const char *column) {
    char sql[128];
    snprintf(sql, sizeof sql, "PRAGMA table_info(%s)", table);
    sqlite3_stmt *q = NULL;
    bool found = false;
    if (sqlite3_prepare_v2(db, sql, -1, &q, NULL) == SQLITE_OK)
        while (!found && sqlite3_step(q) == SQLITE_ROW) {
            const unsigned char *name = sqlite3_column_text(q, 1);
            found = name && strcmp((const char *)name, column) == 0;
        }
    sqlite3_finalize(q);
    return found;
}

/* Threads and processes. A globalTid holds the process id in bits 24-47 and the thread id in
 * bits 0-23 (Nsight's serialized GlobalId; globalPid the same with the thread bits 0). A report
 * of several processes (nsys profile torchrun ...) numbers correlation ids and devices per
 * process, so when the GPU tables say each record's process (globalPid), ids are keyed by it. */
struct nsys_ids {
    struct sp_trace *t;
    struct sp_u64_map tids; /* globalTid -> thread index */
    struct sp_u64_map pids; /* process id -> process index */
    bool by_pid;            /* correlation ids and devices keyed by process */
};

static uint64_t pid_of(int64_t global_id) {
    return ((uint64_t)global_id >> 24) & 0xffffffu;
}

static bool process_of(struct nsys_ids *ids, uint64_t pid, uint32_t *proc) {
    uint64_t v = 0;
    if (!sp_u64_map_insert(&ids->pids, pid, ids->pids.n, &v))
        return false;
    *proc = (uint32_t)v;
    return true;
}

static sp_status tid_of(sp_ctx *ctx, struct nsys_ids *ids, int64_t gtid, uint32_t *out) {
    uint64_t v = 0;
    size_t before = ids->tids.n;
    uint32_t proc = 0;
    if (!sp_u64_map_insert(&ids->tids, (uint64_t)gtid, ids->tids.n, &v))
        return sp_oom(ctx, "reading a trace");
    *out = (uint32_t)v;
    if (ids->tids.n == before)
        return SP_OK;
    if (!process_of(ids, pid_of(gtid), &proc))
        return sp_oom(ctx, "reading a trace");
    return sp_trace_set_thread_process(ctx, ids->t, *out, proc);
}

/* a correlation id, keyed by the process when the report has several */
static uint64_t corr_key(const struct nsys_ids *ids, int64_t global_id, int64_t corr) {
    return ids->by_pid ? sp_trace_process_corr(pid_of(global_id), (uint64_t)corr) : (uint64_t)corr;
}

static sp_status query_failed(sp_ctx *ctx, const char *path, sqlite3 *db, const char *what) {
    return sp_fail(ctx, SP_ERR_SCHEMA, "%s: reading %s: %s", path, what, sqlite3_errmsg(db));
}

static sp_status read_ranges(sp_ctx *ctx, const char *path, sqlite3 *db, struct sp_trace *t,
                             struct nsys_ids *ids) {
    bool payload = has_column(db, "NVTX_EVENTS", "uint64Value");
    bool text_id = has_column(db, "NVTX_EVENTS", "textId") && has_table(db, "StringIds");
    char sql[512];
    snprintf(sql, sizeof sql,
             "SELECT e.start, e.end, %s, e.globalTid, %s FROM NVTX_EVENTS AS e%s "
             "WHERE e.eventType IN (59, 60) AND e.end IS NOT NULL AND e.end >= e.start",
             text_id ? "COALESCE(e.text, s.value)" : "e.text", payload ? "e.uint64Value" : "NULL",
             text_id ? " LEFT JOIN StringIds AS s ON s.id = e.textId" : "");
    sqlite3_stmt *q = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &q, NULL) != SQLITE_OK)
        return query_failed(ctx, path, db, "NVTX_EVENTS");
    sp_status st = SP_OK;
    int rc;
    while (st == SP_OK && (rc = sqlite3_step(q)) == SQLITE_ROW) {
        const unsigned char *text = sqlite3_column_text(q, 2);
        if (!text)
            continue;
        struct sp_trace_range r = {sqlite3_column_int64(q, 0),
                                   sqlite3_column_int64(q, 1),
                                   0,
                                   0,
                                   0,
                                   sqlite3_column_type(q, 4) != SQLITE_NULL,
                                   0};
        r.payload = r.has_payload ? (uint64_t)sqlite3_column_int64(q, 4) : 0;
        st = tid_of(ctx, ids, sqlite3_column_int64(q, 3), &r.tid);
        if (st == SP_OK)
            st = sp_trace_intern(ctx, t, (const char *)text, strlen((const char *)text), &r.name);
        if (st == SP_OK)
            st = sp_trace_add_range(ctx, t, &r);
    }
    if (st == SP_OK && rc != SQLITE_DONE)
        st = query_failed(ctx, path, db, "NVTX_EVENTS");
    sqlite3_finalize(q);
    return st;
}

static sp_status read_launches(sp_ctx *ctx, const char *path, sqlite3 *db, const char *table,
                               struct sp_trace *t, struct nsys_ids *ids) {
    if (!has_table(db, table))
        return SP_OK;
    char sql[256];
    snprintf(sql, sizeof sql, "SELECT start, globalTid, correlationId FROM %s", table);
    sqlite3_stmt *q = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &q, NULL) != SQLITE_OK)
        return query_failed(ctx, path, db, table);
    sp_status st = SP_OK;
    int rc;
    while (st == SP_OK && (rc = sqlite3_step(q)) == SQLITE_ROW) {
        int64_t gtid = sqlite3_column_int64(q, 1);
        struct sp_trace_launch l = {sqlite3_column_int64(q, 0),
                                    corr_key(ids, gtid, sqlite3_column_int64(q, 2)), 0};
        st = tid_of(ctx, ids, gtid, &l.tid);
        if (st == SP_OK)
            st = sp_trace_add_launch(ctx, t, &l);
    }
    if (st == SP_OK && rc != SQLITE_DONE)
        st = query_failed(ctx, path, db, table);
    sqlite3_finalize(q);
    return st;
}

/* Whether correlation ids must be keyed by process: every GPU table there is says each record's
 * process (globalPid, never NULL), and the kernels come from more than one process. */
static bool several_processes(sqlite3 *db) {
    static const char *const tables[] = {"CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY",
                                         "CUPTI_ACTIVITY_KIND_MEMSET"};
    int64_t processes = 0;
    for (size_t i = 0; i < sizeof tables / sizeof *tables; i++) {
        if (!has_table(db, tables[i]))
            continue;
        if (!has_column(db, tables[i], "globalPid"))
            return false;
        char sql[256];
        snprintf(sql, sizeof sql,
                 "SELECT COUNT(DISTINCT (globalPid >> 24) & 16777215), "
                 "COALESCE(SUM(globalPid IS NULL), 0) FROM %s",
                 tables[i]);
        sqlite3_stmt *q = NULL;
        bool ok = sqlite3_prepare_v2(db, sql, -1, &q, NULL) == SQLITE_OK &&
                  sqlite3_step(q) == SQLITE_ROW && sqlite3_column_int64(q, 1) == 0;
        if (ok && i == 0)
            processes = sqlite3_column_int64(q, 0);
        sqlite3_finalize(q);
        if (!ok)
            return false;
    }
    return processes > 1;
}

static sp_status read_activities(sp_ctx *ctx, const char *path, sqlite3 *db, const char *table,
                                 uint8_t kind, struct sp_trace *t, struct nsys_ids *ids) {
    if (!has_table(db, table))
        return SP_OK;
    const char *name_col = has_column(db, table, "demangledName") ? "demangledName"
                           : has_column(db, table, "shortName")   ? "shortName"
                                                                  : NULL;
    bool strings = name_col && has_table(db, "StringIds");
    bool bytes = has_column(db, table, "bytes");
    char sql[512];
    snprintf(sql, sizeof sql,
             "SELECT a.start, a.end, a.deviceId, a.streamId, a.correlationId, %s, %s, %s FROM %s "
             "AS a%s%s%s",
             bytes ? "a.bytes" : "0", strings ? "s.value" : "NULL",
             ids->by_pid ? "a.globalPid" : "0", table,
             strings ? " LEFT JOIN StringIds AS s ON s.id = a." : "", strings ? name_col : "", "");
    sqlite3_stmt *q = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &q, NULL) != SQLITE_OK)
        return query_failed(ctx, path, db, table);
    const char *fallback = kind == SP_ACTIVITY_KERNEL   ? "kernel"
                           : kind == SP_ACTIVITY_MEMCPY ? "memcpy"
                                                        : "memset";
    sp_status st = SP_OK;
    int rc;
    while (st == SP_OK && (rc = sqlite3_step(q)) == SQLITE_ROW) {
        int64_t dev = sqlite3_column_int64(q, 2), stream = sqlite3_column_int64(q, 3);
        int64_t b = sqlite3_column_int64(q, 5), gpid = sqlite3_column_int64(q, 7);
        uint32_t proc = 0;
        if (ids->by_pid && !process_of(ids, pid_of(gpid), &proc)) {
            st = sp_oom(ctx, "reading a trace");
            break;
        }
        struct sp_trace_activity a = {
            sqlite3_column_int64(q, 0), sqlite3_column_int64(q, 1),
            corr_key(ids, gpid, sqlite3_column_int64(q, 4)), b > 0 ? (uint64_t)b : 0,
            /* each process's device ordinals are its own */
            sp_trace_process_device(proc, dev >= 0 && dev < 65536 ? (uint32_t)dev : 0),
            stream >= 0 && stream < UINT32_MAX ? (uint32_t)stream : 0, 0, kind};
        const unsigned char *name = sqlite3_column_text(q, 6);
        const char *n = name ? (const char *)name : fallback;
        st = sp_trace_intern(ctx, t, n, strlen(n), &a.name);
        if (st == SP_OK && a.end_ns >= a.start_ns)
            st = sp_trace_add_activity(ctx, t, &a);
        else if (st == SP_OK) /* ends before it starts: left out, and counted */
            t->malformed_activities++;
    }
    if (st == SP_OK && rc != SQLITE_DONE)
        st = query_failed(ctx, path, db, table);
    sqlite3_finalize(q);
    return st;
}

static void read_meta(sp_ctx *ctx, sqlite3 *db, struct sp_trace *t) {
    sqlite3_stmt *q = NULL;
    if (has_table(db, "TARGET_INFO_GPU") &&
        sqlite3_prepare_v2(db, "SELECT id, name FROM TARGET_INFO_GPU", -1, &q, NULL) == SQLITE_OK)
        while (sqlite3_step(q) == SQLITE_ROW) {
            const unsigned char *name = sqlite3_column_text(q, 1);
            int64_t id = sqlite3_column_int64(q, 0);
            if (name && id >= 0)
                sp_trace_set_device(ctx, t, (uint32_t)id, (const char *)name);
        }
    sqlite3_finalize(q);
    q = NULL;
    char buf[256] = "";
    if (has_table(db, "META_DATA_EXPORT") &&
        sqlite3_prepare_v2(
            db, "SELECT value FROM META_DATA_EXPORT WHERE name = 'EXPORT_SCHEMA_VERSION'", -1, &q,
            NULL) == SQLITE_OK &&
        sqlite3_step(q) == SQLITE_ROW && sqlite3_column_text(q, 0))
        snprintf(buf, sizeof buf, "nsys export schema %.64s",
                 (const char *)sqlite3_column_text(q, 0));
    sqlite3_finalize(q);
    t->versions = sp_strdup(buf);
}

sp_status sp_trace_load_nsys(sp_ctx *ctx, const char *path, sp_trace **out) {
    if (!ctx)
        return SP_ERR_INVALID_ARG;
    sp_ctx_begin(ctx);
    if (!path || !out)
        return sp_fail(ctx, SP_ERR_INVALID_ARG, "sp_trace_load_nsys: NULL argument");
    *out = NULL;
    sp_status checked = sp_trace_check_path(ctx, path);
    if (checked != SP_OK)
        return checked;
    FILE *probe = fopen(path, "rb");
    if (!probe)
        return sp_fail(ctx, SP_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
    char magic[16] = {0};
    size_t got = fread(magic, 1, sizeof magic, probe);
    fclose(probe);
    size_t plen = strlen(path);
    bool report = (plen > 9 && strcmp(path + plen - 9, ".nsys-rep") == 0) ||
                  (plen > 6 && strcmp(path + plen - 6, ".qdrep") == 0);
    bool json = got > 0 && (magic[0] == '{' || magic[0] == '[' ||
                            ((unsigned char)magic[0] == 0x1f && (unsigned char)magic[1] == 0x8b));
    if (got < 16 || memcmp(magic, "SQLite format 3", 16) != 0)
        return sp_fail(ctx, SP_ERR_PARSE, "%s: %s", path,
                       report ? "an Nsight Systems report, which import nsys reads once exported "
                                "to SQLite: nsys export --type sqlite --output REPORT.sqlite "
                                "REPORT.nsys-rep"
                       : json ? "a JSON (or gzip) file, not an Nsight Systems SQLite export: "
                                "for a PyTorch profiler trace use `stagepart import kineto`"
                              : "not an SQLite database (export the report with `nsys export "
                                "--type sqlite REPORT.nsys-rep`)");
    sqlite3 *db = NULL;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
        sp_status st = sp_fail(ctx, SP_ERR_IO, "%s: %s", path, db ? sqlite3_errmsg(db) : "");
        sqlite3_close(db);
        return st;
    }
    struct sp_trace *t = sp_calloc(1, sizeof *t);
    struct nsys_ids ids = {t, {0}, {0}, false};
    sp_status st = t ? sp_trace_init(ctx, t) : sp_oom(ctx, "reading a trace");
    if (st == SP_OK) {
        t->collector = sp_strdup("nsys sqlite");
        t->file = sp_strdup(path);
        if (!t->collector || !t->file)
            st = sp_oom(ctx, "reading a trace");
    }
    if (st == SP_OK && !has_table(db, "CUPTI_ACTIVITY_KIND_KERNEL"))
        st = sp_fail(ctx, SP_ERR_SCHEMA,
                     "%s: no CUPTI_ACTIVITY_KIND_KERNEL table: not an Nsight Systems export, or "
                     "recorded without CUDA tracing (nsys profile -t cuda,nvtx)",
                     path);
    if (st == SP_OK && !has_table(db, "NVTX_EVENTS"))
        st = sp_fail(ctx, SP_ERR_SCHEMA,
                     "%s: no NVTX_EVENTS table: record with NVTX tracing (nsys profile -t "
                     "cuda,nvtx) and ranges around the layers (docs/profiling.md)",
                     path);
    if (st == SP_OK)
        ids.by_pid = several_processes(db);
    if (st == SP_OK)
        st = read_ranges(ctx, path, db, t, &ids);
    if (st == SP_OK)
        st = read_launches(ctx, path, db, "CUPTI_ACTIVITY_KIND_RUNTIME", t, &ids);
    if (st == SP_OK)
        st = read_launches(ctx, path, db, "CUPTI_ACTIVITY_KIND_DRIVER", t, &ids);
    if (st == SP_OK)
        st = read_activities(ctx, path, db, "CUPTI_ACTIVITY_KIND_KERNEL", SP_ACTIVITY_KERNEL, t,
                             &ids);
    if (st == SP_OK)
        st = read_activities(ctx, path, db, "CUPTI_ACTIVITY_KIND_MEMCPY", SP_ACTIVITY_MEMCPY, t,
                             &ids);
    if (st == SP_OK)
        st = read_activities(ctx, path, db, "CUPTI_ACTIVITY_KIND_MEMSET", SP_ACTIVITY_MEMSET, t,
                             &ids);
    if (st == SP_OK) {
        read_meta(ctx, db, t);
        if (!t->versions)
            st = sp_oom(ctx, "reading a trace");
    }
    sp_u64_map_release(&ids.tids);
    sp_u64_map_release(&ids.pids);
    sqlite3_close(db);
    if (st != SP_OK) {
        sp_trace_destroy(t);
        return st;
    }
    sp_trace_rebase(t, INT64_MAX);
    *out = t;
    return SP_OK;
}

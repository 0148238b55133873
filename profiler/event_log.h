/* profiler/event_log.h: the event log the live collector (libstagepart-inject.so) writes while
 * the program runs and `stagepart profile --attach` reads when it exits (profiler/import_events.c).
 *
 * Why a log and not the profile: the collector runs inside the user's program, so it does the
 * least it can (append fixed records, intern strings) and never allocates per kernel; the
 * attribution, patterns and statistics run afterwards in stagepart, on the same engine as the
 * importers. The file is written incrementally, so a program that dies loses only the tail.
 *
 * Layout (little-endian): an 16-byte header
 *     "SPEVLOG\0"  u32 version (1)  u32 pid
 * then records
 *     u8 tag  u32 length  <length bytes>
 * A reader skips tags it does not know (later versions may add some). Times are nanoseconds on
 * CUPTI's clock (cuptiGetTimestamp), the clock of CUPTI's own records. */
#ifndef SP_PROFILER_EVENT_LOG_H
#define SP_PROFILER_EVENT_LOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SP_EVLOG_MAGIC               "SPEVLOG" /* 8 bytes with the NUL */
#define SP_EVLOG_VERSION             1u
#define SP_EVLOG_HEADER_BYTES        16u
#define SP_EVLOG_RECORD_HEADER_BYTES 5u

enum sp_evlog_tag {
    /* u32 id, the bytes (not NUL-terminated): a string later records name by id */
    SP_EVLOG_STRING = 'S',
    /* u32 tid, u32 os_tid (gettid), u32 pthread_tid (pthread_self, low 32 bits): a host thread;
     * CUPTI's API records name threads by one of the two OS ids */
    SP_EVLOG_THREAD = 'T',
    /* u64 id, i64 start_ns, i64 end_ns, u32 tid, u32 name, u64 payload, u8 has_payload: a
     * closed NVTX range; written when it is popped */
    SP_EVLOG_RANGE = 'R',
    /* u64 corr, u64 range_id: the innermost range open on the launching thread when the API
     * call with this correlation id ran (CUPTI's external correlation) */
    SP_EVLOG_EXTCORR = 'X',
    /* i64 start_ns, u64 corr, u32 cupti_tid, u64 range_id: a runtime or driver API call; its
     * external correlation (the innermost open range) folded in when CUPTI's record came right
     * before it, else 0 and an EXTCORR record may say it */
    SP_EVLOG_API = 'A',
    /* u8 kind (enum sp_activity_kind), i64 start_ns, i64 end_ns, u64 corr, u64 bytes,
     * u32 device, u32 stream, u32 name: a kernel, copy or memset */
    SP_EVLOG_ACTIVITY = 'K',
    /* u32 device, u32 name: a device's name */
    SP_EVLOG_DEVICE = 'D',
    /* u32 key, u32 value (strings): what the collector knows about itself ("cupti", "cuda",
     * "mode", "note", ...) */
    SP_EVLOG_META = 'M',
    /* u64 count: records CUPTI dropped (buffers full) */
    SP_EVLOG_DROPPED = 'L',
};

#define SP_EVLOG_RANGE_BYTES    41u
#define SP_EVLOG_ACTIVITY_BYTES 45u
#define SP_EVLOG_API_BYTES      28u

/* ---- the writer (profiler/event_log_write.c). Thread-safe; allocates only for strings it has
 * not seen; on a write error it stops writing and remembers the errno (sp_evlog_failed). Used by
 * the collector and by the tests, without sp_ctx or the library's allocator hooks: it runs inside
 * the user's program. */
struct sp_evlog;

/* Open path for writing (O_EXCL: never over another process's log). NULL and errno on failure. */
struct sp_evlog *sp_evlog_open(const char *path, uint32_t pid);
/* Strings are interned: the same bytes give the same id; a new one writes a STRING record. */
bool sp_evlog_string(struct sp_evlog *log, const char *s, size_t len, uint32_t *id);
/* The same for a NUL-terminated name whose pointer repeats (CUPTI's kernel names): a small cache
 * by address skips the hashing; a hit is confirmed against the interned bytes. */
bool sp_evlog_name(struct sp_evlog *log, const char *s, uint32_t *id);
void sp_evlog_thread(struct sp_evlog *log, uint32_t tid, uint32_t os_tid, uint32_t pthread_tid);
void sp_evlog_range(struct sp_evlog *log, uint64_t id, int64_t start_ns, int64_t end_ns,
                    uint32_t tid, uint32_t name, uint64_t payload, bool has_payload);
void sp_evlog_extcorr(struct sp_evlog *log, uint64_t corr, uint64_t range_id);
void sp_evlog_api(struct sp_evlog *log, int64_t start_ns, uint64_t corr, uint32_t cupti_tid,
                  uint64_t range_id);
void sp_evlog_activity(struct sp_evlog *log, uint8_t kind, int64_t start_ns, int64_t end_ns,
                       uint64_t corr, uint64_t bytes, uint32_t device, uint32_t stream,
                       uint32_t name);
void sp_evlog_device(struct sp_evlog *log, uint32_t device, const char *name);
void sp_evlog_meta(struct sp_evlog *log, const char *key, const char *value);
void sp_evlog_dropped(struct sp_evlog *log, uint64_t count);
/* Write what is buffered. */
void sp_evlog_flush(struct sp_evlog *log);
/* 0, or the errno of the first failed write (everything after it was dropped). */
int sp_evlog_failed(const struct sp_evlog *log);
/* Flush and close the file but keep the writer: later records are dropped. For a log other
 * threads may still write to (at the program's exit). Returns sp_evlog_failed or close's errno. */
int sp_evlog_seal(struct sp_evlog *log);
/* Flush, close and free; returns sp_evlog_failed (or close's errno). */
int sp_evlog_close(struct sp_evlog *log);

#endif

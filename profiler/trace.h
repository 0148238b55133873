/* profiler/trace.h: what a collector or importer hands the attribution engine: host ranges,
 * API launches and GPU activities, in the engine's own terms (never CUPTI, Kineto or Nsight
 * types), so live collection, traces and test fixtures all feed the same code.
 *
 * Times are nanoseconds on one clock per trace (host and GPU records share it, as CUPTI's and
 * Nsight's do), relative to the trace's first event so they stay exact in a double. Threads are
 * small integers the importer assigns. Strings are interned: `name` fields index trace->strings. */
#ifndef SP_PROFILER_TRACE_H
#define SP_PROFILER_TRACE_H

#include "internal.h"

/* A host range (NVTX push/pop, record_function, nn.Module, ...), on one thread. */
struct sp_trace_range {
    int64_t start_ns, end_ns;
    uint32_t tid, name;
    uint64_t payload; /* an NVTX u64 payload: the layer's output bytes; with has_payload */
    bool has_payload;
    uint32_t link; /* a backward op's link (index + 1 into trace->links), 0: none */
};

/* Where the forward op of a backward op ran (PyTorch's fwdbwd flow events link each autograd
 * node's op to the forward op that made it): its thread and start. The backward's GPU work
 * belongs to the layer that forward op ran in. */
struct sp_trace_link {
    int64_t fwd_ns;
    uint32_t fwd_tid;
};

/* A host API call that makes GPU work (kernel launch, copy, memset, graph launch). */
struct sp_trace_launch {
    int64_t time_ns;
    uint64_t corr; /* correlation id: the GPU records it made carry the same */
    uint32_t tid;
};

enum sp_activity_kind { SP_ACTIVITY_KERNEL, SP_ACTIVITY_MEMCPY, SP_ACTIVITY_MEMSET };

/* GPU work. */
struct sp_trace_activity {
    int64_t start_ns, end_ns;
    uint64_t corr, bytes;
    uint32_t device, stream, name;
    uint8_t kind; /* enum sp_activity_kind */
};

struct sp_intern; /* string table (trace.c) */
struct sp_attrib_stream;
struct sp_trace;

/* Launches and activities a trace does not hold: a source that reads them again when they are
 * attributed (the event log's second pass), so a trace of millions of kernels costs its ranges'
 * memory, not its kernels'. run feeds them to the stream with sp_attrib_launch and
 * sp_attrib_activity, on the trace's rebased clock; release frees state. */
struct sp_trace_replay {
    sp_status (*run)(sp_ctx *ctx, const struct sp_trace *t, void *state,
                     struct sp_attrib_stream *stream);
    void (*release)(void *state);
    void *state;
    size_t launches, activities; /* how many run will feed (window sizing) */
};

struct sp_trace {
    struct sp_trace_range *ranges;
    size_t n_ranges, cap_ranges;
    struct sp_trace_launch *launches;
    size_t n_launches, cap_launches;
    struct sp_trace_activity *activities;
    size_t n_activities, cap_activities;
    struct sp_trace_link *links;
    size_t n_links, cap_links;
    char **strings; /* strings[n_strings], owned */
    size_t n_strings;
    struct sp_intern *intern;
    uint32_t n_threads;
    /* the process each thread belongs to (thread_process[tid], n_thread_process of them; NULL:
     * one process). Steps are matched within a process: every rank of a pipeline has its own
     * "step k", at about the same time as the others'. */
    uint32_t *thread_process;
    size_t n_thread_process;
    int64_t origin_ns;    /* subtracted from every time (the first event's) */
    char *collector;      /* "kineto trace", "nsys sqlite", ... */
    char *file;           /* what it was read from */
    char **process_files; /* per process, the file it was read from (several Kineto traces), or
                           * NULL: n_process_files of them, owned */
    size_t n_process_files;
    char *versions; /* tool versions the file names, or "" */
    char **devices; /* device names by index, or NULL entries */
    size_t n_devices;
    uint64_t dropped_records;      /* the collector's own count of lost records */
    uint64_t malformed_activities; /* GPU activities left out: no start, or a negative duration */
    uint64_t zero_time_records;    /* records without usable timestamps (skipped): zero, ending
                                    * before they start, or beyond +-2^61 ns */
    uint64_t unusable_payloads;    /* range payloads beyond 2^53 bytes (dropped: a profile's byte
                                    * counts are exact JSON integers) */
    struct sp_trace_replay replay; /* run NULL: the arrays hold every launch and activity */
    bool cpu_time; /* the activities are CPU operators' own time (a run with no GPU) */
};

/* Whether path names a file a trace can be read from: SP_ERR_IO saying "No such file", "is a
 * directory", ... otherwise. */
sp_status sp_trace_check_path(sp_ctx *ctx, const char *path);

/* kineto_content.c: SP_ERR_SCHEMA, saying what the user did and should do, when a Kineto trace
 * holds too little for a profile: the 2021 format (n_legacy events), no GPU activity and no CPU
 * operators (only Python calls: exported outside a scheduled profiler's active steps), or no
 * host ranges. Counts are of the file's events. */
sp_status sp_kineto_check_content(sp_ctx *ctx, const char *name, size_t n_gpu, size_t n_legacy,
                                  size_t n_ops, size_t n_ranges);

/* Read a file, plain or gzip, into a NUL-terminated buffer (*data, freed with sp_free). An
 * SQLite database is refused naming `import nsys`, a truncated gzip file as truncated. */
sp_status sp_trace_read_file(sp_ctx *ctx, const char *path, char **data, size_t *len);

/* File i of paths[n], read as sp_trace_read_file does, refused (SP_ERR_INVALID_ARG, naming both)
 * when it holds the same bytes as an earlier one: sha[n] keeps each file's SHA-256. */
sp_status sp_trace_read_distinct(sp_ctx *ctx, const char *const *paths, size_t n, size_t i,
                                 char (*sha)[65], char **data, size_t *len);

/* A CPU operator (torch.profiler's cpu_op) of a run with no GPU activity. */
struct sp_cpu_op {
    int64_t start_ns, end_ns;
    uint32_t tid, name;
};
/* Each op's own time (its span less its child ops') as launches and activities, on a device
 * "CPU" per thread of the process; sorts ops (cpu_op_work.c says how). */
sp_status sp_trace_add_cpu_op_work(sp_ctx *ctx, struct sp_trace *t, struct sp_cpu_op *ops, size_t n,
                                   uint32_t process);

sp_status sp_trace_init(sp_ctx *ctx, struct sp_trace *t);
/* Intern a string (len bytes, not NUL-terminated); *id gets its index. */
sp_status sp_trace_intern(sp_ctx *ctx, struct sp_trace *t, const char *s, size_t len, uint32_t *id);
sp_status sp_trace_add_range(sp_ctx *ctx, struct sp_trace *t, const struct sp_trace_range *r);
sp_status sp_trace_add_launch(sp_ctx *ctx, struct sp_trace *t, const struct sp_trace_launch *l);
sp_status sp_trace_add_activity(sp_ctx *ctx, struct sp_trace *t, const struct sp_trace_activity *a);
/* Add a link; *ref gets what a range's link field takes (index + 1). */
sp_status sp_trace_add_link(sp_ctx *ctx, struct sp_trace *t, const struct sp_trace_link *l,
                            uint32_t *ref);
/* Whether a record's times can be used (trace.c says why some cannot); a source that skips
 * records itself counts them in zero_time_records the same way. */
bool sp_trace_times_usable(int64_t start_ns, int64_t end_ns, bool activity);
/* Name device i (copied). */
sp_status sp_trace_set_device(sp_ctx *ctx, struct sp_trace *t, uint32_t device, const char *name);
/* Ids every process numbers on its own (correlation ids, device ordinals), made unique in a
 * trace of several processes by putting the process in the high bits. A process is at most
 * 24 bits (Nsight's process ids) for correlation ids; a process index at most 16 bits for
 * devices. The importers that merge processes take at most SP_TRACE_MAX_PROCESSES files. */
#define SP_TRACE_MAX_PROCESSES 4096
static inline uint64_t sp_trace_process_corr(uint64_t process, uint64_t corr) {
    return process << 40 | (corr & 0xffffffffffull);
}
static inline uint32_t sp_trace_process_device(uint32_t process, uint32_t ordinal) {
    return process << 16 | (ordinal & 0xffffu);
}

/* Say which process thread tid belongs to (the process's index, from 0). */
sp_status sp_trace_set_thread_process(sp_ctx *ctx, struct sp_trace *t, uint32_t tid,
                                      uint32_t process);
/* The process of thread tid (0 when not said). */
uint32_t sp_trace_process_of(const struct sp_trace *t, uint32_t tid);
/* Make every time relative to the earliest event: of the arrays, and replayed_earliest_ns, the
 * earliest time the replay holds (INT64_MAX: none); the replay subtracts origin_ns itself. */
void sp_trace_rebase(struct sp_trace *t, int64_t replayed_earliest_ns);
void sp_trace_release(struct sp_trace *t);

#endif

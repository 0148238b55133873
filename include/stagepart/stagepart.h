/* stagepart/stagepart.h: the public API of libstagepart, and its reference manual.
 *
 * The data flows one way: a profile (per-layer times and bytes) is loaded and validated, a
 * partitioner turns it into a plan (contiguous pipeline stages), and the plan is written as
 * JSON. The `stagepart` command-line tool uses only what this header declares.
 *
 * OWNERSHIP (the one rule set for the whole API)
 *   - Objects returned through `T **out` by *_create, *_load, *_parse and sp_partition belong
 *     to the caller and are freed by the matching *_destroy. *_destroy(NULL) is a no-op.
 *     On failure *out is set to NULL and nothing needs freeing.
 *   - Returned `const char *` and `const T *` are borrowed: valid while the object they came
 *     from lives, and never freed by the caller.
 *   - Returned `char *` buffers (sp_plan_to_json) are freed with sp_free(), never free().
 *   - Inputs are never taken over: the caller keeps what it passes in.
 *
 * ERRORS
 *   Every fallible function returns an sp_status (SP_OK = 0). The context records the detail
 *   of the last failure, readable with sp_ctx_errmsg() until the next call that takes that
 *   context. Input errors name the file, the JSON path and what was expected, e.g.
 *       model.json: layers[17].fwd_ms: expected a finite number >= 0, got "abc"
 *   and a document with several problems reports each of them, one per line. The library never
 *   exits, aborts or prints; it has no global mutable state except the allocator hooks.
 *
 * THREADS
 *   A context, and the objects made with it, may be used by one thread at a time. Distinct
 *   contexts are independent. Profiles and plans are immutable once made and may be read from
 *   several threads at once.
 *
 * UNITS
 *   Times are milliseconds (double) in the API and in files. Internally the partitioner
 *   rounds each layer's time to integer nanoseconds so that comparisons and ties are exact
 *   (see docs/partitioning.md). Sizes are bytes (uint64_t), exact up to 2^53.
 */
#ifndef STAGEPART_STAGEPART_H
#define STAGEPART_STAGEPART_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "stagepart/status.h"
#include "stagepart/version.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define SP_API __attribute__((visibility("default")))
#else
#define SP_API
#endif

/* ---------------------------------------------------------------------------------------------
 * Library, allocator, status
 * ------------------------------------------------------------------------------------------- */

/* sp_version: "MAJOR.MINOR.PATCH" of the library. Static string. */
SP_API const char *sp_version(void);
/* sp_git_hash: the commit the library was built from, or "unknown". Static string. */
SP_API const char *sp_git_hash(void);
/* sp_features: space-separated compiled-in features (e.g. "cuda sanitize"); "" when none.
 * Static string. */
SP_API const char *sp_features(void);

/* sp_status_name: the enum name of a status ("SP_ERR_PARSE"). sp_strerror: its one-line
 * lowercase message ("malformed JSON"). Both return static strings, "SP_ERR_UNKNOWN" /
 * "unknown status" for values outside the enum. */
SP_API const char *sp_status_name(sp_status status);
SP_API const char *sp_strerror(sp_status status);

/* sp_set_allocator: replace the allocator used for every allocation the library makes
 * (cJSON's included). Pass NULL for all three to restore malloc/realloc/free. Call it before
 * any other function, from one thread; objects made with one allocator must be freed with the
 * same one. Used by the fault-injection tests. Returns SP_ERR_INVALID_ARG when only some of the
 * three are NULL. */
typedef void *(*sp_malloc_fn)(size_t size);
typedef void *(*sp_realloc_fn)(void *ptr, size_t size);
typedef void (*sp_free_fn)(void *ptr);
SP_API sp_status sp_set_allocator(sp_malloc_fn malloc_fn, sp_realloc_fn realloc_fn,
                                  sp_free_fn free_fn);
/* sp_set_memory_budget: the most bytes the library may hold at once, over all threads (0, the
 * library's default: no budget; the stagepart command sets one, docs/security.md). An
 * allocation that would pass it fails, and the call that made it returns SP_ERR_LIMIT with a
 * message naming the budget, having freed what it took. Counted with the default allocator only
 * (usable block sizes); thread-safe. sp_memory_in_use: the bytes counted now.
 * sp_memory_limit: how much more this process may take: the least headroom under physical
 * memory and the cgroup's memory.max (against its resident size), RLIMIT_AS (against its address
 * space) and RLIMIT_DATA (0 when none can be read). */
SP_API void sp_set_memory_budget(size_t bytes);
SP_API size_t sp_memory_budget(void);
SP_API size_t sp_memory_in_use(void);
SP_API size_t sp_memory_limit(void);
/* sp_free: release a char * buffer returned by the library. sp_free(NULL) is a no-op. */
SP_API void sp_free(void *ptr);

/* sp_cuda_device_count: number of CUDA devices the runtime sees. Returns SP_ERR_UNSUPPORTED
 * when the build has no CUDA support, SP_ERR_NO_DEVICE when no driver or device is present,
 * SP_ERR_CUDA for other runtime errors. */
typedef struct sp_ctx sp_ctx;
SP_API sp_status sp_cuda_device_count(sp_ctx *ctx, int *out_count);

/* ---------------------------------------------------------------------------------------------
 * Context: error detail and warnings
 * ------------------------------------------------------------------------------------------- */
/* sp_ctx_create: a new context. Returns SP_ERR_NOMEM or SP_ERR_INVALID_ARG (out == NULL). */
SP_API sp_status sp_ctx_create(sp_ctx **out);
SP_API void sp_ctx_destroy(sp_ctx *ctx);
/* sp_ctx_errmsg: detail of the last failure on this context ("" when none); one line per
 * problem. Borrowed, valid until the next call that takes ctx. */
SP_API const char *sp_ctx_errmsg(const sp_ctx *ctx);
/* sp_ctx_warnings: warnings the last successful call recorded (e.g. an option ignored by the
 * chosen solver), one per line, "" when none. Borrowed, like sp_ctx_errmsg. */
SP_API const char *sp_ctx_warnings(const sp_ctx *ctx);

/* ---------------------------------------------------------------------------------------------
 * Writing files atomically
 * ------------------------------------------------------------------------------------------- */

/* sp_write_file_atomic: write len bytes to path through a temporary file in the same folder,
 * flushed and fsync'ed, then renamed over path. On any failure the temporary file is removed
 * and an existing file at path is left untouched. Returns SP_ERR_IO (detail names the path and
 * the system error) or SP_ERR_INVALID_ARG. */
SP_API sp_status sp_write_file_atomic(sp_ctx *ctx, const char *path, const void *data, size_t len);

/* sp_parse_bytes: parse a byte count with an optional suffix: plain digits, or a decimal
 * number followed by B, KB, MB, GB, TB (powers of 1000) or KiB, MiB, GiB, TiB (powers of
 * 1024), case-insensitive, e.g. "80GB", "80GiB", "1.5TB", "4096". The result must be an
 * integer number of bytes in [0, 2^53]. Returns SP_ERR_INVALID_ARG with a message naming
 * the text when it is not such a count. */
SP_API sp_status sp_parse_bytes(sp_ctx *ctx, const char *text, uint64_t *out_bytes);

/* sp_format_bytes: a byte count for people, in decimal units B, kB, MB, GB, TB with three
 * significant digits ("1.23 GB", "999 B"). Writes at most size bytes into buf (16 is always enough)
 * and returns buf. */
SP_API const char *sp_format_bytes(uint64_t bytes, char *buf, size_t size);

/* ---------------------------------------------------------------------------------------------
 * Profiles (format "stagepart-profile", version 1; docs/formats.md)
 * ------------------------------------------------------------------------------------------- */
typedef struct sp_profile sp_profile;

/* One layer of the chain, in execution order. */
typedef struct sp_layer {
    const char *name;          /* unique within the profile (the first member: the reader's
                                * uniqueness check relies on it) */
    const char *kind;          /* "" when absent (embedding, transformer, head, loss, conv...) */
    double fwd_ms;             /* forward time per micro-batch, >= 0 */
    double bwd_ms;             /* backward time per micro-batch (input + weight grads), >= 0 */
    double wgrad_ms;           /* weight-gradient part of bwd_ms; -1 when absent */
    double recompute_ms;       /* time to recompute the forward for backward; -1 when absent */
    uint64_t activation_bytes; /* output sent to the next layer, per micro-batch */
    uint64_t saved_bytes;      /* kept for backward, per micro-batch in flight */
    uint64_t param_bytes;      /* weights */
    uint64_t memory_bytes;     /* resident regardless of micro-batches; defaults to param_bytes */
    bool cut_after;            /* false: no stage boundary may follow this layer */
} sp_layer;

/* Limits enforced when reading (exceeding one is SP_ERR_LIMIT with a message naming it). */
#define SP_PROFILE_MAX_LAYERS   10000000u          /* 10 million layers */
#define SP_PROFILE_MAX_LAYER_MS 1.0e9              /* one layer's fwd or bwd: about 11.6 days */
#define SP_NAME_MAX_BYTES       4096u              /* a layer name or kind */
#define SP_MAX_EXACT_INTEGER    9007199254740992.0 /* 2^53: byte counts are exact below it */
/* Sums over a profile's layers must stay below these, so that whatever the partitioner adds up
 * or scales stays exact and what a plan records reads back: each byte field's sum at most 2^53
 * (a stage's bytes are exact JSON integers), fwd_ms + bwd_ms + recompute_ms at most 2^62 ns
 * (about 53 days' work; the partitioner counts integer nanoseconds in 64 bits). */
#define SP_PROFILE_MAX_TOTAL_BYTES SP_MAX_EXACT_INTEGER
#define SP_PROFILE_MAX_TOTAL_MS    4611686018427.387904 /* 2^62 ns */

/* sp_profile_load: read and validate a profile file. sp_profile_parse: the same from a buffer;
 * `name` is used in messages in place of the file name. Every problem found is reported (up
 * to 50, then a count). Returns SP_ERR_IO (cannot read), SP_ERR_PARSE (not JSON; message has
 * line:column), SP_ERR_SCHEMA (valid JSON, wrong content), SP_ERR_LIMIT, SP_ERR_NOMEM.
 * Unknown fields are ignored. */
SP_API sp_status sp_profile_load(sp_ctx *ctx, const char *path, sp_profile **out);
SP_API sp_status sp_profile_parse(sp_ctx *ctx, const char *name, const char *data, size_t len,
                                  sp_profile **out);
SP_API void sp_profile_destroy(sp_profile *profile);

SP_API size_t sp_profile_layer_count(const sp_profile *profile);
/* sp_profile_layer: layer i (0-based), or NULL when i is out of range. Borrowed. */
SP_API const sp_layer *sp_profile_layer(const sp_profile *profile, size_t i);
SP_API const char *sp_profile_model(const sp_profile *profile);
/* sp_profile_source: the profile's "source" text, "" when absent. */
SP_API const char *sp_profile_source(const sp_profile *profile);
/* sp_profile_micro_batch_size: the profile's micro_batch_size (samples per micro-batch). */
SP_API uint64_t sp_profile_micro_batch_size(const sp_profile *profile);
/* sp_profile_sha256: lowercase hex SHA-256 of the bytes the profile was read from. */
SP_API const char *sp_profile_sha256(const sp_profile *profile);

/* ---------------------------------------------------------------------------------------------
 * Devices and links (docs/formats.md)
 * ------------------------------------------------------------------------------------------- */
typedef struct sp_devices sp_devices;
typedef struct sp_links sp_links;

typedef struct sp_device_info {
    const char *name;
    double speed;          /* relative speed (> 0): a stage's time is its work / speed */
    uint64_t memory_bytes; /* memory of the device; 0: not limited */
} sp_device_info;

#define SP_MAX_DEVICES 65536u
#define SP_MIN_SPEED   0.001
#define SP_MAX_SPEED   1000.0
/* A link's bandwidth is at least 1 MB/s and its latency at most 10 s, so one transfer of any
 * activation a profile can hold (2^53 bytes) takes at most SP_MAX_TRANSFER_MS (about 285
 * years: finite, and what a plan's send_ms may hold). Blocking transfers add to stage times,
 * which sp_partition keeps below 2^62 ns (SP_ERR_LIMIT otherwise). */
#define SP_LINKS_MIN_BANDWIDTH_GBPS 1e-3
#define SP_LINKS_MAX_LATENCY_US     1e7
#define SP_MAX_TRANSFER_MS                                                                         \
    (SP_LINKS_MAX_LATENCY_US / 1e3 + SP_MAX_EXACT_INTEGER / (SP_LINKS_MIN_BANDWIDTH_GBPS * 1e6))

/* sp_devices_load: a "stagepart-devices" file ({"format", "version": 1, "devices": [...]}).
 * Each device: "name" (string, unique), optional "speed" (default 1) and "memory_bytes".
 * Returns SP_ERR_IO, SP_ERR_PARSE, SP_ERR_SCHEMA, SP_ERR_LIMIT, SP_ERR_NOMEM. */
SP_API sp_status sp_devices_load(sp_ctx *ctx, const char *path, sp_devices **out);
SP_API void sp_devices_destroy(sp_devices *devices);
SP_API size_t sp_devices_count(const sp_devices *devices);
/* sp_devices_get: device i, or NULL when out of range. Borrowed. */
SP_API const sp_device_info *sp_devices_get(const sp_devices *devices, size_t i);
/* sp_profile_devices: the profile's own "devices" list, or NULL when it has none. Borrowed. */
SP_API const sp_devices *sp_profile_devices(const sp_profile *profile);

/* sp_links_load: a "stagepart-links" file: "devices" (N names), "bandwidth_GBps" and
 * "latency_us" (N x N; row = sender, column = receiver; the diagonal is ignored, off-diagonal
 * bandwidths at least SP_LINKS_MIN_BANDWIDTH_GBPS, latencies at most SP_LINKS_MAX_LATENCY_US).
 * Returns the same codes as sp_devices_load. */
SP_API sp_status sp_links_load(sp_ctx *ctx, const char *path, sp_links **out);
/* sp_links_parse: the same from a buffer (data[len] must be '\0'); `name` is used in messages. */
SP_API sp_status sp_links_parse(sp_ctx *ctx, const char *name, const char *data, size_t len,
                                sp_links **out);
SP_API void sp_links_destroy(sp_links *links);
SP_API size_t sp_links_count(const sp_links *links);
SP_API const char *sp_links_name(const sp_links *links, size_t i);
/* sp_links_transfer_ms: latency + bytes / bandwidth from device `from` to device `to`, in ms;
 * 0 when from == to; -1 when an index is out of range. */
SP_API double sp_links_transfer_ms(const sp_links *links, size_t from, size_t to, uint64_t bytes);

/* ---------------------------------------------------------------------------------------------
 * Link measurement (`stagepart bandwidth`, docs/profiling.md#links)
 * ------------------------------------------------------------------------------------------- */
/* The alpha-beta model of one link: t(s) = latency + s / bandwidth. */
typedef struct sp_link_fit {
    double latency_us;       /* alpha (>= 0) */
    double bandwidth_GBps;   /* beta */
    double r2;               /* of the fitted times */
    double max_rel_residual; /* the largest |measured - fitted| / measured */
    double peak_GBps; /* cross-check: median bytes / time over the largest quarter of sizes */
} sp_link_fit;

/* sp_fit_alpha_beta: least squares on the relative error (weights 1/t^2) over n samples of
 * bytes[i] taking ms[i]; a negative latency is clamped to 0 (the best line through the origin).
 * SP_ERR_INVALID_ARG for times <= 0, fewer than two sizes, or times that do not grow. */
SP_API sp_status sp_fit_alpha_beta(sp_ctx *ctx, const uint64_t *bytes, const double *ms, size_t n,
                                   sp_link_fit *out);

typedef struct sp_bandwidth_opts {
    unsigned workers;      /* threads, each pinned to its own core when there are enough
                            * (default 2); every ordered pair is measured */
    const uint64_t *sizes; /* message sizes in bytes (default 4 KiB, 16 KiB, ..., 64 MiB) */
    size_t n_sizes;
    unsigned trials; /* per size; the median is fitted (default 7) */
    unsigned warmup; /* untimed rounds per size (default 2) */
} sp_bandwidth_opts;
SP_API void sp_bandwidth_opts_init(sp_bandwidth_opts *opts);

/* sp_bandwidth_measure_cpu: the links between CPU worker threads, as the CPU pipeline runtime
 * moves activations: the sender fills its buffer and raises a flag, the receiver, spinning on
 * it, copies the buffer into its own; the time runs from the flag to the end of the copy. Every
 * ordered pair of workers, every size; the medians are fitted (sp_fit_alpha_beta). *json gets a
 * "stagepart-links" document (devices "cpu<core>") with a "measurement" object holding every
 * sample and fit (sp_free it). SP_ERR_INVALID_ARG for bad options, SP_ERR_NO_DEVICE when the
 * threads cannot start. */
SP_API sp_status sp_bandwidth_measure_cpu(sp_ctx *ctx, const sp_bandwidth_opts *opts, char **json);

/* sp_bandwidth_measure_cuda: the links between CUDA devices: cudaMemcpyPeerAsync for every
 * ordered pair (opts->workers is not used: every device the runtime sees), each copy timed by
 * CUPTI's memcpy records with CUDA events beside as a cross-check (events fitted when CUPTI
 * cannot be used); per device also host-to-device, device-to-host (pinned) and within the
 * device, and NCCL send/recv per pair in builds with NCCL; those series are in "measurement"
 * only. Default sizes 4 KiB to 1 GiB. The same document as the CPU probe, devices "gpu<i>".
 * SP_ERR_NO_DEVICE without a device or driver, SP_ERR_UNSUPPORTED in a build without CUDA,
 * SP_ERR_CUDA when a CUDA or NCCL call fails (named), SP_ERR_INVALID_ARG for bad options. */
SP_API sp_status sp_bandwidth_measure_cuda(sp_ctx *ctx, const sp_bandwidth_opts *opts, char **json);

/* ---------------------------------------------------------------------------------------------
 * Built-in models (format "stagepart-model", version 1; docs/models.md)
 *
 * A chain of layers that stagepart can run itself, forward and backward, with real math: the
 * CPU backend profiles them (sp_model_profile_cpu) and the runtime trains them pipelined
 * (sp_run). Presets "gpt", "llama", "bert" and "resnet" expand into layers from a few numbers.
 * ------------------------------------------------------------------------------------------- */
typedef struct sp_model sp_model;

#define SP_MODEL_MAX_LAYERS 100000u

/* sp_model_load / sp_model_parse: read, expand and validate a model; it is bound to its own
 * micro_batch_size and seq_len. Returns SP_ERR_IO, SP_ERR_PARSE, SP_ERR_SCHEMA (the message
 * names the file and JSON path), SP_ERR_INVALID_ARG (shapes that do not chain: the message names
 * the layer), SP_ERR_LIMIT, SP_ERR_NOMEM. */
SP_API sp_status sp_model_load(sp_ctx *ctx, const char *path, sp_model **out);
SP_API sp_status sp_model_parse(sp_ctx *ctx, const char *name, const char *data, size_t len,
                                sp_model **out);
SP_API void sp_model_destroy(sp_model *model);

/* sp_model_set_shape: run the model at micro_batch_size samples per micro-batch and, for token
 * models, seq_len positions (0 keeps the current value). Every byte count and the work change
 * with it. Returns SP_ERR_INVALID_ARG (seq_len beyond the position table, or 0 samples),
 * SP_ERR_LIMIT. */
SP_API sp_status sp_model_set_shape(sp_ctx *ctx, sp_model *model, uint32_t micro_batch_size,
                                    uint32_t seq_len);

typedef struct sp_model_info {
    const char *name, *source, *preset; /* preset "" when the layers are explicit */
    const char *dtype;                  /* "fp32" or "bf16" (the CPU always computes in fp32) */
    uint32_t micro_batch_size, seq_len; /* seq_len 0 for image models */
    size_t layers;
    uint64_t param_count; /* parameters of every layer */
} sp_model_info;
SP_API void sp_model_get_info(const sp_model *model, sp_model_info *out);

/* What one layer holds and moves per micro-batch, in fp32 (4 bytes an element), exactly as the
 * executor allocates it. */
typedef struct sp_model_layer_info {
    const char *name, *kind;   /* kind as profiles record it: "transformer", "embedding", ... */
    uint64_t activation_bytes; /* its output (the LM head's: one loss per sample) */
    uint64_t saved_bytes;      /* kept for the backward: its input and every inner tensor */
    uint64_t param_bytes;
    uint64_t fwd_flops; /* of its matrix products, forward (2 x multiply-adds) */
} sp_model_layer_info;
/* sp_model_layer_get: layer i; false when i is out of range. */
SP_API bool sp_model_layer_get(const sp_model *model, size_t i, sp_model_layer_info *out);

typedef struct sp_model_profile_opts {
    uint32_t warmup;        /* untimed iterations first (default 1) */
    uint32_t iters;         /* timed iterations; medians over them (default 5) */
    int core;               /* pin the measuring thread to this core; -1: the last core this process
                             * may run on (default -1) */
    uint64_t seed;          /* weights and data (default 1) */
    const char *model_name; /* the profile's "model"; NULL: the model's own name (default) */
    /* called after each iteration (may be NULL) */
    void (*progress)(void *arg, uint32_t done, uint32_t total);
    void *progress_arg;
    const volatile int *cancel; /* when it becomes nonzero the measurement stops with
                                 * SP_ERR_INTERRUPTED (may be NULL) */
} sp_model_profile_opts;
SP_API void sp_model_profile_opts_init(sp_model_profile_opts *opts);

/* Repeatability of a CPU profile. */
typedef struct sp_model_profile_summary {
    double iteration_ms;      /* median forward + backward of the whole chain */
    double max_cv;            /* largest per-layer coefficient of variation (stddev / median) of
                               * fwd + bwd, over layers taking at least 1 % of the iteration */
    const char *max_cv_layer; /* borrowed from the model */
    double median_cv;
    unsigned threads; /* BLAS threads used: 1 */
    int core;         /* the core measured on, -1 when pinning failed */
} sp_model_profile_summary;

/* sp_model_profile_cpu: run the model forward and backward on one pinned thread (OpenBLAS on
 * one thread), warmup + iters times, timing every layer's forward, backward and weight-gradient
 * part with the monotonic clock; *json gets a "stagepart-profile" (docs/formats.md) with the
 * medians, the exact byte counts, and a "measurement" object (per layer: samples, stddev, cv),
 * freed with sp_free. summary may be NULL. Returns SP_ERR_NOMEM (the message says how much the
 * model needs), SP_ERR_INTERRUPTED, SP_ERR_NO_DEVICE (the thread could not start). */
SP_API sp_status sp_model_profile_cpu(sp_ctx *ctx, const sp_model *model,
                                      const sp_model_profile_opts *opts, char **json,
                                      sp_model_profile_summary *summary);

/* ---------------------------------------------------------------------------------------------
 * Traces: profiles from what a profiler recorded (docs/profiling.md)
 *
 * A trace holds host ranges (NVTX, record_function, nn.Module), the API calls that launched GPU
 * work, and the GPU activities (kernels, copies, memsets). The attribution engine gives each
 * activity to the layer range that launched it and makes a profile: per layer the median over
 * the training steps of its forward and backward GPU busy time.
 * ------------------------------------------------------------------------------------------- */
typedef struct sp_trace sp_trace;

#define SP_TRACE_MAX_FILE_BYTES ((size_t)4 << 30) /* uncompressed */

/* sp_trace_load_kineto: a PyTorch profiler (Kineto) Chrome trace, plain or gzip-compressed.
 * sp_trace_parse_kineto: the same from a buffer (uncompressed; `name` is used in messages).
 * sp_trace_load_nsys: the SQLite export of an Nsight Systems report (`nsys export --type sqlite`).
 * Returns SP_ERR_IO, SP_ERR_PARSE (not JSON / not SQLite), SP_ERR_SCHEMA (a trace of another
 * kind, or missing what attribution needs: the message names the file and what is missing),
 * SP_ERR_LIMIT, SP_ERR_NOMEM. */
SP_API sp_status sp_trace_load_kineto(sp_ctx *ctx, const char *path, sp_trace **out);
/* sp_trace_load_kineto_files: several traces, one per rank as torch.profiler writes them, merged
 * into one: each file is a process of its own (steps matched per process), its correlation ids
 * and device ordinals keyed by the file. */
SP_API sp_status sp_trace_load_kineto_files(sp_ctx *ctx, const char *const *paths, size_t n,
                                            sp_trace **out);
SP_API sp_status sp_trace_parse_kineto(sp_ctx *ctx, const char *name, const char *data, size_t len,
                                       sp_trace **out);
SP_API sp_status sp_trace_load_nsys(sp_ctx *ctx, const char *path, sp_trace **out);
/* sp_trace_load_events: the event logs libstagepart-inject.so wrote (one per process of the
 * program; `stagepart profile --attach` collects them), merged into one trace. A log cut short
 * by the program's death is read up to its last whole record. Returns SP_ERR_IO, SP_ERR_PARSE
 * (not an event log, or a corrupt record: the message names the file and the byte),
 * SP_ERR_SCHEMA (another log version), SP_ERR_LIMIT, SP_ERR_NOMEM. */
SP_API sp_status sp_trace_load_events(sp_ctx *ctx, const char *const *paths, size_t n,
                                      sp_trace **out);
SP_API void sp_trace_destroy(sp_trace *trace);

typedef struct sp_trace_profile_opts {
    const char *layer_pattern; /* POSIX extended regex selecting layer ranges; group 1 (if any) is
                                * the layer's name. NULL: "<layer>/fwd|bwd|recompute" */
    const char *phase_pattern; /* group 1 is the phase word (fwd, forward, bwd, backward,
                                * recompute, optimizer); NULL: the suffix of the convention */
    const char *step_pattern; /* training-step ranges; NULL: "stagepart/step" or "ProfilerStep#N" */
    uint32_t warmup_steps;    /* steps skipped at the start (default 0) */
    const char *model;        /* the profile's model name; NULL: from the file name */
    uint64_t micro_batch_size; /* samples per step the trace was recorded at (default 1) */
    /* the built-in model the trace ran (`profile MODEL --backend cuda`), or NULL: its layers'
     * kinds and exact activation, saved, parameter and memory bytes (weights and gradients, as
     * the runtime's SGD keeps; at the model's current shape) go into the
     * profile's layers of the same names, and a layer of it that the trace lacks is an error
     * (SP_ERR_INVALID_ARG naming it). Borrowed for the call. */
    const sp_model *built_in;
} sp_trace_profile_opts;
SP_API void sp_trace_profile_opts_init(sp_trace_profile_opts *opts);

/* What the attribution found, for the summary a command prints. */
typedef struct sp_trace_summary {
    size_t layers;
    uint32_t steps_total, steps_used; /* steps_total 0: no step ranges, one step */
    uint64_t activities, unmatched;   /* unmatched: no launch record to attribute it by */
    double gpu_ms;                    /* every activity's duration */
    double layer_ms;                  /* under a layer range (any step) */
    double optimizer_ms, other_ms;    /* under the optimizer range / under other ranges */
    double unattributed_ms;           /* launched outside every range, or unmatched */
    double unattributed_share;        /* unattributed_ms / gpu_ms */
    double outside_steps_ms;          /* layer work in warm-up steps or outside every step */
    uint64_t dropped_records;         /* the collector's own count of lost records */
    uint64_t late;                    /* activities that came too far out of time order to
                                       * merge exactly (their busy time may be over-counted) */
    double late_ms;                   /* their summed duration */
} sp_trace_summary;

/* sp_trace_to_profile: the profile (a "stagepart-profile" document, docs/formats.md) and the
 * summary (may be NULL). *json is freed with sp_free. SP_ERR_INVALID_ARG for a bad pattern;
 * SP_ERR_SCHEMA when no range matches the layer pattern (the message shows range names seen) or
 * every step is warm-up. */
SP_API sp_status sp_trace_to_profile(sp_ctx *ctx, const sp_trace *trace,
                                     const sp_trace_profile_opts *opts, char **json,
                                     sp_trace_summary *summary);

/* ---------------------------------------------------------------------------------------------
 * Partitioning
 * ------------------------------------------------------------------------------------------- */
/* Pipeline schedules the simulator knows (docs/schedules.md). */
typedef enum sp_schedule {
    SP_SCHEDULE_GPIPE = 0,       /* all forwards, then all backwards */
    SP_SCHEDULE_1F1B = 1,        /* PipeDream-Flush / Megatron 1F1B */
    SP_SCHEDULE_INTERLEAVED = 2, /* Megatron's interleaved 1F1B, V chunks per device */
    SP_SCHEDULE_ZB_H1 = 3        /* zero bubble H1: backward split into B and W */
} sp_schedule;

typedef enum sp_objective {
    /* minimum possible largest stage time; among the partitions reaching it, the one with the
     * smallest stage-time variance, then the lexicographically smallest boundaries */
    SP_OBJECTIVE_BOTTLENECK = 0,
    /* minimum stage-time variance over all partitions (can lose throughput: docs/) */
    SP_OBJECTIVE_VARIANCE = 1,
    /* minimum (M-1) x bottleneck + sum of stage times (the iteration latency Alpa minimizes);
     * the same as bottleneck unless speeds or blocking transfers make the sum vary */
    SP_OBJECTIVE_ITERATION = 2,
    /* ilp solver only: minimum (largest - smallest) device load */
    SP_OBJECTIVE_RANGE = 3,
    /* ilp solver only: minimum sum of |device load - mean| */
    SP_OBJECTIVE_DEVIATION = 4
} sp_objective;

typedef enum sp_solver {
    SP_SOLVER_DP = 0,         /* exact (bisection + dynamic programming) */
    SP_SOLVER_UNIFORM = 1,    /* equal layer counts, Megatron-LM's default */
    SP_SOLVER_PARAMETERS = 2, /* balance param_bytes, DeepSpeed's partition_method="parameters" */
    SP_SOLVER_GIVEN = 3,      /* a split given by the user (sp_plan_from_split, evaluate) */
    SP_SOLVER_ILP = 4         /* the mixed-integer program on GLPK: proven optimal, or the best
                               * found with its gap when the time limit ends it */
} sp_solver;

/* sp_objective_name / sp_solver_name: "bottleneck", "dp", ... Static strings, NULL when out of
 * range. sp_objective_from_name / sp_solver_from_name: the reverse; SP_ERR_INVALID_ARG when
 * the name is unknown. */
SP_API const char *sp_objective_name(sp_objective objective);
SP_API const char *sp_solver_name(sp_solver solver);
SP_API sp_status sp_objective_from_name(const char *name, sp_objective *out);
SP_API sp_status sp_solver_from_name(const char *name, sp_solver *out);

#define SP_MAX_STAGES        65536u
#define SP_MAX_MICRO_BATCHES 1000000000u

/* How boundary transfers (with links) are charged. */
typedef enum sp_comm {
    SP_COMM_OVERLAP = 0, /* a delay on the dependency edge in the schedule, not stage time */
    SP_COMM_BLOCKING = 1 /* occupies both neighbours: each stage's time gains 2 x (in + out),
                          * the activation forward and the gradient back over each of its cuts */
} sp_comm;
SP_API const char *sp_comm_name(sp_comm comm);
SP_API sp_status sp_comm_from_name(const char *name, sp_comm *out);

#define SP_MICRO_BATCHES_AUTO UINT32_MAX

/* Which device runs each stage. */
typedef enum sp_placement {
    SP_PLACEMENT_ORDER = 0, /* stage s on device s of the list (the default) */
    SP_PLACEMENT_SEARCH = 1 /* ilp solver: choose a distinct device for every stage from the list
                             * (speeds, memory, and the links between consecutive stages) */
} sp_placement;
SP_API const char *sp_placement_name(sp_placement placement);
SP_API sp_status sp_placement_from_name(const char *name, sp_placement *out);

typedef struct sp_plan sp_plan; /* a partition of a profile into stages (below) */

typedef struct sp_partition_opts {
    uint32_t stages;             /* P, number of pipeline stages, >= 1 (default 4) */
    uint32_t micro_batches;      /* M per iteration; 0 means 4 * stages (the default);
                                  * SP_MICRO_BATCHES_AUTO: the smallest M whose simulated
                                  * efficiency reaches target_efficiency (within the limits) */
    double target_efficiency;    /* for SP_MICRO_BATCHES_AUTO, in (0, 1) (default 0.9) */
    sp_objective objective;      /* default SP_OBJECTIVE_BOTTLENECK */
    sp_solver solver;            /* default SP_SOLVER_DP */
    sp_schedule schedule;        /* schedule the plan is simulated with (default 1F1B) */
    uint64_t memory_limit_bytes; /* per-stage memory cap; 0 means none (default) */
    const sp_devices *devices;   /* stage s runs on device s: its speed scales the stage's time,
                                  * its memory caps the stage; NULL: the profile's devices, if any,
                                  * else identical devices (borrowed; default NULL) */
    const sp_links *links;       /* boundary s -> s+1 costs latency + activation_bytes of the
                                  * stage's last layer / bandwidth between devices s and s+1,
                                  * recorded as send_ms; overlapped with compute (an edge delay in
                                  * the schedule), not added to stage time (borrowed; NULL: none) */
    sp_comm comm;                /* how links are charged (default SP_COMM_OVERLAP) */
    uint32_t chunks;             /* V model chunks per device for the interleaved schedule: P x V
                                  * chunks in chain order, chunk k on device k mod P (default 1).
                                  * The ilp solver balances them exactly (the largest device load,
                                  * the sum of its chunks); uniform makes the equal split; dp
                                  * cannot (non-contiguous sums are no chain problem) */
    double time_limit_s;         /* ilp solver: stop after this long with the best plan found
                                  * (default 30) */
    bool recompute;              /* ilp solver ("--recompute auto"): choose which layers with
                                  * recompute_ms recompute their forward in the backward instead
                                  * of keeping their saved_bytes (default false) */
    sp_placement placement;      /* SP_PLACEMENT_SEARCH: the ilp solver also chooses each stage's
                                  * device among `devices` (or the profile's), minimizing the
                                  * objective, then the latency of one micro-batch (sum of stage
                                  * times + twice the transfers over the links between the chosen
                                  * devices), then the spread. Devices that
                                  * are interchangeable (same speed and memory, same links) are
                                  * merged first. Links, when given, are matched to the devices by
                                  * name. With chunks, chunk k runs on stage k mod P's device.
                                  * Needs overlapped transfers (default ORDER) */
    bool ilp_cold;               /* ilp solver: no incumbent and no bound from the DP, the program
                                  * alone (for testing and measuring the formulation; slower;
                                  * default false) */
    const sp_plan *placed_as;    /* sp_plan_from_split only: each pipeline stage runs on the
                                  * device this plan gave it (its index in `devices`, links matched
                                  * by name), as sp_plan_options sets for a plan whose placement
                                  * was searched; sp_partition ignores it (borrowed; default NULL:
                                  * stage s on device s) */
} sp_partition_opts;

/* sp_partition_opts_init: fill *opts with the defaults above. */
SP_API void sp_partition_opts_init(sp_partition_opts *opts);

/* sp_partition: cut the profile's layers into opts->stages contiguous non-empty stages.
 * Stage time = sum of fwd_ms + bwd_ms of its layers. Memory of stage s (0-based) of P under
 * 1F1B with M micro-batches = sum(memory_bytes) + min(P - s, M) * sum(saved_bytes); it must not
 * exceed memory_limit_bytes when one is set. Layers with cut_after == false are never followed
 * by a boundary. Returns SP_ERR_INVALID_ARG (bad options: message says which),
 * SP_ERR_INFEASIBLE (no plan satisfies the constraints: the message says which layer or stage
 * cannot fit, or that P exceeds the allowed cuts), SP_ERR_NOMEM. */
SP_API sp_status sp_partition(sp_ctx *ctx, const sp_profile *profile, const sp_partition_opts *opts,
                              sp_plan **out);
SP_API void sp_plan_destroy(sp_plan *plan);

/* One stage of a plan. Layer indices are 0-based and inclusive. */
typedef struct sp_stage {
    uint32_t index;
    uint32_t device; /* index in the device list: s (k mod P when interleaved), or the device the
                      * placement search chose */
    const char *device_name; /* that device's name; "" without a device list */
    size_t first_layer, last_layer;
    const char *first_name, *last_name;
    double fwd_ms, bwd_ms;
    double time_ms; /* fwd_ms + bwd_ms: one micro-batch's forward and backward */
    uint64_t param_bytes;
    uint64_t resident_bytes; /* sum of the layers' memory_bytes */
    uint64_t saved_bytes;    /* sum of saved_bytes, per micro-batch in flight */
    uint32_t inflight;       /* micro-batches in flight under 1F1B: min(P - index, M) */
    uint64_t memory_bytes;   /* resident_bytes + inflight * saved_bytes */
    double wgrad_ms;         /* weight-gradient part of bwd_ms; -1 when a layer lacks it */
    double send_ms;          /* transfer of this stage's output to the next stage, and of the
                              * gradient back; 0 for the last stage or without links */
    uint32_t chunk;          /* model chunk on its device (interleaved plans), else 0 */
    double comm_ms;          /* blocking transfers inside time_ms: 2 x (in + out); else 0 */
    double recompute_ms;     /* recomputation inside bwd_ms (those layers keep no saved_bytes) */
} sp_stage;

typedef struct sp_plan_schedule {
    bool present; /* false until a schedule was simulated for the plan */
    sp_schedule schedule;
    uint32_t micro_batches, chunks;
    double iteration_ms, bubble_fraction, efficiency;
} sp_plan_schedule;

/* Figures of the whole plan. */
typedef struct sp_plan_summary {
    sp_solver solver;
    sp_objective objective;
    bool optimal; /* proven optimal for the objective (dp solver) */
    uint32_t stages, micro_batches;
    uint64_t memory_limit_bytes;     /* 0: none */
    double bottleneck_ms;            /* largest stage time */
    uint32_t bottleneck_stage;       /* first stage reaching it */
    double lower_bound_ms;           /* max(heaviest layer, total / P) */
    double mean_ms, stddev_ms;       /* over stages; population stddev */
    double imbalance;                /* bottleneck / mean (1.0 = perfect balance) */
    double total_ms;                 /* sum of all layers' fwd_ms + bwd_ms */
    double even_split_bottleneck_ms; /* bottleneck of equal layer counts, same P */
    double solve_ms;                 /* wall time spent in the solver */
    uint32_t chunks;                 /* model chunks per device: 1, or V for interleaved */
    double target_efficiency;        /* with --micro-batches auto: the target; else 0 */
    sp_comm comm;                    /* how the plan's transfers are charged */
    double formula_iteration_ms;     /* (M-1) x bottleneck + sum of device times (Alpa's formula,
                                      * what --objective iteration minimizes) */
    sp_plan_schedule schedule;       /* the simulated schedule, when present */
    /* ilp solver: how the search ended */
    double mip_gap;            /* relative gap of the objective (0 when optimal) */
    double best_bound_ms;      /* proven lower bound of the objective */
    double objective_ms;       /* the program's objective value */
    const char *solver_status; /* "optimal", "time limit", ...; static; NULL otherwise */
    long long nodes;           /* branch-and-bound nodes */
    uint64_t free_binaries;    /* binaries left after window fixing */
    sp_placement placement;    /* how the stages' devices were chosen */
    double transfer_ms;        /* sum of the stages' send_ms, each boundary's transfer time one
                                * way (what the placement search minimizes second) */
} sp_plan_summary;

SP_API const sp_plan_summary *sp_plan_get_summary(const sp_plan *plan);
SP_API size_t sp_plan_stage_count(const sp_plan *plan);
/* sp_plan_stage: stage i, or NULL when out of range. Borrowed. */
SP_API const sp_stage *sp_plan_stage(const sp_plan *plan, size_t i);
SP_API const char *sp_plan_model(const sp_plan *plan);
/* The names and kinds of the profile's layers the plan was made from, in order (plans record
 * them so that `check` can match a changed profile and `export` can name modules). Borrowed;
 * NULL when i is out of range or the plan file did not record them. */
SP_API const char *sp_plan_layer_name(const sp_plan *plan, size_t i);
SP_API const char *sp_plan_layer_kind(const sp_plan *plan, size_t i);
SP_API size_t sp_plan_layer_count(const sp_plan *plan);
/* sp_plan_layer_recomputed: whether the plan recomputes layer i's forward in the backward. */
SP_API bool sp_plan_layer_recomputed(const sp_plan *plan, size_t i);

/* sp_plan_from_split: a plan for a split given by the caller, e.g. the one a user runs today.
 * first_layers[K] are the first layer of each of the K = opts->stages x opts->chunks stages,
 * increasing from 0 (each stage ends where the next begins, the last at the last layer). The plan
 * gets every figure and the simulated schedule, solver "given". Returns SP_ERR_INVALID_ARG when
 * the split is not one (the message names the stage), SP_ERR_NOMEM. */
SP_API sp_status sp_plan_from_split(sp_ctx *ctx, const sp_profile *profile,
                                    const sp_partition_opts *opts, const size_t *first_layers,
                                    size_t count, sp_plan **out);

/* sp_plan_remap: the plan's stages on a changed profile, matched by layer name: first_layers
 * [stage count] gets each stage's first layer in `profile`. SP_ERR_SCHEMA when the layers differ
 * (the message lists the layers added, removed or moved) or the plan recorded no names. */
SP_API sp_status sp_plan_remap(sp_ctx *ctx, const sp_plan *plan, const sp_profile *profile,
                               size_t *first_layers);

/* sp_megatron_layout_split: the split a Megatron-LM --pipeline-model-parallel-layout string
 * describes, on this profile: layers before the first "transformer" are the E group, layers
 * after the last are the L group (head, loss), `t` are the transformer layers. *first_layers
 * (freed with sp_free) gets the first layer of each segment, *count the number of segments
 * (stages x virtual stages). SP_ERR_INVALID_ARG with the reason when the string or its match with
 * the profile is wrong; SP_ERR_UNSUPPORTED for multi-token prediction (m). */
SP_API sp_status sp_megatron_layout_split(sp_ctx *ctx, const sp_profile *profile,
                                          const char *layout, size_t **first_layers, size_t *count);

/* Frameworks a plan can be exported to (docs/export.md). */
typedef enum sp_export_format {
    SP_EXPORT_MEGATRON = 0,   /* --pipeline-model-parallel-layout (and first/last counts) */
    SP_EXPORT_DEEPSPEED = 1,  /* PipelineModule parts and a subclass applying them */
    SP_EXPORT_TORCHGPIPE = 2, /* balance list (torchgpipe, fairscale) */
    SP_EXPORT_PIPPY = 3,      /* torch.distributed.pipelining split_spec */
    SP_EXPORT_TORCHTITAN = 4  /* module_fqns_per_model_part */
} sp_export_format;
SP_API const char *sp_export_format_name(sp_export_format format);
SP_API sp_status sp_export_format_from_name(const char *name, sp_export_format *out);

/* sp_plan_export: the plan in a framework's own form. *text gets what to paste (flags or a
 * Python snippet, ending in a newline), *value the bare value as JSON (a string, list or
 * object); both freed with sp_free(), either may be NULL. Module names are the profile's layer
 * names with module_prefix (may be NULL) in front; layers of kind "loss" are no modules and are
 * left out of module lists. SP_ERR_INVALID_ARG when the format cannot express the plan (the
 * message names the stage), e.g. a boundary inside Megatron's E or L group, chunks for DeepSpeed.
 */
SP_API sp_status sp_plan_export(sp_ctx *ctx, const sp_plan *plan, sp_export_format format,
                                const char *module_prefix, char **text, char **value);

/* What `check --report` reads from a run report ("stagepart-run-report", version 1, written by
 * `stagepart run`): measured.iteration_ms, measured.imbalance, predicted.iteration_ms,
 * predicted.imbalance. Other fields are ignored. */
typedef struct sp_run_report_summary {
    double measured_iteration_ms, measured_imbalance;
    double predicted_iteration_ms, predicted_imbalance;
} sp_run_report_summary;
SP_API sp_status sp_run_report_load(sp_ctx *ctx, const char *path, sp_run_report_summary *out);

/* sp_plan_options: the options a plan was made with (stages, chunks, micro-batches, objective,
 * solver, schedule, memory limit, how transfers are charged, placement, and for a searched
 * placement `placed_as` = plan; not the devices or links, which the plan names but does not
 * hold), for re-evaluating the plan on a new profile and re-partitioning it. */
SP_API void sp_plan_options(const sp_plan *plan, sp_partition_opts *opts);

/* ---- check: the CI gate (check/) */

/* The limits a committed plan is held to, and what it is re-evaluated with. */
typedef struct sp_check_opts {
    double max_imbalance;        /* bottleneck / mean stage time (default 1.10) */
    double max_regression;       /* predicted iteration growth, 0.05 = 5% (default 0.05) */
    double max_stale;            /* what a new plan would gain (default 0.05) */
    double max_prediction_error; /* with a report: measured against predicted iteration, either
                                  * way (default 0.15) */
    const sp_devices *devices;   /* the devices the plan was made for, or NULL: the profile's */
    const sp_links *links;       /* the links it was made with, or NULL */
    const sp_run_report_summary *report; /* a run of the plan to gate as well, or NULL */
    const char *plan_name; /* names the plan in messages (its file), or NULL: "the plan" */
} sp_check_opts;
SP_API void sp_check_opts_init(sp_check_opts *opts);

/* One criterion of the gate. `message` says what was measured against what: one line, or for
 * "layers match" one line per layer that differs. */
typedef struct sp_check_criterion {
    const char *name;     /* "layers match", "imbalance", "regression", "staleness", "measured
                           * imbalance", "prediction error" */
    bool passed, skipped; /* skipped: not applicable (the plan records no schedule) */
    double value, limit;
    const char *message;
} sp_check_criterion;

typedef struct sp_check_result sp_check_result;

/* sp_check: the committed plan re-evaluated on a fresh profile: its layers matched by name (a
 * layer added, removed or renamed fails "layers match" and is named), its stage times, imbalance
 * and simulated iteration recomputed under its own options, compared with its recorded
 * prediction, and the profile partitioned again to see what a new plan would gain. A plan made
 * for named devices or with transfers is only comparable on the same ones: SP_ERR_INVALID_ARG
 * naming what is missing or different. A failed criterion is a result, not an error. *out is
 * freed with sp_check_destroy. */
SP_API sp_status sp_check(sp_ctx *ctx, const sp_plan *plan, const sp_profile *profile,
                          const sp_check_opts *opts, sp_check_result **out);
SP_API void sp_check_destroy(sp_check_result *result);
SP_API size_t sp_check_criterion_count(const sp_check_result *result);
/* criterion i (borrowed from the result), or NULL past the end */
SP_API const sp_check_criterion *sp_check_criterion_get(const sp_check_result *result, size_t i);
/* how many criteria failed (skipped ones do not) */
SP_API size_t sp_check_failed_count(const sp_check_result *result);
/* sp_check_to_json: the "stagepart-check" document (docs/ci.md) into *json (sp_free it). */
SP_API sp_status sp_check_to_json(sp_ctx *ctx, const sp_check_result *result, char **json);
/* sp_check_write_junit: JUnit XML, one test case per criterion, written atomically to path. */
SP_API sp_status sp_check_write_junit(sp_ctx *ctx, const sp_check_result *result, const char *path);

/* With SP_MICRO_BATCHES_AUTO: every micro-batch count tried and its simulated efficiency, in
 * increasing M; *count = 0 otherwise. Borrowed. */
typedef struct sp_mb_point {
    uint32_t micro_batches;
    double efficiency;
} sp_mb_point;
SP_API const sp_mb_point *sp_plan_micro_batch_search(const sp_plan *plan, size_t *count);

/* sp_plan_load: read and validate a "stagepart-plan" file; sp_plan_parse: the same from a
 * buffer (`name` is used in messages). Every problem is reported with the file and JSON path.
 * The stages must cover layers 0..profile_layers-1 contiguously, in order. Returns SP_ERR_IO,
 * SP_ERR_PARSE, SP_ERR_SCHEMA, SP_ERR_LIMIT or SP_ERR_NOMEM. */
SP_API sp_status sp_plan_load(sp_ctx *ctx, const char *path, sp_plan **out);
SP_API sp_status sp_plan_parse(sp_ctx *ctx, const char *name, const char *data, size_t len,
                               sp_plan **out);

/* sp_plan_set_command: record the command line that made the plan (written as
 * generator.command). The string is copied. Returns SP_ERR_NOMEM or SP_ERR_INVALID_ARG. */
SP_API sp_status sp_plan_set_command(sp_ctx *ctx, sp_plan *plan, const char *command);

/* sp_plan_to_json: the plan as a "stagepart-plan" version 1 document (docs/formats.md),
 * pretty-printed, ending in a newline. *out is freed with sp_free(). */
SP_API sp_status sp_plan_to_json(sp_ctx *ctx, const sp_plan *plan, char **out);
/* sp_plan_write: sp_plan_to_json written atomically to path (sp_write_file_atomic). */
SP_API sp_status sp_plan_write(sp_ctx *ctx, const sp_plan *plan, const char *path);

/* ---------------------------------------------------------------------------------------------
 * Schedule simulation (docs/schedules.md)
 *
 * Event-exact: each device runs its op list in the schedule's order; an op starts at the later
 * of its device becoming free and each predecessor's end (plus the boundary's send_ms when the
 * predecessor ran on another device). No sampling; linear in the number of ops. Assumptions,
 * stated in every output: one op at a time per device, op times independent of what else runs
 * and of M, communication a pure delay on the dependency edge.
 * ------------------------------------------------------------------------------------------- */

/* sp_schedule_name: "gpipe", "1f1b", "interleaved", "zb-h1" (NULL when out of range);
 * sp_schedule_from_name: the reverse, SP_ERR_INVALID_ARG when unknown. */
SP_API const char *sp_schedule_name(sp_schedule schedule);
SP_API sp_status sp_schedule_from_name(const char *name, sp_schedule *out);

#define SP_SIM_MAX_OPS 100000000u /* 10^8 ops: larger simulations are refused (SP_ERR_LIMIT) */

typedef struct sp_sim_opts {
    sp_schedule schedule;   /* default SP_SCHEDULE_1F1B */
    uint32_t micro_batches; /* M; 0: the plan's micro_batches (the default) */
    bool keep_ops;          /* keep every op's times for traces (default true) */
} sp_sim_opts;
SP_API void sp_sim_opts_init(sp_sim_opts *opts);

typedef struct sp_sim sp_sim;

typedef struct sp_sim_summary {
    sp_schedule schedule;
    uint32_t devices, chunks, micro_batches;
    uint64_t ops;
    double iteration_ms;    /* end of the last op */
    double bubble_fraction; /* 1 - total busy / (devices x iteration_ms) */
    double efficiency;      /* 1 - bubble_fraction */
    bool equal_stages;      /* every stage has the same times and no transfer delay */
    double closed_form_ms;  /* the schedule's closed form for equal stages; NaN otherwise */
    double ideal_ms;        /* the busiest device's total work */
} sp_sim_summary;

/* Figures of one device (a device runs one stage, or V chunks when interleaved). */
typedef struct sp_sim_device {
    uint32_t device;
    double busy_ms, idle_ms, first_start_ms, last_end_ms;
    uint32_t peak_inflight;     /* most micro-batches (chunk activations when interleaved) whose
                                 * forward ran and whose last backward part has not */
    uint64_t peak_memory_bytes; /* resident + the saved bytes of what is in flight, at the peak */
} sp_sim_device;

/* One executed op. kind is 'F' (forward), 'B' (backward, or its input-gradient part when the
 * schedule splits it) or 'W' (weight gradient). */
typedef struct sp_sim_op {
    uint32_t device, stage, micro_batch;
    char kind;
    double start_ms, end_ms;
} sp_sim_op;

/* sp_simulate: simulate the plan under opts. Returns SP_ERR_INVALID_ARG when the schedule does
 * not fit the plan, with the reason: ZB-H1 needs wgrad_ms on every stage; interleaved needs a
 * plan made with chunks and M a multiple of P; SP_ERR_LIMIT beyond SP_SIM_MAX_OPS;
 * SP_ERR_INTERNAL if the op order deadlocks (the message names the first blocked op of each
 * device). */
SP_API sp_status sp_simulate(sp_ctx *ctx, const sp_plan *plan, const sp_sim_opts *opts,
                             sp_sim **out);
SP_API void sp_sim_destroy(sp_sim *sim);
SP_API const sp_sim_summary *sp_sim_get_summary(const sp_sim *sim);
SP_API size_t sp_sim_device_count(const sp_sim *sim);
SP_API const sp_sim_device *sp_sim_get_device(const sp_sim *sim, size_t i);
/* Ops in execution order per device, devices in order; 0 when keep_ops was false. */
SP_API size_t sp_sim_op_count(const sp_sim *sim);
SP_API const sp_sim_op *sp_sim_get_op(const sp_sim *sim, size_t i);

/* sp_plan_attach_schedule: record the simulation's schedule figures in the plan (written as
 * the plan's "schedule" object). */
SP_API void sp_plan_attach_schedule(sp_plan *plan, const sp_sim *sim);

/* sp_sim_to_json: a "stagepart-simulation" version 1 document (docs/formats.md). *out is freed
 * with sp_free(). */
SP_API sp_status sp_sim_to_json(sp_ctx *ctx, const sp_sim *sim, char **out);
/* sp_sim_write_trace: the ops as Chrome trace JSON (Perfetto, chrome://tracing), one track per
 * device, written atomically. Needs keep_ops. */
SP_API sp_status sp_sim_write_trace(sp_ctx *ctx, const sp_sim *sim, const char *path);
/* sp_sim_write_svg: an SVG timeline (device rows, a colour per op kind, micro-batch numbers
 * where they fit, time axis in ms, legend, title), written atomically. Needs keep_ops; refuses
 * more than SP_SVG_MAX_OPS ops with SP_ERR_LIMIT (use the trace). `title` may be NULL. */
#define SP_SVG_MAX_OPS 200000u
SP_API sp_status sp_sim_write_svg(sp_ctx *ctx, const sp_sim *sim, const char *title,
                                  const char *path);

/* ---------------------------------------------------------------------------------------------
 * Running a plan (`stagepart run`, docs/runtime.md)
 *
 * Each stage of the plan runs its layers of a built-in model on its own worker (a thread pinned
 * to its own core); activations go forward and gradients back through bounded queues, in the
 * op order of the simulator's schedule (simulate/schedule.c); every step ends with an SGD update.
 * What each stage did is measured with the monotonic clock and compared with the plan's
 * prediction.
 * ------------------------------------------------------------------------------------------- */
typedef struct sp_run sp_run;

/* For testing the failure paths: make one stage fail, or stop answering, at one op. */
typedef enum sp_run_fault {
    SP_RUN_FAULT_NONE = 0,
    SP_RUN_FAULT_FAIL = 1, /* the stage reports an error at that micro-batch's forward */
    SP_RUN_FAULT_HANG = 2  /* the stage stops there and never sends again (its neighbours must
                            * give up after timeout_ms) */
} sp_run_fault;
SP_API const char *sp_run_fault_name(sp_run_fault fault); /* "none", "fail", "hang" */
SP_API sp_status sp_run_fault_from_name(const char *name, sp_run_fault *out);

/* What carries activations and gradients between stages. */
typedef enum sp_transport {
    SP_TRANSPORT_THREADS = 0, /* every stage a thread of this process, bounded queues */
    SP_TRANSPORT_MPI = 1      /* every stage an MPI rank (rank s runs stage s), started with
                               * `mpirun -np P`; builds with Open MPI only (SP_ERR_UNSUPPORTED) */
} sp_transport;
SP_API const char *sp_transport_name(sp_transport transport); /* "threads", "mpi" */
SP_API sp_status sp_transport_from_name(const char *name, sp_transport *out);

/* Where the stages compute. */
typedef enum sp_run_backend {
    SP_RUN_BACKEND_CPU = 0, /* a thread per stage pinned to a core, OpenBLAS */
    SP_RUN_BACKEND_CUDA = 1 /* stage s on GPU s mod the GPUs there are (cuBLAS), its outputs
                             * copied peer to peer; threads transport only; builds with the GPU
                             * executor only (SP_ERR_NO_DEVICE otherwise, or without a GPU) */
} sp_run_backend;
SP_API const char *sp_run_backend_name(sp_run_backend backend); /* "cpu", "cuda" */
SP_API sp_status sp_run_backend_from_name(const char *name, sp_run_backend *out);

typedef struct sp_run_opts {
    sp_schedule schedule;   /* SP_SCHEDULE_GPIPE or SP_SCHEDULE_1F1B (default 1F1B) */
    sp_transport transport; /* default SP_TRANSPORT_THREADS */
    uint32_t micro_batches; /* M per step; 0: the plan's (default 0) */
    uint32_t steps;         /* measured steps (default 3) */
    uint32_t warmup_steps;  /* steps run first and not measured (default 1) */
    float learning_rate;    /* SGD (default 0.01) */
    uint64_t seed;          /* weights and data, as sp_model_profile_cpu's (default 1) */
    bool pin;               /* pin stage s to the s-th core this process may use (default true) */
    double timeout_ms;      /* the longest any stage waits for a neighbour (default 60000) */
    const volatile int *cancel; /* nonzero: every stage stops, SP_ERR_INTERRUPTED (may be NULL) */
    sp_run_fault fault;         /* testing (default SP_RUN_FAULT_NONE) */
    uint32_t fault_stage, fault_step, fault_micro_batch; /* where (step counts warm-up steps) */
    bool keep_state;        /* keep every stage's weights after the run (sp_run_stage_params; tests;
                             * threads and CPU only) */
    sp_run_backend backend; /* default SP_RUN_BACKEND_CPU */
    bool gpu_split; /* CUDA: stages that share a GPU get disjoint, equal SM partitions (green
                     * contexts) instead of sharing it as streams (default false) */
} sp_run_opts;
SP_API void sp_run_opts_init(sp_run_opts *opts);

/* sp_mpi_start: join the MPI job this process was started in (MPI_Init_thread once, funneled),
 * for SP_TRANSPORT_MPI; *rank and *size get this process's rank and the job's size (1 when not
 * started by mpirun). SP_ERR_UNSUPPORTED without Open MPI in the build, SP_ERR_NO_DEVICE when MPI
 * fails to start. sp_mpi_stop: leave it: exit_code 0 finalizes MPI; any other code ends every
 * rank of the job with it (MPI_Abort), since a rank still waiting on a failed one could keep
 * MPI_Finalize from returning. Call it last; a no-op when MPI was not started. */
SP_API sp_status sp_mpi_start(sp_ctx *ctx, int *rank, int *size);
SP_API void sp_mpi_stop(int exit_code);

/* sp_run_plan: train the model pipelined as the plan splits it, warmup_steps + steps steps.
 * The plan's layers must be the model's (by name and count). Returns SP_ERR_INVALID_ARG (the
 * plan and the model differ: the message names the first layer that does; a schedule the
 * runtime does not run), SP_ERR_UNSUPPORTED (an interleaved plan), SP_ERR_INFEASIBLE (a stage
 * cannot allocate its layers: the message names the stage and the bytes), SP_ERR_NO_DEVICE (a
 * stage failed or a neighbour stopped answering within timeout_ms: the message names the stage,
 * the step and the micro-batch), SP_ERR_INTERRUPTED, SP_ERR_NOMEM. No thread is left running. */
SP_API sp_status sp_run_plan(sp_ctx *ctx, const sp_plan *plan, sp_model *model,
                             const sp_run_opts *opts, sp_run **out);
/* With SP_TRANSPORT_MPI every rank calls sp_run_plan with the same plan, model and options
 * (after sp_mpi_start; the job must have as many ranks as the plan has stages) and runs its own
 * stage; at the end every rank holds the whole run (each stage's figures are exchanged), so any
 * rank can report it; stagepart's command reports on rank 0. A rank that fails sends its message
 * to the others, which stop and return the same status and message; a rank that dies is noticed
 * by its neighbours' bounded waits (timeout_ms). */
SP_API void sp_run_destroy(sp_run *run);

/* Per stage, medians over the measured steps. */
typedef struct sp_run_stage {
    uint32_t stage;
    int core;                   /* -1: not pinned */
    int device;                 /* the stage's GPU (SP_RUN_BACKEND_CUDA); -1 on the CPU */
    unsigned sms;               /* gpu_split: the SMs of the stage's partition; 0: the whole GPU */
    double busy_ms;             /* forward + backward compute in one step */
    double fwd_ms, bwd_ms;      /* the two parts of busy_ms */
    double wait_prev_ms;        /* blocked on the previous stage's activations */
    double wait_next_ms;        /* blocked on the next stage's gradients */
    double send_wait_ms;        /* blocked on a full queue */
    double transfer_ms;         /* copying what arrived into the stage's own buffers */
    uint64_t transfer_bytes;    /* received per step, both directions */
    uint64_t peak_memory_bytes; /* weights, gradients, the saved tensors of the most micro-batches
                                 * in flight, scratch and queue buffers */
    uint32_t peak_inflight;
    double predicted_busy_ms; /* M x the plan's stage time */
    double busy_error;        /* busy_ms / predicted_busy_ms - 1 */
} sp_run_stage;

typedef struct sp_run_summary {
    uint32_t stages, micro_batches, steps, warmup_steps, micro_batch_size;
    sp_schedule schedule;
    double iteration_ms, imbalance, bubble_fraction;                               /* measured */
    double predicted_iteration_ms, predicted_imbalance, predicted_bubble_fraction; /* simulated */
    double iteration_error;       /* measured / predicted - 1 */
    double max_stage_error;       /* the largest |busy_error| */
    bool balance_held;            /* every |busy_error| <= 10% and |iteration_error| <= 15% */
    double first_loss, last_loss; /* mean loss of the first and last step */
    unsigned cores;               /* cores this process may use */
    sp_transport transport;
    sp_run_backend backend;
} sp_run_summary;
SP_API const sp_run_summary *sp_run_get_summary(const sp_run *run);
SP_API const sp_run_stage *sp_run_get_stage(const sp_run *run, size_t i);
/* sp_run_step_loss: the mean loss of step i (warm-up steps first), NaN when out of range */
SP_API double sp_run_step_loss(const sp_run *run, size_t i);
/* sp_run_timeline: the last measured step as a simulation object (ops with their measured
 * start and end, relative to the step's start), for sp_sim_write_trace / sp_sim_write_svg: the
 * same formats as the simulator's, so predicted and measured lie side by side. Borrowed. */
SP_API const sp_sim *sp_run_timeline(const sp_run *run);
/* sp_run_to_json: the "stagepart-run-report" document (docs/formats.md#run-report); sp_free. */
SP_API sp_status sp_run_to_json(sp_ctx *ctx, const sp_run *run, char **out);
/* sp_run_stage_params: with keep_state, stage s's weights after the run, layer by layer in
 * order (*count floats); NULL otherwise. Borrowed. */
SP_API const float *sp_run_stage_params(const sp_run *run, size_t stage, size_t layer,
                                        size_t *count);

#ifdef __cplusplus
}
#endif
#endif

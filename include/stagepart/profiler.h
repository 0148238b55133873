/* stagepart/profiler.h: measuring: links between devices, and profiles from what a profiler
 * recorded (profiler/). */
#ifndef STAGEPART_PROFILER_H
#define STAGEPART_PROFILER_H

#include "stagepart/models.h"

#ifdef __cplusplus
extern "C" {
#endif

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

/* What a link probe measured: each series (a link between two devices, or a host copy or a copy
 * within a device) with its fit, how the copies were timed, and the links document. */
typedef struct sp_link_result {
    const char *label; /* "cpu0->cpu1", "gpu0->gpu1", "host->gpu0", ...; borrowed */
    sp_link_fit fit;
} sp_link_result;
typedef struct sp_bandwidth_result sp_bandwidth_result;
SP_API void sp_bandwidth_result_destroy(sp_bandwidth_result *result);
SP_API size_t sp_bandwidth_result_get_link_count(const sp_bandwidth_result *result);
/* series i, in the document's order; NULL past the end. Borrowed. */
SP_API const sp_link_result *sp_bandwidth_result_get_link(const sp_bandwidth_result *result,
                                                          size_t i);
/* how the copies were timed, and a caveat on what could be measured; "" when the probe has none.
 * Borrowed. */
SP_API const char *sp_bandwidth_result_get_timing(const sp_bandwidth_result *result);
SP_API const char *sp_bandwidth_result_get_note(const sp_bandwidth_result *result);
/* the "stagepart-links" document, for --links. Borrowed. */
SP_API const char *sp_bandwidth_result_get_json(const sp_bandwidth_result *result);

/* sp_bandwidth_measure_cpu: the links between CPU worker threads, as the CPU pipeline runtime
 * moves activations: the sender fills its buffer and raises a flag, the receiver, spinning on
 * it, copies the buffer into its own; the time runs from the flag to the end of the copy. Every
 * ordered pair of workers, every size; the medians are fitted (sp_fit_alpha_beta). *out gets
 * every series' fit and a "stagepart-links" document (devices "cpu<core>") with a "measurement"
 * object holding every sample and fit (sp_bandwidth_result_destroy). SP_ERR_INVALID_ARG for bad
 * options, SP_ERR_NO_DEVICE when the threads cannot start. */
SP_API sp_status sp_bandwidth_measure_cpu(sp_ctx *ctx, const sp_bandwidth_opts *opts,
                                          sp_bandwidth_result **out);

/* sp_bandwidth_measure_cuda: the links between CUDA devices: cudaMemcpyPeerAsync for every
 * ordered pair (opts->workers is not used: every device the runtime sees), each copy timed by
 * CUPTI's memcpy records with CUDA events beside as a cross-check (events fitted when CUPTI
 * cannot be used); per device also host-to-device, device-to-host (pinned) and within the
 * device, and NCCL send/recv per pair in builds with NCCL; those series are in "measurement"
 * only. Default sizes 4 KiB to 1 GiB. The same document as the CPU probe, devices "gpu<i>".
 * SP_ERR_NO_DEVICE without a device or driver, SP_ERR_UNSUPPORTED in a build without CUDA,
 * SP_ERR_CUDA when a CUDA or NCCL call fails (named), SP_ERR_INVALID_ARG for bad options. */
SP_API sp_status sp_bandwidth_measure_cuda(sp_ctx *ctx, const sp_bandwidth_opts *opts,
                                           sp_bandwidth_result **out);

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

/* A module map (format "stagepart-modules", docs/formats.md): what a model knows of its modules
 * that its trace does not, written by the PyTorch helper (stagepart_torch.describe for a model
 * traced with no annotation, Annotation.write_modules for the helper's own ranges). Each entry:
 * the module's path in the model ("model.layers.3": what torch resolves), the instance name
 * torch.profiler gives it ("Qwen2DecoderLayer_3", its class and the order of first calls), its
 * class, its parameters' bytes (its own and its descendants'), its largest output's bytes, and
 * whether an attention module is among its descendants. The map owns the strings. */
typedef struct sp_module_entry {
    const char *path;     /* never NULL; unique */
    const char *instance; /* NULL: not given; unique, and no other module's path */
    const char *class_name;
    uint64_t param_bytes, activation_bytes;
    bool has_activation_bytes, contains_attention;
} sp_module_entry;
typedef struct sp_module_map sp_module_map;
/* SP_ERR_IO, SP_ERR_PARSE, SP_ERR_SCHEMA (naming the file and the JSON path), SP_ERR_NOMEM */
SP_API sp_status sp_module_map_load(sp_ctx *ctx, const char *path, sp_module_map **out);
/* the same from a buffer (data[len] must be '\0'); name is used in messages */
SP_API sp_status sp_module_map_parse(sp_ctx *ctx, const char *name, const char *data, size_t len,
                                     sp_module_map **out);
SP_API void sp_module_map_destroy(sp_module_map *map);
SP_API size_t sp_module_map_get_count(const sp_module_map *map);
SP_API const char *sp_module_map_get_file(const sp_module_map *map); /* the name it was read by */
SP_API const sp_module_entry *sp_module_map_get(const sp_module_map *map, size_t i);
/* the entry whose path or instance name is name, or NULL */
SP_API const sp_module_entry *sp_module_map_find(const sp_module_map *map, const char *name);

typedef struct sp_trace_profile_opts {
    const char *layer_pattern; /* POSIX extended regex selecting layer ranges; group 1 (if any) is
                                * the layer's name. NULL: "<layer>/fwd|bwd|recompute" */
    /* which ranges are layers, when not layer_pattern: "auto" (a level of the PyTorch module
     * tree, from torch.profiler's with_stack=True ranges), a depth in that tree ("0", "1",
     * ...), or a regex (as layer_pattern). NULL: ranges that follow the naming convention, else,
     * when none does and the trace has module ranges, "auto". Setting both is
     * SP_ERR_INVALID_ARG. docs/profiling.md */
    const char *layers;
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
    uint32_t sms; /* the SMs of each GPU the program ran on (`profile MODEL --sms N`), recorded
                   * as measurement.sms so that plans know their times are a partition's; 0: all
                   * of them (default) */
    double min_layer_share; /* a GPU trace whose layers hold less than this share of its GPU
                             * time outside the optimizer is refused (SP_ERR_SCHEMA, naming the
                             * ranges that launched the rest): its layers did not launch the
                             * model's kernels. 0: no check; default 0.5 */
    /* NULL, or a module map (borrowed for the call): every layer is looked up in it by name
     * (an instance name or a path) and takes its path as its name, its parameter and output
     * bytes, and a kind from its class; a layer it lacks is SP_ERR_SCHEMA naming both (the map
     * was made from another model), except the helper's "loss" */
    const sp_module_map *modules;
} sp_trace_profile_opts;
SP_API void sp_trace_profile_opts_init(sp_trace_profile_opts *opts);

/* What the attribution found, for the summary a command prints. */
#define SP_TRACE_SUMMARY_OUTSIDE 5
typedef struct sp_trace_summary {
    size_t layers;
    uint32_t steps_total, steps_used; /* steps_total 0: no step ranges, one step */
    bool steps_from_optimizer;        /* no step ranges: the iterations its optimizer steps mark
                                       * (Optimizer.step#...) */
    bool steps_from_forward;          /* no step ranges and no optimizer steps: the iterations
                                       * the model's top-level module calls mark */
    uint64_t activities, unmatched;   /* unmatched: no launch record to attribute it by */
    double gpu_ms;                    /* every activity's duration */
    double layer_ms;                  /* under a layer range (any step) */
    double optimizer_ms, other_ms;    /* under the optimizer range / under other ranges */
    double unattributed_ms;           /* launched outside every range, or unmatched */
    double unattributed_share;        /* unattributed_ms / gpu_ms */
    double outside_steps_ms;          /* layer work in warm-up steps or outside every step */
    uint64_t dropped_records;         /* the collector's own count of lost records */
    uint64_t malformed;               /* GPU activities left out: no start time, or a negative
                                       * duration (warned about; measurement.malformed_activities) */
    uint64_t late;                    /* activities that came too far out of time order to
                                       * merge exactly (their busy time may be over-counted) */
    double late_ms;                   /* their summed duration */
    char layers_chosen[512];          /* how the layers were chosen, for a person */
    /* the largest work in no layer (the optimizer's left out), by name and where it was
     * launched: range is the innermost range open at the launch, or "(outside every range)",
     * or "(no launch record)"; names cut to fit */
    struct {
        char name[128], range[96];
        double ms;
        uint64_t count;
    } outside[SP_TRACE_SUMMARY_OUTSIDE];
    size_t n_outside;
    bool cpu_time; /* a trace with no GPU activity (a CPU run): the times above are its CPU
                    * operators' own time (span less child ops), not GPU time */
} sp_trace_summary;

/* sp_trace_to_profile: the profile (a "stagepart-profile" document, docs/formats.md) and the
 * summary (may be NULL). *json is freed with sp_free. SP_ERR_INVALID_ARG for a bad pattern;
 * SP_ERR_SCHEMA when no range matches the layer pattern (the message shows range names seen) or
 * every step is warm-up. */
SP_API sp_status sp_trace_to_profile(sp_ctx *ctx, const sp_trace *trace,
                                     const sp_trace_profile_opts *opts, char **json,
                                     sp_trace_summary *summary);

/* sp_trace_list_modules: the trace's PyTorch module tree as text, a line a module: its GPU time
 * (forward, backward and recomputation; with its descendants, and its own), its share, and a
 * '*' on those opts->layers (NULL: "auto") makes layers. *text is freed with sp_free.
 * SP_ERR_SCHEMA when the trace has no module ranges. */
SP_API sp_status sp_trace_list_modules(sp_ctx *ctx, const sp_trace *trace,
                                       const sp_trace_profile_opts *opts, char **text);

/* ---- a program run under the live collector (profiler/attach.c) */

typedef struct sp_attach_opts {
    char *const *cmd;         /* the program and its arguments, NULL-terminated */
    const char *inject_lib;   /* the collector, libstagepart-inject.so (CUDA builds) */
    const char *events_dir;   /* keep the event logs there (created; it must hold none); NULL: a
                               * temporary folder, removed with the logs */
    const char *steps;        /* stop recording after this many steps past the warm-up, or NULL */
    uint32_t warmup_steps;    /* steps the collector counts as warm-up (0: its default) */
    const char *step_pattern; /* the step ranges' pattern, or NULL: the collector's default */
    int no_device_status;     /* the program's exit status for "no CUDA device"; 0: none */
} sp_attach_opts;

/* sp_attach_run: run the program with the collector injected (CUDA_INJECTION64_PATH and
 * NVTX_INJECTION64_PATH) and load the event logs it wrote (sp_trace_load_events) into *trace.
 * Ctrl-C reaches the program, which stagepart waits for. Returns SP_ERR_PROGRAM when it exited
 * non-zero or was killed, SP_ERR_NO_DEVICE when it found no CUDA device (no_device_status) or
 * wrote no event log (it loaded no CUDA or NVTX), SP_ERR_INVALID_ARG when it cannot be started or
 * events_dir is not a folder or holds logs of an earlier run, SP_ERR_IO, SP_ERR_NOMEM; the message
 * says which. */
SP_API sp_status sp_attach_run(sp_ctx *ctx, const sp_attach_opts *opts, sp_trace **trace);

#ifdef __cplusplus
}
#endif
#endif

/* profiler/attribute.h: the attribution engine. Every GPU activity goes to the host range that
 * launched it: its correlation id names the launch, the launch's thread and time name the
 * innermost enclosing range on that thread, and the nearest enclosing layer range (by the naming
 * convention, docs/profiling.md) gives the layer and the phase. Step ranges, matched by time on
 * any thread (the backward runs on PyTorch's autograd thread), split the trace into training
 * steps; per layer and phase the engine reports the median over the steps after the warm-up.
 *
 * It streams. The host ranges are held (they say what every launch means); launches and
 * activities pass through three bounded windows and are folded into per-step, per-layer sums as
 * they come, so memory follows the ranges, never the kernel count:
 *   launches   the last launch_window launches by correlation id (an activity finds its launch
 *              among them; one further back counts as unmatched),
 *   pending    activities that came before their launch (clock skew, a collector's buffers
 *              completing out of order), up to pending_window; the oldest left over is
 *              unmatched,
 *   reorder    activities wait here, sorted by start, until reorder_window newer ones came:
 *              merging overlapping kernels needs them in start order per layer, step and device.
 *              One that still comes after a later-starting one of its group is counted as late
 *              (its busy time is merged as well as the order allows, and said in the profile). */
#ifndef SP_PROFILER_ATTRIBUTE_H
#define SP_PROFILER_ATTRIBUTE_H

#include "trace.h"

enum sp_phase {
    SP_PHASE_FWD,
    SP_PHASE_BWD,
    SP_PHASE_RECOMPUTE,    /* a forward range inside a backward one (activation checkpointing) */
    SP_PHASE_OPTIMIZER,    /* under an optimizer range, outside any layer */
    SP_PHASE_OTHER,        /* under some range, but no layer and no optimizer */
    SP_PHASE_UNATTRIBUTED, /* no launch record, or launched outside every range */
    SP_PHASE_COUNT
};
#define SP_LAYER_PHASES 3 /* fwd, bwd, recompute: what a layer has */

struct sp_attrib_opts {
    const char *layer_pattern; /* POSIX ERE; group 1, when present, is the layer's name */
    const char *phase_pattern; /* group 1: fwd, forward, bwd, backward, recompute, optimizer */
    const char *step_pattern;
    /* NULL, or a flag per string of the trace: the ranges of that name are the layers (forward;
     * named without a leading "nn.Module: "), and layer_pattern is not used (modules.c) */
    const uint8_t *layer_names;
    /* with layer_names, NULL or per string: the string whose layer that one's ranges join (its
     * own id, or a neighbour's for a module folded into it) */
    const uint32_t *layer_into;
    uint32_t warmup_steps;
    /* the windows (0: the defaults below); tests make them small to reach their edges */
    size_t launch_window, pending_window, reorder_window;
};

#define SP_ATTRIB_LAUNCH_WINDOW  ((size_t)1 << 20)
#define SP_ATTRIB_PENDING_WINDOW ((size_t)1 << 18)
#define SP_ATTRIB_REORDER_WINDOW ((size_t)1 << 18)

enum { SP_STEPS_BY_RANGES, SP_STEPS_BY_OPTIMIZER, SP_STEPS_BY_FORWARD };
#define SP_MODULE_PREFIX "nn.Module: " /* torch.profiler's module ranges (with_stack=True) */

#define SP_DEFAULT_LAYER_PATTERN "^(.+)/(fwd|bwd|recompute)$"
#define SP_DEFAULT_PHASE_PATTERN "/(fwd|bwd|recompute|optimizer)$"
#define SP_DEFAULT_STEP_PATTERN  "^(stagepart/step|ProfilerStep#[0-9]+)"

struct sp_phase_stats {
    double busy_ms, stddev_ms; /* merged busy time per step (overlaps counted once): median, sd */
    double kernel_ms;          /* summed kernel time, median per step */
    double span_ms;            /* first start to last end, median per step */
    double nccl_ms;            /* NCCL kernels (communication, not in busy_ms), median */
    double copy_ms;            /* memcpy time, median per step */
    uint64_t kernels, copies, copy_bytes; /* per step, median */
};

struct sp_layer_stats {
    const char *name; /* borrowed from the attribution's name table */
    struct sp_phase_stats phase[SP_LAYER_PHASES];
    uint64_t activation_bytes; /* the largest payload of its forward ranges */
    bool has_bytes;
};

/* GPU work that reached no layer, by kernel (or copy, memset) name and the range open around
 * its launch: where to look when a profile misses time. */
struct sp_outside_work {
    uint32_t name;  /* trace string id of the activity's name */
    uint32_t range; /* the innermost range open at the launch + 1; 0: launched outside every
                     * range; UINT32_MAX: no launch record */
    uint8_t cls;    /* SP_PHASE_OTHER or SP_PHASE_UNATTRIBUTED */
    uint64_t count;
    double ms;
};

struct sp_attribution {
    struct sp_layer_stats *layers; /* in chain order: first forward range first */
    size_t n_layers;
    uint32_t steps_total, steps_used; /* steps_total 0: no step ranges, the trace is one step */
    uint8_t steps_by; /* SP_STEPS_BY_*: step ranges, or with none, what marked iterations */
    double gpu_ms;    /* every activity's duration, summed */
    double class_ms[SP_PHASE_COUNT]; /* the same split by where it went */
    double outside_steps_ms;         /* in the warm-up steps or outside every step */
    uint64_t activities, unmatched;  /* unmatched: no launch record with its correlation id */
    uint64_t late;                   /* activities that came after the reorder window */
    double late_ms;                  /* their summed duration */
    struct sp_outside_work *outside; /* work in no layer (not the optimizer's), largest first;
                                      * names are the trace's string ids */
    size_t n_outside;
    struct sp_trace names; /* owns the layer names */
};

/* Attribute the trace: its ranges, then its launches and activities (from its arrays in time
 * order, or from t->replay). SP_ERR_INVALID_ARG for a pattern that does not compile (the message
 * says which and why); SP_ERR_SCHEMA when no range matches the layer pattern (the message names
 * a few range names seen, to write a pattern from). */
sp_status sp_attribute(sp_ctx *ctx, const struct sp_trace *t, const struct sp_attrib_opts *opts,
                       struct sp_attribution *out);
void sp_attribution_release(struct sp_attribution *a);

/* How many ranges the layer pattern (NULL: the default) matches; SP_ERR_INVALID_ARG when it does
 * not compile. */
sp_status sp_attrib_count_layer_ranges(sp_ctx *ctx, const struct sp_trace *t, const char *pattern,
                                       size_t *n);

/* ---- the same in steps, for a source that produces launches and activities itself. The trace
 * passed to sp_attrib_begin holds the ranges and strings (its launch and activity arrays are not
 * read) and must outlive the stream; the hints (how many launches and activities to expect, 0
 * when unknown) size the windows below their caps. sp_attrib_end frees the stream whatever it
 * returns; sp_attrib_abort frees one that is not ended. */
struct sp_attrib_stream;
sp_status sp_attrib_begin(sp_ctx *ctx, const struct sp_trace *t, const struct sp_attrib_opts *opts,
                          size_t launches_hint, size_t activities_hint,
                          struct sp_attrib_stream **out);
sp_status sp_attrib_launch(struct sp_attrib_stream *s, const struct sp_trace_launch *l);
sp_status sp_attrib_activity(struct sp_attrib_stream *s, const struct sp_trace_activity *a);
sp_status sp_attrib_end(struct sp_attrib_stream *s, struct sp_attribution *out);
void sp_attrib_abort(struct sp_attrib_stream *s);

#endif

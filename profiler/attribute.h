/* profiler/attribute.h: the attribution engine. Every GPU activity goes to the host range that
 * launched it: its correlation id names the launch, the launch's thread and time name the
 * innermost enclosing range on that thread, and the nearest enclosing layer range (by the naming
 * convention, docs/profiling.md) gives the layer and the phase. Step ranges, matched by time on
 * any thread (the backward runs on PyTorch's autograd thread), split the trace into training
 * steps; per layer and phase the engine reports the median over the steps after the warm-up. */
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
    uint32_t warmup_steps;
};

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

struct sp_attribution {
    struct sp_layer_stats *layers; /* in chain order: first forward range first */
    size_t n_layers;
    uint32_t steps_total, steps_used; /* steps_total 0: no step ranges, the trace is one step */
    double gpu_ms;                    /* every activity's duration, summed */
    double class_ms[SP_PHASE_COUNT];  /* the same split by where it went */
    double outside_steps_ms;          /* in the warm-up steps or outside every step */
    uint64_t activities, unmatched;   /* unmatched: no launch record with its correlation id */
    struct sp_trace names;            /* owns the layer names */
};

/* Attribute the trace. SP_ERR_INVALID_ARG for a pattern that does not compile (the message
 * says which and why); SP_ERR_SCHEMA when no range matches the layer pattern (the message names
 * a few range names seen, to write a pattern from). */
sp_status sp_attribute(sp_ctx *ctx, const struct sp_trace *t, const struct sp_attrib_opts *opts,
                       struct sp_attribution *out);
void sp_attribution_release(struct sp_attribution *a);

#endif

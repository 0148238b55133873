/* profiler/attribute_impl.h: the attribution stream's state, shared by its two halves:
 * attribute.c (what the ranges say: layers, phases, steps, and each thread's timeline of
 * innermost ranges) and attribute_stream.c (launches and activities through the windows into
 * the per-step sums). */
#ifndef SP_PROFILER_ATTRIBUTE_IMPL_H
#define SP_PROFILER_ATTRIBUTE_IMPL_H

#include "attribute.h"
#include "u64_map.h"

/* what a launch made at some time on some thread belongs to */
struct launch_result {
    int32_t layer;  /* layer id, or -1 */
    uint8_t cls;    /* enum sp_phase */
    uint32_t range; /* the innermost open range's name (trace string id) + 1; 0: none */
};

/* A launch's code, what the launch window keeps per correlation id: bits 0-2 the class (enum
 * sp_phase), bit 3 set for a layer launch outside the steps used, bits 4.. the group + 1
 * (0: none) for a layer's classes, and for the others the innermost open range's name + 1
 * (launch_result.range), to say where work outside the layers was launched. */
#define CODE_CLASS(c)   ((uint8_t)((c)&7u))
#define CODE_OUTSIDE    ((uint64_t)8)
#define CODE_GROUP(c)   ((c) >> 4)
#define CODE_OF(cls, g) ((uint64_t)(cls) | ((uint64_t)(g) << 4))

struct item { /* an activity waiting in the reorder window */
    int64_t start, end;
    uint64_t group, bytes;
    uint32_t device;
    uint8_t kind, nccl;
};

struct acc { /* one (used step, layer, phase): the sums its medians come from */
    int64_t busy, kernel, nccl, copy, first, last;
    uint64_t kernels, copies, bytes;
};

struct merge { /* one (group, device): the merged busy interval still open */
    int64_t start, end;
    uint64_t group;
    uint32_t device;
    bool open, claimed;
};

struct launch_slot {
    uint64_t corr, code;
};

struct pending_slot {
    struct sp_trace_activity a;
    uint64_t seq, prev; /* seq UINT64_MAX: resolved; prev: the older one of its corr */
};

struct sp_attrib_stream {
    sp_ctx *ctx;
    const struct sp_trace *t;
    struct sp_attribution out;          /* what sp_attrib_end hands over */
    size_t L;                           /* layers */
    uint32_t n_steps, first_used, used; /* n_steps: each process's, the fewest of them */
    int64_t *step_start, *step_end;     /* by process, then start */
    size_t *proc_step;                  /* process p's steps: [proc_step[p], proc_step[p + 1]) */
    uint32_t n_proc;
    uint32_t *order; /* layer ids in chain order */
    uint64_t *payload_max;
    uint8_t *has_payload;
    uint8_t *nccl_name; /* per string of the trace */
    /* each thread's timeline: segment k of thread th starts at seg_time[k] (thread_seg[th] <=
     * k < thread_seg[th + 1]) and says what a launch there belongs to */
    int64_t *seg_time;
    struct launch_result *seg_res;
    size_t *thread_seg;
    uint32_t n_seg_threads;
    /* the launch window: ring[i % cap] is the i-th launch; map corr -> i */
    struct launch_slot *launch_ring;
    size_t launch_cap;
    uint64_t launches_in;
    struct sp_u64_map launch_map;
    /* the pending window: pend[seq % cap]; map corr -> newest seq */
    struct pending_slot *pend;
    size_t pend_cap;
    uint64_t pend_in;
    struct sp_u64_map pend_map;
    /* the reorder window: items[head, tail) sorted by start, at most reorder of them */
    struct item *items;
    size_t item_cap, head, tail, reorder;
    /* the sums */
    struct acc *acc;
    struct merge *merge; /* per group, its first device */
    size_t n_acc;
    struct merge *extra; /* further devices of a group, by map (group << 32 | device) -> index */
    size_t n_extra, cap_extra;
    struct sp_u64_map extra_map;
    /* work in no layer, by (kernel name, range): map (name << 32 | range) -> index */
    struct sp_outside_work *outside;
    size_t n_outside, cap_outside;
    struct sp_u64_map outside_map;
};

/* Ranges (or steps) sorted by thread, then start, the enclosing one first, then index: the
 * order a sweep opens them in. Keys carry what they are sorted by (qsort has no context). */
struct time_key {
    uint32_t tid;
    int64_t start, end;
    size_t idx;
};
int sp_time_key_cmp(const void *a, const void *b);

/* attribute_ranks.c: SP_ERR_SCHEMA, naming the files and the first difference, when the trace's
 * processes cannot be merged into one profile: two that share a layer must hold the same layers
 * in the same order (ranks of one data- or tensor-parallel job); processes of layers of their own
 * are pipeline ranks, but with module layers (modules) their first modules must be of one class
 * (one model). fwd_layer: per range, the layer id of a forward layer range, else -1; names: the
 * layer names by id. */
sp_status sp_attrib_check_processes(sp_ctx *ctx, const struct sp_trace *t, const int32_t *fwd_layer,
                                    const struct sp_trace *names, bool modules);

/* attribute_steps.c: iterations in a trace with no step ranges, from what repeats: torch.optim's
 * "Optimizer.step#..." ranges (by SP_STEPS_BY_OPTIMIZER), else the model's top-level forward
 * calls (the earliest outermost module range's name, SP_STEPS_BY_FORWARD). *steps (sp_free it)
 * gets one key per iteration, sorted by process (the tid field) and start, its start and end
 * the iteration's; *n 0 (and *by SP_STEPS_BY_RANGES) when neither shows two iterations. */
sp_status sp_attrib_iterations(sp_ctx *ctx, const struct sp_trace *t, struct time_key **steps,
                               size_t *n, uint8_t *by);

/* attribute_stream.c: allocate the windows and sums once the setup knows the group count */
sp_status sp_attrib_stream_alloc(struct sp_attrib_stream *s, const struct sp_attrib_opts *o,
                                 size_t launches_hint, size_t activities_hint);
/* attribute.c: the segment covering a launch */
struct launch_result sp_attrib_lookup(const struct sp_attrib_stream *s, uint32_t tid,
                                      int64_t time_ns);

#endif

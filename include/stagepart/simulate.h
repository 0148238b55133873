/* stagepart/simulate.h: a plan's schedule simulated event by event, and its timelines
 * (simulate/). */
#ifndef STAGEPART_SIMULATE_H
#define STAGEPART_SIMULATE_H

#include "stagepart/plan.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------------------------
 * Schedule simulation (docs/schedules.md)
 *
 * Event-exact: each device runs its op list in the schedule's order; an op starts at the later
 * of its device becoming free and each predecessor's end (plus the boundary's send_ms when the
 * predecessor ran on another device). No sampling; linear in the number of ops. Assumptions,
 * stated in every output: one op at a time per device, op times independent of what else runs
 * and of M, communication a pure delay on the dependency edge.
 * ------------------------------------------------------------------------------------------- */

/* sp_schedule_name: "gpipe", "1f1b", "interleaved", "zb-h1", "interleaved-zb", "zbv",
 * "dualpipev" (NULL when out of range);
 * sp_schedule_from_name: the reverse, SP_ERR_INVALID_ARG when unknown. */
SP_API const char *sp_schedule_name(sp_schedule schedule);
SP_API sp_status sp_schedule_from_name(const char *name, sp_schedule *out);

/* sp_ring_allreduce_ms: a ring all-reduce of `bytes` among the devices ranks[0..count-1] of
 * `links`, in that ring order: 2 (count - 1) steps of bytes / count each over the ring's
 * slowest link (latency + size / bandwidth), that is 2 (count - 1) / count x bytes / bandwidth
 * + 2 (count - 1) x latency on a uniform ring. 0 for fewer than 2 members or no links. */
SP_API double sp_ring_allreduce_ms(const sp_links *links, const size_t *ranks, size_t count,
                                   uint64_t bytes);

#define SP_SIM_MAX_OPS 100000000u /* 10^8 ops: larger simulations are refused (SP_ERR_LIMIT) */

typedef struct sp_sim_opts {
    sp_schedule schedule;   /* default SP_SCHEDULE_1F1B */
    uint32_t micro_batches; /* M; 0: the plan's micro_batches (the default) */
    bool keep_ops;          /* keep every op's times for traces (default true) */
    const char *order_path; /* a torch schedule CSV (one row per rank, actions like 1F0, 1I0,
                             * 1W0, 1B0, (0F3;7B1)OVERLAP_F_B) to simulate instead of the
                             * schedule's own order; NULL: the schedule's (default). Read, checked
                             * complete (SP_ERR_PARSE naming the row and action) and timed with
                             * the plan's times. Borrowed. */
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
    bool given_order;       /* the op order came from opts.order_path */
} sp_sim_summary;

/* Figures of one device (a device runs one stage, or V chunks when interleaved). */
typedef struct sp_sim_device {
    uint32_t device;
    double busy_ms, idle_ms, first_start_ms, last_end_ms;
    uint32_t peak_inflight;     /* most micro-batches (chunk activations when interleaved) whose
                                 * forward ran and whose last backward part has not */
    uint64_t peak_memory_bytes; /* resident + the saved bytes of what is in flight, at the peak */
} sp_sim_device;

/* One executed op. kind is 'F' (forward), 'B' (full backward), 'I' (its input-gradient part),
 * 'W' (its weight-gradient part) or 'O' (DualPipeV: the forward of stage / micro_batch
 * overlapped with the full backward of stage2 / micro_batch2, one op on the device). */
typedef struct sp_sim_op {
    uint32_t device, stage, micro_batch;
    char kind;
    double start_ms, end_ms;
    uint32_t stage2, micro_batch2; /* the backward of an 'O'; 0 otherwise */
} sp_sim_op;

/* sp_simulate: simulate the plan under opts. Returns SP_ERR_INVALID_ARG when the schedule does
 * not fit the plan, with the reason: the zero-bubble schedules need wgrad_ms on every stage;
 * interleaved ones a plan made with chunks placed in a loop and M a multiple of max(1, M/P);
 * zbv and dualpipev a plan of 2 chunks per device placed V-shape, and dualpipev M >= 2P;
 * SP_ERR_LIMIT beyond SP_SIM_MAX_OPS; SP_ERR_INTERNAL if the op order deadlocks (the message names
 * the first blocked op of each device). */
SP_API sp_status sp_simulate(sp_ctx *ctx, const sp_plan *plan, const sp_sim_opts *opts,
                             sp_sim **out);
SP_API void sp_sim_destroy(sp_sim *sim);
SP_API const sp_sim_summary *sp_sim_get_summary(const sp_sim *sim);
SP_API size_t sp_sim_get_device_count(const sp_sim *sim);
SP_API const sp_sim_device *sp_sim_get_device(const sp_sim *sim, size_t i);
/* Ops in execution order per device, devices in order; 0 when keep_ops was false. */
SP_API size_t sp_sim_get_op_count(const sp_sim *sim);
SP_API const sp_sim_op *sp_sim_get_op(const sp_sim *sim, size_t i);

/* sp_plan_attach_schedule: record the simulation's schedule figures in the plan (written as
 * the plan's "schedule" object). */
SP_API void sp_plan_attach_schedule(sp_plan *plan, const sp_sim *sim);

/* sp_schedule_to_torch_csv: the op order sp_simulate runs for the plan under opts (schedule, M) as
 * torch.distributed.pipelining's schedule CSV, one row per rank (docs/schedules.md): what
 * PipelineScheduleMulti._load_csv reads, so a run executes the order that was predicted.
 * *out is freed with sp_free(). */
SP_API sp_status sp_schedule_to_torch_csv(sp_ctx *ctx, const sp_plan *plan, const sp_sim_opts *opts,
                                          char **out);

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

#ifdef __cplusplus
}
#endif
#endif

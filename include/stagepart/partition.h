/* stagepart/partition.h: partitioning a profile into pipeline stages: the options, the solvers,
 * and the splits a user gives (partitioner/). */
#ifndef STAGEPART_PARTITION_H
#define STAGEPART_PARTITION_H

#include "stagepart/devices.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------------------------
 * Partitioning
 * ------------------------------------------------------------------------------------------- */
/* Pipeline schedules the simulator knows (docs/schedules.md). */
typedef enum sp_schedule {
    SP_SCHEDULE_GPIPE = 0,          /* all forwards, then all backwards */
    SP_SCHEDULE_1F1B = 1,           /* PipeDream-Flush / Megatron 1F1B */
    SP_SCHEDULE_INTERLEAVED = 2,    /* interleaved 1F1B, V chunks per device (Megatron's order;
                                     * torch's Interleaved1F1B, whose rounds also allow M not a
                                     * multiple of P) */
    SP_SCHEDULE_ZB_H1 = 3,          /* zero bubble H1: backward split into I and W */
    SP_SCHEDULE_INTERLEAVED_ZB = 4, /* torch's InterleavedZeroBubble (ZB1P), V chunks per device */
    SP_SCHEDULE_ZBV = 5,            /* torch's ZBVZeroBubble: 2 chunks per device, V-shape */
    SP_SCHEDULE_DUALPIPEV = 6,      /* torch's DualPipeV (DeepSeek): 2 chunks per device, V-shape,
                                     * a forward overlapped with a backward; M >= 2P */
    SP_SCHEDULE_PIPEDREAM = 7,      /* PipeDream's asynchronous 1F1B: the 1F1B order without
                                     * flushes, weights updated after every backward, each stage
                                     * stashing one weight version per micro-batch in flight */
    SP_SCHEDULE_2BW = 8             /* PipeDream-2BW: the same order without flushes, gradients
                                     * accumulated over M micro-batches, two weight versions */
} sp_schedule;

/* Where chunk k of a plan with P devices and V chunks per device runs. */
typedef enum sp_chunk_layout {
    SP_CHUNKS_LOOP = 0, /* device k mod P (Megatron, Interleaved1F1B, LoopedBFS, InterleavedZB) */
    SP_CHUNKS_V = 1     /* V = 2: device k for k < P, else 2P-1-k (ZBVZeroBubble, DualPipeV) */
} sp_chunk_layout;
/* sp_chunk_layout_name: "loop", "v"; sp_chunk_layout_from_name: the reverse. */
SP_API const char *sp_chunk_layout_name(sp_chunk_layout layout);
SP_API sp_status sp_chunk_layout_from_name(const char *name, sp_chunk_layout *out);
/* sp_chunk_device: the device of chunk k (0 <= k < P x V) under the layout. */
SP_API uint32_t sp_chunk_device(sp_chunk_layout layout, uint32_t P, uint32_t k);
/* sp_schedule_chunk_layout: the layout a schedule runs (SP_CHUNKS_V for zbv and dualpipev). */
SP_API sp_chunk_layout sp_schedule_chunk_layout(sp_schedule schedule);

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

/* What the solver that made a plan proved of it, for its objective (the solver's own word,
 * never inferred from the options asked for). */
typedef enum sp_guarantee {
    SP_GUARANTEE_NONE = 0,    /* not optimized for the objective: a baseline (uniform,
                               * parameters) or a split given by the user */
    SP_GUARANTEE_EXACT = 1,   /* the optimum, by an exact algorithm (the DP, the V-shape DP, the
                               * replicated search) */
    SP_GUARANTEE_PROVEN = 2,  /* the optimum, proven by a search's bound (GLPK, the interleaved
                               * search) */
    SP_GUARANTEE_BOUNDED = 3, /* the best plan found when the search stopped: mip_gap above its
                               * proven bound (best_bound_ms) */
    SP_GUARANTEE_SEARCH = 4   /* the best of a set of candidate plans, with no bound (the V-shape
                               * plans under --objective iteration) */
} sp_guarantee;

/* sp_guarantee_name: "none", "exact", "proven", "bounded", "search"; NULL when out of range.
 * sp_guarantee_from_name: the reverse, SP_ERR_INVALID_ARG when unknown. */
SP_API const char *sp_guarantee_name(sp_guarantee guarantee);
SP_API sp_status sp_guarantee_from_name(const char *name, sp_guarantee *out);

/* The solvers, one table (partitioner/solver_table.c): sp_partition walks it and takes the first
 * solver that is asked for by opts->solver, partitions the options' chunk layout, places devices
 * when opts->placement asks it to, and takes the objective. The table is readable so that help,
 * documentation and tests describe the solvers from what sp_partition runs. */
#define SP_SOLVER_ONE_CHUNK   (1u << 0) /* layouts: one chunk per device */
#define SP_SOLVER_LOOP_CHUNKS (1u << 1) /* chunks placed in a loop (interleaved schedules) */
#define SP_SOLVER_V_CHUNKS    (1u << 2) /* two chunks per device, V-shape (zbv, dualpipev) */

#define SP_SOLVER_TAKES_MEMORY                                                                     \
    (1u << 0)                               /* its plans keep to memory limits (else the plan is   \
                                             * checked against them afterwards) */
#define SP_SOLVER_TAKES_LINKS     (1u << 1) /* links with overlapped transfers */
#define SP_SOLVER_TAKES_BLOCKING  (1u << 2) /* --comm blocking: transfers in the stage time */
#define SP_SOLVER_TAKES_RECOMPUTE (1u << 3) /* chooses layers to recompute (--recompute auto) */
#define SP_SOLVER_TAKES_PLACEMENT (1u << 4) /* chooses each stage's device (--placement search) */
#define SP_SOLVER_TAKES_SPEEDS    (1u << 5) /* devices of different speeds */

typedef struct sp_solver_info {
    const char *name;       /* "dp", "vshape", "interleaved", "ilp", ... (unique) */
    const char *summary;    /* one line: what it does */
    sp_solver solver;       /* the opts->solver (--solver) that selects it */
    unsigned layouts;       /* SP_SOLVER_*_CHUNKS it partitions */
    unsigned objectives;    /* bit 1u << objective for each objective it minimizes; 0: none (a
                             * baseline, which ignores the objective) */
    unsigned takes;         /* SP_SOLVER_TAKES_* */
    sp_guarantee guarantee; /* what it proves of its plans when it runs to the end (a search
                             * stopped by its limits says bounded in the plan) */
} sp_solver_info;

/* sp_solver_count / sp_solver_at: the table, in the order sp_partition walks it; NULL past the
 * end. Static. */
SP_API size_t sp_solver_count(void);
SP_API const sp_solver_info *sp_solver_at(size_t index);

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

/* The framework whose pipeline layout a plan must fit (sp_partition_opts.framework). */
typedef enum sp_framework {
    SP_FRAMEWORK_ANY = 0,     /* cuts wherever the profile allows */
    SP_FRAMEWORK_MEGATRON = 1 /* no cut inside Megatron-LM's groups, which a layout cannot split:
                               * the embedding (E: the layers before the first transformer
                               * layer), the MTP layers, the output and loss (L: the layers after
                               * them), so that export --to megatron takes every plan */
} sp_framework;
SP_API const char *sp_framework_name(sp_framework framework);
SP_API sp_status sp_framework_from_name(const char *name, sp_framework *out);

/* How a replicated stage's all-reduce is charged (sp_partition_opts.replica_cost,
 * docs/partitioning.md#replicated-stages). */
typedef enum sp_replica_cost {
    SP_REPLICA_COST_RING = 0,     /* a ring over the slowest link among the stage's devices,
                                   * 2 (r - 1) / r x bytes / bandwidth + 2 (r - 1) x latency
                                   * (sp_ring_allreduce_ms), added to the compute (the default) */
    SP_REPLICA_COST_PIPEDREAM = 1 /* PipeDream's planner's charge: 4 (r - 1) / r x bytes /
                                   * bandwidth, the bandwidth the slowest link's among the stage's
                                   * devices, no latency, added to the compute; only without
                                   * flushes (pipedream, 2bw), as its planner assumes */
} sp_replica_cost;
SP_API const char *sp_replica_cost_name(sp_replica_cost cost);
SP_API sp_status sp_replica_cost_from_name(const char *name, sp_replica_cost *out);

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
    uint32_t stages;              /* P, number of pipeline stages, >= 1 (default 4) */
    uint32_t micro_batches;       /* M per iteration; 0 means 4 * stages (the default);
                                   * SP_MICRO_BATCHES_AUTO: the smallest M whose simulated
                                   * efficiency reaches target_efficiency (within the limits) */
    double target_efficiency;     /* for SP_MICRO_BATCHES_AUTO, in (0, 1) (default 0.9) */
    sp_objective objective;       /* default SP_OBJECTIVE_BOTTLENECK */
    sp_solver solver;             /* default SP_SOLVER_DP */
    sp_schedule schedule;         /* schedule the plan is simulated with (default 1F1B) */
    uint64_t memory_limit_bytes;  /* per-stage memory cap; 0 means none (default) */
    const sp_devices *devices;    /* stage s runs on device s: its speed scales the stage's time,
                                   * its memory caps the stage; NULL: the profile's devices, if any,
                                   * else identical devices (borrowed; default NULL) */
    const sp_links *links;        /* boundary s -> s+1 costs latency + activation_bytes of the
                                   * stage's last layer / bandwidth between devices s and s+1,
                                   * recorded as send_ms; overlapped with compute (an edge delay in
                                   * the schedule), not added to stage time (borrowed; NULL: none) */
    sp_comm comm;                 /* how links are charged (default SP_COMM_OVERLAP) */
    uint32_t chunks;              /* V model chunks per device for the interleaved schedule: P x V
                                   * chunks in chain order, chunk k on device k mod P (default 1).
                                   * The ilp solver balances them exactly (the largest device load,
                                   * the sum of its chunks); uniform makes the equal split; dp
                                   * cannot (non-contiguous sums are no chain problem) */
    double time_limit_s;          /* ilp solver: stop after this long with the best plan found
                                   * (default 30) */
    bool recompute;               /* ilp solver ("--recompute auto"): choose which layers with
                                   * recompute_ms recompute their forward in the backward instead
                                   * of keeping their saved_bytes (default false) */
    sp_placement placement;       /* SP_PLACEMENT_SEARCH: the ilp solver also chooses each stage's
                                   * device among `devices` (or the profile's), minimizing the
                                   * objective, then the latency of one micro-batch (sum of stage
                                   * times + twice the transfers over the links between the chosen
                                   * devices), then the spread. Devices that
                                   * are interchangeable (same speed and memory, same links) are
                                   * merged first. Links, when given, are matched to the devices by
                                   * name. With chunks, chunk k runs on stage k mod P's device.
                                   * Needs overlapped transfers (default ORDER) */
    bool ilp_cold;                /* ilp solver: no incumbent and no bound from the DP, the program
                                   * alone (for testing and measuring the formulation; slower;
                                   * default false) */
    const sp_plan *placed_as;     /* sp_plan_from_split only: each pipeline stage runs on the
                                   * device this plan gave it (its index in `devices`, links matched
                                   * by name), as sp_plan_options sets for a plan whose placement
                                   * was searched; sp_partition ignores it (borrowed; default NULL:
                                   * stage s on device s) */
    bool allow_empty_stages;      /* sp_plan_from_split: the split may give a stage no layer
                                   * (Megatron-LM's layouts may); sp_partition: when the profile
                                   * has fewer places to cut than stages - 1, the plan uses one
                                   * stage per place and leaves the rest empty, first in the
                                   * pipeline (one chunk, identical devices, no links; never
                                   * otherwise). Default false: every stage holds a layer */
    sp_framework framework;       /* cut only where this framework's layout can (default
                                   * SP_FRAMEWORK_ANY); SP_ERR_INVALID_ARG naming why when the
                                   * profile's layers do not make its groups (no kinds) */
    sp_replica_cost replica_cost; /* sp_partition_replicated: how all-reduces are charged
                                   * (default SP_REPLICA_COST_RING) */
    double activation_ratio;      /* sp_partition_replicated with SP_REPLICA_COST_PIPEDREAM: > 0
                                   * charges PipeDream's activation term, its
                                   * --activation_compression_ratio: a stage's time is at least
                                   * 2 x activation bytes / (bandwidth x replicas) / ratio for its
                                   * input (every stage but the first) and its output (every stage
                                   * but the first and the last), the bandwidth the slowest link's
                                   * among the GPUs; the search is then exhaustive (sizes limited)
                                   * and takes no memory limit. 0: not charged (default) */
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

/* ---- Pipeline x data parallel: how to use N GPUs (docs/partitioning.md#pipeline-x-data-parallel)
 *
 * sp_partition_data_parallel: every split of `gpus` into P pipeline stages times D = gpus / P
 * data-parallel replicas of the whole pipeline, each with M = global_batch / (D x the profile's
 * micro_batch_size, 1 when unknown) micro-batches; for each, the exact plan (sp_partition with
 * opts, stages = P, micro_batches = M), its simulated iteration, and the gradient all-reduce
 * that follows it: each pipeline device's parameters among its D replicas
 * (sp_ring_allreduce_ms), the slowest device's. Device r of `opts->links` (required, at least
 * `gpus` devices) and of `opts->devices` (optional) is stage r / D's replica r % D: replicas
 * are neighbours, pipeline stages D apart, as Megatron-LM orders its ranks (pipeline parallel
 * outermost). Step = iteration + all-reduce; the best candidate has the most samples per
 * second. A split without a plan (M not whole, no plan fitting the memory limits, too few
 * layers) is kept with its status and reason. Returns SP_ERR_INVALID_ARG for bad arguments,
 * SP_ERR_INFEASIBLE when no split has a plan (the table is still returned), SP_ERR_NOMEM. */
typedef struct sp_dp_candidate {
    uint32_t pipeline;      /* P: pipeline stages */
    uint32_t data_parallel; /* D = gpus / P: replicas of the whole pipeline */
    uint32_t micro_batches; /* M per replica per step; 0 when the global batch does not divide */
    sp_status status;       /* SP_OK, or why this split has no plan */
    char reason[512];
    sp_plan *plan;        /* the exact plan for P and M (owned by the table), or NULL */
    double iteration_ms;  /* the plan's simulated iteration (its schedule, M micro-batches) */
    double allreduce_ms;  /* the slowest pipeline device's gradient all-reduce, after the flush */
    double step_ms;       /* iteration_ms + allreduce_ms */
    double samples_per_s; /* global_batch / step */
} sp_dp_candidate;

typedef struct sp_dp_table {
    uint32_t gpus;
    uint64_t global_batch;
    uint32_t micro_batch_size; /* the profile's, 1 when it does not say */
    size_t count;
    sp_dp_candidate *candidates; /* P increasing */
    size_t best;                 /* index of the most samples per second; SIZE_MAX: none */
} sp_dp_table;

SP_API sp_status sp_partition_data_parallel(sp_ctx *ctx, const sp_profile *profile,
                                            const sp_partition_opts *opts, uint32_t gpus,
                                            uint64_t global_batch, sp_dp_table **out);
SP_API void sp_dp_table_destroy(sp_dp_table *table);

/* ---- Replicated stages: PipeDream's planner (docs/partitioning.md#replicated-stages)
 *
 * sp_partition_replicated: how many stages, where to cut, and how many data-parallel replicas
 * each stage gets on `gpus` devices (the replicas summed at most gpus, gpus <= 512), exactly:
 * the least bottleneck, then the fewest stages, then the fewest devices spanned. Stages take
 * devices in order from device 0 of opts->links (required, at least gpus devices), stage s
 * replicas[s] consecutive ones after stage s - 1's; a device between stages may be left idle
 * (a slow one, with differing devices). A stage's replicas take its micro-batches
 * round-robin, each holding the whole stage (its memory as an unreplicated stage with as many
 * stages after it), and
 * all-reduce its param_bytes by a ring (sp_ring_allreduce_ms, over the slowest link among
 * them, or as opts->replica_cost says). One micro-batch's share of the stage's devices, the
 * figure the bottleneck is over:
 *     time / r + allreduce / M                under gpipe and 1f1b (one all-reduce an iteration)
 *     (time + allreduce) / r                  under pipedream and 2bw (one per micro-batch, each
 *                                             replica's turn its compute then its all-reduce,
 *                                             as PipeDream's planner charges it)
 * in integer ticks, rounded up. Activation transfers are overlapped, as in sp_partition: the
 * plan's send_ms is the slowest link between two neighbouring stages' devices. Options used:
 * schedule (those four), micro_batches (M; 0: 4 x gpus), memory_limit_bytes, replica_cost,
 * devices (or the
 * profile's: a stage runs at its slowest replica's speed, since round-robin waits for it, and
 * fits the least memory among its devices) and links; the rest must be their defaults. The
 * plan's stages carry replicas, allreduce_ms and share_ms, its summary gpus and the largest
 * share as bottleneck_ms; it is simulated with every replica a device. Returns
 * SP_ERR_INVALID_ARG or SP_ERR_UNSUPPORTED (options: the message says which), SP_ERR_INFEASIBLE
 * (no plan fits the memory limits), SP_ERR_NOMEM. */
#define SP_MAX_REPLICATED_GPUS 512u /* the search grows as N^3 */
SP_API sp_status sp_partition_replicated(sp_ctx *ctx, const sp_profile *profile,
                                         const sp_partition_opts *opts, uint32_t gpus,
                                         sp_plan **out);

/* sp_plan_from_replicated_split: the plan for a given split with given replica counts: stage s
 * begins at first_layers[s] (0 first, increasing, where a stage may begin) and runs on
 * replicas[s] devices, stages on consecutive devices from 0, none idle; every figure as
 * sp_partition_replicated gives it (same options, gpus the replicas summed), solver "given",
 * memory reported, not enforced. `check` re-evaluates a replicated plan with it. Returns
 * SP_ERR_INVALID_ARG (a split that is not one, or options as sp_partition_replicated),
 * SP_ERR_UNSUPPORTED, SP_ERR_NOMEM. */
SP_API sp_status sp_plan_from_replicated_split(sp_ctx *ctx, const sp_profile *profile,
                                               const sp_partition_opts *opts,
                                               const size_t *first_layers, const uint32_t *replicas,
                                               size_t count, sp_plan **out);

/* sp_plan_from_split: a plan for a split given by the caller, e.g. the one a user runs today.
 * first_layers[K] are the first layer of each of the K = opts->stages x opts->chunks stages,
 * increasing from 0 (each stage ends where the next begins, the last at the last layer); with
 * opts->allow_empty_stages, non-decreasing up to the layer count (equal neighbours: an empty
 * stage). The plan
 * gets every figure and the simulated schedule, solver "given". Returns SP_ERR_INVALID_ARG when
 * the split is not one (the message names the stage), SP_ERR_NOMEM. */
SP_API sp_status sp_plan_from_split(sp_ctx *ctx, const sp_profile *profile,
                                    const sp_partition_opts *opts, const size_t *first_layers,
                                    size_t count, sp_plan **out);

/* sp_split_from_counts: the split a list of module counts per stage describes (torchgpipe's and
 * fairscale's `balance`, which count the nn.Sequential's modules: layers of kind "loss" are none
 * and ride with the module before them): *first_layers (freed with sp_free) gets the n stages'
 * first layers. SP_ERR_INVALID_ARG when a stage has no module or the counts do not add up to the
 * profile's modules. */
SP_API sp_status sp_split_from_counts(sp_ctx *ctx, const sp_profile *profile, const size_t *counts,
                                      size_t n, size_t **first_layers);
/* sp_split_from_parts: the split stage boundaries describe (DeepSpeed's `parts`, indices into
 * its layer specs: 0 = parts[0] < ... < parts[n-1] = modules, the loss being loss_fn and no
 * spec): *count = n - 1 stages, *first_layers (sp_free) their first layers. SP_ERR_INVALID_ARG
 * when they do not run from 0 to the module count or do not increase. */
SP_API sp_status sp_split_from_parts(sp_ctx *ctx, const sp_profile *profile, const size_t *parts,
                                     size_t n, size_t **first_layers, size_t *count);

/* sp_megatron_layout_split: the split a Megatron-LM --pipeline-model-parallel-layout string
 * describes, on this profile: layers before the first "transformer" are the E group, layers
 * after the last are the L group (head, loss), `t` are the transformer layers. *first_layers
 * (freed with sp_free) gets the first layer of each segment, *count the number of segments
 * (stages x virtual stages); an empty segment, which Megatron allows, starts where the next one
 * does (the layer count after the last), so its plan needs allow_empty_stages. `m` are the
 * profile's layers of kind "mtp", after the transformer layers. SP_ERR_INVALID_ARG with the
 * reason when the string or its match with the profile is wrong. */
SP_API sp_status sp_megatron_layout_split(sp_ctx *ctx, const sp_profile *profile,
                                          const char *layout, size_t **first_layers, size_t *count);

/* sp_plan_options: the options a plan was made with (stages, chunks, micro-batches, objective,
 * solver, schedule, memory limit, how transfers are charged, placement, and for a searched
 * placement `placed_as` = plan; not the devices or links, which the plan names but does not
 * hold), for re-evaluating the plan on a new profile and re-partitioning it. */
SP_API void sp_plan_options(const sp_plan *plan, sp_partition_opts *opts);

#ifdef __cplusplus
}
#endif
#endif

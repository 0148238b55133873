/* partitioner/replicated.h: PipeDream's planner, stages replicated data-parallel
 * (docs/partitioning.md#replicated-stages). replicated.c checks the options and makes the plan;
 * replicated_search.c finds the cuts and replica counts. */
#ifndef SP_PARTITIONER_REPLICATED_H
#define SP_PARTITIONER_REPLICATED_H

#include "chain.h"

/* What every candidate stage is judged by: the profile's chain (its sums), the links the
 * all-reduces run over, the GPUs, and the schedule's in-flight rules. */
struct sp_replica_model {
    const struct sp_chain *chain; /* sums over positions (time weight, one stage) */
    const sp_links *links;        /* device d of the plan is device d of the links */
    uint32_t gpus;                /* N: devices 0 .. N - 1 */
    uint32_t micro_batches;       /* M per iteration */
    sp_schedule schedule;         /* gpipe, 1f1b, pipedream or 2bw */
    sp_replica_cost cost;         /* how an all-reduce is charged */
    double activation_ratio;      /* > 0: PipeDream's activation term (replicated_transfers.c) */
    double transfer_bw_GBps;      /* its one bandwidth: the slowest link among the N devices */
    uint64_t mem_cap;             /* bytes one device may hold (--memory-limit); 0: none */
    const sp_devices *devices;    /* the devices' speeds and memory (device d of the plan is d of
                                   * the list), or NULL: identical, unlimited */
    /* ring[g * (N + 1) + r] .. ring[g * (N + 1) + r + 1]: for the ring of devices g .. g + r - 1,
     * the offsets into ring_pairs of its links that can be its slowest (duplicates and links
     * dominated in both latency and bandwidth dropped: the slowest is the same) */
    size_t *ring;
    uint32_t *ring_pairs; /* from * N + to */
    /* per (g, r) as ring: the slowest speed among devices g .. g + r - 1 (round-robin waits for
     * it) and the bytes each may hold (the least of their memory and mem_cap; 0: none) */
    double *slowest;
    uint64_t *room;
};

sp_status sp_replica_model_init(sp_ctx *ctx, struct sp_replica_model *m);
void sp_replica_model_release(struct sp_replica_model *m);

/* The all-reduce of `bytes` among devices g .. g + r - 1 as m->cost charges it: the ring
 * (sp_ring_allreduce_ms) or PipeDream's 4 (r - 1) / r x bytes over the ring's slowest
 * bandwidth; in ms, and in ticks as the search charges it. */
double sp_replica_allreduce_ms(const struct sp_replica_model *m, uint32_t g, uint32_t r,
                               uint64_t bytes);
int64_t sp_replica_allreduce_ticks(const struct sp_replica_model *m, uint32_t g, uint32_t r,
                                   uint64_t bytes);

/* One micro-batch's share of a stage over positions [a, b) on devices g .. g + r - 1, in ticks:
 * compute / r + all-reduce / M under a flushing schedule (one all-reduce per iteration, each
 * replica running M / r micro-batches), (compute + all-reduce) / r without flushes (one
 * all-reduce per micro-batch, each replica's turn its compute then its all-reduce, as PipeDream's
 * planner charges it); rounded up to a tick. */
int64_t sp_replica_share_ticks(const struct sp_replica_model *m, size_t a, size_t b, uint32_t g,
                               uint32_t r);

/* A stage's time as the plan charges it: its share, at least its activation transfers when
 * m->activation_ratio > 0 (2 x bytes / (bandwidth x r) / ratio for the input of every stage but
 * the first and the output of every stage but the first and the last, as PipeDream's planner
 * charges them). */
int64_t sp_replica_stage_ticks(const struct sp_replica_model *m, size_t a, size_t b, uint32_t g,
                               uint32_t r);
double sp_replica_least_bandwidth(const struct sp_replica_model *m);

/* The slowest speed and the room of devices g .. g + r - 1 (r >= 1). */
double sp_replica_speed(const struct sp_replica_model *m, uint32_t g, uint32_t r);
uint64_t sp_replica_room(const struct sp_replica_model *m, uint32_t g, uint32_t r);

/* What one replica of a stage holds with k stages from it to the pipeline's end (itself
 * included): resident + inflight(k) x saved + stashed weight versions, as an unreplicated stage
 * k from the end holds. */
sp_u128 sp_replica_memory(const struct sp_replica_model *m, size_t a, size_t b, uint32_t k);

/* The plan found: P stages, stage s over positions [bounds[s], bounds[s + 1]) on devices
 * first_device[s] .. + replicas[s] - 1 (in stage order from device 0, idle devices possibly
 * between stages); gpus_used: the replicas summed. */
struct sp_replica_plan {
    uint32_t stages, gpus_used;
    int64_t bottleneck_ticks;
    size_t *bounds;         /* [stages + 1] positions */
    uint32_t *replicas;     /* [stages] */
    uint32_t *first_device; /* [stages] */
};
void sp_replica_plan_release(struct sp_replica_plan *p);

/* The least bottleneck (largest share) over every plan on at most N GPUs; among the plans
 * reaching it, the fewest stages, then the fewest devices spanned; each stage ending as late as the
 * bottleneck allows. SP_ERR_INFEASIBLE (no message) when no plan fits the memory cap. */
sp_status sp_replica_search(sp_ctx *ctx, const struct sp_replica_model *m,
                            struct sp_replica_plan *out);

/* The exhaustive search with the activation term: as sp_replica_search (least bottleneck, fewest
 * stages, fewest devices spanned), no memory limits; SP_ERR_LIMIT beyond its size. */
sp_status sp_replica_search_transfers(sp_ctx *ctx, const struct sp_replica_model *m,
                                      struct sp_replica_plan *out);

#endif

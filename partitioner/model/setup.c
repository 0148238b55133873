/* partitioner/model/setup.c: resolved options made into what the solvers work on: the devices the
 * stages run on (speeds and memory, the tick range checked), the micro-batch rounds of loop
 * chunks, the chain of candidate cuts (chain.h) for the options and devices, and a solver's
 * solution (its arrays). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "devices_impl.h"
#include "partition_impl.h"

void sp_stage_devices_release(struct sp_stage_devices *d) {
    sp_free(d->speed);
    sp_free(d->memory);
}

/* The partitioner counts a stage's time in integer nanoseconds (64 bits). Refuse inputs whose
 * largest possible total could pass 2^62 ns: every layer's work on the slowest device, and with
 * blocking transfers four transfers (in and out, forward and backward) of every layer's output
 * over the slowest link. The profile reader bounds the work alone; speeds and links scale it. */
static sp_status check_tick_range(sp_ctx *ctx, const sp_profile *profile,
                                  const sp_partition_opts *o, const sp_devices *list) {
    double slowest = 1;
    for (size_t i = 0; list && i < sp_devices_get_count(list); i++)
        slowest = fmin(slowest, sp_devices_get_device(list, i)->speed);
    double latency_ms = 0, ms_per_GB = 0; /* the slowest link's (an upper bound) */
    bool blocking = o->links && o->comm == SP_COMM_BLOCKING;
    size_t n_links = blocking ? sp_links_get_count(o->links) : 0;
    for (size_t i = 0; i < n_links; i++)
        for (size_t j = 0; j < n_links; j++) {
            double alpha = sp_links_transfer_ms(o->links, i, j, 0);
            latency_ms = fmax(latency_ms, alpha);
            ms_per_GB = fmax(ms_per_GB, sp_links_transfer_ms(o->links, i, j, 1000000000) - alpha);
        }
    size_t n = sp_profile_get_layer_count(profile);
    double work_ms = 0, activation_bytes = 0;
    for (size_t l = 0; l < n; l++) {
        const sp_layer *L = sp_profile_get_layer(profile, l);
        work_ms += L->fwd_ms + L->bwd_ms + (L->recompute_ms > 0 ? L->recompute_ms : 0);
        activation_bytes += (double)L->activation_bytes;
    }
    double boundaries = fmin((double)n, (double)o->stages * (o->chunks ? o->chunks : 1));
    double transfer_ms =
        blocking ? 4 * (boundaries * latency_ms + activation_bytes / 1e9 * ms_per_GB) : 0;
    if (work_ms / slowest + transfer_ms <= SP_PROFILE_MAX_TOTAL_MS)
        return SP_OK;
    if (!blocking)
        return sp_fail(ctx, SP_ERR_LIMIT,
                       "the profile's %.4g ms of work would take %.4g ms on the slowest device "
                       "(speed %g), above the limit of %.4g ms (2^62 ns) the partitioner counts "
                       "exactly",
                       work_ms, work_ms / slowest, slowest, SP_PROFILE_MAX_TOTAL_MS);
    return sp_fail(ctx, SP_ERR_LIMIT,
                   "the profile's %.4g ms of work would take %.4g ms on the slowest device "
                   "(speed %g), plus up to %.4g ms of blocking transfers over the slowest link: "
                   "above the limit of %.4g ms (2^62 ns) the partitioner counts exactly",
                   work_ms, work_ms / slowest, slowest, transfer_ms, SP_PROFILE_MAX_TOTAL_MS);
}

sp_status sp_stage_devices_init(sp_ctx *ctx, const sp_profile *profile, const sp_partition_opts *o,
                                struct sp_stage_devices *d) {
    memset(d, 0, sizeof *d);
    d->list = o->devices ? o->devices : sp_profile_get_devices(profile);
    sp_status st = check_tick_range(ctx, profile, o, d->list);
    if (st != SP_OK || !d->list)
        return st;
    size_t n = sp_devices_get_count(d->list);
    if (n < o->stages)
        return sp_fail(ctx, SP_ERR_INFEASIBLE,
                       "%u stages need %u devices (%s); the device list has %zu", o->stages,
                       o->stages,
                       o->placement == SP_PLACEMENT_SEARCH ? "a distinct device for each stage"
                                                           : "stage s runs on device s",
                       n);
    bool speeds = false, memory = false;
    for (uint32_t s = 0; s < o->stages; s++) {
        speeds |= sp_devices_get_device(d->list, s)->speed != 1.0;
        memory |= sp_devices_get_device(d->list, s)->memory_bytes != 0;
    }
    if (speeds && !(d->speed = sp_mallocarray(o->stages, sizeof *d->speed)))
        return sp_oom(ctx, "reading devices");
    if (memory && !(d->memory = sp_mallocarray(o->stages, sizeof *d->memory)))
        return sp_oom(ctx, "reading devices");
    for (uint32_t s = 0; s < o->stages; s++) {
        if (d->speed)
            d->speed[s] = sp_devices_get_device(d->list, s)->speed;
        if (d->memory)
            d->memory[s] = sp_devices_get_device(d->list, s)->memory_bytes;
    }
    return SP_OK;
}

sp_status sp_check_rounds(sp_ctx *ctx, const sp_partition_opts *o) {
    uint32_t rounds = o->micro_batches / o->stages ? o->micro_batches / o->stages : 1;
    if (o->chunks > 1 && sp_schedule_chunk_layout(o->schedule) == SP_CHUNKS_LOOP &&
        o->micro_batches % rounds)
        return sp_fail(ctx, SP_ERR_INVALID_ARG,
                       "the %s schedule needs the micro-batch count to be a multiple of its "
                       "rounds, max(1, M / P) = %u: M = %u, P = %u",
                       sp_schedule_name(o->schedule), rounds, o->micro_batches, o->stages);
    return SP_OK;
}

sp_status sp_chain_for_opts(sp_ctx *ctx, struct sp_chain *c, const sp_profile *profile,
                            const struct sp_chain *base, const sp_partition_opts *o,
                            const struct sp_stage_devices *d) {
    struct sp_chain_model model = {.weight = SP_WEIGHT_TIME,
                                   .stages = o->stages,
                                   .micro_batches = o->micro_batches,
                                   .schedule = o->schedule,
                                   .mem_cap = o->memory_limit_bytes,
                                   .speed = d->speed,
                                   .device_mem = d->memory,
                                   .links = o->links,
                                   .blocking = o->comm == SP_COMM_BLOCKING};
    return base ? sp_chain_restage(ctx, c, base, &model) : sp_chain_init(ctx, c, profile, &model);
}

sp_status sp_solution_init(sp_ctx *ctx, const struct sp_problem *pb, struct sp_solution *sol) {
    memset(sol, 0, sizeof *sol);
    size_t K = (size_t)pb->o->stages * pb->o->chunks;
    size_t n = sp_profile_get_layer_count(pb->profile);
    sol->bounds = sp_mallocarray(K + 1, sizeof *sol->bounds);
    sol->recompute = pb->o->recompute ? sp_calloc(n, sizeof *sol->recompute) : NULL;
    if (sol->bounds && (sol->recompute || !pb->o->recompute))
        return SP_OK;
    sp_solution_release(sol);
    return sp_oom(ctx, "partitioning");
}

void sp_solution_release(struct sp_solution *sol) {
    sp_free(sol->bounds);
    sp_free(sol->recompute);
    sp_free(sol->search.bounds);
    sp_free(sol->search.recompute);
    sp_free(sol->search.stage_class);
    sp_devices_destroy(sol->devices);
    sp_links_destroy(sol->links);
    sp_free(sol->device);
    memset(sol, 0, sizeof *sol);
}

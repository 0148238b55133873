/* partitioner/data_parallel.c: N GPUs split into P pipeline stages x D data-parallel replicas
 * (sp_partition_data_parallel). Each split gets the exact plan for its P and its micro-batch
 * count, the plan's simulated iteration, and the all-reduce of the gradients that follows a
 * flushing schedule's iteration; the table ranks them by samples per second. What a
 * Megatron-LM or torchtitan user would otherwise find by trial runs. */
#include <stdio.h>
#include <string.h>

#include "devices_impl.h"
#include "partition_impl.h"

void sp_dp_table_destroy(sp_dp_table *t) {
    if (!t)
        return;
    for (size_t i = 0; i < t->count; i++)
        sp_plan_destroy(t->candidates[i].plan);
    sp_free(t->candidates);
    sp_free(t);
}

/* the pipeline's devices (replica 0 of each stage) of a list laid out stage-major */
static sp_status pipeline_devices(sp_ctx *ctx, const sp_partition_opts *o, uint32_t P, uint32_t D,
                                  sp_devices **devices, sp_links **links) {
    size_t *idx = sp_mallocarray(P, sizeof *idx);
    if (!idx)
        return sp_oom(ctx, "planning data parallelism");
    for (uint32_t s = 0; s < P; s++)
        idx[s] = (size_t)s * D;
    sp_status st = sp_links_select(ctx, o->links, idx, P, links);
    if (st == SP_OK && o->devices)
        st = sp_devices_select(ctx, o->devices, idx, P, devices);
    sp_free(idx);
    return st;
}

/* the slowest pipeline device's all-reduce: each device's parameters (the sum of its chunks)
 * among the D devices that replicate it */
static sp_status allreduce_ms(sp_ctx *ctx, const sp_plan *plan, const sp_links *links, uint32_t P,
                              uint32_t D, double *out) {
    *out = 0;
    if (D < 2)
        return SP_OK;
    size_t *ranks = sp_mallocarray(D, sizeof *ranks);
    uint64_t *params = sp_calloc(P, sizeof *params);
    if (!ranks || !params) {
        sp_free(ranks);
        sp_free(params);
        return sp_oom(ctx, "planning data parallelism");
    }
    for (size_t k = 0; k < sp_plan_get_stage_count(plan); k++) {
        const sp_stage *st = sp_plan_get_stage(plan, k);
        if (st->device < P)
            params[st->device] += st->param_bytes;
    }
    for (uint32_t s = 0; s < P; s++) {
        for (uint32_t d = 0; d < D; d++)
            ranks[d] = (size_t)s * D + d;
        double ms = sp_ring_allreduce_ms(links, ranks, D, params[s]);
        *out = ms > *out ? ms : *out;
    }
    sp_free(ranks);
    sp_free(params);
    return SP_OK;
}

/* Replicas of one stage must run alike, or the step would wait for the slowest of them, which
 * the plan (made on replica 0's devices) does not model: the first mismatch, written to `why` */
static bool replicas_alike(const sp_devices *devices, uint32_t P, uint32_t D, char *why,
                           size_t size) {
    for (uint32_t s = 0; devices && s < P; s++) {
        const sp_device_info *a = sp_devices_get_device(devices, (size_t)s * D);
        for (uint32_t d = 1; d < D; d++) {
            const sp_device_info *b = sp_devices_get_device(devices, (size_t)s * D + d);
            if (a->speed != b->speed || a->memory_bytes != b->memory_bytes) {
                snprintf(why, size,
                         "stage %u's replicas run on unlike devices (%s: speed %g, %llu bytes; "
                         "%s: speed %g, %llu bytes) and the step would follow the slowest, which "
                         "this table does not model",
                         s, a->name, a->speed, (unsigned long long)a->memory_bytes, b->name,
                         b->speed, (unsigned long long)b->memory_bytes);
                return false;
            }
        }
    }
    return true;
}

/* One split: its plan and figures, or its reason. Only running out of memory stops the table. */
static sp_status solve_candidate(sp_ctx *ctx, const sp_profile *profile,
                                 const sp_partition_opts *given, const sp_dp_table *t,
                                 sp_dp_candidate *c) {
    uint64_t per_step = (uint64_t)c->data_parallel * t->micro_batch_size;
    if (t->global_batch % per_step || t->global_batch / per_step > UINT32_MAX) {
        c->status = SP_ERR_INVALID_ARG;
        snprintf(c->reason, sizeof c->reason,
                 "the global batch %llu does not split into whole micro-batches: %u replicas x "
                 "%u sample%s per micro-batch",
                 (unsigned long long)t->global_batch, c->data_parallel, t->micro_batch_size,
                 t->micro_batch_size == 1 ? "" : "s");
        return SP_OK;
    }
    c->micro_batches = (uint32_t)(t->global_batch / per_step);
    if (!replicas_alike(given->devices, c->pipeline, c->data_parallel, c->reason,
                        sizeof c->reason)) {
        c->status = SP_ERR_INVALID_ARG;
        return SP_OK;
    }
    sp_devices *devices = NULL;
    sp_links *links = NULL;
    sp_status st = pipeline_devices(ctx, given, c->pipeline, c->data_parallel, &devices, &links);
    sp_partition_opts o = *given;
    o.stages = c->pipeline;
    o.micro_batches = c->micro_batches;
    o.devices = devices ? devices : given->devices;
    o.links = links;
    if (st == SP_OK)
        st = sp_partition(ctx, profile, &o, &c->plan);
    if (st == SP_OK)
        st = allreduce_ms(ctx, c->plan, given->links, c->pipeline, c->data_parallel,
                          &c->allreduce_ms);
    sp_devices_destroy(devices);
    sp_links_destroy(links);
    if (st == SP_ERR_NOMEM)
        return st;
    c->status = st;
    if (st != SP_OK) {
        snprintf(c->reason, sizeof c->reason, "%s", sp_ctx_get_errmsg(ctx));
        sp_plan_destroy(c->plan);
        c->plan = NULL;
        return SP_OK;
    }
    const sp_plan_summary *m = sp_plan_get_summary(c->plan);
    c->iteration_ms = m->schedule.iteration_ms;
    c->step_ms = c->iteration_ms + c->allreduce_ms;
    c->samples_per_s = c->step_ms > 0 ? (double)t->global_batch * 1000.0 / c->step_ms : 0;
    return SP_OK;
}

static sp_status check_args(sp_ctx *ctx, const sp_partition_opts *o, uint32_t gpus,
                            uint64_t global_batch) {
    if (gpus == 0 || global_batch == 0)
        return sp_fail(ctx, SP_ERR_INVALID_ARG,
                       "planning data parallelism needs gpus >= 1 and a global batch >= 1 "
                       "(got %u and %llu)",
                       gpus, (unsigned long long)global_batch);
    if (!o->links || sp_links_get_count(o->links) < gpus)
        return sp_fail(ctx, SP_ERR_INVALID_ARG,
                       "planning data parallelism over %u GPUs needs links between all of them "
                       "(--links with at least %u devices, got %zu) to cost the gradient "
                       "all-reduce and the pipeline's transfers; `stagepart bandwidth` measures "
                       "them",
                       gpus, gpus, o->links ? sp_links_get_count(o->links) : (size_t)0);
    if (o->devices && sp_devices_get_count(o->devices) < gpus)
        return sp_fail(ctx, SP_ERR_INVALID_ARG,
                       "planning data parallelism over %u GPUs: the device list has %zu", gpus,
                       sp_devices_get_count(o->devices));
    if (o->placement == SP_PLACEMENT_SEARCH || o->micro_batches == SP_MICRO_BATCHES_AUTO)
        return sp_fail(ctx, SP_ERR_INVALID_ARG,
                       "planning data parallelism fixes each split's devices (replicas side by "
                       "side, stages apart) and its micro-batches (from the global batch): drop "
                       "%s",
                       o->placement == SP_PLACEMENT_SEARCH ? "--placement search"
                                                           : "--micro-batches auto");
    return SP_OK;
}

sp_status sp_partition_data_parallel(sp_ctx *ctx, const sp_profile *profile,
                                     const sp_partition_opts *opts, uint32_t gpus,
                                     uint64_t global_batch, sp_dp_table **out) {
    if (!ctx)
        return SP_ERR_INVALID_ARG;
    sp_ctx_begin(ctx);
    if (!profile || !opts || !out)
        return sp_fail(ctx, SP_ERR_INVALID_ARG, "sp_partition_data_parallel: NULL argument");
    *out = NULL;
    sp_status st = check_args(ctx, opts, gpus, global_batch);
    if (st != SP_OK)
        return st;
    sp_dp_table *t = sp_calloc(1, sizeof *t);
    uint32_t divisors = 0;
    for (uint32_t p = 1; p <= gpus; p++)
        divisors += gpus % p == 0;
    if (t)
        t->candidates = sp_calloc(divisors, sizeof *t->candidates);
    if (!t || !t->candidates) {
        sp_dp_table_destroy(t);
        return sp_oom(ctx, "planning data parallelism");
    }
    uint64_t mbs = sp_profile_get_micro_batch_size(profile);
    t->gpus = gpus;
    t->global_batch = global_batch;
    t->micro_batch_size = mbs && mbs <= UINT32_MAX ? (uint32_t)mbs : 1;
    t->best = SIZE_MAX;
    for (uint32_t p = 1; p <= gpus && st == SP_OK; p++) {
        if (gpus % p)
            continue;
        sp_dp_candidate *c = &t->candidates[t->count++];
        c->pipeline = p;
        c->data_parallel = gpus / p;
        st = solve_candidate(ctx, profile, opts, t, c);
        if (st == SP_OK && c->plan &&
            (t->best == SIZE_MAX || c->samples_per_s > t->candidates[t->best].samples_per_s))
            t->best = (size_t)(c - t->candidates);
    }
    if (st != SP_OK) {
        sp_dp_table_destroy(t);
        return st;
    }
    sp_ctx_begin(ctx); /* the candidates' reasons are in the table, not the context */
    *out = t;
    if (t->best == SIZE_MAX)
        return sp_fail(ctx, SP_ERR_INFEASIBLE,
                       "no split of %u GPUs into pipeline x data parallel has a plan (each "
                       "candidate's reason is in the table)",
                       gpus);
    return SP_OK;
}

/* partitioner/replicated.c: `partition --gpus N`, PipeDream's planner: how many stages, where
 * to cut and how many data-parallel replicas each stage has (sp_partition_replicated). The
 * options are checked here, replicated_search.c finds the plan, and the plan is built as a
 * given split whose stages then get their replicas, devices, all-reduces and shares, and is
 * simulated with every replica a device (simulate/replicas.c). */
#include <math.h>
#include <string.h>

#include "baselines.h"
#include "cost.h"
#include "devices_impl.h"
#include "partition_impl.h"
#include "plan_impl.h"
#include "replicated.h"
#include "sim_impl.h"

static sp_status check_options(sp_ctx *ctx, const sp_profile *profile, const sp_partition_opts *o,
                               uint32_t gpus, const sp_devices **devices) {
    if (gpus < 1 || gpus > SP_MAX_REPLICATED_GPUS)
        return sp_fail(ctx, SP_ERR_INVALID_ARG,
                       "--gpus must be in [1, %u] for replicated stages (the search grows as "
                       "N^3), got %u",
                       SP_MAX_REPLICATED_GPUS, gpus);
    sp_schedule sc = o->schedule;
    if (sc != SP_SCHEDULE_GPIPE && sc != SP_SCHEDULE_1F1B && !sp_schedule_async(sc))
        return sp_fail(ctx, SP_ERR_UNSUPPORTED,
                       "replicated stages run gpipe, 1f1b, pipedream or 2bw (one chunk per "
                       "device, in-flight counts set by the stages after each); --schedule %s "
                       "is not built for them",
                       sp_schedule_name(sc));
    if (o->chunks > 1 || o->solver != SP_SOLVER_DP || o->objective != SP_OBJECTIVE_BOTTLENECK ||
        o->recompute || o->placement != SP_PLACEMENT_ORDER || o->allow_empty_stages ||
        o->comm != SP_COMM_OVERLAP)
        return sp_fail(ctx, SP_ERR_UNSUPPORTED,
                       "replicated stages are planned by their own exact search for the least "
                       "bottleneck: --chunks, --solver, --objective, --recompute, --placement, "
                       "--allow-empty-stages and --comm blocking do not apply to them");
    if ((unsigned)o->replica_cost > SP_REPLICA_COST_PIPEDREAM)
        return sp_fail(ctx, SP_ERR_INVALID_ARG, "replica_cost %d is none of ring, pipedream",
                       (int)o->replica_cost);
    if (o->replica_cost == SP_REPLICA_COST_PIPEDREAM && !sp_schedule_async(sc))
        return sp_fail(ctx, SP_ERR_INVALID_ARG,
                       "--replica-cost pipedream charges an all-reduce per micro-batch, as "
                       "PipeDream's planner does for its schedule without flushes: use it with "
                       "--schedule pipedream or 2bw, not %s",
                       sp_schedule_name(sc));
    if (o->activation_ratio != 0 && !(o->activation_ratio > 0 && o->activation_ratio <= 1e9))
        return sp_fail(ctx, SP_ERR_INVALID_ARG, "--activation-ratio must be in (0, 1e9], got %g",
                       o->activation_ratio);
    if (o->activation_ratio > 0 && o->replica_cost != SP_REPLICA_COST_PIPEDREAM)
        return sp_fail(ctx, SP_ERR_INVALID_ARG,
                       "--activation-ratio charges PipeDream's activation term, at its one "
                       "bandwidth: use it with --replica-cost pipedream");
    if (o->activation_ratio > 0 && o->memory_limit_bytes)
        return sp_fail(ctx, SP_ERR_INVALID_ARG,
                       "--activation-ratio takes no --memory-limit: its search goes through "
                       "prefixes of the chain, and a replica's memory depends on the stages "
                       "after it");
    if (o->micro_batches == SP_MICRO_BATCHES_AUTO)
        return sp_fail(ctx, SP_ERR_UNSUPPORTED,
                       "--micro-batches auto does not apply to replicated stages: give M");
    if (!o->links || sp_links_get_count(o->links) < gpus)
        return sp_fail(ctx, SP_ERR_INVALID_ARG,
                       "replicated stages all-reduce their gradients over the links between "
                       "their devices: --links must describe at least %u devices%s",
                       gpus, o->links ? "" : " (none given)");
    *devices = o->devices ? o->devices : sp_profile_get_devices(profile);
    if (!*devices)
        return SP_OK;
    if (sp_devices_get_count(*devices) < gpus)
        return sp_fail(ctx, SP_ERR_INVALID_ARG, "the device list has %zu devices, --gpus %u",
                       sp_devices_get_count(*devices), gpus);
    for (uint32_t d = 0; o->activation_ratio > 0 && d < gpus; d++)
        if (sp_devices_get_device(*devices, d)->memory_bytes)
            return sp_fail(ctx, SP_ERR_INVALID_ARG,
                           "--activation-ratio takes no memory limits, and device %u of the "
                           "list has %llu bytes: its search goes through prefixes of the chain, "
                           "and a replica's memory depends on the stages after it",
                           d, (unsigned long long)sp_devices_get_device(*devices, d)->memory_bytes);
    return SP_OK;
}

/* each stage's figures on its replicas: devices, all-reduce, share, and the transfer to the next
 * stage over the slowest link between the two stages' devices */
static sp_status set_replicas(sp_ctx *ctx, sp_plan *plan, const sp_profile *profile,
                              const struct sp_replica_model *m, const struct sp_replica_plan *rp,
                              const sp_devices *devices) {
    uint32_t P = rp->stages;
    uint32_t *device = sp_mallocarray(P, sizeof *device);
    const char **names = sp_mallocarray(P, sizeof *names);
    if (!device || !names) {
        sp_free(device);
        sp_free(names);
        return sp_oom(ctx, "planning replicated stages");
    }
    for (uint32_t s = 0; s < P; s++) {
        sp_stage *st = &plan->stages[s];
        uint32_t g = rp->first_device[s], r = rp->replicas[s];
        device[s] = g;
        names[s] =
            devices ? sp_devices_get_device(devices, g)->name : sp_links_get_name(m->links, g);
        st->replicas = r;
        st->allreduce_ms = sp_replica_allreduce_ms(m, g, r, st->param_bytes);
        st->share_ms =
            sp_ticks_to_ms(sp_replica_stage_ticks(m, rp->bounds[s], rp->bounds[s + 1], g, r));
        st->send_ms = 0;
        if (s + 1 == P)
            continue;
        uint64_t bytes = sp_profile_get_layer(profile, st->last_layer)->activation_bytes;
        uint32_t g2 = rp->first_device[s + 1], r2 = rp->replicas[s + 1];
        for (uint32_t i = g; i < g + r; i++)
            for (uint32_t j = g2; j < g2 + r2; j++)
                st->send_ms = fmax(st->send_ms, sp_links_transfer_ms(m->links, i, j, bytes));
    }
    sp_status st = sp_plan_set_devices(ctx, plan, device, names);
    sp_free(device);
    sp_free(names);
    return st;
}

/* the even split on the same replicas and devices, and whether it fits */
static sp_status even_split(sp_ctx *ctx, const sp_profile *profile,
                            const struct sp_replica_model *m, const struct sp_replica_plan *rp,
                            double *bottleneck_ms, bool *over_memory) {
    uint32_t P = rp->stages;
    size_t *even = sp_mallocarray((size_t)P + 1, sizeof *even);
    if (!even)
        return sp_oom(ctx, "planning replicated stages");
    sp_status st = sp_uniform_bounds(ctx, profile, m->chain, P, even);
    int64_t worst = 0;
    *over_memory = false;
    for (uint32_t s = 0; st == SP_OK && s < P; s++) {
        size_t a = sp_chain_position_of(m->chain, even[s]);
        size_t b = sp_chain_position_of(m->chain, even[s + 1]);
        int64_t t = sp_replica_stage_ticks(m, a, b, rp->first_device[s], rp->replicas[s]);
        worst = t > worst ? t : worst;
        uint64_t room = sp_replica_room(m, rp->first_device[s], rp->replicas[s]);
        *over_memory |= room && sp_replica_memory(m, a, b, P - s) > room;
    }
    *bottleneck_ms = sp_ticks_to_ms(worst);
    sp_free(even);
    return st;
}

/* the summary from the shares: what bounds a replicated pipeline's throughput */
static void summarize(sp_plan *plan, const struct sp_replica_plan *rp, uint32_t M) {
    sp_plan_summary *sm = &plan->summary;
    sm->gpus = rp->gpus_used;
    sp_plan_recompute_summary(plan); /* from the shares, as a plan read back */
    sm->formula_iteration_ms = (double)(M - 1) * sm->bottleneck_ms + sm->mean_ms * rp->stages;
    sm->optimal = false; /* the search's plans say otherwise */
    sm->guarantee = SP_GUARANTEE_NONE;
}

static sp_status build_plan(sp_ctx *ctx, const sp_profile *profile, const sp_partition_opts *o,
                            const sp_devices *devices, const struct sp_replica_model *m,
                            const struct sp_replica_plan *rp, sp_plan **out) {
    uint32_t P = rp->stages;
    size_t *first = sp_mallocarray(P, sizeof *first), *slow = sp_calloc(P, sizeof *slow);
    sp_devices *stage_devices = NULL; /* each stage's slowest replica: its times are that one's */
    sp_status st = first && slow ? SP_OK : sp_oom(ctx, "planning replicated stages");
    for (uint32_t s = 0; st == SP_OK && s < P; s++) {
        first[s] = m->chain->pos[rp->bounds[s]];
        slow[s] = rp->first_device[s];
        uint32_t end = rp->first_device[s] + rp->replicas[s];
        for (uint32_t d = rp->first_device[s]; devices && d < end; d++)
            if (sp_devices_get_device(devices, d)->speed <
                sp_devices_get_device(devices, slow[s])->speed)
                slow[s] = d;
    }
    if (st == SP_OK && devices)
        st = sp_devices_select(ctx, devices, slow, P, &stage_devices);
    for (uint32_t s = 0; st == SP_OK && stage_devices && s < P; s++)
        stage_devices->info[s].memory_bytes = 0; /* the search checked each replica's room */
    sp_partition_opts g = *o;
    g.stages = P;
    g.micro_batches = m->micro_batches;
    g.chunks = 1;
    g.links = NULL; /* transfers and all-reduces are set from the replicas' devices below */
    g.devices = stage_devices;
    g.memory_limit_bytes = 0; /* the search kept every replica within it */
    sp_plan *plan = NULL;
    if (st == SP_OK)
        st = sp_plan_from_split(ctx, profile, &g, first, P, &plan);
    if (st == SP_OK)
        st = set_replicas(ctx, plan, profile, m, rp, devices);
    if (st == SP_OK) {
        plan->summary.solver = SP_SOLVER_DP;
        plan->summary.memory_limit_bytes = o->memory_limit_bytes;
        plan->summary.replica_cost = m->cost;
        plan->summary.activation_ratio = m->activation_ratio;
        summarize(plan, rp, m->micro_batches);
        /* no plan beats all the work spread over every device at its speed, no all-reduce */
        double speeds = 0;
        for (uint32_t d = 0; d < m->gpus; d++)
            speeds += devices ? sp_devices_get_device(devices, d)->speed : 1.0;
        plan->summary.lower_bound_ms = sp_ticks_to_ms(m->chain->w[m->chain->n_pos - 1]) / speeds;
        st = even_split(ctx, profile, m, rp, &plan->summary.even_split_bottleneck_ms,
                        &plan->summary.even_split_over_memory);
    }
    if (st == SP_OK)
        st = sp_plan_simulate(ctx, plan, o->schedule);
    sp_free(first);
    sp_free(slow);
    sp_devices_destroy(stage_devices);
    if (st != SP_OK) {
        sp_plan_destroy(plan);
        return st;
    }
    *out = plan;
    return SP_OK;
}

/* The model every replicated plan is judged by: the chain, the links' rings, M and the memory
 * cap (the options checked first). */
struct replicated_setup {
    const sp_devices *devices;
    struct sp_chain chain;
    struct sp_replica_model m;
};

static sp_status setup(sp_ctx *ctx, const sp_profile *profile, const sp_partition_opts *opts,
                       uint32_t gpus, struct replicated_setup *su) {
    memset(su, 0, sizeof *su);
    sp_status st = check_options(ctx, profile, opts, gpus, &su->devices);
    if (st != SP_OK)
        return st;
    uint32_t M = opts->micro_batches ? opts->micro_batches : 4 * gpus;
    struct sp_chain_model cm = {SP_WEIGHT_TIME, 1,    M,     opts->schedule, 0,     NULL,
                                NULL,           NULL, false, false,          false, NULL};
    st = sp_chain_init(ctx, &su->chain, profile, &cm);
    if (st != SP_OK)
        return st;
    su->m = (struct sp_replica_model){.chain = &su->chain,
                                      .links = opts->links,
                                      .gpus = gpus,
                                      .micro_batches = M,
                                      .schedule = opts->schedule,
                                      .cost = opts->replica_cost,
                                      .activation_ratio = opts->activation_ratio,
                                      .mem_cap = opts->memory_limit_bytes,
                                      .devices = su->devices};
    st = sp_replica_model_init(ctx, &su->m);
    su->m.transfer_bw_GBps = st == SP_OK ? sp_replica_least_bandwidth(&su->m) : 0;
    if (st != SP_OK)
        sp_chain_release(&su->chain);
    return st;
}

static void release(struct replicated_setup *su) {
    sp_replica_model_release(&su->m);
    sp_chain_release(&su->chain);
}

sp_status sp_partition_replicated(sp_ctx *ctx, const sp_profile *profile,
                                  const sp_partition_opts *opts, uint32_t gpus, sp_plan **out) {
    if (!ctx)
        return SP_ERR_INVALID_ARG;
    sp_ctx_begin(ctx);
    if (!profile || !opts || !out)
        return sp_fail(ctx, SP_ERR_INVALID_ARG, "sp_partition_replicated: NULL argument");
    *out = NULL;
    if (opts->framework != SP_FRAMEWORK_ANY) /* the same call on the framework's profile */
        return sp_partition_framed(ctx, profile, opts, gpus, out);
    double t0 = sp_now_ms();
    struct replicated_setup su;
    sp_status st = setup(ctx, profile, opts, gpus, &su);
    if (st != SP_OK)
        return st;
    sp_warn_resident_only(ctx, profile, su.m.mem_cap || su.devices);
    sp_warn_profile_caveats(ctx, profile, opts->schedule);
    struct sp_replica_plan rp = {0};
    st = su.m.activation_ratio > 0 ? sp_replica_search_transfers(ctx, &su.m, &rp)
                                   : sp_replica_search(ctx, &su.m, &rp);
    if (st == SP_ERR_INFEASIBLE)
        st = sp_fail(ctx, SP_ERR_INFEASIBLE,
                     "no plan on %u GPUs fits the memory limits (--memory-limit, the devices' "
                     "memory): each replica holds its whole stage",
                     gpus);
    if (st == SP_OK)
        st = build_plan(ctx, profile, opts, su.devices, &su.m, &rp, out);
    if (st == SP_OK) {
        (*out)->summary.optimal = true; /* the search over cuts and replica counts is exact */
        (*out)->summary.guarantee = SP_GUARANTEE_EXACT;
        (*out)->summary.solve_ms = sp_now_ms() - t0;
    }
    sp_replica_plan_release(&rp);
    release(&su);
    return st;
}

/* the given split and replicas as the search's plan: positions, devices from 0 in order */
static sp_status given_plan(sp_ctx *ctx, const struct sp_chain *c, const size_t *first,
                            const uint32_t *replicas, size_t count, struct sp_replica_plan *rp) {
    size_t n = c->pos[c->n_pos - 1];
    rp->stages = (uint32_t)count;
    rp->bounds = sp_mallocarray(count + 1, sizeof *rp->bounds);
    rp->replicas = sp_mallocarray(count, sizeof *rp->replicas);
    rp->first_device = sp_mallocarray(count, sizeof *rp->first_device);
    if (!rp->bounds || !rp->replicas || !rp->first_device)
        return sp_oom(ctx, "a replicated split");
    for (size_t s = 0; s < count; s++) {
        size_t k = sp_chain_position_of(c, first[s]);
        if (first[s] >= n || (s == 0 ? first[s] != 0 : first[s] <= first[s - 1]) ||
            c->pos[k] != first[s])
            return sp_fail(ctx, SP_ERR_INVALID_ARG,
                           "stage %zu starts at layer %zu: stages start at layer 0, in increasing "
                           "order, below %zu, where a stage may begin (not inside layers joined "
                           "by \"cut_after\": false)",
                           s, first[s], n);
        rp->bounds[s] = k;
        rp->replicas[s] = replicas[s];
        rp->first_device[s] = rp->gpus_used;
        rp->gpus_used += replicas[s];
    }
    rp->bounds[count] = c->n_pos - 1;
    return SP_OK;
}

sp_status sp_plan_from_replicated_split(sp_ctx *ctx, const sp_profile *profile,
                                        const sp_partition_opts *opts, const size_t *first_layers,
                                        const uint32_t *replicas, size_t count, sp_plan **out) {
    if (!ctx)
        return SP_ERR_INVALID_ARG;
    sp_ctx_begin(ctx);
    if (!profile || !opts || !first_layers || !replicas || !out || !count ||
        count > SP_MAX_REPLICATED_GPUS)
        return sp_fail(ctx, SP_ERR_INVALID_ARG, "sp_plan_from_replicated_split: no split");
    *out = NULL;
    uint64_t gpus = 0;
    for (size_t s = 0; s < count; s++) {
        if (!replicas[s])
            return sp_fail(ctx, SP_ERR_INVALID_ARG, "stage %zu has no replica", s);
        gpus += replicas[s];
    }
    if (gpus > SP_MAX_REPLICATED_GPUS)
        return sp_fail(ctx, SP_ERR_INVALID_ARG, "the replicas add up to %llu GPUs, above %u",
                       (unsigned long long)gpus, SP_MAX_REPLICATED_GPUS);
    struct replicated_setup su;
    sp_status st = setup(ctx, profile, opts, (uint32_t)gpus, &su);
    if (st != SP_OK)
        return st;
    struct sp_replica_plan rp = {0};
    st = given_plan(ctx, &su.chain, first_layers, replicas, count, &rp);
    if (st == SP_OK)
        st = build_plan(ctx, profile, opts, su.devices, &su.m, &rp, out);
    if (st == SP_OK)
        (*out)->summary.solver = SP_SOLVER_GIVEN;
    sp_replica_plan_release(&rp);
    release(&su);
    return st;
}

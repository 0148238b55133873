/* partitioner/model/cost.c: building a plan from stage boundaries and computing its figures.
 *
 * Every figure is computed here, from the profile and the boundaries alone, so all solvers
 * (exact or baseline) report numbers the same way. Stage time is exact integer nanoseconds
 * summed per layer (sp_layer_ticks), converted to milliseconds at the end. */
#include <math.h>
#include <string.h>

#include "cost.h"
#include "plan_impl.h"
#include "sim_impl.h"

bool sp_profile_saves_nothing(const sp_profile *profile) {
    size_t n = sp_profile_get_layer_count(profile);
    for (size_t l = 0; l < n; l++)
        if (sp_profile_get_layer(profile, l)->saved_bytes)
            return false;
    return true;
}

bool sp_profile_forward_only(const sp_profile *profile) {
    size_t n = sp_profile_get_layer_count(profile);
    bool work = false;
    for (size_t l = 0; l < n; l++) {
        const sp_layer *L = sp_profile_get_layer(profile, l);
        if (L->bwd_ms > 0)
            return false;
        work |= L->fwd_ms > 0;
    }
    return work;
}

/* a stage's first or last layer's name; "" for an empty stage */
static const char *stage_layer_name(const sp_profile *profile, const sp_stage *st, size_t l) {
    return st->layer_count ? sp_profile_get_layer(profile, l)->name : "";
}

/* The bytes that cross the boundary before layer `pos`: the output of the layer before it; none
 * before the first layer (each stage reads its data itself). An empty stage's boundaries both
 * carry the same activation. */
static uint64_t boundary_bytes(const sp_profile *profile, size_t pos) {
    return pos ? sp_profile_get_layer(profile, pos - 1)->activation_bytes : 0;
}

static sp_status copy_names(sp_ctx *ctx, sp_plan *plan, const sp_profile *profile) {
    size_t total = 0;
    for (size_t s = 0; s < plan->n_stages; s++) {
        const sp_stage *st = &plan->stages[s];
        total += strlen(stage_layer_name(profile, st, st->first_layer)) +
                 strlen(stage_layer_name(profile, st, st->last_layer)) + 2;
    }
    plan->names = sp_malloc(total);
    if (!plan->names)
        return sp_oom(ctx, "building a plan");
    char *w = plan->names;
    for (size_t s = 0; s < plan->n_stages; s++) {
        const sp_stage *st = &plan->stages[s];
        const char *a = stage_layer_name(profile, st, st->first_layer);
        const char *b = stage_layer_name(profile, st, st->last_layer);
        size_t la = strlen(a) + 1, lb = strlen(b) + 1;
        memcpy(w, a, la);
        plan->stages[s].first_name = w;
        w += la;
        memcpy(w, b, lb);
        plan->stages[s].last_name = w;
        w += lb;
    }
    return SP_OK;
}

/* Stage k's device is k mod P of the list (or unnamed without one). */
static sp_status name_devices(sp_ctx *ctx, sp_plan *plan, const sp_devices *list) {
    if (list && sp_devices_get_count(list) < plan->summary.stages)
        list = NULL;
    const char **names = list ? sp_mallocarray(plan->n_stages, sizeof *names) : NULL;
    if (list && !names)
        return sp_oom(ctx, "recording the stages' devices");
    for (size_t k = 0; names && k < plan->n_stages; k++)
        names[k] = sp_devices_get_device(list, plan->stages[k].device)->name;
    sp_status st = sp_plan_set_devices(ctx, plan, NULL, names);
    sp_free(names);
    return st;
}

/* Stage k's layers, times (on its device, with recomputation and blocking transfers), bytes
 * and send time; adds its time to its device's ticks. In-flight counts with chunks come later. */
static void fill_stage(const sp_profile *profile, const sp_partition_opts *opts,
                       const double *speed, const size_t *bounds, const bool *recompute,
                       sp_chunk_layout layout, uint32_t k, sp_stage *st, int64_t *device_ticks) {
    uint32_t p = opts->stages, V = opts->chunks > 1 ? opts->chunks : 1, K = p * V;
    bool blocking = opts->links && opts->comm == SP_COMM_BLOCKING;
    uint32_t d = sp_chunk_device(layout, p, k); /* virtual stage k's device */
    st->index = k;
    st->device = d;
    st->chunk = k / p;
    st->first_layer = bounds[k];
    st->layer_count = bounds[k + 1] - bounds[k];
    st->last_layer = st->layer_count ? bounds[k + 1] - 1 : bounds[k];
    int64_t fwd = 0, bwd = 0, wgrad = 0, rc = 0;
    bool have_wgrad = true;
    for (size_t l = bounds[k]; l < bounds[k + 1]; l++) {
        const sp_layer *L = sp_profile_get_layer(profile, l);
        fwd += sp_layer_fwd_ticks(L);
        bwd += sp_layer_bwd_ticks(L);
        bool again = recompute && recompute[l] && L->recompute_ms >= 0;
        if (again)
            rc += sp_ms_to_ticks(L->recompute_ms);
        if (L->wgrad_ms < 0)
            have_wgrad = false;
        else
            wgrad += sp_ms_to_ticks(L->wgrad_ms);
        st->param_bytes += L->param_bytes;
        st->resident_bytes += L->memory_bytes;
        st->saved_bytes += again ? 0 : L->saved_bytes;
    }
    bwd += rc; /* the forward recomputed at the start of the backward */
    if (speed) {
        fwd = sp_speed_scale(fwd, speed[d]);
        bwd = sp_speed_scale(bwd, speed[d]);
        wgrad = sp_speed_scale(wgrad, speed[d]);
        rc = sp_speed_scale(rc, speed[d]);
    }
    st->recompute_ms = sp_ticks_to_ms(rc);
    int64_t comm = 0; /* blocking: each cut's transfer, forward and back, on both sides */
    if (blocking) {
        if (k > 0)
            comm += 2 * sp_ms_to_ticks(sp_links_transfer_ms(opts->links,
                                                            sp_chunk_device(layout, p, k - 1), d,
                                                            boundary_bytes(profile, bounds[k])));
        if (k + 1 < K)
            comm += 2 * sp_ms_to_ticks(
                            sp_links_transfer_ms(opts->links, d, sp_chunk_device(layout, p, k + 1),
                                                 boundary_bytes(profile, bounds[k + 1])));
    }
    st->fwd_ms = sp_ticks_to_ms(fwd);
    st->bwd_ms = sp_ticks_to_ms(bwd);
    st->comm_ms = sp_ticks_to_ms(comm);
    st->time_ms = sp_ticks_to_ms(fwd + bwd + comm);
    /* rounding per layer can put the wgrad sum a tick above the bwd sum */
    st->wgrad_ms = have_wgrad ? sp_ticks_to_ms(wgrad < bwd ? wgrad : bwd) : -1.0;
    st->send_ms = 0;
    if (opts->links && k + 1 < K) {
        uint64_t bytes = boundary_bytes(profile, bounds[k + 1]);
        st->send_ms =
            sp_links_transfer_ms(opts->links, d, sp_chunk_device(layout, p, k + 1), bytes);
    }
    st->inflight = sp_stage_inflight(V > 1 ? SP_SCHEDULE_1F1B : opts->schedule, k, p,
                                     opts->micro_batches); /* chunks: chunk_inflight */
    st->weight_versions = V > 1 ? 1 : sp_stage_weight_versions(opts->schedule, k, p);
    st->replicas = 1;
    st->share_ms = st->time_ms;
    device_ticks[d] += fwd + bwd + comm;
}

/* With chunks: each chunk's in-flight count at its device's memory peak, from the schedule's
 * order */
static sp_status chunk_inflight(sp_ctx *ctx, sp_plan *plan, const sp_partition_opts *opts,
                                sp_chunk_layout layout) {
    uint32_t p = opts->stages, V = opts->chunks;
    uint64_t *saved = sp_mallocarray(V, sizeof *saved);
    uint32_t *counts = sp_mallocarray(V, sizeof *counts);
    sp_status st = saved && counts ? SP_OK : sp_oom(ctx, "building a plan");
    for (uint32_t d = 0; st == SP_OK && d < p; d++) {
        for (uint32_t c = 0; c < V; c++)
            saved[c] = plan->stages[sp_device_chunk_stage(layout, p, d, c)].saved_bytes;
        st = sp_chunk_peak_counts(ctx, opts->schedule, p, V, opts->micro_batches, d, saved, counts);
        for (uint32_t c = 0; st == SP_OK && c < V; c++)
            plan->stages[sp_device_chunk_stage(layout, p, d, c)].inflight = counts[c];
    }
    sp_free(saved);
    sp_free(counts);
    return st;
}

/* every stage's memory: resident + in flight x saved + the weight versions it stashes beyond its
 * own (schedules without flushes), refused beyond 2^53 bytes */
static sp_status stage_memory(sp_ctx *ctx, sp_plan *plan) {
    for (uint32_t k = 0; k < plan->n_stages; k++) {
        sp_stage *st = &plan->stages[k];
        sp_u128 mem = (sp_u128)st->resident_bytes + (sp_u128)st->inflight * st->saved_bytes +
                      (sp_u128)(st->weight_versions > 1 ? st->weight_versions - 1 : 0) *
                          st->param_bytes;       /* stashed */
        if (mem > (sp_u128)SP_MAX_EXACT_INTEGER) /* a plan could not record it exactly */
            return sp_fail(ctx, SP_ERR_LIMIT,
                           "stage %u's memory (%.4g bytes resident + %u micro-batches in flight "
                           "x %.4g bytes saved) is beyond 2^53 bytes, where a plan's byte counts "
                           "stop being exact",
                           k, (double)st->resident_bytes, st->inflight, (double)st->saved_bytes);
        st->memory_bytes = (uint64_t)mem;
    }
    return SP_OK;
}

/* The plan's summary from its devices' loads: bottleneck (a device's load, the sum of its chunks),
 * lower bound, mean, spread, the formula's iteration, transfers */
static void summarize(sp_plan *plan, const sp_profile *profile, const sp_partition_opts *opts,
                      const double *speed, const int64_t *device_ticks) {
    uint32_t p = opts->stages;
    size_t n = sp_profile_get_layer_count(profile);
    int64_t total_ticks = 0, heaviest_layer = 0;
    for (size_t l = 0; l < n; l++) {
        int64_t t = sp_layer_ticks(sp_profile_get_layer(profile, l));
        total_ticks += t;
        if (t > heaviest_layer)
            heaviest_layer = t;
    }
    int64_t max_ticks = 0;
    uint32_t bottleneck_stage = 0;
    for (uint32_t d = 0; d < p; d++)
        if (device_ticks[d] > max_ticks) {
            max_ticks = device_ticks[d];
            bottleneck_stage = d;
        }
    sp_plan_summary *sum = &plan->summary;
    sum->stages = p;
    sum->chunks = opts->chunks > 1 ? opts->chunks : 1;
    sum->comm = opts->links ? opts->comm : SP_COMM_OVERLAP;
    sum->micro_batches = opts->micro_batches;
    sum->profile_sms = sp_profile_get_measured_sms(profile);
    sum->memory_limit_bytes = opts->memory_limit_bytes;
    sum->memory_saved_unknown = sp_profile_saves_nothing(profile);
    sum->forward_only = sp_profile_forward_only(profile);
    sum->objective = opts->objective;
    sum->solver = opts->solver;
    sum->bottleneck_ms = sp_ticks_to_ms(max_ticks);
    sum->bottleneck_stage = bottleneck_stage;
    /* lower bound: the heaviest layer, or the work spread over the devices; with speeds, the
     * heaviest layer on the fastest device and the work spread in proportion to speed */
    double lb = (double)total_ticks / (double)p;
    if (speed) {
        double fastest = 0, speed_sum = 0;
        for (uint32_t d = 0; d < p; d++) {
            fastest = speed[d] > fastest ? speed[d] : fastest;
            speed_sum += speed[d];
        }
        lb = (double)total_ticks / speed_sum;
        heaviest_layer = sp_speed_scale(heaviest_layer, fastest);
    }
    int64_t device_sum = 0;
    for (uint32_t d = 0; d < p; d++)
        device_sum += device_ticks[d];
    /* From here on, the time the devices take where it depends on the plan: speeds, blocking
     * transfers, and recomputed layers (the only way equal-speed devices sum to more) */
    if (speed || (opts->links && opts->comm == SP_COMM_BLOCKING) || device_sum > total_ticks)
        total_ticks = device_sum;
    sum->total_ms = sp_ticks_to_ms(total_ticks);
    if ((double)heaviest_layer > lb)
        lb = (double)heaviest_layer;
    sum->lower_bound_ms = lb / SP_TICKS_PER_MS;
    double mean = (double)total_ticks / (double)p;
    double var = 0;
    for (uint32_t d = 0; d < p; d++) {
        double dv = (double)device_ticks[d] - mean;
        var += dv * dv;
    }
    var /= (double)p;
    sum->mean_ms = mean / SP_TICKS_PER_MS;
    sum->stddev_ms = sqrt(var) / SP_TICKS_PER_MS;
    sum->imbalance = mean > 0 ? (double)max_ticks / mean : 1.0;
    sum->formula_iteration_ms =
        sp_ticks_to_ms(max_ticks) * (double)(opts->micro_batches - 1) + sp_ticks_to_ms(total_ticks);
    for (uint32_t k = 0; k + 1 < plan->n_stages; k++)
        sum->transfer_ms += plan->stages[k].send_ms;
    sum->placement = SP_PLACEMENT_ORDER;
}

/* the plan's names: stages', devices', the recomputed layers, and with `layers` every layer's
 * name and kind */
static sp_status record_names(sp_ctx *ctx, sp_plan *plan, const sp_profile *profile,
                              const sp_partition_opts *opts, const bool *recompute, bool layers) {
    size_t n = sp_profile_get_layer_count(profile);
    sp_status st = copy_names(ctx, plan, profile);
    if (st == SP_OK) /* the stages' device names, when the devices are known */
        st = name_devices(ctx, plan,
                          opts->devices ? opts->devices : sp_profile_get_devices(profile));
    bool any_recompute = false;
    for (size_t l = 0; recompute && l < n; l++)
        any_recompute |= recompute[l];
    if (st == SP_OK && any_recompute) {
        plan->recomputed = sp_mallocarray(n, sizeof *plan->recomputed);
        if (!plan->recomputed)
            return sp_oom(ctx, "building a plan");
        memcpy(plan->recomputed, recompute, n * sizeof *plan->recomputed);
    }
    if (st != SP_OK || !layers)
        return st;
    return sp_plan_set_profile_layers(ctx, plan, profile);
}

static sp_status build(sp_ctx *ctx, const sp_profile *profile, const sp_partition_opts *opts,
                       const double *speed, const size_t *bounds, const bool *recompute,
                       bool layers, sp_plan **out) {
    *out = NULL;
    uint32_t p = opts->stages, V = opts->chunks > 1 ? opts->chunks : 1, K = p * V;
    sp_chunk_layout layout = V > 1 ? sp_schedule_chunk_layout(opts->schedule) : SP_CHUNKS_LOOP;
    sp_plan *plan = sp_calloc(1, sizeof *plan);
    if (!plan)
        return sp_oom(ctx, "building a plan");
    plan->n_stages = K;
    plan->n_layers = sp_profile_get_layer_count(profile);
    plan->stages = sp_calloc(K, sizeof *plan->stages);
    plan->model = sp_strdup(sp_profile_get_model(profile));
    int64_t *device_ticks = sp_calloc(p, sizeof *device_ticks);
    if (!plan->stages || !plan->model || !device_ticks) {
        sp_free(device_ticks);
        sp_plan_destroy(plan);
        return sp_oom(ctx, "building a plan");
    }
    memcpy(plan->profile_sha256, sp_profile_get_sha256(profile), sizeof plan->profile_sha256);
    for (uint32_t k = 0; k < K; k++)
        fill_stage(profile, opts, speed, bounds, recompute, layout, k, &plan->stages[k],
                   device_ticks);
    plan->summary.chunk_layout = layout;
    sp_status st = V > 1 ? chunk_inflight(ctx, plan, opts, layout) : SP_OK;
    if (st == SP_OK)
        st = stage_memory(ctx, plan);
    if (st == SP_OK) {
        summarize(plan, profile, opts, speed, device_ticks);
        st = record_names(ctx, plan, profile, opts, recompute, layers);
    }
    sp_free(device_ticks);
    if (st != SP_OK) {
        sp_plan_destroy(plan);
        return st;
    }
    *out = plan;
    return SP_OK;
}

sp_status sp_plan_build_recompute(sp_ctx *ctx, const sp_profile *profile,
                                  const sp_partition_opts *opts, const double *speed,
                                  const size_t *bounds, const bool *recompute, sp_plan **out) {
    return build(ctx, profile, opts, speed, bounds, recompute, true, out);
}

sp_status sp_plan_build(sp_ctx *ctx, const sp_profile *profile, const sp_partition_opts *opts,
                        const double *speed, const size_t *bounds, sp_plan **out) {
    return build(ctx, profile, opts, speed, bounds, NULL, true, out);
}

sp_status sp_plan_figures(sp_ctx *ctx, const sp_profile *profile, const sp_partition_opts *opts,
                          const double *speed, const size_t *bounds, sp_plan **out) {
    return build(ctx, profile, opts, speed, bounds, NULL, false, out);
}

/* every plan carries what its schedule is predicted to achieve */
sp_status sp_plan_simulate(sp_ctx *ctx, sp_plan *plan, sp_schedule schedule) {
    sp_sim_opts so;
    sp_sim_opts_init(&so);
    so.schedule = schedule;
    so.keep_ops = false;
    sp_sim *sim = NULL;
    sp_status st = sp_simulate_plan(ctx, plan, &so, &sim);
    if (st == SP_OK)
        sp_plan_attach_schedule(plan, sim);
    sp_sim_destroy(sim);
    return st;
}

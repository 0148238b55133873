/* core/plan.c: building a plan from stage boundaries and computing its figures.
 *
 * Every figure is computed here, from the profile and the boundaries alone, so all solvers
 * (exact or baseline) report numbers the same way. Stage time is exact integer nanoseconds
 * summed per layer (sp_layer_ticks), converted to milliseconds at the end. */
#include <math.h>
#include <string.h>

#include "plan_impl.h"

uint32_t sp_stage_inflight(uint32_t s, uint32_t p, uint32_t m) {
    uint32_t k = p - s;
    return k < m ? k : m;
}

void sp_plan_destroy(sp_plan *plan) {
    if (!plan)
        return;
    sp_free(plan->model);
    sp_free(plan->command);
    sp_free(plan->stages);
    sp_free(plan->names);
    sp_free(plan->search);
    sp_free(plan);
}

const sp_plan_summary *sp_plan_get_summary(const sp_plan *plan) {
    return plan ? &plan->summary : NULL;
}
size_t sp_plan_stage_count(const sp_plan *plan) { return plan ? plan->n_stages : 0; }
const sp_stage *sp_plan_stage(const sp_plan *plan, size_t i) {
    return (plan && i < plan->n_stages) ? &plan->stages[i] : NULL;
}
const char *sp_plan_model(const sp_plan *plan) { return plan ? plan->model : ""; }
const sp_mb_point *sp_plan_micro_batch_search(const sp_plan *plan, size_t *count) {
    *count = plan ? plan->n_search : 0;
    return plan ? plan->search : NULL;
}

sp_status sp_plan_set_command(sp_ctx *ctx, sp_plan *plan, const char *command) {
    if (!ctx)
        return SP_ERR_INVALID_ARG;
    sp_ctx_begin(ctx);
    if (!plan || !command)
        return sp_fail(ctx, SP_ERR_INVALID_ARG, "sp_plan_set_command: NULL argument");
    char *c = sp_strdup(command);
    if (!c)
        return sp_oom(ctx, "recording the command");
    sp_free(plan->command);
    plan->command = c;
    return SP_OK;
}

static sp_status copy_names(sp_ctx *ctx, sp_plan *plan, const sp_profile *profile) {
    size_t total = 0;
    for (size_t s = 0; s < plan->n_stages; s++)
        total += strlen(sp_profile_layer(profile, plan->stages[s].first_layer)->name) +
                 strlen(sp_profile_layer(profile, plan->stages[s].last_layer)->name) + 2;
    plan->names = sp_malloc(total);
    if (!plan->names)
        return sp_oom(ctx, "building a plan");
    char *w = plan->names;
    for (size_t s = 0; s < plan->n_stages; s++) {
        const char *a = sp_profile_layer(profile, plan->stages[s].first_layer)->name;
        const char *b = sp_profile_layer(profile, plan->stages[s].last_layer)->name;
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

sp_status sp_plan_build(sp_ctx *ctx, const sp_profile *profile, const sp_partition_opts *opts,
                        const double *speed, const size_t *bounds, sp_plan **out) {
    *out = NULL;
    size_t n = sp_profile_layer_count(profile);
    uint32_t p = opts->stages;
    sp_plan *plan = sp_calloc(1, sizeof *plan);
    if (!plan)
        return sp_oom(ctx, "building a plan");
    plan->n_stages = p;
    plan->n_layers = n;
    plan->stages = sp_calloc(p, sizeof *plan->stages);
    plan->model = sp_strdup(sp_profile_model(profile));
    if (!plan->stages || !plan->model) {
        sp_plan_destroy(plan);
        return sp_oom(ctx, "building a plan");
    }
    memcpy(plan->profile_sha256, sp_profile_sha256(profile), sizeof plan->profile_sha256);

    int64_t total_ticks = 0, max_ticks = 0, heaviest_layer = 0;
    for (size_t l = 0; l < n; l++) {
        int64_t t = sp_layer_ticks(sp_profile_layer(profile, l));
        total_ticks += t;
        if (t > heaviest_layer)
            heaviest_layer = t;
    }
    uint32_t bottleneck_stage = 0;
    for (uint32_t s = 0; s < p; s++) {
        sp_stage *st = &plan->stages[s];
        st->index = s;
        st->device = s;
        st->first_layer = bounds[s];
        st->last_layer = bounds[s + 1] - 1;
        int64_t fwd = 0, bwd = 0, wgrad = 0;
        bool have_wgrad = true;
        for (size_t l = bounds[s]; l < bounds[s + 1]; l++) {
            const sp_layer *L = sp_profile_layer(profile, l);
            fwd += sp_layer_fwd_ticks(L);
            bwd += sp_layer_bwd_ticks(L);
            if (L->wgrad_ms < 0)
                have_wgrad = false;
            else
                wgrad += sp_ms_to_ticks(L->wgrad_ms);
            st->param_bytes += L->param_bytes;
            st->resident_bytes += L->memory_bytes;
            st->saved_bytes += L->saved_bytes;
        }
        if (speed) {
            double sp = speed[s];
            fwd = sp_speed_scale(fwd, sp);
            bwd = sp_speed_scale(bwd, sp);
            wgrad = sp_speed_scale(wgrad, sp);
        }
        int64_t comm = 0; /* blocking: each cut's transfer, forward and back, on both sides */
        if (opts->links && opts->comm == SP_COMM_BLOCKING) {
            if (s > 0)
                comm += 2 * sp_ms_to_ticks(sp_links_transfer_ms(
                                opts->links, s - 1, s,
                                sp_profile_layer(profile, bounds[s] - 1)->activation_bytes));
            if (s + 1 < p)
                comm += 2 * sp_ms_to_ticks(sp_links_transfer_ms(
                                opts->links, s, s + 1,
                                sp_profile_layer(profile, bounds[s + 1] - 1)->activation_bytes));
        }
        st->fwd_ms = sp_ticks_to_ms(fwd);
        st->bwd_ms = sp_ticks_to_ms(bwd);
        st->comm_ms = sp_ticks_to_ms(comm);
        st->time_ms = sp_ticks_to_ms(fwd + bwd + comm);
        /* rounding per layer can put the wgrad sum a tick above the bwd sum */
        st->wgrad_ms = have_wgrad ? sp_ticks_to_ms(wgrad < bwd ? wgrad : bwd) : -1.0;
        st->send_ms = 0;
        if (opts->links && s + 1 < p) {
            uint64_t bytes = sp_profile_layer(profile, bounds[s + 1] - 1)->activation_bytes;
            st->send_ms = sp_links_transfer_ms(opts->links, s, s + 1, bytes);
        }
        st->chunk = 0;
        st->inflight = sp_stage_inflight(s, p, opts->micro_batches);
        sp_u128 mem = (sp_u128)st->resident_bytes + (sp_u128)st->inflight * st->saved_bytes;
        st->memory_bytes = mem > UINT64_MAX ? UINT64_MAX : (uint64_t)mem;
        if (fwd + bwd + comm > max_ticks) {
            max_ticks = fwd + bwd + comm;
            bottleneck_stage = s;
        }
    }
    sp_plan_summary *sum = &plan->summary;
    sum->stages = p;
    sum->chunks = 1;
    sum->comm = opts->links ? opts->comm : SP_COMM_OVERLAP;
    sum->micro_batches = opts->micro_batches;
    sum->memory_limit_bytes = opts->memory_limit_bytes;
    sum->objective = opts->objective;
    sum->solver = opts->solver;
    sum->bottleneck_ms = sp_ticks_to_ms(max_ticks);
    sum->bottleneck_stage = bottleneck_stage;
    /* lower bound: the heaviest layer, or the work spread over the stages; with speeds, the
     * heaviest layer on the fastest device and the work spread in proportion to speed */
    double lb = (double)total_ticks / (double)p;
    if (speed) {
        double fastest = 0, speed_sum = 0;
        for (uint32_t s = 0; s < p; s++) {
            fastest = speed[s] > fastest ? speed[s] : fastest;
            speed_sum += speed[s];
        }
        lb = (double)total_ticks / speed_sum;
        heaviest_layer = sp_speed_scale(heaviest_layer, fastest);
        total_ticks = 0; /* from here on: the time the stages take, which depends on the plan */
        for (uint32_t s = 0; s < p; s++)
            total_ticks += sp_ms_to_ticks(plan->stages[s].time_ms);
    }
    sum->total_ms = sp_ticks_to_ms(total_ticks);
    if ((double)heaviest_layer > lb)
        lb = (double)heaviest_layer;
    sum->lower_bound_ms = lb / SP_TICKS_PER_MS;
    double mean = (double)total_ticks / (double)p;
    double var = 0;
    for (uint32_t s = 0; s < p; s++) {
        double d = plan->stages[s].time_ms * SP_TICKS_PER_MS - mean;
        var += d * d;
    }
    var /= (double)p;
    sum->mean_ms = mean / SP_TICKS_PER_MS;
    sum->stddev_ms = sqrt(var) / SP_TICKS_PER_MS;
    sum->imbalance = mean > 0 ? (double)max_ticks / mean : 1.0;

    sp_status st = copy_names(ctx, plan, profile);
    if (st != SP_OK) {
        sp_plan_destroy(plan);
        return st;
    }
    *out = plan;
    return SP_OK;
}

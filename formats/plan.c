/* formats/plan.c: the plan object (formats/plan_impl.h): its getters, what readers and the
 * partitioner record in it, and its release. Built from boundaries in partitioner/model/cost.c,
 * read in formats/plan_read.c, written in formats/plan_write.c. */
#include <math.h>
#include <string.h>

#include "plan_impl.h"
#include "profile_impl.h"

void sp_plan_destroy(sp_plan *plan) {
    if (!plan)
        return;
    sp_free(plan->model);
    sp_free(plan->command);
    sp_free(plan->stages);
    sp_free(plan->names);
    sp_free(plan->search);
    sp_free(plan->recomputed);
    sp_free(plan->layer_names);
    sp_free(plan->layer_kinds);
    sp_free(plan->layer_pool);
    sp_free(plan->device_pool);
    sp_free(plan);
}

sp_status sp_plan_set_devices(sp_ctx *ctx, sp_plan *plan, const uint32_t *device,
                              const char *const *names) {
    size_t bytes = 1;
    for (size_t k = 0; names && k < plan->n_stages; k++)
        bytes += strlen(names[k]) + 1;
    char *pool = sp_malloc(bytes);
    if (!pool)
        return sp_oom(ctx, "recording the stages' devices");
    sp_free(plan->device_pool);
    plan->device_pool = pool;
    *pool++ = '\0'; /* the "" of stages without a name */
    for (size_t k = 0; k < plan->n_stages; k++) {
        sp_stage *st = &plan->stages[k];
        st->device = device ? device[k] : st->device;
        st->device_name = plan->device_pool;
        if (names) {
            size_t len = strlen(names[k]);
            memcpy(pool, names[k], len + 1);
            st->device_name = pool;
            pool += len + 1;
        }
    }
    return SP_OK;
}

const sp_plan_summary *sp_plan_get_summary(const sp_plan *plan) {
    return plan ? &plan->summary : NULL;
}
size_t sp_plan_get_stage_count(const sp_plan *plan) {
    return plan ? plan->n_stages : 0;
}
const sp_stage *sp_plan_get_stage(const sp_plan *plan, size_t i) {
    return (plan && i < plan->n_stages) ? &plan->stages[i] : NULL;
}
const char *sp_plan_get_model(const sp_plan *plan) {
    return plan ? plan->model : "";
}
size_t sp_plan_get_layer_count(const sp_plan *plan) {
    return plan ? plan->n_layers : 0;
}
const char *sp_plan_get_layer_name(const sp_plan *plan, size_t i) {
    return plan && plan->layer_names && i < plan->n_layers ? plan->layer_names[i] : NULL;
}
const char *sp_plan_get_layer_kind(const sp_plan *plan, size_t i) {
    return plan && plan->layer_kinds && i < plan->n_layers ? plan->layer_kinds[i] : NULL;
}

sp_status sp_plan_set_layers(sp_ctx *ctx, sp_plan *plan, size_t n, const char *const *names,
                             const char *const *kinds) {
    size_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += strlen(names[i]) + strlen(kinds[i]) + 2;
    plan->layer_names = sp_mallocarray(n, sizeof *plan->layer_names);
    plan->layer_kinds = sp_mallocarray(n, sizeof *plan->layer_kinds);
    plan->layer_pool = sp_malloc(total ? total : 1);
    if (!plan->layer_names || !plan->layer_kinds || !plan->layer_pool)
        return sp_oom(ctx, "recording layer names");
    plan->layer_pool_len = total;
    char *w = plan->layer_pool;
    for (size_t i = 0; i < n; i++) {
        size_t a = strlen(names[i]) + 1, b = strlen(kinds[i]) + 1;
        memcpy(w, names[i], a);
        plan->layer_names[i] = w;
        w += a;
        memcpy(w, kinds[i], b);
        plan->layer_kinds[i] = w;
        w += b;
    }
    return SP_OK;
}

sp_status sp_plan_set_profile_layers(sp_ctx *ctx, sp_plan *plan, const sp_profile *profile) {
    size_t n = sp_profile_get_layer_count(profile), len = 0;
    const char *pool = sp_profile_layer_pool(profile, &len);
    plan->layer_names = sp_mallocarray(n, sizeof *plan->layer_names);
    plan->layer_kinds = sp_mallocarray(n, sizeof *plan->layer_kinds);
    plan->layer_pool = sp_malloc(len ? len : 1);
    if (!plan->layer_names || !plan->layer_kinds || !plan->layer_pool)
        return sp_oom(ctx, "recording layer names");
    if (len)
        memcpy(plan->layer_pool, pool, len);
    plan->layer_pool_len = len;
    for (size_t i = 0; i < n; i++) { /* where each lies in the profile's block, in the plan's */
        const sp_layer *L = sp_profile_get_layer(profile, i);
        plan->layer_names[i] = plan->layer_pool + (L->name - pool);
        plan->layer_kinds[i] = plan->layer_pool + (L->kind - pool);
    }
    return SP_OK;
}

const sp_mb_point *sp_plan_get_micro_batch_search(const sp_plan *plan, size_t *count) {
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

bool sp_plan_get_layer_recomputed(const sp_plan *plan, size_t i) {
    return plan && plan->recomputed && i < plan->n_layers && plan->recomputed[i];
}

uint32_t sp_chunk_device(sp_chunk_layout layout, uint32_t P, uint32_t k) {
    if (P == 0)
        return 0;
    if (layout == SP_CHUNKS_V && k < 2 * P)
        return k < P ? k : 2 * P - 1 - k;
    return k % P;
}

void sp_plan_recompute_summary(sp_plan *plan) {
    sp_plan_summary *m = &plan->summary;
    double total = 0, mx = -1;
    m->transfer_ms = 0;
    for (size_t s = 0; s < plan->n_stages; s++) {
        /* replicated stages: what bounds throughput is each one's share */
        double t = m->gpus ? plan->stages[s].share_ms : plan->stages[s].time_ms;
        total += t;
        m->transfer_ms += plan->stages[s].send_ms;
        if (t > mx) {
            mx = t;
            m->bottleneck_stage = (uint32_t)s;
        }
    }
    /* per device: chunks of one device add up */
    double mean = total / (double)m->stages, var = 0;
    double dev_max = 0;
    for (uint32_t d = 0; d < m->stages; d++) {
        double t = 0;
        for (size_t s = 0; s < plan->n_stages; s++)
            if (sp_chunk_device(m->chunk_layout, m->stages, (uint32_t)s) == d)
                t += m->gpus ? plan->stages[s].share_ms : plan->stages[s].time_ms;
        var += (t - mean) * (t - mean);
        dev_max = fmax(dev_max, t);
    }
    m->bottleneck_ms = m->chunks > 1 ? dev_max : mx;
    m->mean_ms = mean;
    m->stddev_ms = sqrt(var / (double)m->stages);
    m->imbalance = mean > 0 ? m->bottleneck_ms / mean : 1.0;
}

/* partitioner/model/plan_memory.c: a built plan against the memory limits: refused naming the
 * device that does not fit, and recomputation undone where a stage fits without it. */
#include <stdio.h>

#include "cost.h"
#include "partition_impl.h"
#include "sim_impl.h"

/* "Within the limit" is never said of a figure that was not computed: without saved_bytes the
 * activations a stage keeps for backward (usually most of its memory in training) are unknown. */
void sp_warn_resident_only(sp_ctx *ctx, const sp_profile *profile, bool limited) {
    if (limited && sp_profile_saves_nothing(profile))
        sp_warn(ctx, "the profile's layers record no saved_bytes: the memory limits were checked "
                     "against resident memory only (parameters, memory_bytes); the activations "
                     "each stage keeps for backward are not counted (profile with stagepart "
                     "profile, or add saved_bytes)");
}

void sp_warn_profile_caveats(sp_ctx *ctx, const sp_profile *profile, sp_schedule schedule) {
    if (sp_schedule_splits_backward(schedule) && sp_profile_get_wgrad_estimated(profile))
        sp_warn(ctx,
                "the profile's wgrad_ms are estimated, not measured (an import's bwd_ms / "
                "2: no trace separates weight-gradient kernels): %s's W steps, and the "
                "plan's balance under it, are as good as that estimate",
                sp_schedule_name(schedule));
    if (sp_profile_forward_only(profile))
        sp_warn(ctx, "the profile has no backward times (every layer's bwd_ms is 0: an inference "
                     "trace, or a forward-only one): the plan balances forward passes, not "
                     "training steps; for training, trace a step with its backward");
}

/* A baseline's plan must still satisfy the memory limits to be usable (per device: the sum of
 * its chunks, in a loop or V-shape). */
/* The first device over its memory cap (UINT32_MAX: none), with what it needs and its cap. */
static uint32_t device_over(const sp_plan *plan, const sp_partition_opts *o,
                            const struct sp_stage_devices *d, uint64_t *need_out,
                            uint64_t *cap_out) {
    for (uint32_t dev = 0; dev < o->stages; dev++) {
        uint64_t cap = o->memory_limit_bytes, dm = d->memory ? d->memory[dev] : 0;
        if (dm && (!cap || dm < cap))
            cap = dm;
        uint64_t need = 0; /* its chunks' memory: in a loop or V-shape, as the plan places them */
        for (size_t k = 0; k < plan->n_stages; k++)
            if (sp_chunk_device(plan->summary.chunk_layout, o->stages, (uint32_t)k) == dev)
                need += plan->stages[k].memory_bytes;
        if (cap && need > cap) {
            *need_out = need;
            *cap_out = cap;
            return dev;
        }
    }
    return UINT32_MAX;
}

bool sp_plan_fits_memory(const sp_plan *plan, const sp_partition_opts *o,
                         const struct sp_stage_devices *d) {
    uint64_t need, cap;
    return device_over(plan, o, d, &need, &cap) == UINT32_MAX;
}

sp_status sp_check_plan_memory(sp_ctx *ctx, const sp_plan *plan, const sp_partition_opts *o,
                               const struct sp_stage_devices *d) {
    uint64_t need = 0, cap = 0, resident = 0, saved_held = 0;
    uint32_t dev = device_over(plan, o, d, &need, &cap);
    if (dev == UINT32_MAX)
        return SP_OK;
    for (size_t k = 0; k < plan->n_stages; k++) {
        if (sp_chunk_device(plan->summary.chunk_layout, o->stages, (uint32_t)k) != dev)
            continue;
        resident += plan->stages[k].resident_bytes;
        saved_held += plan->stages[k].memory_bytes - plan->stages[k].resident_bytes;
    }
    char nb[16], lim[16];
    return sp_fail(ctx, SP_ERR_INFEASIBLE,
                   "the %s split does not fit the memory limit: %s %u needs %s (resident %llu + "
                   "saved activations %llu bytes), the limit is %s%s",
                   sp_solver_name(o->solver), o->chunks > 1 ? "device" : "stage", dev,
                   sp_format_bytes(need, nb, sizeof nb), (unsigned long long)resident,
                   (unsigned long long)saved_held, sp_format_bytes(cap, lim, sizeof lim),
                   o->chunks > 1 ? ""
                                 : "; --solver dp finds a plan within the limit when one exists");
}

/* Keep recomputation only where memory needs it: the program may recompute a layer it need not
 * (at equal bottleneck); undoing that only shortens its stage. Layers with the longest
 * recomputation are undone first. c gives each stage's memory cap and in-flight count. */
void sp_trim_recompute(const sp_profile *profile, const struct sp_chain *c, const size_t *bounds,
                       bool *recompute) {
    for (uint32_t k = 0; recompute && k < c->p; k++) {
        size_t a = bounds[k], e = bounds[k + 1];
        uint64_t cap = c->cap[k];
        uint64_t mem = 0, saved = 0, stash = c->stash ? c->stash[k] : 0;
        for (size_t l = a; l < e; l++) {
            mem += sp_profile_get_layer(profile, l)->memory_bytes +
                   stash * sp_profile_get_layer(profile, l)->param_bytes; /* stashed versions */
            saved += recompute[l] ? 0 : sp_profile_get_layer(profile, l)->saved_bytes;
        }
        for (;;) {
            size_t best = SIZE_MAX;
            for (size_t l = a; l < e; l++) {
                const sp_layer *L = sp_profile_get_layer(profile, l);
                sp_u128 need = (sp_u128)mem + (sp_u128)c->inflight[k] * (saved + L->saved_bytes);
                if (recompute[l] && (!cap || need <= cap) &&
                    (best == SIZE_MAX ||
                     L->recompute_ms > sp_profile_get_layer(profile, best)->recompute_ms))
                    best = l;
            }
            if (best == SIZE_MAX)
                break;
            recompute[best] = false;
            saved += sp_profile_get_layer(profile, best)->saved_bytes;
        }
    }
}

/* partitioner/empty_stages.c: plans for more stages than the profile has places to cut
 * (--allow-empty-stages). Megatron-LM runs a stage that holds no layer; a user whose job has more
 * pipeline ranks than the model has useful cuts gets the best plan on the stages that can hold
 * layers, with the others empty.
 *
 * The empty stages go first. Under 1F1B (and the schedules counted as it) a stage's in-flight
 * micro-batches depend only on how many stages follow it, min(P - s, M), so the k-th stage
 * holding layers, with all empty stages before it, keeps exactly what it keeps in a pipeline of
 * the non-empty stages alone: the memory limits the solver met still hold, and no other placement
 * of the empty stages keeps less. GPipe keeps M everywhere, so nothing changes either. ZB-H1
 * keeps min(P, M) on every stage, more than the shorter pipeline's min(P', M): the full plan's
 * memory is checked again, and a stage that no longer fits makes it infeasible. */
#include <string.h>

#include "cost.h"
#include "partition_impl.h"

uint32_t sp_stages_with_layers(const sp_profile *profile, const sp_partition_opts *o) {
    if (!o->allow_empty_stages || (o->solver == SP_SOLVER_DP && o->chunks > 1 &&
                                   sp_schedule_chunk_layout(o->schedule) == SP_CHUNKS_LOOP))
        return o->stages; /* loop-placed chunks: the interleaved search places empty ones */
    size_t n = sp_profile_get_layer_count(profile), places = 0;
    for (size_t l = 0; l + 1 < n && places + 1 < o->stages; l++)
        places += sp_cut_allowed(profile, l);
    return places + 1 < o->stages ? (uint32_t)places + 1 : o->stages;
}

sp_status sp_plan_with_empty_stages(sp_ctx *ctx, const sp_profile *profile,
                                    const sp_partition_opts *o, const struct sp_stage_devices *d,
                                    const sp_plan *solved, sp_plan **out) {
    *out = NULL;
    uint32_t P = o->stages, filled = (uint32_t)solved->n_stages, empty = P - filled;
    size_t *bounds = sp_mallocarray((size_t)P + 1, sizeof *bounds);
    if (!bounds)
        return sp_oom(ctx, "placing empty stages");
    for (uint32_t s = 0; s < empty; s++)
        bounds[s] = 0;
    for (uint32_t s = 0; s < filled; s++)
        bounds[empty + s] = solved->stages[s].first_layer;
    bounds[P] = sp_profile_get_layer_count(profile);
    sp_partition_opts full = *o;
    full.micro_batches = solved->summary.micro_batches; /* as chosen, with --micro-batches auto */
    sp_plan *plan = NULL;
    sp_status st =
        sp_plan_build_recompute(ctx, profile, &full, d->speed, bounds, solved->recomputed, &plan);
    sp_free(bounds);
    if (st == SP_OK)
        st = sp_check_plan_memory(ctx, plan, &full, d); /* fails only under zb-h1 */
    if (st == SP_OK) {
        const sp_plan_summary *from = &solved->summary;
        sp_plan_summary *m = &plan->summary;
        /* what the solver proved among plans with `filled` stages holding layers holds for P
         * stages: no plan of P stages has more */
        m->optimal = from->optimal;
        m->guarantee = from->guarantee;
        m->solve_ms = from->solve_ms;
        m->even_split_bottleneck_ms = from->even_split_bottleneck_ms;
        m->target_efficiency = from->target_efficiency;
        m->mip_gap = from->mip_gap;
        m->best_bound_ms = from->best_bound_ms;
        m->objective_ms = from->objective_ms;
        m->solver_status = from->solver_status;
        m->nodes = from->nodes;
        m->free_binaries = from->free_binaries;
        st = sp_plan_simulate(ctx, plan, o->schedule);
    }
    if (st != SP_OK) {
        sp_plan_destroy(plan);
        return st;
    }
    *out = plan;
    return SP_OK;
}

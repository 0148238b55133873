/* partitioner/solve_placed.c: --placement search, the GLPK program choosing each stage's
 * device, and the plan figured on the devices it chose. */
#include <string.h>

#include "chunk_memory.h"
#include "partition_impl.h"
#include "placement.h"

/* --placement search: the program picks a class of interchangeable devices for each stage; the
 * stages then take the lowest-numbered free device of their class, and the plan is figured on
 * those devices (and the links between them) in stage order. */
sp_status sp_plan_placed(sp_ctx *ctx, const sp_profile *profile, const sp_partition_opts *o,
                         const struct sp_stage_devices *d, sp_plan **out) {
    *out = NULL;
    size_t n_layers = sp_profile_get_layer_count(profile);
    struct sp_placement_classes pc;
    sp_status st = sp_placement_classes_init(ctx, profile, d->list, o->links, o->stages, &pc);
    if (st != SP_OK)
        return st;
    uint32_t K = o->stages * o->chunks;
    size_t *bounds = sp_mallocarray((size_t)K + 1, sizeof *bounds);
    size_t *device = sp_mallocarray(o->stages, sizeof *device);
    bool *recompute = o->recompute ? sp_calloc(n_layers, sizeof *recompute) : NULL;
    struct sp_ilp_result ilp = {0};
    sp_devices *chosen = NULL;
    sp_links *chosen_links = NULL;
    struct sp_stage_devices d2 = {0};
    if (!bounds || !device || (o->recompute && !recompute))
        st = sp_oom(ctx, "placing stages");
    double t0 = sp_now_ms();
    if (st == SP_OK)
        st = sp_solve_ilp(ctx, profile, o, d, bounds, recompute, &pc, !o->ilp_cold, &ilp);
    double solve_ms = sp_now_ms() - t0;
    if (st == SP_OK)
        sp_placement_devices(&pc, ilp.stage_class, o->stages, device);
    if (st == SP_OK)
        st = sp_placement_select(ctx, &pc, d->list, o->links, device, o->stages, &chosen,
                                 &chosen_links);
    sp_partition_opts o2 = *o;
    o2.devices = chosen;
    o2.links = chosen_links;
    o2.placement = SP_PLACEMENT_ORDER;
    if (st == SP_OK)
        st = sp_stage_devices_init(ctx, profile, &o2, &d2);
    if (st == SP_OK && recompute && o->chunks > 1) { /* trimmed against the chosen devices */
        struct sp_chunk_memory cm;
        st = sp_chunk_memory_init(ctx, o->schedule, o->stages, o->chunks, o->micro_batches,
                                  o->memory_limit_bytes, d2.memory, &cm);
        if (st == SP_OK)
            sp_chunk_memory_trim(&cm, profile, bounds, recompute);
        sp_chunk_memory_release(&cm);
    } else if (st == SP_OK && recompute) {
        struct sp_chain c;
        st = sp_chain_for_opts(ctx, &c, profile, &o2, &d2);
        if (st == SP_OK) {
            sp_trim_recompute(profile, &c, bounds, recompute);
            sp_chain_release(&c);
        }
    }
    sp_plan *plan = NULL;
    if (st == SP_OK)
        st = sp_plan_finish(ctx, profile, &o2, &d2, bounds, recompute, &ilp, solve_ms, &plan);
    if (st == SP_OK)
        st = sp_record_placement(ctx, plan, d->list, device);
    sp_stage_devices_release(&d2);
    sp_devices_destroy(chosen);
    sp_links_destroy(chosen_links);
    sp_free(ilp.bounds);
    sp_free(ilp.recompute);
    sp_free(ilp.stage_class);
    sp_free(bounds);
    sp_free(device);
    sp_free(recompute);
    sp_placement_classes_release(&pc);
    if (st != SP_OK) {
        sp_plan_destroy(plan);
        if (!*sp_ctx_get_errmsg(ctx))
            sp_fail(ctx, st, "%s", sp_strerror(st));
        return st;
    }
    *out = plan;
    return SP_OK;
}

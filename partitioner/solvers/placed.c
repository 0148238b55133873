/* partitioner/solvers/placed.c: --placement search, the GLPK program choosing each stage's
 * device. The solution names the devices chosen (and the links between them) in stage order;
 * the plan is figured on them (plan_finish.c). */
#include <string.h>

#include "chunk_memory.h"
#include "partition_impl.h"
#include "placement.h"

/* recomputation the chosen devices' memory does not need, dropped */
static sp_status trim_on_chosen(sp_ctx *ctx, const struct sp_problem *pb, struct sp_solution *sol) {
    const sp_partition_opts *o = pb->o;
    sp_partition_opts o2 = *o;
    o2.devices = sol->devices;
    o2.links = sol->links;
    o2.placement = SP_PLACEMENT_ORDER;
    struct sp_stage_devices d2;
    sp_status st = sp_stage_devices_init(ctx, pb->profile, &o2, &d2);
    if (st == SP_OK && o->chunks > 1) {
        struct sp_chunk_memory cm;
        st = sp_chunk_memory_init(ctx, o->schedule, o->stages, o->chunks, o->micro_batches,
                                  o->memory_limit_bytes, d2.memory, &cm);
        if (st == SP_OK)
            sp_chunk_memory_trim(&cm, pb->profile, sol->bounds, sol->recompute);
        sp_chunk_memory_release(&cm);
    } else if (st == SP_OK) {
        struct sp_chain c;
        st = sp_chain_for_opts(ctx, &c, pb->profile, pb->chain, &o2, &d2);
        if (st == SP_OK) {
            sp_trim_recompute(pb->profile, &c, sol->bounds, sol->recompute);
            sp_chain_release(&c);
        }
    }
    sp_stage_devices_release(&d2);
    return st;
}

/* The program picks a class of interchangeable devices for each stage; the stages then take the
 * lowest-numbered free device of their class. */
sp_status sp_solve_placed(sp_ctx *ctx, const struct sp_problem *pb, struct sp_solution *sol) {
    const sp_partition_opts *o = pb->o;
    struct sp_placement_classes pc;
    sp_status st =
        sp_placement_classes_init(ctx, pb->profile, pb->d->list, o->links, o->stages, &pc);
    if (st != SP_OK)
        return st;
    if (!(sol->device = sp_mallocarray(o->stages, sizeof *sol->device)))
        st = sp_oom(ctx, "placing stages");
    if (st == SP_OK)
        st = sp_ilp_program(ctx, pb, &pc, sol);
    sol->guarantee = sol->search.optimal ? SP_GUARANTEE_PROVEN : SP_GUARANTEE_BOUNDED;
    if (st == SP_OK)
        sp_placement_devices(&pc, sol->search.stage_class, o->stages, sol->device);
    if (st == SP_OK)
        st = sp_placement_select(ctx, &pc, pb->d->list, o->links, sol->device, o->stages,
                                 &sol->devices, &sol->links);
    if (st == SP_OK && sol->recompute)
        st = trim_on_chosen(ctx, pb, sol);
    sp_placement_classes_release(&pc);
    return st;
}

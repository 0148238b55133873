/* simulate/plan_ops.c: the op list each device of a plan runs, as the simulator orders them:
 * what `stagepart run` executes for a plan whose stages are replicated (every replica a
 * device, its order the one replicas_policy.c plays out on the plan's times). */
#include "sim_impl.h"

sp_status sp_plan_device_ops(sp_ctx *ctx, const sp_plan *plan, sp_schedule schedule, uint32_t M,
                             struct sp_sched_op **ops, size_t **offset, uint32_t *devices) {
    *ops = NULL;
    *offset = NULL;
    sp_sim_opts so;
    sp_sim_opts_init(&so);
    so.schedule = schedule;
    so.micro_batches = M;
    so.keep_ops = true;
    sp_sim *sim = NULL;
    sp_status st = sp_simulate_plan(ctx, plan, &so, &sim);
    if (st != SP_OK)
        return st;
    uint32_t D = sim->summary.devices;
    *ops = sp_mallocarray(sim->n_ops ? sim->n_ops : 1, sizeof **ops);
    *offset = sp_calloc((size_t)D + 1, sizeof **offset);
    if (!*ops || !*offset) {
        sp_free(*ops);
        sp_free(*offset);
        *ops = NULL;
        *offset = NULL;
        sp_sim_destroy(sim);
        return sp_oom(ctx, "the run's op lists");
    }
    /* the simulator keeps ops device by device, each device's in its order */
    for (size_t i = 0; i < sim->n_ops; i++) {
        const sp_sim_op *o = &sim->ops[i];
        (*ops)[i] =
            (struct sp_sched_op){o->stage, o->micro_batch, o->kind, o->stage2, o->micro_batch2};
        (*offset)[o->device + 1]++;
    }
    for (uint32_t d = 0; d < D; d++)
        (*offset)[d + 1] += (*offset)[d];
    *devices = D;
    sp_sim_destroy(sim);
    return SP_OK;
}

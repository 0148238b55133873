/* simulate/replicas.c: replicated stages' op lists. A stage with r replicas takes its
 * micro-batches round-robin, as PipeDream's replicated stages do: replica j gets micro-batches
 * j, j + r, j + 2r, ... Under gpipe each replica runs the schedule's order on its own ones
 * (all forwards, then all backwards); under the 1F1B schedules it runs as PipeDream's workers
 * do (replicas_policy.c). Every replica is a device of the simulation. */
#include "sim_impl.h"

/* replica j of stage s: its count of the M micro-batches */
static uint32_t replica_count(uint32_t M, uint32_t r, uint32_t j) {
    return M / r + (j < M % r ? 1 : 0);
}

/* stage s's gpipe order for n micro-batches (the same on every stage: a one-stage pipeline's),
 * written to out (room for 2n ops) with micro-batch i renamed j + i r; the count written, or
 * SIZE_MAX with ctx's message */
static size_t replica_ops(sp_ctx *ctx, const struct sp_pipeline *pl, uint32_t s, uint32_t n,
                          uint32_t j, struct sp_sched_op *out) {
    struct sp_pipeline one = *pl;
    one.P = 1;
    one.M = n;
    one.replicas = NULL;
    one.allreduce = NULL;
    struct sp_sched_op *ops = NULL;
    size_t *offset = NULL;
    if (sp_schedule_build(ctx, &one, &ops, &offset) != SP_OK)
        return SIZE_MAX;
    uint32_t r = pl->replicas[s];
    size_t count = offset[1];
    for (size_t i = 0; i < count; i++) {
        out[i] = ops[i];
        out[i].stage = s;
        out[i].mb = j + out[i].mb * r;
        out[i].mb2 = j + out[i].mb2 * r;
    }
    sp_free(ops);
    sp_free(offset);
    return count;
}

sp_status sp_schedule_build_devices(sp_ctx *ctx, const struct sp_pipeline *pl,
                                    struct sp_sched_op **ops, size_t **offset) {
    *ops = NULL;
    *offset = NULL;
    if (!pl->replicas)
        return sp_schedule_build(ctx, pl, ops, offset);
    if (pl->V != 1)
        return sp_fail(ctx, SP_ERR_INVALID_ARG, "replicated stages run one chunk per device");
    uint32_t P = pl->P, D = sp_pipeline_devices(pl);
    /* every op of every stage: F, B (or I and W) per micro-batch */
    size_t room = (size_t)3 * pl->M * P;
    if ((uint64_t)pl->M * 3 * P > SP_SIM_MAX_OPS)
        return sp_fail(ctx, SP_ERR_LIMIT, "%llu ops to simulate, more than %u",
                       (unsigned long long)pl->M * 3 * P, SP_SIM_MAX_OPS);
    *ops = sp_mallocarray(room ? room : 1, sizeof **ops);
    *offset = sp_mallocarray((size_t)D + 1, sizeof **offset);
    if (!*ops || !*offset) {
        sp_free(*ops);
        sp_free(*offset);
        *ops = NULL;
        *offset = NULL;
        return sp_oom(ctx, "dealing micro-batches to replicas");
    }
    if (pl->schedule != SP_SCHEDULE_GPIPE) { /* the 1F1B schedules: as the workers' policy runs */
        sp_status st = pl->f && pl->b && pl->send
                           ? sp_replica_policy_lists(ctx, pl, *ops, *offset)
                           : sp_fail(ctx, SP_ERR_INVALID_ARG,
                                     "replicated stages are ordered on their times: none given");
        if (st != SP_OK) {
            sp_free(*ops);
            sp_free(*offset);
            *ops = NULL;
            *offset = NULL;
        }
        return st;
    }
    size_t used = 0;
    uint32_t d = 0;
    for (uint32_t s = 0; s < P; s++)
        for (uint32_t j = 0; j < pl->replicas[s]; j++, d++) {
            (*offset)[d] = used;
            uint32_t n = replica_count(pl->M, pl->replicas[s], j);
            size_t got = n ? replica_ops(ctx, pl, s, n, j, *ops + used) : 0;
            if (got == SIZE_MAX) {
                sp_free(*ops);
                sp_free(*offset);
                *ops = NULL;
                *offset = NULL;
                return ctx->status;
            }
            used += got;
        }
    (*offset)[D] = used;
    return SP_OK;
}

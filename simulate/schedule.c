/* simulate/schedule.c: the order in which each device runs its ops, per schedule
 * (docs/schedules.md §2; the same code drives the simulator and, later, the runtime).
 *
 *   gpipe        F0 .. F(M-1), then B0 .. B(M-1)
 *   1f1b         warm-up min(P-1-s, M) forwards, then one forward and one backward in turn,
 *                then the remaining backwards
 *   zb-h1        the 1F1B order with the backward split into B and W; on stage s a W runs
 *                after a B once more than s Bs are waiting for their W; the rest end the list
 *   interleaved  Megatron's order: device d holds chunks c = 0..V-1 (virtual stage c*P + d);
 *                forwards go in groups of P micro-batches per chunk, chunk 0 first; backwards
 *                likewise with the chunk order reversed; warm-up min(2(P-d-1) + (V-1)P, M*V)
 *                chunk forwards, then alternate, then cool down. M must be a multiple of P. */
#include <string.h>

#include "sim_impl.h"

static void push(struct sp_sched_op *ops, size_t *n, char kind, uint32_t mb, uint32_t stage) {
    ops[*n] = (struct sp_sched_op){stage, mb, kind};
    (*n)++;
}

/* Megatron's interleaved op i of a device: micro-batch and chunk (group size P). */
static void interleaved_op(uint32_t i, uint32_t P, uint32_t V, bool forward, uint32_t *mb,
                           uint32_t *chunk) {
    uint32_t in_group = i % (P * V);
    uint32_t c = in_group / P;
    *chunk = forward ? c : V - 1 - c;
    *mb = (i / (P * V)) * P + in_group % P;
}

static void device_ops(const struct sp_pipeline *pl, uint32_t d, struct sp_sched_op *ops,
                       size_t *n) {
    uint32_t P = pl->P, M = pl->M, V = pl->V;
    switch (pl->schedule) {
    case SP_SCHEDULE_GPIPE:
        for (uint32_t j = 0; j < M; j++)
            push(ops, n, 'F', j, d);
        for (uint32_t j = 0; j < M; j++)
            push(ops, n, 'B', j, d);
        break;
    case SP_SCHEDULE_1F1B:
    case SP_SCHEDULE_ZB_H1: {
        bool split = pl->schedule == SP_SCHEDULE_ZB_H1;
        uint32_t warm = P - 1 - d < M ? P - 1 - d : M;
        uint32_t nf = 0, nb = 0, nw = 0;
        for (; nf < warm; nf++)
            push(ops, n, 'F', nf, d);
        while (nb < M) {
            if (nf < M)
                push(ops, n, 'F', nf++, d);
            push(ops, n, 'B', nb++, d);
            if (split && nb - nw > d)
                push(ops, n, 'W', nw++, d);
        }
        while (split && nw < M)
            push(ops, n, 'W', nw++, d);
        break;
    }
    case SP_SCHEDULE_INTERLEAVED: {
        uint32_t total = M * V;
        uint32_t warm = 2 * (P - d - 1) + (V - 1) * P;
        if (warm > total)
            warm = total;
        uint32_t nf = 0, nb = 0, mb, c;
        for (; nf < warm; nf++) {
            interleaved_op(nf, P, V, true, &mb, &c);
            push(ops, n, 'F', mb, c * P + d);
        }
        while (nb < total) {
            if (nf < total) {
                interleaved_op(nf++, P, V, true, &mb, &c);
                push(ops, n, 'F', mb, c * P + d);
            }
            interleaved_op(nb++, P, V, false, &mb, &c);
            push(ops, n, 'B', mb, c * P + d);
        }
        break;
    }
    }
}

sp_status sp_schedule_build(sp_ctx *ctx, const struct sp_pipeline *pl, struct sp_sched_op **ops,
                            size_t **offset) {
    *ops = NULL;
    *offset = NULL;
    uint32_t P = pl->P, V = pl->V, M = pl->M, K = P * V;
    if (pl->schedule == SP_SCHEDULE_INTERLEAVED) {
        if (V < 2)
            return sp_fail(ctx, SP_ERR_INVALID_ARG,
                           "the interleaved schedule needs a plan made with --chunks V (V >= 2); "
                           "this plan has 1 chunk per device");
        if (M % P)
            return sp_fail(ctx, SP_ERR_INVALID_ARG,
                           "the interleaved schedule needs the micro-batch count to be a "
                           "multiple of the pipeline stages: M = %u, P = %u",
                           M, P);
    } else if (V != 1) {
        return sp_fail(ctx, SP_ERR_INVALID_ARG,
                       "the plan has %u chunks per device; simulate it with --schedule "
                       "interleaved",
                       V);
    }
    if (pl->schedule == SP_SCHEDULE_ZB_H1) {
        for (uint32_t k = 0; k < K; k++)
            if (!pl->w || pl->w[k] < 0)
                return sp_fail(ctx, SP_ERR_INVALID_ARG,
                               "zb-h1 needs wgrad_ms (the weight-gradient part of the backward) "
                               "on every stage; stage %u has none: add wgrad_ms to every layer "
                               "of the profile and partition again",
                               k);
    }
    uint64_t per_device = (uint64_t)M * V * (pl->schedule == SP_SCHEDULE_ZB_H1 ? 3 : 2);
    if (per_device * P > SP_SIM_MAX_OPS)
        return sp_fail(ctx, SP_ERR_LIMIT,
                       "simulating %llu ops is more than the limit of %u; use fewer "
                       "micro-batches or stages",
                       (unsigned long long)(per_device * P), SP_SIM_MAX_OPS);
    *ops = sp_mallocarray((size_t)(per_device * P), sizeof **ops);
    *offset = sp_mallocarray((size_t)P + 1, sizeof **offset);
    if (!*ops || !*offset) {
        sp_free(*ops);
        sp_free(*offset);
        *ops = NULL;
        *offset = NULL;
        return sp_oom(ctx, "building the schedule");
    }
    size_t n = 0;
    for (uint32_t d = 0; d < P; d++) {
        (*offset)[d] = n;
        device_ops(pl, d, *ops, &n);
    }
    (*offset)[P] = n;
    return SP_OK;
}

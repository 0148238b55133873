/* simulate/schedule.c: the order in which each device runs its ops, per schedule
 * (docs/schedules.md, "Op orders"; the same lists drive the simulator, the runtime and the
 * torch schedule export).
 *
 *   gpipe        F0 .. F(M-1), then B0 .. B(M-1)
 *   1f1b         warm-up min(P-1-s, M) forwards, then one forward and one backward in turn,
 *                then the remaining backwards
 *   pipedream, 2bw  the 1F1B order, run without a flush (async.c measures its steady state)
 *   zb-h1        the 1F1B order with the backward split into I and W; on stage s a W runs
 *                after an I once more than s Is are waiting for their W; the rest end the list
 *   interleaved, interleaved-zb, zbv, dualpipev: torch.distributed.pipelining's orders
 *                (schedule_torch.c) */
#include <string.h>

#include "schedule_impl.h"
#include "sim_impl.h"

sp_chunk_layout sp_schedule_chunk_layout(sp_schedule schedule) {
    return schedule == SP_SCHEDULE_ZBV || schedule == SP_SCHEDULE_DUALPIPEV ? SP_CHUNKS_V
                                                                            : SP_CHUNKS_LOOP;
}

bool sp_schedule_splits_backward(sp_schedule schedule) {
    return schedule == SP_SCHEDULE_ZB_H1 || schedule == SP_SCHEDULE_INTERLEAVED_ZB ||
           schedule == SP_SCHEDULE_ZBV || schedule == SP_SCHEDULE_DUALPIPEV;
}

uint32_t sp_schedule_chunks_needed(sp_schedule schedule) {
    switch (schedule) {
    case SP_SCHEDULE_ZBV:
    case SP_SCHEDULE_DUALPIPEV:
        return 2;
    case SP_SCHEDULE_INTERLEAVED:
    case SP_SCHEDULE_INTERLEAVED_ZB:
        return 0; /* any V >= 2 */
    default:
        return 1;
    }
}

void sp_sched_push(struct sp_sched_list *l, char kind, uint32_t stage, uint32_t mb) {
    l->ops[l->n++] = (struct sp_sched_op){stage, mb, kind, 0, 0};
}

static void device_ops(const struct sp_pipeline *pl, uint32_t d, struct sp_sched_list *l) {
    uint32_t P = pl->P, M = pl->M;
    switch (pl->schedule) {
    case SP_SCHEDULE_GPIPE:
        for (uint32_t j = 0; j < M; j++)
            sp_sched_push(l, 'F', d, j);
        for (uint32_t j = 0; j < M; j++)
            sp_sched_push(l, 'B', d, j);
        break;
    case SP_SCHEDULE_1F1B:
    case SP_SCHEDULE_PIPEDREAM: /* no flush: the simulator runs more micro-batches (async.c) */
    case SP_SCHEDULE_2BW:
    case SP_SCHEDULE_ZB_H1: {
        bool split = pl->schedule == SP_SCHEDULE_ZB_H1;
        uint32_t warm = P - 1 - d < M ? P - 1 - d : M;
        uint32_t nf = 0, nb = 0, nw = 0;
        for (; nf < warm; nf++)
            sp_sched_push(l, 'F', d, nf);
        while (nb < M) {
            if (nf < M)
                sp_sched_push(l, 'F', d, nf++);
            sp_sched_push(l, split ? 'I' : 'B', d, nb++);
            if (split && nb - nw > d)
                sp_sched_push(l, 'W', d, nw++);
        }
        while (split && nw < M)
            sp_sched_push(l, 'W', d, nw++);
        break;
    }
    case SP_SCHEDULE_INTERLEAVED:
    case SP_SCHEDULE_INTERLEAVED_ZB:
        sp_sched_interleaved(pl, d, l);
        break;
    case SP_SCHEDULE_ZBV:
        sp_sched_zbv(pl, d, l);
        break;
    case SP_SCHEDULE_DUALPIPEV:
        sp_sched_dualpipev(pl, d, l);
        break;
    }
}

/* What the schedule needs of the pipeline, refused with the reason. */
static sp_status check_fit(sp_ctx *ctx, const struct sp_pipeline *pl) {
    uint32_t P = pl->P, V = pl->V, M = pl->M, K = P * V;
    const char *name = sp_schedule_name(pl->schedule);
    uint32_t need = sp_schedule_chunks_needed(pl->schedule);
    if (need == 0 && V < 2)
        return sp_fail(ctx, SP_ERR_INVALID_ARG,
                       "the %s schedule needs a plan made with --chunks V (V >= 2); this plan "
                       "has 1 chunk per device",
                       name);
    if (need == 2 && (V != 2 || pl->layout != SP_CHUNKS_V))
        return sp_fail(ctx, SP_ERR_INVALID_ARG,
                       "the %s schedule needs a plan of 2 chunks per device placed V-shape "
                       "(partition with --schedule %s); this plan has %u chunk%s per device%s",
                       name, name, V, V == 1 ? "" : "s",
                       V == 2 && pl->layout != SP_CHUNKS_V ? " placed in a loop" : "");
    if (need == 1 && V != 1)
        return sp_fail(ctx, SP_ERR_INVALID_ARG,
                       "the plan has %u chunks per device; simulate it with --schedule %s", V,
                       pl->layout == SP_CHUNKS_V ? "zbv or dualpipev" : "interleaved");
    if (need == 0 && pl->layout != SP_CHUNKS_LOOP)
        return sp_fail(ctx, SP_ERR_INVALID_ARG,
                       "the plan's chunks are placed V-shape (for zbv or dualpipev); the %s "
                       "schedule places chunk k on device k mod P",
                       name);
    if (need == 0) {
        uint32_t rounds = M / P ? M / P : 1;
        if (M % rounds)
            return sp_fail(ctx, SP_ERR_INVALID_ARG,
                           "the %s schedule needs the micro-batch count to be a multiple of its "
                           "rounds, max(1, M / P) = %u (torch's rule; Megatron asks for a "
                           "multiple of P): M = %u, P = %u",
                           name, rounds, M, P);
    }
    if (pl->schedule == SP_SCHEDULE_DUALPIPEV && M < 2 * P)
        return sp_fail(ctx, SP_ERR_INVALID_ARG,
                       "dualpipev needs at least as many micro-batches as chunks, M >= 2P = %u "
                       "(its steady phase overlaps a forward of one chunk with a backward of the "
                       "other): M = %u",
                       2 * P, M);
    /* times, when given, must have what the schedule runs (the in-flight counts need none) */
    if (pl->f && sp_schedule_splits_backward(pl->schedule)) {
        for (uint32_t k = 0; k < K; k++)
            if (!pl->w || pl->w[k] < 0)
                return sp_fail(ctx, SP_ERR_INVALID_ARG,
                               "%s needs wgrad_ms (the weight-gradient part of the backward) on "
                               "every stage; stage %u has none: add wgrad_ms to every layer of "
                               "the profile and partition again",
                               name, k);
    }
    return SP_OK;
}

sp_status sp_schedule_build(sp_ctx *ctx, const struct sp_pipeline *pl, struct sp_sched_op **ops,
                            size_t **offset) {
    *ops = NULL;
    *offset = NULL;
    uint32_t P = pl->P, V = pl->V, M = pl->M;
    sp_status st = check_fit(ctx, pl);
    if (st != SP_OK)
        return st;
    /* at most F, I and W of every micro-batch and chunk per device (ZBV pads M to 2P-1
     * internally before dropping the padding, so it needs that much room while building) */
    uint64_t m = pl->schedule == SP_SCHEDULE_ZBV && M < 2 * P - 1 ? 2 * P - 1 : M;
    uint64_t per_device = m * V * (sp_schedule_splits_backward(pl->schedule) ? 3 : 2);
    if ((uint64_t)M * V * 3 * P > SP_SIM_MAX_OPS || per_device * P > (uint64_t)SIZE_MAX / 32)
        return sp_fail(ctx, SP_ERR_LIMIT,
                       "simulating up to %llu ops is more than the limit of %u; use fewer "
                       "micro-batches or stages",
                       (unsigned long long)((uint64_t)M * V * 3 * P), SP_SIM_MAX_OPS);
    *ops = sp_mallocarray((size_t)(per_device * P), sizeof **ops);
    *offset = sp_mallocarray((size_t)P + 1, sizeof **offset);
    if (!*ops || !*offset) {
        sp_free(*ops);
        sp_free(*offset);
        *ops = NULL;
        *offset = NULL;
        return sp_oom(ctx, "building the schedule");
    }
    /* the builders' scratch: 3 counters per chunk (interleaved), or DualPipeV's queue of Ws
     * waiting, at most 2P + 1 (stage, mb) pairs */
    size_t scratch_len = 3 * (size_t)V > 4 * (size_t)P + 4 ? 3 * (size_t)V : 4 * (size_t)P + 4;
    uint32_t *scratch = sp_mallocarray(scratch_len, sizeof *scratch);
    if (!scratch) {
        sp_free(*ops);
        sp_free(*offset);
        *ops = NULL;
        *offset = NULL;
        return sp_oom(ctx, "building the schedule");
    }
    struct sp_sched_list l = {*ops, 0, scratch, scratch_len};
    for (uint32_t d = 0; d < P; d++) {
        (*offset)[d] = l.n;
        size_t begin = l.n;
        device_ops(pl, d, &l);
        if (pl->schedule == SP_SCHEDULE_ZBV && m != M) { /* drop the padding micro-batches */
            size_t w = begin;
            for (size_t i = begin; i < l.n; i++)
                if (l.ops[i].mb < M)
                    l.ops[w++] = l.ops[i];
            l.n = w;
        }
    }
    (*offset)[P] = l.n;
    sp_free(scratch);
    return SP_OK;
}

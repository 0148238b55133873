/* simulate/inflight.c: how many micro-batches' activations a device holds under a schedule, read
 * off the op order the simulator runs (simulate/schedule.c): the partitioner's memory model.
 * A forward adds its chunk's activations; a W or a full backward frees them (a split I keeps
 * the inputs W needs); a DualPipeV pair adds its forward's first, then frees its backward's. */
#include <string.h>

#include "sim_impl.h"

uint32_t sp_stage_inflight(sp_schedule schedule, uint32_t s, uint32_t p, uint32_t m) {
    if (sp_schedule_async(schedule)) /* no flush: the window never shrinks to M */
        return p - s;
    uint32_t k = schedule == SP_SCHEDULE_GPIPE ? m : schedule == SP_SCHEDULE_ZB_H1 ? p : p - s;
    return k < m ? k : m;
}

/* Walks device d's op list: calls back after every forward with the counts held per chunk. */
struct walk {
    uint32_t P, V;
    uint32_t *held; /* [V] */
};

static sp_status build(sp_ctx *ctx, sp_schedule schedule, uint32_t P, uint32_t V, uint32_t M,
                       struct sp_sched_op **ops, size_t **offset) {
    struct sp_pipeline pl = {P,    V,    M,    schedule, sp_schedule_chunk_layout(schedule),
                             NULL, NULL, NULL, NULL,     NULL,
                             NULL, NULL, NULL};
    return sp_schedule_build(ctx, &pl, ops, offset);
}

/* the op's effect on the counts: +1 for the forward part, returns whether a forward ran; the
 * backward part's -1 is applied by release() after the caller looked at the peak */
static bool hold(struct walk *w, const struct sp_sched_op *op) {
    if (op->kind != 'F' && op->kind != 'O')
        return false;
    w->held[op->stage / w->P]++;
    return true;
}
static void release(struct walk *w, const struct sp_sched_op *op) {
    if (op->kind == 'W' || op->kind == 'B')
        w->held[op->stage / w->P]--;
    else if (op->kind == 'O')
        w->held[op->stage2 / w->P]--;
}

sp_status sp_chunk_peak_counts(sp_ctx *ctx, sp_schedule schedule, uint32_t P, uint32_t V,
                               uint32_t M, uint32_t d, const uint64_t *saved, uint32_t *counts) {
    struct sp_sched_op *ops = NULL;
    size_t *offset = NULL;
    sp_status st = build(ctx, schedule, P, V, M, &ops, &offset);
    if (st != SP_OK)
        return st;
    struct walk w = {P, V, sp_calloc(V, sizeof(uint32_t))};
    if (!w.held) {
        sp_free(ops);
        sp_free(offset);
        return sp_oom(ctx, "building a plan");
    }
    uint64_t peak = 0;
    bool any = false;
    memset(counts, 0, V * sizeof *counts);
    for (size_t i = offset[d]; i < offset[d + 1]; i++) {
        if (hold(&w, &ops[i])) {
            uint64_t bytes = 0;
            for (uint32_t c = 0; c < V; c++)
                bytes += w.held[c] * saved[c];
            if (bytes > peak || !any) {
                peak = bytes;
                any = true;
                memcpy(counts, w.held, V * sizeof *counts);
            }
        }
        release(&w, &ops[i]);
    }
    sp_free(w.held);
    sp_free(ops);
    sp_free(offset);
    return SP_OK;
}

sp_status sp_chunk_states(sp_ctx *ctx, sp_schedule schedule, uint32_t P, uint32_t V, uint32_t M,
                          uint32_t d, uint32_t **states, size_t *n_states) {
    *states = NULL;
    *n_states = 0;
    struct sp_sched_op *ops = NULL;
    size_t *offset = NULL;
    sp_status st = build(ctx, schedule, P, V, M, &ops, &offset);
    if (st != SP_OK)
        return st;
    size_t forwards = 0;
    for (size_t i = offset[d]; i < offset[d + 1]; i++)
        forwards += ops[i].kind == 'F' || ops[i].kind == 'O';
    struct walk w = {P, V, sp_calloc(V, sizeof(uint32_t))};
    uint32_t *out = sp_mallocarray(forwards ? forwards : 1, V * sizeof *out);
    if (!w.held || !out) {
        sp_free(w.held);
        sp_free(out);
        sp_free(ops);
        sp_free(offset);
        return sp_oom(ctx, "counting in-flight micro-batches");
    }
    size_t n = 0;
    for (size_t i = offset[d]; i < offset[d + 1]; i++) {
        if (!hold(&w, &ops[i])) {
            release(&w, &ops[i]);
            continue;
        }
        const uint32_t *held = w.held;
        /* keep the state unless a kept one holds at least as much of every chunk; drop the kept
         * ones it holds at least as much as */
        bool dominated = false;
        size_t k2 = 0;
        for (size_t k = 0; k < n; k++) {
            const uint32_t *o = &out[k * V];
            bool o_ge = true, h_ge = true;
            for (uint32_t j = 0; j < V; j++) {
                o_ge &= o[j] >= held[j];
                h_ge &= held[j] >= o[j];
            }
            dominated |= o_ge;
            if (!h_ge || o_ge) /* keep o, unless the new state dominates it strictly */
                memmove(&out[k2++ * V], o, V * sizeof *out);
        }
        n = k2;
        if (!dominated)
            memcpy(&out[n++ * V], held, V * sizeof *out);
        release(&w, &ops[i]);
    }
    sp_free(w.held);
    sp_free(ops);
    sp_free(offset);
    *states = out;
    *n_states = n;
    return SP_OK;
}

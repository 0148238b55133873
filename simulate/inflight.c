/* simulate/inflight.c: how many micro-batches' activations a device holds under a schedule, read
 * off the op order the simulator runs (simulate/schedule.c): the partitioner's memory model. */
#include <string.h>

#include "sim_impl.h"

uint32_t sp_stage_inflight(uint32_t s, uint32_t p, uint32_t m) {
    uint32_t k = p - s;
    return k < m ? k : m;
}

sp_status sp_interleaved_peak_counts(sp_ctx *ctx, uint32_t P, uint32_t V, uint32_t M, uint32_t d,
                                     const uint64_t *saved, uint32_t *counts) {
    struct sp_pipeline pl = {P, V, M, SP_SCHEDULE_INTERLEAVED, NULL, NULL, NULL, NULL, NULL, NULL};
    struct sp_sched_op *ops = NULL;
    size_t *offset = NULL;
    sp_status st = sp_schedule_build(ctx, &pl, &ops, &offset);
    if (st != SP_OK)
        return st;
    uint32_t *held = sp_calloc(V, sizeof *held);
    if (!held) {
        sp_free(ops);
        sp_free(offset);
        return sp_oom(ctx, "building a plan");
    }
    uint64_t bytes = 0, peak = 0;
    memset(counts, 0, V * sizeof *counts);
    for (size_t i = offset[d]; i < offset[d + 1]; i++) {
        uint32_t c = ops[i].stage / P;
        if (ops[i].kind == 'F') {
            held[c]++;
            bytes += saved[c];
            if (bytes > peak || (bytes == peak && peak == 0)) {
                peak = bytes;
                memcpy(counts, held, V * sizeof *counts);
            }
        } else {
            held[c]--;
            bytes -= saved[c];
        }
    }
    sp_free(held);
    sp_free(ops);
    sp_free(offset);
    return SP_OK;
}

sp_status sp_interleaved_states(sp_ctx *ctx, uint32_t P, uint32_t V, uint32_t M, uint32_t d,
                                uint32_t **states, size_t *n_states) {
    *states = NULL;
    *n_states = 0;
    struct sp_pipeline pl = {P, V, M, SP_SCHEDULE_INTERLEAVED, NULL, NULL, NULL, NULL, NULL, NULL};
    struct sp_sched_op *ops = NULL;
    size_t *offset = NULL;
    sp_status st = sp_schedule_build(ctx, &pl, &ops, &offset);
    if (st != SP_OK)
        return st;
    size_t forwards = 0;
    for (size_t i = offset[d]; i < offset[d + 1]; i++)
        forwards += ops[i].kind == 'F';
    uint32_t *held = sp_calloc(V, sizeof *held);
    uint32_t *out = sp_mallocarray(forwards ? forwards : 1, V * sizeof *out);
    if (!held || !out) {
        sp_free(held);
        sp_free(out);
        sp_free(ops);
        sp_free(offset);
        return sp_oom(ctx, "counting in-flight micro-batches");
    }
    size_t n = 0;
    for (size_t i = offset[d]; i < offset[d + 1]; i++) {
        uint32_t c = ops[i].stage / P;
        if (ops[i].kind != 'F') {
            held[c]--;
            continue;
        }
        held[c]++;
        /* keep the state unless a kept one holds at least as much of every chunk; drop the kept
         * ones it holds at least as much as */
        bool dominated = false;
        size_t w = 0;
        for (size_t k = 0; k < n; k++) {
            const uint32_t *o = &out[k * V];
            bool o_ge = true, h_ge = true;
            for (uint32_t j = 0; j < V; j++) {
                o_ge &= o[j] >= held[j];
                h_ge &= held[j] >= o[j];
            }
            dominated |= o_ge;
            if (!h_ge || o_ge) /* keep o, unless the new state dominates it strictly */
                memmove(&out[w++ * V], o, V * sizeof *out);
        }
        n = w;
        if (!dominated)
            memcpy(&out[n++ * V], held, V * sizeof *out);
    }
    sp_free(held);
    sp_free(ops);
    sp_free(offset);
    *states = out;
    *n_states = n;
    return SP_OK;
}

/* partitioner/model/chunk_memory.c: memory of plans with chunks (partitioner/model/chunk_memory.h).
 */
#include <string.h>

#include "chunk_memory.h"
#include "sim_impl.h"

void sp_chunk_memory_release(struct sp_chunk_memory *cm) {
    sp_free(cm->held);
    sp_free(cm->offset);
    sp_free(cm->cap);
    memset(cm, 0, sizeof *cm);
}

sp_status sp_chunk_memory_init(sp_ctx *ctx, sp_schedule schedule, uint32_t P, uint32_t V,
                               uint32_t M, uint64_t memory_limit, const uint64_t *device_memory,
                               struct sp_chunk_memory *out) {
    memset(out, 0, sizeof *out);
    out->P = P;
    out->V = V;
    out->layout = sp_schedule_chunk_layout(schedule);
    out->offset = sp_calloc((size_t)P + 1, sizeof *out->offset);
    out->cap = sp_calloc(P, sizeof *out->cap);
    if (!out->offset || !out->cap) {
        sp_chunk_memory_release(out);
        return sp_oom(ctx, "counting in-flight micro-batches");
    }
    for (uint32_t d = 0; d < P; d++) {
        uint64_t cap = memory_limit, dm = device_memory ? device_memory[d] : 0;
        out->cap[d] = dm && (!cap || dm < cap) ? dm : cap;
        out->any_cap |= out->cap[d] != 0;
    }
    for (uint32_t d = 0; d < P; d++) {
        uint32_t *states = NULL;
        size_t n = 0;
        sp_status st = sp_chunk_states(ctx, schedule, P, V, M, d, &states, &n);
        uint32_t *grown = st == SP_OK
                              ? sp_realloc(out->held, (out->offset[d] + n) * V * sizeof *out->held)
                              : NULL;
        if (st == SP_OK && !grown && out->offset[d] + n > 0)
            st = sp_oom(ctx, "counting in-flight micro-batches");
        if (st != SP_OK) {
            sp_free(states);
            sp_chunk_memory_release(out);
            return st;
        }
        out->held = grown;
        memcpy(out->held + out->offset[d] * V, states, n * V * sizeof *states);
        out->offset[d + 1] = out->offset[d] + n;
        sp_free(states);
    }
    out->ilp = (struct sp_ilp_chunk_memory){out->held, out->offset, out->cap};
    return SP_OK;
}

bool sp_chunk_memory_fits(const struct sp_chunk_memory *cm, const sp_profile *profile,
                          const size_t *bounds, const bool *recompute, uint32_t d) {
    if (!cm->cap[d])
        return true;
    for (size_t i = cm->offset[d]; i < cm->offset[d + 1]; i++) {
        sp_u128 need = 0;
        for (uint32_t ch = 0; ch < cm->V; ch++) {
            uint32_t k = sp_device_chunk_stage(cm->layout, cm->P, d, ch);
            for (size_t l = bounds[k]; l < bounds[k + 1]; l++) {
                const sp_layer *L = sp_profile_get_layer(profile, l);
                need += L->memory_bytes;
                if (!(recompute && recompute[l]))
                    need += (sp_u128)cm->held[i * cm->V + ch] * L->saved_bytes;
            }
        }
        if (need > cm->cap[d])
            return false;
    }
    return true;
}

void sp_chunk_memory_trim(const struct sp_chunk_memory *cm, const sp_profile *profile,
                          const size_t *bounds, bool *recompute) {
    for (uint32_t d = 0; recompute && d < cm->P; d++)
        for (;;) { /* undo the longest recomputation the device can do without */
            size_t best = SIZE_MAX;
            for (uint32_t ch = 0; ch < cm->V; ch++) {
                uint32_t k = sp_device_chunk_stage(cm->layout, cm->P, d, ch);
                for (size_t l = bounds[k]; l < bounds[k + 1]; l++) {
                    if (!recompute[l])
                        continue;
                    recompute[l] = false;
                    if (sp_chunk_memory_fits(cm, profile, bounds, recompute, d) &&
                        (best == SIZE_MAX || sp_profile_get_layer(profile, l)->recompute_ms >
                                                 sp_profile_get_layer(profile, best)->recompute_ms))
                        best = l;
                    recompute[l] = true;
                }
            }
            if (best == SIZE_MAX)
                break;
            recompute[best] = false;
        }
}

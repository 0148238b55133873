/* partitioner/model/chunk_memory.h: memory of plans with chunks, for the ilp, its incumbent and the
 * V-shape solver (partitioner/model/chunk_memory.c). Device d holds the layers of its V chunks; at
 * each in-flight state of the schedule's order (sp_chunk_states) it holds held[c] micro-batches
 * of chunk c, and its peak is the largest state's resident + held x saved sum. */
#ifndef SP_PARTITIONER_CHUNK_MEMORY_H
#define SP_PARTITIONER_CHUNK_MEMORY_H

#include "ilp.h"

struct sp_chunk_memory {
    struct sp_ilp_chunk_memory ilp; /* points into the arrays below */
    uint32_t P, V;
    sp_chunk_layout layout; /* where chunk c of device d runs (sp_device_chunk_stage) */
    uint32_t *held;
    size_t *offset;
    uint64_t *cap; /* [P]: the smaller of the memory limit and the device's memory; 0: none */
    bool any_cap;
};

/* The states and caps of P devices x V chunks with M micro-batches under the schedule;
 * device_memory[P] may be NULL. */
sp_status sp_chunk_memory_init(sp_ctx *ctx, sp_schedule schedule, uint32_t P, uint32_t V,
                               uint32_t M, uint64_t memory_limit, const uint64_t *device_memory,
                               struct sp_chunk_memory *out);
void sp_chunk_memory_release(struct sp_chunk_memory *cm);

/* Does device d fit, with layers [bounds[k], bounds[k+1]) in virtual stage k and recompute[l]
 * (or NULL) dropping layer l's saved bytes? */
bool sp_chunk_memory_fits(const struct sp_chunk_memory *cm, const sp_profile *profile,
                          const size_t *bounds, const bool *recompute, uint32_t d);

/* Undo recomputation the memory does not need, device by device, the longest recomputation first
 * (as sp_partition does for one chunk per device). */
void sp_chunk_memory_trim(const struct sp_chunk_memory *cm, const sp_profile *profile,
                          const size_t *bounds, bool *recompute);

#endif

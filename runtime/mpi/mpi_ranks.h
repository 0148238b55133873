/* runtime/mpi/mpi_ranks.h: what the MPI transport (transport_mpi.c) checks across its ranks:
 * that they were asked to run the same thing, and which of them share a GPU. */
#ifndef SP_RUNTIME_MPI_RANKS_H
#define SP_RUNTIME_MPI_RANKS_H

#include "worker.h"

/* what each rank tells the others about its stage */
struct sp_mpi_stage_info {
    int32_t core, device;
    uint32_t slots;
    uint64_t bytes;
    char host[64];
};

/* a fingerprint of the plan, model shape and options a rank was asked to run with M
 * micro-batches: every rank must have the same */
uint64_t sp_mpi_fingerprint(const sp_plan *plan, const struct sp_model *m, const sp_run_opts *o,
                            uint32_t M);

/* marks the run and warns when ranks of one machine share a GPU (infos[P]) */
void sp_mpi_shared_gpus(sp_ctx *ctx, struct sp_run *run, const struct sp_mpi_stage_info *infos,
                        uint32_t P);

#endif

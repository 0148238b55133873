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

/* After a run that every rank finished: every rank's step stats (stats[total]), stage info and
 * timeline ops (its own at offset[rank] .. offset[rank + 1] of run->timeline->ops) to every
 * rank, set into run: one rank a stage, or with replicated stages (base[P + 1]: the first rank
 * of each stage) each stage's figures the mean over its replicas (the loss their sum; the end
 * and the optimizer the latest), each replica's own in run->replica_stats. Every collective is
 * bounded by timeout_ms. */
sp_status sp_mpi_share_figures(sp_ctx *ctx, struct sp_run *run, uint32_t P, const uint32_t *base,
                               uint32_t ranks, uint32_t total, const size_t *offset,
                               const struct sp_step_stats *stats,
                               const struct sp_mpi_stage_info *mine, double timeout_ms);

#endif

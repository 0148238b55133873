/* runtime/mpi_stub.c: builds without Open MPI (STAGEPART_MPI=OFF or no libopenmpi-dev): the MPI
 * transport says it is not compiled in. */
#include "worker.h"

sp_status sp_run_mpi(sp_ctx *ctx, const sp_plan *plan, const struct sp_model *m,
                     const sp_run_opts *o, uint32_t M, const struct sp_sched_op *ops,
                     const size_t *offset, const int *cores, unsigned n_cores, struct sp_run *run) {
    (void)plan, (void)m, (void)o, (void)M, (void)ops, (void)offset, (void)cores, (void)n_cores;
    (void)run;
    return sp_fail(ctx, SP_ERR_UNSUPPORTED,
                   "the MPI transport is not compiled in (build with Open MPI: libopenmpi-dev)");
}

sp_status sp_mpi_start(sp_ctx *ctx, int *rank, int *size) {
    *rank = 0;
    *size = 1;
    return sp_fail(ctx, SP_ERR_UNSUPPORTED,
                   "the MPI transport is not compiled in (build with Open MPI: libopenmpi-dev)");
}

void sp_mpi_stop(int exit_code) {
    (void)exit_code;
}

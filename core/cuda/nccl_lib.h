/* core/cuda/nccl_lib.h: the NCCL calls of the runtime's GPU links and the CUDA link probe, found
 * at run time.
 *
 * NCCL is loaded only when a command uses it (dlopen), not linked: libnccl maps about 220 MB, so
 * linked it made every start of stagepart-compute need that much address space (under ulimit -v
 * the loader refused it before main, exit 127), though only `run --transport mpi` on GPUs and
 * `bandwidth --backend cuda` call it. Symbols already in the process come first (a program
 * linked with NCCL, or the tests' stand-ins), then libnccl.so.<major> by the usual search, then
 * beside the CUDA runtime this process loaded (as models/cuda/cublas_lib.c finds cuBLAS). */
#ifndef SP_CORE_CUDA_NCCL_LIB_H
#define SP_CORE_CUDA_NCCL_LIB_H

#include <nccl.h>

struct sp_nccl {
    ncclResult_t (*GetUniqueId)(ncclUniqueId *id);
    const char *(*GetErrorString)(ncclResult_t result);
    ncclResult_t (*CommInitRank)(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank);
    ncclResult_t (*CommInitAll)(ncclComm_t *comms, int ndev, const int *devlist);
    ncclResult_t (*CommAbort)(ncclComm_t comm);
    ncclResult_t (*CommDestroy)(ncclComm_t comm);
    ncclResult_t (*Send)(const void *sendbuff, size_t count, ncclDataType_t datatype, int peer,
                         ncclComm_t comm, cudaStream_t stream);
    ncclResult_t (*Recv)(void *recvbuff, size_t count, ncclDataType_t datatype, int peer,
                         ncclComm_t comm, cudaStream_t stream);
    ncclResult_t (*GroupStart)(void);
    ncclResult_t (*GroupEnd)(void);
};

/* the table, found once (thread-safe); NULL with *why saying what is missing. CommInitAll,
 * GroupStart and GroupEnd (the CUDA link probe's) may be NULL: check them before use. */
const struct sp_nccl *sp_nccl_lib(const char **why);
/* the table, where the caller has already seen sp_nccl_lib return it (a check before any use) */
static inline const struct sp_nccl *sp_nccl(void) {
    const char *why = 0;
    return sp_nccl_lib(&why);
}

#endif

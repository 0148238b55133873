/* runtime/mpi/transport_mpi_impl.h: the MPI transport's state, shared by its MPI part
 * (transport_mpi.c) and its NCCL part (transport_nccl.c). */
#ifndef SP_RUNTIME_TRANSPORT_MPI_IMPL_H
#define SP_RUNTIME_TRANSPORT_MPI_IMPL_H

#include <mpi.h>

#include "gpu_links.h"
#include "worker.h"

enum { TAG_ABORT = 1, TAG_DATA = 4, TAG_MB_RANGE = 8192 };

struct ring { /* buffers this rank sends from, in one direction */
    uint32_t cap, next;
    size_t elems;
    float **buf;
    MPI_Request *req;
};

struct mpi_t {
    uint32_t s, P;
    /* replicated stages: this rank, the ranks, each stage's first rank base[P + 1] (stage s's
     * micro-batch mb is on rank base[s] + mb mod its replicas) and its replicas' communicator;
     * otherwise rank = s, ranks = P, base NULL */
    uint32_t rank, ranks;
    const uint32_t *base;
    MPI_Comm stage_comm;
    float *grad_host; /* on a GPU: a layer's gradients on their way through the all-reduce */
    const struct sp_exec_backend *be; /* the stage's: the CPU's, or its GPU's */
    struct sp_nccl_p2p *nccl;         /* GPU to GPU, or NULL: host buffers */
    float *arrived;                   /* on a GPU: where a tensor lands before it is copied up */
    double timeout_ms;
    sp_ctx *ctx;
    sp_status status;
    bool stop;
    MPI_Request abort_req;
    char abort_msg[1024];        /* [0..3]: the status, then the text */
    struct ring ring[2];         /* [SP_DIR_ACT]: to s + 1; [SP_DIR_GRAD]: to s - 1 */
    struct sp_transport_ops ops; /* the worker's: the MPI or the NCCL table, with sum_gradients
                                  * for replicated stages */
};

/* the rank holding stage `stage`'s micro-batch mb */
static inline int sp_mpi_rank_of(const struct mpi_t *t, uint32_t stage, uint32_t mb) {
    if (!t->base)
        return (int)stage;
    return (int)(t->base[stage] + mb % (t->base[stage + 1] - t->base[stage]));
}

/* the waits' pause between polls, and the transport's table entries both parts use */
void sp_mpi_nap(void);
bool sp_mpi_stopping(void *t);
void sp_mpi_fail(void *t, sp_status st, const char *message);
bool sp_mpi_gate(void *t, uint32_t s, uint32_t step, double *t0_ms);
void sp_mpi_set_state(void *t, uint32_t s, uint32_t step, uint32_t mb, char kind, int waiting_on);
void sp_mpi_explain_timeout(void *t, uint32_t s, uint32_t peer, char *msg, size_t cap);
/* replicated stages: the stage's gradients summed over its replicas (MPI, through host memory
 * on a GPU) */
bool sp_mpi_sum_gradients(void *t, uint32_t s, struct sp_stage_exec *se);

/* tensors GPU to GPU by NCCL (transport_nccl.c) */
extern const struct sp_transport_ops sp_mpi_nccl_ops;

#endif

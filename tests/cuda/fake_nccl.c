/* tests/cuda/fake_nccl.c: the NCCL calls of runtime/cuda/gpu_links_nccl.c, done with MPI, for the
 * GPU ranks on stand-in GPUs (test_run_cuda_fake_mpi: "device" memory is host memory there). A
 * communicator is a duplicate of MPI_COMM_WORLD; ncclSend and ncclRecv are non-blocking MPI
 * messages on it, in order between each pair as NCCL's are; a CUDA event recorded after them
 * (tests/cuda/fake_cuda.c) takes them and is done when MPI says they are. */
#include <mpi.h>
#include <nccl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

struct ncclComm {
    MPI_Comm comm;
};

#define MAX_QUEUED 16
#define MAX_EVENTS 256

static MPI_Request g_queued[MAX_QUEUED]; /* messages no event has taken yet */
static int g_n_queued;
static struct {
    cudaEvent_t e;
    MPI_Request req[MAX_QUEUED];
    int n;
} g_events[MAX_EVENTS];

ncclResult_t ncclGetUniqueId(ncclUniqueId *id) {
    static int made;
    memset(id, 0, sizeof *id);
    id->internal[0] = (char)++made;
    return ncclSuccess;
}

ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank) {
    (void)id;
    int size = 0, me = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    if (size != nranks || me != rank)
        return ncclInvalidArgument;
    struct ncclComm *c = calloc(1, sizeof *c);
    if (!c || MPI_Comm_dup(MPI_COMM_WORLD, &c->comm) != MPI_SUCCESS) {
        free(c);
        return ncclSystemError;
    }
    *comm = c;
    return ncclSuccess;
}

ncclResult_t ncclCommDestroy(ncclComm_t comm) { /* collective, as MPI_Comm_free is */
    MPI_Comm_free(&comm->comm);
    free(comm);
    return ncclSuccess;
}

ncclResult_t ncclCommAbort(ncclComm_t comm) { /* the others may be gone: nothing collective */
    free(comm);
    return ncclSuccess;
}

const char *ncclGetErrorString(ncclResult_t result) {
    return result == ncclSuccess ? "no error" : "stand-in NCCL error";
}

static ncclResult_t queue(MPI_Request req) {
    if (g_n_queued == MAX_QUEUED)
        return ncclInternalError;
    g_queued[g_n_queued++] = req;
    return ncclSuccess;
}

ncclResult_t ncclSend(const void *buf, size_t count, ncclDataType_t type, int peer, ncclComm_t comm,
                      cudaStream_t stream) {
    (void)stream;
    if (type != ncclFloat)
        return ncclInvalidArgument;
    MPI_Request req;
    MPI_Isend(buf, (int)(count * sizeof(float)), MPI_BYTE, peer, 0, comm->comm, &req);
    return queue(req);
}

ncclResult_t ncclRecv(void *buf, size_t count, ncclDataType_t type, int peer, ncclComm_t comm,
                      cudaStream_t stream) {
    (void)stream;
    if (type != ncclFloat)
        return ncclInvalidArgument;
    MPI_Request req;
    MPI_Irecv(buf, (int)(count * sizeof(float)), MPI_BYTE, peer, 0, comm->comm, &req);
    return queue(req);
}

void fake_nccl_recorded(cudaEvent_t e);
bool fake_nccl_done(cudaEvent_t e);

void fake_nccl_recorded(cudaEvent_t e) {
    int k = 0, free_slot = -1;
    for (; k < MAX_EVENTS && g_events[k].e != e; k++)
        if (free_slot < 0 && !g_events[k].e)
            free_slot = k;
    if (k == MAX_EVENTS) {
        if (free_slot < 0)
            abort(); /* a test would need more events than the runtime ever records */
        k = free_slot;
        g_events[k].e = e;
        g_events[k].n = 0;
    }
    for (int q = 0; q < g_n_queued && g_events[k].n < MAX_QUEUED; q++)
        g_events[k].req[g_events[k].n++] = g_queued[q];
    g_n_queued = 0;
}

bool fake_nccl_done(cudaEvent_t e) {
    for (int k = 0; k < MAX_EVENTS; k++)
        if (g_events[k].e == e) {
            int flag = 0;
            MPI_Testall(g_events[k].n, g_events[k].req, &flag, MPI_STATUSES_IGNORE);
            if (flag)
                g_events[k].n = 0;
            return flag != 0;
        }
    return true;
}

/* runtime/cuda/gpu_links_nccl.c: NCCL point-to-point between the GPU stages of MPI ranks
 * (runtime/gpu_links.h). Every call is queued on the direction's stream and followed by a CUDA
 * event the transport polls: nothing here waits on another rank. */
#include <stdio.h>
#include <string.h>

#include "cuda/nccl_lib.h"
#include "gpu_links.h"

struct direction {
    ncclComm_t comm;
    cudaStream_t stream;
    uint32_t cap, next;
    size_t elems;
    float **buf;         /* [cap] send buffers on the GPU */
    cudaEvent_t *sent;   /* [cap]: recorded after each buffer's send */
    bool *busy;          /* [cap]: a send was queued from it */
    cudaEvent_t arrived; /* recorded after the last receive */
};

struct sp_nccl_p2p {
    const struct sp_exec_backend *be;
    struct direction dir[2];
    bool aborted;
    char error[256];
};

bool sp_nccl_available(const char **why) {
    return sp_nccl_lib(why) != NULL;
}

sp_status sp_nccl_make_ids(sp_ctx *ctx, unsigned char ids[2][SP_NCCL_ID_BYTES]) {
    for (int d = 0; d < 2; d++) {
        ncclUniqueId id;
        ncclResult_t r = sp_nccl()->GetUniqueId(&id);
        if (r != ncclSuccess)
            return sp_fail(ctx, SP_ERR_NO_DEVICE, "NCCL: ncclGetUniqueId failed: %s",
                           sp_nccl()->GetErrorString(r));
        memcpy(ids[d], id.internal, SP_NCCL_ID_BYTES);
    }
    return SP_OK;
}

static bool failed(struct sp_nccl_p2p *n, const char *what, const char *why) {
    if (!n->error[0])
        snprintf(n->error, sizeof n->error, "%s: %s", what, why);
    return false;
}

static bool nccl_ok(struct sp_nccl_p2p *n, ncclResult_t r, const char *what) {
    return r == ncclSuccess || failed(n, what, sp_nccl()->GetErrorString(r));
}

static bool cuda_ok(struct sp_nccl_p2p *n, cudaError_t e, const char *what) {
    return e == cudaSuccess || failed(n, what, cudaGetErrorString(e));
}

void sp_nccl_close(struct sp_nccl_p2p *n) {
    if (!n)
        return;
    for (int d = 0; d < 2; d++) {
        struct direction *x = &n->dir[d];
        if (x->comm && n->aborted)
            sp_nccl()->CommAbort(x->comm);
        else if (x->comm)
            sp_nccl()->CommDestroy(x->comm);
        for (uint32_t k = 0; k < x->cap; k++) {
            if (x->buf && x->buf[k])
                n->be->release(n->be->device, x->buf[k]);
            if (x->sent && x->sent[k])
                cudaEventDestroy(x->sent[k]);
        }
        if (x->arrived)
            cudaEventDestroy(x->arrived);
        if (x->stream)
            cudaStreamDestroy(x->stream);
        sp_free(x->buf);
        sp_free(x->sent);
        sp_free(x->busy);
    }
    sp_free(n);
}

sp_status sp_nccl_open(sp_ctx *ctx, const struct sp_exec_backend *be, int rank, int nranks,
                       const unsigned char ids[2][SP_NCCL_ID_BYTES], uint32_t cap,
                       const size_t elems[2], struct sp_nccl_p2p **out) {
    *out = NULL;
    struct sp_nccl_p2p *n = sp_calloc(1, sizeof *n);
    if (!n)
        return sp_oom(ctx, "the NCCL links");
    n->be = be;
    bool ok = true;
    for (int d = 0; d < 2 && ok; d++) {
        struct direction *x = &n->dir[d];
        ncclUniqueId id;
        memcpy(id.internal, ids[d], SP_NCCL_ID_BYTES);
        /* in the same order on every rank: activations' communicator, then gradients' */
        ok = nccl_ok(n, sp_nccl()->CommInitRank(&x->comm, nranks, id, rank), "ncclCommInitRank") &&
             cuda_ok(n, cudaStreamCreateWithFlags(&x->stream, cudaStreamNonBlocking),
                     "a stream for NCCL") &&
             cuda_ok(n, cudaEventCreateWithFlags(&x->arrived, cudaEventDisableTiming), "an event");
        x->cap = elems[d] ? cap : 0;
        x->elems = elems[d];
        x->buf = sp_calloc(cap ? cap : 1, sizeof *x->buf);
        x->sent = sp_calloc(cap ? cap : 1, sizeof *x->sent);
        x->busy = sp_calloc(cap ? cap : 1, sizeof *x->busy);
        ok = ok && x->buf && x->sent && x->busy;
        for (uint32_t k = 0; ok && k < x->cap; k++)
            ok = (x->buf[k] = be->alloc_zeroed(be->device, elems[d] * sizeof(float))) &&
                 cuda_ok(n, cudaEventCreateWithFlags(&x->sent[k], cudaEventDisableTiming),
                         "an event");
    }
    if (!ok) {
        sp_status st = n->error[0] ? sp_fail(ctx, SP_ERR_NO_DEVICE, "NCCL: %s", n->error)
                                   : sp_fail(ctx, SP_ERR_INFEASIBLE,
                                             "NCCL: out of GPU memory for the send buffers");
        n->aborted = true;
        sp_nccl_close(n);
        return st;
    }
    *out = n;
    return SP_OK;
}

/* 1 done, 0 not yet, -1 an error */
static int query(struct sp_nccl_p2p *n, cudaEvent_t e) {
    cudaError_t r = cudaEventQuery(e);
    if (r == cudaSuccess)
        return 1;
    if (r == cudaErrorNotReady)
        return 0;
    failed(n, "waiting for NCCL", cudaGetErrorString(r));
    return -1;
}

int sp_nccl_send_slot(struct sp_nccl_p2p *n, int dir, float **buf) {
    struct direction *x = &n->dir[dir];
    *buf = NULL;
    if (n->aborted || !x->cap)
        return -1;
    int done = x->busy[x->next] ? query(n, x->sent[x->next]) : 1;
    if (done == 1) {
        x->busy[x->next] = false;
        *buf = x->buf[x->next];
    }
    return done;
}

bool sp_nccl_send(struct sp_nccl_p2p *n, int dir, int peer) {
    struct direction *x = &n->dir[dir];
    uint32_t k = x->next;
    bool ok = !n->aborted &&
              nccl_ok(n, sp_nccl()->Send(x->buf[k], x->elems, ncclFloat, peer, x->comm, x->stream),
                      "ncclSend") &&
              cuda_ok(n, cudaEventRecord(x->sent[k], x->stream), "recording a send");
    x->busy[k] = ok;
    x->next = (k + 1) % x->cap;
    return ok;
}

bool sp_nccl_recv(struct sp_nccl_p2p *n, int dir, int peer, float *dst, size_t elems) {
    struct direction *x = &n->dir[dir];
    return !n->aborted &&
           nccl_ok(n, sp_nccl()->Recv(dst, elems, ncclFloat, peer, x->comm, x->stream),
                   "ncclRecv") &&
           cuda_ok(n, cudaEventRecord(x->arrived, x->stream), "recording a receive");
}

int sp_nccl_recv_done(struct sp_nccl_p2p *n, int dir) {
    return n->aborted ? -1 : query(n, n->dir[dir].arrived);
}

const char *sp_nccl_error(const struct sp_nccl_p2p *n) {
    return n->error[0] ? n->error : "no error";
}

void sp_nccl_abort(struct sp_nccl_p2p *n) {
    if (!n || n->aborted)
        return;
    n->aborted = true;
    for (int d = 0; d < 2; d++)
        if (n->dir[d].comm) {
            sp_nccl()->CommAbort(n->dir[d].comm);
            n->dir[d].comm = NULL;
        }
}

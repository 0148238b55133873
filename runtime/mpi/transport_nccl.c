/* runtime/mpi/transport_nccl.c: the MPI transport's tensors GPU to GPU by NCCL point-to-point
 * (runtime/gpu_links.h), when every rank has a GPU of its own: the same waits as its MPI part,
 * on CUDA events instead of MPI requests. */
#include <stdio.h>

#include "transport_mpi_impl.h"

static void nccl_failed(struct mpi_t *t, uint32_t s, const char *what) {
    char msg[512];
    snprintf(msg, sizeof msg, "stage %u: NCCL %s failed: %s", s, what, sp_nccl_error(t->nccl));
    sp_mpi_fail(t, SP_ERR_NO_DEVICE, msg);
}

/* poll until done (1), an error (-1) or the deadline or a stop (0); a wait that runs out aborts
 * the communicators: NCCL would wait for a silent peer forever */
static int nccl_wait(struct mpi_t *t, int (*poll)(struct mpi_t *, int, float **), int dir,
                     float **buf, double deadline_ms, double *waited_ms) {
    double t0 = sp_now_ms();
    int r;
    while ((r = poll(t, dir, buf)) == 0 && !sp_mpi_stopping(t) && sp_now_ms() < deadline_ms)
        sp_mpi_nap();
    *waited_ms += sp_now_ms() - t0;
    if (r == 0)
        sp_nccl_abort(t->nccl);
    return r;
}

static int poll_recv(struct mpi_t *t, int dir, float **buf) {
    (void)buf;
    return sp_nccl_recv_done(t->nccl, dir);
}

static int poll_slot(struct mpi_t *t, int dir, float **buf) {
    return sp_nccl_send_slot(t->nccl, dir, buf);
}

static bool nccl_recv(void *p, uint32_t s, uint32_t peer, enum sp_dir dir, uint32_t mb, float *dst,
                      size_t elems, double deadline_ms, double *waited_ms, double *copy_ms) {
    (void)copy_ms; /* NCCL writes straight into dst on the GPU */
    struct mpi_t *t = p;
    if (!sp_nccl_recv(t->nccl, (int)dir, sp_mpi_rank_of(t, peer, mb), dst, elems)) {
        nccl_failed(t, s, "receive");
        return false;
    }
    int r = nccl_wait(t, poll_recv, (int)dir, NULL, deadline_ms, waited_ms);
    if (r < 0)
        nccl_failed(t, s, "receive");
    return r == 1;
}

static float *nccl_send_buffer(void *p, uint32_t s, uint32_t peer, enum sp_dir dir,
                               double deadline_ms, double *waited_ms) {
    (void)peer;
    struct mpi_t *t = p;
    float *buf = NULL;
    int r = nccl_wait(t, poll_slot, (int)dir, &buf, deadline_ms, waited_ms);
    if (r < 0)
        nccl_failed(t, s, "send");
    return r == 1 ? buf : NULL;
}

static void nccl_send(void *p, uint32_t s, uint32_t peer, enum sp_dir dir, uint32_t mb) {
    struct mpi_t *t = p;
    if (!sp_nccl_send(t->nccl, (int)dir, sp_mpi_rank_of(t, peer, mb)))
        nccl_failed(t, s, "send");
}

const struct sp_transport_ops sp_mpi_nccl_ops = {
    .step_gate = sp_mpi_gate,
    .recv = nccl_recv,
    .send_buffer = nccl_send_buffer,
    .send = nccl_send,
    .fail = sp_mpi_fail,
    .stopping = sp_mpi_stopping,
    .set_state = sp_mpi_set_state,
    .explain_timeout = sp_mpi_explain_timeout,
};

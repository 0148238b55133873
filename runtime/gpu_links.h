/* runtime/gpu_links.h: activations and gradients between the GPU stages of MPI ranks by NCCL
 * point-to-point (runtime/cuda/gpu_links_nccl.c; runtime/gpu_links_stub.c without NCCL).
 *
 * One communicator per direction (activations go from rank s to s + 1, gradients from s + 1 to
 * s), each with its own stream on the stage's GPU, so the two never wait on each other; the
 * operations on one are in the schedule's order on every rank. Nothing here blocks: a send or a
 * receive is queued and the caller polls its completion (a CUDA event), so the MPI transport's
 * bounded waits and stop messages hold as they do for host buffers. A wait that runs out aborts
 * the communicators (ncclCommAbort), which is what frees a rank stuck in NCCL. */
#ifndef SP_RUNTIME_GPU_LINKS_H
#define SP_RUNTIME_GPU_LINKS_H

#include "stage_exec.h"

#define SP_NCCL_ID_BYTES 128

struct sp_nccl_p2p;

/* NCCL is in this build; false with *why saying what is missing */
bool sp_nccl_available(const char **why);
/* the two communicators' unique ids, made on rank 0 and sent to the others */
sp_status sp_nccl_make_ids(sp_ctx *ctx, unsigned char ids[2][SP_NCCL_ID_BYTES]);
/* this rank's end of both communicators, on the stage's GPU (be: its backend, current on the
 * calling thread), with `cap` send buffers per direction of elems[dir] floats. Every rank calls
 * it together (NCCL's initialization is collective). */
sp_status sp_nccl_open(sp_ctx *ctx, const struct sp_exec_backend *be, int rank, int nranks,
                       const unsigned char ids[2][SP_NCCL_ID_BYTES], uint32_t cap,
                       const size_t elems[2], struct sp_nccl_p2p **out);
/* the next send buffer of direction dir (on the GPU): 1 with *buf when its previous send is
 * done, 0 while it is still sending, -1 on an error */
int sp_nccl_send_slot(struct sp_nccl_p2p *n, int dir, float **buf);
/* send the buffer sp_nccl_send_slot gave to rank peer (queued) */
bool sp_nccl_send(struct sp_nccl_p2p *n, int dir, int peer);
/* receive elems floats from rank peer into dst, on the GPU (queued), then poll: 1 arrived, 0 not
 * yet, -1 an error */
bool sp_nccl_recv(struct sp_nccl_p2p *n, int dir, int peer, float *dst, size_t elems);
int sp_nccl_recv_done(struct sp_nccl_p2p *n, int dir);
/* what failed, for a message */
const char *sp_nccl_error(const struct sp_nccl_p2p *n);
/* after a wait ran out or the run stopped: the communicators aborted (no call waits on a peer
 * that will not come) */
void sp_nccl_abort(struct sp_nccl_p2p *n);
void sp_nccl_close(struct sp_nccl_p2p *n);

#endif

/* runtime/gpu_links_stub.c: a build without NCCL (or without the GPU executor): GPU ranks pass
 * their tensors through host buffers (runtime/gpu_links.h). */
#include "gpu_links.h"

bool sp_nccl_available(const char **why) {
    *why = "this stagepart was built without NCCL";
    return false;
}

sp_status sp_nccl_make_ids(sp_ctx *ctx, unsigned char ids[2][SP_NCCL_ID_BYTES]) {
    (void)ids;
    return sp_fail(ctx, SP_ERR_UNSUPPORTED, "this stagepart was built without NCCL");
}

sp_status sp_nccl_open(sp_ctx *ctx, const struct sp_exec_backend *be, int rank, int nranks,
                       const unsigned char ids[2][SP_NCCL_ID_BYTES], uint32_t cap,
                       const size_t elems[2], struct sp_nccl_p2p **out) {
    (void)be, (void)rank, (void)nranks, (void)ids, (void)cap, (void)elems;
    *out = NULL;
    return sp_fail(ctx, SP_ERR_UNSUPPORTED, "this stagepart was built without NCCL");
}

int sp_nccl_send_slot(struct sp_nccl_p2p *n, int dir, float **buf) {
    (void)n, (void)dir;
    *buf = NULL;
    return -1;
}
bool sp_nccl_send(struct sp_nccl_p2p *n, int dir, int peer) {
    (void)n, (void)dir, (void)peer;
    return false;
}
bool sp_nccl_recv(struct sp_nccl_p2p *n, int dir, int peer, float *dst, size_t elems) {
    (void)n, (void)dir, (void)peer, (void)dst, (void)elems;
    return false;
}
int sp_nccl_recv_done(struct sp_nccl_p2p *n, int dir) {
    (void)n, (void)dir;
    return -1;
}
const char *sp_nccl_error(const struct sp_nccl_p2p *n) {
    (void)n;
    return "built without NCCL";
}
void sp_nccl_abort(struct sp_nccl_p2p *n) {
    (void)n;
}
void sp_nccl_close(struct sp_nccl_p2p *n) {
    (void)n;
}

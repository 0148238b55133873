/* core/device_stub.c: the CUDA device query when this build has no CUDA support, so callers
 * need no #ifdef (the real one is core/cuda/device_query.c). */
#include "internal.h"

sp_status sp_cuda_device_count(sp_ctx *ctx, int *out_count) {
    if (!ctx || !out_count)
        return SP_ERR_INVALID_ARG;
    sp_ctx_begin(ctx);
    *out_count = 0;
    return sp_fail(ctx, SP_ERR_UNSUPPORTED,
                   "this build has no CUDA support (configure with -DSTAGEPART_CUDA=ON)");
}

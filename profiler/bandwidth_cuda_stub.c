/* profiler/bandwidth_cuda_stub.c: sp_bandwidth_measure_cuda in a build without CUDA
 * (profiler/cuda/bandwidth_cuda.c is the probe). */
#include "internal.h"

sp_status sp_bandwidth_measure_cuda(sp_ctx *ctx, const sp_bandwidth_opts *opts,
                                    sp_bandwidth_result **out) {
    if (!ctx)
        return SP_ERR_INVALID_ARG;
    sp_ctx_begin(ctx);
    (void)opts;
    if (out)
        *out = NULL;
    return sp_fail(ctx, SP_ERR_UNSUPPORTED,
                   "bandwidth --backend cuda: this stagepart was built without CUDA (configure "
                   "with the CUDA toolkit, STAGEPART_CUDA=ON)");
}

/* core/cuda/device_query.c: how many CUDA devices the runtime sees (`stagepart --version`).
 * Maps a missing driver or device to SP_ERR_NO_DEVICE instead of failing hard. */
#include <cuda_runtime_api.h>

#include "internal.h"

sp_status sp_cuda_device_count(sp_ctx *ctx, int *out_count) {
    if (!ctx || !out_count)
        return SP_ERR_INVALID_ARG;
    sp_ctx_begin(ctx);
    *out_count = 0;
    int count = 0;
    cudaError_t err = cudaGetDeviceCount(&count);
    if (err == cudaErrorNoDevice || err == cudaErrorInsufficientDriver ||
        (err == cudaSuccess && count == 0))
        return sp_fail(ctx, SP_ERR_NO_DEVICE, "%s",
                       err == cudaSuccess ? "the runtime sees 0 devices" : cudaGetErrorString(err));
    if (err != cudaSuccess)
        return sp_fail(ctx, SP_ERR_CUDA, "cudaGetDeviceCount failed: %s", cudaGetErrorString(err));
    *out_count = count;
    return SP_OK;
}

/* models/cuda/ops_cuda.h: the built-in models' ops on one GPU: cuBLAS for every matrix product
 * (cublasGemmStridedBatchedEx; fp32, or bf16 tensor-core math for a "bf16" model), the kernels of
 * kernels.h for the rest. The layer code (models/exec.c) runs them through sp_op_runner_cuda with
 * a struct sp_cuda_device as its `device`: the same offsets, saved areas and parameter layouts as
 * on the CPU (models/op_layout.h), so the two can be compared tensor by tensor. */
#ifndef SP_MODELS_CUDA_OPS_CUDA_H
#define SP_MODELS_CUDA_OPS_CUDA_H

#include <cublas_v2.h>
#include <cuda.h>
#include <cuda_runtime.h>
#include <stdbool.h>

#include "cublas_lib.h"
#include "model_impl.h"

struct sp_cuda_device {
    int ordinal;                /* the CUDA device */
    const struct sp_cublas *cb; /* cuBLAS's calls (cublas_lib.h) */
    CUcontext green; /* the stage's SM partition (a green context's CUcontext), or NULL: the
                      * whole GPU through its primary context */
    cublasHandle_t blas;
    cudaStream_t stream;
    cublasComputeType_t compute; /* CUBLAS_COMPUTE_32F, or _32F_FAST_16BF for bf16 */
    float *extra;                /* the attention backward's per-head score gradients */
    cudaEvent_t mark[2];         /* the backend's mark() and the next synchronize() */
    bool marked;
    size_t extra_elems;
    /* the first failure (sticky): ops keep going as no-ops, the caller reads it after a layer */
    cudaError_t cuda_error;
    cublasStatus_t blas_error;
    const char *failed_call;
};

extern const struct sp_op_runner sp_op_runner_cuda;

/* scratch beyond op->work_elems that the op needs on the GPU (sizes sp_cuda_device.extra) */
size_t sp_op_cuda_extra_elems(const struct sp_op *op, uint32_t B);

/* sp_cuda_device_open: device `ordinal` made current, cuBLAS on a new stream of it; with
 * `green` (NULL: none) the stream is the green context's, so the stage's kernels run on its SM
 * partition only (memory is the device's, shared). "bf16" selects bf16 tensor-core products
 * (storage stays fp32). false with *why set on failure. */
bool sp_cuda_device_open(struct sp_cuda_device *dev, int ordinal, CUgreenCtx green,
                         const char *dtype, size_t extra_elems, const char **why);
/* make the stage's context current on the calling thread (its green context, or the device's
 * primary one) */
bool sp_cuda_device_bind(const struct sp_cuda_device *dev);
void sp_cuda_device_close(struct sp_cuda_device *dev);
/* the first recorded failure, or a pending launch error; false when all went well */
bool sp_cuda_device_failed(struct sp_cuda_device *dev, char *msg, size_t cap);

#endif

/* models/cuda/cublas_lib.h: the six cuBLAS calls of the GPU executor, found at run time.
 *
 * cuBLAS is loaded only when a GPU executor opens (dlopen), not linked: loading libcublas and
 * libcublasLt costs about 0.3 s and 150 MB of every process that links them, and the stagepart
 * command runs for `partition` or `check` far more often than on a GPU. Symbols already in the
 * process come first (a program linked with cuBLAS, or the tests' stand-ins), then
 * libcublas.so.<major> by the usual search, then beside the CUDA runtime this process loaded. */
#ifndef SP_MODELS_CUDA_CUBLAS_LIB_H
#define SP_MODELS_CUDA_CUBLAS_LIB_H

#include <cublas_v2.h>

struct sp_cublas {
    cublasStatus_t (*Create)(cublasHandle_t *handle);
    cublasStatus_t (*Destroy)(cublasHandle_t handle);
    cublasStatus_t (*SetStream)(cublasHandle_t handle, cudaStream_t stream);
    const char *(*GetStatusString)(cublasStatus_t status);
    cublasStatus_t (*Saxpy64)(cublasHandle_t handle, int64_t n, const float *alpha, const float *x,
                              int64_t incx, float *y, int64_t incy);
    cublasStatus_t (*GemmStridedBatchedEx)(cublasHandle_t handle, cublasOperation_t transa,
                                           cublasOperation_t transb, int m, int n, int k,
                                           const void *alpha, const void *A, cudaDataType Atype,
                                           int lda, long long strideA, const void *B,
                                           cudaDataType Btype, int ldb, long long strideB,
                                           const void *beta, void *C, cudaDataType Ctype, int ldc,
                                           long long strideC, int batchCount,
                                           cublasComputeType_t computeType, cublasGemmAlgo_t algo);
};

/* the table, found once (thread-safe); NULL with *why saying what is missing */
const struct sp_cublas *sp_cublas(const char **why);

#endif

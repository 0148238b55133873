/* tests/cuda/fake_cuda.c: the CUDA runtime, cuBLAS and kernel entry points the GPU executor
 * (models/cuda/ops_cuda.c, stage_cuda.c) calls, done on the host, so that stagepart-model-cuda's
 * --compare-cpu runs without a GPU (test_model_cuda_fake_*). "Device" memory is host memory.
 *
 * What it checks: everything of the GPU path outside the kernels' bodies: the row-major to
 * column-major mapping of every cuBLAS call (transposes, leading dimensions, batch strides over
 * attention heads), where each op reads and writes, the scratch sizes, the stage backend and the
 * step loop. The kernels themselves (models/cuda/kernels.cu) run only on a GPU: the fakes below
 * restate what kernels.h says each does, in the plainest loops (the row softmax is the CPU
 * ops' own, sp_softmax_row).
 *
 * cuBLAS's reference semantics: column-major, C(m x n) = alpha op(A) op(B) + beta C, element (i, j)
 * of a matrix with leading dimension ld at [i + j ld]. */
#include <cublas_v2.h>
#include <cuda.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kernels.h"
#include "op_common.h"

/* ---- launches outside every NVTX range
 *
 * The model program (models/cuda/program) counts its open NVTX ranges in sp_model_range_depth;
 * where it is linked in and FAKE_CUDA_REQUIRE_RANGES=1, every kernel, cuBLAS product, copy and
 * memset made with no range open fails, naming the call: what the collector would count as
 * launched outside every range (tests/cuda/model_cuda_ranges.sh). */
extern unsigned sp_model_range_depth __attribute__((weak));
static void fake_launch(const char *what) {
    static int require = -1;
    if (require < 0) {
        const char *e = getenv("FAKE_CUDA_REQUIRE_RANGES");
        require = e && strcmp(e, "1") == 0;
    }
    if (require && &sp_model_range_depth != NULL && sp_model_range_depth == 0) {
        fprintf(stderr, "fake_cuda: %s launched outside every NVTX range\n", what);
        _Exit(3);
    }
}

/* ---- the runtime */

/* FAKE_CUDA_DEVICES devices (default 1); FAKE_CUDA_MEMORY: the bytes they may allocate together
 * (default: as much as the host gives), to test running out of device memory */
cudaError_t cudaGetDeviceCount(int *count) {
    const char *e = getenv("FAKE_CUDA_DEVICES");
    *count = e ? atoi(e) : 1;
    return *count > 0 ? cudaSuccess : cudaErrorNoDevice;
}
static _Atomic size_t g_allocated;
#define HEADER 64 /* each block's size, kept in front of it (64: any alignment) */
cudaError_t cudaMalloc(void **p, size_t size) {
    const char *limit = getenv("FAKE_CUDA_MEMORY");
    *p = NULL;
    if (limit && g_allocated + size > (size_t)strtoull(limit, NULL, 10))
        return cudaErrorMemoryAllocation;
    char *block = calloc(1, HEADER + size);
    if (!block)
        return cudaErrorMemoryAllocation;
    memcpy(block, &size, sizeof size);
    g_allocated += size;
    *p = block + HEADER;
    return cudaSuccess;
}
cudaError_t cudaFree(void *p) {
    if (p) {
        char *block = (char *)p - HEADER;
        size_t size;
        memcpy(&size, block, sizeof size);
        g_allocated -= size;
        free(block);
    }
    return cudaSuccess;
}
cudaError_t cudaMallocHost(void **p, size_t size) { /* page-locked host memory: host memory */
    *p = malloc(size ? size : 1);
    return *p ? cudaSuccess : cudaErrorMemoryAllocation;
}
cudaError_t cudaFreeHost(void *p) {
    free(p);
    return cudaSuccess;
}
cudaError_t cudaMemcpy(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind) {
    fake_launch("cudaMemcpy");
    (void)kind;
    memmove(dst, src, n);
    return cudaSuccess;
}
cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind,
                            cudaStream_t s) {
    fake_launch("cudaMemcpyAsync");
    (void)s;
    return cudaMemcpy(dst, src, n, kind);
}
cudaError_t cudaMemcpyPeerAsync(void *dst, int dst_device, const void *src, int src_device,
                                size_t n, cudaStream_t s) {
    fake_launch("cudaMemcpyPeerAsync");
    (void)dst_device, (void)src_device, (void)s;
    memmove(dst, src, n);
    return cudaSuccess;
}
cudaError_t cudaSetDevice(int device) {
    int n = 0;
    cudaGetDeviceCount(&n);
    return device >= 0 && device < n ? cudaSuccess : cudaErrorInvalidDevice;
}
cudaError_t cudaDeviceCanAccessPeer(int *can, int device, int peer) {
    *can = device != peer;
    return cudaSuccess;
}
cudaError_t cudaDeviceEnablePeerAccess(int peer, unsigned int flags) {
    (void)peer, (void)flags;
    return cudaSuccess;
}
cudaError_t cudaMemsetAsync(void *p, int value, size_t n, cudaStream_t s) {
    fake_launch("cudaMemsetAsync");
    (void)s;
    memset(p, value, n);
    return cudaSuccess;
}
cudaError_t cudaStreamSynchronize(cudaStream_t s) {
    (void)s;
    return cudaSuccess;
}
cudaError_t cudaGetLastError(void) {
    return cudaSuccess;
}
const char *cudaGetErrorString(cudaError_t e) {
    (void)e;
    return "fake CUDA error";
}
/* events: the host's monotonic clock when recorded */
cudaError_t cudaEventCreate(cudaEvent_t *e) {
    *e = (cudaEvent_t)calloc(1, sizeof(double));
    return *e ? cudaSuccess : cudaErrorMemoryAllocation;
}
cudaError_t cudaEventDestroy(cudaEvent_t e) {
    free(e);
    return cudaSuccess;
}
/* the stand-in NCCL (tests/cuda/fake_nccl.c: MPI underneath), where it is linked: an event
 * takes the NCCL messages queued before it, and is done when they are */
extern void fake_nccl_recorded(cudaEvent_t e) __attribute__((weak));
extern bool fake_nccl_done(cudaEvent_t e) __attribute__((weak));
cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned int flags) {
    (void)flags;
    return cudaEventCreate(e);
}
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s) {
    (void)s;
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    *(double *)(void *)e = (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
    if (fake_nccl_recorded)
        fake_nccl_recorded(e);
    return cudaSuccess;
}
cudaError_t cudaEventQuery(cudaEvent_t e) {
    return !fake_nccl_done || fake_nccl_done(e) ? cudaSuccess : cudaErrorNotReady;
}
cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t a, cudaEvent_t b) {
    *ms = (float)(*(double *)(void *)b - *(double *)(void *)a);
    return cudaSuccess;
}
static int g_stream;
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned int flags) {
    (void)flags;
    *s = (cudaStream_t)&g_stream;
    return cudaSuccess;
}
cudaError_t cudaStreamDestroy(cudaStream_t s) {
    (void)s;
    return cudaSuccess;
}

/* ---- the driver's green contexts, which the executor looks up through
 * cudaGetDriverEntryPointByVersion: FAKE_CUDA_SMS SMs per device (default 132), partitions in
 * multiples of 8 of at least 8 (a Hopper's rule); FAKE_CUDA_NO_GREEN: a driver without them */

static unsigned fake_sms(void) {
    const char *e = getenv("FAKE_CUDA_SMS");
    return e ? (unsigned)atoi(e) : 132u;
}
static CUresult f_device_get(CUdevice *d, int ordinal) {
    *d = ordinal;
    return CUDA_SUCCESS;
}
static CUresult f_ctx_set_current(CUcontext c) {
    return c ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}
static CUresult f_get_dev_resource(CUdevice dev, CUdevResource *r, CUdevResourceType type) {
    (void)dev;
    memset(r, 0, sizeof *r);
    r->type = type;
    r->sm.smCount = fake_sms();
    r->sm.minSmPartitionSize = 8;
    r->sm.smCoscheduledAlignment = 8;
    return CUDA_SUCCESS;
}
static CUresult f_split_by_count(CUdevResource *result, unsigned *nb, const CUdevResource *in,
                                 CUdevResource *rest, unsigned flags, unsigned min_count) {
    (void)flags;
    unsigned each = (min_count < 8 ? 8 : min_count + 7) / 8 * 8, can = in->sm.smCount / each;
    unsigned n = !result || *nb > can ? can : *nb;
    for (unsigned i = 0; result && i < n; i++) {
        result[i] = *in;
        result[i].sm.smCount = each;
    }
    if (rest) {
        *rest = *in;
        rest->sm.smCount = in->sm.smCount - n * each;
    }
    *nb = n;
    return CUDA_SUCCESS;
}
static CUresult f_generate_desc(CUdevResourceDesc *desc, CUdevResource *r, unsigned n) {
    *desc = n == 1 ? (CUdevResourceDesc)r : NULL;
    return n == 1 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
static CUresult f_green_create(CUgreenCtx *g, CUdevResourceDesc desc, CUdevice dev,
                               unsigned flags) {
    (void)dev;
    if (!desc || flags != CU_GREEN_CTX_DEFAULT_STREAM) /* the flag is required */
        return CUDA_ERROR_INVALID_VALUE;
    *g = (CUgreenCtx)malloc(1);
    return *g ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}
static CUresult f_green_destroy(CUgreenCtx g) {
    free(g);
    return CUDA_SUCCESS;
}
static CUresult f_ctx_from_green(CUcontext *c, CUgreenCtx g) {
    *c = (CUcontext)g;
    return CUDA_SUCCESS;
}
static CUresult f_green_stream(CUstream *st, CUgreenCtx g, unsigned flags, int priority) {
    (void)g, (void)priority;
    if (flags != CU_STREAM_NON_BLOCKING) /* required */
        return CUDA_ERROR_INVALID_VALUE;
    *st = (CUstream)&g_stream;
    return CUDA_SUCCESS;
}

cudaError_t cudaGetDriverEntryPointByVersion(const char *symbol, void **fn, unsigned version,
                                             unsigned long long flags,
                                             enum cudaDriverEntryPointQueryResult *q) {
    (void)version, (void)flags;
    static const struct {
        const char *name;
        void *fn;
        bool green;
    } table[] = {
        {"cuDeviceGet", (void *)f_device_get, false},
        {"cuCtxSetCurrent", (void *)f_ctx_set_current, false},
        {"cuDeviceGetDevResource", (void *)f_get_dev_resource, true},
        {"cuDevSmResourceSplitByCount", (void *)f_split_by_count, true},
        {"cuDevResourceGenerateDesc", (void *)f_generate_desc, true},
        {"cuGreenCtxCreate", (void *)f_green_create, true},
        {"cuGreenCtxDestroy", (void *)f_green_destroy, true},
        {"cuCtxFromGreenCtx", (void *)f_ctx_from_green, true},
        {"cuGreenCtxStreamCreate", (void *)f_green_stream, true},
    };
    *fn = NULL;
    *q = cudaDriverEntryPointSymbolNotFound;
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (strcmp(symbol, table[i].name) == 0 &&
            !(table[i].green && getenv("FAKE_CUDA_NO_GREEN"))) {
            *fn = table[i].fn;
            *q = cudaDriverEntryPointSuccess;
        }
    return cudaSuccess;
}

/* ---- cuBLAS */

static int g_handle;
cublasStatus_t cublasCreate_v2(cublasHandle_t *h) {
    *h = (cublasHandle_t)&g_handle;
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasDestroy_v2(cublasHandle_t h) {
    (void)h;
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasSetStream_v2(cublasHandle_t h, cudaStream_t s) {
    (void)h, (void)s;
    return CUBLAS_STATUS_SUCCESS;
}
const char *cublasGetStatusString(cublasStatus_t st) {
    (void)st;
    return "fake cuBLAS error";
}
cublasStatus_t cublasSaxpy_v2_64(cublasHandle_t h, int64_t n, const float *alpha, const float *x,
                                 int64_t incx, float *y, int64_t incy) {
    fake_launch("cublasSaxpy_v2_64");
    (void)h;
    for (int64_t k = 0; k < n; k++)
        y[k * incy] += *alpha * x[k * incx];
    return CUBLAS_STATUS_SUCCESS;
}

/* element (i, j) of op(M), M column-major with leading dimension ld */
static float at(const float *M, int ld, bool trans, int i, int j) {
    return trans ? M[j + (size_t)i * ld] : M[i + (size_t)j * ld];
}

cublasStatus_t cublasGemmStridedBatchedEx(cublasHandle_t h, cublasOperation_t ta,
                                          cublasOperation_t tb, int m, int n, int k,
                                          const void *alpha, const void *A, cudaDataType at_,
                                          int lda, long long sA, const void *B, cudaDataType bt,
                                          int ldb, long long sB, const void *beta, void *C,
                                          cudaDataType ct, int ldc, long long sC, int batch,
                                          cublasComputeType_t compute, cublasGemmAlgo_t algo) {
    fake_launch("cublasGemmStridedBatchedEx");
    (void)h, (void)algo, (void)compute;
    if (at_ != CUDA_R_32F || bt != CUDA_R_32F || ct != CUDA_R_32F)
        return CUBLAS_STATUS_NOT_SUPPORTED;
    float al = *(const float *)alpha, be = *(const float *)beta;
    for (int b = 0; b < batch; b++) {
        const float *Ab = (const float *)A + b * sA, *Bb = (const float *)B + b * sB;
        float *Cb = (float *)C + b * sC;
        for (int j = 0; j < n; j++)
            for (int i = 0; i < m; i++) {
                double acc = 0.0;
                for (int p = 0; p < k; p++)
                    acc += (double)at(Ab, lda, ta == CUBLAS_OP_T, i, p) *
                           (double)at(Bb, ldb, tb == CUBLAS_OP_T, p, j);
                float *c = &Cb[i + (size_t)j * ldc];
                *c = al * (float)acc + (be == 0.0f ? 0.0f : be * *c);
            }
    }
    return CUBLAS_STATUS_SUCCESS;
}

/* ---- the kernels (kernels.h), as loops */

void spk_add_bias_rows(cudaStream_t s, size_t rows, size_t n, const float *b, float *Y) {
    fake_launch("spk_add_bias_rows");
    (void)s;
    for (size_t i = 0; i < rows * n; i++)
        Y[i] += b[i % n];
}
void spk_colsum_acc(cudaStream_t s, size_t rows, size_t n, const float *dY, float *db) {
    fake_launch("spk_colsum_acc");
    (void)s;
    for (size_t r = 0; r < rows; r++)
        for (size_t o = 0; o < n; o++)
            db[o] += dY[r * n + o];
}
void spk_add_bias_channels(cudaStream_t s, size_t B, size_t C, size_t hw, const float *bias,
                           float *Y) {
    fake_launch("spk_add_bias_channels");
    (void)s;
    for (size_t i = 0; i < B * C * hw; i++)
        Y[i] += bias[(i / hw) % C];
}
void spk_channel_sum_acc(cudaStream_t s, size_t B, size_t C, size_t hw, const float *dY,
                         float *dbias) {
    fake_launch("spk_channel_sum_acc");
    (void)s;
    for (size_t i = 0; i < B * C * hw; i++)
        dbias[(i / hw) % C] += dY[i];
}

void spk_norm_forward(cudaStream_t s, int rms, size_t rows, size_t n, const float *x,
                      const float *g, const float *beta, float *y, float *stats) {
    fake_launch("spk_norm_forward");
    (void)s;
    for (size_t r = 0; r < rows; r++) {
        const float *xr = x + r * n;
        double mean = 0.0, sq = 0.0;
        for (size_t k = 0; k < n && !rms; k++)
            mean += (double)xr[k] / (double)n;
        for (size_t k = 0; k < n; k++)
            sq += ((double)xr[k] - mean) * ((double)xr[k] - mean);
        float rstd = (float)(1.0 / sqrt(sq / (double)n + 1e-5));
        for (size_t k = 0; k < n; k++)
            y[r * n + k] = (xr[k] - (float)mean) * rstd * g[k] + (beta ? beta[k] : 0.0f);
        stats[2 * r] = (float)mean;
        stats[2 * r + 1] = rstd;
    }
}
void spk_norm_backward_dx(cudaStream_t s, int rms, size_t rows, size_t n, const float *x,
                          const float *stats, const float *g, const float *dy, float *dx) {
    fake_launch("spk_norm_backward_dx");
    (void)s;
    for (size_t r = 0; r < rows; r++) {
        float mu = stats[2 * r], rstd = stats[2 * r + 1];
        double md = 0.0, mdx = 0.0;
        for (size_t k = 0; k < n; k++) {
            double d = (double)(dy[r * n + k] * g[k]), xhat = (double)((x[r * n + k] - mu) * rstd);
            md += d / (double)n;
            mdx += d * xhat / (double)n;
        }
        for (size_t k = 0; k < n; k++) {
            float d = dy[r * n + k] * g[k], xhat = (x[r * n + k] - mu) * rstd;
            dx[r * n + k] += rstd * (d - (rms ? 0.0f : (float)md) - xhat * (float)mdx);
        }
    }
}
void spk_norm_backward_params(cudaStream_t s, size_t rows, size_t n, const float *x,
                              const float *stats, const float *dy, float *dg, float *dbeta) {
    fake_launch("spk_norm_backward_params");
    (void)s;
    for (size_t r = 0; r < rows; r++)
        for (size_t k = 0; k < n; k++) {
            dg[k] += dy[r * n + k] * (x[r * n + k] - stats[2 * r]) * stats[2 * r + 1];
            if (dbeta)
                dbeta[k] += dy[r * n + k];
        }
}

void spk_softmax_rows(cudaStream_t s, size_t rows, size_t S, int causal, float *p) {
    fake_launch("spk_softmax_rows");
    (void)s;
    for (size_t r = 0; r < rows; r++) {
        size_t n = causal ? r % S + 1 : S;
        sp_softmax_row(p + r * S, n);
        for (size_t j = n; j < S; j++)
            p[r * S + j] = 0.0f;
    }
}
void spk_softmax_backward_rows(cudaStream_t s, size_t rows, size_t S, const float *p, float *dp) {
    fake_launch("spk_softmax_backward_rows");
    (void)s;
    for (size_t r = 0; r < rows; r++) {
        double dot = 0.0;
        for (size_t j = 0; j < S; j++)
            dot += (double)p[r * S + j] * (double)dp[r * S + j];
        for (size_t j = 0; j < S; j++)
            dp[r * S + j] = p[r * S + j] * (dp[r * S + j] - (float)dot);
    }
}

static float gelu_t(float a) {
    return tanhf(0.7978845608f * (a + 0.044715f * a * a * a));
}
void spk_gelu_forward(cudaStream_t s, size_t n, const float *a, float *g) {
    fake_launch("spk_gelu_forward");
    (void)s;
    for (size_t k = 0; k < n; k++)
        g[k] = 0.5f * a[k] * (1.0f + gelu_t(a[k]));
}
void spk_gelu_backward(cudaStream_t s, size_t n, const float *a, float *dg) {
    fake_launch("spk_gelu_backward");
    (void)s;
    for (size_t k = 0; k < n; k++) {
        float v = a[k], t = gelu_t(v);
        dg[k] *= 0.5f * (1.0f + t) +
                 0.5f * v * (1.0f - t * t) * 0.7978845608f * (1.0f + 3.0f * 0.044715f * v * v);
    }
}
void spk_swiglu_forward(cudaStream_t s, size_t n, const float *a, const float *c, float *g) {
    fake_launch("spk_swiglu_forward");
    (void)s;
    for (size_t k = 0; k < n; k++)
        g[k] = a[k] / (1.0f + expf(-a[k])) * c[k];
}
void spk_swiglu_backward(cudaStream_t s, size_t n, const float *a, const float *c, float *dg,
                         float *dc) {
    fake_launch("spk_swiglu_backward");
    (void)s;
    for (size_t k = 0; k < n; k++) {
        float sg = 1.0f / (1.0f + expf(-a[k])), silu = a[k] * sg;
        dc[k] = dg[k] * silu;
        dg[k] = dg[k] * c[k] * (sg + silu * (1.0f - sg));
    }
}

void spk_embedding_forward(cudaStream_t s, size_t rows, size_t H, size_t S, const int32_t *tokens,
                           const float *tok, const float *pos, float *y) {
    fake_launch("spk_embedding_forward");
    (void)s;
    for (size_t r = 0; r < rows; r++)
        for (size_t k = 0; k < H; k++)
            y[r * H + k] = tok[(size_t)tokens[r] * H + k] + pos[(r % S) * H + k];
}
void spk_embedding_backward(cudaStream_t s, size_t rows, size_t H, size_t S, const int32_t *tokens,
                            const float *dy, float *dtok, float *dpos) {
    fake_launch("spk_embedding_backward");
    (void)s;
    for (size_t r = 0; r < rows; r++)
        for (size_t k = 0; k < H; k++) {
            dtok[(size_t)tokens[r] * H + k] += dy[r * H + k];
            dpos[(r % S) * H + k] += dy[r * H + k];
        }
}

void spk_softmax_xent_forward(cudaStream_t s, size_t rows, size_t V, const int32_t *labels,
                              float *p, float *row_loss) {
    fake_launch("spk_softmax_xent_forward");
    (void)s;
    for (size_t r = 0; r < rows; r++) {
        sp_softmax_row(p + r * V, V);
        float pl = p[r * V + (size_t)labels[r]];
        row_loss[r] = -logf(pl > 1e-30f ? pl : 1e-30f);
    }
}
void spk_mean_per_sample(cudaStream_t s, size_t B, size_t per, const float *row_loss, float *y) {
    fake_launch("spk_mean_per_sample");
    (void)s;
    for (size_t b = 0; b < B; b++) {
        double acc = 0.0;
        for (size_t r = b * per; r < (b + 1) * per; r++)
            acc += (double)row_loss[r];
        y[b] = (float)(acc / (double)per);
    }
}
void spk_softmax_xent_backward(cudaStream_t s, size_t rows, size_t V, const int32_t *labels,
                               const float *p, float inv, float *dlogits) {
    fake_launch("spk_softmax_xent_backward");
    (void)s;
    for (size_t i = 0; i < rows * V; i++)
        dlogits[i] = p[i] * inv - ((size_t)labels[i / V] == i % V ? inv : 0.0f);
}

/* pixel of column-matrix entry i, or -1 when it falls in the padding */
static long conv_pixel(struct spk_conv_shape c, size_t i) {
    size_t hw = (size_t)c.Ho * c.Wo, row = i / hw, q = i % hw;
    long ch = (long)(row / ((size_t)c.k * c.k)), ki = (long)(row / c.k % c.k),
         kj = (long)(row % c.k);
    long y = (long)(q / c.Wo) * c.stride + ki - c.pad, x = (long)(q % c.Wo) * c.stride + kj - c.pad;
    return y < 0 || y >= c.H || x < 0 || x >= c.W ? -1 : (ch * c.H + y) * c.W + x;
}
void spk_im2col(cudaStream_t s, struct spk_conv_shape c, const float *x, float *cols) {
    fake_launch("spk_im2col");
    (void)s;
    for (size_t i = 0; i < (size_t)c.C * c.k * c.k * c.Ho * c.Wo; i++) {
        long p = conv_pixel(c, i);
        cols[i] = p < 0 ? 0.0f : x[p];
    }
}
void spk_col2im_acc(cudaStream_t s, struct spk_conv_shape c, const float *cols, float *dx) {
    fake_launch("spk_col2im_acc");
    (void)s;
    for (size_t i = 0; i < (size_t)c.C * c.k * c.k * c.Ho * c.Wo; i++) {
        long p = conv_pixel(c, i);
        if (p >= 0)
            dx[p] += cols[i];
    }
}

void spk_batchnorm_forward(cudaStream_t s, size_t B, size_t C, size_t hw, const float *x,
                           const float *params, float *y, float *stats) {
    fake_launch("spk_batchnorm_forward");
    (void)s;
    for (size_t c = 0; c < C; c++) {
        double mean = 0.0, sq = 0.0;
        for (size_t b = 0; b < B; b++)
            for (size_t q = 0; q < hw; q++)
                mean += (double)x[(b * C + c) * hw + q] / (double)(B * hw);
        for (size_t b = 0; b < B; b++)
            for (size_t q = 0; q < hw; q++) {
                double d = (double)x[(b * C + c) * hw + q] - mean;
                sq += d * d / (double)(B * hw);
            }
        float rstd = (float)(1.0 / sqrt(sq + 1e-5));
        for (size_t b = 0; b < B; b++)
            for (size_t q = 0; q < hw; q++) {
                size_t k = (b * C + c) * hw + q;
                y[k] = (x[k] - (float)mean) * rstd * params[c] + params[C + c];
            }
        stats[2 * c] = (float)mean;
        stats[2 * c + 1] = rstd;
    }
}
void spk_batchnorm_backward(cudaStream_t s, size_t B, size_t C, size_t hw, const float *x,
                            const float *stats, const float *params, const float *dy, float *dx,
                            float *dparams) {
    fake_launch("spk_batchnorm_backward");
    (void)s;
    for (size_t c = 0; c < C; c++) {
        float mu = stats[2 * c], rstd = stats[2 * c + 1];
        double sd = 0.0, sdx = 0.0;
        for (size_t b = 0; b < B; b++)
            for (size_t q = 0; q < hw; q++) {
                size_t k = (b * C + c) * hw + q;
                sd += (double)dy[k];
                sdx += (double)(dy[k] * (x[k] - mu) * rstd);
            }
        dparams[c] += (float)sdx;
        dparams[C + c] += (float)sd;
        for (size_t b = 0; dx && b < B; b++)
            for (size_t q = 0; q < hw; q++) {
                size_t k = (b * C + c) * hw + q;
                float xhat = (x[k] - mu) * rstd;
                dx[k] = params[c] * rstd *
                        (dy[k] - (float)(sd / (double)(B * hw)) -
                         xhat * (float)(sdx / (double)(B * hw)));
            }
    }
}

void spk_relu_forward(cudaStream_t s, size_t n, const float *x, float *y) {
    fake_launch("spk_relu_forward");
    (void)s;
    for (size_t k = 0; k < n; k++)
        y[k] = x[k] > 0.0f ? x[k] : 0.0f;
}
void spk_relu_backward(cudaStream_t s, size_t n, const float *x, const float *dy, float *dx) {
    fake_launch("spk_relu_backward");
    (void)s;
    for (size_t k = 0; k < n; k++)
        dx[k] = x[k] > 0.0f ? dy[k] : 0.0f;
}

void spk_maxpool_forward(cudaStream_t s, size_t planes, int H, int W, int k, int st, int Ho, int Wo,
                         const float *x, float *y, float *argmax) {
    fake_launch("spk_maxpool_forward");
    (void)s;
    for (size_t o = 0; o < planes * (size_t)Ho * Wo; o++) {
        size_t p = o / ((size_t)Ho * Wo);
        int oy = (int)(o / (size_t)Wo % (size_t)Ho), ox = (int)(o % (size_t)Wo);
        const float *xp = x + p * (size_t)H * W;
        int best = oy * st * W + ox * st;
        for (int i = 0; i < k; i++)
            for (int j = 0; j < k; j++) {
                int q = (oy * st + i) * W + ox * st + j;
                best = xp[q] > xp[best] ? q : best;
            }
        y[o] = xp[best];
        argmax[o] = (float)best;
    }
}
void spk_maxpool_backward(cudaStream_t s, size_t planes, int H, int W, int Ho, int Wo,
                          const float *argmax, const float *dy, float *dx) {
    fake_launch("spk_maxpool_backward");
    (void)s;
    memset(dx, 0, planes * (size_t)H * W * sizeof *dx);
    for (size_t o = 0; o < planes * (size_t)Ho * Wo; o++)
        dx[o / ((size_t)Ho * Wo) * (size_t)H * W + (size_t)argmax[o]] += dy[o];
}
void spk_avgpool_forward(cudaStream_t s, size_t planes, size_t hw, const float *x, float *y) {
    fake_launch("spk_avgpool_forward");
    (void)s;
    for (size_t p = 0; p < planes; p++) {
        double acc = 0.0;
        for (size_t q = 0; q < hw; q++)
            acc += (double)x[p * hw + q];
        y[p] = (float)(acc / (double)hw);
    }
}
void spk_avgpool_backward(cudaStream_t s, size_t planes, size_t hw, const float *dy, float *dx) {
    fake_launch("spk_avgpool_backward");
    (void)s;
    for (size_t i = 0; i < planes * hw; i++)
        dx[i] = dy[i / hw] / (float)hw;
}

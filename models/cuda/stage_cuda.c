/* models/cuda/stage_cuda.c: a stage's tensors on one GPU (an sp_exec_backend over cudaMalloc and
 * the executor's stream), and a micro-batch uploaded there. */
#include <stdio.h>
#include <string.h>

#include "stage_cuda.h"

/* On the stage's device whatever the calling thread's current one (the run makes every
 * stage's buffers from one thread), and zeroed before it returns: another stage may write into
 * it from its own stream (a queue buffer). */
static void *gpu_alloc_zeroed(void *device, size_t bytes) {
    struct sp_cuda_device *d = device;
    void *p = NULL;
    if (!sp_cuda_device_bind(d) || cudaMalloc(&p, bytes) != cudaSuccess) {
        cudaGetLastError(); /* an allocation failure is not sticky; the caller reports it */
        return NULL;
    }
    if (cudaMemsetAsync(p, 0, bytes, d->stream) != cudaSuccess ||
        cudaStreamSynchronize(d->stream) != cudaSuccess) {
        cudaFree(p);
        return NULL;
    }
    return p;
}

static void gpu_release(void *device, void *p) {
    (void)device;
    cudaFree(p);
}

/* a copy on the stage's stream, waited for: an upload's host buffer may be freed as soon as it
 * returns, and a download holds what the work queued before it computed */
static bool copy_waited(struct sp_cuda_device *d, void *dst, const void *src, size_t bytes,
                        enum cudaMemcpyKind kind) {
    return cudaMemcpyAsync(dst, src, bytes, kind, d->stream) == cudaSuccess &&
           cudaStreamSynchronize(d->stream) == cudaSuccess;
}

static bool gpu_upload(void *device, void *dst, const void *src, size_t bytes) {
    return copy_waited(device, dst, src, bytes, cudaMemcpyHostToDevice);
}

static bool gpu_download(void *device, void *dst, const void *src, size_t bytes) {
    return copy_waited(device, dst, src, bytes, cudaMemcpyDeviceToHost);
}

static void gpu_sgd(void *device, float *params, float *dparams, size_t n, float lr) {
    struct sp_cuda_device *d = device;
    float alpha = -lr;
    if (d->cuda_error != cudaSuccess || d->blas_error != CUBLAS_STATUS_SUCCESS)
        return;
    cublasStatus_t st = d->cb->Saxpy64(d->blas, (int64_t)n, &alpha, dparams, 1, params, 1);
    if (st != CUBLAS_STATUS_SUCCESS) {
        d->blas_error = st;
        d->failed_call = "cublasSaxpy (SGD)";
        return;
    }
    cudaError_t e = cudaMemsetAsync(dparams, 0, n * sizeof *dparams, d->stream);
    if (e != cudaSuccess) {
        d->cuda_error = e;
        d->failed_call = "cudaMemsetAsync (SGD)";
    }
}

static bool gpu_copy(void *device, void *dst, const void *src, size_t bytes) {
    return copy_waited(device, dst, src, bytes, cudaMemcpyDeviceToDevice);
}

/* a peer copy (a copy within the device when both are one): over NVLink or PCIe, staged through
 * the host by the driver when the two cannot reach each other */
static bool gpu_copy_to(void *device, void *dst, void *dst_device, const void *src, size_t bytes) {
    struct sp_cuda_device *d = device, *to = dst_device;
    return cudaMemcpyPeerAsync(dst, to->ordinal, src, d->ordinal, bytes, d->stream) ==
               cudaSuccess &&
           cudaStreamSynchronize(d->stream) == cudaSuccess;
}

static bool gpu_synchronize(void *device, char *why, size_t cap) {
    struct sp_cuda_device *d = device;
    if (d->marked && cudaEventRecord(d->mark[1], d->stream) != cudaSuccess)
        d->marked = false;
    cudaError_t e = cudaStreamSynchronize(d->stream);
    if (sp_cuda_device_failed(d, why, cap))
        return false;
    if (e != cudaSuccess) {
        snprintf(why, cap, "cudaStreamSynchronize: %s", cudaGetErrorString(e));
        return false;
    }
    return true;
}

static void gpu_mark(void *device) {
    struct sp_cuda_device *d = device;
    d->marked = cudaEventRecord(d->mark[0], d->stream) == cudaSuccess;
}

static double gpu_marked_ms(void *device) {
    struct sp_cuda_device *d = device;
    float ms = 0.0f;
    bool ok = d->marked && cudaEventElapsedTime(&ms, d->mark[0], d->mark[1]) == cudaSuccess;
    d->marked = false;
    return ok ? (double)ms : -1.0;
}

static void *gpu_alloc_host(void *device, size_t bytes) {
    (void)device;
    void *p = NULL;
    if (cudaMallocHost(&p, bytes ? bytes : 1) != cudaSuccess)
        return NULL;
    memset(p, 0, bytes);
    return p;
}

static void gpu_release_host(void *device, void *p) {
    (void)device;
    if (p)
        cudaFreeHost(p);
}

static bool gpu_bind_thread(void *device) {
    return sp_cuda_device_bind(device);
}

void sp_cuda_backend_init(struct sp_exec_backend *be, struct sp_cuda_device *dev) {
    be->ops = &sp_op_runner_cuda;
    be->device = dev;
    be->alloc_zeroed = gpu_alloc_zeroed;
    be->release = gpu_release;
    be->upload = gpu_upload;
    be->download = gpu_download;
    be->copy = gpu_copy;
    be->copy_to = gpu_copy_to;
    be->synchronize = gpu_synchronize;
    be->bind_thread = gpu_bind_thread;
    be->mark = gpu_mark;
    be->marked_ms = gpu_marked_ms;
    be->sgd = gpu_sgd;
    be->alloc_host = gpu_alloc_host;
    be->release_host = gpu_release_host;
}

size_t sp_cuda_extra_elems(const struct sp_model *m, size_t first, size_t last) {
    size_t extra = 0;
    for (size_t l = first; l <= last; l++)
        for (size_t j = 0; j < m->layers[l].n_ops; j++) {
            size_t e = sp_op_cuda_extra_elems(&m->layers[l].ops[j], m->bound_batch);
            extra = e > extra ? e : extra;
        }
    return extra;
}

/* runtime/cuda/run_devices.c: one GPU per stage for `run --backend cuda`: stage s on device
 * s mod the devices there are, each stage with its own stream and cuBLAS handle, and peer access
 * between neighbouring stages' GPUs where the hardware has it (cudaMemcpyPeerAsync works either
 * way: without it the driver stages the copy through the host).
 *
 * Stages that share a GPU run as two streams of it, competing for every SM; with gpu_split each
 * gets an equal SM partition instead, a green context (../shared/design/profiler.md, section 10):
 * the GPU's SMs split once into as many groups as it has stages, each group a multiple of the
 * co-scheduling alignment and at least the minimum partition. Memory bandwidth and L2 stay
 * shared, so memory-bound layers run slower than on a GPU of their own: the run says so. */
#include <stdio.h>
#include <string.h>

#include "driver.h"
#include "run_devices.h"
#include "sm_partition.h"
#include "stage_cuda.h"

struct sp_run_devices {
    uint32_t P;
    struct sp_cuda_device *dev;      /* [P] */
    struct sp_exec_backend *backend; /* [P] */
    const struct sp_exec_backend **be;
    CUgreenCtx *green; /* [P]: the stage's partition, or NULL */
};

void sp_run_devices_close(struct sp_run_devices *d) {
    if (!d)
        return;
    for (uint32_t s = 0; d->dev && s < d->P; s++)
        if (d->dev[s].stream)
            sp_cuda_device_close(&d->dev[s]);
    for (uint32_t s = 0; d->green && s < d->P; s++)
        if (d->green[s])
            sp_cu_driver()->GreenCtxDestroy(d->green[s]);
    sp_free(d->dev);
    sp_free(d->backend);
    sp_free(d->be);
    sp_free(d->green);
    sp_free(d);
}

/* Every stage's green context: the stages of each GPU that hosts several, split */
static sp_status make_partitions(sp_ctx *ctx, struct sp_run_devices *d, int n, unsigned *sms) {
    CUgreenCtx *parts = sp_calloc(d->P, sizeof *parts);
    if (!parts)
        return sp_oom(ctx, "the SM partitions");
    sp_status st = SP_OK;
    for (int g = 0; st == SP_OK && g < n; g++) {
        unsigned k = 0; /* stages g, g + n, g + 2n, ... */
        for (uint32_t s = (uint32_t)g; s < d->P; s += (uint32_t)n)
            k++;
        if (k < 2)
            continue;
        unsigned each = 0;
        st = sp_cuda_sm_partitions(ctx, g, k, 0, parts, &each);
        unsigned i = 0;
        for (uint32_t s = (uint32_t)g; s < d->P; s += (uint32_t)n, i++) {
            d->green[s] = parts[i]; /* closed with the devices, even after a failure */
            sms[s] = each;
        }
        memset(parts, 0, d->P * sizeof *parts);
        if (st == SP_OK)
            sp_warn(ctx,
                    "GPU %d runs %u stages on SM partitions of %u SMs each (green contexts): "
                    "their memory bandwidth and L2 cache are shared, so memory-bound layers run "
                    "slower than on a GPU of their own",
                    g, k, each);
    }
    sp_free(parts);
    return st;
}

sp_status sp_run_devices_open(sp_ctx *ctx, const struct sp_model *m, uint32_t P, bool gpu_split,
                              unsigned first_gpu, struct sp_run_devices **out,
                              const struct sp_exec_backend ***be, int *device, unsigned *sms) {
    *out = NULL;
    *be = NULL;
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n == 0)
        return sp_fail(ctx, SP_ERR_NO_DEVICE, "--backend cuda: no CUDA device (%s)",
                       e != cudaSuccess ? cudaGetErrorString(e) : "none found");
    struct sp_run_devices *d = sp_calloc(1, sizeof *d);
    if (!d || !(d->dev = sp_calloc(P, sizeof *d->dev)) ||
        !(d->backend = sp_calloc(P, sizeof *d->backend)) ||
        !(d->be = sp_calloc(P, sizeof *d->be)) || !(d->green = sp_calloc(P, sizeof *d->green))) {
        sp_run_devices_close(d);
        return sp_oom(ctx, "the run's devices");
    }
    d->P = P;
    sp_status st = gpu_split ? make_partitions(ctx, d, n, sms) : SP_OK;
    bool bf16 = strcmp(m->dtype, "bf16") == 0;
    for (uint32_t s = 0; st == SP_OK && s < P; s++) {
        int ordinal = (int)((first_gpu + s) % (uint32_t)n);
        const char *why = "";
        /* the stage's layers are not known here: room for the largest attention of the model */
        if (!sp_cuda_device_open(&d->dev[s], ordinal, d->green[s], bf16 ? "bf16" : "fp32",
                                 sp_cuda_extra_elems(m, 0, m->n_layers - 1), &why)) {
            st = sp_fail(ctx, SP_ERR_NO_DEVICE, "stage %u on GPU %d: %s", s, ordinal, why);
            break;
        }
        sp_cuda_backend_init(&d->backend[s], &d->dev[s]);
        d->be[s] = &d->backend[s];
        device[s] = ordinal;
        if (s > 0 && ordinal != d->dev[s - 1].ordinal) { /* both directions; optional */
            int can = 0;
            if (cudaDeviceCanAccessPeer(&can, ordinal, d->dev[s - 1].ordinal) == cudaSuccess &&
                can) {
                cudaSetDevice(ordinal);
                cudaDeviceEnablePeerAccess(d->dev[s - 1].ordinal, 0);
                cudaSetDevice(d->dev[s - 1].ordinal);
                cudaDeviceEnablePeerAccess(ordinal, 0);
            }
            cudaGetLastError(); /* "already enabled" is no failure */
        }
    }
    if (st != SP_OK) {
        sp_run_devices_close(d);
        return st;
    }
    *out = d;
    *be = d->be;
    return SP_OK;
}

/* runtime/cuda/run_devices.c: one GPU per stage for `run --backend cuda`: stage s on device
 * s mod the devices there are, each stage with its own stream and cuBLAS handle (so stages that
 * share a GPU overlap as two streams do), and peer access between neighbouring stages' GPUs where
 * the hardware has it (cudaMemcpyPeerAsync works either way: without it the driver stages the
 * copy through the host). */
#include <stdio.h>
#include <string.h>

#include "run_devices.h"
#include "stage_cuda.h"

struct sp_run_devices {
    uint32_t P;
    struct sp_cuda_device *dev;      /* [P] */
    struct sp_exec_backend *backend; /* [P] */
    const struct sp_exec_backend **be;
};

void sp_run_devices_close(struct sp_run_devices *d) {
    if (!d)
        return;
    for (uint32_t s = 0; d->dev && s < d->P; s++)
        if (d->dev[s].stream)
            sp_cuda_device_close(&d->dev[s]);
    sp_free(d->dev);
    sp_free(d->backend);
    sp_free(d->be);
    sp_free(d);
}

sp_status sp_run_devices_open(sp_ctx *ctx, const struct sp_model *m, uint32_t P,
                              struct sp_run_devices **out, const struct sp_exec_backend ***be,
                              int *device) {
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
        !(d->be = sp_calloc(P, sizeof *d->be))) {
        sp_run_devices_close(d);
        return sp_oom(ctx, "the run's devices");
    }
    d->P = P;
    bool bf16 = strcmp(m->dtype, "bf16") == 0;
    for (uint32_t s = 0; s < P; s++) {
        int ordinal = (int)(s % (uint32_t)n);
        const char *why = "";
        /* the stage's layers are not known here: room for the largest attention of the model */
        if (!sp_cuda_device_open(&d->dev[s], ordinal, bf16 ? "bf16" : "fp32",
                                 sp_cuda_extra_elems(m, 0, m->n_layers - 1), &why)) {
            sp_run_devices_close(d);
            return sp_fail(ctx, SP_ERR_NO_DEVICE, "stage %u on GPU %d: %s", s, ordinal, why);
        }
        sp_cuda_backend_init(&d->backend[s], &d->dev[s]);
        d->be[s] = &d->backend[s];
        device[s] = ordinal;
        if (s > 0 && ordinal != d->dev[s - 1].ordinal) { /* both directions; optional */
            int can = 0;
            if (cudaDeviceCanAccessPeer(&can, ordinal, d->dev[s - 1].ordinal) == cudaSuccess &&
                can) {
                cudaDeviceEnablePeerAccess(d->dev[s - 1].ordinal, 0);
                cudaSetDevice(d->dev[s - 1].ordinal);
                cudaDeviceEnablePeerAccess(ordinal, 0);
                cudaSetDevice(ordinal);
            }
            cudaGetLastError(); /* "already enabled" is no failure */
        }
    }
    *out = d;
    *be = d->be;
    return SP_OK;
}

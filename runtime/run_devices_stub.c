/* runtime/run_devices_stub.c: a build without the GPU executor (models/cuda/ needs nvcc and
 * cuBLAS): `run --backend cuda` says so (exit 4). */
#include "run_devices.h"

sp_status sp_run_devices_open(sp_ctx *ctx, const struct sp_model *m, uint32_t P, bool gpu_split,
                              unsigned first_gpu, struct sp_run_devices **out,
                              const struct sp_exec_backend ***be, int *device, unsigned *sms) {
    (void)m, (void)P, (void)gpu_split, (void)first_gpu, (void)device, (void)sms;
    *out = NULL;
    *be = NULL;
    return sp_fail(ctx, SP_ERR_NO_DEVICE,
                   "--backend cuda: this stagepart was built without the GPU executor (it needs "
                   "the CUDA toolkit's nvcc and cuBLAS); run on CPU threads (--backend cpu)");
}

void sp_run_devices_close(struct sp_run_devices *d) {
    (void)d;
}

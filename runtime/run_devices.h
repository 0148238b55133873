/* runtime/run_devices.h: the stages' backends for a run on GPUs (runtime/cuda/run_devices.c; a
 * stub without the GPU executor, runtime/run_devices_stub.c). */
#ifndef SP_RUNTIME_RUN_DEVICES_H
#define SP_RUNTIME_RUN_DEVICES_H

#include "stage_exec.h"

struct sp_run_devices;

/* P stages on the GPUs there are, stage s on GPU (first_gpu + s) mod their number (an MPI rank
 * opens its one stage on its local rank's GPU), each with its own stream and cuBLAS handle; with
 * gpu_split the stages that share a GPU each get an equal SM partition of it (a green context).
 * (*be)[s] is stage s's backend, device[s] its GPU, sms[s] its partition's SMs (0: the whole GPU).
 * SP_ERR_NO_DEVICE naming what is missing (the GPU executor in this build, a GPU, green contexts in
 * the driver, SMs enough to split) or what failed. */
sp_status sp_run_devices_open(sp_ctx *ctx, const struct sp_model *m, uint32_t P, bool gpu_split,
                              unsigned first_gpu, struct sp_run_devices **out,
                              const struct sp_exec_backend ***be, int *device, unsigned *sms);
void sp_run_devices_close(struct sp_run_devices *d);

#endif

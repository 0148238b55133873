/* models/cuda/sm_partition.h: a GPU's SMs in partitions, as green contexts (CUDA 12.5+): the
 * stages of `run --gpu-split` that share a GPU, and `profile MODEL --backend cuda --sms N`, which
 * measures a model on the partition a stage will get. */
#ifndef SP_MODELS_CUDA_SM_PARTITION_H
#define SP_MODELS_CUDA_SM_PARTITION_H

#include <cuda.h>

#include "internal.h"

/* sp_cuda_sm_partitions: k partitions of GPU `ordinal`, out[0..k), each of `sms` SMs, or with
 * sms 0 an equal share (the SMs / k, down to the co-scheduling alignment); *each gets the SM
 * count each has. A count that is no multiple of the alignment, under the smallest partition or
 * beyond the GPU is SP_ERR_INVALID_ARG naming the valid counts; no green contexts in the driver,
 * or a call that fails, SP_ERR_NO_DEVICE. Destroy each with sp_cu_driver()->GreenCtxDestroy. */
sp_status sp_cuda_sm_partitions(sp_ctx *ctx, int ordinal, unsigned k, unsigned sms, CUgreenCtx *out,
                                unsigned *each);

#endif

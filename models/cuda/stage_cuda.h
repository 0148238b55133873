/* models/cuda/stage_cuda.h: running a built-in model's layers on one GPU: the stage backend
 * (sp_stage_exec_create_on with it gives an sp_stage_exec whose tensors are device memory; a
 * micro-batch goes there with sp_batch_alloc_on and sp_batch_upload). */
#ifndef SP_MODELS_CUDA_STAGE_CUDA_H
#define SP_MODELS_CUDA_STAGE_CUDA_H

#include "ops_cuda.h"

/* be: the backend over dev (which must outlive it) */
void sp_cuda_backend_init(struct sp_exec_backend *be, struct sp_cuda_device *dev);
/* the GPU scratch beyond the CPU's that layers first..last need (sp_cuda_device_open's extra) */
size_t sp_cuda_extra_elems(const struct sp_model *m, size_t first, size_t last);

#endif

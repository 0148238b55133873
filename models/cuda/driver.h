/* models/cuda/driver.h: the few CUDA driver calls the GPU executor makes (green contexts, for
 * `run --gpu-split`), looked up at run time through the runtime's cudaGetDriverEntryPointByVersion
 * rather than linked: a stagepart built with CUDA must start on machines with no driver (CI),
 * where libcuda.so.1 does not exist. */
#ifndef SP_MODELS_CUDA_DRIVER_H
#define SP_MODELS_CUDA_DRIVER_H

#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>

struct sp_cu_driver {
    PFN_cuDeviceGet_v2000 DeviceGet;
    PFN_cuCtxSetCurrent_v4000 CtxSetCurrent;
    PFN_cuDeviceGetDevResource_v12040 DeviceGetDevResource;
    PFN_cuDevSmResourceSplitByCount_v12040 DevSmResourceSplitByCount;
    PFN_cuDevResourceGenerateDesc_v12040 DevResourceGenerateDesc;
    PFN_cuGreenCtxCreate_v12040 GreenCtxCreate;
    PFN_cuGreenCtxDestroy_v12040 GreenCtxDestroy;
    PFN_cuCtxFromGreenCtx_v12040 CtxFromGreenCtx;
    PFN_cuGreenCtxStreamCreate_v12050 GreenCtxStreamCreate;
};

/* the driver's entry points, looked up once (thread-safe); NULL when the driver has not all of
 * them (older than CUDA 12.5, or none) */
const struct sp_cu_driver *sp_cu_driver(void);

#endif

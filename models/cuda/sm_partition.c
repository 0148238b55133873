/* models/cuda/sm_partition.c: SM partitions of a GPU as green contexts (sm_partition.h). */
#include <string.h>

#include "driver.h"
#include "sm_partition.h"

sp_status sp_cuda_sm_partitions(sp_ctx *ctx, int ordinal, unsigned k, unsigned sms, CUgreenCtx *out,
                                unsigned *each) {
    *each = 0;
    for (unsigned i = 0; i < k; i++)
        out[i] = NULL;
    const struct sp_cu_driver *cu = sp_cu_driver();
    if (!cu)
        return sp_fail(ctx, SP_ERR_NO_DEVICE,
                       "SM partitions: the CUDA driver has no green contexts (it needs CUDA 12.5 "
                       "or newer)");
    CUdevice dev;
    CUdevResource all, rest;
    memset(&all, 0, sizeof all);
    /* the primary context first: green contexts retain it (cuGreenCtxCreate's note) */
    if (cudaSetDevice(ordinal) != cudaSuccess || cudaFree(NULL) != cudaSuccess ||
        cu->DeviceGet(&dev, ordinal) != CUDA_SUCCESS ||
        cu->DeviceGetDevResource(dev, &all, CU_DEV_RESOURCE_TYPE_SM) != CUDA_SUCCESS)
        return sp_fail(ctx, SP_ERR_NO_DEVICE, "SM partitions: cannot read GPU %d's SMs", ordinal);
    unsigned total = all.sm.smCount;
    unsigned align = all.sm.smCoscheduledAlignment ? all.sm.smCoscheduledAlignment : 1;
    unsigned least = all.sm.minSmPartitionSize ? all.sm.minSmPartitionSize : 1;
    unsigned want = sms ? sms : total / k / align * align;
    if (sms && (sms % align || sms < least || (uint64_t)sms * k > total))
        return sp_fail(ctx, SP_ERR_INVALID_ARG,
                       "GPU %d has %u SMs, partitioned in multiples of %u of at least %u: %u x "
                       "%u SMs %s",
                       ordinal, total, align, least, k, sms,
                       (uint64_t)sms * k > total ? "do not fit" : "is no such partition");
    if (want < least)
        return sp_fail(ctx, SP_ERR_NO_DEVICE,
                       "GPU %d has %u SMs: %u partitions would get %u each, under its smallest "
                       "partition of %u (in multiples of %u)",
                       ordinal, total, k, want, least, align);
    CUdevResource *groups = sp_calloc(k, sizeof *groups);
    if (!groups)
        return sp_oom(ctx, "the SM partitions");
    unsigned got = k;
    sp_status st = SP_OK;
    if (cu->DevSmResourceSplitByCount(groups, &got, &all, &rest, 0, want) != CUDA_SUCCESS ||
        got < k)
        st = sp_fail(ctx, SP_ERR_NO_DEVICE, "GPU %d's %u SMs do not split into %u partitions of %u",
                     ordinal, total, k, want);
    for (unsigned i = 0; st == SP_OK && i < k; i++) {
        CUdevResourceDesc desc;
        if (cu->DevResourceGenerateDesc(&desc, &groups[i], 1) != CUDA_SUCCESS ||
            cu->GreenCtxCreate(&out[i], desc, dev, CU_GREEN_CTX_DEFAULT_STREAM) != CUDA_SUCCESS) {
            out[i] = NULL;
            st = sp_fail(ctx, SP_ERR_NO_DEVICE,
                         "the green context of SM partition %u of GPU %d failed", i, ordinal);
        }
    }
    *each = st == SP_OK ? groups[0].sm.smCount : 0;
    sp_free(groups);
    return st;
}

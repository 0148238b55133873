/* core/cuda/cuda_lib_open.h: a CUDA library loaded at run time (cuBLAS: models/cuda/cublas_lib.c,
 * NCCL: core/cuda/nccl_lib.c) by its soname through the usual search, else beside the CUDA
 * runtime this process loaded (a toolkit outside the loader's paths). Inline, so each loader
 * stays one object with no link dependency of its own (the stand-in test programs link them
 * alone). The caller defines _GNU_SOURCE (dladdr) before its first include. */
#ifndef SP_CORE_CUDA_LIB_OPEN_H
#define SP_CORE_CUDA_LIB_OPEN_H

#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

static inline void *sp_cuda_lib_open(const char *soname) {
    void *lib = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
    Dl_info info;
    if (!lib && dladdr((void *)cudaGetDeviceCount, &info) && info.dli_fname) {
        char path[4096]; /* beside the CUDA runtime in use */
        snprintf(path, sizeof path, "%s", info.dli_fname);
        char *slash = strrchr(path, '/');
        if (slash) {
            snprintf(slash + 1, sizeof path - (size_t)(slash + 1 - path), "%s", soname);
            lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        }
    }
    return lib;
}

#endif

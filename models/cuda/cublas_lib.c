/* models/cuda/cublas_lib.c: cuBLAS found at run time (cublas_lib.h). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "cublas_lib.h"
#include "cuda/cuda_lib_open.h"

static struct sp_cublas g_cublas;
static const char *g_why;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

#define STR2(x)       #x
#define STR(x)        STR2(x)
#define CUBLAS_SONAME "libcublas.so." STR(CUBLAS_VER_MAJOR)

/* the six symbols from `from` (RTLD_DEFAULT: whatever the process has) */
static bool take(void *from) {
    struct sp_cublas *c = &g_cublas;
    *(void **)&c->Create = dlsym(from, "cublasCreate_v2");
    *(void **)&c->Destroy = dlsym(from, "cublasDestroy_v2");
    *(void **)&c->SetStream = dlsym(from, "cublasSetStream_v2");
    *(void **)&c->GetStatusString = dlsym(from, "cublasGetStatusString");
    *(void **)&c->Saxpy64 = dlsym(from, "cublasSaxpy_v2_64");
    *(void **)&c->GemmStridedBatchedEx = dlsym(from, "cublasGemmStridedBatchedEx");
    return c->Create && c->Destroy && c->SetStream && c->GetStatusString && c->Saxpy64 &&
           c->GemmStridedBatchedEx;
}

static void find(void) {
    if (take(RTLD_DEFAULT))
        return;
    void *lib = sp_cuda_lib_open(CUBLAS_SONAME);
    if (!lib)
        g_why = "cuBLAS (" CUBLAS_SONAME ") could not be loaded";
    else if (!take(lib))
        g_why = CUBLAS_SONAME " lacks a call the executor needs";
}

const struct sp_cublas *sp_cublas(const char **why) {
    pthread_once(&g_once, find);
    if (g_why) {
        *why = g_why;
        return NULL;
    }
    return &g_cublas;
}

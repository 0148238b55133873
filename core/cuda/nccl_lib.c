/* core/cuda/nccl_lib.c: NCCL found at run time (nccl_lib.h). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>

#include "cuda_lib_open.h"
#include "nccl_lib.h"

static struct sp_nccl g_nccl;
static const char *g_why;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

#define STR2(x)     #x
#define STR(x)      STR2(x)
#define NCCL_SONAME "libnccl.so." STR(NCCL_MAJOR)

/* the symbols from `from` (RTLD_DEFAULT: whatever the process has) */
static bool take(void *from) {
    struct sp_nccl *n = &g_nccl;
    *(void **)&n->GetUniqueId = dlsym(from, "ncclGetUniqueId");
    *(void **)&n->GetErrorString = dlsym(from, "ncclGetErrorString");
    *(void **)&n->CommInitRank = dlsym(from, "ncclCommInitRank");
    *(void **)&n->CommInitAll = dlsym(from, "ncclCommInitAll");
    *(void **)&n->CommAbort = dlsym(from, "ncclCommAbort");
    *(void **)&n->CommDestroy = dlsym(from, "ncclCommDestroy");
    *(void **)&n->Send = dlsym(from, "ncclSend");
    *(void **)&n->Recv = dlsym(from, "ncclRecv");
    *(void **)&n->GroupStart = dlsym(from, "ncclGroupStart");
    *(void **)&n->GroupEnd = dlsym(from, "ncclGroupEnd");
    /* the runtime's seven; the probe's three more it checks itself (the tests' stand-in
     * NCCL has only the runtime's) */
    return n->GetUniqueId && n->GetErrorString && n->CommInitRank && n->CommAbort &&
           n->CommDestroy && n->Send && n->Recv;
}

static void find(void) {
    if (take(RTLD_DEFAULT))
        return;
    void *lib = sp_cuda_lib_open(NCCL_SONAME);
    if (!lib)
        g_why = "NCCL (" NCCL_SONAME ") could not be loaded";
    else if (!take(lib))
        g_why = NCCL_SONAME " lacks a call stagepart needs";
}

const struct sp_nccl *sp_nccl_lib(const char **why) {
    pthread_once(&g_once, find);
    if (g_why) {
        *why = g_why;
        return NULL;
    }
    return &g_nccl;
}

/* models/blas.c: OpenBLAS loaded at run time (dlopen) the first time a model computes. The
 * library file is the one the build found (SP_BLAS_LIBRARY, its soname), so the same OpenBLAS
 * that CMake checked is the one used; its functions are looked up by their cblas names and
 * called through the types <cblas.h> declares, so a mismatch fails to compile, not at run time.
 * Loading it starts OpenBLAS's thread pool unless OPENBLAS_NUM_THREADS says otherwise: that is
 * the host program's to set (the stagepart command sets it to 1 while it loads: cli/main.c). */
#include "blas.h"

#include <cblas.h>
#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stddef.h>
#include <string.h>
#include <sys/resource.h>

#include "internal.h"

#ifndef SP_BLAS_LIBRARY
#define SP_BLAS_LIBRARY "libopenblas.so.0"
#endif

static struct {
    __typeof__(cblas_sgemm) *sgemm;
    __typeof__(openblas_get_num_threads) *get_threads;
    __typeof__(openblas_set_num_threads) *set_threads;
    __typeof__(openblas_get_config) *config;
    char why[512]; /* the loader's reason, when it failed */
} g_blas;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void load(void) {
    void *lib = dlopen(SP_BLAS_LIBRARY, RTLD_NOW | RTLD_LOCAL);
    const char *err = lib ? NULL : dlerror();
    if (lib) {
        *(void **)&g_blas.sgemm = dlsym(lib, "cblas_sgemm");
        *(void **)&g_blas.get_threads = dlsym(lib, "openblas_get_num_threads");
        *(void **)&g_blas.set_threads = dlsym(lib, "openblas_set_num_threads");
        *(void **)&g_blas.config = dlsym(lib, "openblas_get_config");
        if (!g_blas.sgemm)
            err = "it has no cblas_sgemm";
    }
    if (err)
        snprintf(g_blas.why, sizeof g_blas.why, "%s", err);
}

sp_status sp_blas_open(sp_ctx *ctx) {
    pthread_once(&g_once, load);
    if (g_blas.sgemm)
        return SP_OK;
    /* a mapping refused under a memory limit says "cannot map" or "Cannot allocate memory" */
    if (strstr(g_blas.why, "map") || strstr(g_blas.why, "allocate"))
        return sp_fail(ctx, SP_ERR_NOMEM, "out of memory loading OpenBLAS (%s): %s",
                       SP_BLAS_LIBRARY, g_blas.why);
    return sp_fail(ctx, SP_ERR_UNSUPPORTED,
                   "the built-in models compute with OpenBLAS, which could not be loaded (%s): %s",
                   SP_BLAS_LIBRARY, g_blas.why);
}

void sp_sgemm(bool ta, bool tb, int m, int n, int k, float alpha, const float *a, int lda,
              const float *b, int ldb, float beta, float *c, int ldc) {
    pthread_once(&g_once, load);
    if (!g_blas.sgemm) { /* unreachable past sp_blas_open; never a plausible number */
        for (int r = 0; r < m; r++)
            for (int j = 0; j < n; j++)
                c[(ptrdiff_t)r * ldc + j] = NAN;
        return;
    }
    g_blas.sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m,
                 n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

size_t sp_blas_thread_bytes(void) {
    struct rlimit rl;
    size_t stack = (size_t)8 << 20;
    if (getrlimit(RLIMIT_STACK, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < SIZE_MAX)
        stack = (size_t)rl.rlim_cur;
    return SP_BLAS_BUFFER_BYTES + stack;
}

sp_status sp_models_load_blas(sp_ctx *ctx) {
    if (!ctx)
        return SP_ERR_INVALID_ARG;
    sp_ctx_begin(ctx);
    return sp_blas_open(ctx);
}

int sp_blas_threads(void) {
    return g_blas.get_threads ? g_blas.get_threads() : 1;
}

void sp_blas_set_threads(int threads) {
    if (g_blas.set_threads)
        g_blas.set_threads(threads);
}

const char *sp_blas_config(void) {
    return g_blas.config ? g_blas.config() : "";
}

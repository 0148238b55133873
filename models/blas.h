/* models/blas.h: the models' one way to BLAS. OpenBLAS is loaded when a model first computes
 * (sp_blas_open), not linked: the commands that only read a model's shapes (import's exact
 * bytes) and every other command start without it (docs/architecture.md). */
#ifndef SP_MODELS_BLAS_H
#define SP_MODELS_BLAS_H
#include <stdbool.h>

#include <stagepart/core.h>

/* The buffer OpenBLAS (0.3.21, x86_64: BUFFER_SIZE 32 << 22) maps for each thread computing at
 * once, on its first product; when that mapping fails it retries for ever. */
#define SP_BLAS_BUFFER_BYTES ((size_t)128 << 20)

/* What one thread computing on the CPU takes beyond the library's counted blocks: OpenBLAS's
 * buffer and the thread's stack (RLIMIT_STACK, glibc's default size for a new thread) */
size_t sp_blas_thread_bytes(void);

/* Load OpenBLAS once (later calls return the first call's result). SP_ERR_UNSUPPORTED naming the
 * library and the loader's reason when it cannot be loaded, SP_ERR_NOMEM when the reason was
 * memory. Thread-safe. */
sp_status sp_blas_open(sp_ctx *ctx);
/* C := alpha op(A) op(B) + beta C, row-major, as cblas_sgemm; op transposes when t*. The caller
 * has opened BLAS (every model entry point does); if it could not be, C is set to NaN. */
void sp_sgemm(bool ta, bool tb, int m, int n, int k, float alpha, const float *a, int lda,
              const float *b, int ldb, float beta, float *c, int ldc);
/* OpenBLAS's own thread count, and setting it (stagepart computes on one BLAS thread per stage);
 * 1 and nothing when BLAS is not loaded. */
int sp_blas_threads(void);
void sp_blas_set_threads(int threads);
/* the library's configuration string, as OpenBLAS reports it ("" when not loaded) */
const char *sp_blas_config(void);
#endif

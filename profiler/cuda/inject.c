/* profiler/cuda/inject.c: the CUDA driver's entry point into libstagepart-inject.so. With
 * CUDA_INJECTION64_PATH naming this library, cuInit loads it and calls InitializeInjection
 * (inside cuInit: only CUPTI calls are made there). It returns 1 even when recording turns
 * itself off, so the program always runs. */
#include "collector.h"

__attribute__((visibility("default"))) int InitializeInjection(void);
__attribute__((visibility("default"))) int InitializeInjection(void) {
    return sp_collector_init_cupti();
}

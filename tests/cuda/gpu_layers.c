/* tests/cuda/gpu_layers.c: a small CUDA program for the GPU check (scripts/gpu-check.sh): a chain
 * of fully connected layers of different widths on cuBLAS (forward one GEMM, backward two), each
 * inside NVTX ranges named by stagepart's convention with its output bytes as the u64 payload,
 * steps in "stagepart/step". Not run in CI (it needs a device); it exits 77 without one.
 *
 *   gpu_layers STEPS [--events OUT.json]
 *
 * Prints the median step time (host clock around each synchronized step), the number used to
 * measure the collector's overhead. With --events it instead times every layer's forward and
 * backward with CUDA events (a sync per layer) and writes {layer: {fwd_ms, bwd_ms}} medians, to
 * compare with what the collector attributed. */
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define LAYERS 8
#define BATCH  4096
static const int width[LAYERS + 1] = {1024, 2048, 4096, 1024, 1024, 4096, 2048, 1024, 1024};

#define CHECK(x)                                                                                   \
    do {                                                                                           \
        if ((x) != 0) {                                                                            \
            fprintf(stderr, "gpu_layers: %s failed at line %d\n", #x, __LINE__);                   \
            return 1;                                                                              \
        }                                                                                          \
    } while (0)

static void push(const char *name, uint64_t bytes) {
    nvtxEventAttributes_t a = {0};
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    a.messageType = NVTX_MESSAGE_TYPE_ASCII;
    a.message.ascii = name;
    if (bytes) {
        a.payloadType = NVTX_PAYLOAD_TYPE_UNSIGNED_INT64;
        a.payload.ullValue = bytes;
    }
    nvtxRangePushEx(&a);
}

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int main(int argc, char **argv) {
    int steps = argc > 1 ? atoi(argv[1]) : 10;
    const char *events_out = argc > 3 && strcmp(argv[2], "--events") == 0 ? argv[3] : NULL;
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
        fprintf(stderr, "gpu_layers: no CUDA device\n");
        return 77;
    }
    cublasHandle_t h;
    CHECK(cublasCreate(&h));
    float *act[LAYERS + 1], *grad[LAYERS + 1], *w[LAYERS], *dw[LAYERS];
    for (int i = 0; i <= LAYERS; i++) {
        CHECK(cudaMalloc((void **)&act[i], sizeof(float) * BATCH * (size_t)width[i]));
        CHECK(cudaMalloc((void **)&grad[i], sizeof(float) * BATCH * (size_t)width[i]));
        CHECK(cudaMemset(act[i], 0, sizeof(float) * BATCH * (size_t)width[i]));
        CHECK(cudaMemset(grad[i], 0, sizeof(float) * BATCH * (size_t)width[i]));
    }
    for (int i = 0; i < LAYERS; i++) {
        size_t n = (size_t)width[i] * (size_t)width[i + 1];
        CHECK(cudaMalloc((void **)&w[i], sizeof(float) * n));
        CHECK(cudaMalloc((void **)&dw[i], sizeof(float) * n));
        CHECK(cudaMemset(w[i], 0, sizeof(float) * n));
    }
    const float one = 1, zero = 0;
    cudaEvent_t ev[2 * LAYERS + 2];
    for (int i = 0; i < 2 * LAYERS + 2; i++)
        CHECK(cudaEventCreate(&ev[i]));
    double *step_ms = calloc((size_t)steps, sizeof *step_ms);
    double *fwd = calloc((size_t)steps * LAYERS, sizeof *fwd);
    double *bwd = calloc((size_t)steps * LAYERS, sizeof *bwd);
    char name[64];
    for (int s = 0; s < steps; s++) {
        CHECK(cudaDeviceSynchronize());
        double t0 = now_ms();
        nvtxRangePushA("stagepart/step");
        for (int i = 0; i < LAYERS; i++) { /* act[i+1] = act[i] W_i: (B x in) (in x out) */
            snprintf(name, sizeof name, "fc%d/fwd", i);
            push(name, sizeof(float) * BATCH * (uint64_t)width[i + 1]);
            if (events_out)
                CHECK(cudaEventRecord(ev[2 * i], 0));
            CHECK(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, width[i + 1], BATCH, width[i], &one,
                              w[i], width[i + 1], act[i], width[i], &zero, act[i + 1],
                              width[i + 1]));
            if (events_out)
                CHECK(cudaEventRecord(ev[2 * i + 1], 0));
            nvtxRangePop();
        }
        for (int i = LAYERS - 1; i >= 0; i--) { /* dW = act^T grad, dact = grad W^T */
            snprintf(name, sizeof name, "fc%d/bwd", i);
            push(name, 0);
            if (events_out)
                CHECK(cudaEventRecord(ev[2 * LAYERS], 0));
            CHECK(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_T, width[i + 1], width[i], BATCH, &one,
                              grad[i + 1], width[i + 1], act[i], width[i], &zero, dw[i],
                              width[i + 1]));
            CHECK(cublasSgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, width[i], BATCH, width[i + 1], &one,
                              w[i], width[i + 1], grad[i + 1], width[i + 1], &zero, grad[i],
                              width[i]));
            if (events_out) {
                float ms = 0;
                CHECK(cudaEventRecord(ev[2 * LAYERS + 1], 0));
                CHECK(cudaEventSynchronize(ev[2 * LAYERS + 1]));
                CHECK(cudaEventElapsedTime(&ms, ev[2 * LAYERS], ev[2 * LAYERS + 1]));
                bwd[s * LAYERS + i] = (double)ms;
            }
            nvtxRangePop();
        }
        nvtxRangePop();
        CHECK(cudaDeviceSynchronize());
        step_ms[s] = now_ms() - t0;
        for (int i = 0; events_out && i < LAYERS; i++) {
            float ms = 0;
            CHECK(cudaEventElapsedTime(&ms, ev[2 * i], ev[2 * i + 1]));
            fwd[s * LAYERS + i] = (double)ms;
        }
    }
    int warm = steps > 2 ? 2 : 0; /* cuBLAS heuristics and clocks settle */
    printf("median step %.4f ms over %d steps (%d warm-up)\n", median(step_ms + warm, steps - warm),
           steps - warm, warm);
    if (events_out) {
        FILE *f = fopen(events_out, "w");
        if (!f)
            return 1;
        fprintf(f, "{");
        for (int i = 0; i < LAYERS; i++) {
            double fv[1024], bv[1024];
            int n = 0;
            for (int s = warm; s < steps && n < 1024; s++, n++) {
                fv[n] = fwd[s * LAYERS + i];
                bv[n] = bwd[s * LAYERS + i];
            }
            fprintf(f, "%s\"fc%d\": {\"fwd_ms\": %.6f, \"bwd_ms\": %.6f}", i ? ", " : "", i,
                    median(fv, n), median(bv, n));
        }
        fprintf(f, "}\n");
        fclose(f);
    }
    cublasDestroy(h);
    return 0;
}

/* tests/cuda/gpu_robust.c: a CUDA program that does what training jobs do to a profiler, for the
 * injection library's robustness runs in scripts/gpu-check.sh (it needs a device; exit 77 without
 * one). Each mode runs 3 steps of 2 layers ("stagepart/step", "L0/fwd", "L1/fwd" ...), GPU work
 * being copies and memsets on the layer's own stream, then ends its way:
 *
 *   gpu_robust threads    4 threads, each with its own stream and ranges, at once; exit 0
 *   gpu_robust fork       forks after step 1: the child runs NVTX ranges only and _exits 0
 *                         (CUDA is not usable in a forked child); the parent finishes; exit 0
 *   gpu_robust contexts   two driver contexts on device 0, work in both; exit 0
 *   gpu_robust exit       exit(3) inside step 2's range (atexit handlers run)
 *   gpu_robust _exit      _exit(4) inside step 2 (no handlers)
 *   gpu_robust signal     SIGTERM to itself inside step 2 (killed, no handlers)
 *
 * The check: under `stagepart profile --attach` the program ends exactly as it does alone (same
 * status, no hang), and the logs it leaves import. */
#include <cuda.h>
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define BYTES ((size_t)64 << 20)

static const char *mode = "threads";

#define CHECK(x)                                                                                   \
    do {                                                                                           \
        if ((x) != 0) {                                                                            \
            fprintf(stderr, "gpu_robust: %s failed at line %d\n", #x, __LINE__);                   \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

/* one layer's GPU work on a stream: a memset and a copy inside the layer's range */
static void layer(const char *name, void *a, void *b, cudaStream_t s) {
    nvtxRangePushA(name);
    CHECK(cudaMemsetAsync(a, 1, BYTES, s));
    CHECK(cudaMemcpyAsync(b, a, BYTES, cudaMemcpyDeviceToDevice, s));
    CHECK(cudaStreamSynchronize(s));
    nvtxRangePop();
}

struct worker {
    int id;
    void *a, *b;
    cudaStream_t s;
};

static void *thread_main(void *p) {
    struct worker *w = p;
    char name[32];
    snprintf(name, sizeof name, "T%d/fwd", w->id);
    for (int step = 0; step < 3; step++)
        layer(name, w->a, w->b, w->s);
    return NULL;
}

static void end_mid_step(int step) {
    if (step != 2)
        return;
    if (strcmp(mode, "exit") == 0)
        exit(3);
    if (strcmp(mode, "_exit") == 0)
        _exit(4);
    if (strcmp(mode, "signal") == 0)
        raise(SIGTERM);
}

static int run_contexts(void) {
    CUdevice dev;
    CUcontext ctx[2];
    CUdeviceptr buf[2];
    CUstream s[2];
    CHECK(cuInit(0));
    CHECK(cuDeviceGet(&dev, 0));
    for (int i = 0; i < 2; i++) {
        CHECK(cuCtxCreate(&ctx[i], NULL, 0, dev));
        CHECK(cuMemAlloc(&buf[i], BYTES));
        CHECK(cuStreamCreate(&s[i], CU_STREAM_NON_BLOCKING));
    }
    for (int step = 0; step < 3; step++) {
        nvtxRangePushA("stagepart/step");
        for (int i = 0; i < 2; i++) {
            CHECK(cuCtxSetCurrent(ctx[i]));
            nvtxRangePushA(i ? "L1/fwd" : "L0/fwd");
            CHECK(cuMemsetD8Async(buf[i], (unsigned char)(step + 1), BYTES, s[i]));
            CHECK(cuStreamSynchronize(s[i]));
            nvtxRangePop();
        }
        nvtxRangePop();
    }
    for (int i = 0; i < 2; i++) {
        CHECK(cuCtxSetCurrent(ctx[i]));
        CHECK(cuMemFree(buf[i]));
        CHECK(cuStreamDestroy(s[i]));
        CHECK(cuCtxDestroy(ctx[i]));
    }
    return 0;
}

int main(int argc, char **argv) {
    if (argc > 1)
        mode = argv[1];
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
        fprintf(stderr, "gpu_robust: no CUDA device\n");
        return 77;
    }
    if (strcmp(mode, "contexts") == 0)
        return run_contexts();
    struct worker w[4];
    int workers = strcmp(mode, "threads") == 0 ? 4 : 1;
    for (int i = 0; i < workers; i++) {
        w[i].id = i;
        CHECK(cudaMalloc(&w[i].a, BYTES));
        CHECK(cudaMalloc(&w[i].b, BYTES));
        CHECK(cudaStreamCreateWithFlags(&w[i].s, cudaStreamNonBlocking));
    }
    if (workers > 1) {
        pthread_t th[4];
        nvtxRangePushA("stagepart/step"); /* one step around all threads' work */
        for (int i = 0; i < workers; i++)
            CHECK(pthread_create(&th[i], NULL, thread_main, &w[i]));
        for (int i = 0; i < workers; i++)
            pthread_join(th[i], NULL);
        nvtxRangePop();
        return 0;
    }
    for (int step = 0; step < 3; step++) {
        nvtxRangePushA("stagepart/step");
        layer("L0/fwd", w[0].a, w[0].b, w[0].s);
        end_mid_step(step);
        layer("L1/fwd", w[0].b, w[0].a, w[0].s);
        nvtxRangePop();
        if (step == 1 && strcmp(mode, "fork") == 0) {
            pid_t pid = fork();
            if (pid == 0) { /* the child: NVTX only, then out without the parent's handlers */
                nvtxRangePushA("child/fwd");
                nvtxRangePop();
                _exit(0);
            }
            int status = 0;
            if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
                WEXITSTATUS(status) != 0) {
                fprintf(stderr, "gpu_robust: the forked child did not end cleanly\n");
                return 1;
            }
        }
    }
    return 0;
}

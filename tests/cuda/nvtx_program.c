/* tests/cuda/nvtx_program.c: a program that names layers with NVTX the way stagepart's
 * convention says, with every NVTX form the collector handles: RangePushA, RangePushEx with a
 * u64 payload, registered strings in a domain, a backward on a second thread, sp_annotate_u64,
 * a pop without a push, and a forked child that must not write. It runs no GPU work, so it
 * drives the NVTX side of libstagepart-inject.so on a machine without a GPU (t7000-attach.sh).
 *
 *   nvtx_program STEPS [_exit|kill]   (how it ends: return from main by default) */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <nvtx3/nvToolsExt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void spin_us(long us) { /* host work inside a range, so ranges have a length */
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    do
        clock_gettime(CLOCK_MONOTONIC, &b);
    while ((b.tv_sec - a.tv_sec) * 1000000L + (b.tv_nsec - a.tv_nsec) / 1000 < us);
}

static nvtxDomainHandle_t domain;
static nvtxStringHandle_t head_fwd, head_bwd;
static int (*annotate)(const char *, uint64_t);

static void push_registered(nvtxStringHandle_t name) {
    nvtxEventAttributes_t a = {0};
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
    a.message.registered = name;
    nvtxDomainRangePushEx(domain, &a);
}

static void push_with_bytes(const char *name, uint64_t bytes) {
    nvtxEventAttributes_t a = {0};
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    a.messageType = NVTX_MESSAGE_TYPE_ASCII;
    a.message.ascii = name;
    a.payloadType = NVTX_PAYLOAD_TYPE_UNSIGNED_INT64;
    a.payload.ullValue = bytes;
    nvtxRangePushEx(&a);
}

static void *backward(void *arg) { /* PyTorch runs the backward on its autograd thread */
    (void)arg;
    push_registered(head_bwd);
    spin_us(300);
    nvtxDomainRangePop(domain);
    nvtxRangePushA("block/bwd");
    spin_us(200);
    nvtxRangePop();
    nvtxRangePushA("embed/bwd");
    spin_us(100);
    nvtxRangePop();
    return NULL;
}

int main(int argc, char **argv) {
    int steps = argc > 1 ? atoi(argv[1]) : 3;
    nvtxRangePop(); /* a pop without a push must be harmless */
    domain = nvtxDomainCreateA("stagepart");
    head_fwd = nvtxDomainRegisterStringA(domain, "head/fwd");
    head_bwd = nvtxDomainRegisterStringA(domain, "head/bwd");
    const char *lib = getenv("NVTX_INJECTION64_PATH");
    void *h = lib ? dlopen(lib, RTLD_NOW | RTLD_NOLOAD) : NULL;
    if (h)
        *(void **)&annotate = dlsym(h, "sp_annotate_u64");
    for (int s = 0; s < steps; s++) {
        nvtxRangePushA("stagepart/step");
        push_with_bytes("embed/fwd", 4096);
        spin_us(100);
        nvtxRangePop();
        nvtxRangePushA("block/fwd");
        spin_us(200);
        if (annotate && annotate("block/fwd", 8192) != 0)
            fprintf(stderr, "sp_annotate_u64 found no open block/fwd\n");
        nvtxRangePop();
        push_registered(head_fwd);
        spin_us(300);
        nvtxDomainRangePop(domain);
        pthread_t t;
        pthread_create(&t, NULL, backward, NULL);
        pthread_join(t, NULL);
        nvtxRangePop();
    }
    pid_t child = fork(); /* a DataLoader worker: inherits everything, must write nothing */
    if (child == 0) {
        nvtxRangePushA("child/fwd");
        nvtxRangePop();
        _exit(0);
    }
    waitpid(child, NULL, 0);
    printf("ran %d steps%s\n", steps, annotate ? " (annotated)" : "");
    fflush(stdout);
    const char *end = argc > 2 ? argv[2] : "";
    if (strcmp(end, "_exit") == 0)
        _exit(0); /* no atexit handlers: the collector's last flush never runs */
    if (strcmp(end, "kill") == 0)
        raise(SIGKILL);
    return 0;
}

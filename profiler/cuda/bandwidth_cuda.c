/* profiler/cuda/bandwidth_cuda.c: `stagepart bandwidth --backend cuda`: the links between CUDA
 * devices, the way a pipeline hands activations from one GPU to the next.
 *
 * Every ordered pair of devices: cudaMemcpyPeerAsync from a buffer on one to a buffer on the
 * other, on a stream of the sender, each message size warm-up + trials times. Every copy is
 * timed twice: by CUPTI's memcpy records (device timestamps of the copy itself, peer-to-peer
 * records included), which the fit uses, and by CUDA events around it on the same stream, kept
 * beside as a cross-check (they add the stream's own overhead, a few microseconds). When CUPTI
 * cannot be used (another subscriber, no permission) the events are fitted instead, and the file
 * says so. Per device also host-to-device and device-to-host (pinned host memory) and a copy
 * within the device; with NCCL, send/recv per pair, timed on the host around the group (what a
 * pipeline using NCCL pays). With one device there is no link between devices: the file has one
 * device, and the series that one device allows (host, within the device) are in measurement.
 * The medians are fitted to t = latency + bytes / bandwidth (profiler/link_fit.c). */
#include <cuda_runtime_api.h>
#include <cupti.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "stagepart/stagepart.h"
#ifdef SP_HAVE_NCCL
#include "cuda/nccl_lib.h"

#endif

#include "links_json.h"

#define MAX_DEVICES 64
#define MAX_SIZES   32
#define MAX_TRIALS  101

static const uint64_t default_sizes[] = {4u << 10, 16u << 10, 64u << 10, 256u << 10, 1u << 20,
                                         4u << 20, 16u << 20, 64u << 20, 256u << 20, 1024u << 20};

/* ---- CUPTI's memcpy records, collected by its buffer callbacks (on CUPTI's threads) */

struct copy_record {
    uint64_t bytes;
    int64_t start_ns, end_ns;
};

static struct {
    pthread_mutex_t mu;
    struct copy_record *rec;
    size_t n, cap;
    bool lost; /* a record could not be kept */
} g_copies = {PTHREAD_MUTEX_INITIALIZER, NULL, 0, 0, false};

#define CUPTI_BUFFER_BYTES ((size_t)1 << 20)

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records) {
    *buffer = malloc(CUPTI_BUFFER_BYTES); /* CUPTI's, not the library's: freed below */
    *size = *buffer ? CUPTI_BUFFER_BYTES : 0;
    *max_records = 0;
}

static void keep(uint64_t bytes, uint64_t start, uint64_t end) {
    pthread_mutex_lock(&g_copies.mu);
    if (g_copies.n == g_copies.cap) {
        size_t cap = g_copies.cap ? 2 * g_copies.cap : 4096;
        struct copy_record *r = realloc(g_copies.rec, cap * sizeof *r);
        if (!r) {
            g_copies.lost = true;
            pthread_mutex_unlock(&g_copies.mu);
            return;
        }
        g_copies.rec = r;
        g_copies.cap = cap;
    }
    g_copies.rec[g_copies.n++] = (struct copy_record){bytes, (int64_t)start, (int64_t)end};
    pthread_mutex_unlock(&g_copies.mu);
}

static void CUPTIAPI buffer_completed(CUcontext context, uint32_t stream, uint8_t *buffer,
                                      size_t size, size_t valid) {
    (void)context;
    (void)stream;
    (void)size;
    CUpti_Activity *rec = NULL;
    while (buffer && cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS) {
        if (rec->kind == CUPTI_ACTIVITY_KIND_MEMCPY) {
            const CUpti_ActivityMemcpy6 *m = (const CUpti_ActivityMemcpy6 *)(const void *)rec;
            keep(m->bytes, m->start, m->end);
        } else if (rec->kind == CUPTI_ACTIVITY_KIND_MEMCPY2) {
            const CUpti_ActivityMemcpyPtoP4 *m =
                (const CUpti_ActivityMemcpyPtoP4 *)(const void *)rec;
            keep(m->bytes, m->start, m->end);
        }
    }
    free(buffer);
}

/* CUPTI on, or why not (the events are fitted then) */
static bool cupti_start(char *why, size_t size) {
    const char *msg = NULL;
    CUptiResult r = cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed);
    if (r == CUPTI_SUCCESS)
        r = cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY);
    if (r == CUPTI_SUCCESS)
        r = cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY2);
    if (r == CUPTI_SUCCESS)
        return true;
    cuptiGetResultString(r, &msg);
    snprintf(why, size, "CUPTI unavailable (%s): CUDA events fitted", msg ? msg : "?");
    return false;
}

static void cupti_stop(void) {
    cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    cuptiActivityDisable(CUPTI_ACTIVITY_KIND_MEMCPY);
    cuptiActivityDisable(CUPTI_ACTIVITY_KIND_MEMCPY2);
    pthread_mutex_lock(&g_copies.mu);
    free(g_copies.rec);
    g_copies.rec = NULL;
    g_copies.n = g_copies.cap = 0;
    g_copies.lost = false;
    pthread_mutex_unlock(&g_copies.mu);
}

/* ---- one series: a copy function run warm-up + trials times per size */

enum copy_kind { COPY_PEER, COPY_H2D, COPY_D2H, COPY_D2D };

struct probe {
    sp_ctx *ctx;
    const sp_bandwidth_opts *o;
    const uint64_t *sizes;
    size_t n_sizes;
    uint64_t max_bytes;
    int n_dev;
    void *buf[MAX_DEVICES][2]; /* per device: a source and a destination of max_bytes */
    cudaStream_t stream[MAX_DEVICES];
    cudaEvent_t ev[MAX_DEVICES][2];
    void *host; /* pinned, max_bytes */
    bool cupti;
    unsigned series_on_events; /* series whose CUPTI records did not match (events fitted) */
#ifdef SP_HAVE_NCCL
    bool nccl;
#endif
    double ms[MAX_SIZES * MAX_TRIALS], ev_ms[MAX_SIZES * MAX_TRIALS];
};

static sp_status cuda_fail(sp_ctx *ctx, const char *what, int dev, cudaError_t e) {
    cudaGetLastError(); /* clear a sticky error where it is not */
    if (e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver)
        return sp_fail(ctx, SP_ERR_NO_DEVICE, "bandwidth: %s: %s", what, cudaGetErrorString(e));
    if (e == cudaErrorMemoryAllocation)
        return sp_fail(ctx, SP_ERR_CUDA,
                       "bandwidth: %s on gpu%d: out of device memory (pass smaller --sizes)", what,
                       dev);
    return sp_fail(ctx, SP_ERR_CUDA, "bandwidth: %s on gpu%d: %s", what, dev,
                   cudaGetErrorString(e));
}

#define CK(call, what, dev)                                                                        \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess)                                                                     \
            return cuda_fail(p->ctx, what, dev, e_);                                               \
    } while (0)

/* one copy of `bytes`, timed by events on the stream that runs it */
static sp_status copy_once(struct probe *p, enum copy_kind kind, int a, int b, uint64_t bytes,
                           double *event_ms) {
    cudaStream_t s = p->stream[a];
    CK(cudaSetDevice(a), "cudaSetDevice", a);
    CK(cudaEventRecord(p->ev[a][0], s), "cudaEventRecord", a);
    switch (kind) {
    case COPY_PEER:
        CK(cudaMemcpyPeerAsync(p->buf[b][1], b, p->buf[a][0], a, bytes, s), "cudaMemcpyPeerAsync",
           a);
        break;
    case COPY_H2D:
        CK(cudaMemcpyAsync(p->buf[a][1], p->host, bytes, cudaMemcpyHostToDevice, s),
           "cudaMemcpyAsync (host to device)", a);
        break;
    case COPY_D2H:
        CK(cudaMemcpyAsync(p->host, p->buf[a][0], bytes, cudaMemcpyDeviceToHost, s),
           "cudaMemcpyAsync (device to host)", a);
        break;
    default:
        CK(cudaMemcpyAsync(p->buf[a][1], p->buf[a][0], bytes, cudaMemcpyDeviceToDevice, s),
           "cudaMemcpyAsync (within the device)", a);
        break;
    }
    CK(cudaEventRecord(p->ev[a][1], s), "cudaEventRecord", a);
    CK(cudaEventSynchronize(p->ev[a][1]), "cudaEventSynchronize", a);
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, p->ev[a][0], p->ev[a][1]), "cudaEventElapsedTime", a);
    *event_ms = (double)ms;
    return SP_OK;
}

/* The series' CUPTI durations into p->ms when the records since `first` are exactly its copies
 * (sizes in order, warm-up included), else the events' (counted in series_on_events). */
static void take_cupti(struct probe *p, size_t first) {
    unsigned per = p->o->warmup + p->o->trials;
    bool ok = p->cupti;
    if (ok) {
        cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
        pthread_mutex_lock(&g_copies.mu);
        ok = !g_copies.lost && g_copies.n - first == p->n_sizes * per;
        for (size_t k = 0; ok && k < p->n_sizes; k++)
            for (unsigned t = 0; ok && t < per; t++) {
                const struct copy_record *r = &g_copies.rec[first + k * per + t];
                ok = r->bytes == p->sizes[k] && r->end_ns > r->start_ns;
                if (ok && t >= p->o->warmup)
                    p->ms[k * p->o->trials + (t - p->o->warmup)] =
                        (double)(r->end_ns - r->start_ns) / 1e6;
            }
        pthread_mutex_unlock(&g_copies.mu);
    }
    if (!ok) {
        memcpy(p->ms, p->ev_ms, p->n_sizes * p->o->trials * sizeof *p->ms);
        p->series_on_events += p->cupti;
    }
}

static size_t records_now(void) {
    pthread_mutex_lock(&g_copies.mu);
    size_t n = g_copies.n;
    pthread_mutex_unlock(&g_copies.mu);
    return n;
}

static sp_status run_series(struct probe *p, struct sp_links_doc *doc, enum copy_kind kind, int a,
                            int b, const char *label, int from, int to) {
    if (p->cupti)
        cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    size_t first = records_now();
    for (size_t k = 0; k < p->n_sizes; k++)
        for (unsigned t = 0; t < p->o->warmup + p->o->trials; t++) {
            double ms = 0;
            sp_status st = copy_once(p, kind, a, b, p->sizes[k], &ms);
            if (st != SP_OK)
                return st;
            if (t >= p->o->warmup)
                p->ev_ms[k * p->o->trials + (t - p->o->warmup)] = ms;
        }
    take_cupti(p, first);
    double ev_med[MAX_SIZES];
    for (size_t k = 0; k < p->n_sizes; k++) { /* the events' medians, beside */
        double v[MAX_TRIALS];
        memcpy(v, p->ev_ms + k * p->o->trials, p->o->trials * sizeof *v);
        ev_med[k] = sp_median(v, p->o->trials);
    }
    struct sp_link_series s = {label,      from,  to,           p->sizes,
                               p->n_sizes, p->ms, p->o->trials, "cuda_events_median_ms",
                               ev_med};
    return sp_links_doc_add(doc, &s, NULL);
}

#ifdef SP_HAVE_NCCL
static int64_t host_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* NCCL send/recv from a to b, timed on the host: the group launched, both streams finished */
static sp_status nccl_series(struct probe *p, struct sp_links_doc *doc, int a, int b,
                             const char *label) {
    ncclComm_t comm[2];
    int devs[2] = {a, b};
    ncclResult_t r = sp_nccl()->CommInitAll(comm, 2, devs);
    if (r != ncclSuccess)
        return sp_fail(p->ctx, SP_ERR_CUDA, "bandwidth: ncclCommInitAll(gpu%d, gpu%d): %s", a, b,
                       sp_nccl()->GetErrorString(r));
    sp_status st = SP_OK;
    for (size_t k = 0; st == SP_OK && k < p->n_sizes; k++)
        for (unsigned t = 0; st == SP_OK && t < p->o->warmup + p->o->trials; t++) {
            int64_t t0 = host_ns();
            r = sp_nccl()->GroupStart();
            if (r == ncclSuccess)
                r = sp_nccl()->Send(p->buf[a][0], p->sizes[k], ncclChar, 1, comm[0], p->stream[a]);
            if (r == ncclSuccess)
                r = sp_nccl()->Recv(p->buf[b][1], p->sizes[k], ncclChar, 0, comm[1], p->stream[b]);
            ncclResult_t r2 = sp_nccl()->GroupEnd();
            if (r == ncclSuccess)
                r = r2;
            if (r != ncclSuccess) {
                st = sp_fail(p->ctx, SP_ERR_CUDA, "bandwidth: NCCL send/recv gpu%d -> gpu%d: %s", a,
                             b, sp_nccl()->GetErrorString(r));
                break;
            }
            cudaError_t e = cudaStreamSynchronize(p->stream[a]);
            if (e == cudaSuccess)
                e = cudaStreamSynchronize(p->stream[b]);
            if (e != cudaSuccess) {
                st = cuda_fail(p->ctx, "NCCL send/recv", a, e);
                break;
            }
            if (t >= p->o->warmup)
                p->ms[k * p->o->trials + (t - p->o->warmup)] = (double)(host_ns() - t0) / 1e6;
        }
    sp_nccl()->CommDestroy(comm[0]);
    sp_nccl()->CommDestroy(comm[1]);
    if (st != SP_OK)
        return st;
    struct sp_link_series s = {label, -1,           -1,   p->sizes, p->n_sizes,
                               p->ms, p->o->trials, NULL, NULL};
    return sp_links_doc_add(doc, &s, NULL);
}
#endif

static sp_status setup(struct probe *p) {
    for (int d = 0; d < p->n_dev; d++) {
        CK(cudaSetDevice(d), "cudaSetDevice", d);
        CK(cudaStreamCreateWithFlags(&p->stream[d], cudaStreamNonBlocking), "cudaStreamCreate", d);
        CK(cudaEventCreate(&p->ev[d][0]), "cudaEventCreate", d);
        CK(cudaEventCreate(&p->ev[d][1]), "cudaEventCreate", d);
        for (int k = 0; k < 2; k++) {
            CK(cudaMalloc(&p->buf[d][k], p->max_bytes), "cudaMalloc", d);
            CK(cudaMemset(p->buf[d][k], k + 1, p->max_bytes), "cudaMemset", d);
        }
        for (int e = 0; e < p->n_dev; e++) { /* peer access where the hardware has it */
            int can = 0;
            if (e != d && cudaDeviceCanAccessPeer(&can, d, e) == cudaSuccess && can) {
                cudaError_t err = cudaDeviceEnablePeerAccess(e, 0);
                if (err != cudaSuccess && err != cudaErrorPeerAccessAlreadyEnabled)
                    return cuda_fail(p->ctx, "cudaDeviceEnablePeerAccess", d, err);
                cudaGetLastError();
            }
        }
    }
    CK(cudaSetDevice(0), "cudaSetDevice", 0);
    CK(cudaMallocHost(&p->host, p->max_bytes), "cudaMallocHost", 0);
    memset(p->host, 3, p->max_bytes);
    return SP_OK;
}

static void teardown(struct probe *p) {
    for (int d = 0; d < p->n_dev; d++) {
        if (cudaSetDevice(d) != cudaSuccess)
            continue;
        cudaDeviceSynchronize();
        for (int k = 0; k < 2; k++)
            if (p->buf[d][k])
                cudaFree(p->buf[d][k]);
        for (int k = 0; k < 2; k++)
            if (p->ev[d][k])
                cudaEventDestroy(p->ev[d][k]);
        if (p->stream[d])
            cudaStreamDestroy(p->stream[d]);
    }
    if (p->host)
        cudaFreeHost(p->host);
    cudaGetLastError();
}

static sp_status measure(struct probe *p, struct sp_links_doc *doc) {
    sp_status st = setup(p);
    char label[64];
    for (int a = 0; st == SP_OK && a < p->n_dev; a++)
        for (int b = 0; st == SP_OK && b < p->n_dev; b++)
            if (a != b) {
                snprintf(label, sizeof label, "gpu%d->gpu%d", a, b);
                st = run_series(p, doc, COPY_PEER, a, b, label, a, b);
#ifdef SP_HAVE_NCCL
                if (st == SP_OK && p->nccl) {
                    snprintf(label, sizeof label, "gpu%d->gpu%d nccl", a, b);
                    st = nccl_series(p, doc, a, b, label);
                }
#endif
            }
    for (int a = 0; st == SP_OK && a < p->n_dev; a++) {
        snprintf(label, sizeof label, "host->gpu%d", a);
        st = run_series(p, doc, COPY_H2D, a, a, label, -1, -1);
        snprintf(label, sizeof label, "gpu%d->host", a);
        if (st == SP_OK)
            st = run_series(p, doc, COPY_D2H, a, a, label, -1, -1);
        snprintf(label, sizeof label, "gpu%d->gpu%d (within)", a, a);
        if (st == SP_OK)
            st = run_series(p, doc, COPY_D2D, a, a, label, -1, -1);
    }
    teardown(p);
    return st;
}

/* the trials, warm-up rounds and sizes within their limits; the largest size */
static sp_status check_opts(struct probe *p) {
    const sp_bandwidth_opts *opts = p->o;
    if (opts->trials < 1 || opts->trials > MAX_TRIALS || opts->warmup > 100)
        return sp_fail(p->ctx, SP_ERR_INVALID_ARG,
                       "bandwidth: 1 to %d trials and at most 100 warm-up rounds", MAX_TRIALS);
    if (p->n_sizes < 2 || p->n_sizes > MAX_SIZES)
        return sp_fail(p->ctx, SP_ERR_INVALID_ARG, "bandwidth: 2 to %d message sizes, got %zu",
                       MAX_SIZES, p->n_sizes);
    for (size_t k = 0; k < p->n_sizes; k++) {
        if (p->sizes[k] < 1 || p->sizes[k] > ((uint64_t)1 << 34))
            return sp_fail(p->ctx, SP_ERR_INVALID_ARG,
                           "bandwidth: message sizes are 1 byte to 16 GiB, got %llu",
                           (unsigned long long)p->sizes[k]);
        p->max_bytes = p->sizes[k] > p->max_bytes ? p->sizes[k] : p->max_bytes;
    }
    return SP_OK;
}

sp_status sp_bandwidth_measure_cuda(sp_ctx *ctx, const sp_bandwidth_opts *opts,
                                    sp_bandwidth_result **out) {
    if (!ctx)
        return SP_ERR_INVALID_ARG;
    sp_ctx_begin(ctx);
    if (!opts || !out)
        return sp_fail(ctx, SP_ERR_INVALID_ARG, "sp_bandwidth_measure_cuda: NULL argument");
    *out = NULL;
    struct probe *p = sp_calloc(1, sizeof *p);
    if (!p)
        return sp_oom(ctx, "measuring links");
    p->ctx = ctx;
    p->o = opts;
    p->sizes = opts->sizes ? opts->sizes : default_sizes;
    p->n_sizes = opts->sizes ? opts->n_sizes : sizeof default_sizes / sizeof *default_sizes;
    sp_status st = check_opts(p);
    int n = 0;
    if (st == SP_OK) {
        cudaError_t e = cudaGetDeviceCount(&n);
        if (e != cudaSuccess || n == 0)
            st = sp_fail(ctx, SP_ERR_NO_DEVICE, "bandwidth --backend cuda: no CUDA device (%s)",
                         e == cudaSuccess ? "the runtime sees 0 devices" : cudaGetErrorString(e));
        else if (n > MAX_DEVICES)
            n = MAX_DEVICES;
    }
    p->n_dev = n;
    char why[160] = "";
    struct sp_links_doc *doc = NULL;
    if (st == SP_OK)
        st = sp_links_doc_begin(ctx, (size_t)n, &doc);
    if (st == SP_OK) {
        p->cupti = cupti_start(why, sizeof why);
#ifdef SP_HAVE_NCCL
        const char *no_nccl = NULL; /* without NCCL, the NCCL series is left out */
        const struct sp_nccl *lib = n >= 2 ? sp_nccl_lib(&no_nccl) : NULL;
        p->nccl = lib && lib->CommInitAll && lib->GroupStart && lib->GroupEnd;
#endif
        st = measure(p, doc);
        if (p->cupti)
            cupti_stop();
    }
    char names[MAX_DEVICES][16]; /* the links file names devices gpu<i>, as devices files do */
    const char *name_ptr[MAX_DEVICES];
    for (int d = 0; d < n; d++) {
        snprintf(names[d], sizeof names[d], "gpu%d", d);
        name_ptr[d] = names[d];
    }
    if (st == SP_OK)
        st = sp_links_doc_describe(
            doc, "stagepart bandwidth --backend cuda",
            "cudaMemcpyPeerAsync between every ordered pair of devices on the sender's stream "
            "(peer access enabled where the hardware has it); per device host-to-device and "
            "device-to-host from pinned memory and a copy within the device; NCCL send/recv per "
            "pair when built with NCCL (timed on the host); median over trials, fitted to t = "
            "latency + bytes / bandwidth (weights 1/t^2)",
            opts->trials, opts->warmup);
    if (st == SP_OK) {
        char timing[256];
        if (!p->cupti)
            snprintf(timing, sizeof timing, "%s", why);
        else if (p->series_on_events)
            snprintf(timing, sizeof timing,
                     "CUPTI memcpy records (device timestamps); %u series whose records did not "
                     "match their copies fitted on CUDA events",
                     p->series_on_events);
        else
            snprintf(timing, sizeof timing,
                     "CUPTI memcpy records (device timestamps of each copy); CUDA events around "
                     "each copy beside (cuda_events_median_ms)");
        cJSON *m = sp_links_doc_measurement(doc), *devs = NULL;
        bool ok = sp_links_doc_say(doc, "timing", timing) == SP_OK &&
                  (devs = cJSON_AddArrayToObject(m, "device_names"));
        for (int d = 0; ok && d < n; d++) {
            struct cudaDeviceProp prop;
            ok = cJSON_AddItemToArray(
                devs,
                cJSON_CreateString(cudaGetDeviceProperties(&prop, d) == cudaSuccess ? prop.name
                                                                                    : "unknown"));
        }
        if (ok && n == 1)
            ok = sp_links_doc_say(doc, "note",
                                  "one device: no link between devices to measure; the series "
                                  "are host copies and copies within the device") == SP_OK;
        st = ok ? sp_links_doc_finish(doc, name_ptr, out) : sp_oom(ctx, "measuring links");
        doc = NULL;
    }
    sp_links_doc_abort(doc);
    sp_free(p);
    return st;
}

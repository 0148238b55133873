/* profiler/bandwidth_cpu.c: `stagepart bandwidth --backend cpu`: the links between CPU worker
 * threads, measured the way the CPU pipeline hands an activation from one stage to the next.
 *
 * For an ordered pair (sender, receiver) two threads start, each pinned to its own core and
 * first-touching its own buffer (so the pages live where that thread runs). Per trial the sender
 * fills its buffer (the producer's work, not timed), takes t0 and raises a flag; the receiver,
 * spinning on the flag, copies the sender's buffer into its own and takes t1. t1 - t0 is the
 * handoff latency plus the copy: what a stage boundary costs. Medians over the trials are fitted
 * to t = alpha + s / beta (link_fit.c). */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "links_json.h"

#define MAX_WORKERS 64
#define MAX_SIZES   32
#define MAX_TRIALS  101

static const uint64_t default_sizes[] = {4u << 10, 16u << 10, 64u << 10, 256u << 10,
                                         1u << 20, 4u << 20,  16u << 20, 64u << 20};

void sp_bandwidth_opts_init(sp_bandwidth_opts *o) {
    memset(o, 0, sizeof *o);
    o->workers = 2;
    o->trials = 7;
    o->warmup = 2;
}

struct pair_run {
    const sp_bandwidth_opts *o;
    const uint64_t *sizes;
    size_t n_sizes;
    uint64_t max_bytes;
    int core[2]; /* -1: not pinned */
    pthread_barrier_t barrier;
    _Atomic uint64_t flag; /* the round the sender has published */
    _Atomic int64_t t0_ns;
    unsigned char *src;
    _Atomic int failed;
    double ms[MAX_SIZES][MAX_TRIALS]; /* the receiver's measurements */
};

struct worker_arg {
    struct pair_run *run;
    int role; /* 0 sender, 1 receiver */
};

static int64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static void *worker(void *p) {
    struct worker_arg *a = p;
    struct pair_run *r = a->run;
    if (r->core[a->role] >= 0) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(r->core[a->role], &set);
        pthread_setaffinity_np(pthread_self(), sizeof set, &set); /* best effort */
    }
    unsigned char *buf = malloc(r->max_bytes);
    if (!buf)
        atomic_store(&r->failed, 1);
    else
        memset(buf, 0, r->max_bytes); /* first touch: the pages are this thread's */
    if (a->role == 0)
        r->src = buf;
    pthread_barrier_wait(&r->barrier); /* both buffers exist */
    uint64_t round = 0;
    unsigned rounds = r->o->warmup + r->o->trials;
    /* pass 0 runs every size once untimed (clocks, caches and page tables settle), pass 1 times */
    for (size_t kk = 0; kk < 2 * r->n_sizes; kk++)
        for (unsigned t = 0; t < (kk < r->n_sizes ? 1 : rounds); t++) {
            bool timed = kk >= r->n_sizes;
            size_t k = timed ? kk - r->n_sizes : kk;
            ++round;
            size_t bytes = r->sizes[k];
            pthread_barrier_wait(&r->barrier);
            if (atomic_load(&r->failed)) {
                /* keep the barrier count of the other party */
            } else if (a->role == 0) {
                memset(buf, (int)(round & 0xff), bytes);
                atomic_store_explicit(&r->t0_ns, now_ns(), memory_order_relaxed);
                atomic_store_explicit(&r->flag, round, memory_order_release);
            } else {
                for (unsigned spins = 0;
                     atomic_load_explicit(&r->flag, memory_order_acquire) != round; spins++)
                    if (spins > 1000000)
                        sched_yield(); /* more workers than cores: let the sender run */
                memcpy(buf, r->src, bytes);
                int64_t t1 = now_ns();
                if (buf[bytes - 1] != (unsigned char)(round & 0xff))
                    atomic_store(&r->failed, 2); /* the copy must be real */
                if (timed && t >= r->o->warmup)
                    r->ms[k][t - r->o->warmup] =
                        (double)(t1 - atomic_load_explicit(&r->t0_ns, memory_order_relaxed)) / 1e6;
            }
            pthread_barrier_wait(&r->barrier); /* the copy is done before the next fill */
        }
    free(buf);
    return NULL;
}

static sp_status check_opts(sp_ctx *ctx, const sp_bandwidth_opts *opts, const uint64_t *sizes,
                            size_t n_sizes, uint64_t *max_bytes) {
    if (opts->workers < 2 || opts->workers > MAX_WORKERS)
        return sp_fail(ctx, SP_ERR_INVALID_ARG, "bandwidth: 2 to %d workers, got %u", MAX_WORKERS,
                       opts->workers);
    if (opts->trials < 1 || opts->trials > MAX_TRIALS || opts->warmup > 100)
        return sp_fail(ctx, SP_ERR_INVALID_ARG,
                       "bandwidth: 1 to %d trials and at most 100 warm-up rounds", MAX_TRIALS);
    if (n_sizes < 2 || n_sizes > MAX_SIZES)
        return sp_fail(ctx, SP_ERR_INVALID_ARG, "bandwidth: 2 to %d message sizes, got %zu",
                       MAX_SIZES, n_sizes);
    *max_bytes = 0;
    for (size_t k = 0; k < n_sizes; k++) {
        if (sizes[k] < 1 || sizes[k] > ((uint64_t)1 << 32))
            return sp_fail(ctx, SP_ERR_INVALID_ARG,
                           "bandwidth: message sizes are 1 byte to 4 GiB, got %llu",
                           (unsigned long long)sizes[k]);
        *max_bytes = sizes[k] > *max_bytes ? sizes[k] : *max_bytes;
    }
    return SP_OK;
}

/* one pair of workers, sender on core i and receiver on core j (pinned when there are cores
 * enough): every size's copies timed into run->ms */
static sp_status measure_pair(sp_ctx *ctx, struct pair_run *run, unsigned i, unsigned j, bool pin) {
    const sp_bandwidth_opts *opts = run->o;
    run->core[0] = pin ? (int)i : -1;
    run->core[1] = pin ? (int)j : -1;
    pthread_barrier_init(&run->barrier, NULL, 2);
    struct worker_arg args[2] = {{run, 0}, {run, 1}};
    pthread_t th[2];
    int started = 0, why = 0;
    for (; started < 2; started++)
        if ((why = pthread_create(&th[started], NULL, worker, &args[started])) != 0)
            break;
    if (started < 2) {
        /* the one that started waits at the first barrier, released below; threads fail to start
         * only out of resources: memory for their stacks under a limit */
        sp_status st = sp_fail(ctx, sp_thread_start_status(why),
                               "bandwidth: cannot start the worker threads: %s%s", strerror(why),
                               sp_thread_start_hint(why));
        if (started == 1) {
            atomic_store(&run->failed, 1);
            pthread_barrier_wait(&run->barrier);
            for (size_t kk = 0; kk < 2 * run->n_sizes; kk++)
                for (unsigned t = 0; t < (kk < run->n_sizes ? 1 : opts->warmup + opts->trials);
                     t++) {
                    pthread_barrier_wait(&run->barrier);
                    pthread_barrier_wait(&run->barrier);
                }
            pthread_join(th[0], NULL);
        }
        pthread_barrier_destroy(&run->barrier);
        return st;
    }
    pthread_join(th[0], NULL);
    pthread_join(th[1], NULL);
    pthread_barrier_destroy(&run->barrier);
    if (run->failed)
        return run->failed == 1
                   ? sp_oom(ctx, "bandwidth buffers")
                   : sp_fail(ctx, SP_ERR_INTERNAL, "bandwidth: a copy did not arrive intact");
    return SP_OK;
}

/* the links document's device names, its description and measurement; *doc is consumed */
static sp_status finish_doc(sp_ctx *ctx, struct sp_links_doc **doc, const sp_bandwidth_opts *opts,
                            bool pin, long cpus, sp_bandwidth_result **out) {
    unsigned n = opts->workers;
    char **names = sp_calloc(n, sizeof *names);
    sp_status st = names ? SP_OK : sp_oom(ctx, "measuring links");
    for (unsigned i = 0; st == SP_OK && i < n; i++) {
        char name[32];
        snprintf(name, sizeof name, "cpu%u", i);
        if (!(names[i] = sp_strdup(name)))
            st = sp_oom(ctx, "measuring links");
    }
    if (st == SP_OK)
        st = sp_links_doc_describe(*doc, "stagepart bandwidth --backend cpu",
                                   "sender fills its buffer and raises a flag; the receiver copies "
                                   "it into its own; median over trials, fitted to t = latency + "
                                   "bytes / bandwidth (weights 1/t^2)",
                                   opts->trials, opts->warmup);
    if (st == SP_OK) {
        cJSON *m = sp_links_doc_measurement(*doc);
        bool ok = cJSON_AddBoolToObject(m, "pinned", pin) &&
                  cJSON_AddNumberToObject(m, "cpus_online", (double)cpus);
        st = ok ? sp_links_doc_finish(*doc, (const char *const *)names, out)
                : sp_oom(ctx, "measuring links");
        *doc = NULL;
    }
    for (unsigned i = 0; names && i < n; i++)
        sp_free(names[i]);
    sp_free(names);
    return st;
}

sp_status sp_bandwidth_measure_cpu(sp_ctx *ctx, const sp_bandwidth_opts *opts,
                                   sp_bandwidth_result **out) {
    if (!ctx)
        return SP_ERR_INVALID_ARG;
    sp_ctx_begin(ctx);
    if (!opts || !out)
        return sp_fail(ctx, SP_ERR_INVALID_ARG, "sp_bandwidth_measure_cpu: NULL argument");
    *out = NULL;
    const uint64_t *sizes = opts->sizes ? opts->sizes : default_sizes;
    size_t n_sizes = opts->sizes ? opts->n_sizes : sizeof default_sizes / sizeof *default_sizes;
    uint64_t max_bytes = 0;
    sp_status st = check_opts(ctx, opts, sizes, n_sizes, &max_bytes);
    if (st != SP_OK)
        return st;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    bool pin = cpus >= (long)opts->workers;
    unsigned n = opts->workers;
    struct pair_run *run = sp_calloc(1, sizeof *run);
    double *ms = sp_mallocarray(n_sizes * opts->trials, sizeof *ms);
    struct sp_links_doc *doc = NULL;
    st = run && ms ? sp_links_doc_begin(ctx, n, &doc) : sp_oom(ctx, "measuring links");
    for (unsigned i = 0; st == SP_OK && i < n; i++)
        for (unsigned j = 0; st == SP_OK && j < n; j++) {
            if (i == j)
                continue;
            memset(run, 0, sizeof *run);
            run->o = opts;
            run->sizes = sizes;
            run->n_sizes = n_sizes;
            run->max_bytes = max_bytes;
            if ((st = measure_pair(ctx, run, i, j, pin)) != SP_OK)
                break;
            for (size_t k = 0; k < n_sizes; k++)
                memcpy(ms + k * opts->trials, run->ms[k], opts->trials * sizeof *ms);
            char label[32];
            snprintf(label, sizeof label, "cpu%u->cpu%u", i, j);
            struct sp_link_series series = {label, (int)i,       (int)j, sizes, n_sizes,
                                            ms,    opts->trials, NULL,   NULL};
            st = sp_links_doc_add(doc, &series, NULL);
        }
    if (st == SP_OK)
        st = finish_doc(ctx, &doc, opts, pin, cpus, out);
    sp_links_doc_abort(doc);
    sp_free(ms);
    sp_free(run);
    return st;
}

/* profiler/cuda/collector.c: the CUDA side of libstagepart-inject.so: InitializeInjection's
 * CUPTI setup, the activity buffers and the exit flush (profiler/cuda/collector.h).
 *
 * Why these choices (../shared/design/profiler.md has the sources):
 *  - CONCURRENT_KERNEL, never KERNEL: KERNEL serializes kernels.
 *  - No cuptiSubscribe: there is one subscriber per process and other tools need it; kernels are
 *    joined to ranges by external correlation, which needs RUNTIME/DRIVER records.
 *  - Only CUPTI calls inside InitializeInjection: it runs inside cuInit.
 *  - Buffers of 8 MiB from malloc, handed back on the CUPTI thread; a failed malloc drops
 *    records (CUPTI counts them), it does not stop the program.
 *  - API records only for the calls that launch work, copy or set memory (what a kernel's
 *    launch thread and range come from), not for every runtime and driver call: on a
 *    launch-bound program (1300 kernels a step) the API records were most of the cost. CUPTI
 *    names each callback id; those starting cudaLaunch, cudaMemcpy, cudaMemset, cudaGraphLaunch
 *    and their cu* driver twins are enabled one by one (cuptiActivityEnableRuntimeApi, CUDA
 *    12.5+). Without that call, or with STAGEPART_INJECT_API=all, every call is recorded.
 *  - When the window closes (--steps), the ranges stop talking to CUPTI and CUPTI detaches at
 *    the next API exit (cuptiFinalize from an API-exit callback, CUPTI's documented safe point,
 *    after a flush), so the rest of the run goes at full speed. Where the one subscription is
 *    taken by another tool, the activity kinds are disabled instead. */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <regex.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collector.h"
#include "cupti_records.h"

#define BUFFER_BYTES ((size_t)8 << 20)

static const struct sp_cupti_ops *g_ops = &sp_cupti_real_ops;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static _Atomic(struct sp_evlog *) g_log;
static atomic_bool g_off;          /* a failure, idle mode, or a forked child */
static atomic_bool g_failed_once;  /* the one message was printed */
static atomic_bool g_cupti_ready;  /* InitializeInjection finished */
static atomic_bool g_cupti_inited; /* InitializeInjection ran (flush at exit) */
static atomic_bool g_finished;
static _Atomic int64_t g_stop_ns = INT64_MAX;
static atomic_bool g_window_closed; /* --steps reached: ranges leave CUPTI alone */
static atomic_bool g_detaching;     /* the API-exit callback took the detach */
static atomic_bool g_detached;      /* cuptiFinalize ran: no CUPTI call is made any more */
static CUpti_SubscriberHandle g_subscriber;
/* the API records enabled one by one (to disable them the same way) */
#define MAX_SELECTED_APIS 512
static CUpti_CallbackId g_selected[2][MAX_SELECTED_APIS]; /* [0] runtime, [1] driver */
static unsigned g_n_selected[2];
static bool g_all_apis; /* the RUNTIME and DRIVER kinds instead */
static atomic_uint g_steps_closed;
static unsigned g_steps_wanted; /* warm-up + steps; 0: every step */
static regex_t g_step_re;
static bool g_have_step_re;
static pthread_mutex_t g_counts_lock = PTHREAD_MUTEX_INITIALIZER;
static struct sp_record_counts g_counts;
/* Per string id: 0 unknown, 1 a step range, 2 not (the step pattern runs once per name). */
#define STEP_CACHE 65536
static _Atomic uint8_t g_is_step[STEP_CACHE];

void sp_collector_set_ops(const struct sp_cupti_ops *ops) {
    g_ops = ops;
}
const struct sp_cupti_ops *sp_collector_ops(void) {
    return g_ops;
}

void sp_collector_failf(const char *message) {
    atomic_store(&g_off, true);
    if (!atomic_exchange(&g_failed_once, true))
        fprintf(stderr, "stagepart-inject: %s; recording is off for process %ld\n", message,
                (long)getpid());
}

void sp_collector_fail(const char *where, CUptiResult result) {
    const char *s = NULL;
    if (g_ops->get_result_string(result, &s) != CUPTI_SUCCESS || !s)
        s = "unknown CUPTI error";
    char msg[512];
    snprintf(msg, sizeof msg, "%s failed: %s (%d)", where, s, (int)result);
    sp_collector_failf(msg);
}

static void in_forked_child(void) {
    /* DataLoader workers and the like inherit the environment and our state: the parent's log
     * and buffers are not theirs to touch. */
    atomic_store(&g_off, true);
    atomic_store(&g_log, NULL);
}

static void at_exit(void) {
    sp_collector_finish();
}

static unsigned env_uint(const char *name) {
    const char *v = getenv(name);
    if (!v || !*v)
        return 0;
    char *end = NULL;
    errno = 0;
    unsigned long n = strtoul(v, &end, 10);
    if (errno || *end || n > 1000000) {
        char msg[256];
        snprintf(msg, sizeof msg, "%s='%.64s' is not a count", name, v);
        sp_collector_failf(msg);
        return 0;
    }
    return (unsigned)n;
}

static void open_log(void) {
    const char *dir = getenv("STAGEPART_INJECT_DIR");
    const char *mode = getenv("STAGEPART_INJECT_MODE");
    if (!dir || !*dir) {
        sp_collector_failf("STAGEPART_INJECT_DIR is not set (run the program under "
                           "`stagepart profile --attach -- CMD`)");
        return;
    }
    if (mode && strcmp(mode, "idle") == 0) {
        atomic_store(&g_off, true); /* hooks stay, records do not */
        return;
    }
    if (mode && *mode && strcmp(mode, "trace") != 0) {
        sp_collector_failf("STAGEPART_INJECT_MODE is 'trace' or 'idle'");
        return;
    }
    unsigned steps = env_uint("STAGEPART_INJECT_STEPS");
    unsigned warmup = env_uint("STAGEPART_INJECT_WARMUP");
    g_steps_wanted = steps ? steps + warmup : 0;
    const char *pat = getenv("STAGEPART_INJECT_STEP_PATTERN");
    if (!pat || !*pat)
        pat = "^(stagepart/step|ProfilerStep#[0-9]+)";
    if (regcomp(&g_step_re, pat, REG_EXTENDED | REG_NOSUB) != 0) {
        sp_collector_failf("STAGEPART_INJECT_STEP_PATTERN is not a POSIX extended regex");
        return;
    }
    g_have_step_re = true;
    char path[PATH_MAX];
    int n = snprintf(path, sizeof path, "%s/events-%ld.splog", dir, (long)getpid());
    if (n < 0 || (size_t)n >= sizeof path) {
        sp_collector_failf("STAGEPART_INJECT_DIR is too long");
        return;
    }
    struct sp_evlog *log = sp_evlog_open(path, (uint32_t)getpid());
    if (!log) {
        char msg[PATH_MAX + 64];
        snprintf(msg, sizeof msg, "cannot create %s: %s", path, strerror(errno));
        sp_collector_failf(msg);
        return;
    }
    uint32_t v = 0;
    char num[32];
    if (g_ops->get_version(&v) == CUPTI_SUCCESS) {
        snprintf(num, sizeof num, "%u", v);
        sp_evlog_meta(log, "cupti", num);
    }
    snprintf(num, sizeof num, "%d.%d", CUDA_VERSION / 1000, CUDA_VERSION % 1000 / 10);
    sp_evlog_meta(log, "cuda", num); /* the toolkit the collector was built with */
    atomic_store(&g_log, log);
    pthread_atfork(NULL, NULL, in_forked_child);
    atexit(at_exit);
}

struct sp_evlog *sp_collector_log(void) {
    pthread_once(&g_once, open_log);
    return atomic_load(&g_off) ? NULL : atomic_load(&g_log);
}

bool sp_collector_recording(void) {
    return sp_collector_log() != NULL;
}
bool sp_collector_cupti_ready(void) {
    return atomic_load(&g_cupti_ready);
}
int64_t sp_collector_stop_ns(void) {
    return atomic_load(&g_stop_ns);
}

int64_t sp_collector_now_ns(void) {
    uint64_t t = 0;
    if (g_ops->get_timestamp(&t) != CUPTI_SUCCESS)
        return 0; /* a zero time is counted as unusable by the reader */
    return (int64_t)t;
}

bool sp_collector_is_step(uint32_t name_id, const char *text) {
    if (!g_have_step_re)
        return false;
    uint8_t is = name_id < STEP_CACHE ? atomic_load(&g_is_step[name_id]) : 0;
    if (!is) {
        if (!text)
            return false; /* a registered name seen first here: step ranges use plain text */
        is = regexec(&g_step_re, text, 0, NULL, 0) == 0 ? 1 : 2;
        if (name_id < STEP_CACHE)
            atomic_store(&g_is_step[name_id], is);
    }
    return is == 1;
}

bool sp_collector_window_closed(void) {
    return atomic_load(&g_window_closed);
}
bool sp_collector_detached(void) {
    return atomic_load(&g_detached);
}

/* the activity kinds the collector enables; API records go by selection or by kind */
static const struct {
    CUpti_ActivityKind kind;
    const char *name;
} g_kinds[] = {
    {CUPTI_ACTIVITY_KIND_DEVICE, "DEVICE"},
    {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, "CONCURRENT_KERNEL"},
    {CUPTI_ACTIVITY_KIND_MEMCPY, "MEMCPY"},
    {CUPTI_ACTIVITY_KIND_MEMCPY2, "MEMCPY2"},
    {CUPTI_ACTIVITY_KIND_MEMSET, "MEMSET"},
    {CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION, "EXTERNAL_CORRELATION"},
};

/* no more records: every kind and API selection turned off */
static void stop_activities(void) {
    for (size_t i = 0; i < sizeof g_kinds / sizeof g_kinds[0]; i++)
        g_ops->disable(g_kinds[i].kind);
    if (g_all_apis) {
        g_ops->disable(CUPTI_ACTIVITY_KIND_RUNTIME);
        g_ops->disable(CUPTI_ACTIVITY_KIND_DRIVER);
    }
    for (unsigned k = 0; k < g_n_selected[0]; k++)
        g_ops->enable_runtime_api(g_selected[0][k], 0);
    for (unsigned k = 0; k < g_n_selected[1]; k++)
        g_ops->enable_driver_api(g_selected[1][k], 0);
}

/* At the first runtime or driver API exit after the window closed: the records flushed, then
 * CUPTI detached (its documented safe point for cuptiFinalize). */
static void CUPTIAPI at_api_exit(void *userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                                 const void *data) {
    (void)userdata, (void)cbid;
    const CUpti_CallbackData *d = data;
    if ((domain != CUPTI_CB_DOMAIN_RUNTIME_API && domain != CUPTI_CB_DOMAIN_DRIVER_API) || !d ||
        d->callbackSite != CUPTI_API_EXIT || atomic_exchange(&g_detaching, true))
        return;
    g_ops->flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    stop_activities();
    atomic_store(&g_detached, true); /* before: no range pops an id from a detached CUPTI */
    g_ops->finalize();
}

/* The window closed: ranges stop pushing ids, and CUPTI is asked to detach. */
static void close_window(void) {
    atomic_store(&g_window_closed, true);
    if (!atomic_load(&g_cupti_ready))
        return;
    atomic_store(&g_cupti_ready, false);
    bool asked = g_ops->subscribe(&g_subscriber, at_api_exit, NULL) == CUPTI_SUCCESS;
    asked = asked &&
            g_ops->enable_domain(1, g_subscriber, CUPTI_CB_DOMAIN_RUNTIME_API) == CUPTI_SUCCESS &&
            g_ops->enable_domain(1, g_subscriber, CUPTI_CB_DOMAIN_DRIVER_API) == CUPTI_SUCCESS;
    if (!asked && !atomic_exchange(&g_detaching, true))
        stop_activities(); /* the subscription is another tool's: no records, CUPTI stays */
}

void sp_collector_step_closed(int64_t end_ns) {
    if (atomic_fetch_add(&g_steps_closed, 1) + 1 == g_steps_wanted) {
        atomic_store(&g_stop_ns, end_ns);
        close_window();
    }
    /* a program that ends in _exit() or a signal loses at most the step in progress */
    struct sp_evlog *log = sp_collector_log();
    if (log)
        sp_evlog_flush(log);
}

/* Buffers go back to a small pool after use, zeroed on CUPTI's thread (we tell CUPTI they come
 * zeroed, so it does not zero them on the program's thread). */
#define POOL_MAX 8
static pthread_mutex_t g_pool_lock = PTHREAD_MUTEX_INITIALIZER;
static uint8_t *g_pool[POOL_MAX];
static int g_pool_n;

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records) {
    uint8_t *p = NULL;
    pthread_mutex_lock(&g_pool_lock);
    if (g_pool_n)
        p = g_pool[--g_pool_n];
    pthread_mutex_unlock(&g_pool_lock);
    if (!p)
        p = calloc(1, BUFFER_BYTES); /* malloc's alignment (16) is more than the 8 CUPTI needs */
    *buffer = p;
    *size = p ? BUFFER_BYTES : 0; /* no memory: CUPTI drops and counts the records */
    *max_records = 0;
}

static void buffer_release(uint8_t *buffer, size_t valid) {
    if (!buffer)
        return;
    memset(buffer, 0, valid);
    pthread_mutex_lock(&g_pool_lock);
    if (g_pool_n < POOL_MAX) {
        g_pool[g_pool_n++] = buffer;
        buffer = NULL;
    }
    pthread_mutex_unlock(&g_pool_lock);
    free(buffer);
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size,
                                      size_t valid) {
    (void)size;
    struct sp_evlog *log = sp_collector_log();
    if (log && buffer && valid) {
        struct sp_record_counts c = {0};
        CUptiResult r =
            sp_cupti_records_write(g_ops, log, buffer, valid, sp_collector_stop_ns(), &c);
        if (r != CUPTI_ERROR_MAX_LIMIT_REACHED && r != CUPTI_SUCCESS)
            sp_collector_fail("cuptiActivityGetNextRecord", r);
        size_t dropped = 0;
        if (g_ops->get_num_dropped_records(ctx, stream, &dropped) == CUPTI_SUCCESS && dropped)
            sp_evlog_dropped(log, dropped);
        pthread_mutex_lock(&g_counts_lock);
        g_counts.kernels += c.kernels;
        g_counts.apis += c.apis;
        g_counts.graph_launches += c.graph_launches;
        g_counts.after_window += c.after_window;
        pthread_mutex_unlock(&g_counts_lock);
    }
    buffer_release(buffer, valid <= size ? valid : size);
}

static bool set_attr(CUpti_ActivityAttribute attr, size_t value, const char *what) {
    size_t sz = sizeof value;
    CUptiResult r = g_ops->set_attribute(attr, &sz, &value);
    if (r != CUPTI_SUCCESS) {
        sp_collector_fail(what, r);
        return false;
    }
    return true;
}

/* The calls whose records attribution needs: those that launch work, copy or set memory. */
static bool launches_work(const char *name) {
    static const char *const prefixes[] = {"cudaLaunch",      "cudaMemcpy",   "cudaMemset",
                                           "cudaGraphLaunch", "cuLaunch",     "cuMemcpy",
                                           "cuMemset",        "cuGraphLaunch"};
    for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
        if (strncmp(name, prefixes[i], strlen(prefixes[i])) == 0)
            return true;
    return false;
}

/* API records for the launching calls alone; false (nothing to undo: enabling the kinds after
 * overrides a selection) when this CUPTI cannot select them */
static bool select_api_records(void) {
    static const struct {
        CUpti_CallbackDomain domain;
        uint32_t end;
    } domains[2] = {{CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_SIZE},
                    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_SIZE}};
    for (int d = 0; d < 2; d++) {
        g_n_selected[d] = 0;
        for (uint32_t cbid = 1; cbid < domains[d].end; cbid++) {
            const char *name = NULL;
            if (g_ops->get_callback_name(domains[d].domain, cbid, &name) != CUPTI_SUCCESS ||
                !name || !launches_work(name))
                continue;
            CUptiResult r =
                d ? g_ops->enable_driver_api(cbid, 1) : g_ops->enable_runtime_api(cbid, 1);
            if (r != CUPTI_SUCCESS || g_n_selected[d] == MAX_SELECTED_APIS)
                return false;
            g_selected[d][g_n_selected[d]++] = cbid;
        }
    }
    return g_n_selected[0] > 0 && g_n_selected[1] > 0;
}

int sp_collector_init_cupti(void) {
    if (atomic_exchange(&g_cupti_inited, true) || !sp_collector_recording())
        return 1; /* a second call, or nothing to record: the program runs on untouched */
    uint8_t zeroed = 1;
    size_t zsz = sizeof zeroed;
    CUptiResult r;
    if (!set_attr(CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_SIZE, BUFFER_BYTES,
                  "cuptiActivitySetAttribute(DEVICE_BUFFER_SIZE)"))
        return 1;
    if ((r = g_ops->set_attribute(CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER, &zsz, &zeroed)) !=
        CUPTI_SUCCESS) {
        sp_collector_fail("cuptiActivitySetAttribute(ZEROED_OUT_ACTIVITY_BUFFER)", r);
        return 1;
    }
    if ((r = g_ops->register_callbacks(buffer_requested, buffer_completed)) != CUPTI_SUCCESS) {
        sp_collector_fail("cuptiActivityRegisterCallbacks", r);
        return 1;
    }
    for (size_t i = 0; i < sizeof g_kinds / sizeof g_kinds[0]; i++)
        if ((r = g_ops->enable(g_kinds[i].kind)) != CUPTI_SUCCESS) {
            char where[96];
            snprintf(where, sizeof where, "cuptiActivityEnable(%s)", g_kinds[i].name);
            sp_collector_fail(where, r);
            return 1;
        }
    const char *api = getenv("STAGEPART_INJECT_API");
    g_all_apis = (api && strcmp(api, "all") == 0) || !select_api_records();
    for (int d = 0; g_all_apis && d < 2; d++) /* after the selection: the kinds override it */
        if ((r = g_ops->enable(d ? CUPTI_ACTIVITY_KIND_DRIVER : CUPTI_ACTIVITY_KIND_RUNTIME)) !=
            CUPTI_SUCCESS) {
            sp_collector_fail(d ? "cuptiActivityEnable(DRIVER)" : "cuptiActivityEnable(RUNTIME)",
                              r);
            return 1;
        }
    struct sp_evlog *log = sp_collector_log();
    if (log)
        sp_evlog_meta(log, "api_records",
                      g_all_apis ? "every runtime and driver call"
                                 : "launches, copies and memsets");
    atomic_store(&g_cupti_ready, true);
    return 1;
}

void sp_collector_finish(void) {
    if (atomic_exchange(&g_finished, true))
        return;
    if (atomic_load(&g_cupti_inited) && g_log && !atomic_load(&g_off) &&
        !atomic_load(&g_detached)) { /* a detached CUPTI flushed before it went */
        CUptiResult r = g_ops->flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
        if (r != CUPTI_SUCCESS)
            sp_collector_fail("cuptiActivityFlushAll", r);
    }
    atomic_store(&g_cupti_ready, false);
    struct sp_evlog *log = atomic_load(&g_log);
    if (!log)
        return; /* idle, never opened, or a forked child */
    pthread_mutex_lock(&g_counts_lock);
    if (g_counts.graph_launches) {
        char msg[160];
        snprintf(msg, sizeof msg,
                 "%llu CUDA graph launches: their kernels count for the range around the launch",
                 (unsigned long long)g_counts.graph_launches);
        sp_evlog_meta(log, "warning", msg);
    }
    pthread_mutex_unlock(&g_counts_lock);
    atomic_store(&g_off, true);
    /* sealed, not freed: another thread of the program may still pop a range */
    int e = sp_evlog_seal(log);
    if (e)
        fprintf(stderr, "stagepart-inject: writing the event log: %s\n", strerror(e));
}

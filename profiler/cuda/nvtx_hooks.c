/* profiler/cuda/nvtx_hooks.c: the NVTX side of libstagepart-inject.so. Every NVTX v3 module of
 * the program (each library with its own NVTX globals) calls InitializeInjectionNvtx2 at its
 * first NVTX call when NVTX_INJECTION64_PATH names us; we write our handlers into its tables.
 *
 * A push records {id, start, name, payload} on the thread's own stack and, once CUPTI is set
 * up, pushes the id as CUPTI's external correlation (kind CUSTOM2: Kineto uses CUSTOM0/1), so
 * every API call inside is tagged with the innermost open range. A pop writes the closed range.
 * Each handler is a few hundred nanoseconds: a thread-local stack, one atomic, one interned
 * name (a registered string costs no lookup), one CUPTI push/pop. */
#define _GNU_SOURCE
#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <wchar.h>

#include "collector.h"

#define SP_EXPORT __attribute__((visibility("default")))
#define MAX_DEPTH 128
#define NO_NAME   UINT32_MAX

struct open_range {
    uint64_t id;
    int64_t start_ns;
    uint64_t payload;
    uint32_t name, domain;
    bool has_payload, pushed, is_step;
};

struct thread_state {
    bool init;
    uint32_t tid;
    int depth; /* may exceed MAX_DEPTH: the deeper ranges are counted, not recorded */
    struct open_range stack[MAX_DEPTH];
};

static _Thread_local struct thread_state tls;
static atomic_uint_fast64_t g_next_range;
static atomic_uint g_next_tid;

static struct thread_state *thread_state(struct sp_evlog *log) {
    if (!tls.init) {
        tls.init = true;
        tls.tid = atomic_fetch_add(&g_next_tid, 1);
        if (log)
            sp_evlog_thread(log, tls.tid, (uint32_t)syscall(SYS_gettid),
                            (uint32_t)(uintptr_t)pthread_self());
    }
    return &tls;
}

static uint32_t intern(struct sp_evlog *log, const char *s) {
    uint32_t id = NO_NAME;
    if (!s || !sp_evlog_string(log, s, strlen(s), &id))
        return NO_NAME;
    return id;
}

static uint32_t intern_wide(struct sp_evlog *log, const wchar_t *w) {
    if (!w)
        return NO_NAME;
    char buf[512];
    size_t n = 0;
    for (; w[n] && n < sizeof buf - 1; n++)
        buf[n] = w[n] > 0 && w[n] < 128 ? (char)w[n] : '?'; /* names are ASCII by convention */
    buf[n] = '\0';
    return intern(log, buf);
}

/* The name and the text (for the step pattern; NULL for a registered string) of an event. */
static uint32_t name_of(struct sp_evlog *log, const nvtxEventAttributes_t *a, const char **text) {
    *text = NULL;
    if (!a || a->size < offsetof(nvtxEventAttributes_t, message) + sizeof a->message)
        return NO_NAME;
    switch (a->messageType) {
    case NVTX_MESSAGE_TYPE_ASCII:
        *text = a->message.ascii;
        return intern(log, a->message.ascii);
    case NVTX_MESSAGE_TYPE_UNICODE:
        return intern_wide(log, a->message.unicode);
    case NVTX_MESSAGE_TYPE_REGISTERED:
        return a->message.registered ? (uint32_t)((uintptr_t)a->message.registered - 1) : NO_NAME;
    default:
        return NO_NAME;
    }
}

static int push(struct sp_evlog *log, uint32_t domain, uint32_t name, const char *text,
                const nvtxEventAttributes_t *a) {
    struct thread_state *t = thread_state(log);
    int level = t->depth++;
    if (level >= MAX_DEPTH)
        return level;
    struct open_range *r = &t->stack[level];
    memset(r, 0, sizeof *r); /* id 0: the pop records nothing and pops no CUPTI id */
    if (!log || sp_collector_window_closed()) /* after the window: bookkeeping only */
        return level;
    r->id = atomic_fetch_add(&g_next_range, 1) + 1;
    r->name = name;
    r->domain = domain;
    if (a && a->size >= offsetof(nvtxEventAttributes_t, payload) + sizeof a->payload) {
        if (a->payloadType == NVTX_PAYLOAD_TYPE_UNSIGNED_INT64) {
            r->payload = a->payload.ullValue;
            r->has_payload = true;
        } else if (a->payloadType == NVTX_PAYLOAD_TYPE_INT64 && a->payload.llValue >= 0) {
            r->payload = (uint64_t)a->payload.llValue;
            r->has_payload = true;
        }
    }
    r->is_step = name != NO_NAME && sp_collector_is_step(name, text);
    if (sp_collector_cupti_ready()) {
        CUptiResult res = sp_collector_ops()->push_external_correlation(
            CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2, r->id);
        if (res == CUPTI_SUCCESS)
            r->pushed = true;
        else
            sp_collector_fail("cuptiActivityPushExternalCorrelationId", res);
    }
    r->start_ns = sp_collector_now_ns();
    return level;
}

static int pop(uint32_t domain) {
    struct sp_evlog *log = sp_collector_log();
    struct thread_state *t = thread_state(log);
    if (t->depth == 0)
        return -1; /* a pop without a push: NVTX's "error" */
    int level = --t->depth;
    if (level >= MAX_DEPTH)
        return level;
    struct open_range r = t->stack[level];
    (void)domain; /* ranges nest across domains on one thread in the programs we measure */
    int64_t end = sp_collector_now_ns();
    if (r.pushed && !sp_collector_detached()) {
        uint64_t last = 0;
        CUptiResult res = sp_collector_ops()->pop_external_correlation(
            CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2, &last);
        if (res != CUPTI_SUCCESS)
            sp_collector_fail("cuptiActivityPopExternalCorrelationId", res);
    }
    if (log && r.id && r.name != NO_NAME && r.start_ns < sp_collector_stop_ns())
        sp_evlog_range(log, r.id, r.start_ns, end, t->tid, r.name, r.payload, r.has_payload);
    if (r.is_step)
        sp_collector_step_closed(end);
    return level;
}

static int NVTX_API push_a(const char *message) {
    struct sp_evlog *log = sp_collector_log();
    return push(log, 0, log ? intern(log, message) : NO_NAME, message, NULL);
}

static int NVTX_API push_w(const wchar_t *message) {
    struct sp_evlog *log = sp_collector_log();
    return push(log, 0, log ? intern_wide(log, message) : NO_NAME, NULL, NULL);
}

static int NVTX_API push_ex(const nvtxEventAttributes_t *a) {
    struct sp_evlog *log = sp_collector_log();
    const char *text = NULL;
    uint32_t name = log ? name_of(log, a, &text) : NO_NAME;
    return push(log, 0, name, text, a);
}

static int NVTX_API pop_global(void) {
    return pop(0);
}

static int NVTX_API domain_push_ex(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a) {
    struct sp_evlog *log = sp_collector_log();
    const char *text = NULL;
    uint32_t name = log ? name_of(log, a, &text) : NO_NAME;
    return push(log, (uint32_t)(uintptr_t)d, name, text, a);
}

static int NVTX_API domain_pop(nvtxDomainHandle_t d) {
    return pop((uint32_t)(uintptr_t)d);
}

/* Handles are interned ids + 1 (never NULL); with recording off, a constant. */
static nvtxStringHandle_t NVTX_API register_a(nvtxDomainHandle_t d, const char *s) {
    (void)d;
    struct sp_evlog *log = sp_collector_log();
    uint32_t id = log ? intern(log, s) : NO_NAME;
    if (id != NO_NAME)
        (void)sp_collector_is_step(id, s); /* a later push of the handle has no text */
    return (nvtxStringHandle_t)(uintptr_t)(id == NO_NAME ? 0 : (uintptr_t)id + 1);
}

static nvtxStringHandle_t NVTX_API register_w(nvtxDomainHandle_t d, const wchar_t *s) {
    (void)d;
    struct sp_evlog *log = sp_collector_log();
    uint32_t id = log ? intern_wide(log, s) : NO_NAME;
    return (nvtxStringHandle_t)(uintptr_t)(id == NO_NAME ? 0 : (uintptr_t)id + 1);
}

static atomic_uint g_next_domain = 1;

static nvtxDomainHandle_t NVTX_API domain_create_a(const char *name) {
    (void)name;
    return (nvtxDomainHandle_t)(uintptr_t)atomic_fetch_add(&g_next_domain, 1);
}

static nvtxDomainHandle_t NVTX_API domain_create_w(const wchar_t *name) {
    (void)name;
    return (nvtxDomainHandle_t)(uintptr_t)atomic_fetch_add(&g_next_domain, 1);
}

static void NVTX_API domain_destroy(nvtxDomainHandle_t d) {
    (void)d;
}

static void install(NvtxFunctionTable table, unsigned size, unsigned slot, NvtxFunctionPointer f) {
    if (table && slot < size && table[slot])
        *table[slot] = f;
}

SP_EXPORT int NVTX_API InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_table);
SP_EXPORT int NVTX_API InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_table) {
    if (!get_table)
        return 0;
    const NvtxExportTableCallbacks *cb =
        (const NvtxExportTableCallbacks *)get_table(NVTX_ETID_CALLBACKS);
    if (!cb || cb->struct_size < sizeof *cb || !cb->GetModuleFunctionTable)
        return 0;
    const NvtxExportTableVersionInfo *vi =
        (const NvtxExportTableVersionInfo *)get_table(NVTX_ETID_VERSIONINFO);
    if (vi && vi->struct_size >= sizeof *vi && vi->SetInjectionNvtxVersion)
        vi->SetInjectionNvtxVersion(NVTX_VERSION);
    (void)sp_collector_log(); /* read the configuration now, not inside the first range */
    NvtxFunctionTable t = NULL;
    unsigned n = 0;
    if (cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &t, &n)) {
        install(t, n, NVTX_CBID_CORE_RangePushA, (NvtxFunctionPointer)push_a);
        install(t, n, NVTX_CBID_CORE_RangePushW, (NvtxFunctionPointer)push_w);
        install(t, n, NVTX_CBID_CORE_RangePushEx, (NvtxFunctionPointer)push_ex);
        install(t, n, NVTX_CBID_CORE_RangePop, (NvtxFunctionPointer)pop_global);
    }
    t = NULL;
    n = 0;
    if (cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &t, &n)) {
        install(t, n, NVTX_CBID_CORE2_DomainRangePushEx, (NvtxFunctionPointer)domain_push_ex);
        install(t, n, NVTX_CBID_CORE2_DomainRangePop, (NvtxFunctionPointer)domain_pop);
        install(t, n, NVTX_CBID_CORE2_DomainRegisterStringA, (NvtxFunctionPointer)register_a);
        install(t, n, NVTX_CBID_CORE2_DomainRegisterStringW, (NvtxFunctionPointer)register_w);
        install(t, n, NVTX_CBID_CORE2_DomainCreateA, (NvtxFunctionPointer)domain_create_a);
        install(t, n, NVTX_CBID_CORE2_DomainCreateW, (NvtxFunctionPointer)domain_create_w);
        install(t, n, NVTX_CBID_CORE2_DomainDestroy, (NvtxFunctionPointer)domain_destroy);
    }
    return 1;
}

/* sp_annotate_u64: give the innermost range named `key` open on the calling thread the payload
 * `value` (a layer's output bytes), for programs whose NVTX calls carry no payload, such as
 * PyTorch's torch.cuda.nvtx. Call it before the range is popped. 0 when a range took it, -1
 * when none named key is open (or nothing is recorded). */
SP_EXPORT int sp_annotate_u64(const char *key, uint64_t value);
SP_EXPORT int sp_annotate_u64(const char *key, uint64_t value) {
    struct sp_evlog *log = sp_collector_log();
    if (!log || !key)
        return -1;
    uint32_t name = intern(log, key);
    struct thread_state *t = thread_state(log);
    int top = t->depth < MAX_DEPTH ? t->depth : MAX_DEPTH;
    for (int i = top - 1; i >= 0; i--)
        if (t->stack[i].name == name) {
            t->stack[i].payload = value;
            t->stack[i].has_payload = true;
            return 0;
        }
    return -1;
}

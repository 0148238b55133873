/* profiler/import_kineto.c: PyTorch profiler (Kineto) Chrome traces, plain or gzip-compressed.
 *
 * traceEvents with "ph": "X" (times in microseconds, fractions allowed):
 *   cat user_annotation (record_function, ProfilerStep#N) and python_function
 *       ("nn.Module: ...")                          -> host ranges, per (pid, tid)
 *   cat cuda_runtime, cuda_driver                   -> launches, args.correlation
 *   cat kernel, gpu_memcpy, gpu_memset              -> activities, args.correlation, device,
 *                                                      stream, bytes
 * When a launch or a GPU event carries no args.correlation, the ac2g flow events (ph "s" at the
 * launch, "f" at the GPU event, the same id) supply it. The fwdbwd flow events link a forward
 * op (ph "s" at its start) to the autograd op that runs its backward (ph "f" at that op's start):
 *   cat cpu_op at the start of a fwdbwd "f"         -> a host range with the link, so the
 *                                                      backward's work finds its forward's layer
 * deviceProperties names the devices. A file with no GPU event is a CPU run: its cpu_ops' own
 * time becomes its work (cpu_op_work.c). Other events (gpu_user_annotation, ...) are ignored.
 *
 * Several files (one per rank, as torch.profiler writes them) merge into one trace: each file's
 * threads are a process of their own (steps are matched per process), and its correlation ids,
 * flows and device ordinals, which every rank numbers from the start, are keyed by the file. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_util.h"
#include "stagepart/stagepart.h"
#include "trace.h"
#include "u64_map.h"

static uint64_t mix(uint64_t h, uint64_t v) {
    h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
    return h * 0xff51afd7ed558ccdull;
}

/* a pid or tid: a number, or a string ("stream 7", "[pid] name") hashed */
static uint64_t id_of(const cJSON *v) {
    if (cJSON_IsNumber(v) && fabs(v->valuedouble) < 9e18)
        return (uint64_t)(int64_t)v->valuedouble;
    if (cJSON_IsNumber(v)) { /* out of range for an integer: its bits */
        uint64_t bits = 0;
        memcpy(&bits, &v->valuedouble, sizeof bits);
        return bits;
    }
    if (cJSON_IsString(v)) {
        uint64_t h = 1469598103934665603ull;
        for (const char *p = v->valuestring; *p; p++)
            h = (h ^ (unsigned char)*p) * 1099511628211ull;
        return h;
    }
    return 0;
}

static bool get_number(const cJSON *o, const char *k, double *out) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble))
        return false;
    *out = v->valuedouble;
    return true;
}

static int64_t us_to_ns(double us) {
    double ns = us * 1e3;
    if (!(ns > -9e18 && ns < 9e18))
        return 0;
    return (int64_t)llround(ns);
}

struct kineto_state {
    struct sp_trace *t;
    struct sp_u64_map threads; /* hash(file, pid, tid) -> thread index */
    struct sp_u64_map flows;   /* per file: hash(kind, pid, tid, ts) -> flow id (ac2g 's' and
                                * 'f', fwdbwd 'b' at a backward op); hash('S', id) -> the link
                                * ref of fwdbwd flow id (its forward op) */
    uint32_t file;             /* the file's index among those merged */
    /* the file's autograd engine ops ("autograd::engine::evaluate_function: X"): each is given
     * the link of the op X inside it (the engine's reduction of a gradient to its input's shape
     * and the summing of gradients run there, outside X's own op) */
    struct eval_op *evals;
    size_t n_evals, cap_evals;
    struct sp_cpu_op *ops; /* the file's cpu_ops: its work when it has no GPU events */
    size_t n_ops, cap_ops;
    size_t first_linked; /* ranges from here on are the file's */
};

struct eval_op {
    int64_t start, end;
    uint32_t tid, name, inner; /* inner: the string id of X */
};

#define EVALUATE_FUNCTION "autograd::engine::evaluate_function: "

static sp_status thread_of(sp_ctx *ctx, struct kineto_state *k, const cJSON *ev, uint32_t *tid) {
    uint64_t key = mix(mix(mix(7, k->file), id_of(cJSON_GetObjectItemCaseSensitive(ev, "pid"))),
                       id_of(cJSON_GetObjectItemCaseSensitive(ev, "tid")));
    uint64_t v = 0;
    size_t before = k->threads.n;
    if (!sp_u64_map_insert(&k->threads, key, k->threads.n, &v))
        return sp_oom(ctx, "reading a trace");
    *tid = (uint32_t)v;
    return k->threads.n == before ? SP_OK : sp_trace_set_thread_process(ctx, k->t, *tid, k->file);
}

/* a correlation id, keyed by the file (every rank counts its own) */
static uint64_t file_corr(const struct kineto_state *k, uint64_t corr) {
    return corr == UINT64_MAX ? corr : sp_trace_process_corr(k->file, corr);
}

static uint64_t flow_key(int kind, const cJSON *ev, int64_t ts) {
    return mix(mix(mix(mix(11, (uint64_t)kind), id_of(cJSON_GetObjectItemCaseSensitive(ev, "pid"))),
                   id_of(cJSON_GetObjectItemCaseSensitive(ev, "tid"))),
               (uint64_t)ts);
}

/* the event's correlation id: args.correlation, else the ac2g flow that starts ('s', a launch)
 * or ends ('f', GPU work) at it */
static uint64_t correlation_of(const struct kineto_state *k, const cJSON *ev, const cJSON *args,
                               int flow_kind, int64_t ts) {
    double c = 0;
    if (args && get_number(args, "correlation", &c) && c >= 0 && c < 1.8e19)
        return (uint64_t)c;
    uint64_t id = 0;
    if (sp_u64_map_get(&k->flows, flow_key(flow_kind, ev, ts), &id))
        return id;
    return UINT64_MAX;
}

static uint64_t fwd_link_key(uint64_t flow_id) {
    return mix(mix(11, 'S'), flow_id);
}

/* the link ref of a cpu_op that starts where a fwdbwd flow ends (a backward op), or 0 */
static uint32_t backward_link_of(const struct kineto_state *k, const cJSON *ev, int64_t ts) {
    uint64_t id = 0, ref = 0;
    if (!sp_u64_map_get(&k->flows, flow_key('b', ev, ts), &id) ||
        !sp_u64_map_get(&k->flows, fwd_link_key(id), &ref))
        return 0;
    return (uint32_t)ref;
}

static sp_status add_eval(sp_ctx *ctx, struct kineto_state *k, const cJSON *ev, const char *name,
                          int64_t start, int64_t end) {
    if (k->n_evals == k->cap_evals) {
        size_t cap = k->cap_evals ? 2 * k->cap_evals : 256;
        struct eval_op *g = sp_realloc(k->evals, cap * sizeof *g);
        if (!g)
            return sp_oom(ctx, "reading a trace");
        k->evals = g;
        k->cap_evals = cap;
    }
    struct eval_op *e = &k->evals[k->n_evals];
    const char *inner = name + strlen(EVALUATE_FUNCTION);
    sp_status st = thread_of(ctx, k, ev, &e->tid);
    if (st == SP_OK)
        st = sp_trace_intern(ctx, k->t, name, strlen(name), &e->name);
    if (st == SP_OK)
        st = sp_trace_intern(ctx, k->t, inner, strlen(inner), &e->inner);
    e->start = start;
    e->end = end;
    k->n_evals += st == SP_OK;
    return st;
}

static int cmp_eval(const void *a, const void *b) {
    const struct eval_op *x = a, *y = b;
    if (x->tid != y->tid)
        return x->tid < y->tid ? -1 : 1;
    return (x->start > y->start) - (x->start < y->start);
}

/* Give each linked op's evaluate_function op the same link: the innermost one named after the
 * op that encloses it (they nest when a backward runs inside a backward) */
static sp_status link_evals(sp_ctx *ctx, struct kineto_state *k) {
    struct sp_trace *t = k->t;
    if (k->n_evals > 1)
        qsort(k->evals, k->n_evals, sizeof *k->evals, cmp_eval);
    size_t n_ranges = t->n_ranges;
    sp_status st = SP_OK;
    for (size_t i = k->first_linked; i < n_ranges && st == SP_OK; i++) {
        struct sp_trace_range r = t->ranges[i];
        if (!r.link)
            continue;
        size_t lo = 0, hi = k->n_evals; /* the first eval after (tid, start) */
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            const struct eval_op *e = &k->evals[mid];
            if (e->tid < r.tid || (e->tid == r.tid && e->start <= r.start_ns))
                lo = mid + 1;
            else
                hi = mid;
        }
        for (size_t j = lo, walked = 0; j-- > 0 && walked < 16; walked++) {
            const struct eval_op *e = &k->evals[j];
            if (e->tid != r.tid)
                break;
            if (e->end >= r.end_ns && e->inner == r.name) {
                struct sp_trace_range er = {e->start, e->end, r.tid, e->name, 0, false, r.link};
                st = sp_trace_add_range(ctx, t, &er);
                break;
            }
        }
    }
    k->n_evals = 0;
    return st;
}

/* a flow event (ac2g, fwdbwd): into the flow maps and links */
static sp_status read_flow(sp_ctx *ctx, struct kineto_state *k, const cJSON *ev) {
    struct sp_trace *t = k->t;
    sp_status st = SP_OK;
    const cJSON *ph = cJSON_GetObjectItemCaseSensitive(ev, "ph");
    const cJSON *cat = cJSON_GetObjectItemCaseSensitive(ev, "cat");
    double ts = 0, id = 0;
    if (!cJSON_IsString(ph) || !cJSON_IsString(cat) || !get_number(ev, "ts", &ts) ||
        !get_number(ev, "id", &id) || id < 0 || id >= 1.8e19)
        return SP_OK;
    char p = ph->valuestring[0];
    if (strcmp(cat->valuestring, "ac2g") == 0) {
        int kind = p == 's' ? 's' : p == 'f' ? 'f' : 0;
        if (kind &&
            !sp_u64_map_insert(&k->flows, flow_key(kind, ev, us_to_ns(ts)), (uint64_t)id, NULL))
            st = sp_oom(ctx, "reading a trace");
    } else if (strcmp(cat->valuestring, "fwdbwd") == 0 && p == 'f') {
        if (!sp_u64_map_insert(&k->flows, flow_key('b', ev, us_to_ns(ts)), (uint64_t)id, NULL))
            st = sp_oom(ctx, "reading a trace");
    } else if (strcmp(cat->valuestring, "fwdbwd") == 0 && p == 's') {
        struct sp_trace_link l = {us_to_ns(ts), 0};
        uint32_t ref = 0;
        st = thread_of(ctx, k, ev, &l.fwd_tid);
        if (st == SP_OK)
            st = sp_trace_add_link(ctx, t, &l, &ref);
        if (st == SP_OK && !sp_u64_map_insert(&k->flows, fwd_link_key((uint64_t)id), ref, NULL))
            st = sp_oom(ctx, "reading a trace");
    }
    return st;
}

static sp_status add_cpu_op(sp_ctx *ctx, struct kineto_state *k, const cJSON *ev, const char *name,
                            int64_t start, int64_t end) {
    if (k->n_ops == k->cap_ops) {
        size_t cap = k->cap_ops ? 2 * k->cap_ops : 1024;
        struct sp_cpu_op *g = sp_realloc(k->ops, cap * sizeof *g);
        if (!g)
            return sp_oom(ctx, "reading a trace");
        k->ops = g;
        k->cap_ops = cap;
    }
    struct sp_cpu_op *o = &k->ops[k->n_ops];
    *o = (struct sp_cpu_op){start, end, 0, 0};
    sp_status st = thread_of(ctx, k, ev, &o->tid);
    if (st == SP_OK)
        st = sp_trace_intern(ctx, k->t, name, strlen(name), &o->name);
    k->n_ops += st == SP_OK;
    return st;
}

/* any other event */
static sp_status read_event(sp_ctx *ctx, struct kineto_state *k, const cJSON *ev, size_t *n_ranges,
                            size_t *n_gpu, size_t *n_legacy) {
    struct sp_trace *t = k->t;
    sp_status st = SP_OK;
    const cJSON *ph = cJSON_GetObjectItemCaseSensitive(ev, "ph");
    const cJSON *cat = cJSON_GetObjectItemCaseSensitive(ev, "cat");
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(ev, "name");
    double ts = 0, dur = 0;
    if (!cJSON_IsString(ph) || strcmp(ph->valuestring, "X") != 0 || !cJSON_IsString(cat) ||
        !cJSON_IsString(name))
        return SP_OK;
    const char *c = cat->valuestring;
    if (!get_number(ev, "ts", &ts) || !get_number(ev, "dur", &dur) || dur < 0) {
        /* GPU work without a time is left out, and counted: the profile says how much */
        t->malformed_activities += strcmp(c, "kernel") == 0 || strcmp(c, "gpu_memcpy") == 0 ||
                                   strcmp(c, "gpu_memset") == 0;
        return SP_OK;
    }
    /* the 2021 format's categories, since renamed: counted, to name the format */
    *n_legacy += strcmp(c, "Kernel") == 0 || strcmp(c, "Runtime") == 0 ||
                 strcmp(c, "Memcpy") == 0 || strcmp(c, "Memset") == 0;
    const cJSON *args = cJSON_GetObjectItemCaseSensitive(ev, "args");
    if (!cJSON_IsObject(args))
        args = NULL;
    int64_t start = us_to_ns(ts), end = us_to_ns(ts + dur);
    bool annotation = strcmp(c, "user_annotation") == 0 || strcmp(c, "python_function") == 0;
    bool cpu_op = strcmp(c, "cpu_op") == 0;
    uint32_t link = cpu_op ? backward_link_of(k, ev, start) : 0;
    /* cpu_ops are the work only of a file with no GPU event: kept until its first one */
    if (cpu_op && *n_gpu == 0 && (st = add_cpu_op(ctx, k, ev, name->valuestring, start, end)))
        return st;
    if (cpu_op && !link &&
        strncmp(name->valuestring, EVALUATE_FUNCTION, strlen(EVALUATE_FUNCTION)) == 0) {
        return add_eval(ctx, k, ev, name->valuestring, start, end);
    }
    if (annotation || link) {
        struct sp_trace_range r = {start, end, 0, 0, 0, false, link};
        st = thread_of(ctx, k, ev, &r.tid);
        if (st == SP_OK)
            st = sp_trace_intern(ctx, t, name->valuestring, strlen(name->valuestring), &r.name);
        if (st == SP_OK)
            st = sp_trace_add_range(ctx, t, &r);
        *n_ranges += annotation;
    } else if (strcmp(c, "cuda_runtime") == 0 || strcmp(c, "cuda_driver") == 0) {
        struct sp_trace_launch l = {start, file_corr(k, correlation_of(k, ev, args, 's', start)),
                                    0};
        if (l.corr == UINT64_MAX)
            return SP_OK; /* a call that made no GPU work (cudaGetDevice, ...) */
        st = thread_of(ctx, k, ev, &l.tid);
        if (st == SP_OK)
            st = sp_trace_add_launch(ctx, t, &l);
    } else if (strcmp(c, "kernel") == 0 || strcmp(c, "gpu_memcpy") == 0 ||
               strcmp(c, "gpu_memset") == 0) {
        double device = 0, stream = 0, bytes = 0;
        if (args) {
            get_number(args, "device", &device);
            get_number(args, "stream", &stream);
            get_number(args, "bytes", &bytes);
        }
        struct sp_trace_activity a = {
            start, end, file_corr(k, correlation_of(k, ev, args, 'f', start)),
            bytes > 0 && bytes < 9e18 ? (uint64_t)bytes : 0,
            /* each rank's device ordinals are its own */
            sp_trace_process_device(k->file, device >= 0 && device < 65536 ? (uint32_t)device : 0),
            stream >= 0 && stream < 4e9 ? (uint32_t)stream : 0, 0,
            c[0] == 'k'                    ? SP_ACTIVITY_KERNEL
            : strcmp(c, "gpu_memcpy") == 0 ? SP_ACTIVITY_MEMCPY
                                           : SP_ACTIVITY_MEMSET};
        st = sp_trace_intern(ctx, t, name->valuestring, strlen(name->valuestring), &a.name);
        if (st == SP_OK)
            st = sp_trace_add_activity(ctx, t, &a);
        k->n_ops = 0; /* a GPU run: its cpu_ops are not its work */
        ++*n_gpu;
    }
    return st;
}

static void read_devices_and_versions(sp_ctx *ctx, struct sp_trace *t, const cJSON *root) {
    const cJSON *props = cJSON_GetObjectItemCaseSensitive(root, "deviceProperties");
    const cJSON *d;
    cJSON_ArrayForEach(d, props) {
        double id = -1;
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(d, "name");
        if (get_number(d, "id", &id) && id >= 0 && id < 4096 && cJSON_IsString(name))
            sp_trace_set_device(ctx, t, (uint32_t)id, name->valuestring);
    }
    static const char *const keys[] = {"schemaVersion", "cupti_version", "cuda_runtime_version",
                                       "cuda_driver_version", "torch_version"};
    char buf[512] = "";
    size_t len = 0;
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, keys[i]);
        int w = 0;
        if (cJSON_IsNumber(v))
            w = snprintf(buf + len, sizeof buf - len, "%s%s %g", len ? ", " : "", keys[i],
                         v->valuedouble);
        else if (cJSON_IsString(v))
            w = snprintf(buf + len, sizeof buf - len, "%s%s %.64s", len ? ", " : "", keys[i],
                         v->valuestring);
        if (w > 0 && (size_t)w < sizeof buf - len)
            len += (size_t)w;
    }
    t->versions = sp_strdup(buf);
}

/* The file a piece at a time (core/json_split.c): a trace of millions of events never becomes
 * one cJSON tree. The root's members other than traceEvents are parsed whole (small); the
 * events twice: the flows first, so events before their flow in the file find it, then the
 * rest, each event parsed on its own and freed. */
struct file_pass {
    sp_ctx *ctx;
    struct kineto_state *k;
    const char *name, *doc;
    size_t doc_len;
    cJSON *root; /* the members other than traceEvents */
    const char *events;
    size_t events_len;
    uint8_t *flow_bits; /* per event: a flow, read in the first pass */
    size_t cap_bits, index;
    size_t n_ranges, n_gpu, n_legacy;
};

static sp_status top_member(void *arg, const char *key, size_t key_len, const char *value,
                            size_t value_len) {
    struct file_pass *f = arg;
    if (key_len == 11 && memcmp(key, "traceEvents", 11) == 0 && !f->events) {
        f->events = value;
        f->events_len = value_len;
        return SP_OK;
    }
    cJSON *v = NULL; /* parsed, so a malformed member is refused as a whole-file parse would */
    sp_status st = sp_json_parse_piece(f->ctx, f->name, f->doc, f->doc_len, value, value_len, &v);
    if (st != SP_OK)
        return st;
    char k[64];
    if (key_len >= sizeof k || memchr(key, '\\', key_len)) {
        cJSON_Delete(v); /* not a member the importer reads */
        return SP_OK;
    }
    memcpy(k, key, key_len);
    k[key_len] = '\0';
    if (cJSON_GetObjectItemCaseSensitive(f->root, k) || !cJSON_AddItemToObject(f->root, k, v)) {
        cJSON_Delete(v); /* a repeated key: the first one counts, as cJSON reads it */
        return cJSON_GetObjectItemCaseSensitive(f->root, k) ? SP_OK
                                                            : sp_oom(f->ctx, "reading a trace");
    }
    return SP_OK;
}

static bool piece_has(const char *s, size_t len, const char *word) {
    size_t w = strlen(word);
    for (const char *p = s, *end = s + len; (size_t)(end - p) >= w;) {
        const char *q = memchr(p, word[0], (size_t)(end - p) - w + 1);
        if (!q)
            return false;
        if (memcmp(q, word, w) == 0)
            return true;
        p = q + 1;
    }
    return false;
}

static sp_status flow_element(void *arg, const char *value, size_t len) {
    struct file_pass *f = arg;
    size_t i = f->index++;
    if (i / 8 >= f->cap_bits) {
        size_t cap = f->cap_bits ? 2 * f->cap_bits : 4096;
        uint8_t *g = sp_realloc(f->flow_bits, cap);
        if (!g)
            return sp_oom(f->ctx, "reading a trace");
        memset(g + f->cap_bits, 0, cap - f->cap_bits);
        f->flow_bits = g;
        f->cap_bits = cap;
    }
    if (!piece_has(value, len, "ac2g") && !piece_has(value, len, "fwdbwd"))
        return SP_OK;
    cJSON *ev = NULL;
    sp_status st = sp_json_parse_piece(f->ctx, f->name, f->doc, f->doc_len, value, len, &ev);
    const cJSON *cat = st == SP_OK ? cJSON_GetObjectItemCaseSensitive(ev, "cat") : NULL;
    if (cJSON_IsString(cat) &&
        (strcmp(cat->valuestring, "ac2g") == 0 || strcmp(cat->valuestring, "fwdbwd") == 0)) {
        f->flow_bits[i / 8] |= (uint8_t)(1u << (i % 8));
        st = read_flow(f->ctx, f->k, ev);
    }
    cJSON_Delete(ev);
    return st;
}

static sp_status other_element(void *arg, const char *value, size_t len) {
    struct file_pass *f = arg;
    size_t i = f->index++;
    if (f->flow_bits[i / 8] & (1u << (i % 8)))
        return SP_OK;
    cJSON *ev = NULL;
    sp_status st = sp_json_parse_piece(f->ctx, f->name, f->doc, f->doc_len, value, len, &ev);
    if (st == SP_OK)
        st = read_event(f->ctx, f->k, ev, &f->n_ranges, &f->n_gpu, &f->n_legacy);
    cJSON_Delete(ev);
    return st;
}

/* one file's events into the trace k->t */
static sp_status parse_into(sp_ctx *ctx, struct kineto_state *k, const char *name, const char *data,
                            size_t len) {
    struct file_pass f = {ctx, k, name, data, len, cJSON_CreateObject(), NULL, 0, NULL,
                          0,   0, 0,    0,    0};
    if (!f.root)
        return sp_oom(ctx, "reading a trace");
    const char *nul = memchr(data, '\0', len); /* refused anywhere, as a whole-file parse does */
    if (nul) {
        cJSON_Delete(f.root);
        return sp_json_fail_at(ctx, name, data, len, nul, true);
    }
    sp_status st = sp_json_split_object(ctx, name, data, len, top_member, &f);
    if (st == SP_OK && (!f.events || f.events[0] != '['))
        st = sp_fail(ctx, SP_ERR_SCHEMA,
                     "%s: traceEvents: expected an array of trace events (a PyTorch profiler "
                     "trace, from torch.profiler's export_chrome_trace or "
                     "tensorboard_trace_handler)",
                     name);
    sp_u64_map_release(&k->flows); /* flow ids are the file's own */
    k->first_linked = k->t->n_ranges;
    if (st == SP_OK)
        st = sp_json_split_array(ctx, name, data, len, f.events, f.events_len, flow_element, &f);
    f.index = 0;
    if (st == SP_OK && f.flow_bits == NULL && !(f.flow_bits = sp_calloc(1, 1)))
        st = sp_oom(ctx, "reading a trace");
    if (st == SP_OK)
        st = sp_json_split_array(ctx, name, data, len, f.events, f.events_len, other_element, &f);
    sp_free(f.flow_bits);
    if (st == SP_OK)
        st = link_evals(ctx, k);
    if (st == SP_OK && !k->t->versions) { /* devices and versions: the first file's */
        read_devices_and_versions(ctx, k->t, f.root);
        if (!k->t->versions)
            st = sp_oom(ctx, "reading a trace");
    }
    cJSON_Delete(f.root);
    if (st == SP_OK)
        st = sp_kineto_check_content(ctx, name, f.n_gpu, f.n_legacy, k->n_ops, f.n_ranges);
    if (st == SP_OK && f.n_gpu == 0) { /* a CPU run: its operators' own time */
        st = sp_trace_add_cpu_op_work(ctx, k->t, k->ops, k->n_ops, k->file);
        k->t->cpu_time = true;
    }
    k->n_ops = 0;
    return st;
}

static sp_status new_trace(sp_ctx *ctx, const char *name, struct sp_trace **out) {
    struct sp_trace *t = sp_calloc(1, sizeof *t);
    *out = t;
    if (!t)
        return sp_oom(ctx, "reading a trace");
    sp_status st = sp_trace_init(ctx, t);
    if (st != SP_OK)
        return st;
    t->collector = sp_strdup("kineto trace");
    t->file = sp_strdup(name);
    return t->collector && t->file ? SP_OK : sp_oom(ctx, "reading a trace");
}

static sp_status finish(struct kineto_state *k, sp_status st, sp_trace **out) {
    sp_free(k->evals);
    sp_free(k->ops);
    sp_u64_map_release(&k->threads);
    sp_u64_map_release(&k->flows);
    if (st != SP_OK) {
        sp_trace_destroy(k->t);
        return st;
    }
    sp_trace_rebase(k->t, INT64_MAX);
    *out = k->t;
    return SP_OK;
}

sp_status sp_trace_parse_kineto(sp_ctx *ctx, const char *name, const char *data, size_t len,
                                sp_trace **out) {
    if (!ctx)
        return SP_ERR_INVALID_ARG;
    sp_ctx_begin(ctx);
    if (!data || !out)
        return sp_fail(ctx, SP_ERR_INVALID_ARG, "sp_trace_parse_kineto: NULL argument");
    *out = NULL;
    name = name ? name : "<trace>";
    struct kineto_state k = {0};
    sp_status st = new_trace(ctx, name, &k.t);
    if (st == SP_OK)
        st = parse_into(ctx, &k, name, data, len);
    return finish(&k, st, out);
}

sp_status sp_trace_load_kineto_files(sp_ctx *ctx, const char *const *paths, size_t n,
                                     sp_trace **out) {
    if (!ctx)
        return SP_ERR_INVALID_ARG;
    sp_ctx_begin(ctx);
    if (!paths || !out || n == 0)
        return sp_fail(ctx, SP_ERR_INVALID_ARG, "sp_trace_load_kineto: no trace given");
    *out = NULL;
    if (n > SP_TRACE_MAX_PROCESSES)
        return sp_fail(ctx, SP_ERR_LIMIT, "%zu traces: at most %d at once", n,
                       SP_TRACE_MAX_PROCESSES);
    struct kineto_state k = {0};
    char(*sha)[65] = sp_calloc(n, sizeof *sha); /* each file's, so that none is read twice */
    sp_status st = sha ? new_trace(ctx, paths[0], &k.t) : sp_oom(ctx, "reading a trace");
    for (size_t i = 0; st == SP_OK && i < n; i++) {
        char *data = NULL;
        size_t len = 0;
        k.file = (uint32_t)i;
        st = sp_trace_read_distinct(ctx, paths, n, i, sha, &data, &len);
        if (st == SP_OK)
            st = parse_into(ctx, &k, paths[i], data, len);
        sp_free(data);
    }
    sp_free(sha);
    if (st == SP_OK && n > 1 && !(k.t->process_files = sp_calloc(n, sizeof(char *))))
        st = sp_oom(ctx, "reading a trace");
    for (size_t i = 0; st == SP_OK && n > 1 && i < n; i++)
        if (!(k.t->process_files[k.t->n_process_files++] = sp_strdup(paths[i])))
            st = sp_oom(ctx, "reading a trace");
    return finish(&k, st, out);
}

sp_status sp_trace_load_kineto(sp_ctx *ctx, const char *path, sp_trace **out) {
    if (!ctx)
        return SP_ERR_INVALID_ARG;
    if (!path)
        return sp_fail(ctx, SP_ERR_INVALID_ARG, "sp_trace_load_kineto: NULL argument");
    return sp_trace_load_kineto_files(ctx, &path, 1, out);
}

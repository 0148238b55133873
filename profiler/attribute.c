/* profiler/attribute.c: the attribution engine (profiler/attribute.h). */
#include <math.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attribute.h"
#include "u64_map.h"

/* What each range is, from its name. */
struct range_class {
    int32_t layer; /* layer id, or -1 */
    uint8_t phase; /* for layer ranges: fwd, bwd or recompute */
    bool step, optimizer;
};

struct patterns {
    regex_t layer, phase, step;
    bool have_layer, have_phase, have_step;
};

static void patterns_free(struct patterns *p) {
    if (p->have_layer)
        regfree(&p->layer);
    if (p->have_phase)
        regfree(&p->phase);
    if (p->have_step)
        regfree(&p->step);
}

static sp_status compile(sp_ctx *ctx, regex_t *re, bool *have, const char *what,
                         const char *pattern) {
    int rc = regcomp(re, pattern, REG_EXTENDED);
    if (rc != 0) {
        char msg[128];
        regerror(rc, re, msg, sizeof msg);
        return sp_fail(ctx, SP_ERR_INVALID_ARG, "%s '%s': %s", what, pattern, msg);
    }
    *have = true;
    return SP_OK;
}

static int phase_of_word(const char *w, size_t len) {
    static const struct {
        const char *word;
        int phase;
    } words[] = {{"fwd", SP_PHASE_FWD},
                 {"forward", SP_PHASE_FWD},
                 {"bwd", SP_PHASE_BWD},
                 {"backward", SP_PHASE_BWD},
                 {"recompute", SP_PHASE_RECOMPUTE},
                 {"optimizer", SP_PHASE_OPTIMIZER},
                 {"opt", SP_PHASE_OPTIMIZER}};
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
        if (strlen(words[i].word) == len && strncmp(words[i].word, w, len) == 0)
            return words[i].phase;
    return -1;
}

/* the phase a name states (group 1 of the phase pattern, else its whole match), or -1 */
static int name_phase(const struct patterns *p, const char *name) {
    regmatch_t m[2];
    if (regexec(&p->phase, name, 2, m, 0) != 0)
        return -1;
    int g = m[1].rm_so >= 0 ? 1 : 0;
    return phase_of_word(name + m[g].rm_so, (size_t)(m[g].rm_eo - m[g].rm_so));
}

static sp_status classify(sp_ctx *ctx, const struct sp_trace *t, const struct patterns *p,
                          struct sp_attribution *out, struct range_class *cls) {
    /* names repeat (every step), so classify each distinct name once */
    struct range_class *by_name = sp_mallocarray(t->n_strings ? t->n_strings : 1, sizeof *by_name);
    uint8_t *seen = sp_calloc(t->n_strings ? t->n_strings : 1, 1);
    sp_status st = by_name && seen ? SP_OK : sp_oom(ctx, "attributing kernels");
    for (size_t i = 0; st == SP_OK && i < t->n_ranges; i++) {
        uint32_t nm = t->ranges[i].name;
        if (!seen[nm]) {
            const char *name = t->strings[nm];
            struct range_class c = {-1, SP_PHASE_FWD, false, false};
            regmatch_t m[2];
            c.step = regexec(&p->step, name, 0, NULL, 0) == 0;
            int ph = name_phase(p, name);
            if (!c.step && regexec(&p->layer, name, 2, m, 0) == 0) {
                int g = m[1].rm_so >= 0 ? 1 : 0;
                uint32_t id = 0;
                st = sp_trace_intern(ctx, &out->names, name + m[g].rm_so,
                                     (size_t)(m[g].rm_eo - m[g].rm_so), &id);
                c.layer = (int32_t)id;
                /* unmarked layer ranges count as forward */
                c.phase =
                    ph == SP_PHASE_BWD || ph == SP_PHASE_RECOMPUTE ? (uint8_t)ph : SP_PHASE_FWD;
            } else {
                c.optimizer = ph == SP_PHASE_OPTIMIZER;
            }
            by_name[nm] = c;
            seen[nm] = 1;
        }
        cls[i] = by_name[nm];
    }
    sp_free(by_name);
    sp_free(seen);
    return st;
}

/* ---- the per-thread sweep: each launch's innermost enclosing range */

struct open_range {
    int64_t end;
    int32_t layer; /* nearest enclosing layer id, or -1 */
    uint8_t phase; /* that layer range's phase, recompute when a forward sits in a backward */
    bool in_bwd, optimizer;
    size_t range; /* the nearest layer range (for payloads), when layer >= 0 */
};

struct launch_result {
    int32_t layer;
    uint8_t cls; /* enum sp_phase */
};

/* sort keys carry what they are sorted by (qsort has no context argument) */
struct time_key {
    uint32_t tid;
    int64_t start, end;
    size_t idx;
};

static int cmp_time_key(const void *a, const void *b) {
    const struct time_key *x = a, *y = b;
    if (x->tid != y->tid)
        return x->tid < y->tid ? -1 : 1;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    if (x->end != y->end) /* the enclosing one first */
        return x->end > y->end ? -1 : 1;
    return (x->idx > y->idx) - (x->idx < y->idx);
}

static sp_status sweep(sp_ctx *ctx, const struct sp_trace *t, const struct range_class *cls,
                       struct launch_result *res, uint64_t *payload_max, uint8_t *has_payload) {
    struct time_key *rk = sp_mallocarray(t->n_ranges ? t->n_ranges : 1, sizeof *rk);
    struct time_key *lk = sp_mallocarray(t->n_launches ? t->n_launches : 1, sizeof *lk);
    struct open_range *stack = sp_mallocarray(t->n_ranges + 1, sizeof *stack);
    if (!rk || !lk || !stack) {
        sp_free(rk);
        sp_free(lk);
        sp_free(stack);
        return sp_oom(ctx, "attributing kernels");
    }
    for (size_t i = 0; i < t->n_ranges; i++)
        rk[i] = (struct time_key){t->ranges[i].tid, t->ranges[i].start_ns, t->ranges[i].end_ns, i};
    for (size_t i = 0; i < t->n_launches; i++)
        lk[i] = (struct time_key){t->launches[i].tid, t->launches[i].time_ns, 0, i};
    qsort(rk, t->n_ranges, sizeof *rk, cmp_time_key);
    /* launches by thread (a counting pass), then by time within each thread where they are
     * not in order already */
    size_t *per = sp_calloc((size_t)t->n_threads + 2, sizeof *per);
    struct time_key *tmp = sp_mallocarray(t->n_launches ? t->n_launches : 1, sizeof *tmp);
    if (!per || !tmp) {
        sp_free(per);
        sp_free(tmp);
        sp_free(rk);
        sp_free(lk);
        sp_free(stack);
        return sp_oom(ctx, "attributing kernels");
    }
    for (size_t i = 0; i < t->n_launches; i++)
        per[lk[i].tid + 1]++;
    for (uint32_t th = 0; th < t->n_threads; th++)
        per[th + 1] += per[th];
    for (size_t i = 0; i < t->n_launches; i++)
        tmp[per[lk[i].tid]++] = lk[i];
    sp_free(per);
    sp_free(lk);
    lk = tmp;
    for (size_t i = 0; i < t->n_launches;) {
        size_t k = i + 1;
        bool sorted = true;
        for (; k < t->n_launches && lk[k].tid == lk[i].tid; k++)
            sorted &= cmp_time_key(&lk[k - 1], &lk[k]) <= 0;
        if (!sorted)
            qsort(lk + i, k - i, sizeof *lk, cmp_time_key);
        i = k;
    }
    size_t ri = 0, depth = 0;
    uint32_t tid = UINT32_MAX;
    for (size_t li = 0; li < t->n_launches; li++) {
        const struct sp_trace_launch *L = &t->launches[lk[li].idx];
        if (L->tid != tid) { /* a new thread: skip earlier threads' ranges, empty the stack */
            tid = L->tid;
            depth = 0;
            while (ri < t->n_ranges && rk[ri].tid < tid)
                ri++;
        }
        /* open every range of this thread that starts by the launch */
        while (ri < t->n_ranges && rk[ri].tid == tid && rk[ri].start <= L->time_ns) {
            size_t i = rk[ri++].idx;
            const struct sp_trace_range *R = &t->ranges[i];
            while (depth && stack[depth - 1].end <= R->start_ns)
                depth--; /* closed before this one opened */
            struct open_range e = {R->end_ns, -1, SP_PHASE_FWD, false, false, 0};
            if (depth)
                e = stack[depth - 1], e.end = R->end_ns;
            const struct range_class *c = &cls[i];
            if (c->layer >= 0) {
                e.layer = c->layer;
                e.phase = c->phase == SP_PHASE_FWD && e.in_bwd ? SP_PHASE_RECOMPUTE : c->phase;
                e.in_bwd |= c->phase == SP_PHASE_BWD;
                e.range = i;
                if (R->has_payload && e.phase == SP_PHASE_FWD) {
                    has_payload[c->layer] = 1;
                    if (R->payload > payload_max[c->layer])
                        payload_max[c->layer] = R->payload;
                }
            }
            e.optimizer |= c->optimizer;
            stack[depth++] = e;
        }
        while (depth && stack[depth - 1].end < L->time_ns)
            depth--;
        struct launch_result *out = &res[lk[li].idx];
        if (!depth) {
            *out = (struct launch_result){-1, SP_PHASE_UNATTRIBUTED};
        } else {
            const struct open_range *e = &stack[depth - 1];
            if (e->layer >= 0)
                *out = (struct launch_result){e->layer, e->phase};
            else
                *out =
                    (struct launch_result){-1, e->optimizer ? SP_PHASE_OPTIMIZER : SP_PHASE_OTHER};
        }
    }
    /* payloads of layer ranges no launch reached (a layer without GPU work) */
    for (size_t i = 0; i < t->n_ranges; i++) {
        const struct range_class *c = &cls[i];
        if (c->layer >= 0 && c->phase == SP_PHASE_FWD && t->ranges[i].has_payload) {
            has_payload[c->layer] = 1;
            if (t->ranges[i].payload > payload_max[c->layer])
                payload_max[c->layer] = t->ranges[i].payload;
        }
    }
    sp_free(rk);
    sp_free(lk);
    sp_free(stack);
    return SP_OK;
}

/* ---- correlation ids to launches: a direct table when the ids are dense (CUPTI and Kineto
 * number them consecutively), else the id map */

struct corr_map {
    size_t *direct; /* per id - base, SIZE_MAX when none; NULL: the hashed map */
    size_t cap;
    uint64_t base;
    struct sp_u64_map hashed;
};

/* the launch with correlation id k, or SIZE_MAX */
static size_t corr_find(const struct corr_map *m, uint64_t k) {
    if (k == UINT64_MAX)
        return SIZE_MAX;
    if (m->direct)
        return k >= m->base && k - m->base < m->cap ? m->direct[k - m->base] : SIZE_MAX;
    uint64_t v = 0;
    return sp_u64_map_get(&m->hashed, k, &v) ? (size_t)v : SIZE_MAX;
}

/* a repeated id keeps the last launch */
static bool corr_map_init(struct corr_map *m, const struct sp_trace *t) {
    uint64_t lo = UINT64_MAX, hi = 0;
    for (size_t i = 0; i < t->n_launches; i++)
        if (t->launches[i].corr != UINT64_MAX) {
            lo = t->launches[i].corr < lo ? t->launches[i].corr : lo;
            hi = t->launches[i].corr > hi ? t->launches[i].corr : hi;
        }
    if (lo <= hi && hi - lo < 4 * (uint64_t)t->n_launches + 1024) { /* dense: direct */
        m->base = lo;
        m->cap = (size_t)(hi - lo) + 1;
        m->direct = sp_mallocarray(m->cap, sizeof *m->direct);
        if (!m->direct)
            return false;
        for (size_t i = 0; i < m->cap; i++)
            m->direct[i] = SIZE_MAX;
        for (size_t i = 0; i < t->n_launches; i++)
            if (t->launches[i].corr != UINT64_MAX)
                m->direct[t->launches[i].corr - lo] = i;
        return true;
    }
    for (size_t i = 0; i < t->n_launches; i++)
        if (t->launches[i].corr != UINT64_MAX &&
            !sp_u64_map_set(&m->hashed, t->launches[i].corr, i))
            return false;
    return true;
}

static void corr_map_release(struct corr_map *m) {
    sp_free(m->direct);
    sp_u64_map_release(&m->hashed);
}

/* ---- aggregation */

struct item { /* one activity attributed to (used step, layer, phase) */
    uint64_t group, bytes;
    uint32_t device;
    uint8_t kind, nccl;
    int64_t start, end;
};

static int cmp_item(const void *a, const void *b) {
    const struct item *x = a, *y = b;
    if (x->group != y->group)
        return x->group < y->group ? -1 : 1;
    if (x->device != y->device)
        return x->device < y->device ? -1 : 1;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    return (x->end > y->end) - (x->end < y->end);
}

struct acc { /* one (step, layer, phase) */
    int64_t busy, kernel, nccl, copy, first, last;
    uint64_t kernels, copies, bytes;
};

static bool is_nccl(const char *name) {
    return strncmp(name, "ncclDevKernel", 13) == 0 || strncmp(name, "ncclKernel", 10) == 0 ||
           strncmp(name, "void ncclKernel", 15) == 0 ||
           strncmp(name, "void ncclDevKernel", 18) == 0;
}

static int64_t step_of(const int64_t *starts, const int64_t *ends, size_t n, int64_t time) {
    size_t lo = 0, hi = n; /* the last step starting at or before time */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (starts[mid] <= time)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0 || ends[lo - 1] < time)
        return -1;
    return (int64_t)lo - 1;
}

static sp_status aggregate(sp_ctx *ctx, const struct sp_trace *t, const struct range_class *cls,
                           const struct launch_result *res, const uint64_t *payload_max,
                           const uint8_t *has_payload, const uint32_t *order,
                           const struct sp_attrib_opts *o, struct sp_attribution *out) {
    size_t L = out->names.n_strings;
    /* steps, by start */
    size_t n_steps = 0;
    for (size_t i = 0; i < t->n_ranges; i++)
        n_steps += cls[i].step;
    int64_t *starts = sp_mallocarray(n_steps + 1, sizeof *starts);
    int64_t *ends = sp_mallocarray(n_steps + 1, sizeof *ends);
    struct time_key *steps = sp_mallocarray(n_steps + 1, sizeof *steps);
    struct corr_map map = {0};
    struct item *items = sp_mallocarray(t->n_activities + 1, sizeof *items);
    sp_status st = starts && ends && steps && items && corr_map_init(&map, t)
                       ? SP_OK
                       : sp_oom(ctx, "attributing kernels");
    struct acc *acc = NULL;
    double *samples = NULL;
    if (st != SP_OK)
        goto done;
    n_steps = 0;
    for (size_t i = 0; i < t->n_ranges; i++)
        if (cls[i].step)
            steps[n_steps++] = (struct time_key){0, t->ranges[i].start_ns, t->ranges[i].end_ns, i};
    qsort(steps, n_steps, sizeof *steps, cmp_time_key); /* by start, on any thread */
    for (size_t i = 0; i < n_steps; i++) {
        starts[i] = steps[i].start;
        ends[i] = steps[i].end;
    }
    out->steps_total = (uint32_t)n_steps;
    uint32_t first_used = n_steps ? o->warmup_steps : 0;
    uint32_t used = n_steps ? (n_steps > first_used ? (uint32_t)n_steps - first_used : 0) : 1;
    out->steps_used = used;
    if (!used) {
        st = sp_fail(ctx, SP_ERR_SCHEMA,
                     "%s: %zu steps, all of them warm-up (--warmup-steps %u): no step left to "
                     "measure",
                     t->file, n_steps, o->warmup_steps);
        goto done;
    }
    /* each activity's group (used step, layer, phase), then the items bucketed by group in one
     * counting pass: a trace is mostly in time order already, so each bucket usually needs no
     * sorting at all (10 million kernels would spend seconds in a comparison sort) */
    size_t n_acc = (size_t)used * L * SP_LAYER_PHASES;
    uint64_t *grp = sp_mallocarray(t->n_activities + 1, sizeof *grp);
    size_t *offset = sp_calloc(n_acc + 2, sizeof *offset);
    if (!grp || !offset) {
        sp_free(grp);
        sp_free(offset);
        st = sp_oom(ctx, "attributing kernels");
        goto done;
    }
    for (size_t i = 0; i < t->n_activities; i++) {
        const struct sp_trace_activity *a = &t->activities[i];
        double ms = (double)(a->end_ns - a->start_ns) / 1e6;
        out->gpu_ms += ms;
        out->activities++;
        grp[i] = UINT64_MAX;
        size_t li = corr_find(&map, a->corr);
        if (li == SIZE_MAX) {
            out->unmatched++;
            out->class_ms[SP_PHASE_UNATTRIBUTED] += ms;
            continue;
        }
        const struct launch_result *r = &res[li];
        out->class_ms[r->cls] += ms;
        if (r->layer < 0)
            continue;
        int64_t step = n_steps ? step_of(starts, ends, n_steps, t->launches[li].time_ns) : 0;
        if (step < (int64_t)first_used) {
            out->outside_steps_ms += ms;
            continue;
        }
        uint64_t slot = (uint64_t)(step - first_used);
        grp[i] = (slot * L + (uint64_t)r->layer) * SP_LAYER_PHASES + r->cls;
        offset[grp[i] + 1]++;
    }
    for (size_t g = 0; g < n_acc; g++)
        offset[g + 1] += offset[g];
    size_t n_items = offset[n_acc];
    for (size_t i = 0; i < t->n_activities; i++) {
        if (grp[i] == UINT64_MAX)
            continue;
        const struct sp_trace_activity *a = &t->activities[i];
        items[offset[grp[i]]++] =
            (struct item){grp[i],
                          a->bytes,
                          a->device,
                          a->kind,
                          a->kind == SP_ACTIVITY_KERNEL && is_nccl(t->strings[a->name]),
                          a->start_ns,
                          a->end_ns};
    }
    sp_free(grp);
    sp_free(offset);
    for (size_t i = 0; i < n_items;) { /* each bucket by (device, start), if not already */
        size_t k = i + 1;
        bool sorted = true;
        for (; k < n_items && items[k].group == items[i].group; k++)
            sorted &= cmp_item(&items[k - 1], &items[k]) <= 0;
        if (!sorted)
            qsort(items + i, k - i, sizeof *items, cmp_item);
        i = k;
    }
    acc = sp_calloc(n_acc ? n_acc : 1, sizeof *acc);
    samples = sp_mallocarray(used, sizeof *samples);
    out->layers = sp_calloc(L ? L : 1, sizeof *out->layers);
    if (!acc || !samples || !out->layers) {
        st = sp_oom(ctx, "attributing kernels");
        goto done;
    }
    for (size_t i = 0; i < n_items;) { /* one group and device at a time: merge its intervals */
        struct acc *g = &acc[items[i].group];
        if (!g->kernels && !g->copies && !g->nccl) {
            g->first = INT64_MAX;
            g->last = INT64_MIN;
        }
        int64_t cur_s = 0, cur_e = INT64_MIN;
        size_t k = i;
        for (;
             k < n_items && items[k].group == items[i].group && items[k].device == items[i].device;
             k++) {
            const struct item *it = &items[k];
            int64_t d = it->end - it->start;
            g->first = it->start < g->first ? it->start : g->first;
            g->last = it->end > g->last ? it->end : g->last;
            if (it->kind == SP_ACTIVITY_MEMCPY) {
                g->copy += d;
                g->copies++;
                g->bytes += it->bytes;
                continue;
            }
            if (it->nccl) {
                g->nccl += d;
                continue;
            }
            g->kernel += d;
            g->kernels += it->kind == SP_ACTIVITY_KERNEL;
            if (it->start > cur_e) { /* a gap: close the merged interval */
                if (cur_e > INT64_MIN)
                    g->busy += cur_e - cur_s;
                cur_s = it->start;
                cur_e = it->end;
            } else if (it->end > cur_e) {
                cur_e = it->end;
            }
        }
        if (cur_e > INT64_MIN)
            g->busy += cur_e - cur_s;
        i = k;
    }
    for (size_t li = 0; li < L; li++) {
        uint32_t layer = order[li];
        struct sp_layer_stats *ls = &out->layers[li];
        ls->name = out->names.strings[layer];
        ls->activation_bytes = payload_max[layer];
        ls->has_bytes = has_payload[layer];
        for (int ph = 0; ph < SP_LAYER_PHASES; ph++) {
            struct sp_phase_stats *ps = &ls->phase[ph];
#define MEDIAN_OF(field, scale)                                                                    \
    do {                                                                                           \
        for (uint32_t s = 0; s < used; s++)                                                        \
            samples[s] =                                                                           \
                (double)acc[((size_t)s * L + layer) * SP_LAYER_PHASES + ph].field * scale;         \
    } while (0)
            MEDIAN_OF(busy, 1e-6);
            double mean = 0, var = 0;
            for (uint32_t s = 0; s < used; s++)
                mean += samples[s] / used;
            for (uint32_t s = 0; s < used; s++)
                var += (samples[s] - mean) * (samples[s] - mean) / used;
            ps->stddev_ms = sqrt(var);
            ps->busy_ms = sp_median(samples, used);
            MEDIAN_OF(kernel, 1e-6);
            ps->kernel_ms = sp_median(samples, used);
            MEDIAN_OF(nccl, 1e-6);
            ps->nccl_ms = sp_median(samples, used);
            MEDIAN_OF(copy, 1e-6);
            ps->copy_ms = sp_median(samples, used);
            MEDIAN_OF(kernels, 1.0);
            ps->kernels = (uint64_t)llround(sp_median(samples, used));
            MEDIAN_OF(copies, 1.0);
            ps->copies = (uint64_t)llround(sp_median(samples, used));
            MEDIAN_OF(bytes, 1.0);
            ps->copy_bytes = (uint64_t)llround(sp_median(samples, used));
            for (uint32_t s = 0; s < used; s++) {
                const struct acc *g = &acc[((size_t)s * L + layer) * SP_LAYER_PHASES + ph];
                samples[s] = g->last > g->first ? (double)(g->last - g->first) * 1e-6 : 0;
            }
            ps->span_ms = sp_median(samples, used);
#undef MEDIAN_OF
        }
    }
    out->n_layers = L;
done:
    sp_free(starts);
    sp_free(ends);
    sp_free(steps);
    corr_map_release(&map);
    sp_free(items);
    sp_free(acc);
    sp_free(samples);
    return st;
}

struct layer_key {
    int64_t first;
    uint32_t id;
};

static int cmp_layer_key(const void *a, const void *b) {
    const struct layer_key *x = a, *y = b;
    if (x->first != y->first)
        return x->first < y->first ? -1 : 1;
    return (x->id > y->id) - (x->id < y->id);
}

sp_status sp_attribute(sp_ctx *ctx, const struct sp_trace *t, const struct sp_attrib_opts *opts,
                       struct sp_attribution *out) {
    memset(out, 0, sizeof *out);
    struct patterns p = {0};
    sp_status st = sp_trace_init(ctx, &out->names);
    if (st == SP_OK)
        st = compile(ctx, &p.layer, &p.have_layer, "--layer-pattern",
                     opts->layer_pattern ? opts->layer_pattern : SP_DEFAULT_LAYER_PATTERN);
    if (st == SP_OK)
        st = compile(ctx, &p.phase, &p.have_phase, "--phase-pattern",
                     opts->phase_pattern ? opts->phase_pattern : SP_DEFAULT_PHASE_PATTERN);
    if (st == SP_OK)
        st = compile(ctx, &p.step, &p.have_step, "--step-pattern",
                     opts->step_pattern ? opts->step_pattern : SP_DEFAULT_STEP_PATTERN);
    struct range_class *cls = NULL;
    struct launch_result *res = NULL;
    uint64_t *payload_max = NULL;
    uint8_t *has_payload = NULL;
    uint32_t *order = NULL;
    int64_t *first = NULL;
    if (st == SP_OK) {
        cls = sp_mallocarray(t->n_ranges ? t->n_ranges : 1, sizeof *cls);
        res = sp_mallocarray(t->n_launches ? t->n_launches : 1, sizeof *res);
        if (!cls || !res)
            st = sp_oom(ctx, "attributing kernels");
    }
    if (st == SP_OK)
        st = classify(ctx, t, &p, out, cls);
    size_t L = out->names.n_strings;
    if (st == SP_OK && L == 0) {
        char seen[512] = "";
        size_t len = 0, shown = 0;
        uint32_t shown_names[5];
        for (size_t r = 0; r < t->n_ranges && shown < 5; r++) { /* a few distinct names */
            uint32_t nm = t->ranges[r].name;
            bool dup = false;
            for (size_t j = 0; j < shown; j++)
                dup |= shown_names[j] == nm;
            if (dup)
                continue;
            int w = snprintf(seen + len, sizeof seen - len, "%s\"%.60s\"", shown ? ", " : "",
                             t->strings[nm]);
            if (w < 0 || (size_t)w >= sizeof seen - len)
                break;
            len += (size_t)w;
            shown_names[shown++] = nm;
        }
        st = sp_fail(ctx, SP_ERR_SCHEMA,
                     "%s: no range matches the layer pattern '%s' (%zu ranges%s%s); name ranges "
                     "'<layer>/fwd' and '<layer>/bwd' (docs/profiling.md) or pass --layer-pattern",
                     t->file, opts->layer_pattern ? opts->layer_pattern : SP_DEFAULT_LAYER_PATTERN,
                     t->n_ranges, shown ? ", e.g. " : "", seen);
    }
    if (st == SP_OK) {
        payload_max = sp_calloc(L, sizeof *payload_max);
        has_payload = sp_calloc(L, 1);
        order = sp_mallocarray(L, sizeof *order);
        first = sp_mallocarray(L, sizeof *first);
        if (!payload_max || !has_payload || !order || !first)
            st = sp_oom(ctx, "attributing kernels");
    }
    if (st == SP_OK) { /* chain order: each layer's first forward (else any) range */
        for (size_t l = 0; l < L; l++) {
            order[l] = (uint32_t)l;
            first[l] = INT64_MAX;
        }
        for (int pass = 0; pass < 2; pass++)
            for (size_t i = 0; i < t->n_ranges; i++) {
                int32_t l = cls[i].layer;
                if (l < 0 || (pass == 0 && cls[i].phase != SP_PHASE_FWD) ||
                    (pass == 1 && first[l] != INT64_MAX))
                    continue;
                if (pass == 0 && t->ranges[i].start_ns < first[l])
                    first[l] = t->ranges[i].start_ns;
                if (pass == 1)
                    first[l] = INT64_MAX - 1 - (int64_t)(t->n_ranges - i); /* backward only */
            }
        struct layer_key *keys = sp_mallocarray(L, sizeof *keys);
        if (!keys) {
            st = sp_oom(ctx, "attributing kernels");
        } else {
            for (size_t l = 0; l < L; l++)
                keys[l] = (struct layer_key){first[l], (uint32_t)l};
            qsort(keys, L, sizeof *keys, cmp_layer_key);
            for (size_t l = 0; l < L; l++)
                order[l] = keys[l].id;
            sp_free(keys);
        }
    }
    if (st == SP_OK)
        st = sweep(ctx, t, cls, res, payload_max, has_payload);
    if (st == SP_OK)
        st = aggregate(ctx, t, cls, res, payload_max, has_payload, order, opts, out);
    patterns_free(&p);
    sp_free(cls);
    sp_free(res);
    sp_free(payload_max);
    sp_free(has_payload);
    sp_free(order);
    sp_free(first);
    if (st != SP_OK)
        sp_attribution_release(out);
    return st;
}

void sp_attribution_release(struct sp_attribution *a) {
    sp_free(a->layers);
    sp_trace_release(&a->names);
    memset(a, 0, sizeof *a);
}

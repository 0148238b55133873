/* profiler/attribute_stream.c: launches and activities through the engine's windows into the
 * per-step sums, and the medians at the end (profiler/attribute.h says what each window is). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attribute_impl.h"

static size_t pick(size_t asked, size_t dflt, size_t hint) {
    size_t cap = asked ? asked : dflt;
    return hint && hint < cap ? hint : cap;
}

sp_status sp_attrib_stream_alloc(struct sp_attrib_stream *s, const struct sp_attrib_opts *o,
                                 size_t launches_hint, size_t activities_hint) {
    size_t groups = (size_t)s->used * s->L;
    if (s->L && groups / s->L != s->used)
        groups = SIZE_MAX;
    if (groups > (((size_t)1 << 31) - 1) / SP_LAYER_PHASES)
        return sp_fail(s->ctx, SP_ERR_LIMIT,
                       "%s: %u steps of %zu layers: more step-layer pairs than the engine keeps "
                       "(2^31 / 3)",
                       s->t->file, s->used, s->L);
    s->n_acc = groups * SP_LAYER_PHASES;
    s->launch_cap = pick(o->launch_window, SP_ATTRIB_LAUNCH_WINDOW, launches_hint);
    s->pend_cap = pick(o->pending_window, SP_ATTRIB_PENDING_WINDOW, activities_hint);
    s->reorder = pick(o->reorder_window, SP_ATTRIB_REORDER_WINDOW, activities_hint);
    s->item_cap = 2 * s->reorder + 1;
    s->acc = sp_mallocarray(s->n_acc ? s->n_acc : 1, sizeof *s->acc);
    s->merge = sp_calloc(s->n_acc ? s->n_acc : 1, sizeof *s->merge);
    s->launch_ring = sp_mallocarray(s->launch_cap, sizeof *s->launch_ring);
    s->pend = sp_mallocarray(s->pend_cap, sizeof *s->pend);
    s->items = sp_mallocarray(s->item_cap, sizeof *s->items);
    if (!s->acc || !s->merge || !s->launch_ring || !s->pend || !s->items ||
        !sp_u64_map_reserve(&s->launch_map, s->launch_cap))
        return sp_oom(s->ctx, "attributing kernels");
    for (size_t g = 0; g < s->n_acc; g++)
        s->acc[g] = (struct acc){.first = INT64_MAX, .last = INT64_MIN};
    return SP_OK;
}

/* ---- launches */

static uint64_t launch_code(const struct sp_attrib_stream *s, const struct sp_trace_launch *l) {
    struct launch_result r = sp_attrib_lookup(s, l->tid, l->time_ns);
    if (r.layer < 0) /* where it was launched: the range's name */
        return CODE_OF(r.cls, r.range);
    int64_t step = 0;
    if (s->n_steps) { /* the last step of its process starting by the launch, if still open */
        uint32_t proc = sp_trace_process_of(s->t, l->tid);
        size_t first = proc < s->n_proc ? s->proc_step[proc] : 0;
        size_t lo = first, hi = proc < s->n_proc ? s->proc_step[proc + 1] : 0;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (s->step_start[mid] <= l->time_ns)
                lo = mid + 1;
            else
                hi = mid;
        }
        step = lo == first || s->step_end[lo - 1] < l->time_ns ? -1 : (int64_t)(lo - 1 - first);
    }
    if (step < (int64_t)s->first_used || (s->n_steps && step >= (int64_t)s->n_steps))
        return CODE_OF(r.cls, 0) | CODE_OUTSIDE;
    uint64_t slot = (uint64_t)(step - s->first_used);
    return CODE_OF(r.cls, (slot * s->L + (uint64_t)r.layer) * SP_LAYER_PHASES + r.cls + 1);
}

static sp_status attribute_one(struct sp_attrib_stream *s, const struct sp_trace_activity *a,
                               uint64_t code);

sp_status sp_attrib_launch(struct sp_attrib_stream *s, const struct sp_trace_launch *l) {
    if (l->corr == UINT64_MAX)
        return SP_OK; /* no correlation: nothing can name it */
    uint64_t code = launch_code(s, l), i = s->launches_in++, v = 0;
    struct launch_slot *slot = &s->launch_ring[i % s->launch_cap];
    if (i >= s->launch_cap && sp_u64_map_get(&s->launch_map, slot->corr, &v) &&
        v == i - s->launch_cap)
        sp_u64_map_remove(&s->launch_map, slot->corr); /* out of the window */
    *slot = (struct launch_slot){l->corr, code};
    if (!sp_u64_map_set(&s->launch_map, l->corr, i))
        return sp_oom(s->ctx, "attributing kernels");
    /* activities that came first */
    uint64_t seq = 0;
    if (!sp_u64_map_get(&s->pend_map, l->corr, &seq))
        return SP_OK;
    sp_u64_map_remove(&s->pend_map, l->corr);
    sp_status st = SP_OK;
    while (st == SP_OK && seq != UINT64_MAX) {
        struct pending_slot *p = &s->pend[seq % s->pend_cap];
        if (p->seq != seq)
            break; /* resolved, or pushed out of the window */
        p->seq = UINT64_MAX;
        seq = p->prev;
        st = attribute_one(s, &p->a, code);
    }
    return st;
}

/* ---- activities */

static void count(struct sp_attrib_stream *s, const struct sp_trace_activity *a, uint8_t cls) {
    s->out.class_ms[cls] += (double)(a->end_ns - a->start_ns) / 1e6;
}

/* work in no layer, summed by (name, range) */
static sp_status note_outside(struct sp_attrib_stream *s, const struct sp_trace_activity *a,
                              uint8_t cls, uint32_t range) {
    uint64_t key = (uint64_t)a->name << 32 | range, idx = s->n_outside, v = 0;
    if (!sp_u64_map_insert(&s->outside_map, key, idx, &v))
        return sp_oom(s->ctx, "attributing kernels");
    if (v == idx) {
        if (s->n_outside == s->cap_outside) {
            size_t cap = s->cap_outside ? 2 * s->cap_outside : 64;
            struct sp_outside_work *g = sp_realloc(s->outside, cap * sizeof *g);
            if (!g) {
                sp_u64_map_remove(&s->outside_map, key);
                return sp_oom(s->ctx, "attributing kernels");
            }
            s->outside = g;
            s->cap_outside = cap;
        }
        s->outside[s->n_outside++] = (struct sp_outside_work){a->name, range, cls, 0, 0};
    }
    s->outside[v].count++;
    s->outside[v].ms += (double)(a->end_ns - a->start_ns) / 1e6;
    return SP_OK;
}

static sp_status unmatched(struct sp_attrib_stream *s, const struct sp_trace_activity *a) {
    s->out.unmatched++;
    count(s, a, SP_PHASE_UNATTRIBUTED);
    return note_outside(s, a, SP_PHASE_UNATTRIBUTED, UINT32_MAX);
}

static struct merge *merge_of(struct sp_attrib_stream *s, uint64_t group, uint32_t device) {
    struct merge *m = &s->merge[group];
    if (!m->claimed || m->device == device) {
        m->claimed = true;
        m->device = device;
        m->group = group;
        return m;
    }
    uint64_t key = group << 32 | device, idx = s->n_extra, v = 0;
    if (!sp_u64_map_insert(&s->extra_map, key, idx, &v))
        return NULL;
    if (v == idx) {
        if (s->n_extra == s->cap_extra) {
            size_t cap = s->cap_extra ? 2 * s->cap_extra : 16;
            struct merge *e = sp_realloc(s->extra, cap * sizeof *e);
            if (!e) {
                sp_u64_map_remove(&s->extra_map, key);
                return NULL;
            }
            s->extra = e;
            s->cap_extra = cap;
        }
        s->extra[s->n_extra++] = (struct merge){0, 0, group, device, false, true};
    }
    return &s->extra[v];
}

/* one activity, in start order within its group and device, into the group's sums */
static sp_status fold(struct sp_attrib_stream *s, const struct item *it) {
    struct acc *g = &s->acc[it->group];
    int64_t d = it->end - it->start;
    g->first = it->start < g->first ? it->start : g->first;
    g->last = it->end > g->last ? it->end : g->last;
    if (it->kind == SP_ACTIVITY_MEMCPY) {
        g->copy += d;
        g->copies++;
        g->bytes += it->bytes;
        return SP_OK;
    }
    if (it->nccl) {
        g->nccl += d;
        return SP_OK;
    }
    g->kernel += d;
    g->kernels += it->kind == SP_ACTIVITY_KERNEL;
    struct merge *m = merge_of(s, it->group, it->device);
    if (!m)
        return sp_oom(s->ctx, "attributing kernels");
    if (!m->open) {
        *m = (struct merge){it->start, it->end, it->group, it->device, true, true};
    } else if (it->start < m->start) { /* later than the reorder window: merge what is known */
        s->out.late++;
        s->out.late_ms += (double)d / 1e6;
        if (it->end >= m->start) {
            m->start = it->start;
            m->end = it->end > m->end ? it->end : m->end;
        } else {
            g->busy += d; /* an earlier merged interval it may overlap is closed already */
        }
    } else if (it->start > m->end) { /* a gap: close the merged interval */
        g->busy += m->end - m->start;
        m->start = it->start;
        m->end = it->end;
    } else if (it->end > m->end) {
        m->end = it->end;
    }
    return SP_OK;
}

/* into the reorder window, by start (equal starts keep their order); the earliest leaves when
 * the window is full */
static sp_status reorder_push(struct sp_attrib_stream *s, const struct item *it) {
    if (s->tail == s->item_cap) { /* move the window down */
        memmove(s->items, s->items + s->head, (s->tail - s->head) * sizeof *s->items);
        s->tail -= s->head;
        s->head = 0;
    }
    size_t pos = s->tail;
    for (int steps = 0; pos > s->head && s->items[pos - 1].start > it->start; pos--)
        if (++steps == 32) { /* far from the end: find its place by halves */
            size_t lo = s->head, hi = pos - 1;
            while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (s->items[mid].start <= it->start)
                    lo = mid + 1;
                else
                    hi = mid;
            }
            pos = lo;
            break;
        }
    memmove(s->items + pos + 1, s->items + pos, (s->tail - pos) * sizeof *s->items);
    s->items[pos] = *it;
    s->tail++;
    return s->tail - s->head > s->reorder ? fold(s, &s->items[s->head++]) : SP_OK;
}

static sp_status attribute_one(struct sp_attrib_stream *s, const struct sp_trace_activity *a,
                               uint64_t code) {
    count(s, a, CODE_CLASS(code));
    if (CODE_CLASS(code) == SP_PHASE_OTHER || CODE_CLASS(code) == SP_PHASE_UNATTRIBUTED)
        return note_outside(s, a, CODE_CLASS(code), (uint32_t)CODE_GROUP(code));
    if (CODE_CLASS(code) == SP_PHASE_OPTIMIZER)
        return SP_OK;
    if (!CODE_GROUP(code)) {
        if (code & CODE_OUTSIDE)
            s->out.outside_steps_ms += (double)(a->end_ns - a->start_ns) / 1e6;
        return SP_OK;
    }
    struct item it = {a->start_ns,
                      a->end_ns,
                      CODE_GROUP(code) - 1,
                      a->bytes,
                      a->device,
                      a->kind,
                      (uint8_t)(a->kind == SP_ACTIVITY_KERNEL && a->name < s->t->n_strings &&
                                s->nccl_name[a->name])};
    return reorder_push(s, &it);
}

/* an activity whose launch has not come (yet): kept until it does, or the window is full */
static sp_status pend(struct sp_attrib_stream *s, const struct sp_trace_activity *a) {
    uint64_t seq = s->pend_in++, newest = UINT64_MAX;
    struct pending_slot *p = &s->pend[seq % s->pend_cap];
    if (seq >= s->pend_cap && p->seq == seq - s->pend_cap) { /* the oldest falls out */
        uint64_t v = 0;
        if (sp_u64_map_get(&s->pend_map, p->a.corr, &v) && v == p->seq)
            sp_u64_map_remove(&s->pend_map, p->a.corr);
        sp_status st = unmatched(s, &p->a);
        if (st != SP_OK)
            return st;
    }
    sp_u64_map_get(&s->pend_map, a->corr, &newest); /* the map only names live ones */
    *p = (struct pending_slot){*a, seq, newest};
    return sp_u64_map_set(&s->pend_map, a->corr, seq) ? SP_OK
                                                      : sp_oom(s->ctx, "attributing kernels");
}

sp_status sp_attrib_activity(struct sp_attrib_stream *s, const struct sp_trace_activity *a) {
    s->out.gpu_ms += (double)(a->end_ns - a->start_ns) / 1e6;
    s->out.activities++;
    uint64_t i = 0;
    if (a->corr != UINT64_MAX && sp_u64_map_get(&s->launch_map, a->corr, &i))
        return attribute_one(s, a, s->launch_ring[i % s->launch_cap].code);
    if (a->corr == UINT64_MAX)
        return unmatched(s, a);
    return pend(s, a);
}

/* ---- the end: the window drained, pending activities unmatched, medians per layer */

enum acc_field { F_BUSY, F_KERNEL, F_NCCL, F_COPY, F_KERNELS, F_COPIES, F_BYTES };

static double field_of(const struct acc *g, enum acc_field f) {
    switch (f) {
    case F_BUSY:
        return (double)g->busy * 1e-6;
    case F_KERNEL:
        return (double)g->kernel * 1e-6;
    case F_NCCL:
        return (double)g->nccl * 1e-6;
    case F_COPY:
        return (double)g->copy * 1e-6;
    case F_KERNELS:
        return (double)g->kernels;
    case F_COPIES:
        return (double)g->copies;
    case F_BYTES:
        return (double)g->bytes;
    }
    return 0;
}

/* the median over the steps used of one sum of a layer's phase; samples keep the values */
static double median_of(const struct sp_attrib_stream *s, double *samples, size_t layer, int ph,
                        enum acc_field f) {
    for (uint32_t k = 0; k < s->used; k++)
        samples[k] = field_of(&s->acc[((size_t)k * s->L + layer) * SP_LAYER_PHASES + ph], f);
    return sp_median(samples, s->used);
}

static void phase_stats(const struct sp_attrib_stream *s, double *samples, size_t layer, int ph,
                        struct sp_phase_stats *ps) {
    ps->kernel_ms = median_of(s, samples, layer, ph, F_KERNEL);
    ps->nccl_ms = median_of(s, samples, layer, ph, F_NCCL);
    ps->copy_ms = median_of(s, samples, layer, ph, F_COPY);
    ps->kernels = (uint64_t)llround(median_of(s, samples, layer, ph, F_KERNELS));
    ps->copies = (uint64_t)llround(median_of(s, samples, layer, ph, F_COPIES));
    ps->copy_bytes = (uint64_t)llround(median_of(s, samples, layer, ph, F_BYTES));
    ps->busy_ms = median_of(s, samples, layer, ph, F_BUSY);
    double mean = 0, var = 0;
    for (uint32_t k = 0; k < s->used; k++)
        samples[k] = (double)s->acc[((size_t)k * s->L + layer) * SP_LAYER_PHASES + ph].busy * 1e-6;
    for (uint32_t k = 0; k < s->used; k++)
        mean += samples[k] / s->used;
    for (uint32_t k = 0; k < s->used; k++)
        var += (samples[k] - mean) * (samples[k] - mean) / s->used;
    ps->stddev_ms = sqrt(var);
    for (uint32_t k = 0; k < s->used; k++) {
        const struct acc *g = &s->acc[((size_t)k * s->L + layer) * SP_LAYER_PHASES + ph];
        samples[k] = g->last > g->first ? (double)(g->last - g->first) * 1e-6 : 0;
    }
    ps->span_ms = sp_median(samples, s->used);
}

static void close_merge(struct sp_attrib_stream *s, struct merge *m) {
    if (m->open)
        s->acc[m->group].busy += m->end - m->start;
    m->open = false;
}

static int cmp_outside(const void *a, const void *b) {
    const struct sp_outside_work *x = a, *y = b;
    if (x->ms != y->ms)
        return x->ms > y->ms ? -1 : 1;
    if (x->name != y->name)
        return x->name < y->name ? -1 : 1;
    return (x->range > y->range) - (x->range < y->range);
}

sp_status sp_attrib_end(struct sp_attrib_stream *s, struct sp_attribution *out) {
    memset(out, 0, sizeof *out);
    sp_status st = SP_OK;
    while (st == SP_OK && s->head < s->tail)
        st = fold(s, &s->items[s->head++]);
    for (uint64_t seq = s->pend_in > s->pend_cap ? s->pend_in - s->pend_cap : 0;
         st == SP_OK && seq < s->pend_in; seq++)
        if (s->pend[seq % s->pend_cap].seq == seq)
            st = unmatched(s, &s->pend[seq % s->pend_cap].a);
    for (size_t g = 0; st == SP_OK && g < s->n_acc; g++)
        close_merge(s, &s->merge[g]);
    for (size_t e = 0; st == SP_OK && e < s->n_extra; e++)
        close_merge(s, &s->extra[e]);
    double *samples = NULL;
    if (st == SP_OK) {
        samples = sp_mallocarray(s->used, sizeof *samples);
        s->out.layers = sp_calloc(s->L ? s->L : 1, sizeof *s->out.layers);
        if (!samples || !s->out.layers)
            st = sp_oom(s->ctx, "attributing kernels");
    }
    for (size_t li = 0; st == SP_OK && li < s->L; li++) {
        uint32_t layer = s->order[li];
        struct sp_layer_stats *ls = &s->out.layers[li];
        ls->name = s->out.names.strings[layer];
        ls->activation_bytes = s->payload_max[layer];
        ls->has_bytes = s->has_payload[layer];
        for (int ph = 0; ph < SP_LAYER_PHASES; ph++)
            phase_stats(s, samples, layer, ph, &ls->phase[ph]);
    }
    sp_free(samples);
    if (st == SP_OK) { /* work in no layer, largest first */
        if (s->n_outside > 1)
            qsort(s->outside, s->n_outside, sizeof *s->outside, cmp_outside);
        s->out.outside = s->outside;
        s->out.n_outside = s->n_outside;
        s->outside = NULL;
        s->n_outside = 0;
    }
    if (st == SP_OK) {
        s->out.n_layers = s->L;
        *out = s->out;
        memset(&s->out, 0, sizeof s->out); /* handed over */
    }
    sp_attrib_abort(s);
    return st;
}

void sp_attrib_abort(struct sp_attrib_stream *s) {
    if (!s)
        return;
    sp_attribution_release(&s->out);
    sp_free(s->step_start);
    sp_free(s->step_end);
    sp_free(s->proc_step);
    sp_free(s->order);
    sp_free(s->payload_max);
    sp_free(s->has_payload);
    sp_free(s->nccl_name);
    sp_free(s->seg_time);
    sp_free(s->seg_res);
    sp_free(s->thread_seg);
    sp_free(s->launch_ring);
    sp_u64_map_release(&s->launch_map);
    sp_free(s->pend);
    sp_u64_map_release(&s->pend_map);
    sp_free(s->items);
    sp_free(s->acc);
    sp_free(s->merge);
    sp_free(s->extra);
    sp_u64_map_release(&s->extra_map);
    sp_free(s->outside);
    sp_u64_map_release(&s->outside_map);
    sp_free(s);
}

void sp_attribution_release(struct sp_attribution *a) {
    sp_free(a->layers);
    sp_free(a->outside);
    sp_trace_release(&a->names);
    memset(a, 0, sizeof *a);
}

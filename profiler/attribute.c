/* profiler/attribute.c: the attribution engine's setup (profiler/attribute.h): what the ranges
 * say. Layers and phases from the names, the chain order, the payloads, the step table, and per
 * thread a timeline of innermost ranges that a launch is looked up in by binary search, so
 * launches may come in any order. attribute_stream.c does the rest; attribute_held.c feeds it a
 * trace that holds its records. */
#include <math.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attribute_impl.h"

/* What each range is, from its name. */
struct range_class {
    int32_t layer; /* layer id, or -1 */
    uint8_t phase; /* for layer ranges: fwd, bwd or recompute */
    bool step, optimizer;
    bool backward_op; /* an autograd op linked to its forward op: a forward range inside it is
                       * recomputation, whether or not its forward ran in a layer */
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
    char *ere = NULL; /* Python's \d \w \s as POSIX classes (core/regex_ere.c) */
    sp_status st = sp_ere_translate(ctx, what, pattern, &ere);
    if (st != SP_OK)
        return st;
    int rc = regcomp(re, ere, REG_EXTENDED);
    sp_free(ere);
    if (rc != 0) {
        char msg[128];
        regerror(rc, re, msg, sizeof msg);
        regfree(re);
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

/* PyTorch's optimizer annotations (record_function "Optimizer.step#SGD.step" and
 * "Optimizer.zero_grad#SGD.zero_grad", written by torch.optim itself) */
static bool is_torch_optimizer(const char *name) {
    return strncmp(name, "Optimizer.step#", 15) == 0 ||
           strncmp(name, "Optimizer.zero_grad#", 20) == 0;
}

static sp_status classify(sp_ctx *ctx, const struct sp_trace *t, const struct patterns *p,
                          const uint8_t *layer_names, const uint32_t *layer_into,
                          struct sp_attribution *out, struct range_class *cls) {
    /* names repeat (every step), so classify each distinct name once */
    struct range_class *by_name = sp_mallocarray(t->n_strings ? t->n_strings : 1, sizeof *by_name);
    uint8_t *seen = sp_calloc(t->n_strings ? t->n_strings : 1, 1);
    sp_status st = by_name && seen ? SP_OK : sp_oom(ctx, "attributing kernels");
    for (size_t i = 0; st == SP_OK && i < t->n_ranges; i++) {
        uint32_t nm = t->ranges[i].name;
        if (!seen[nm]) {
            const char *name = t->strings[nm];
            struct range_class c = {-1, SP_PHASE_FWD, false, false, false};
            regmatch_t m[2];
            c.step = regexec(&p->step, name, 0, NULL, 0) == 0;
            int ph = name_phase(p, name);
            if (!c.step && layer_names) { /* chosen by name (modules.c): forward ranges */
                if (layer_names[nm]) {
                    if (layer_into) /* a module folded into a neighbour is named as it */
                        name = t->strings[layer_into[nm]];
                    size_t skip = strncmp(name, SP_MODULE_PREFIX, strlen(SP_MODULE_PREFIX)) == 0
                                      ? strlen(SP_MODULE_PREFIX)
                                      : 0;
                    uint32_t id = 0;
                    st = sp_trace_intern(ctx, &out->names, name + skip, strlen(name + skip), &id);
                    c.layer = (int32_t)id;
                } else {
                    c.optimizer = ph == SP_PHASE_OPTIMIZER || is_torch_optimizer(name);
                }
            } else if (!c.step && regexec(&p->layer, name, 2, m, 0) == 0) {
                int g = m[1].rm_so >= 0 ? 1 : 0;
                uint32_t id = 0;
                st = sp_trace_intern(ctx, &out->names, name + m[g].rm_so,
                                     (size_t)(m[g].rm_eo - m[g].rm_so), &id);
                c.layer = (int32_t)id;
                /* unmarked layer ranges count as forward */
                c.phase =
                    ph == SP_PHASE_BWD || ph == SP_PHASE_RECOMPUTE ? (uint8_t)ph : SP_PHASE_FWD;
            } else {
                c.optimizer = ph == SP_PHASE_OPTIMIZER || is_torch_optimizer(name);
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

/* ---- each thread's timeline of innermost ranges */

struct open_range {
    int64_t end;
    uint32_t name; /* the range's own name */
    int32_t layer; /* nearest enclosing layer id, or -1 */
    uint8_t phase; /* that layer range's phase, recompute when a forward sits in a backward */
    bool in_bwd, optimizer;
};

int sp_time_key_cmp(const void *a, const void *b) {
    const struct time_key *x = a, *y = b;
    if (x->tid != y->tid)
        return x->tid < y->tid ? -1 : 1;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    if (x->end != y->end) /* the enclosing one first */
        return x->end > y->end ? -1 : 1;
    return (x->idx > y->idx) - (x->idx < y->idx);
}

static struct launch_result result_of(const struct open_range *stack, size_t depth) {
    if (!depth)
        return (struct launch_result){-1, SP_PHASE_UNATTRIBUTED, 0};
    const struct open_range *e = &stack[depth - 1];
    if (e->layer >= 0)
        return (struct launch_result){e->layer, e->phase, e->name + 1};
    return (struct launch_result){-1, e->optimizer ? SP_PHASE_OPTIMIZER : SP_PHASE_OTHER,
                                  e->name + 1};
}

/* A launch at time T on a thread belongs to the innermost range open there: every range of the
 * thread starting at or before T is opened in (start, longest first) order, a range that ended
 * at or before another's start is closed before that one opens, and at T the ranges ending
 * before T are closed from the top. The sweep writes that answer as segments: a new one where a
 * range opens, and at end + 1 where the top closes. Segment starts never decrease, and of
 * several at one time the last holds. */
static sp_status build_timeline(struct sp_attrib_stream *s, const struct range_class *cls) {
    const struct sp_trace *t = s->t;
    size_t n = t->n_ranges;
    uint32_t threads = 0;
    for (size_t i = 0; i < n; i++)
        threads = t->ranges[i].tid + 1 > threads ? t->ranges[i].tid + 1 : threads;
    struct time_key *rk = sp_mallocarray(n ? n : 1, sizeof *rk);
    struct open_range *stack = sp_mallocarray(n + 1, sizeof *stack);
    s->seg_time = sp_mallocarray(2 * n + 1, sizeof *s->seg_time);
    s->seg_res = sp_mallocarray(2 * n + 1, sizeof *s->seg_res);
    s->thread_seg = sp_calloc((size_t)threads + 1, sizeof *s->thread_seg);
    if (!rk || !stack || !s->seg_time || !s->seg_res || !s->thread_seg) {
        sp_free(rk);
        sp_free(stack);
        return sp_oom(s->ctx, "attributing kernels");
    }
    s->n_seg_threads = threads;
    for (size_t i = 0; i < n; i++)
        rk[i] = (struct time_key){t->ranges[i].tid, t->ranges[i].start_ns, t->ranges[i].end_ns, i};
    qsort(rk, n, sizeof *rk, sp_time_key_cmp);
    size_t n_seg = 0, depth = 0, ri = 0;
    for (uint32_t th = 0; th < threads; th++) {
        s->thread_seg[th] = n_seg;
        depth = 0;
        for (; ri <= n; ri++) {
            bool more = ri < n && rk[ri].tid == th;
            int64_t next = more ? rk[ri].start : INT64_MAX;
            /* close what ends before the next opening, one boundary at a time */
            while (depth && stack[depth - 1].end < next) {
                int64_t at = stack[depth - 1].end + 1;
                while (depth && stack[depth - 1].end < at)
                    depth--;
                s->seg_time[n_seg] = at;
                s->seg_res[n_seg++] = result_of(stack, depth);
            }
            if (!more)
                break;
            const struct sp_trace_range *R = &t->ranges[rk[ri].idx];
            while (depth && stack[depth - 1].end <= R->start_ns)
                depth--; /* ended where this one starts: not its parent */
            struct open_range e = {R->end_ns, R->name, -1, SP_PHASE_FWD, false, false};
            if (depth)
                e = stack[depth - 1], e.end = R->end_ns, e.name = R->name;
            const struct range_class *c = &cls[rk[ri].idx];
            if (c->layer >= 0) {
                e.layer = c->layer;
                e.phase = c->phase == SP_PHASE_FWD && e.in_bwd ? SP_PHASE_RECOMPUTE : c->phase;
                e.in_bwd |= c->phase == SP_PHASE_BWD;
            }
            e.in_bwd |= c->backward_op;
            e.optimizer |= c->optimizer;
            stack[depth++] = e;
            s->seg_time[n_seg] = R->start_ns;
            s->seg_res[n_seg++] = result_of(stack, depth);
        }
    }
    s->thread_seg[threads] = n_seg;
    sp_free(rk);
    sp_free(stack);
    return SP_OK;
}

struct launch_result sp_attrib_lookup(const struct sp_attrib_stream *s, uint32_t tid,
                                      int64_t time_ns) {
    struct launch_result none = {-1, SP_PHASE_UNATTRIBUTED, 0};
    if (tid >= s->n_seg_threads)
        return none;
    size_t lo = s->thread_seg[tid], hi = s->thread_seg[tid + 1], first = lo;
    while (lo < hi) { /* the last segment starting at or before time_ns */
        size_t mid = lo + (hi - lo) / 2;
        if (s->seg_time[mid] <= time_ns)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo == first ? none : s->seg_res[lo - 1];
}

static void free_timeline(struct sp_attrib_stream *s) {
    sp_free(s->seg_time);
    sp_free(s->seg_res);
    sp_free(s->thread_seg);
    s->seg_time = NULL;
    s->seg_res = NULL;
    s->thread_seg = NULL;
    s->n_seg_threads = 0;
}

/* A linked backward op (trace.h, sp_trace_link) is the backward of the layer its forward op ran
 * in: the innermost layer range open on the forward op's thread at its start, read from a
 * timeline of the ranges by name alone. Its own range then says so, so the work launched inside
 * it (innermost first, like any range) goes to that layer's backward. */
static sp_status apply_links(struct sp_attrib_stream *s, struct range_class *cls) {
    const struct sp_trace *t = s->t;
    sp_status st = build_timeline(s, cls);
    for (size_t i = 0; st == SP_OK && i < t->n_ranges; i++) {
        uint32_t ref = t->ranges[i].link;
        if (!ref || ref > t->n_links || cls[i].step || cls[i].layer >= 0)
            continue;
        const struct sp_trace_link *l = &t->links[ref - 1];
        struct launch_result fwd = sp_attrib_lookup(s, l->fwd_tid, l->fwd_ns);
        cls[i].backward_op = true;
        if (fwd.layer >= 0) {
            cls[i].layer = fwd.layer;
            cls[i].phase = SP_PHASE_BWD;
        }
    }
    free_timeline(s);
    return st;
}

/* ranks of one job, or refused (attribute_ranks.c) */
static sp_status check_processes(struct sp_attrib_stream *s, const struct range_class *cls,
                                 bool modules) {
    const struct sp_trace *t = s->t;
    if (!t->thread_process)
        return SP_OK;
    int32_t *fwd = sp_mallocarray(t->n_ranges ? t->n_ranges : 1, sizeof *fwd);
    if (!fwd)
        return sp_oom(s->ctx, "merging the ranks");
    for (size_t i = 0; i < t->n_ranges; i++)
        fwd[i] = cls[i].layer >= 0 && cls[i].phase == SP_PHASE_FWD ? cls[i].layer : -1;
    sp_status st = sp_attrib_check_processes(s->ctx, t, fwd, &s->out.names, modules);
    sp_free(fwd);
    return st;
}

/* ---- steps, chain order, payloads */

/* Steps: each process's step ranges by start (any of its threads), numbered from 0 per process,
 * so rank 1's step k is step k even though it overlaps rank 0's step k and k + 1 in time; with
 * no step ranges, the iterations the optimizer's steps mark (optimizer_steps). A trace whose
 * processes recorded different numbers uses the common first ones. */
static sp_status build_steps(struct sp_attrib_stream *s, const struct range_class *cls,
                             const struct sp_attrib_opts *o) {
    const struct sp_trace *t = s->t;
    size_t n_steps = 0;
    uint32_t n_proc = 1;
    for (size_t i = 0; i < t->n_ranges; i++) {
        if (!cls[i].step)
            continue;
        n_steps++;
    }
    struct time_key *found = NULL; /* no step ranges: iterations from what repeats */
    uint8_t by = SP_STEPS_BY_RANGES;
    sp_status st = n_steps ? SP_OK : sp_attrib_iterations(s->ctx, t, &found, &n_steps, &by);
    if (st != SP_OK)
        return st;
    bool repeats = by != SP_STEPS_BY_RANGES;
    for (size_t i = 0; i < t->n_ranges; i++) /* the processes: every range's */
        if (cls[i].step || repeats) {
            uint32_t proc = sp_trace_process_of(t, t->ranges[i].tid);
            n_proc = proc + 1 > n_proc ? proc + 1 : n_proc;
        }
    if (n_steps > UINT32_MAX)
        return sp_fail(s->ctx, SP_ERR_LIMIT, "%s: more than 2^32 step ranges", t->file);
    struct time_key *steps = sp_mallocarray(n_steps + 1, sizeof *steps);
    s->step_start = sp_mallocarray(n_steps + 1, sizeof *s->step_start);
    s->step_end = sp_mallocarray(n_steps + 1, sizeof *s->step_end);
    s->proc_step = sp_calloc((size_t)n_proc + 1, sizeof *s->proc_step);
    if (!steps || !s->step_start || !s->step_end || !s->proc_step) {
        sp_free(steps);
        sp_free(found);
        return sp_oom(s->ctx, "attributing kernels");
    }
    s->n_proc = n_proc;
    if (repeats)
        memcpy(steps, found, n_steps * sizeof *steps);
    sp_free(found);
    s->out.steps_by = by;
    if (!repeats)
        n_steps = 0;
    for (size_t i = 0; i < t->n_ranges && !repeats; i++)
        if (cls[i].step) /* the key's tid field carries the process */
            steps[n_steps++] = (struct time_key){sp_trace_process_of(t, t->ranges[i].tid),
                                                 t->ranges[i].start_ns, t->ranges[i].end_ns, i};
    qsort(steps, n_steps, sizeof *steps, sp_time_key_cmp);
    for (size_t i = 0; i < n_steps; i++) {
        s->step_start[i] = steps[i].start;
        s->step_end[i] = steps[i].end;
        s->proc_step[steps[i].tid + 1]++;
    }
    sp_free(steps);
    size_t fewest = SIZE_MAX, most = 0;
    for (uint32_t p = 0; p < n_proc; p++) {
        size_t k = s->proc_step[p + 1];
        if (k) {
            fewest = k < fewest ? k : fewest;
            most = k > most ? k : most;
        }
        s->proc_step[p + 1] += s->proc_step[p];
    }
    if (!n_steps)
        fewest = 0;
    if (fewest != most)
        sp_warn(s->ctx,
                "%s: the processes recorded different numbers of steps (%zu to %zu): the first "
                "%zu of each are used",
                t->file, fewest, most, fewest);
    s->n_steps = (uint32_t)fewest;
    if (!s->n_steps && o->warmup_steps)
        return sp_fail(s->ctx, SP_ERR_INVALID_ARG,
                       "%s: no steps to skip: the trace has no step ranges (ProfilerStep#N, "
                       "stagepart/step, --step-pattern) and no repeated optimizer step "
                       "(Optimizer.step#...) or top-level module call to find its iterations "
                       "by, so it is measured as one pass; drop --warmup-steps %u, or record "
                       "with a torch.profiler schedule",
                       t->file, o->warmup_steps);
    s->first_used = s->n_steps ? o->warmup_steps : 0;
    s->used = s->n_steps ? (s->n_steps > s->first_used ? s->n_steps - s->first_used : 0) : 1;
    s->out.steps_total = s->n_steps;
    s->out.steps_used = s->used;
    if (!s->used)
        return sp_fail(s->ctx, SP_ERR_SCHEMA,
                       "%s: %u steps, all of them warm-up (--warmup-steps %u): no step left to "
                       "measure",
                       t->file, s->n_steps, o->warmup_steps);
    return SP_OK;
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

/* chain order: each layer's first forward range (else, after those, its first range); a
 * layer's activation bytes: the largest payload of its forward ranges */
static sp_status build_layers(struct sp_attrib_stream *s, const struct range_class *cls) {
    const struct sp_trace *t = s->t;
    size_t L = s->L;
    s->payload_max = sp_calloc(L, sizeof *s->payload_max);
    s->has_payload = sp_calloc(L, 1);
    s->order = sp_mallocarray(L, sizeof *s->order);
    struct layer_key *keys = sp_mallocarray(L, sizeof *keys);
    if (!s->payload_max || !s->has_payload || !s->order || !keys) {
        sp_free(keys);
        return sp_oom(s->ctx, "attributing kernels");
    }
    for (size_t l = 0; l < L; l++)
        keys[l] = (struct layer_key){INT64_MAX, (uint32_t)l};
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = 0; i < t->n_ranges; i++) {
            int32_t l = cls[i].layer;
            if (l < 0 || (pass == 0 && cls[i].phase != SP_PHASE_FWD) ||
                (pass == 1 && keys[l].first != INT64_MAX))
                continue;
            if (pass == 0 && t->ranges[i].start_ns < keys[l].first)
                keys[l].first = t->ranges[i].start_ns;
            if (pass == 1)
                keys[l].first = INT64_MAX - 1 - (int64_t)(t->n_ranges - i); /* backward only */
        }
    for (size_t i = 0; i < t->n_ranges; i++) {
        int32_t l = cls[i].layer;
        if (l >= 0 && cls[i].phase == SP_PHASE_FWD && t->ranges[i].has_payload) {
            s->has_payload[l] = 1;
            if (t->ranges[i].payload > s->payload_max[l])
                s->payload_max[l] = t->ranges[i].payload;
        }
    }
    qsort(keys, L, sizeof *keys, cmp_layer_key);
    for (size_t l = 0; l < L; l++)
        s->order[l] = keys[l].id;
    sp_free(keys);
    return SP_OK;
}

/* NCCL's kernels, and RCCL's (ROCm keeps NCCL's names; its own start "rccl") */
static bool is_nccl(const char *name) {
    return strncmp(name, "ncclDevKernel", 13) == 0 || strncmp(name, "ncclKernel", 10) == 0 ||
           strncmp(name, "rccl", 4) == 0 || strncmp(name, "void ncclKernel", 15) == 0 ||
           strncmp(name, "void ncclDevKernel", 18) == 0;
}

/* The layer pattern matched nothing: say which range names the trace has (the most frequent
 * ones, to write a pattern from) and what else to do. */
static sp_status no_layer_error(sp_ctx *ctx, const struct sp_trace *t,
                                const struct sp_attrib_opts *opts) {
    size_t *count = sp_calloc(t->n_strings ? t->n_strings : 1, sizeof *count);
    char seen[640] = "";
    size_t len = 0, shown = 0;
    bool modules = false; /* torch.profiler's module ranges (with_stack=True) */
    for (size_t r = 0; r < t->n_ranges; r++) {
        if (count && !t->ranges[r].link) /* autograd ops: no names to write a pattern from */
            count[t->ranges[r].name]++;
        modules = modules || strncmp(t->strings[t->ranges[r].name], SP_MODULE_PREFIX,
                                     strlen(SP_MODULE_PREFIX)) == 0;
    }
    while (count && shown < 5) { /* the five most frequent, each once */
        size_t best = SIZE_MAX;
        for (size_t i = 0; i < t->n_strings; i++)
            if (count[i] && (best == SIZE_MAX || count[i] > count[best]))
                best = i;
        if (best == SIZE_MAX)
            break;
        int w = snprintf(seen + len, sizeof seen - len, "%s\"%.60s\" (%zu)", shown ? ", " : "",
                         t->strings[best], count[best]);
        count[best] = 0;
        if (w < 0 || (size_t)w >= sizeof seen - len)
            break;
        len += (size_t)w;
        shown++;
    }
    sp_free(count);
    return sp_fail(ctx, SP_ERR_SCHEMA,
                   "%s: no range matches the layer pattern '%s' (%zu ranges%s%s); name ranges "
                   "'<layer>/fwd' and '<layer>/bwd' (docs/profiling.md, or the PyTorch helper "
                   "profiler/python/stagepart_torch.py) or pass --layers REGEX%s",
                   t->file, opts->layer_pattern ? opts->layer_pattern : SP_DEFAULT_LAYER_PATTERN,
                   t->n_ranges, shown ? ", most frequent: " : "", seen,
                   modules ? "; this trace has module ranges (with_stack=True): --layers auto "
                             "takes a level of its module tree, --list-modules shows the tree"
                           : "; or record with torch.profiler's with_stack=True, and stagepart "
                             "finds the layers in its module ranges");
}

sp_status sp_attrib_count_layer_ranges(sp_ctx *ctx, const struct sp_trace *t, const char *pattern,
                                       size_t *n) {
    *n = 0;
    regex_t re;
    bool have = false;
    sp_status st =
        compile(ctx, &re, &have, "--layer-pattern", pattern ? pattern : SP_DEFAULT_LAYER_PATTERN);
    uint8_t *seen = st == SP_OK ? sp_calloc(t->n_strings ? t->n_strings : 1, 1) : NULL;
    if (st == SP_OK && !seen)
        st = sp_oom(ctx, "attributing kernels");
    for (size_t i = 0; st == SP_OK && i < t->n_ranges; i++) {
        uint32_t nm = t->ranges[i].name;
        if (!seen[nm]) /* 1: tried, 2: matches */
            seen[nm] = regexec(&re, t->strings[nm], 0, NULL, 0) == 0 ? 2 : 1;
        *n += seen[nm] == 2;
    }
    sp_free(seen);
    if (have)
        regfree(&re);
    return st;
}

sp_status sp_attrib_begin(sp_ctx *ctx, const struct sp_trace *t, const struct sp_attrib_opts *opts,
                          size_t launches_hint, size_t activities_hint,
                          struct sp_attrib_stream **out) {
    *out = NULL;
    struct sp_attrib_stream *s = sp_calloc(1, sizeof *s);
    if (!s)
        return sp_oom(ctx, "attributing kernels");
    s->ctx = ctx;
    s->t = t;
    struct patterns p = {0};
    sp_status st = sp_trace_init(ctx, &s->out.names);
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
    if (st == SP_OK && !(cls = sp_mallocarray(t->n_ranges ? t->n_ranges : 1, sizeof *cls)))
        st = sp_oom(ctx, "attributing kernels");
    if (st == SP_OK)
        st = classify(ctx, t, &p, opts->layer_names, opts->layer_into, &s->out, cls);
    patterns_free(&p);
    if (st == SP_OK && t->n_links)
        st = apply_links(s, cls);
    if (st == SP_OK)
        st = check_processes(s, cls, opts->layer_names != NULL);
    s->L = s->out.names.n_strings;
    if (st == SP_OK && s->L == 0)
        st = no_layer_error(ctx, t, opts);
    if (st == SP_OK)
        st = build_layers(s, cls);
    if (st == SP_OK)
        st = build_steps(s, cls, opts);
    if (st == SP_OK)
        st = build_timeline(s, cls);
    sp_free(cls);
    if (st == SP_OK && !(s->nccl_name = sp_calloc(t->n_strings ? t->n_strings : 1, 1)))
        st = sp_oom(ctx, "attributing kernels");
    for (size_t i = 0; st == SP_OK && i < t->n_strings; i++)
        s->nccl_name[i] = is_nccl(t->strings[i]);
    if (st == SP_OK)
        st = sp_attrib_stream_alloc(s, opts, launches_hint, activities_hint);
    if (st != SP_OK) {
        sp_attrib_abort(s);
        return st;
    }
    *out = s;
    return SP_OK;
}

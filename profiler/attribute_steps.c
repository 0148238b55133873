/* profiler/attribute_steps.c: iterations found from what repeats, in a trace with no step
 * ranges (attribute_impl.h): torch.optim's optimizer steps, else the model's top-level forward
 * calls. */
#include <stdlib.h>
#include <string.h>

#include "attribute_impl.h"

/* keys sorted, the outermost of nested ones kept (a step calling another); the count */
static size_t outermost(struct time_key *keys, size_t n) {
    qsort(keys, n, sizeof *keys, sp_time_key_cmp);
    size_t kept = 0;
    for (size_t i = 0; i < n; i++) {
        if (kept && keys[kept - 1].tid == keys[i].tid && keys[i].end <= keys[kept - 1].end)
            continue;
        keys[kept++] = keys[i];
    }
    return kept;
}

/* the ranges named `name` (or, with prefix, whose name starts with it), one per iteration, into
 * keys (the tid field carrying the process), the outermost of nested ones; with keys NULL only
 * their count, nested ones included (what keys must hold) */
static size_t iteration_ranges(const struct sp_trace *t, struct time_key *keys, uint32_t name,
                               const char *prefix) {
    size_t n = 0;
    for (size_t i = 0; i < t->n_ranges; i++) {
        const struct sp_trace_range *r = &t->ranges[i];
        if (prefix ? strncmp(t->strings[r->name], prefix, strlen(prefix)) != 0 : r->name != name)
            continue;
        if (keys)
            keys[n] = (struct time_key){sp_trace_process_of(t, r->tid), r->start_ns, r->end_ns, i};
        n++;
    }
    return keys && n ? outermost(keys, n) : n;
}

/* torch.optim's own "Optimizer.step#..." ranges, one per iteration: step k of a process runs
 * from the end of its optimizer step k - 1 (the trace's start for k = 0) to the end of
 * optimizer step k, so it holds that iteration's forward, backward and update; work after the
 * last one (an unfinished iteration) is in no step. */
static size_t optimizer_steps(const struct sp_trace *t, struct time_key *steps) {
    size_t kept = iteration_ranges(t, steps, UINT32_MAX, "Optimizer.step#");
    if (!steps)
        return kept;
    for (size_t i = kept; i-- > 0;) { /* each step from the previous update's end */
        bool first = i == 0 || steps[i - 1].tid != steps[i].tid;
        steps[i].start = first ? INT64_MIN / 4 : steps[i - 1].end;
    }
    return kept;
}

/* the model's module: the name of the earliest module range that no module range encloses on
 * its thread (the model, or DDP around it); UINT32_MAX when the trace has none */
static uint32_t top_module(const struct sp_trace *t) {
    size_t n = 0;
    for (size_t i = 0; i < t->n_ranges; i++)
        n +=
            strncmp(t->strings[t->ranges[i].name], SP_MODULE_PREFIX, strlen(SP_MODULE_PREFIX)) == 0;
    struct time_key *keys = n ? sp_mallocarray(n, sizeof *keys) : NULL;
    if (!keys)
        return UINT32_MAX;
    n = 0;
    for (size_t i = 0; i < t->n_ranges; i++) {
        const struct sp_trace_range *r = &t->ranges[i];
        if (strncmp(t->strings[r->name], SP_MODULE_PREFIX, strlen(SP_MODULE_PREFIX)) == 0)
            keys[n++] = (struct time_key){r->tid, r->start_ns, r->end_ns, i};
    }
    size_t kept = outermost(keys, n);
    size_t best = 0;
    for (size_t i = 1; i < kept; i++)
        if (keys[i].start < keys[best].start)
            best = i;
    uint32_t name = t->ranges[keys[best].idx].name;
    sp_free(keys);
    return name;
}

/* the model's top-level forward calls, one per iteration: step k of a process runs from the
 * start of its forward k to the start of forward k + 1 (the end of the trace for the last), so
 * it holds that forward, its backward and its update */
static size_t forward_steps(const struct sp_trace *t, struct time_key *steps) {
    uint32_t top = top_module(t);
    size_t kept = top == UINT32_MAX ? 0 : iteration_ranges(t, steps, top, NULL);
    if (!steps)
        return kept;
    for (size_t i = 0; i < kept; i++) {
        bool last = i + 1 == kept || steps[i + 1].tid != steps[i].tid;
        steps[i].end = last ? INT64_MAX / 4 : steps[i + 1].start;
    }
    return kept;
}

/* one way of finding iterations: its keys allocated and kept when it finds two or more */
static sp_status try_steps(sp_ctx *ctx, const struct sp_trace *t,
                           size_t (*find)(const struct sp_trace *, struct time_key *),
                           struct time_key **steps, size_t *n) {
    size_t raw = find(t, NULL);
    *steps = NULL;
    *n = 0;
    if (raw < 2)
        return SP_OK;
    struct time_key *k = sp_mallocarray(raw, sizeof *k);
    if (!k)
        return sp_oom(ctx, "finding the iterations");
    size_t kept = find(t, k);
    if (kept < 2) {
        sp_free(k);
        return SP_OK;
    }
    *steps = k;
    *n = kept;
    return SP_OK;
}

sp_status sp_attrib_iterations(sp_ctx *ctx, const struct sp_trace *t, struct time_key **steps,
                               size_t *n, uint8_t *by) {
    *by = SP_STEPS_BY_RANGES;
    sp_status st = try_steps(ctx, t, optimizer_steps, steps, n);
    if (st == SP_OK && *n) {
        *by = SP_STEPS_BY_OPTIMIZER;
        return SP_OK;
    }
    st = st == SP_OK ? try_steps(ctx, t, forward_steps, steps, n) : st;
    if (st == SP_OK && *n)
        *by = SP_STEPS_BY_FORWARD;
    return st;
}

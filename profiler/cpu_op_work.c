/* profiler/cpu_op_work.c: the work of a run with no GPU, from its CPU operators.
 *
 * A torch.profiler trace of a CPU run holds cpu_op events and module ranges but no kernel: the
 * time is the operators' own. Each op's own time is its span less its child ops' spans (on the
 * same thread, ops nest as calls do); it is handed to the attribution engine as work of its own,
 * one activity per stretch of it (before the first child, between children, after the last),
 * so the stretches are disjoint and sum exactly to the op's own time. Each stretch is launched
 * at its middle, a time inside the op and outside every child op: the innermost range there is
 * the op's own module range, or the backward op's link to its forward's layer, exactly as a
 * GPU kernel launched by that op would be attributed. Each thread is a device of its own
 * ("CPU"), so the busy time of two threads working at once is not merged into one. */
#include <stdlib.h>

#include "trace.h"

static int cmp_op(const void *a, const void *b) {
    const struct sp_cpu_op *x = a, *y = b;
    if (x->tid != y->tid)
        return x->tid < y->tid ? -1 : 1;
    if (x->start_ns != y->start_ns)
        return x->start_ns < y->start_ns ? -1 : 1;
    return (x->end_ns < y->end_ns) - (x->end_ns > y->end_ns); /* the enclosing op first */
}

struct open_op {
    int64_t cursor, end; /* own time before cursor is handed over */
    uint32_t name;
};

struct emitter {
    sp_ctx *ctx;
    struct sp_trace *t;
    uint32_t process, tid;
    uint64_t next_corr;
};

/* [from, to) of an op's own time as one activity */
static sp_status emit(struct emitter *e, int64_t from, int64_t to, uint32_t name) {
    if (to <= from)
        return SP_OK;
    uint64_t corr = sp_trace_process_corr(e->process, e->next_corr++);
    uint32_t device = sp_trace_process_device(e->process, e->tid & 0xffffu);
    struct sp_trace_launch l = {from + (to - from) / 2, corr, e->tid};
    struct sp_trace_activity a = {from, to, corr, 0, device, e->tid, name, SP_ACTIVITY_KERNEL};
    sp_status st = sp_trace_add_launch(e->ctx, e->t, &l);
    return st == SP_OK ? sp_trace_add_activity(e->ctx, e->t, &a) : st;
}

/* close the innermost open op: the rest of its own time, then its parent resumes after it */
static sp_status close_top(struct emitter *e, struct open_op *stack, size_t *depth) {
    struct open_op *top = &stack[--*depth];
    sp_status st = emit(e, top->cursor, top->end, top->name);
    if (*depth)
        stack[*depth - 1].cursor = top->end;
    return st;
}

sp_status sp_trace_add_cpu_op_work(sp_ctx *ctx, struct sp_trace *t, struct sp_cpu_op *ops, size_t n,
                                   uint32_t process) {
    if (n == 0)
        return SP_OK;
    qsort(ops, n, sizeof *ops, cmp_op);
    struct open_op *stack = sp_mallocarray(n, sizeof *stack);
    if (!stack)
        return sp_oom(ctx, "attributing CPU operators");
    struct emitter e = {ctx, t, process, 0, 0};
    size_t depth = 0;
    sp_status st = SP_OK;
    uint32_t named = UINT32_MAX;
    for (size_t i = 0; i < n && st == SP_OK; i++) {
        const struct sp_cpu_op *o = &ops[i];
        if (o->tid != e.tid || i == 0) {
            while (depth && st == SP_OK)
                st = close_top(&e, stack, &depth);
            e.tid = o->tid;
        }
        while (depth && stack[depth - 1].end <= o->start_ns && st == SP_OK)
            st = close_top(&e, stack, &depth);
        if (st != SP_OK)
            break;
        int64_t end = o->end_ns;
        if (depth) { /* the parent's own time up to here; a child never outlasts its parent */
            struct open_op *top = &stack[depth - 1];
            st = emit(&e, top->cursor, o->start_ns, top->name);
            top->cursor = o->start_ns;
            end = end < top->end ? end : top->end;
        }
        stack[depth++] = (struct open_op){o->start_ns, end, o->name};
        uint32_t device = sp_trace_process_device(process, o->tid & 0xffffu);
        if (st == SP_OK && device != named) { /* a thread's device, named once */
            named = device;
            if (device >= t->n_devices || !t->devices[device])
                st = sp_trace_set_device(ctx, t, device, "CPU");
        }
    }
    while (depth && st == SP_OK)
        st = close_top(&e, stack, &depth);
    sp_free(stack);
    return st;
}

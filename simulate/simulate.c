/* simulate/simulate.c: the event-exact pipeline simulator (docs/schedules.md §7).
 *
 * Each device runs its op list strictly in order. An op starts at the later of its device
 * becoming free and each predecessor's end, plus the boundary's send delay when the
 * predecessor ran on another device:
 *     F(j,k) <- F(j,k-1)      B(j,k) <- B(j,k+1), B(j,K-1) <- F(j,K-1)      W(j,k) <- B(j,k)
 * A work stack of devices is re-examined only when an op they wait for finishes, so every op
 * and edge is touched O(1) times. State is indexed by (kind, micro-batch, stage) in flat arrays.
 * If no device can advance while ops remain, the order deadlocks and the first blocked op of
 * each device is reported. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "plan_impl.h"
#include "sim_impl.h"

#define NOT_DONE (-1.0)

struct sim_state {
    const struct sp_pipeline *pl;
    uint32_t K;
    double *end_f, *end_b, *end_w; /* [M * K], NOT_DONE until run; end_b: the input gradient
                                    * (end of I, or of a full B) */
    uint32_t *base;                /* replicated stages: [P + 1] their first devices; else NULL */
};

static double *end_of(struct sim_state *s, char kind, uint32_t mb, uint32_t k) {
    double *a = kind == 'F' ? s->end_f : kind == 'W' ? s->end_w : s->end_b;
    return &a[(size_t)mb * s->K + k];
}

static uint32_t device_of(const struct sim_state *s, uint32_t k, uint32_t mb) {
    if (s->base)
        return sp_replica_device(s->pl, s->base, k, mb);
    return sp_chunk_device(s->pl->layout, s->pl->P, k);
}

static double duration(const struct sim_state *s, const struct sp_sched_op *op) {
    const struct sp_pipeline *pl = s->pl;
    switch (op->kind) {
    case 'F':
        return pl->f[op->stage];
    case 'W':
        return pl->w[op->stage];
    case 'I':
        return pl->b[op->stage] - pl->w[op->stage];
    case 'O': /* no overlap assumed: the forward's and the full backward's times */
        return pl->f[op->stage] + pl->b[op->stage2];
    default:
        return pl->b[op->stage];
    }
}

/* Earliest start of a forward (F) or backward (I, B) part allowed by its predecessor, or NAN
 * if that has not run. */
static double part_ready(struct sim_state *s, bool forward, uint32_t k, uint32_t mb) {
    const struct sp_pipeline *pl = s->pl;
    uint32_t d = device_of(s, k, mb);
    double e;
    if (forward) {
        if (k == 0)
            return 0;
        e = *end_of(s, 'F', mb, k - 1);
        return e < 0 ? (double)NAN : e + (device_of(s, k - 1, mb) != d ? pl->send[k - 1] : 0);
    }
    if (k + 1 == s->K) {
        e = *end_of(s, 'F', mb, k);
        return e < 0 ? (double)NAN : e;
    }
    e = *end_of(s, 'B', mb, k + 1);
    return e < 0 ? (double)NAN : e + (device_of(s, k + 1, mb) != d ? pl->send[k] : 0);
}

static double ready_at(struct sim_state *s, const struct sp_sched_op *op) {
    switch (op->kind) {
    case 'F':
        return part_ready(s, true, op->stage, op->mb);
    case 'W': {
        double e = *end_of(s, 'B', op->mb, op->stage);
        return e < 0 ? (double)NAN : e;
    }
    case 'O': { /* both inputs; NAN propagates through fmax only if both are NAN */
        double a = part_ready(s, true, op->stage, op->mb);
        double b = part_ready(s, false, op->stage2, op->mb2);
        return isnan(a) || isnan(b) ? (double)NAN : fmax(a, b);
    }
    default:
        return part_ready(s, false, op->stage, op->mb);
    }
}

/* The op's results, released at its end; the devices whose ops may wait for them go in wake[]. */
static int finish(struct sim_state *s, const struct sp_sched_op *op, double t1, uint32_t *wake) {
    int nw = 0;
    uint32_t K = s->K;
    if (op->kind == 'O') {
        *end_of(s, 'F', op->mb, op->stage) = t1;
        *end_of(s, 'B', op->mb2, op->stage2) = t1;
        if (op->stage + 1 < K)
            wake[nw++] = device_of(s, op->stage + 1, op->mb);
        if (op->stage2 > 0)
            wake[nw++] = device_of(s, op->stage2 - 1, op->mb2);
        return nw;
    }
    *end_of(s, op->kind, op->mb, op->stage) = t1;
    if (op->kind == 'F' && op->stage + 1 < K)
        wake[nw++] = device_of(s, op->stage + 1, op->mb);
    if ((op->kind == 'B' || op->kind == 'I') && op->stage > 0)
        wake[nw++] = device_of(s, op->stage - 1, op->mb);
    return nw;
}

void sp_sim_destroy(sp_sim *sim) {
    if (!sim)
        return;
    sp_free(sim->devices);
    sp_free(sim->ops);
    sp_free(sim->title);
    sp_free(sim);
}

const sp_sim_summary *sp_sim_get_summary(const sp_sim *sim) {
    return sim ? &sim->summary : NULL;
}
size_t sp_sim_get_device_count(const sp_sim *sim) {
    return sim ? sim->summary.devices : 0;
}
const sp_sim_device *sp_sim_get_device(const sp_sim *sim, size_t i) {
    return sim && i < sim->summary.devices ? &sim->devices[i] : NULL;
}
size_t sp_sim_get_op_count(const sp_sim *sim) {
    return sim ? sim->n_ops : 0;
}
const sp_sim_op *sp_sim_get_op(const sp_sim *sim, size_t i) {
    return sim && i < sim->n_ops ? &sim->ops[i] : NULL;
}

static bool equal_stages(const struct sp_pipeline *pl, uint32_t K) {
    for (uint32_t k = 0; k < K; k++) {
        if (pl->f[k] != pl->f[0] || pl->b[k] != pl->b[0] || (k + 1 < K && pl->send[k] != 0))
            return false;
        if (sp_schedule_splits_backward(pl->schedule) && pl->w[k] != pl->w[0])
            return false;
    }
    return true;
}

/* Closed forms for equal stages (docs/schedules.md §3), with F, B, W one device's totals. */
static double closed_form(const struct sp_pipeline *pl) {
    double P = pl->P, M = pl->M, V = pl->V;
    double F = pl->f[0] * V, B = pl->b[0] * V;
    switch (pl->schedule) {
    case SP_SCHEDULE_GPIPE:
    case SP_SCHEDULE_1F1B:
        return (M + P - 1) * (F + B);
    case SP_SCHEDULE_INTERLEAVED:
        if (pl->M % pl->P) /* the closed form is Megatron's, with groups of P */
            return (double)NAN;
        return M * (F + B) + (P - 1) * (F + B) / V;
    case SP_SCHEDULE_ZB_H1: {
        double W = pl->w[0], Bi = pl->b[0] - W;
        return M * (pl->f[0] + pl->b[0]) + (P - 1) * (pl->f[0] + Bi - W);
    }
    case SP_SCHEDULE_ZBV: { /* zero bubble in the steady phase when F = I = W, M >= 2P - 1 */
        double f = pl->f[0], i = pl->b[0] - pl->w[0], w = pl->w[0];
        if (f != i || i != w || pl->M < 2 * pl->P - 1)
            return (double)NAN;
        return 6 * M * f + (P - 1) * f;
    }
    case SP_SCHEDULE_DUALPIPEV: { /* DualPipe's bubble, (PP/2-1)(F&B + B - 3W) with PP = 2P
                                   * ranks of DualPipe, F&B = f + b: only when f = i and w <= f */
        double f = pl->f[0], b = pl->b[0], w = pl->w[0];
        if (f != b - w || w > f)
            return (double)NAN;
        return 2 * M * (f + b) + (P - 1) * ((f + b) + b - 3 * w);
    }
    case SP_SCHEDULE_INTERLEAVED_ZB:
        return (double)NAN; /* no closed form holds in general: docs/schedules.md */
    case SP_SCHEDULE_PIPEDREAM:
    case SP_SCHEDULE_2BW: /* no flush: async.c sets it for the window it measures */
        return (double)NAN;
    }
    return (double)NAN;
}

static sp_status report_deadlock(sp_ctx *ctx, const struct sp_pipeline *pl,
                                 const struct sp_sched_op *ops, const size_t *offset,
                                 const size_t *cursor) {
    struct sp_strbuf sb;
    sp_strbuf_init(&sb);
    for (uint32_t d = 0; d < sp_pipeline_devices(pl); d++)
        if (cursor[d] < offset[d + 1]) {
            const struct sp_sched_op *op = &ops[cursor[d]];
            sp_strbuf_printf(&sb, "%sdevice %u waits at %c s%u mb%u", sb.len ? "; " : "", d,
                             op->kind, op->stage, op->mb);
        }
    sp_status st = sp_fail(ctx, SP_ERR_INTERNAL, "the %s op order deadlocks: %s",
                           sp_schedule_name(pl->schedule), sp_strbuf_str(&sb));
    sp_strbuf_release(&sb);
    return st;
}

sp_status sp_simulate_pipeline(sp_ctx *ctx, const struct sp_pipeline *pl, bool keep_ops,
                               sp_sim **out) {
    *out = NULL;
    if (sp_schedule_async(pl->schedule))
        return sp_simulate_steady_state(ctx, pl, keep_ops, out);
    struct sp_sched_op *ops = NULL;
    size_t *offset = NULL;
    sp_status st = sp_schedule_build_devices(ctx, pl, &ops, &offset);
    if (st != SP_OK)
        return st;
    st = sp_simulate_ops(ctx, pl, ops, offset, keep_ops, out);
    sp_free(ops);
    sp_free(offset);
    return st;
}

/* Each device's figures from its ops' times; the iteration ends with the last op, or with a
 * replicated stage's all-reduce after its last backward. */
static sp_status device_figures(sp_ctx *ctx, const struct sim_state *s,
                                const struct sp_sched_op *ops, const size_t *offset,
                                const double *start, const double *fin, sp_sim *sim) {
    const struct sp_pipeline *pl = s->pl;
    uint32_t D = sp_pipeline_devices(pl);
    sim->devices = sp_calloc(D, sizeof *sim->devices);
    if (!sim->devices)
        return sp_oom(ctx, "simulating the schedule");
    double iteration = 0, busy_total = 0, ideal = 0;
    for (uint32_t d = 0; d < D; d++) {
        sp_sim_device *dv = &sim->devices[d];
        dv->device = d;
        uint32_t inflight = 0;
        uint64_t held = 0, peak_held = 0;
        for (size_t i = offset[d]; i < offset[d + 1]; i++) {
            const struct sp_sched_op *op = &ops[i];
            dv->busy_ms += fin[i] - start[i];
            /* +1 per forward, -1 per W or full backward; a pair's forward first */
            if (op->kind == 'F' || op->kind == 'O') {
                inflight++;
                held += pl->saved ? pl->saved[op->stage] : 0;
                if (inflight > dv->peak_inflight)
                    dv->peak_inflight = inflight;
                if (held > peak_held)
                    peak_held = held;
            }
            uint32_t freed = op->kind == 'O' ? op->stage2 : op->stage;
            if (op->kind == 'W' || op->kind == 'B' || op->kind == 'O') {
                inflight--;
                held -= pl->saved ? pl->saved[freed] : 0;
            }
        }
        dv->first_start_ms = offset[d + 1] > offset[d] ? start[offset[d]] : 0;
        dv->last_end_ms = offset[d + 1] > offset[d] ? fin[offset[d + 1] - 1] : 0;
        dv->peak_memory_bytes = (pl->resident ? pl->resident[d] : 0) + peak_held;
        iteration = fmax(iteration, dv->last_end_ms);
        busy_total += dv->busy_ms;
        ideal = fmax(ideal, dv->busy_ms);
    }
    bool flushes = !sp_schedule_async(pl->schedule);
    for (uint32_t k = 0; flushes && s->base && pl->allreduce && k < pl->P; k++) {
        double last = 0; /* the stage's replicas all-reduce once all of them are done */
        for (uint32_t d = s->base[k]; d < s->base[k + 1]; d++)
            last = fmax(last, sim->devices[d].last_end_ms);
        iteration = fmax(iteration, last + pl->allreduce[k]);
    }
    for (uint32_t d = 0; d < D; d++)
        sim->devices[d].idle_ms = iteration - sim->devices[d].busy_ms;
    sp_sim_summary *m = &sim->summary;
    m->schedule = pl->schedule;
    m->devices = D;
    m->chunks = pl->V;
    m->micro_batches = pl->M;
    m->ops = offset[D];
    m->iteration_ms = iteration;
    m->bubble_fraction = iteration > 0 ? 1 - busy_total / ((double)D * iteration) : 0;
    m->efficiency = 1 - m->bubble_fraction;
    m->ideal_ms = ideal;
    m->equal_stages = !s->base && equal_stages(pl, s->K);
    m->closed_form_ms = m->equal_stages ? closed_form(pl) : (double)NAN;
    return SP_OK;
}

sp_status sp_simulate_ops(sp_ctx *ctx, const struct sp_pipeline *pl, const struct sp_sched_op *ops,
                          const size_t *offset, bool keep_ops, sp_sim **out) {
    *out = NULL;
    sp_status st = SP_OK;
    uint32_t P = pl->P, K = P * pl->V, D = sp_pipeline_devices(pl);
    size_t n_ops = offset[D], cells = (size_t)pl->M * K;
    struct sim_state s = {pl, K, NULL, NULL, NULL, NULL};
    s.end_f = sp_mallocarray(cells, sizeof(double));
    s.end_b = sp_mallocarray(cells, sizeof(double));
    s.end_w = sp_mallocarray(cells, sizeof(double));
    double *start = sp_mallocarray(n_ops, sizeof *start), *fin = sp_mallocarray(n_ops, sizeof *fin);
    size_t *cursor = sp_calloc(D, sizeof *cursor);
    uint32_t *stack = sp_mallocarray((size_t)D * 4 + 4, sizeof *stack);
    bool *queued = sp_calloc(D, sizeof *queued);
    double *free_at = sp_calloc(D, sizeof *free_at);
    sp_sim *sim = sp_calloc(1, sizeof *sim);
    if (pl->replicas)
        s.base = sp_mallocarray((size_t)P + 1, sizeof *s.base);
    if (!s.end_f || !s.end_b || !s.end_w || !start || !fin || !cursor || !stack || !queued ||
        !free_at || !sim || (pl->replicas && !s.base)) {
        st = sp_oom(ctx, "simulating the schedule");
        goto out;
    }
    if (s.base) {
        s.base[0] = 0;
        for (uint32_t k = 0; k < P; k++)
            s.base[k + 1] = s.base[k] + pl->replicas[k];
    }
    for (size_t i = 0; i < cells; i++)
        s.end_f[i] = s.end_b[i] = s.end_w[i] = NOT_DONE;
    for (uint32_t d = 0; d < D; d++)
        cursor[d] = offset[d];
    size_t top = 0;
    for (uint32_t d = D; d-- > 0;) {
        stack[top++] = d;
        queued[d] = true;
    }
    size_t done = 0;
    while (top) {
        uint32_t d = stack[--top];
        queued[d] = false;
        while (cursor[d] < offset[d + 1]) {
            const struct sp_sched_op *op = &ops[cursor[d]];
            double r = ready_at(&s, op);
            if (isnan(r))
                break;
            double t0 = r > free_at[d] ? r : free_at[d], t1 = t0 + duration(&s, op);
            start[cursor[d]] = t0;
            fin[cursor[d]] = t1;
            free_at[d] = t1;
            cursor[d]++;
            done++;
            uint32_t wake[2]; /* the devices whose ops wait for this one */
            int nw = finish(&s, op, t1, wake);
            for (int i = 0; i < nw; i++)
                if (wake[i] != d && !queued[wake[i]]) {
                    stack[top++] = wake[i];
                    queued[wake[i]] = true;
                }
        }
    }
    if (done != n_ops) {
        st = report_deadlock(ctx, pl, ops, offset, cursor);
        goto out;
    }
    st = device_figures(ctx, &s, ops, offset, start, fin, sim);
    if (st == SP_OK && keep_ops) {
        sim->ops = sp_mallocarray(n_ops, sizeof *sim->ops);
        if (!sim->ops) {
            st = sp_oom(ctx, "keeping the simulated ops");
            goto out;
        }
        for (uint32_t d = 0; d < D; d++)
            for (size_t i = offset[d]; i < offset[d + 1]; i++)
                sim->ops[i] = (sp_sim_op){d,        ops[i].stage, ops[i].mb,     ops[i].kind,
                                          start[i], fin[i],       ops[i].stage2, ops[i].mb2};
        sim->n_ops = n_ops;
    }
    if (st == SP_OK) {
        *out = sim;
        sim = NULL;
    }
out:
    sp_sim_destroy(sim);
    sp_free(s.end_f);
    sp_free(s.end_b);
    sp_free(s.end_w);
    sp_free(s.base);
    sp_free(start);
    sp_free(fin);
    sp_free(cursor);
    sp_free(stack);
    sp_free(queued);
    sp_free(free_at);
    return st;
}

void sp_sim_opts_init(sp_sim_opts *opts) {
    memset(opts, 0, sizeof *opts);
    opts->schedule = SP_SCHEDULE_1F1B;
    opts->keep_ops = true;
}

sp_status sp_simulate(sp_ctx *ctx, const sp_plan *plan, const sp_sim_opts *opts, sp_sim **out) {
    if (!ctx)
        return SP_ERR_INVALID_ARG;
    sp_ctx_begin(ctx);
    if (!plan || !opts || !out)
        return sp_fail(ctx, SP_ERR_INVALID_ARG, "sp_simulate: NULL argument");
    return sp_simulate_plan(ctx, plan, opts, out);
}

/* A schedule CSV (torch's format, schedule_csv.c) simulated as given: the op lists it holds,
 * with the times of the plan. */
static sp_status simulate_given_order(sp_ctx *ctx, const struct sp_pipeline *pl, const char *path,
                                      bool keep_ops, sp_sim **out) {
    char *text = NULL;
    size_t len = 0;
    struct sp_sched_op *ops = NULL;
    size_t *offset = NULL;
    sp_status st = sp_read_file(ctx, path, (size_t)1 << 30, &text, &len);
    if (st == SP_OK)
        st = sp_schedule_parse_csv(ctx, path, text, len, pl, &ops, &offset);
    for (size_t i = 0; st == SP_OK && i < offset[pl->P]; i++)
        if ((ops[i].kind == 'I' || ops[i].kind == 'W') && pl->w[ops[i].stage] < 0)
            st = sp_fail(ctx, SP_ERR_INVALID_ARG,
                         "%s splits the backward of stage %u into I and W, and the plan has no "
                         "wgrad_ms for it: add wgrad_ms to the profile and partition again",
                         path, ops[i].stage);
    if (st == SP_OK)
        st = sp_simulate_ops(ctx, pl, ops, offset, keep_ops, out);
    if (st == SP_OK) {
        (*out)->summary.given_order = true;
        (*out)->summary.equal_stages = false;
        (*out)->summary.closed_form_ms = (double)NAN;
    }
    sp_free(text);
    sp_free(ops);
    sp_free(offset);
    return st;
}

sp_status sp_simulate_plan(sp_ctx *ctx, const sp_plan *plan, const sp_sim_opts *opts,
                           sp_sim **out) {
    *out = NULL;
    if (!sp_schedule_name(opts->schedule))
        return sp_fail(ctx, SP_ERR_INVALID_ARG, "unknown schedule");
    const sp_plan_summary *m = &plan->summary;
    uint32_t P = m->stages, V = m->chunks, K = P * V;
    uint32_t M = opts->micro_batches ? opts->micro_batches : m->micro_batches;
    if (M < 1 || M > SP_MAX_MICRO_BATCHES)
        return sp_fail(ctx, SP_ERR_INVALID_ARG, "micro-batches must be in [1, %u], got %u",
                       SP_MAX_MICRO_BATCHES, M);
    bool replicated = m->gpus > 0;
    sp_schedule sc = opts->schedule;
    if (replicated && sc != SP_SCHEDULE_GPIPE && sc != SP_SCHEDULE_1F1B && !sp_schedule_async(sc))
        return sp_fail(ctx, SP_ERR_UNSUPPORTED,
                       "the plan replicates stages: they are simulated under gpipe, 1f1b, "
                       "pipedream or 2bw, not %s",
                       sp_schedule_name(sc));
    if (replicated && (V != 1 || opts->order_path))
        return sp_fail(ctx, SP_ERR_UNSUPPORTED,
                       "the plan replicates stages: it is simulated with one chunk per device "
                       "and the schedule's own order (%s)",
                       V != 1 ? "--chunks needs an unreplicated plan" : "not --order");
    uint32_t D = replicated ? m->gpus : P, lane = 0;
    double *f = sp_mallocarray(K, sizeof *f), *b = sp_mallocarray(K, sizeof *b);
    double *w = sp_mallocarray(K, sizeof *w), *send = sp_mallocarray(K, sizeof *send);
    uint64_t *saved = sp_mallocarray(K, sizeof *saved), *resident = sp_calloc(D, sizeof *resident);
    uint32_t *replicas = replicated ? sp_mallocarray(P, sizeof *replicas) : NULL;
    double *allreduce = replicated ? sp_mallocarray(P, sizeof *allreduce) : NULL;
    sp_status st = SP_OK;
    if (!f || !b || !w || !send || !saved || !resident ||
        (replicated && (!replicas || !allreduce))) {
        st = sp_oom(ctx, "simulating the schedule");
        goto out;
    }
    for (uint32_t k = 0; k < K; k++) {
        const sp_stage *s = &plan->stages[k];
        /* blocking plans: half of a stage's transfers happen in its forward (input in, output
         * out), half in its backward (gradients); they occupy the device, so no edge delay */
        bool blocking = m->comm == SP_COMM_BLOCKING;
        f[k] = s->fwd_ms + (blocking ? s->comm_ms / 2 : 0);
        b[k] = s->time_ms - f[k];
        w[k] = s->wgrad_ms;
        send[k] = k + 1 < K && !blocking ? s->send_ms : 0;
        saved[k] = s->saved_bytes;
        /* and the weight versions the simulated schedule stashes beyond the stage's own */
        uint32_t versions = V > 1 ? 1 : sp_stage_weight_versions(opts->schedule, k, P);
        uint64_t held = s->resident_bytes + (uint64_t)(versions - 1) * s->param_bytes;
        if (!replicated) {
            resident[sp_chunk_device(m->chunk_layout, P, k)] += held;
            continue;
        }
        /* each replica holds the whole stage; a flushing schedule all-reduces once per
         * iteration, a schedule without flushes after every micro-batch: a replica's turn is its
         * compute, then its all-reduce (async.c) */
        replicas[k] = s->replicas;
        allreduce[k] = s->allreduce_ms;
        if (sp_schedule_async(opts->schedule))
            b[k] += allreduce[k]; /* the backward's gradients all-reduced before the next turn */
        for (uint32_t j = 0; j < s->replicas && lane < D; j++) /* replicas are devices */
            resident[lane++] = held;
    }
    struct sp_pipeline pl = {P, V,    M,     opts->schedule, m->chunk_layout, f,        b,
                             w, send, saved, resident,       replicas,        allreduce};
    if (opts->order_path)
        st = simulate_given_order(ctx, &pl, opts->order_path, opts->keep_ops, out);
    else
        st = sp_simulate_pipeline(ctx, &pl, opts->keep_ops, out);
    if (st == SP_OK) {
        struct sp_strbuf t;
        sp_strbuf_init(&t);
        sp_strbuf_printf(&t, "%s: %s, P = %u", plan->model,
                         opts->order_path ? "given order" : sp_schedule_name(opts->schedule), P);
        if (V > 1)
            sp_strbuf_printf(&t, ", V = %u", V);
        sp_strbuf_printf(&t, ", M = %u, efficiency %.1f%%", M, 100 * (*out)->summary.efficiency);
        (*out)->title = t.oom ? NULL : t.buf;
        if (t.oom)
            sp_strbuf_release(&t);
    }
out:
    sp_free(f);
    sp_free(b);
    sp_free(w);
    sp_free(send);
    sp_free(saved);
    sp_free(resident);
    sp_free(replicas);
    sp_free(allreduce);
    return st;
}

void sp_plan_attach_schedule(sp_plan *plan, const sp_sim *sim) {
    if (!plan || !sim)
        return;
    sp_plan_schedule *sc = &plan->summary.schedule;
    sc->present = true;
    sc->schedule = sim->summary.schedule;
    sc->micro_batches = sim->summary.micro_batches;
    sc->chunks = sim->summary.chunks;
    sc->iteration_ms = sim->summary.iteration_ms;
    sc->bubble_fraction = sim->summary.bubble_fraction;
    sc->efficiency = sim->summary.efficiency;
}

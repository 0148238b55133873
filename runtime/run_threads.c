/* runtime/run_threads.c: `stagepart run --transport threads`: one pinned thread per stage.
 *
 * Stage s runs its device's op list from the simulator's schedule code (sp_schedule_build), so
 * the order is exactly the one the prediction assumed. A forward waits for the previous stage's
 * activation, computes straight into a buffer of the queue to the next stage and publishes it; a
 * backward waits for the next stage's gradient the same way. Each micro-batch in flight holds a
 * slot of saved tensors, taken at its forward and given back at its backward, so a stage holds
 * exactly as many as the schedule keeps in flight. Every step ends with plain SGD (lr / M on the
 * summed gradients).
 *
 * Failure: the first stage to fail records why (stage, step, micro-batch) and raises the abort
 * flag; every wait in every stage is bounded (timeout_ms) and looks at the flag every 20 ms, so
 * all threads end within about timeout_ms + 20 ms and none is left running. */
#define _GNU_SOURCE
#include <cblas.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "queue.h"
#include "run_impl.h"

void sp_run_opts_init(sp_run_opts *o) {
    memset(o, 0, sizeof *o);
    o->schedule = SP_SCHEDULE_1F1B;
    o->steps = 3;
    o->warmup_steps = 1;
    o->learning_rate = 0.01f;
    o->seed = 1;
    o->pin = true;
    o->timeout_ms = 60000.0;
}

/* A step barrier that gives up at a deadline or on abort, and stamps the step's start. */
struct step_gate {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    uint32_t parties, arrived;
    uint64_t generation;
    double t0_ms;
};

struct shared {
    const struct sp_model *m;
    const sp_run_opts *o;
    uint32_t P, M, steps_total;
    struct sp_sched_op *ops;
    size_t *offset;
    struct sp_queue *fwd, *bwd; /* [P - 1]: boundary s -> s + 1 */
    struct step_gate gate;
    atomic_int abort;
    pthread_mutex_t err_mu;
    sp_ctx *ctx;
    sp_status status;
    struct sp_run *run;
    int cores[CPU_SETSIZE];
    unsigned n_cores;
    /* what each stage is doing, for naming the stage that stopped when a wait runs out */
    atomic_int *waiting_on;       /* [P]: the neighbour it waits for, -1 when computing */
    atomic_uint *at_step, *at_mb; /* [P]: its current op */
    atomic_char *at_kind;         /* [P] */
};

struct worker {
    struct shared *sh;
    uint32_t s;
    size_t first, last;
    int core;
    struct sp_stage_exec *se;
    uint32_t slots;
    struct sp_batch *batch; /* [slots] */
    uint32_t *slot_of;      /* [M] */
    float *dy, *loss;
    sp_ctx *ctx; /* the worker's own, for calls that may fail (contexts are single-threaded) */
    uint64_t extra_bytes; /* dy, loss and the queue buffers this stage sends into */
};

/* The first failure wins; later ones (neighbours giving up) add nothing. */
static void fail(struct shared *sh, sp_status st, const char *fmt, ...) SP_PRINTF(3, 4);
static void fail(struct shared *sh, sp_status st, const char *fmt, ...) {
    pthread_mutex_lock(&sh->err_mu);
    if (sh->status == SP_OK) {
        char msg[1024];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        sh->status = sp_fail(sh->ctx, st, "%s", msg);
    }
    atomic_store(&sh->abort, 1);
    pthread_mutex_unlock(&sh->err_mu);
}

static bool stopped(struct shared *sh) {
    if (atomic_load(&sh->abort))
        return true;
    if (sh->o->cancel && *sh->o->cancel) {
        fail(sh, SP_ERR_INTERRUPTED, "interrupted");
        return true;
    }
    return false;
}

/* A wait of stage s on `peer` ran out. Follow the chain of waits from peer to the stage that
 * waits on nobody: that one stopped; the others only wait on it. */
static void fail_timeout(struct shared *sh, uint32_t s, uint32_t peer, const char *what,
                         uint32_t mb, uint32_t step) {
    uint32_t culprit = peer;
    for (uint32_t hops = 0; hops < sh->P; hops++) {
        int next = atomic_load(&sh->waiting_on[culprit]);
        if (next < 0 || (uint32_t)next == s)
            break;
        culprit = (uint32_t)next;
    }
    char kind = atomic_load(&sh->at_kind[culprit]);
    char chain[64] = "";
    if (culprit != peer)
        snprintf(chain, sizeof chain, ", and stage %u waits on it", peer);
    fail(sh, SP_ERR_NO_DEVICE,
         "stage %u waited %.0f ms %s micro-batch %u (step %u) %s stage %u: stage %u stopped "
         "answering at step %u, micro-batch %u (%s)%s",
         s, sh->o->timeout_ms, what, mb, step, strstr(what, "send") ? "to" : "from", peer, culprit,
         atomic_load(&sh->at_step[culprit]), atomic_load(&sh->at_mb[culprit]),
         kind == 'B' ? "backward" : "forward", chain);
}

/* mark stage s as waiting on peer (-1: no longer) */
static void waiting(struct shared *sh, uint32_t s, int peer) {
    atomic_store(&sh->waiting_on[s], peer);
}

static bool gate_wait(struct shared *sh, double *t0_ms) {
    struct step_gate *g = &sh->gate;
    double deadline = sp_now_ms() + sh->o->timeout_ms;
    pthread_mutex_lock(&g->mu);
    uint64_t gen = g->generation;
    if (++g->arrived == g->parties) {
        g->arrived = 0;
        g->generation++;
        g->t0_ms = sp_now_ms();
        pthread_cond_broadcast(&g->cv);
    }
    while (g->generation == gen && !atomic_load(&sh->abort) && sp_now_ms() < deadline) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        ts.tv_nsec += 20000000L;
        ts.tv_sec += ts.tv_nsec / 1000000000L;
        ts.tv_nsec %= 1000000000L;
        pthread_cond_timedwait(&g->cv, &g->mu, &ts);
    }
    bool ok = g->generation != gen;
    *t0_ms = g->t0_ms;
    pthread_mutex_unlock(&g->mu);
    return ok;
}

static double thread_cpu_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static uint64_t batch_seed(const sp_run_opts *o, uint32_t step, uint32_t M, uint32_t mb) {
    return o->seed * 1000003ull + (uint64_t)step * M + mb;
}

/* Run one op; false after recording a failure (or when the run is stopping). */
static bool run_op(struct worker *w, const struct sp_sched_op *op, uint32_t step, double t0,
                   struct sp_step_stats *st, sp_sim_op *rec) {
    struct shared *sh = w->sh;
    const sp_run_opts *o = sh->o;
    uint32_t s = w->s, P = sh->P, mb = op->mb;
    double deadline = sp_now_ms() + o->timeout_ms, waited = 0.0;
    const char *phase = op->kind == 'F' ? "forward" : "backward";
    atomic_store(&sh->at_step[s], step);
    atomic_store(&sh->at_mb[s], mb);
    atomic_store(&sh->at_kind[s], op->kind);
    if (stopped(sh))
        return false;
    if (op->kind == 'F') {
        if (o->fault != SP_RUN_FAULT_NONE && o->fault_stage == s && o->fault_step == step &&
            o->fault_micro_batch == mb) {
            if (o->fault == SP_RUN_FAULT_FAIL) {
                fail(sh, SP_ERR_NO_DEVICE,
                     "stage %u failed at step %u, micro-batch %u (%s): "
                     "injected fault",
                     s, step, mb, phase);
                return false;
            }
            while (!atomic_load(&sh->abort)) { /* hang: answer nobody until the run stops */
                struct timespec ts = {0, 20000000L};
                nanosleep(&ts, NULL);
            }
            return false;
        }
        /* take a slot for the micro-batch's saved tensors */
        uint32_t slot = UINT32_MAX;
        for (uint32_t k = 0; k < w->slots; k++)
            if (!w->batch[k].labels) {
                slot = k;
                break;
            }
        if (slot == UINT32_MAX) {
            fail(sh, SP_ERR_INTERNAL, "stage %u: no free slot at step %u, micro-batch %u", s, step,
                 mb);
            return false;
        }
        w->slot_of[mb] = slot;
        if (sp_batch_make(w->ctx, sh->m, batch_seed(o, step, sh->M, mb), &w->batch[slot]) !=
            SP_OK) {
            fail(sh, SP_ERR_INFEASIBLE, "stage %u: out of memory for the data of micro-batch %u", s,
                 mb);
            return false;
        }
        if (s > 0) {
            uint32_t got = 0;
            waiting(sh, s, (int)s - 1);
            const float *in = sp_queue_peek(&sh->fwd[s - 1], deadline, &sh->abort, &got, &waited);
            waiting(sh, s, -1);
            st->wait_prev_ms += waited;
            if (!in) {
                if (!atomic_load(&sh->abort))
                    fail_timeout(sh, s, s - 1, "for the activation of", mb, step);
                return false;
            }
            if (got != mb) {
                fail(sh, SP_ERR_INTERNAL, "stage %u expected micro-batch %u from stage %u, got %u",
                     s, mb, s - 1, got);
                return false;
            }
            double c0 = sp_now_ms();
            size_t n = sh->fwd[s - 1].elems;
            memcpy(sp_stage_exec_input(w->se, slot), in, n * sizeof(float));
            sp_queue_pop(&sh->fwd[s - 1]);
            st->transfer_ms += sp_now_ms() - c0;
            st->transfer_bytes += n * sizeof(float);
        }
        float *out = w->loss;
        if (s + 1 < P) {
            waited = 0.0;
            waiting(sh, s, (int)s + 1);
            out = sp_queue_reserve(&sh->fwd[s], sp_now_ms() + o->timeout_ms, &sh->abort, &waited);
            waiting(sh, s, -1);
            st->send_wait_ms += waited;
            if (!out) {
                if (!atomic_load(&sh->abort))
                    fail_timeout(sh, s, s + 1, "to send the activation of", mb, step);
                return false;
            }
        }
        double c0 = sp_now_ms(), cpu0 = thread_cpu_ms();
        sp_stage_exec_forward(w->se, slot, &w->batch[slot], out, NULL);
        double c1 = sp_now_ms();
        st->cpu_ms += thread_cpu_ms() - cpu0;
        st->fwd_ms += c1 - c0;
        *rec = (sp_sim_op){s, s, mb, 'F', c0 - t0, c1 - t0};
        if (s + 1 < P) {
            sp_queue_publish(&sh->fwd[s], mb);
        } else {
            double l = 0.0;
            for (uint32_t k = 0; k < sh->m->bound_batch; k++)
                l += (double)w->loss[k];
            st->loss += l / sh->m->bound_batch / sh->M;
        }
        return true;
    }
    /* backward */
    uint32_t slot = w->slot_of[mb];
    const float *dy = NULL;
    if (s + 1 < P) {
        uint32_t got = 0;
        waiting(sh, s, (int)s + 1);
        const float *in = sp_queue_peek(&sh->bwd[s], deadline, &sh->abort, &got, &waited);
        waiting(sh, s, -1);
        st->wait_next_ms += waited;
        if (!in) {
            if (!atomic_load(&sh->abort))
                fail_timeout(sh, s, s + 1, "for the gradient of", mb, step);
            return false;
        }
        if (got != mb) {
            fail(sh, SP_ERR_INTERNAL, "stage %u expected the gradient of micro-batch %u, got %u", s,
                 mb, got);
            return false;
        }
        double c0 = sp_now_ms();
        size_t n = sh->bwd[s].elems;
        memcpy(w->dy, in, n * sizeof(float));
        sp_queue_pop(&sh->bwd[s]);
        st->transfer_ms += sp_now_ms() - c0;
        st->transfer_bytes += n * sizeof(float);
        dy = w->dy;
    }
    float *dx = NULL;
    if (s > 0) {
        waited = 0.0;
        waiting(sh, s, (int)s - 1);
        dx = sp_queue_reserve(&sh->bwd[s - 1], sp_now_ms() + o->timeout_ms, &sh->abort, &waited);
        waiting(sh, s, -1);
        st->send_wait_ms += waited;
        if (!dx) {
            if (!atomic_load(&sh->abort))
                fail_timeout(sh, s, s - 1, "to send the gradient of", mb, step);
            return false;
        }
    }
    double c0 = sp_now_ms(), cpu0 = thread_cpu_ms();
    sp_stage_exec_backward(w->se, slot, &w->batch[slot], dy, dx, NULL, NULL);
    double c1 = sp_now_ms();
    st->cpu_ms += thread_cpu_ms() - cpu0;
    st->bwd_ms += c1 - c0;
    *rec = (sp_sim_op){s, s, mb, 'B', c0 - t0, c1 - t0};
    if (s > 0)
        sp_queue_publish(&sh->bwd[s - 1], mb);
    sp_batch_release(&w->batch[slot]);
    return true;
}

static void *worker_main(void *p) {
    struct worker *w = p;
    struct shared *sh = w->sh;
    struct sp_run *run = sh->run;
    if (w->core >= 0) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(w->core, &set);
        if (pthread_setaffinity_np(pthread_self(), sizeof set, &set) != 0)
            w->core = -1;
    }
    const struct sp_sched_op *ops = sh->ops + sh->offset[w->s];
    size_t n_ops = sh->offset[w->s + 1] - sh->offset[w->s];
    sp_sim_op *rec = run->timeline->ops + sh->offset[w->s];
    for (uint32_t step = 0; step < sh->steps_total; step++) {
        double t0 = 0.0;
        if (!gate_wait(sh, &t0)) {
            if (!atomic_load(&sh->abort))
                fail(sh, SP_ERR_NO_DEVICE,
                     "stage %u waited %.0f ms for the other stages to "
                     "start step %u",
                     w->s, sh->o->timeout_ms, step);
            return NULL;
        }
        struct sp_step_stats *st = &run->stats[(size_t)step * sh->P + w->s];
        for (size_t k = 0; k < n_ops; k++)
            if (!run_op(w, &ops[k], step, t0, st, &rec[k]))
                return NULL;
        st->busy_ms = st->fwd_ms + st->bwd_ms;
        st->end_ms = sp_now_ms() - t0;
        double o0 = sp_now_ms();
        sp_stage_exec_sgd(w->se, sh->o->learning_rate / (float)sh->M);
        st->optimizer_ms = sp_now_ms() - o0;
    }
    return NULL;
}

/* the plan's layers must be the model's */
static sp_status check_match(sp_ctx *ctx, const sp_plan *plan, const struct sp_model *m) {
    size_t n = sp_plan_layer_count(plan);
    if (n != m->n_layers)
        return sp_fail(ctx, SP_ERR_INVALID_ARG,
                       "the plan covers %zu layers and the model %s has %zu: partition a profile "
                       "of this model (stagepart profile MODEL)",
                       n, m->name, m->n_layers);
    for (size_t i = 0; i < n; i++) {
        const char *name = sp_plan_layer_name(plan, i);
        if (name && strcmp(name, m->layers[i].name) != 0)
            return sp_fail(ctx, SP_ERR_INVALID_ARG,
                           "layer %zu is '%s' in the plan and '%s' in the model %s: the plan was "
                           "made for another model",
                           i, name, m->layers[i].name, m->name);
    }
    return SP_OK;
}

/* the slots a stage needs: the most micro-batches between their forward and backward */
static uint32_t peak_inflight(const struct sp_sched_op *ops, size_t n) {
    uint32_t cur = 0, peak = 0;
    for (size_t k = 0; k < n; k++) {
        cur += ops[k].kind == 'F' ? 1 : 0;
        peak = cur > peak ? cur : peak;
        cur -= ops[k].kind == 'B' ? 1 : 0;
    }
    return peak;
}

sp_status sp_run_finish(sp_ctx *ctx, struct sp_run *run, const sp_plan *plan,
                        const struct sp_model *m, const sp_run_opts *o);

sp_status sp_run_plan(sp_ctx *ctx, const sp_plan *plan, sp_model *m, const sp_run_opts *opts,
                      sp_run **out) {
    if (!ctx || !plan || !m || !out)
        return ctx ? sp_fail(ctx, SP_ERR_INVALID_ARG, "sp_run_plan: NULL argument")
                   : SP_ERR_INVALID_ARG;
    sp_ctx_begin(ctx);
    *out = NULL;
    sp_run_opts dflt;
    if (!opts) {
        sp_run_opts_init(&dflt);
        opts = &dflt;
    }
    const sp_plan_summary *ps = sp_plan_get_summary(plan);
    if (ps->chunks > 1)
        return sp_fail(ctx, SP_ERR_UNSUPPORTED,
                       "the plan has %u chunks per device (interleaved): this runtime runs one "
                       "stage per worker with gpipe or 1f1b",
                       ps->chunks);
    if (opts->schedule != SP_SCHEDULE_GPIPE && opts->schedule != SP_SCHEDULE_1F1B)
        return sp_fail(ctx, SP_ERR_INVALID_ARG, "the runtime runs gpipe or 1f1b, not %s",
                       sp_schedule_name(opts->schedule));
    if (opts->steps < 1 || opts->steps > 100000 || opts->warmup_steps > 100000 ||
        !(opts->timeout_ms > 0) || !(opts->learning_rate >= 0))
        return sp_fail(ctx, SP_ERR_INVALID_ARG,
                       "steps must be in [1, 100000], warm-up steps at most 100000, the timeout "
                       "positive and the learning rate >= 0");
    sp_status st = check_match(ctx, plan, m);
    if (st != SP_OK)
        return st;
    uint32_t P = (uint32_t)sp_plan_stage_count(plan);
    uint32_t M = opts->micro_batches ? opts->micro_batches : ps->micro_batches;
    if (M < 1 || M > 1000000)
        return sp_fail(ctx, SP_ERR_INVALID_ARG, "micro-batches must be in [1, 1000000], got %u", M);
    struct sp_pipeline pl;
    memset(&pl, 0, sizeof pl);
    pl.P = P, pl.V = 1, pl.M = M, pl.schedule = opts->schedule;
    struct shared sh;
    memset(&sh, 0, sizeof sh);
    sh.m = m, sh.o = opts, sh.P = P, sh.M = M, sh.ctx = ctx;
    sh.steps_total = opts->warmup_steps + opts->steps;
    size_t queued = 0; /* boundaries whose queues were made */
    st = sp_schedule_build(ctx, &pl, &sh.ops, &sh.offset);
    if (st != SP_OK)
        return st;
    struct sp_run *run = sp_calloc(1, sizeof *run);
    struct worker *w = sp_calloc(P, sizeof *w);
    pthread_t *threads = sp_calloc(P, sizeof *threads);
    sh.fwd = sp_calloc(P, sizeof *sh.fwd);
    sh.bwd = sp_calloc(P, sizeof *sh.bwd);
    sh.waiting_on = sp_calloc(P, sizeof *sh.waiting_on);
    sh.at_step = sp_calloc(P, sizeof *sh.at_step);
    sh.at_mb = sp_calloc(P, sizeof *sh.at_mb);
    sh.at_kind = sp_calloc(P, sizeof *sh.at_kind);
    if (!run || !w || !threads || !sh.fwd || !sh.bwd || !sh.waiting_on || !sh.at_step ||
        !sh.at_mb || !sh.at_kind ||
        !(run->stats = sp_calloc((size_t)sh.steps_total * P, sizeof *run->stats)) ||
        !(run->stages = sp_calloc(P, sizeof *run->stages)) ||
        !(run->timeline = sp_calloc(1, sizeof *run->timeline)) ||
        !(run->timeline->ops = sp_calloc(sh.offset[P], sizeof *run->timeline->ops)) ||
        !(run->timeline->devices = sp_calloc(P, sizeof *run->timeline->devices))) {
        st = sp_oom(ctx, "the run");
        goto cleanup;
    }
    sh.run = run;
    for (uint32_t s = 0; s < P; s++)
        atomic_init(&sh.waiting_on[s], -1);
    /* the cores: stage s on the s-th core this process may use */
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0)
        for (int c = 0; c < CPU_SETSIZE; c++)
            if (CPU_ISSET(c, &set))
                sh.cores[sh.n_cores++] = c;
    if (!sh.n_cores)
        sh.n_cores = 1, sh.cores[0] = -1;
    run->summary.cores = sh.n_cores;
    if (P > sh.n_cores)
        sp_warn(ctx,
                "%u stages on %u cores: stages share cores, so their times include waiting "
                "for the CPU (compare busy_ms with cpu_ms in the report)",
                P, sh.n_cores);
    /* every stage's layers, slots and queues, before any thread starts */
    for (uint32_t s = 0; s < P && st == SP_OK; s++) {
        const sp_stage *stage = sp_plan_stage(plan, s);
        struct worker *x = &w[s];
        x->sh = &sh, x->s = s, x->first = stage->first_layer, x->last = stage->last_layer;
        x->core = opts->pin ? sh.cores[s % sh.n_cores] : -1;
        x->slots = peak_inflight(sh.ops + sh.offset[s], sh.offset[s + 1] - sh.offset[s]);
        st = sp_stage_exec_create(ctx, m, x->first, x->last, x->slots, opts->seed, &x->se);
        if (st != SP_OK) {
            char why[512];
            snprintf(why, sizeof why, "%s", sp_ctx_errmsg(ctx));
            st = sp_fail(ctx, SP_ERR_INFEASIBLE, "stage %u (layers %s..%s): %s", s,
                         m->layers[x->first].name, m->layers[x->last].name, why);
            break;
        }
        size_t out_elems = m->layers[x->last].out_elems, in_elems = m->layers[x->first].in_elems;
        x->batch = sp_calloc(x->slots, sizeof *x->batch);
        x->slot_of = sp_calloc(M, sizeof *x->slot_of);
        x->dy = sp_calloc(out_elems ? out_elems : 1, sizeof(float));
        x->loss = sp_calloc(m->bound_batch, sizeof(float));
        /* queues hold as many tensors as the receiver may fall behind: at most M */
        bool ok = x->batch && x->slot_of && x->dy && x->loss && sp_ctx_create(&x->ctx) == SP_OK;
        if (s + 1 < P) {
            bool f = sp_queue_init(&sh.fwd[s], M, out_elems);
            bool b = sp_queue_init(&sh.bwd[s], M, out_elems);
            ok = ok && f && b;
            queued = s + 1;
        }
        x->extra_bytes = (uint64_t)(out_elems + m->bound_batch) * sizeof(float) +
                         (s + 1 < P ? (uint64_t)M * out_elems * sizeof(float) : 0) +
                         (s > 0 ? (uint64_t)M * in_elems * sizeof(float) : 0);
        if (!ok)
            st = sp_fail(ctx, SP_ERR_INFEASIBLE,
                         "stage %u: out of memory for its queues and "
                         "buffers (%llu bytes)",
                         s, (unsigned long long)x->extra_bytes);
    }
    if (st != SP_OK)
        goto cleanup;
    pthread_mutex_init(&sh.err_mu, NULL);
    pthread_mutex_init(&sh.gate.mu, NULL);
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&sh.gate.cv, &attr);
    pthread_condattr_destroy(&attr);
    sh.gate.parties = P;
    /* each stage computes on its own thread alone, as the CPU profile measured it */
    int blas_threads = openblas_get_num_threads();
    openblas_set_num_threads(1);
    uint32_t started = 0;
    for (; started < P; started++)
        if (pthread_create(&threads[started], NULL, worker_main, &w[started]) != 0) {
            fail(&sh, SP_ERR_NO_DEVICE, "cannot start the thread of stage %u", started);
            break;
        }
    for (uint32_t s = 0; s < started; s++)
        pthread_join(threads[s], NULL);
    openblas_set_num_threads(blas_threads);
    st = sh.status;
    pthread_mutex_destroy(&sh.err_mu);
    pthread_mutex_destroy(&sh.gate.mu);
    pthread_cond_destroy(&sh.gate.cv);
    if (st == SP_OK) {
        for (uint32_t s = 0; s < P; s++) {
            run->stages[s].core = w[s].core;
            run->stages[s].peak_inflight = w[s].slots;
            run->stages[s].peak_memory_bytes = w[s].se->bytes + w[s].extra_bytes;
        }
        run->timeline->n_ops = sh.offset[P];
        st = sp_run_finish(ctx, run, plan, m, opts);
        if (st == SP_OK && opts->keep_state && (run->kept = sp_calloc(P, sizeof *run->kept)))
            for (uint32_t s = 0; s < P; s++)
                run->kept[s] = w[s].se, w[s].se = NULL;
    }
cleanup:
    for (uint32_t s = 0; w && s < P; s++) {
        sp_stage_exec_destroy(w[s].se);
        for (uint32_t k = 0; w[s].batch && k < w[s].slots; k++)
            sp_batch_release(&w[s].batch[k]);
        sp_free(w[s].batch);
        sp_free(w[s].slot_of);
        sp_free(w[s].dy);
        sp_free(w[s].loss);
        sp_ctx_destroy(w[s].ctx);
    }
    for (size_t s = 0; s < queued; s++) {
        sp_queue_release_all(&sh.fwd[s]);
        sp_queue_release_all(&sh.bwd[s]);
    }
    sp_free(sh.fwd);
    sp_free(sh.bwd);
    sp_free(sh.waiting_on);
    sp_free(sh.at_step);
    sp_free(sh.at_mb);
    sp_free(sh.at_kind);
    sp_free(sh.ops);
    sp_free(sh.offset);
    sp_free(w);
    sp_free(threads);
    if (st != SP_OK) {
        sp_run_destroy(run);
        return st;
    }
    *out = run;
    return SP_OK;
}

/* runtime/transport_threads.c: `--transport threads`: every stage a thread of this process,
 * pinned to its own core; tensors through bounded queues (queue.h).
 *
 * Stopping together: the first failure is recorded under a mutex and raises the abort flag;
 * every wait in every stage is bounded (timeout_ms) and looks at the flag every 20 ms, so all
 * threads end within about timeout_ms + 20 ms and none is left running. A wait that runs out
 * follows the chain of waiting stages to the one that waits on nobody and names it. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "blas.h"
#include "queue.h"
#include "worker.h"

/* A step barrier that gives up at a deadline or on abort, and stamps the step's start. */
struct step_gate {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    uint32_t parties, arrived;
    uint64_t generation;
    double t0_ms;
};

struct threads {
    uint32_t P;
    double timeout_ms;
    struct sp_queue *q[2]; /* [dir][P - 1]: boundary b carries activations b -> b + 1 (q[ACT][b])
                            * and gradients b + 1 -> b (q[GRAD][b]) */
    struct step_gate gate;
    atomic_int abort;
    pthread_mutex_t err_mu;
    sp_ctx *ctx; /* the caller's: only the first failure writes it, under err_mu */
    sp_status status;
    atomic_int *waiting_on; /* [P] */
    atomic_uint *at_step, *at_mb;
    atomic_char *at_kind;
};

static struct sp_queue *queue_of(struct threads *t, uint32_t from, uint32_t to, enum sp_dir dir) {
    return &t->q[dir][from < to ? from : to];
}

static bool q_gate(void *p, uint32_t s, uint32_t step, double *t0_ms) {
    (void)s, (void)step;
    struct threads *t = p;
    struct step_gate *g = &t->gate;
    double deadline = sp_now_ms() + t->timeout_ms;
    pthread_mutex_lock(&g->mu);
    uint64_t gen = g->generation;
    if (++g->arrived == g->parties) {
        g->arrived = 0;
        g->generation++;
        g->t0_ms = sp_now_ms();
        pthread_cond_broadcast(&g->cv);
    }
    while (g->generation == gen && sp_cond_wait_slice(&g->cv, &g->mu, deadline, &t->abort))
        ;
    bool ok = g->generation != gen;
    *t0_ms = g->t0_ms;
    pthread_mutex_unlock(&g->mu);
    return ok;
}

static void q_fail(void *p, sp_status st, const char *message);

static bool q_recv(void *p, uint32_t s, uint32_t peer, enum sp_dir dir, uint32_t mb, float *dst,
                   size_t elems, double deadline_ms, double *waited_ms, double *copy_ms) {
    struct threads *t = p;
    struct sp_queue *q = queue_of(t, peer, s, dir);
    uint32_t got = 0;
    const float *in = sp_queue_peek(q, deadline_ms, &t->abort, &got, waited_ms);
    if (!in)
        return false;
    if (got != mb) { /* the op orders make this impossible; say so if it ever happens */
        char msg[160];
        snprintf(msg, sizeof msg, "stage %u expected micro-batch %u from stage %u, got %u", s, mb,
                 peer, got);
        pthread_mutex_lock(&t->err_mu);
        if (t->status == SP_OK)
            t->status = sp_fail(t->ctx, SP_ERR_INTERNAL, "%s", msg);
        atomic_store(&t->abort, 1);
        pthread_mutex_unlock(&t->err_mu);
        return false;
    }
    double c0 = sp_now_ms();
    bool copied = q->be->copy(q->be->device, dst, in, elems * sizeof(float));
    sp_queue_pop(q);
    *copy_ms += sp_now_ms() - c0;
    if (!copied) {
        char msg[160];
        snprintf(msg, sizeof msg, "stage %u: copying micro-batch %u from stage %u failed", s, mb,
                 peer);
        q_fail(t, SP_ERR_NO_DEVICE, msg);
    }
    return copied;
}

static float *q_send_buffer(void *p, uint32_t s, uint32_t peer, enum sp_dir dir, double deadline_ms,
                            double *waited_ms) {
    struct threads *t = p;
    return sp_queue_reserve(queue_of(t, s, peer, dir), deadline_ms, &t->abort, waited_ms);
}

static void q_send(void *p, uint32_t s, uint32_t peer, enum sp_dir dir, uint32_t mb) {
    sp_queue_publish(queue_of(p, s, peer, dir), mb);
}

static void q_fail(void *p, sp_status st, const char *message) {
    struct threads *t = p;
    pthread_mutex_lock(&t->err_mu);
    if (t->status == SP_OK)
        t->status = sp_fail(t->ctx, st, "%s", message);
    atomic_store(&t->abort, 1);
    pthread_mutex_unlock(&t->err_mu);
}

static bool stopping(void *p) {
    return atomic_load(&((struct threads *)p)->abort) != 0;
}

static void set_state(void *p, uint32_t s, uint32_t step, uint32_t mb, char kind, int waiting_on) {
    struct threads *t = p;
    atomic_store(&t->at_step[s], step);
    atomic_store(&t->at_mb[s], mb);
    atomic_store(&t->at_kind[s], kind);
    atomic_store(&t->waiting_on[s], waiting_on);
}

/* follow the chain of waits from peer to the stage that waits on nobody: that one stopped */
static void explain_timeout(void *p, uint32_t s, uint32_t peer, char *msg, size_t cap) {
    struct threads *t = p;
    uint32_t culprit = peer;
    for (uint32_t hops = 0; hops < t->P; hops++) {
        int next = atomic_load(&t->waiting_on[culprit]);
        if (next < 0 || (uint32_t)next == s)
            break;
        culprit = (uint32_t)next;
    }
    char chain[64] = "";
    if (culprit != peer)
        snprintf(chain, sizeof chain, ", and stage %u waits on it", peer);
    snprintf(msg, cap, "stage %u stopped answering at step %u, micro-batch %u (%s)%s", culprit,
             atomic_load(&t->at_step[culprit]), atomic_load(&t->at_mb[culprit]),
             atomic_load(&t->at_kind[culprit]) == 'B' ? "backward" : "forward", chain);
}

static const struct sp_transport_ops threads_ops = {
    .step_gate = q_gate,
    .recv = q_recv,
    .send_buffer = q_send_buffer,
    .send = q_send,
    .fail = q_fail,
    .stopping = stopping,
    .set_state = set_state,
    .explain_timeout = explain_timeout,
};

static void *thread_main(void *p) {
    struct sp_stage_worker *w = p;
    sp_stage_worker_pin(w);
    sp_stage_worker_run(w);
    return NULL;
}

/* every stage on its own thread, each computing alone as the CPU profile measured it; the
 * run's status once all have ended */
static sp_status run_stages(struct threads *t, struct sp_stage_worker *w, pthread_t *threads) {
    uint32_t P = t->P;
    pthread_mutex_init(&t->err_mu, NULL);
    pthread_mutex_init(&t->gate.mu, NULL);
    sp_cond_init_monotonic(&t->gate.cv);
    t->gate.parties = P;
    int blas_threads = sp_blas_threads();
    sp_blas_set_threads(1);
    uint32_t started = 0;
    for (int why = 0; started < P; started++)
        if ((why = pthread_create(&threads[started], NULL, thread_main, &w[started])) != 0) {
            /* only out of resources: its stack, under a memory limit */
            char msg[256];
            snprintf(msg, sizeof msg, "cannot start the thread of stage %u: %s%s", started,
                     strerror(why), sp_thread_start_hint(why));
            q_fail(t, sp_thread_start_status(why), msg);
            break;
        }
    for (uint32_t s = 0; s < started; s++)
        pthread_join(threads[s], NULL);
    sp_blas_set_threads(blas_threads);
    pthread_mutex_destroy(&t->err_mu);
    pthread_mutex_destroy(&t->gate.mu);
    pthread_cond_destroy(&t->gate.cv);
    return t->status;
}

sp_status sp_run_threads(sp_ctx *ctx, const sp_plan *plan, const struct sp_model *m,
                         const sp_run_opts *o, uint32_t M, const struct sp_sched_op *ops,
                         const size_t *offset, const int *cores, unsigned n_cores,
                         const struct sp_exec_backend *const *be, struct sp_run *run) {
    uint32_t P = (uint32_t)sp_plan_get_stage_count(plan);
    struct threads t;
    memset(&t, 0, sizeof t);
    struct sp_turns turns; /* --isolate's order: every op, then each stage's SGD */
    sp_turns_init(&turns, (uint64_t)offset[P] + P, &t.abort);
    t.P = P, t.timeout_ms = o->timeout_ms, t.ctx = ctx;
    t.q[0] = sp_calloc(P, sizeof *t.q[0]);
    t.q[1] = sp_calloc(P, sizeof *t.q[1]);
    t.waiting_on = sp_calloc(P, sizeof *t.waiting_on);
    t.at_step = sp_calloc(P, sizeof *t.at_step);
    t.at_mb = sp_calloc(P, sizeof *t.at_mb);
    t.at_kind = sp_calloc(P, sizeof *t.at_kind);
    struct sp_stage_worker *w = sp_calloc(P, sizeof *w);
    pthread_t *threads = sp_calloc(P, sizeof *threads);
    size_t queued = 0; /* boundaries whose queues were made */
    sp_status st = SP_OK;
    if (!t.q[0] || !t.q[1] || !t.waiting_on || !t.at_step || !t.at_mb || !t.at_kind || !w ||
        !threads)
        st = sp_oom(ctx, "the run");
    for (uint32_t s = 0; st == SP_OK && s < P; s++) {
        struct sp_stage_worker *x = &w[s];
        x->ops = &threads_ops, x->t = &t, x->m = m, x->o = o;
        x->s = s, x->P = P, x->M = M, x->steps_total = o->warmup_steps + o->steps;
        x->list = ops + offset[s], x->n_ops = offset[s + 1] - offset[s];
        x->core = o->pin ? cores[s % n_cores] : -1;
        x->stats = run->stats + s, x->stats_stride = P;
        x->rec = run->timeline->ops + offset[s];
        x->be = be[s];
        x->prev_device = s > 0 ? be[s - 1]->device : NULL;
        x->next_device = s + 1 < P ? be[s + 1]->device : NULL;
        if (run->turn) { /* --isolate: every op in its place of one order, each SGD after */
            x->turns = &turns;
            x->turn = run->turn + offset[s];
            x->sgd_turn = (uint32_t)offset[P] + s;
        }
        /* a queue holds as many tensors as its receiver may fall behind: at most M */
        size_t out_elems = m->layers[sp_plan_get_stage(plan, s)->last_layer].out_elems;
        uint64_t sends =
            (s + 1 < P ? (uint64_t)M * out_elems : 0) +
            (s > 0 ? (uint64_t)M * m->layers[sp_plan_get_stage(plan, s)->first_layer].in_elems : 0);
        st = sp_stage_worker_setup(ctx, x, plan, sends * sizeof(float));
        if (st == SP_OK && s + 1 < P) {
            bool a = sp_queue_init(&t.q[SP_DIR_ACT][s], M, out_elems, be[s + 1]);
            bool g = sp_queue_init(&t.q[SP_DIR_GRAD][s], M, out_elems, be[s]);
            queued = s + 1;
            if (!a || !g)
                st = sp_fail(ctx, SP_ERR_INFEASIBLE,
                             "stage %u: out of memory for its queues (%llu bytes)", s,
                             (unsigned long long)(2 * (uint64_t)M * out_elems * sizeof(float)));
        }
        atomic_init(&t.waiting_on[s], -1);
    }
    if (st == SP_OK)
        st = run_stages(&t, w, threads);
    if (st == SP_OK) {
        for (uint32_t s = 0; s < P; s++) {
            run->stages[s].core = w[s].core;
            run->stages[s].peak_inflight = w[s].slots;
            run->stages[s].peak_memory_bytes = w[s].se->bytes + w[s].extra_bytes;
        }
        if (o->keep_state && (run->kept = sp_calloc(P, sizeof *run->kept)))
            for (uint32_t s = 0; s < P; s++)
                run->kept[s] = w[s].se, w[s].se = NULL;
    }
    for (uint32_t s = 0; w && s < P; s++)
        sp_stage_worker_release(&w[s]);
    for (size_t b = 0; b < queued; b++) {
        sp_queue_release_all(&t.q[SP_DIR_ACT][b]);
        sp_queue_release_all(&t.q[SP_DIR_GRAD][b]);
    }
    sp_free(t.q[0]);
    sp_free(t.q[1]);
    sp_free(t.waiting_on);
    sp_free(t.at_step);
    sp_free(t.at_mb);
    sp_free(t.at_kind);
    sp_free(w);
    sp_free(threads);
    sp_turns_release(&turns);
    return st;
}

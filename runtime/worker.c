/* runtime/worker.c: a pipeline stage's op loop, whatever carries its tensors (worker.h).
 *
 * Each micro-batch in flight holds a slot of saved tensors, taken at its forward and given back
 * at its backward, so a stage holds exactly as many as its op list keeps in flight. Every step
 * ends with plain SGD (lr / M on the gradients summed over the step's micro-batches). */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "worker.h"

static void failf(struct sp_stage_worker *w, sp_status st, const char *fmt, ...) SP_PRINTF(3, 4);
static void failf(struct sp_stage_worker *w, sp_status st, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    w->ops->fail(w->t, st, msg);
}

static bool stopped(struct sp_stage_worker *w) {
    if (w->ops->stopping(w->t))
        return true;
    if (w->o->cancel && sp_cancel_requested(w->o->cancel)) {
        w->ops->fail(w->t, SP_ERR_INTERRUPTED, "interrupted");
        return true;
    }
    return false;
}

/* a wait on peer ran out (when the run is not already stopping for another reason) */
static void timed_out(struct sp_stage_worker *w, uint32_t peer, const char *what, uint32_t mb,
                      uint32_t step) {
    if (w->ops->stopping(w->t))
        return;
    char why[512];
    w->ops->explain_timeout(w->t, w->s, peer, why, sizeof why);
    failf(w, SP_ERR_NO_DEVICE,
          "stage %u waited %.0f ms %s micro-batch %u (step %u) %s stage %u: %s", w->s,
          w->o->timeout_ms, what, mb, step, strncmp(what, "to ", 3) == 0 ? "to" : "from", peer,
          why);
}

static double thread_cpu_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static uint64_t batch_seed(const sp_run_opts *o, uint32_t step, uint32_t M, uint32_t mb) {
    return o->seed * 1000003ull + (uint64_t)step * M + mb;
}

/* the injected fault, if it is this op's: false when the stage must stop */
static bool injected_fault(struct sp_stage_worker *w, uint32_t step, uint32_t mb) {
    const sp_run_opts *o = w->o;
    if (o->fault == SP_RUN_FAULT_NONE || o->fault_stage != w->s || o->fault_step != step ||
        o->fault_micro_batch != mb)
        return true;
    if (o->fault == SP_RUN_FAULT_FAIL) {
        failf(w, SP_ERR_NO_DEVICE,
              "stage %u failed at step %u, micro-batch %u (forward): injected "
              "fault",
              w->s, step, mb);
        return false;
    }
    while (!w->ops->stopping(w->t)) { /* hang: answer nobody until the run stops */
        struct timespec ts = {0, 20000000L};
        nanosleep(&ts, NULL);
    }
    return false;
}

static bool on_device(const struct sp_stage_worker *w) {
    return w->be != &sp_exec_backend_cpu;
}

/* wait for the stage's queued work; a device error stops the run naming the stage */
static bool finished(struct sp_stage_worker *w, uint32_t step, uint32_t mb, const char *what) {
    char why[256] = "";
    if (w->be->synchronize(w->be->device, why, sizeof why))
        return true;
    failf(w, SP_ERR_NO_DEVICE, "stage %u failed at step %u, micro-batch %u (%s): %s", w->s, step,
          mb, what, why);
    return false;
}

/* a forward's or backward's compute time: the device's clock where it has one (a GPU's events
 * around the op's work), else the host's */
static double compute_ms(struct sp_stage_worker *w, double host_ms) {
    double device_ms = w->be->marked_ms(w->be->device);
    return device_ms >= 0.0 ? device_ms : host_ms;
}

/* a GPU stage's output into the neighbour's buffer (dst, in its memory), or with no neighbour
 * device (another process: the MPI transport) into the host buffer the transport sends from */
static bool deliver(struct sp_stage_worker *w, float *dst, void *dst_device, size_t elems,
                    uint32_t step, uint32_t mb, struct sp_step_stats *st) {
    double c0 = sp_now_ms();
    size_t bytes = elems * sizeof(float);
    bool ok = dst_device ? w->be->copy_to(w->be->device, dst, dst_device, w->staging, bytes)
                         : w->be->download(w->be->device, dst, w->staging, bytes);
    st->transfer_ms += sp_now_ms() - c0;
    if (!ok)
        failf(w, SP_ERR_NO_DEVICE,
              "stage %u: copying micro-batch %u (step %u) to its neighbour "
              "failed",
              w->s, mb, step);
    return ok;
}

/* the micro-batch's data where the stage computes: uploaded to a GPU */
static const struct sp_batch *stage_batch(struct sp_stage_worker *w, uint32_t slot) {
    if (!on_device(w))
        return &w->batch[slot];
    struct sp_batch *d = &w->dev_batch[slot];
    bool ok = sp_batch_upload(w->be, w->m, &w->batch[slot], d);
    return ok ? d : NULL;
}

static bool forward(struct sp_stage_worker *w, uint32_t mb, uint32_t step, double t0,
                    struct sp_step_stats *st, sp_sim_op *rec) {
    uint32_t s = w->s;
    if (!injected_fault(w, step, mb))
        return false;
    uint32_t slot = UINT32_MAX; /* a free slot for the micro-batch's saved tensors */
    for (uint32_t k = 0; k < w->slots && slot == UINT32_MAX; k++)
        if (!w->batch[k].labels)
            slot = k;
    if (slot == UINT32_MAX) {
        failf(w, SP_ERR_INTERNAL, "stage %u: no free slot at step %u, micro-batch %u", s, step, mb);
        return false;
    }
    w->slot_of[mb] = slot;
    if (sp_batch_make(w->ctx, w->m, batch_seed(w->o, step, w->M, mb), &w->batch[slot]) != SP_OK) {
        failf(w, SP_ERR_INFEASIBLE, "stage %u: out of memory for the data of micro-batch %u", s,
              mb);
        return false;
    }
    if (s > 0) {
        size_t n = w->m->layers[w->se->first].in_elems;
        double waited = 0.0, copy = 0.0;
        w->ops->set_state(w->t, s, step, mb, 'F', (int)s - 1);
        bool ok = w->ops->recv(w->t, s, s - 1, SP_DIR_ACT, mb, sp_stage_exec_input(w->se, slot), n,
                               sp_now_ms() + w->o->timeout_ms, &waited, &copy);
        if (ok) /* a wait that ran out stays marked: a neighbour that times out too follows it */
            w->ops->set_state(w->t, s, step, mb, 'F', -1);
        st->wait_prev_ms += waited;
        st->transfer_ms += copy;
        if (!ok) {
            timed_out(w, s - 1, "for the activation of", mb, step);
            return false;
        }
        st->transfer_bytes += n * sizeof(float);
    }
    const struct sp_batch *b = stage_batch(w, slot);
    if (!b) {
        failf(w, SP_ERR_NO_DEVICE,
              "stage %u: copying micro-batch %u (step %u) to the device failed", s, mb, step);
        return false;
    }
    float *out = w->loss;
    if (s + 1 < w->P) {
        double waited = 0.0;
        w->ops->set_state(w->t, s, step, mb, 'F', (int)s + 1);
        out = w->ops->send_buffer(w->t, s, s + 1, SP_DIR_ACT, sp_now_ms() + w->o->timeout_ms,
                                  &waited);
        if (out)
            w->ops->set_state(w->t, s, step, mb, 'F', -1);
        st->send_wait_ms += waited;
        if (!out) {
            timed_out(w, s + 1, "to send the activation of", mb, step);
            return false;
        }
    }
    double c0 = sp_now_ms(), cpu0 = thread_cpu_ms();
    w->be->mark(w->be->device);
    sp_stage_exec_forward(w->se, slot, b, on_device(w) ? w->staging : out, NULL);
    if (!finished(w, step, mb, "forward"))
        return false;
    double c1 = sp_now_ms();
    st->cpu_ms += thread_cpu_ms() - cpu0;
    st->fwd_ms += compute_ms(w, c1 - c0);
    *rec = (sp_sim_op){s, s, mb, 'F', c0 - t0, c1 - t0, 0, 0};
    if (s + 1 < w->P) {
        size_t n = w->m->layers[w->se->last].out_elems;
        if (on_device(w) && !deliver(w, out, w->next_device, n, step, mb, st))
            return false;
        w->ops->send(w->t, s, s + 1, SP_DIR_ACT, mb);
    } else {
        if (on_device(w) && !w->be->download(w->be->device, w->loss, w->staging,
                                             w->m->bound_batch * sizeof *w->loss)) {
            failf(w, SP_ERR_NO_DEVICE, "stage %u: reading the loss of micro-batch %u failed", s,
                  mb);
            return false;
        }
        double l = 0.0;
        for (uint32_t k = 0; k < w->m->bound_batch; k++)
            l += (double)w->loss[k];
        st->loss += l / w->m->bound_batch / w->M;
    }
    return true;
}

static bool backward(struct sp_stage_worker *w, uint32_t mb, uint32_t step, double t0,
                     struct sp_step_stats *st, sp_sim_op *rec) {
    uint32_t s = w->s, slot = w->slot_of[mb];
    const float *dy = NULL;
    if (s + 1 < w->P) {
        size_t n = w->m->layers[w->se->last].out_elems;
        double waited = 0.0, copy = 0.0;
        w->ops->set_state(w->t, s, step, mb, 'B', (int)s + 1);
        bool ok = w->ops->recv(w->t, s, s + 1, SP_DIR_GRAD, mb, w->dy, n,
                               sp_now_ms() + w->o->timeout_ms, &waited, &copy);
        if (ok)
            w->ops->set_state(w->t, s, step, mb, 'B', -1);
        st->wait_next_ms += waited;
        st->transfer_ms += copy;
        if (!ok) {
            timed_out(w, s + 1, "for the gradient of", mb, step);
            return false;
        }
        st->transfer_bytes += n * sizeof(float);
        dy = w->dy;
    }
    float *dx = NULL;
    if (s > 0) {
        double waited = 0.0;
        w->ops->set_state(w->t, s, step, mb, 'B', (int)s - 1);
        dx = w->ops->send_buffer(w->t, s, s - 1, SP_DIR_GRAD, sp_now_ms() + w->o->timeout_ms,
                                 &waited);
        if (dx)
            w->ops->set_state(w->t, s, step, mb, 'B', -1);
        st->send_wait_ms += waited;
        if (!dx) {
            timed_out(w, s - 1, "to send the gradient of", mb, step);
            return false;
        }
    }
    double c0 = sp_now_ms(), cpu0 = thread_cpu_ms();
    const struct sp_batch *b = on_device(w) ? &w->dev_batch[slot] : &w->batch[slot];
    w->be->mark(w->be->device);
    sp_stage_exec_backward(w->se, slot, b, dy, dx && on_device(w) ? w->staging : dx, NULL, NULL);
    if (!finished(w, step, mb, "backward"))
        return false;
    double c1 = sp_now_ms();
    st->cpu_ms += thread_cpu_ms() - cpu0;
    st->bwd_ms += compute_ms(w, c1 - c0);
    *rec = (sp_sim_op){s, s, mb, 'B', c0 - t0, c1 - t0, 0, 0};
    if (s > 0) {
        size_t n = w->m->layers[w->se->first].in_elems;
        if (on_device(w) && !deliver(w, dx, w->prev_device, n, step, mb, st))
            return false;
        w->ops->send(w->t, s, s - 1, SP_DIR_GRAD, mb);
    }
    sp_batch_release(&w->batch[slot]);
    return true;
}

/* isolate: wait for the op's place in the global order (a no-op when the stages run at once) */
static bool take_turn(struct sp_stage_worker *w, uint64_t turn, uint32_t step, uint32_t mb) {
    if (!w->turns || sp_turns_wait(w->turns, turn, sp_now_ms() + w->o->timeout_ms))
        return true;
    if (!w->ops->stopping(w->t))
        failf(w, SP_ERR_NO_DEVICE,
              "stage %u waited %.0f ms for its turn at step %u, micro-batch %u (--isolate)", w->s,
              w->o->timeout_ms, step, mb);
    return false;
}

void sp_stage_worker_run(struct sp_stage_worker *w) {
    for (uint32_t step = 0; step < w->steps_total; step++) {
        double t0 = 0.0;
        if (!w->ops->step_gate(w->t, w->s, step, &t0)) {
            if (!w->ops->stopping(w->t))
                failf(w, SP_ERR_NO_DEVICE,
                      "stage %u waited %.0f ms for the other stages to start "
                      "step %u",
                      w->s, w->o->timeout_ms, step);
            return;
        }
        struct sp_step_stats *st = &w->stats[(size_t)step * w->stats_stride];
        uint64_t base = w->turns ? (uint64_t)step * w->turns->per_step : 0;
        for (size_t k = 0; k < w->n_ops; k++) {
            const struct sp_sched_op *op = &w->list[k];
            w->ops->set_state(w->t, w->s, step, op->mb, op->kind, -1);
            if (stopped(w) || !take_turn(w, base + (w->turn ? w->turn[k] : 0), step, op->mb))
                return;
            bool ok = op->kind == 'F' ? forward(w, op->mb, step, t0, st, &w->rec[k])
                                      : backward(w, op->mb, step, t0, st, &w->rec[k]);
            if (!ok)
                return;
            if (w->turns)
                sp_turns_done(w->turns);
        }
        st->busy_ms = st->fwd_ms + st->bwd_ms;
        st->end_ms = sp_now_ms() - t0;
        if (!take_turn(w, base + w->sgd_turn, step, w->M - 1))
            return;
        double o0 = sp_now_ms();
        /* replicated: the replicas' gradients summed, as one worker running every micro-batch
         * would have them, before the same update */
        if (w->ops->sum_gradients && !w->ops->sum_gradients(w->t, w->s, w->se)) {
            if (!w->ops->stopping(w->t))
                failf(w, SP_ERR_NO_DEVICE,
                      "stage %u: the all-reduce of its replicas' gradients at step %u did not "
                      "finish within %.0f ms",
                      w->s, step, w->o->timeout_ms);
            return;
        }
        sp_stage_exec_sgd(w->se, w->o->learning_rate / (float)w->M);
        if (!finished(w, step, w->M - 1, "optimizer"))
            return;
        st->optimizer_ms = sp_now_ms() - o0;
        if (w->turns)
            sp_turns_done(w->turns);
    }
}

void sp_stage_worker_pin(struct sp_stage_worker *w) {
    if (w->be && !w->be->bind_thread(w->be->device))
        failf(w, SP_ERR_NO_DEVICE, "stage %u: cannot make its GPU current on its thread", w->s);
    if (w->core < 0)
        return;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(w->core, &set);
    if (pthread_setaffinity_np(pthread_self(), sizeof set, &set) != 0)
        w->core = -1;
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

sp_status sp_stage_worker_setup(sp_ctx *ctx, struct sp_stage_worker *w, const sp_plan *plan,
                                uint64_t send_buffers_bytes) {
    const sp_stage *stage = sp_plan_get_stage(plan, w->s);
    const struct sp_model *m = w->m;
    w->slots = peak_inflight(w->list, w->n_ops);
    if (!w->be)
        w->be = &sp_exec_backend_cpu;
    sp_status st = sp_stage_exec_create_on(ctx, w->be, m, stage->first_layer, stage->last_layer,
                                           w->slots, w->o->seed, &w->se);
    if (st != SP_OK) {
        char why[512];
        snprintf(why, sizeof why, "%s", sp_ctx_get_errmsg(ctx));
        /* a stage that cannot allocate what it needs is infeasible (exit 3); one the memory
         * budget does not leave room for says so (exit 2), as every command does */
        sp_status why_st = st == SP_ERR_LIMIT ? st : SP_ERR_INFEASIBLE;
        return sp_fail(ctx, why_st, "stage %u (layers %s..%s): %s", w->s,
                       m->layers[stage->first_layer].name, m->layers[stage->last_layer].name, why);
    }
    size_t out_elems = m->layers[stage->last_layer].out_elems;
    size_t in_elems = m->layers[stage->first_layer].in_elems;
    w->batch = sp_calloc(w->slots, sizeof *w->batch);
    w->slot_of = sp_calloc(w->M, sizeof *w->slot_of);
    w->dy = w->be->alloc_zeroed(w->be->device, (out_elems ? out_elems : 1) * sizeof(float));
    w->loss = sp_calloc(m->bound_batch, sizeof(float));
    w->extra_bytes = (uint64_t)(out_elems + m->bound_batch) * sizeof(float) + send_buffers_bytes;
    bool ok = w->batch && w->slot_of && w->dy && w->loss;
    if (ok && on_device(w)) { /* the staging buffer and each slot's data on the device */
        size_t staging = out_elems > in_elems ? out_elems : in_elems;
        staging = staging > m->bound_batch ? staging : m->bound_batch;
        size_t labels, tokens, images;
        sp_batch_counts(m, &labels, &tokens, &images);
        w->staging = w->be->alloc_zeroed(w->be->device, staging * sizeof(float));
        w->dev_batch = sp_calloc(w->slots, sizeof *w->dev_batch);
        ok = w->staging && w->dev_batch;
        for (uint32_t k = 0; ok && k < w->slots; k++)
            ok = sp_batch_alloc_on(w->be, m, &w->dev_batch[k]);
        w->extra_bytes +=
            staging * sizeof(float) + w->slots * (labels * 4 + tokens * 4 + images * sizeof(float));
    }
    if (!ok || sp_ctx_create(&w->ctx) != SP_OK)
        return sp_fail(ctx, SP_ERR_INFEASIBLE,
                       "stage %u: out of memory for its buffers (%llu "
                       "bytes)",
                       w->s, (unsigned long long)w->extra_bytes);
    return SP_OK;
}

static void release_stage_memory(struct sp_stage_worker *w, void *p) {
    if (p)
        w->be->release(w->be->device, p);
}

void sp_stage_worker_release(struct sp_stage_worker *w) {
    sp_stage_exec_destroy(w->se);
    for (uint32_t k = 0; w->batch && k < w->slots; k++)
        sp_batch_release(&w->batch[k]);
    for (uint32_t k = 0; w->dev_batch && k < w->slots; k++)
        sp_batch_release_on(w->be, &w->dev_batch[k]);
    sp_free(w->dev_batch);
    release_stage_memory(w, w->staging);
    sp_free(w->batch);
    sp_free(w->slot_of);
    release_stage_memory(w, w->dy);
    sp_free(w->loss);
    sp_ctx_destroy(w->ctx);
    w->se = NULL, w->batch = NULL, w->slot_of = NULL, w->dy = NULL, w->loss = NULL, w->ctx = NULL;
    w->dev_batch = NULL, w->staging = NULL;
}

sp_status sp_run_validate(sp_ctx *ctx, const sp_plan *plan, const struct sp_model *m,
                          const sp_run_opts *o, uint32_t *micro_batches) {
    const sp_plan_summary *ps = sp_plan_get_summary(plan);
    if (ps->chunks > 1)
        return sp_fail(ctx, SP_ERR_UNSUPPORTED,
                       "the plan has %u chunks per device (interleaved): this runtime runs one "
                       "stage per worker with gpipe or 1f1b",
                       ps->chunks);
    if (ps->gpus && (o->transport != SP_TRANSPORT_MPI || o->keep_state))
        return sp_fail(ctx, SP_ERR_UNSUPPORTED,
                       "the plan replicates stages on %u GPUs: its replicas run as MPI ranks "
                       "(--transport mpi, mpirun -np %u), %s",
                       ps->gpus, ps->gpus,
                       o->transport != SP_TRANSPORT_MPI ? "not on threads"
                                                        : "and keeping the weights is for threads");
    for (size_t k = 0; k < sp_plan_get_stage_count(plan); k++)
        if (!sp_plan_get_stage(plan, k)->layer_count)
            return sp_fail(ctx, SP_ERR_UNSUPPORTED,
                           "stage %zu is empty: this runtime runs stages that hold layers (an "
                           "empty stage is for Megatron-LM); partition with fewer stages to run "
                           "the plan here",
                           k);
    if (o->backend == SP_RUN_BACKEND_CUDA && o->keep_state)
        return sp_fail(ctx, SP_ERR_UNSUPPORTED,
                       "--backend cuda keeps no weights after the run (keep_state)");
    if (o->gpu_split && o->transport != SP_TRANSPORT_THREADS)
        return sp_fail(ctx, SP_ERR_INVALID_ARG,
                       "--gpu-split partitions the GPUs of one process's stages: with the "
                       "threads transport, not MPI ranks");
    if (o->isolate && (o->transport != SP_TRANSPORT_THREADS || o->gpu_split))
        return sp_fail(ctx, SP_ERR_INVALID_ARG,
                       "--isolate runs every op alone in one process (the threads transport), "
                       "%s",
                       o->gpu_split ? "on the whole device: not with --gpu-split"
                                    : "not across MPI ranks");
    if (o->gpu_split && o->backend != SP_RUN_BACKEND_CUDA)
        return sp_fail(ctx, SP_ERR_INVALID_ARG, "--gpu-split splits GPUs: give --backend cuda");
    if (o->schedule != SP_SCHEDULE_GPIPE && o->schedule != SP_SCHEDULE_1F1B)
        return sp_fail(ctx, SP_ERR_INVALID_ARG, "the runtime runs gpipe or 1f1b, not %s",
                       sp_schedule_name(o->schedule));
    if (o->steps < 1 || o->steps > 100000 || o->warmup_steps > 100000 || !(o->timeout_ms > 0) ||
        !(o->learning_rate >= 0))
        return sp_fail(ctx, SP_ERR_INVALID_ARG,
                       "steps must be in [1, 100000], warm-up steps at most 100000, the timeout "
                       "positive and the learning rate >= 0");
    size_t n = sp_plan_get_layer_count(plan);
    if (n != m->n_layers)
        return sp_fail(ctx, SP_ERR_INVALID_ARG,
                       "the plan covers %zu layers and the model %s has %zu: partition a profile "
                       "of this model (stagepart profile MODEL)",
                       n, m->name, m->n_layers);
    for (size_t i = 0; i < n; i++) {
        const char *name = sp_plan_get_layer_name(plan, i);
        if (name && strcmp(name, m->layers[i].name) != 0)
            return sp_fail(ctx, SP_ERR_INVALID_ARG,
                           "layer %zu is '%s' in the plan and '%s' in the model %s: the plan was "
                           "made for another model",
                           i, name, m->layers[i].name, m->name);
    }
    /* the plan's byte counts come from the profile: when they differ from the model's at its
     * current shape, the profile was made at another micro-batch size or sequence length */
    for (size_t k = 0; k < sp_plan_get_stage_count(plan); k++) {
        const sp_stage *stage = sp_plan_get_stage(plan, k);
        uint64_t saved = 0;
        for (size_t l = stage->first_layer; l <= stage->last_layer; l++)
            saved += (uint64_t)m->layers[l].saved_elems * sizeof(float);
        if (saved != stage->saved_bytes) {
            sp_warn(ctx,
                    "stage %zu keeps %llu bytes per micro-batch in the plan and %llu in %s at "
                    "micro-batch size %u%s: the plan's profile was made at another size, so its "
                    "times will not match (give --micro-batch-size and --seq-len as profiled)",
                    k, (unsigned long long)stage->saved_bytes, (unsigned long long)saved, m->name,
                    m->bound_batch, m->tokens ? " and this sequence length" : "");
            break;
        }
    }
    *micro_batches = o->micro_batches ? o->micro_batches : ps->micro_batches;
    if (*micro_batches < 1 || *micro_batches > 1000000)
        return sp_fail(ctx, SP_ERR_INVALID_ARG, "micro-batches must be in [1, 1000000], got %u",
                       *micro_batches);
    return SP_OK;
}

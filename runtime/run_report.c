/* runtime/run_report.c: what a run measured, set against what the plan predicted (the
 * "stagepart-run-report" document is written by formats/run_report.c).
 *
 * Every measured figure is the median over the measured steps (warm-up steps excluded). The
 * prediction is the plan's own: each stage's time per micro-batch from the profile, and the
 * simulator's iteration time for the same schedule and micro-batch count. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "worker.h"

void sp_run_destroy(sp_run *run) {
    if (!run)
        return;
    for (uint32_t s = 0; run->kept && s < run->summary.stages; s++)
        sp_stage_exec_destroy(run->kept[s]);
    sp_free(run->kept);
    sp_free(run->stages);
    sp_free(run->stats);
    sp_free(run->replica_stats);
    sp_free(run->step_loss);
    sp_free(run->step_ms);
    sp_free(run->predicted_time_ms);
    sp_free(run->model_name);
    sp_free(run->turn);
    sp_sim_destroy(run->timeline);
    sp_free(run);
}

/* the median over the measured steps (W .. W + n - 1) of the double at `offset` in stage s's
 * stats; tmp[n] scratch */
static double stage_median(const struct sp_run *run, uint32_t P, uint32_t s, uint32_t W, uint32_t n,
                           size_t offset, double *tmp) {
    for (uint32_t k = 0; k < n; k++) {
        const char *st = (const char *)&run->stats[(size_t)(W + k) * P + s];
        memcpy(&tmp[k], st + offset, sizeof(double));
    }
    return sp_median(tmp, n);
}
#define STAGE_MEDIAN(field)                                                                        \
    stage_median(run, P, s, W, n, offsetof(struct sp_step_stats, field), tmp)

/* --isolate: the schedule simulated with what each stage's ops measured (the median step's
 * forward and backward time per micro-batch), no transfer delays: the iteration the plan would
 * take on P machines like this one, each running its stage alone */
static sp_status replay(sp_ctx *ctx, const struct sp_run *run, sp_schedule schedule,
                        double *iteration_ms) {
    uint32_t P = run->summary.stages, M = run->summary.micro_batches;
    double *f = sp_calloc(P, sizeof *f), *b = sp_calloc(P, sizeof *b),
           *send = sp_calloc(P, sizeof *send);
    sp_status st = f && b && send ? SP_OK : sp_oom(ctx, "the replay");
    for (uint32_t s = 0; st == SP_OK && s < P; s++) {
        f[s] = run->stages[s].fwd_ms / M;
        b[s] = run->stages[s].bwd_ms / M;
    }
    struct sp_pipeline pl;
    memset(&pl, 0, sizeof pl);
    pl.P = P, pl.V = 1, pl.M = M, pl.schedule = schedule;
    pl.f = f, pl.b = b, pl.send = send;
    sp_sim *sim = NULL;
    if (st == SP_OK)
        st = sp_simulate_pipeline(ctx, &pl, false, &sim);
    if (st == SP_OK)
        *iteration_ms = sim->summary.iteration_ms;
    sp_sim_destroy(sim);
    sp_free(f);
    sp_free(b);
    sp_free(send);
    return st;
}

/* The balance is judged on the stages' shares of the work, not on their absolute times: a host
 * that runs every stage 2x slower than when the profile was measured (another machine, a busy
 * one, a clock that changed) keeps the plan's balance, and the slowdown is reported on its own.
 * A stage's share error is its busy time over the plan's, divided by the run's slowdown (the
 * same ratio over all stages), less 1; the iteration is held to the simulation scaled likewise.
 * (A run measured 1.018 against 1.014 planned read "balance NOT held" when the host ran 2x
 * slower: every stage was off by 100 %.) */
void sp_run_judge_balance(sp_run_summary *S, sp_run_stage *stages) {
    double k = S->slowdown;
    S->max_share_error = 0.0;
    for (uint32_t s = 0; s < S->stages; s++) {
        sp_run_stage *r = &stages[s];
        r->share_error = isfinite(k) && k > 0 && isfinite(r->busy_error)
                             ? (1 + r->busy_error) / k - 1
                             : (double)NAN;
        if (fabs(r->share_error) > S->max_share_error || isnan(r->share_error))
            S->max_share_error = fabs(r->share_error);
    }
    S->scaled_iteration_error = isfinite(k) && k > 0 && isfinite(S->iteration_error)
                                    ? (1 + S->iteration_error) / k - 1
                                    : (double)NAN;
    S->balance_held = S->max_share_error <= 0.10 && fabs(S->scaled_iteration_error) <= 0.15;
}

/* each step's end and loss; the median iteration and optimizer step over the measured steps */
static void step_figures(struct sp_run *run, uint32_t P, uint32_t W, uint32_t n, double *tmp) {
    sp_run_summary *S = &run->summary;
    uint32_t total = W + n;
    for (uint32_t k = 0; k < total; k++) {
        double end = 0.0;
        for (uint32_t s = 0; s < P; s++)
            end = fmax(end, run->stats[(size_t)k * P + s].end_ms);
        run->step_ms[k] = end;
        run->step_loss[k] = run->stats[(size_t)k * P + P - 1].loss;
    }
    for (uint32_t k = 0; k < n; k++)
        tmp[k] = run->step_ms[W + k];
    S->iteration_ms = sp_median(tmp, n);
    for (uint32_t k = 0; k < n; k++) {
        double worst = 0.0;
        for (uint32_t s = 0; s < P; s++)
            worst = fmax(worst, run->stats[(size_t)(W + k) * P + s].optimizer_ms);
        tmp[k] = worst;
    }
    run->optimizer_ms = sp_median(tmp, n);
    S->first_loss = run->step_loss[0];
    S->last_loss = run->step_loss[total - 1];
}

/* each stage's medians against the plan's prediction; replicated stages: a stage's figures are
 * its replicas' mean, each replica running M / r of the micro-batches; the devices are the
 * replicas */
static void stage_figures(struct sp_run *run, const sp_plan *plan, const sp_run_opts *o,
                          double *tmp) {
    sp_run_summary *S = &run->summary;
    const sp_plan_summary *ps = sp_plan_get_summary(plan);
    uint32_t P = S->stages, W = S->warmup_steps, n = S->steps;
    uint32_t D = ps->gpus ? ps->gpus : P;
    double busy_max = 0.0, busy_sum = 0.0, device_busy = 0.0, predicted_sum = 0.0;
    for (uint32_t s = 0; s < P; s++) {
        sp_run_stage *r = &run->stages[s];
        r->stage = s;
        r->busy_ms = STAGE_MEDIAN(busy_ms);
        r->fwd_ms = STAGE_MEDIAN(fwd_ms);
        r->bwd_ms = STAGE_MEDIAN(bwd_ms);
        r->wait_prev_ms = STAGE_MEDIAN(wait_prev_ms);
        r->wait_next_ms = STAGE_MEDIAN(wait_next_ms);
        r->send_wait_ms = STAGE_MEDIAN(send_wait_ms);
        r->transfer_ms = STAGE_MEDIAN(transfer_ms);
        r->transfer_bytes = run->stats[(size_t)W * P + s].transfer_bytes;
        busy_max = fmax(busy_max, r->busy_ms);
        busy_sum += r->busy_ms;
        const sp_stage *ps_s = sp_plan_get_stage(plan, s);
        run->predicted_time_ms[s] = ps_s->time_ms;
        r->predicted_memory_bytes =
            ps_s->resident_bytes +
            (uint64_t)sp_stage_inflight(o->schedule, s, P, S->micro_batches) * ps_s->saved_bytes;
        r->replicas = ps->gpus ? ps_s->replicas : 1;
        double replicas = r->replicas;
        device_busy += replicas * r->busy_ms;
        r->predicted_busy_ms = S->micro_batches * run->predicted_time_ms[s] / replicas;
        r->busy_error =
            r->predicted_busy_ms > 0 ? r->busy_ms / r->predicted_busy_ms - 1 : (double)NAN;
        predicted_sum += r->predicted_busy_ms;
        if (fabs(r->busy_error) > S->max_stage_error || isnan(r->busy_error))
            S->max_stage_error = fabs(r->busy_error);
    }
    S->imbalance = busy_sum > 0 ? busy_max / (busy_sum / P) : 1.0;
    S->slowdown = predicted_sum > 0 && busy_sum > 0 ? busy_sum / predicted_sum : (double)NAN;
    S->bubble_fraction = S->iteration_ms > 0 ? 1.0 - device_busy / (D * S->iteration_ms) : 0.0;
}

/* the prediction: the plan simulated under the run's schedule and micro-batches; with --isolate
 * the measured ops replayed as a pipeline */
static sp_status predict(sp_ctx *ctx, struct sp_run *run, const sp_plan *plan,
                         const sp_run_opts *o) {
    sp_run_summary *S = &run->summary;
    sp_sim_opts so;
    sp_sim_opts_init(&so);
    so.schedule = o->schedule;
    so.micro_batches = S->micro_batches;
    so.keep_ops = false;
    sp_sim *sim = NULL;
    sp_status st = sp_simulate_plan(ctx, plan, &so, &sim);
    if (st != SP_OK)
        return st;
    S->predicted_iteration_ms = sim->summary.iteration_ms;
    S->predicted_bubble_fraction = sim->summary.bubble_fraction;
    sp_sim_destroy(sim);
    S->predicted_imbalance = sp_plan_get_summary(plan)->imbalance;
    S->iteration_error = S->predicted_iteration_ms > 0
                             ? S->iteration_ms / S->predicted_iteration_ms - 1
                             : (double)NAN;
    S->isolated = o->isolate;
    S->replayed_iteration_ms = (double)NAN;
    if (!o->isolate)
        return SP_OK;
    /* the ops ran one at a time: their pipelined iteration is a replay */
    st = replay(ctx, run, o->schedule, &S->replayed_iteration_ms);
    if (st != SP_OK)
        return st;
    S->iteration_error = S->predicted_iteration_ms > 0
                             ? S->replayed_iteration_ms / S->predicted_iteration_ms - 1
                             : (double)NAN;
    double busy = 0.0; /* the bubble of the replay: the row of ops has none to measure */
    for (uint32_t s = 0; s < S->stages; s++)
        busy += run->stages[s].busy_ms;
    S->bubble_fraction =
        S->replayed_iteration_ms > 0 ? 1.0 - busy / (S->stages * S->replayed_iteration_ms) : 0.0;
    return SP_OK;
}

/* the timeline of the last step, in the simulator's form: each replica its own device */
static sp_status last_step_timeline(sp_ctx *ctx, struct sp_run *run, const sp_plan *plan,
                                    const struct sp_model *m, const sp_run_opts *o) {
    const sp_run_summary *S = &run->summary;
    const sp_plan_summary *ps = sp_plan_get_summary(plan);
    uint32_t P = S->stages, total = S->warmup_steps + S->steps, D = ps->gpus ? ps->gpus : P;
    sp_sim *t = run->timeline;
    t->summary.schedule = o->schedule;
    t->summary.devices = D;
    t->summary.chunks = 1;
    t->summary.micro_batches = S->micro_batches;
    t->summary.ops = t->n_ops;
    t->summary.iteration_ms = run->step_ms[total - 1];
    t->summary.closed_form_ms = (double)NAN;
    double busy_last = 0.0;
    for (uint32_t s = 0; s < D; s++) {
        const struct sp_step_stats *x = run->replica_stats
                                            ? &run->replica_stats[(size_t)(total - 1) * D + s]
                                            : &run->stats[(size_t)(total - 1) * P + s];
        uint32_t stage = ps->gpus ? 0 : s, before = 0; /* replicas: rank s's stage */
        for (uint32_t k = 0; ps->gpus && k < P; k++) {
            if (before <= s)
                stage = k;
            before += sp_plan_get_stage(plan, k)->replicas;
        }
        sp_sim_device *d = &t->devices[s];
        d->device = s;
        d->busy_ms = x->busy_ms;
        d->idle_ms = t->summary.iteration_ms - x->busy_ms;
        d->last_end_ms = x->end_ms;
        d->peak_inflight = run->stages[stage].peak_inflight;
        d->peak_memory_bytes = run->stages[stage].peak_memory_bytes;
        busy_last += x->busy_ms;
        t->summary.ideal_ms = fmax(t->summary.ideal_ms, x->busy_ms);
    }
    t->summary.bubble_fraction =
        t->summary.iteration_ms > 0 ? 1.0 - busy_last / (D * t->summary.iteration_ms) : 0.0;
    t->summary.efficiency = 1.0 - t->summary.bubble_fraction;
    char title[512];
    snprintf(title, sizeof title, "%s: measured, %s, %u stages, %u micro-batches (step %u)",
             m->name, sp_schedule_name(o->schedule), P, S->micro_batches, total - 1);
    t->title = sp_strdup(title);
    return t->title ? SP_OK : sp_oom(ctx, "the timeline");
}

sp_status sp_run_finish(sp_ctx *ctx, struct sp_run *run, const sp_plan *plan,
                        const struct sp_model *m, const sp_run_opts *o) {
    uint32_t P = (uint32_t)sp_plan_get_stage_count(plan), W = o->warmup_steps, n = o->steps;
    uint32_t total = W + n;
    const sp_plan_summary *ps = sp_plan_get_summary(plan);
    sp_run_summary *S = &run->summary;
    S->stages = P;
    S->micro_batches = o->micro_batches ? o->micro_batches : ps->micro_batches;
    S->steps = n;
    S->warmup_steps = W;
    S->micro_batch_size = m->bound_batch;
    S->schedule = o->schedule;
    double *tmp = sp_mallocarray(total + 1, sizeof *tmp);
    run->step_loss = sp_mallocarray(total, sizeof *run->step_loss);
    run->step_ms = sp_mallocarray(total, sizeof *run->step_ms);
    run->predicted_time_ms = sp_mallocarray(P, sizeof *run->predicted_time_ms);
    run->model_name = sp_strdup(m->name);
    if (!tmp || !run->step_loss || !run->step_ms || !run->predicted_time_ms || !run->model_name) {
        sp_free(tmp);
        return sp_oom(ctx, "the run report");
    }
    step_figures(run, P, W, n, tmp);
    stage_figures(run, plan, o, tmp);
    sp_free(tmp);
    sp_status st = predict(ctx, run, plan, o);
    if (st != SP_OK)
        return st;
    sp_run_judge_balance(S, run->stages);
    return last_step_timeline(ctx, run, plan, m, o);
}

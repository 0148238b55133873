/* simulate/async.c: schedules without flushes (pipedream, 2bw) in their steady state.
 *
 * PipeDream's asynchronous 1F1B and PipeDream-2BW run the 1F1B order forever: no flush ends an
 * iteration, so what matters is the rate at which micro-batches complete once the pipeline is
 * full. The op order is a ladder: forwards run from stage to stage, backwards back, and on each
 * stage s the device alternates, its backward of micro-batch i after its forward of i + P-1-s
 * and its next forward after that backward. The ladder's elementary cycles go forward from a
 * stage s to a stage e, turn, and come back; the one through [s, e] does its stages' work and
 * both directions of its transfers while e - s + 1 micro-batches advance. The steady state
 * completes one micro-batch per
 *     period = max over s <= e of ( sum_{k=s..e} (f_k + b_k) + 2 sum_{k=s..e-1} send_k ) / (e - s +
 * 1) (the event graph's largest cycle mean), so M micro-batches take M periods: with no transfer
 * delays, the slowest stage's f + b. The simulator still runs the op order for M + 3P
 * micro-batches, event by event, for the timeline, the devices' peaks and a check: the M that
 * complete after the first 2P take M periods once the run is past its transient (the tests
 * compare both). */
#include <math.h>

#include "sim_impl.h"

/* The steady-state period above. For a trial period p, the best segment ending at e has
 * G(e+1) - 2 send_e - min_{s<=e} G(s) with G(j) = sum_{k<j} (f_k + b_k - p + 2 send_k); it is
 * >= 0 iff some cycle's mean reaches p. Bisection narrows p, then the best segment's own mean is
 * the answer (exact in its arithmetic). */
static double steady_period(const struct sp_pipeline *pl) {
    uint32_t P = pl->P;
    double lo = 0, hi = 0;
    for (uint32_t k = 0; k < P; k++) {
        double a = pl->f[k] + pl->b[k], snd = k + 1 < P ? pl->send[k] : 0;
        lo = fmax(lo, a);
        hi = fmax(hi, a + 2 * snd);
    }
    uint32_t best_s = 0, best_e = 0;
    for (int it = 0; it < 100 && hi > lo; it++) {
        double p = lo + (hi - lo) / 2, g = 0, gmin = 0, top = -(double)INFINITY;
        uint32_t smin = 0, s_at = 0, e_at = 0;
        for (uint32_t e = 0; e < P; e++) {
            double snd = e + 1 < P ? pl->send[e] : 0;
            if (g < gmin) {
                gmin = g;
                smin = e;
            }
            g += pl->f[e] + pl->b[e] - p + 2 * snd;
            if (g - 2 * snd - gmin > top) {
                top = g - 2 * snd - gmin;
                s_at = smin;
                e_at = e;
            }
        }
        if (top >= 0) {
            lo = p;
            best_s = s_at;
            best_e = e_at;
        } else {
            hi = p;
        }
        if (hi - lo <= 1e-15 * hi)
            break;
    }
    double sum = 0;
    for (uint32_t k = best_s; k <= best_e; k++)
        sum += pl->f[k] + pl->b[k] + (k < best_e ? 2 * pl->send[k] : 0);
    double mean = sum / (double)(best_e - best_s + 1);
    double slowest = 0;
    for (uint32_t k = 0; k < P; k++)
        slowest = fmax(slowest, pl->f[k] + pl->b[k]);
    return fmax(mean, slowest);
}

/* Replicated stages: no closed form is claimed; the period is measured on the run itself, from
 * the completion (stage 0's backward) of micro-batch 2D - 1 to that of 2D + W - 1, past the
 * transient and before the drain (the run has W + 3D), over W micro-batches. Completions come in
 * bursts: stage 0's replicas take micro-batches round-robin, and each runs up to P of them
 * (its window, replicas_policy.c) forward before their backwards, so W is a multiple of stage
 * 0's replicas x P, and the two ends fall on the same replica at the same point of its pattern
 * (measured over M = 32 with 7 replicas and P = 2, the period came out 7% short). No replica
 * turns faster than its own work, each stage's (f + b) / r a micro-batch: the period is at
 * least that. */
static double measured_period(const struct sp_pipeline *pl, const sp_sim *sim, uint32_t W,
                              uint32_t D) {
    double from = 0, to = 0;
    for (size_t i = 0; i < sim->n_ops; i++) {
        const sp_sim_op *op = &sim->ops[i];
        if (op->stage != 0 || op->kind != 'B')
            continue;
        if (op->micro_batch == 2 * D - 1)
            from = op->end_ms;
        if (op->micro_batch == 2 * D + W - 1)
            to = op->end_ms;
    }
    double period = (to - from) / W;
    for (uint32_t k = 0; k < pl->P; k++)
        period = fmax(period, (pl->f[k] + pl->b[k]) / pl->replicas[k]);
    return period;
}

sp_status sp_simulate_steady_state(sp_ctx *ctx, const struct sp_pipeline *pl, bool keep_ops,
                                   sp_sim **out) {
    *out = NULL;
    if (pl->V != 1)
        return sp_fail(ctx, SP_ERR_INVALID_ARG,
                       "%s runs one chunk per device (the 1F1B order without flushes); the plan "
                       "has %u",
                       sp_schedule_name(pl->schedule), pl->V);
    uint32_t P = pl->P, M = pl->M, D = sp_pipeline_devices(pl);
    uint64_t burst = pl->replicas ? (uint64_t)pl->replicas[0] * P : 1; /* see measured_period */
    uint64_t W = (M + burst - 1) / burst * burst;
    if (W + 3ull * D > SP_MAX_MICRO_BATCHES)
        return sp_fail(ctx, SP_ERR_LIMIT,
                       "%s is measured over %s + 3 x devices micro-batches, more than %u here",
                       sp_schedule_name(pl->schedule),
                       pl->replicas ? "a multiple of stage 0's replicas x P" : "M",
                       SP_MAX_MICRO_BATCHES);
    struct sp_pipeline run = *pl;
    run.M = (uint32_t)(W + 3 * D);
    struct sp_sched_op *ops = NULL;
    size_t *offset = NULL;
    sp_status st = sp_schedule_build_devices(ctx, &run, &ops, &offset);
    sp_sim *sim = NULL;
    if (st == SP_OK)
        st = sp_simulate_ops(ctx, &run, ops, offset, true, &sim);
    sp_free(ops);
    sp_free(offset);
    if (st != SP_OK)
        return st;
    double iteration =
        (double)M * (pl->replicas ? measured_period(pl, sim, (uint32_t)W, D) : steady_period(pl));
    double busy_total = 0;
    for (uint32_t k = 0, d = 0; k < P; k++) /* a replica runs M / r of the M micro-batches */
        for (uint32_t j = 0; j < (pl->replicas ? pl->replicas[k] : 1); j++, d++) {
            sp_sim_device *dv = &sim->devices[d];
            dv->busy_ms = (double)M * (pl->f[k] + pl->b[k]) / (pl->replicas ? pl->replicas[k] : 1);
            dv->idle_ms = iteration - dv->busy_ms;
            busy_total += dv->busy_ms;
        }
    sp_sim_summary *m = &sim->summary;
    m->micro_batches = M;
    m->iteration_ms = iteration;
    m->bubble_fraction = iteration > 0 ? 1 - busy_total / ((double)D * iteration) : 0;
    m->efficiency = 1 - m->bubble_fraction;
    /* equal stages without delays: one micro-batch completes per f + b */
    m->closed_form_ms = m->equal_stages ? (double)M * (pl->f[0] + pl->b[0]) : (double)NAN;
    m->ideal_ms = 0;
    for (uint32_t d = 0; d < D; d++)
        m->ideal_ms = fmax(m->ideal_ms, sim->devices[d].busy_ms);
    if (!keep_ops) {
        sp_free(sim->ops);
        sim->ops = NULL;
        sim->n_ops = 0;
    }
    *out = sim;
    return SP_OK;
}

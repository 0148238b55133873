/* partitioner/solvers/vshape_iteration.c: --objective iteration for V-shape schedules.
 *
 * The least device bottleneck is no guide to the iteration at moderate M: the schedule's warm-up
 * and cool-down run chunk by chunk, and the bottleneck's plan may need one long chunk beside a
 * short one (bert-large, P = 4, M = 16: a 5.06 ms chunk and a 0.09 ms one, 96.0 ms under zbv,
 * against 88.4 ms for an equal split 2 % over the bottleneck). So: the balanced-chunk plan under
 * each device-load cap from the least bottleneck to 25 % above it in steps of 1/64, each
 * simulated, the least iteration kept (the first on ties). A search over those 17 plans, not an
 * exact optimum of the iteration. */
#include <string.h>

#include "cost.h"
#include "partition_impl.h"

#define SP_VSHAPE_SLACK_STEPS 16u

/* the simulated iteration of one candidate's plan */
static sp_status iteration_ms(sp_ctx *ctx, const struct sp_problem *pb, const size_t *bounds,
                              double *out) {
    sp_plan *plan = NULL;
    sp_status st = sp_plan_figures(ctx, pb->profile, pb->o, pb->d->speed, bounds, &plan);
    if (st == SP_OK)
        st = sp_plan_simulate(ctx, plan, pb->o->schedule);
    if (st == SP_OK)
        *out = plan->summary.schedule.iteration_ms;
    sp_plan_destroy(plan);
    return st;
}

sp_status sp_solve_vshape_iteration(sp_ctx *ctx, const struct sp_problem *pb,
                                    struct sp_solution *sol) {
    size_t K = 2 * (size_t)pb->o->stages;
    size_t *bounds = sp_mallocarray(K + 1, sizeof *bounds);
    size_t *last = sp_mallocarray(K + 1, sizeof *last);
    sp_status st = bounds && last ? SP_OK : sp_oom(ctx, "partitioning");
    bool have_last = false, have_best = false;
    double best_ms = 0;
    for (unsigned j = 0; st == SP_OK && j <= SP_VSHAPE_SLACK_STEPS; j++) {
        st = sp_vshape_bounds(ctx, pb, j, bounds);
        if (st != SP_OK || (have_last && !memcmp(bounds, last, (K + 1) * sizeof *bounds)))
            continue;
        memcpy(last, bounds, (K + 1) * sizeof *bounds);
        have_last = true;
        double ms = 0;
        st = iteration_ms(ctx, pb, bounds, &ms);
        if (st == SP_OK && (!have_best || ms < best_ms)) {
            best_ms = ms;
            have_best = true;
            memcpy(sol->bounds, bounds, (K + 1) * sizeof *bounds);
        }
    }
    sp_free(bounds);
    sp_free(last);
    sol->guarantee = SP_GUARANTEE_SEARCH; /* no bound on the iteration: the best of these plans */
    return st;
}

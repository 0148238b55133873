/* check/check.c: sp_check, the CI gate. A committed plan is re-evaluated on a freshly measured
 * profile and held to limits on its balance, its predicted iteration time against the one it
 * recorded, and its staleness (what a new plan of the same options would gain); optionally a run
 * report of the plan is held to the same imbalance and to a prediction error. */
#include <math.h>
#include <stdarg.h>
#include <string.h>

#include "check_impl.h"

void sp_check_opts_init(sp_check_opts *opts) {
    memset(opts, 0, sizeof *opts);
    opts->max_imbalance = 1.10;
    opts->max_regression = 0.05;
    opts->max_stale = 0.05;
    opts->max_prediction_error = 0.15;
}

void sp_check_destroy(sp_check_result *result) {
    if (!result)
        return;
    for (size_t i = 0; i < result->n; i++)
        sp_free(result->messages[i]);
    sp_free(result);
}

size_t sp_check_get_criterion_count(const sp_check_result *result) {
    return result ? result->n : 0;
}

const sp_check_criterion *sp_check_get_criterion(const sp_check_result *result, size_t i) {
    return result && i < result->n ? &result->criteria[i] : NULL;
}

size_t sp_check_get_failed_count(const sp_check_result *result) {
    size_t failed = 0;
    for (size_t i = 0; result && i < result->n; i++)
        failed += !result->criteria[i].passed && !result->criteria[i].skipped;
    return failed;
}

size_t sp_check_get_unattainable_count(const sp_check_result *result) {
    size_t n = 0;
    for (size_t i = 0; result && i < result->n; i++)
        n += !result->criteria[i].passed && !result->criteria[i].skipped &&
             !result->criteria[i].attainable;
    return n;
}

/* A criterion and its message: passed and skipped as given, the message formatted. */
SP_PRINTF(7, 8)
static bool add(sp_check_result *r, const char *name, bool passed, bool skipped, double value,
                double limit, const char *fmt, ...) {
    if (r->n >= SP_CHECK_MAX_CRITERIA)
        return false;
    struct sp_strbuf sb;
    sp_strbuf_init(&sb);
    va_list ap;
    va_start(ap, fmt);
    sp_strbuf_vprintf(&sb, fmt, ap);
    va_end(ap);
    if (sb.oom || !sb.buf) {
        sp_strbuf_release(&sb);
        return false;
    }
    r->messages[r->n] = sb.buf;
    r->criteria[r->n] =
        (sp_check_criterion){name, passed, skipped, value, limit, sb.buf, (double)NAN, true};
    r->n++;
    return true;
}

/* The criteria on the plan as it is now (`now`), as recorded (`committed`) and as a new plan
 * would be (`fresh`). */
static bool evaluate(sp_check_result *r, const sp_plan *committed, const sp_plan *now,
                     const sp_plan *fresh, double best, bool best_exact, const char *best_name,
                     const sp_check_opts *o) {
    const sp_plan_summary *c = sp_plan_get_summary(committed), *n = sp_plan_get_summary(now),
                          *f = sp_plan_get_summary(fresh);
    /* the gate against the best any plan of this stage count reaches: a plan that misses a gate
     * no plan can meet has not regressed, and the message says which it is */
    bool ok = true, pass = n->imbalance <= o->max_imbalance,
         attainable = !best_exact || best <= o->max_imbalance + 1e-9;
    const char *unit = n->chunks > 1 ? "device" : "stage";
    ok &=
        pass ? add(r, "imbalance", true, false, n->imbalance, o->max_imbalance,
                   "imbalance %.3f <= %.3f (bottleneck %.3f ms on %s %u, mean %.3f ms; %s "
                   "of %u stages: %.3f)",
                   n->imbalance, o->max_imbalance, n->bottleneck_ms, unit, n->bottleneck_stage,
                   n->mean_ms, best_name, n->stages, best)
        : attainable
            ? add(r, "imbalance", false, false, n->imbalance, o->max_imbalance,
                  "imbalance %.3f > %.3f (bottleneck %.3f ms on %s %u, mean %.3f ms): %s of %u "
                  "stages reaches %.3f%s",
                  n->imbalance, o->max_imbalance, n->bottleneck_ms, unit, n->bottleneck_stage,
                  n->mean_ms, best_exact ? "the plan is off balance, the optimal plan" : best_name,
                  n->stages, best,
                  best_exact ? ": run stagepart partition again and commit the plan"
                             : " (the least imbalance is not known: on devices and links a "
                               "split's mean stage time changes with it, and a search that "
                               "stopped proves no least)")
            : add(r, "imbalance", false, false, n->imbalance, o->max_imbalance,
                  "imbalance %.3f > %.3f (bottleneck %.3f ms on %s %u, mean %.3f ms): no plan "
                  "of %u stages meets this gate, the optimal one reaches %.3f: raise "
                  "--max-imbalance or change the stage count",
                  n->imbalance, o->max_imbalance, n->bottleneck_ms, unit, n->bottleneck_stage,
                  n->mean_ms, n->stages, best);
    if (r->n > 0 && strcmp(r->criteria[r->n - 1].name, "imbalance") == 0) {
        r->criteria[r->n - 1].best = best;
        r->criteria[r->n - 1].attainable = pass || attainable;
    }
    if (!c->schedule.present) {
        ok &= add(r, "regression", false, true, 0, 0,
                  "regression not checked: the plan records no simulated schedule");
    } else {
        double was = c->schedule.iteration_ms, is = n->schedule.iteration_ms;
        double change = was > 0 ? is / was - 1 : 0;
        pass = change <= o->max_regression;
        ok &= add(r, "regression", pass, false, change, o->max_regression,
                  "predicted iteration %.3f ms, recorded %.3f ms: %+.1f%% %s %.1f%% (%s, M = %u)",
                  is, was, sp_shown(100 * change, 1), pass ? "<=" : ">", 100 * o->max_regression,
                  sp_schedule_name(n->schedule.schedule), n->schedule.micro_batches);
    }
    double gain =
        f->schedule.iteration_ms > 0 ? n->schedule.iteration_ms / f->schedule.iteration_ms - 1 : 0;
    pass = gain <= o->max_stale;
    ok &= add(r, "staleness", pass, false, gain, o->max_stale,
              "a new plan would be %.1f%% faster (%.3f ms against %.3f ms) %s %.1f%%%s",
              sp_shown(100 * gain, 1), f->schedule.iteration_ms, n->schedule.iteration_ms,
              pass ? "<=" : ">", 100 * o->max_stale,
              pass ? "" : ": run stagepart partition again and commit the plan");
    const sp_run_report_summary *rep = o->report;
    if (rep) {
        pass = rep->measured_imbalance <= o->max_imbalance;
        ok &= add(r, "measured imbalance", pass, false, rep->measured_imbalance, o->max_imbalance,
                  "measured imbalance %.3f %s %.3f", rep->measured_imbalance, pass ? "<=" : ">",
                  o->max_imbalance);
        double err = rep->predicted_iteration_ms > 0
                         ? rep->measured_iteration_ms / rep->predicted_iteration_ms - 1
                         : 0;
        pass = err <= o->max_prediction_error && err >= -o->max_prediction_error;
        ok &= add(r, "prediction error", pass, false, err, o->max_prediction_error,
                  "measured iteration %.3f ms, predicted %.3f ms: %+.1f%% (limit +-%.1f%%)",
                  rep->measured_iteration_ms, rep->predicted_iteration_ms, sp_shown(100 * err, 1),
                  100 * o->max_prediction_error);
    }
    return ok;
}

/* A plan made for devices or links is only comparable on the same ones: SP_ERR_INVALID_ARG when
 * they are missing or name other devices than the plan's at the plan's device indices. */
static sp_status same_devices_and_links(sp_ctx *ctx, const sp_plan *plan, const char *plan_name,
                                        const sp_devices *list, const sp_links *links) {
    size_t n = sp_plan_get_stage_count(plan);
    const sp_plan_summary *m = sp_plan_get_summary(plan);
    const sp_stage *named = NULL;
    bool transfers = m->transfer_ms > 0;
    if (m->gpus && !links) /* replicated: all-reduces and transfers run over the links */
        return sp_fail(ctx, SP_ERR_INVALID_ARG,
                       "%s replicates stages on %u GPUs; give check the --links file it was "
                       "made with so its all-reduces compare",
                       plan_name, m->gpus);
    if (m->gpus && !list) /* its devices are named by the links */
        return SP_OK;
    for (size_t k = 0; k < n; k++) {
        const sp_stage *s = sp_plan_get_stage(plan, k);
        if (!named && s->device_name && *s->device_name)
            named = s;
        transfers |= s->comm_ms > 0;
    }
    if (named && !list)
        return sp_fail(ctx, SP_ERR_INVALID_ARG,
                       "%s was made for named devices (stage %u on '%s'); give check the same "
                       "--devices file so its stage times compare",
                       plan_name, named->index, named->device_name);
    for (uint32_t k = 0; named && k < m->stages; k++) {
        const sp_stage *s = sp_plan_get_stage(plan, k);
        const sp_device_info *d = sp_devices_get_device(list, s->device);
        if (!d || strcmp(d->name, s->device_name) != 0)
            return sp_fail(ctx, SP_ERR_INVALID_ARG,
                           "%s has stage %u on device %u, '%s'; the devices given have %s%s%s "
                           "there: give check the devices file the plan was made with",
                           plan_name, k, s->device, s->device_name, d ? "'" : "",
                           d ? d->name : "no such device", d ? "'" : "");
    }
    if (transfers && !links)
        return sp_fail(ctx, SP_ERR_INVALID_ARG,
                       "%s was made with links (%.3f ms of transfers); give check the same "
                       "--links file so its stage times compare",
                       plan_name, m->transfer_ms);
    return SP_OK;
}

/* the committed split (and replicas) on the profile as it is now */
static sp_status plan_now(sp_ctx *ctx, const sp_plan *plan, const sp_profile *profile,
                          const sp_partition_opts *popts, const size_t *first, sp_plan **now) {
    size_t n = sp_plan_get_stage_count(plan);
    if (!sp_plan_get_summary(plan)->gpus)
        return sp_plan_from_split(ctx, profile, popts, first, n, now);
    uint32_t *replicas = sp_mallocarray(n, sizeof *replicas);
    if (!replicas)
        return sp_oom(ctx, "checking the plan");
    for (size_t k = 0; k < n; k++)
        replicas[k] = sp_plan_get_stage(plan, k)->replicas;
    sp_status st = sp_plan_from_replicated_split(ctx, profile, popts, first, replicas, n, now);
    sp_free(replicas);
    return st;
}

/* The least imbalance a plan of the same stage count and options reaches: the new plan's when it
 * minimized the bottleneck (the mean stage time is the same for every split of the same work),
 * else a bottleneck-optimal plan's. */
static sp_status best_imbalance(sp_ctx *ctx, const sp_profile *profile,
                                const sp_partition_opts *popts, const sp_plan *fresh, double *best,
                                bool *proved) {
    const sp_plan_summary *f = sp_plan_get_summary(fresh);
    if (f->gpus || popts->objective == SP_OBJECTIVE_BOTTLENECK) {
        *best = f->imbalance;
        *proved = f->optimal; /* its solver's word (sp_plan_summary.guarantee) */
        return SP_OK;
    }
    sp_partition_opts o = *popts;
    o.objective = SP_OBJECTIVE_BOTTLENECK;
    sp_plan *plan = NULL;
    sp_status st = sp_partition(ctx, profile, &o, &plan);
    if (st == SP_OK) {
        *best = sp_plan_get_summary(plan)->imbalance;
        *proved = sp_plan_get_summary(plan)->optimal;
    }
    sp_plan_destroy(plan);
    return st;
}

sp_status sp_check(sp_ctx *ctx, const sp_plan *plan, const sp_profile *profile,
                   const sp_check_opts *opts, sp_check_result **out) {
    if (!ctx)
        return SP_ERR_INVALID_ARG;
    sp_ctx_begin(ctx);
    if (!plan || !profile || !opts || !out)
        return sp_fail(ctx, SP_ERR_INVALID_ARG, "sp_check: NULL argument");
    *out = NULL;
    const char *plan_name = opts->plan_name ? opts->plan_name : "the plan";
    const sp_devices *devices = opts->devices ? opts->devices : sp_profile_get_devices(profile);
    sp_status st = same_devices_and_links(ctx, plan, plan_name, devices, opts->links);
    if (st != SP_OK)
        return st;
    sp_check_result *r = sp_calloc(1, sizeof *r);
    size_t *first = sp_calloc(sp_plan_get_stage_count(plan), sizeof *first);
    sp_plan *now = NULL, *fresh = NULL;
    if (!r || !first) {
        st = sp_oom(ctx, "checking the plan");
        goto out;
    }
    st = sp_plan_remap(ctx, plan, profile, first);
    if (st == SP_ERR_SCHEMA) { /* the layers differ: the criterion fails, naming them */
        st = add(r, "layers match", false, false, 0, 0, "%s", sp_ctx_get_errmsg(ctx))
                 ? SP_OK
                 : sp_oom(ctx, "checking the plan");
        if (st == SP_OK)
            sp_ctx_begin(ctx);
        goto out;
    }
    if (st != SP_OK)
        goto out;
    if (!add(r, "layers match", true, false, 0, 0,
             "the profile's %zu layers match the plan's by name",
             sp_profile_get_layer_count(profile))) {
        st = sp_oom(ctx, "checking the plan");
        goto out;
    }
    sp_partition_opts popts;
    sp_plan_options(plan, &popts);
    popts.devices = opts->devices;
    popts.links = opts->links;
    if ((st = plan_now(ctx, plan, profile, &popts, first, &now)) != SP_OK)
        goto out;
    /* a new plan is an optimal one: a plan written by a baseline (an even split, parameters) or
     * given by the user (import-plan) is compared with the exact solver's, not with itself */
    if (popts.solver == SP_SOLVER_UNIFORM || popts.solver == SP_SOLVER_PARAMETERS ||
        popts.solver == SP_SOLVER_GIVEN)
        popts.solver = SP_SOLVER_DP;
    /* a new plan on as many GPUs as the replicated plan uses, or the same stage count */
    st =
        sp_plan_get_summary(plan)->gpus
            ? sp_partition_replicated(ctx, profile, &popts, sp_plan_get_summary(plan)->gpus, &fresh)
            : sp_partition(ctx, profile, &popts, &fresh);
    if (st != SP_OK)
        goto out;
    double best = 0;
    bool proved = false;
    if ((st = best_imbalance(ctx, profile, &popts, fresh, &best, &proved)) != SP_OK)
        goto out;
    /* the bottleneck-optimal plan has the least imbalance only where the mean stage time is the
     * same for every split (one device speed, no transfers, no replicas), and only when its
     * solver proved it the least bottleneck */
    bool exact = proved && !devices && !opts->links && !sp_plan_get_summary(plan)->gpus;
    const char *best_name = exact    ? "the optimal plan"
                            : proved ? "the bottleneck-optimal plan"
                                     : "the best plan found";
    if (!evaluate(r, plan, now, fresh, best, exact, best_name, opts))
        st = sp_oom(ctx, "checking the plan");
out:
    sp_free(first);
    sp_plan_destroy(now);
    sp_plan_destroy(fresh);
    if (st != SP_OK) {
        sp_check_destroy(r);
        return st;
    }
    *out = r;
    return SP_OK;
}

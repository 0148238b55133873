/* runtime/run_json.c: the public view of a run and its "stagepart-run-report" document. */
#include <cjson/cJSON.h>
#include <math.h>
#include <string.h>

#include "json_util.h"
#include "run_impl.h"

const sp_run_summary *sp_run_get_summary(const sp_run *run) {
    return run ? &run->summary : NULL;
}

const sp_run_stage *sp_run_get_stage(const sp_run *run, size_t i) {
    return run && i < run->summary.stages ? &run->stages[i] : NULL;
}

double sp_run_step_loss(const sp_run *run, size_t i) {
    return run && i < (size_t)run->summary.warmup_steps + run->summary.steps ? run->step_loss[i]
                                                                             : (double)NAN;
}

const sp_sim *sp_run_timeline(const sp_run *run) {
    return run ? run->timeline : NULL;
}

const float *sp_run_stage_params(const sp_run *run, size_t stage, size_t layer, size_t *count) {
    *count = 0;
    if (!run || !run->kept || stage >= run->summary.stages)
        return NULL;
    const struct sp_stage_exec *se = run->kept[stage];
    if (layer < se->first || layer > se->last)
        return NULL;
    *count = se->m->layers[layer].param_elems;
    return se->params[layer - se->first];
}

static bool num(cJSON *o, const char *k, double v) {
    return isfinite(v) ? cJSON_AddNumberToObject(o, k, v) != NULL
                       : cJSON_AddNullToObject(o, k) != NULL;
}

static cJSON *side(cJSON *root, const char *key, double iteration_ms, double imbalance,
                   double bubble) {
    cJSON *o = cJSON_AddObjectToObject(root, key);
    return o && num(o, "iteration_ms", iteration_ms) && num(o, "imbalance", imbalance) &&
                   num(o, "bubble_fraction", bubble)
               ? o
               : NULL;
}

sp_status sp_run_to_json(sp_ctx *ctx, const sp_run *run, char **out) {
    if (!ctx || !run || !out)
        return ctx ? sp_fail(ctx, SP_ERR_INVALID_ARG, "sp_run_to_json: NULL argument")
                   : SP_ERR_INVALID_ARG;
    sp_ctx_begin(ctx);
    *out = NULL;
    const sp_run_summary *S = &run->summary;
    cJSON *root = cJSON_CreateObject(), *meas = NULL, *pred = NULL, *err = NULL, *a = NULL;
    bool ok = root && cJSON_AddStringToObject(root, "format", "stagepart-run-report") &&
              num(root, "version", 1) && cJSON_AddStringToObject(root, "model", run->model_name) &&
              cJSON_AddStringToObject(root, "backend", sp_run_backend_name(S->backend)) &&
              cJSON_AddStringToObject(root, "transport", sp_transport_name(run->transport)) &&
              cJSON_AddStringToObject(root, "schedule", sp_schedule_name(S->schedule)) &&
              num(root, "stages", S->stages) && num(root, "micro_batches", S->micro_batches) &&
              num(root, "micro_batch_size", S->micro_batch_size) && num(root, "steps", S->steps) &&
              num(root, "warmup_steps", S->warmup_steps) && num(root, "cores", S->cores) &&
              cJSON_AddStringToObject(root, "clock",
                                      "monotonic wall clock per op; thread CPU clock over the "
                                      "compute (cpu_ms)") &&
              (meas = side(root, "measured", S->iteration_ms, S->imbalance, S->bubble_fraction)) &&
              num(meas, "optimizer_ms", run->optimizer_ms) &&
              (pred = side(root, "predicted", S->predicted_iteration_ms, S->predicted_imbalance,
                           S->predicted_bubble_fraction)) &&
              cJSON_AddStringToObject(pred, "source",
                                      "the plan's stage times, simulated with the run's schedule "
                                      "and micro-batches");
    cJSON *ms = ok ? cJSON_AddArrayToObject(meas, "stages") : NULL;
    cJSON *psx = ok ? cJSON_AddArrayToObject(pred, "stages") : NULL;
    ok = ok && ms && psx;
    for (uint32_t s = 0; ok && s < S->stages; s++) {
        const sp_run_stage *r = &run->stages[s];
        double cpu = 0.0;
        for (uint32_t k = 0; k < S->steps; k++)
            cpu += run->stats[(size_t)(S->warmup_steps + k) * S->stages + s].cpu_ms / S->steps;
        cJSON *o = cJSON_CreateObject(), *p = cJSON_CreateObject();
        ok = o && p && cJSON_AddItemToArray(ms, o) && cJSON_AddItemToArray(psx, p) &&
             num(o, "stage", s) && num(o, "core", r->core) && num(o, "device", r->device) &&
             num(o, "sms", r->sms) && num(o, "busy_ms", r->busy_ms) &&
             num(o, "busy_per_micro_batch_ms", r->busy_ms / S->micro_batches) &&
             num(o, "fwd_ms", r->fwd_ms) && num(o, "bwd_ms", r->bwd_ms) && num(o, "cpu_ms", cpu) &&
             num(o, "wait_prev_ms", r->wait_prev_ms) && num(o, "wait_next_ms", r->wait_next_ms) &&
             num(o, "send_wait_ms", r->send_wait_ms) && num(o, "transfer_ms", r->transfer_ms) &&
             num(o, "transfer_bytes", (double)r->transfer_bytes) &&
             num(o, "peak_inflight", r->peak_inflight) &&
             num(o, "peak_memory_bytes", (double)r->peak_memory_bytes) && num(p, "stage", s) &&
             num(p, "busy_ms", r->predicted_busy_ms) &&
             num(p, "time_ms", run->predicted_time_ms[s]);
        if (!o || !p) {
            cJSON_Delete(o);
            cJSON_Delete(p);
        }
    }
    cJSON *losses = NULL;
    ok =
        ok && (err = cJSON_AddObjectToObject(root, "relative_error")) &&
        num(err, "iteration_ms", S->iteration_error) &&
        num(err, "imbalance",
            S->predicted_imbalance > 0 ? S->imbalance / S->predicted_imbalance - 1 : (double)NAN) &&
        num(err, "max_stage_busy", S->max_stage_error) &&
        (a = cJSON_AddArrayToObject(err, "stages")) &&
        cJSON_AddBoolToObject(root, "balance_held", S->balance_held) &&
        cJSON_AddStringToObject(root, "balance_rule",
                                "every stage's busy time within 10% of the plan's, and the "
                                "iteration within 15% of the simulated one") &&
        (losses = cJSON_AddArrayToObject(root, "loss"));
    for (uint32_t s = 0; ok && s < S->stages; s++) {
        cJSON *v = cJSON_CreateNumber(run->stages[s].busy_error);
        ok = v && cJSON_AddItemToArray(a, v);
    }
    for (uint32_t k = 0; ok && k < S->warmup_steps + S->steps; k++) {
        cJSON *v = cJSON_CreateNumber(run->step_loss[k]);
        ok = v && cJSON_AddItemToArray(losses, v);
    }
    sp_status st =
        ok ? sp_json_print(ctx, root, "the run report", out) : sp_oom(ctx, "the run report");
    cJSON_Delete(root);
    return st;
}

/* formats/run_report.c: the "stagepart-run-report" document: written from what `stagepart run`
 * measured (sp_run_report_to_json), and read back for the figures `check --report` gates (the
 * measured and predicted iteration time and imbalance). */
#include <math.h>

#include "json_util.h"
#include "run_report_doc.h"

#define SP_REPORT_MAX_FILE_BYTES ((size_t)256 << 20)

static void read_side(struct sp_json_reader *r, const cJSON *root, const char *key,
                      double *iteration_ms, double *imbalance) {
    const cJSON *o = cJSON_GetObjectItemCaseSensitive(root, key);
    if (!cJSON_IsObject(o)) {
        sp_json_problem(r, "", key, "expected an object with iteration_ms and imbalance");
        return;
    }
    sp_json_get_number(r, o, key, "iteration_ms", true, 0, (double)INFINITY, iteration_ms);
    sp_json_get_number(r, o, key, "imbalance", true, 1, (double)INFINITY, imbalance);
}

sp_status sp_run_report_load(sp_ctx *ctx, const char *path, sp_run_report_summary *out) {
    if (!ctx)
        return SP_ERR_INVALID_ARG;
    sp_ctx_begin(ctx);
    if (!path || !out)
        return sp_fail(ctx, SP_ERR_INVALID_ARG, "sp_run_report_load: NULL argument");
    char *data = NULL;
    size_t len = 0;
    sp_status st = sp_read_file(ctx, path, SP_REPORT_MAX_FILE_BYTES, &data, &len);
    if (st != SP_OK)
        return st;
    cJSON *root = NULL;
    st = sp_json_parse(ctx, path, data, len, &root);
    sp_free(data);
    if (st != SP_OK)
        return st;
    struct sp_json_reader r = {ctx, path};
    if (!cJSON_IsObject(root))
        sp_json_problem(&r, "", "", "expected a JSON object at the top level");
    else if (sp_json_check_header(&r, root, "stagepart-run-report", 1)) {
        read_side(&r, root, "measured", &out->measured_iteration_ms, &out->measured_imbalance);
        read_side(&r, root, "predicted", &out->predicted_iteration_ms, &out->predicted_imbalance);
    }
    cJSON_Delete(root);
    if (ctx->problems) {
        sp_problems_finish(ctx);
        ctx->status = SP_ERR_SCHEMA;
        return SP_ERR_SCHEMA;
    }
    return SP_OK;
}

/* ---- writing: what `stagepart run` measured, beside what the plan predicted */

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

sp_status sp_run_report_to_json(sp_ctx *ctx, const struct sp_run_report_doc *run, char **out) {
    *out = NULL;
    const sp_run_summary *S = run->summary;
    cJSON *root = cJSON_CreateObject(), *meas = NULL, *pred = NULL, *err = NULL, *a = NULL;
    bool ok = root && cJSON_AddStringToObject(root, "format", "stagepart-run-report") &&
              num(root, "version", 1) && cJSON_AddStringToObject(root, "model", run->model) &&
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
              cJSON_AddBoolToObject(meas, "isolated", S->isolated) &&
              cJSON_AddBoolToObject(meas, "shared_hardware", S->shared_hardware) &&
              cJSON_AddBoolToObject(meas, "unmatched_sms", S->unmatched_sms) &&
              cJSON_AddBoolToObject(meas, "nccl", S->nccl) &&
              num(meas, "planned_sms", S->planned_sms) &&
              (!S->isolated || num(meas, "replayed_iteration_ms", S->replayed_iteration_ms)) &&
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
        cJSON *o = cJSON_CreateObject(), *p = cJSON_CreateObject();
        ok = o && p && cJSON_AddItemToArray(ms, o) && cJSON_AddItemToArray(psx, p) &&
             num(o, "stage", s) && num(o, "core", r->core) && num(o, "device", r->device) &&
             cJSON_AddStringToObject(o, "host", r->host) && num(o, "sms", r->sms) &&
             num(o, "busy_ms", r->busy_ms) &&
             num(o, "busy_per_micro_batch_ms", r->busy_ms / S->micro_batches) &&
             num(o, "fwd_ms", r->fwd_ms) && num(o, "bwd_ms", r->bwd_ms) &&
             num(o, "cpu_ms", run->stage_cpu_ms[s]) && num(o, "wait_prev_ms", r->wait_prev_ms) &&
             num(o, "wait_next_ms", r->wait_next_ms) && num(o, "send_wait_ms", r->send_wait_ms) &&
             num(o, "transfer_ms", r->transfer_ms) &&
             num(o, "transfer_bytes", (double)r->transfer_bytes) &&
             num(o, "peak_inflight", r->peak_inflight) &&
             num(o, "peak_memory_bytes", (double)r->peak_memory_bytes) &&
             (r->replicas <= 1 || num(o, "replicas", r->replicas)) && num(p, "stage", s) &&
             num(p, "busy_ms", r->predicted_busy_ms) &&
             num(p, "memory_bytes", (double)r->predicted_memory_bytes) &&
             num(p, "time_ms", run->predicted_time_ms[s]);
        if (!o || !p) {
            cJSON_Delete(o);
            cJSON_Delete(p);
        }
    }
    cJSON *losses = NULL, *shares = NULL;
    ok =
        ok && (err = cJSON_AddObjectToObject(root, "relative_error")) &&
        num(err, "iteration_ms", S->iteration_error) &&
        num(err, "imbalance",
            S->predicted_imbalance > 0 ? S->imbalance / S->predicted_imbalance - 1 : (double)NAN) &&
        num(err, "max_stage_busy", S->max_stage_error) &&
        (a = cJSON_AddArrayToObject(err, "stages")) && num(err, "slowdown", S->slowdown) &&
        num(err, "max_stage_share", S->max_share_error) &&
        num(err, "iteration_ms_at_this_speed", S->scaled_iteration_error) &&
        (shares = cJSON_AddArrayToObject(err, "stage_shares")) &&
        cJSON_AddBoolToObject(root, "balance_held", S->balance_held) &&
        cJSON_AddStringToObject(root, "balance_rule",
                                "every stage's share of the busy time within 10% of its planned "
                                "share (its busy time over the plan's, divided by the run's "
                                "slowdown), and the iteration within 15% of the simulated one "
                                "times the slowdown") &&
        (losses = cJSON_AddArrayToObject(root, "loss"));
    for (uint32_t s = 0; ok && s < S->stages; s++) {
        cJSON *v = cJSON_CreateNumber(run->stages[s].busy_error);
        ok = v && cJSON_AddItemToArray(a, v);
        cJSON *w = ok ? cJSON_CreateNumber(run->stages[s].share_error) : NULL;
        ok = ok && w && cJSON_AddItemToArray(shares, w);
    }
    for (uint32_t k = 0; ok && k < S->warmup_steps + S->steps; k++) {
        cJSON *v = cJSON_CreateNumber(run->step_loss[k]);
        ok = v && cJSON_AddItemToArray(losses, v);
    }
    sp_status st =
        ok ? sp_json_print(ctx, root, 0, "the run report", out) : sp_oom(ctx, "the run report");
    cJSON_Delete(root);
    return st;
}

/* formats/run_report_read.c: reading the figures `check --report` gates from a
 * "stagepart-run-report" (written by `stagepart run`): the measured and predicted iteration time
 * and imbalance. */
#include <math.h>

#include "json_util.h"

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

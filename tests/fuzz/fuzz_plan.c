/* fuzz_plan: sp_plan_parse on any bytes; a plan that parses is exported to every format and
 * written back out (the readers' checks must leave nothing the writers cannot handle). */
#include "fuzz_util.h"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void export_all(sp_ctx *ctx, const sp_plan *plan) {
    for (int f = 0;; f++) {
        if (!sp_export_format_name((sp_export_format)f))
            break;
        char *text = NULL, *value = NULL;
        sp_status st = sp_plan_export(ctx, plan, (sp_export_format)f, "model.", &text, &value);
        fuzz_require_message(ctx, st);
        sp_free(text);
        sp_free(value);
    }
    char *json = NULL;
    fuzz_require_message(ctx, sp_plan_to_json(ctx, plan, &json));
    sp_free(json);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = fuzz_cstring(data, size);
    sp_ctx *ctx = NULL;
    if (text && sp_ctx_create(&ctx) == SP_OK) {
        sp_plan *plan = NULL;
        sp_status st = sp_plan_parse(ctx, "input", text, size, &plan);
        fuzz_require_message(ctx, st);
        if (st == SP_OK)
            export_all(ctx, plan);
        sp_plan_destroy(plan);
    }
    sp_ctx_destroy(ctx);
    free(text);
    return 0;
}

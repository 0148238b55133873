/* fuzz_profile: sp_profile_parse on any bytes; a profile that parses is partitioned, and the
 * plan the library writes must read back (what one stage writes, the next must accept). */
#include "fuzz_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { FUZZ_MAX_PARTITION_LAYERS = 64 }; /* keep each execution fast */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void partition_and_reread(sp_ctx *ctx, const sp_profile *profile) {
    size_t n = sp_profile_layer_count(profile);
    if (n == 0 || n > FUZZ_MAX_PARTITION_LAYERS)
        return;
    sp_partition_opts opts;
    sp_partition_opts_init(&opts);
    opts.stages = n < 4 ? n : 4;
    sp_plan *plan = NULL;
    sp_status st = sp_partition(ctx, profile, &opts, &plan);
    fuzz_require_message(ctx, st);
    if (st != SP_OK)
        return;
    char *json = NULL;
    st = sp_plan_to_json(ctx, plan, &json);
    fuzz_require_message(ctx, st);
    if (st == SP_OK) {
        sp_plan *again = NULL;
        sp_status reread = sp_plan_parse(ctx, "plan", json, strlen(json), &again);
        if (reread != SP_OK && reread != SP_ERR_NOMEM) {
            /* the writer produced a plan its own reader rejects: say why, then trap */
            fprintf(stderr, "plan does not read back: %s\n%s\n", sp_ctx_errmsg(ctx), json);
            __builtin_trap();
        }
        sp_plan_destroy(again);
        sp_free(json);
    }
    sp_plan_destroy(plan);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = fuzz_cstring(data, size);
    sp_ctx *ctx = NULL;
    if (text && sp_ctx_create(&ctx) == SP_OK) {
        sp_profile *profile = NULL;
        sp_status st = sp_profile_parse(ctx, "input", text, size, &profile);
        fuzz_require_message(ctx, st);
        if (st == SP_OK)
            partition_and_reread(ctx, profile);
        sp_profile_destroy(profile);
    }
    sp_ctx_destroy(ctx);
    free(text);
    return 0;
}

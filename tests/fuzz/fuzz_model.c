/* fuzz_model: sp_model_parse on any bytes; a model that parses and is small is profiled once
 * (one forward and one backward of every layer), so ASan checks that every op reads and writes
 * only the elements its bound shape gave it, for whatever sizes the input names. */
#include "fuzz_util.h"

#include <stdlib.h>
#include <string.h>

enum { FUZZ_MAX_FLOATS = 1 << 18 }; /* weights and saved tensors: keep each execution fast */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = fuzz_cstring(data, size);
    sp_ctx *ctx = NULL;
    if (text && sp_ctx_create(&ctx) == SP_OK) {
        sp_model *model = NULL;
        sp_status st = sp_model_parse(ctx, "input", text, size, &model);
        fuzz_require_message(ctx, st);
        uint64_t floats = 0;
        sp_model_layer_info li;
        for (size_t i = 0; model && sp_model_get_layer(model, i, &li); i++)
            floats += (li.param_bytes + li.saved_bytes + li.activation_bytes) / 4;
        if (st == SP_OK && floats <= FUZZ_MAX_FLOATS) {
            sp_model_profile_opts opts;
            sp_model_profile_opts_init(&opts);
            opts.warmup = 0;
            opts.iters = 1;
            char *json = NULL;
            st = sp_model_profile_cpu(ctx, model, &opts, &json, NULL, NULL);
            fuzz_require_message(ctx, st);
            if (st == SP_OK) {
                sp_profile *profile = NULL; /* what the profiler writes, the partitioner reads */
                sp_status reread = sp_profile_parse(ctx, "profile", json, strlen(json), &profile);
                if (reread != SP_OK && reread != SP_ERR_NOMEM)
                    __builtin_trap();
                sp_profile_destroy(profile);
            }
            sp_free(json);
        }
        sp_model_destroy(model);
    }
    sp_ctx_destroy(ctx);
    free(text);
    return 0;
}

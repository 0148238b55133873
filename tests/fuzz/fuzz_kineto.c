/* fuzz_kineto: sp_trace_parse_kineto on any bytes; a trace that parses is attributed and made a
 * profile, and that profile must read back as one. */
#include "fuzz_util.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = fuzz_cstring(data, size);
    sp_ctx *ctx = NULL;
    if (text && sp_ctx_create(&ctx) == SP_OK) {
        sp_trace *trace = NULL;
        sp_status st = sp_trace_parse_kineto(ctx, "input", text, size, &trace);
        fuzz_require_message(ctx, st);
        if (st == SP_OK) {
            sp_trace_profile_opts opts;
            sp_trace_profile_opts_init(&opts);
            char *json = NULL;
            st = sp_trace_to_profile(ctx, trace, &opts, &json, NULL);
            fuzz_require_message(ctx, st);
            if (st == SP_OK) { /* what the importer writes, the profile reader takes */
                sp_profile *p = NULL;
                if (sp_profile_parse(ctx, "profile", json, strlen(json), &p) != SP_OK)
                    __builtin_trap();
                sp_profile_destroy(p);
            }
            sp_free(json);
        }
        sp_trace_destroy(trace);
    }
    sp_ctx_destroy(ctx);
    free(text);
    return 0;
}

/* fuzz_nsys: sp_trace_load_nsys on any bytes written to a file (SQLite reads files); a trace
 * that loads is attributed and made a profile, which must read back as one. Seeds are small
 * databases in the documented schema (tests/tools/make_traces.py). */
#include "fuzz_util.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *path = fuzz_temp_file(data, size);
    sp_ctx *ctx = NULL;
    if (path && sp_ctx_create(&ctx) == SP_OK) {
        sp_trace *trace = NULL;
        sp_status st = sp_trace_load_nsys(ctx, path, &trace);
        fuzz_require_message(ctx, st);
        if (st == SP_OK) {
            sp_trace_profile_opts opts;
            sp_trace_profile_opts_init(&opts);
            char *json = NULL;
            st = sp_trace_to_profile(ctx, trace, &opts, &json, NULL);
            fuzz_require_message(ctx, st);
            if (st == SP_OK) {
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
    return 0;
}

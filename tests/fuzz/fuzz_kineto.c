/* fuzz_kineto: sp_trace_parse_kineto on any bytes; a trace that parses is attributed and made a
 * profile, and that profile must read back as one. */
#include "fuzz_util.h"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = fuzz_cstring(data, size);
    sp_ctx *ctx = NULL;
    if (text && sp_ctx_create(&ctx) == SP_OK) {
        sp_trace *trace = NULL;
        sp_status st = sp_trace_parse_kineto(ctx, "input", text, size, &trace);
        fuzz_require_message(ctx, st);
        if (st == SP_OK)
            fuzz_check_trace(ctx, trace);
        sp_trace_destroy(trace);
    }
    sp_ctx_destroy(ctx);
    free(text);
    return 0;
}

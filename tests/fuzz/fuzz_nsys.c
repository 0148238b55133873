/* fuzz_nsys: sp_trace_load_nsys on any bytes written to a file (SQLite reads files); a trace
 * that loads is attributed and made a profile, which must read back as one. Seeds are small
 * databases in the documented schema (tests/fuzz/seeds/nsys/). */
#include "fuzz_util.h"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *path = fuzz_temp_file(data, size);
    sp_ctx *ctx = NULL;
    if (path && sp_ctx_create(&ctx) == SP_OK) {
        sp_trace *trace = NULL;
        sp_status st = sp_trace_load_nsys(ctx, path, &trace);
        fuzz_require_message(ctx, st);
        if (st == SP_OK)
            fuzz_check_trace(ctx, trace);
        sp_trace_destroy(trace);
    }
    sp_ctx_destroy(ctx);
    return 0;
}

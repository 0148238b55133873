/* fuzz_events: sp_trace_load_events on any bytes written to a file; a trace that loads is
 * attributed and made a profile, which must read back as one. Seeds are small logs in the
 * documented layout (profiler/event_log.h), written by tests/tools/make_event_logs.py. */
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *path = fuzz_temp_file(data, size);
    sp_ctx *ctx = NULL;
    if (path && sp_ctx_create(&ctx) == SP_OK) {
        sp_trace *trace = NULL;
        const char *paths[] = {path};
        sp_status st = sp_trace_load_events(ctx, paths, 1, &trace);
        fuzz_require_message(ctx, st);
        if (st == SP_OK)
            fuzz_check_trace(ctx, trace);
        sp_trace_destroy(trace);
    }
    sp_ctx_destroy(ctx);
    return 0;
}

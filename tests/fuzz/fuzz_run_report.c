/* fuzz_run_report: sp_run_report_load (what `stagepart check --report` reads) on any bytes,
 * through a temporary file. */
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *path = fuzz_temp_file(data, size);
    sp_ctx *ctx = NULL;
    if (path && sp_ctx_create(&ctx) == SP_OK) {
        sp_run_report_summary summary;
        fuzz_require_message(ctx, sp_run_report_load(ctx, path, &summary));
    }
    sp_ctx_destroy(ctx);
    return 0;
}

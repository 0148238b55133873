/* fuzz_bytes: sp_parse_bytes, the reader of --memory-limit and other byte-count option values. */
#include "fuzz_util.h"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = fuzz_cstring(data, size);
    sp_ctx *ctx = NULL;
    if (text && sp_ctx_create(&ctx) == SP_OK) {
        uint64_t bytes = 0;
        fuzz_require_message(ctx, sp_parse_bytes(ctx, text, &bytes));
    }
    sp_ctx_destroy(ctx);
    free(text);
    return 0;
}

/* fuzz_links: sp_links_parse on any bytes; links that parse answer a transfer-time query for
 * every pair. */
#include "fuzz_util.h"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = fuzz_cstring(data, size);
    sp_ctx *ctx = NULL;
    if (text && sp_ctx_create(&ctx) == SP_OK) {
        sp_links *links = NULL;
        sp_status st = sp_links_parse(ctx, "input", text, size, &links);
        fuzz_require_message(ctx, st);
        if (st == SP_OK) {
            size_t n = sp_links_get_count(links);
            for (size_t i = 0; i < n && i < 16; i++)
                for (size_t j = 0; j < n && j < 16; j++)
                    if (sp_links_transfer_ms(links, i, j, UINT64_C(1) << 20) < 0)
                        __builtin_trap(); /* a transfer never takes negative time */
        }
        sp_links_destroy(links);
    }
    sp_ctx_destroy(ctx);
    free(text);
    return 0;
}

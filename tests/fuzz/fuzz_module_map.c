/* fuzz_module_map: sp_module_map_parse on any bytes; a map that parses finds each of its
 * entries by path and by instance name. */
#include "fuzz_util.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = fuzz_cstring(data, size);
    sp_ctx *ctx = NULL;
    if (text && sp_ctx_create(&ctx) == SP_OK) {
        sp_module_map *map = NULL;
        sp_status st = sp_module_map_parse(ctx, "input", text, size, &map);
        fuzz_require_message(ctx, st);
        for (size_t i = 0; st == SP_OK && i < sp_module_map_get_count(map) && i < 64; i++) {
            const sp_module_entry *e = sp_module_map_get(map, i);
            const sp_module_entry *by_path = sp_module_map_find(map, e->path);
            if (!by_path || strcmp(by_path->path, e->path) != 0)
                __builtin_trap(); /* paths are unique: the path finds its own entry */
            if (e->instance && !sp_module_map_find(map, e->instance))
                __builtin_trap();
        }
        sp_module_map_destroy(map);
    }
    sp_ctx_destroy(ctx);
    free(text);
    return 0;
}

/* fuzz_devices: sp_devices_load on any bytes (the reader takes a path, so the bytes go through
 * a temporary file, as a user's file would). */
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *path = fuzz_temp_file(data, size);
    sp_ctx *ctx = NULL;
    if (path && sp_ctx_create(&ctx) == SP_OK) {
        sp_devices *devices = NULL;
        sp_status st = sp_devices_load(ctx, path, &devices);
        fuzz_require_message(ctx, st);
        if (st == SP_OK)
            for (size_t i = 0; i < sp_devices_get_count(devices); i++)
                if (!sp_devices_get_device(devices, i))
                    __builtin_trap();
        sp_devices_destroy(devices);
    }
    sp_ctx_destroy(ctx);
    return 0;
}

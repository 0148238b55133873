/* fuzz_profile: sp_profile_parse on any bytes; a profile that parses is partitioned, once with
 * the defaults and once on the slowest devices and links the readers accept with blocking
 * transfers, and every plan the library writes must read back (what one stage writes, the next
 * must accept). */
#include "fuzz_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { FUZZ_MAX_PARTITION_LAYERS = 64 }; /* keep each execution fast */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* four devices at the speed bounds and between, joined by links at the bandwidth and latency
 * bounds (1 MB/s, 10 s) and an ordinary one */
static const char k_devices[] =
    "{\"format\": \"stagepart-devices\", \"version\": 1, \"devices\": ["
    "{\"name\": \"a\", \"speed\": 0.001}, {\"name\": \"b\", \"speed\": 1000},"
    "{\"name\": \"c\", \"speed\": 0.5, \"memory_bytes\": 1000000}, {\"name\": \"d\"}]}";
static const char k_links[] =
    "{\"format\": \"stagepart-links\", \"version\": 1, \"devices\": [\"a\", \"b\", \"c\", \"d\"],"
    "\"bandwidth_GBps\": [[0, 0.001, 0.001, 1], [0.001, 0, 300, 1], [0.001, 300, 0, 1],"
    " [1, 1, 1, 0]],"
    "\"latency_us\": [[0, 1e7, 1e7, 5], [1e7, 0, 5, 5], [1e7, 5, 0, 5], [5, 5, 5, 0]]}";

static sp_devices *slow_devices(sp_ctx *ctx) {
    static sp_devices *devices; /* loaded once, kept for the process */
    if (!devices) {
        const char *path = fuzz_temp_file((const uint8_t *)k_devices, sizeof k_devices - 1);
        if (!path || sp_devices_load(ctx, path, &devices) != SP_OK)
            __builtin_trap(); /* the fixed file must load */
    }
    return devices;
}

static sp_links *slow_links(sp_ctx *ctx) {
    static sp_links *links;
    if (!links && sp_links_parse(ctx, "links", k_links, sizeof k_links - 1, &links) != SP_OK)
        __builtin_trap();
    return links;
}

static void partition_and_reread(sp_ctx *ctx, const sp_profile *profile,
                                 const sp_partition_opts *opts) {
    sp_plan *plan = NULL;
    sp_status st = sp_partition(ctx, profile, opts, &plan);
    fuzz_require_message(ctx, st);
    if (st != SP_OK)
        return;
    char *json = NULL;
    st = sp_plan_to_json(ctx, plan, &json);
    fuzz_require_message(ctx, st);
    if (st == SP_OK) {
        sp_plan *again = NULL;
        sp_status reread = sp_plan_parse(ctx, "plan", json, strlen(json), &again);
        if (reread != SP_OK && reread != SP_ERR_NOMEM) {
            /* the writer produced a plan its own reader rejects: say why, then trap */
            fprintf(stderr, "plan does not read back: %s\n%s\n", sp_ctx_get_errmsg(ctx), json);
            __builtin_trap();
        }
        sp_plan_destroy(again);
        sp_free(json);
    }
    sp_plan_destroy(plan);
}

static void partition_both_ways(sp_ctx *ctx, const sp_profile *profile) {
    size_t n = sp_profile_get_layer_count(profile);
    if (n == 0 || n > FUZZ_MAX_PARTITION_LAYERS)
        return;
    sp_partition_opts opts;
    sp_partition_opts_init(&opts);
    opts.stages = n < 4 ? (uint32_t)n : 4;
    partition_and_reread(ctx, profile, &opts);
    opts.devices = slow_devices(ctx);
    opts.links = slow_links(ctx);
    opts.comm = SP_COMM_BLOCKING;
    partition_and_reread(ctx, profile, &opts);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = fuzz_cstring(data, size);
    sp_ctx *ctx = NULL;
    if (text && sp_ctx_create(&ctx) == SP_OK) {
        sp_profile *profile = NULL;
        sp_status st = sp_profile_parse(ctx, "input", text, size, &profile);
        fuzz_require_message(ctx, st);
        if (st == SP_OK)
            partition_both_ways(ctx, profile);
        sp_profile_destroy(profile);
    }
    sp_ctx_destroy(ctx);
    free(text);
    return 0;
}

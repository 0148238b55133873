/* fuzz_megatron_layout: sp_megatron_layout_split on any string, against a fixed small profile
 * (embedding, six transformer layers, head, loss); a layout that is accepted must describe a
 * split into contiguous segments starting at layer 0 (empty ones included, as Megatron allows),
 * make a plan, and export back to a layout that reads as the same split. */
#include "fuzz_util.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char profile_json[] =
    "{\"format\":\"stagepart-profile\",\"version\":1,\"model\":\"fuzz\",\"micro_batch_size\":1,"
    "\"layers\":["
    "{\"name\":\"embedding\",\"kind\":\"embedding\",\"fwd_ms\":0.1,\"bwd_ms\":0.2},"
    "{\"name\":\"layers.0\",\"kind\":\"transformer\",\"fwd_ms\":1,\"bwd_ms\":2},"
    "{\"name\":\"layers.1\",\"kind\":\"transformer\",\"fwd_ms\":1,\"bwd_ms\":2},"
    "{\"name\":\"layers.2\",\"kind\":\"transformer\",\"fwd_ms\":1,\"bwd_ms\":2},"
    "{\"name\":\"layers.3\",\"kind\":\"transformer\",\"fwd_ms\":1,\"bwd_ms\":2},"
    "{\"name\":\"layers.4\",\"kind\":\"transformer\",\"fwd_ms\":1,\"bwd_ms\":2},"
    "{\"name\":\"layers.5\",\"kind\":\"transformer\",\"fwd_ms\":1,\"bwd_ms\":2},"
    "{\"name\":\"lm_head\",\"kind\":\"head\",\"fwd_ms\":0.5,\"bwd_ms\":1},"
    "{\"name\":\"loss\",\"kind\":\"loss\",\"fwd_ms\":0.1,\"bwd_ms\":0.1}]}";

static sp_profile *profile;

/* the split as a plan of `count` one-chunk stages, exported, read back: the same split */
static void round_trip(sp_ctx *ctx, const size_t *first, size_t count) {
    sp_partition_opts o;
    sp_partition_opts_init(&o);
    o.stages = (uint32_t)count;
    o.micro_batches = 1;
    o.allow_empty_stages = true;
    sp_plan *plan = NULL;
    if (sp_plan_from_split(ctx, profile, &o, first, count, &plan) != SP_OK)
        __builtin_trap(); /* an accepted layout is a split */
    char *text = NULL, *value = NULL;
    if (sp_plan_export(ctx, plan, SP_EXPORT_MEGATRON, NULL, &text, &value) != SP_OK)
        __builtin_trap();            /* ... that Megatron's layout writes */
    value[strlen(value) - 1] = '\0'; /* a JSON string: the layout between the quotes */
    size_t *back = NULL, n_back = 0;
    if (sp_megatron_layout_split(ctx, profile, value + 1, &back, &n_back) != SP_OK ||
        n_back != count || memcmp(back, first, count * sizeof *first) != 0)
        __builtin_trap();
    sp_free(back);
    sp_free(text);
    sp_free(value);
    sp_plan_destroy(plan);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    sp_ctx *ctx = NULL;
    if (sp_ctx_create(&ctx) != SP_OK)
        return 0;
    if (!profile &&
        sp_profile_parse(ctx, "fuzz", profile_json, strlen(profile_json), &profile) != SP_OK)
        __builtin_trap(); /* the fixed profile is valid */
    char *layout = fuzz_cstring(data, size);
    if (layout) {
        size_t *first = NULL, count = 0;
        sp_status st = sp_megatron_layout_split(ctx, profile, layout, &first, &count);
        fuzz_require_message(ctx, st);
        if (st == SP_OK) {
            size_t n = sp_profile_get_layer_count(profile);
            if (count == 0 || first[0] != 0)
                __builtin_trap();
            for (size_t i = 1; i < count; i++)
                if (first[i] < first[i - 1] || first[i] > n)
                    __builtin_trap();
            if (count <= SP_MAX_STAGES)
                round_trip(ctx, first, count);
        }
        sp_free(first);
        free(layout);
    }
    sp_ctx_destroy(ctx);
    return 0;
}

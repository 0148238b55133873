/* check/remap.c: sp_plan_remap, a committed plan's stages matched to a changed profile by layer
 * name, so `check` can re-evaluate the same split on new measurements. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "plan_impl.h"

/* name -> index in a profile, for matching plans to changed profiles */
struct name_index {
    size_t cap;
    size_t *slot; /* layer index or SIZE_MAX */
};

static uint64_t fnv(const char *s) {
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static size_t name_find(const struct name_index *ix, const sp_profile *p, const char *name) {
    size_t k = (size_t)fnv(name) & (ix->cap - 1);
    while (ix->slot[k] != SIZE_MAX) {
        if (strcmp(sp_profile_get_layer(p, ix->slot[k])->name, name) == 0)
            return ix->slot[k];
        k = (k + 1) & (ix->cap - 1);
    }
    return SIZE_MAX;
}

sp_status sp_plan_remap(sp_ctx *ctx, const sp_plan *plan, const sp_profile *profile,
                        size_t *first_layers) {
    if (!ctx)
        return SP_ERR_INVALID_ARG;
    sp_ctx_begin(ctx);
    if (!plan || !profile || !first_layers)
        return sp_fail(ctx, SP_ERR_INVALID_ARG, "sp_plan_remap: NULL argument");
    if (!plan->layer_names)
        return sp_fail(ctx, SP_ERR_SCHEMA,
                       "the plan records no layer names (made by an older stagepart?); "
                       "partition again to check it against a profile");
    size_t n = sp_profile_get_layer_count(profile);
    struct name_index ix = {16, NULL};
    while (ix.cap < 2 * n)
        ix.cap *= 2;
    ix.slot = sp_mallocarray(ix.cap, sizeof *ix.slot);
    bool *seen = sp_calloc(n, sizeof *seen);
    if (!ix.slot || !seen) {
        sp_free(ix.slot);
        sp_free(seen);
        return sp_oom(ctx, "matching layers");
    }
    for (size_t k = 0; k < ix.cap; k++)
        ix.slot[k] = SIZE_MAX;
    for (size_t l = 0; l < n; l++) {
        size_t k = (size_t)fnv(sp_profile_get_layer(profile, l)->name) & (ix.cap - 1);
        while (ix.slot[k] != SIZE_MAX)
            k = (k + 1) & (ix.cap - 1);
        ix.slot[k] = l;
    }
    unsigned removed = 0, added = 0, moved = 0;
    size_t expect = 0;
    for (size_t i = 0; i < plan->n_layers; i++) {
        size_t at = name_find(&ix, profile, plan->layer_names[i]);
        if (at == SIZE_MAX) {
            if (removed++ < 20)
                sp_problem(ctx, "layer '%s' of the plan is not in the profile (removed or renamed)",
                           plan->layer_names[i]);
            continue;
        }
        seen[at] = true;
        if (at < expect && moved++ < 20)
            sp_problem(ctx, "layer '%s' moved: it now comes before a layer that preceded it",
                       plan->layer_names[i]);
        expect = at + 1;
    }
    for (size_t l = 0; l < n; l++)
        if (!seen[l] && added++ < 20)
            sp_problem(ctx, "layer '%s' of the profile is not in the plan (added or renamed)",
                       sp_profile_get_layer(profile, l)->name);
    if (!removed && !added && !moved) {
        for (size_t s = 0; s < plan->n_stages; s++) { /* an empty stage after the last layer
                                                       * stays there */
            size_t at = plan->stages[s].first_layer;
            first_layers[s] =
                at < plan->n_layers ? name_find(&ix, profile, plan->layer_names[at]) : n;
        }
    }
    sp_free(ix.slot);
    sp_free(seen);
    if (removed || added || moved) {
        sp_problem(ctx,
                   "the profile's layers differ from the plan's: %u removed, %u added, %u "
                   "moved",
                   removed, added, moved);
        ctx->status = SP_ERR_SCHEMA;
        return SP_ERR_SCHEMA;
    }
    return SP_OK;
}

/* partitioner/framework_cuts.c: the cuts a framework's pipeline layout can make. Megatron-LM's
 * layout (--pipeline-model-parallel-layout) splits only between whole groups: the embedding E,
 * each transformer layer t, the MTP layers together, and the output and loss L; a plan that
 * cuts inside E or L cannot be written as one (export --to megatron refuses it, naming the
 * stage). sp_partition with opts->framework set partitions a copy of the profile whose cuts
 * inside those groups are forbidden, exactly as a layer's cut_after: false forbids one, so every
 * solver keeps to them with no code of its own. The groups are the ones the export reads
 * (sp_layout_groups), so what the partitioner allows the export takes. */
#include <stdio.h>

#include "layout_impl.h"
#include "partition_impl.h"
#include "profile_impl.h"

/* a copy of the profile with the cuts the framework's layout cannot make forbidden */
static sp_status profile_for_framework(sp_ctx *ctx, const sp_profile *profile,
                                       sp_framework framework, sp_profile **out) {
    *out = NULL;
    size_t n = sp_profile_get_layer_count(profile);
    if (framework != SP_FRAMEWORK_MEGATRON)
        return sp_fail(ctx, SP_ERR_INVALID_ARG, "unknown framework");
    const char **kinds = sp_mallocarray(n ? n : 1, sizeof *kinds),
               **names = sp_mallocarray(n ? n : 1, sizeof *names);
    bool *no_cut = sp_calloc(n ? n : 1, sizeof *no_cut);
    sp_status st = kinds && names && no_cut ? SP_OK : sp_oom(ctx, "the framework's groups");
    for (size_t l = 0; st == SP_OK && l < n; l++) {
        kinds[l] = sp_profile_get_layer(profile, l)->kind;
        names[l] = sp_profile_get_layer(profile, l)->name;
    }
    struct sp_layout_groups g = {0};
    if (st == SP_OK && (st = sp_layout_groups(ctx, n, kinds, names, &g)) != SP_OK) {
        char why[512]; /* the message is rewritten in place: copied first */
        snprintf(why, sizeof why, "%s", sp_ctx_get_errmsg(ctx));
        st = sp_fail(ctx, st,
                     "--framework megatron: %s (the layout's groups come from the layers' "
                     "kinds)",
                     why);
    }
    /* no stage may start at layer a (a cut after a - 1) inside E, the MTP layers, or L */
    for (size_t a = 1; st == SP_OK && a < n; a++)
        no_cut[a - 1] = a < g.e_end || (a > g.t_end && a < g.l_start) || a > g.l_start;
    if (st == SP_OK)
        st = sp_profile_forbid_cuts(ctx, profile, no_cut, out);
    sp_free(kinds);
    sp_free(names);
    sp_free(no_cut);
    return st;
}

sp_status sp_partition_framed(sp_ctx *ctx, const sp_profile *profile, const sp_partition_opts *opts,
                              uint32_t gpus, sp_plan **out) {
    sp_profile *framed = NULL;
    sp_status st = profile_for_framework(ctx, profile, opts->framework, &framed);
    sp_partition_opts o = *opts;
    o.framework = SP_FRAMEWORK_ANY;
    if (st == SP_OK)
        st = gpus ? sp_partition_replicated(ctx, framed, &o, gpus, out)
                  : sp_partition(ctx, framed, &o, out);
    if (st == SP_OK)
        (*out)->summary.framework = opts->framework;
    sp_profile_destroy(framed);
    return st;
}

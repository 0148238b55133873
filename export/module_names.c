/* export/module_names.c: the module each layer of a plan is, by the name a framework finds it
 * by: the profile's own names (paths in the model), or torchtitan's names by kind. */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "module_names.h"

bool sp_export_is_module(const sp_plan *plan, size_t l) {
    return strcmp(plan->layer_kinds[l], "loss") != 0;
}

/* "Qwen2DecoderLayer_3": a class name (a capital first) and a count, as torch.profiler names
 * module instances (a zero-config import without a module map); paths in a model are
 * attribute names, lower case by Python's convention, joined by dots */
static bool is_instance_name(const char *name) {
    if (!isupper((unsigned char)name[0]))
        return false;
    const char *u = strrchr(name, '_');
    if (!u || !u[1] || strchr(name, '.'))
        return false;
    for (const char *p = u + 1; *p; p++)
        if (!isdigit((unsigned char)*p))
            return false;
    for (const char *p = name; p < u; p++)
        if (!isalnum((unsigned char)*p) && *p != '_')
            return false;
    return true;
}

void sp_export_module_names_release(struct module_names *m) {
    for (size_t l = 0; l < m->n; l++) {
        sp_free(m->first[l]);
        sp_free(m->second[l]);
    }
    sp_free(m->first);
    sp_free(m->second);
    memset(m, 0, sizeof *m);
}

static bool kind_is(const sp_plan *plan, size_t l, const char *kind) {
    return strcmp(plan->layer_kinds[l], kind) == 0;
}

/* torchtitan's models name their modules tok_embeddings, layers.N, norm and lm_head (0.3.0;
 * "output" before): map the profile's layers to them by kind, in the order those models run them */
static sp_status torchtitan_names(sp_ctx *ctx, const sp_plan *plan, struct module_names *m) {
    size_t n = plan->n_layers, blocks = 0;
    bool has_norm = false;
    for (size_t l = 0; l < n; l++)
        has_norm |= kind_is(plan, l, "norm");
    for (size_t l = 0; l < n; l++) {
        char buf[32];
        const char *a = NULL, *b = NULL, *why = NULL;
        if (kind_is(plan, l, "loss"))
            continue;
        if (kind_is(plan, l, "embedding"))
            a = "tok_embeddings", why = l == 0 ? NULL : "the embedding must be the first layer";
        else if (kind_is(plan, l, "transformer"))
            snprintf(buf, sizeof buf, "layers.%zu", blocks++), a = buf;
        else if (kind_is(plan, l, "norm"))
            a = "norm", why = blocks ? NULL : "the final norm must follow the transformer layers";
        else if (kind_is(plan, l, "head"))
            a = has_norm ? "lm_head" : "norm", b = has_norm ? NULL : "lm_head";
        else
            why = "torchtitan's models have a module for kinds embedding, transformer, norm and "
                  "head only (the loss is no module)";
        if (why)
            return sp_fail(ctx, SP_ERR_INVALID_ARG,
                           "--module-names torchtitan: layer %zu ('%s', kind \"%s\"): %s", l,
                           plan->layer_names[l], plan->layer_kinds[l], why);
        if (!(m->first[l] = sp_strdup(a)) || (b && !(m->second[l] = sp_strdup(b))))
            return sp_oom(ctx, "exporting a plan");
    }
    return SP_OK;
}

sp_status sp_export_module_names(sp_ctx *ctx, const sp_plan *plan, sp_module_names names,
                                 bool need_paths, struct module_names *m) {
    size_t n = plan->n_layers;
    m->first = sp_calloc(n ? n : 1, sizeof *m->first);
    m->second = sp_calloc(n ? n : 1, sizeof *m->second);
    if (!m->first || !m->second)
        return sp_oom(ctx, "exporting a plan");
    m->n = n; /* both arrays there: release frees their entries */
    if (names == SP_MODULE_NAMES_TORCHTITAN)
        return torchtitan_names(ctx, plan, m);
    for (size_t l = 0; l < n; l++) {
        if (!sp_export_is_module(plan, l))
            continue;
        if (need_paths && is_instance_name(plan->layer_names[l]))
            return sp_fail(ctx, SP_ERR_INVALID_ARG,
                           "layer %zu ('%s') is named as torch.profiler names a module instance "
                           "(its class and a count), not by its path in the model, which torch "
                           "needs to find it: import the trace again with --modules FILE, the "
                           "module map stagepart_torch.describe(model, batch) writes "
                           "(docs/profiling.md), or use --module-names torchtitan for "
                           "torchtitan's models",
                           l, plan->layer_names[l]);
        if (!(m->first[l] = sp_strdup(plan->layer_names[l])))
            return sp_oom(ctx, "exporting a plan");
    }
    return SP_OK;
}

/* torch.distributed.pipelining's name for a schedule (get_schedule_class; torchtitan's
 * pipeline_parallel_schedule), NULL where torch has none */
const char *sp_torch_schedule_name(sp_schedule s) {
    switch (s) {
    case SP_SCHEDULE_GPIPE:
        return "GPipe";
    case SP_SCHEDULE_1F1B:
        return "1F1B";
    case SP_SCHEDULE_INTERLEAVED:
        return "Interleaved1F1B";
    case SP_SCHEDULE_INTERLEAVED_ZB:
        return "InterleavedZeroBubble";
    case SP_SCHEDULE_ZBV:
        return "ZBVZeroBubble";
    case SP_SCHEDULE_DUALPIPEV:
        return "DualPipeV";
    default:
        return NULL;
    }
}

void sp_export_module_name(struct sp_strbuf *sb, const char *prefix, const char *name) {
    sp_strbuf_printf(sb, "\"%s%s\"", prefix ? prefix : "", name);
}

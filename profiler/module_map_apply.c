/* profiler/module_map_apply.c: a module map's paths, bytes and kinds into the layers of a
 * profile made from a trace (sp_trace_profile_opts.modules). */
#include <stdio.h>
#include <string.h>

#include "module_map_apply.h"
#include "modules.h"

/* whether the class of layer i's entry repeats among the layers' entries */
static bool class_repeats(const sp_module_entry *const *by_layer, size_t n, size_t i) {
    for (size_t k = 0; k < n; k++)
        if (k != i && by_layer[k] && strcmp(by_layer[k]->class_name, by_layer[i]->class_name) == 0)
            return true;
    return false;
}

sp_status sp_profile_apply_module_map(sp_ctx *ctx, const sp_module_map *map, const char *trace_file,
                                      struct sp_profile_doc *doc) {
    const char *file = sp_module_map_get_file(map);
    const sp_module_entry **by_layer =
        sp_calloc(doc->n_layers ? doc->n_layers : 1, sizeof *by_layer);
    if (!by_layer)
        return sp_oom(ctx, "applying the module map");
    sp_status st = SP_OK;
    for (size_t i = 0; st == SP_OK && i < doc->n_layers; i++) {
        const char *name = doc->layers[i].name;
        const sp_module_entry *e = sp_module_map_find(map, name);
        for (size_t k = 0; e && st == SP_OK && k < i; k++)
            if (by_layer[k] == e)
                st = sp_fail(ctx, SP_ERR_SCHEMA,
                             "%s: layers %s and %s are both module %s of the module map %s",
                             trace_file, doc->layers[k].name, name, e->path, file);
        if (!e && strcmp(name, "loss") != 0)
            st = sp_fail(ctx, SP_ERR_SCHEMA,
                         "%s: layer %zu (%s) is not in the module map %s: the map was made from "
                         "another model, or from a run whose first module calls came in another "
                         "order (make it with stagepart_torch.describe(model, batch) on the "
                         "batch the trace ran)",
                         trace_file, i, name, file);
        else if (e && !*e->path)
            st = sp_fail(ctx, SP_ERR_SCHEMA,
                         "%s: layer %zu (%s) is the model itself in the module map %s: a layer "
                         "needs a path below the model (choose a deeper --layers)",
                         trace_file, i, name, file);
        by_layer[i] = e;
    }
    for (size_t i = 0; st == SP_OK && i < doc->n_layers; i++) {
        const sp_module_entry *e = by_layer[i];
        struct sp_profile_doc_layer *L = &doc->layers[i];
        if (!e)
            continue;
        L->name = e->path;
        if (!L->kind)
            L->kind = sp_module_kind(e->class_name);
        if (!L->kind && e->contains_attention && class_repeats(by_layer, doc->n_layers, i))
            L->kind = "transformer"; /* a repeated block with attention inside, as modules.c */
        L->has_param_bytes = true;
        L->param_bytes = e->param_bytes;
        if (e->has_activation_bytes && !L->has_activation_bytes) {
            L->has_activation_bytes = true;
            L->activation_bytes = e->activation_bytes;
        }
    }
    if (st == SP_OK && !cJSON_AddStringToObject(doc->measurement, "module_map", file))
        st = sp_oom(ctx, "writing the profile");
    sp_free(by_layer);
    return st;
}

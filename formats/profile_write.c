/* formats/profile_write.c: the one writer of "stagepart-profile" documents (docs/formats.md),
 * whoever measured them (formats/profile_doc.h); formats/profile.c reads them back. */
#include "json_util.h"
#include "profile_doc.h"

static bool num(cJSON *o, const char *k, double v) {
    return cJSON_AddNumberToObject(o, k, v) != NULL;
}

static bool add_layer(cJSON *layers, struct sp_profile_doc_layer *L) {
    cJSON *o = cJSON_CreateObject();
    if (!o || !cJSON_AddItemToArray(layers, o)) {
        cJSON_Delete(o);
        return false;
    }
    bool ok =
        cJSON_AddStringToObject(o, "name", L->name) &&
        (!L->kind || cJSON_AddStringToObject(o, "kind", L->kind)) && num(o, "fwd_ms", L->fwd_ms) &&
        num(o, "bwd_ms", L->bwd_ms) && (L->wgrad_ms < 0 || num(o, "wgrad_ms", L->wgrad_ms)) &&
        (L->recompute_ms <= 0 || num(o, "recompute_ms", L->recompute_ms)) &&
        (!L->has_activation_bytes || num(o, "activation_bytes", (double)L->activation_bytes)) &&
        (!L->has_model_bytes || (num(o, "saved_bytes", (double)L->saved_bytes) &&
                                 num(o, "param_bytes", (double)L->param_bytes) &&
                                 num(o, "memory_bytes", (double)L->memory_bytes))) &&
        (L->has_model_bytes || !L->has_param_bytes ||
         num(o, "param_bytes", (double)L->param_bytes));
    if (ok && L->measured) {
        ok = cJSON_AddItemToObject(o, "measured", L->measured);
        if (ok)
            L->measured = NULL;
    }
    return ok;
}

sp_status sp_profile_doc_to_json(sp_ctx *ctx, struct sp_profile_doc *doc, char **json) {
    *json = NULL;
    cJSON *root = cJSON_CreateObject(), *layers = NULL;
    bool ok = root && cJSON_AddStringToObject(root, "format", "stagepart-profile") &&
              num(root, "version", 1) && cJSON_AddStringToObject(root, "model", doc->model) &&
              (doc->micro_batch_size ? num(root, "micro_batch_size", (double)doc->micro_batch_size)
                                     : cJSON_AddNullToObject(root, "micro_batch_size") != NULL) &&
              cJSON_AddStringToObject(root, "source", doc->source) &&
              (!doc->device || cJSON_AddStringToObject(root, "device", doc->device)) &&
              (!doc->forward_only || cJSON_AddBoolToObject(root, "forward_only", true)) &&
              (!doc->wgrad_estimated || cJSON_AddBoolToObject(root, "wgrad_estimated", true));
    if (ok && doc->measurement) {
        ok = cJSON_AddItemToObject(root, "measurement", doc->measurement);
        if (ok)
            doc->measurement = NULL;
    }
    ok = ok && (layers = cJSON_AddArrayToObject(root, "layers"));
    for (size_t i = 0; ok && doc->layers && i < doc->n_layers; i++)
        ok = add_layer(layers, &doc->layers[i]);
    sp_status st =
        ok ? sp_json_print(ctx, root, 0, "the profile", json) : sp_oom(ctx, "the profile");
    cJSON_Delete(root);
    sp_profile_doc_release(doc);
    return st;
}

void sp_profile_doc_release(struct sp_profile_doc *doc) {
    cJSON_Delete(doc->measurement);
    doc->measurement = NULL;
    for (size_t i = 0; doc->layers && i < doc->n_layers; i++) {
        cJSON_Delete(doc->layers[i].measured);
        doc->layers[i].measured = NULL;
    }
}

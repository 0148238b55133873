/* models/model_presets.c: the presets of "stagepart-model" documents ("gpt", "llama", "bert",
 * "resnet"), each expanded into a "layers" array of the explicit form, which model_load.c then
 * reads with the one layer reader (docs/models.md). */
#include <stdio.h>
#include <string.h>

#include "model_json.h"

static cJSON *add_layer(cJSON *layers, const char *name, const char *op) {
    cJSON *o = cJSON_CreateObject();
    if (!o || !cJSON_AddItemToArray(layers, o)) {
        cJSON_Delete(o);
        return NULL;
    }
    if (!cJSON_AddStringToObject(o, "name", name) || !cJSON_AddStringToObject(o, "op", op))
        return NULL;
    return o;
}

static bool num(cJSON *o, const char *key, double v) {
    return o && cJSON_AddNumberToObject(o, key, v);
}

/* a transformer op's fields as the gpt, llama and bert presets set them */
static bool transformer_fields(cJSON *o, uint32_t hidden, uint32_t heads, uint32_t ffn, bool llama,
                               bool bert) {
    return num(o, "hidden", hidden) && num(o, "heads", heads) && num(o, "ffn", ffn) &&
           cJSON_AddBoolToObject(o, "causal", !bert) && cJSON_AddBoolToObject(o, "bias", !llama) &&
           cJSON_AddStringToObject(o, "norm", llama ? "rmsnorm" : "layernorm") &&
           cJSON_AddStringToObject(o, "activation", llama ? "swiglu" : "gelu");
}

bool sp_model_expand_transformer(struct sp_json_reader *r, const cJSON *p, const char *kind,
                                 cJSON *layers) {
    uint32_t n = 0, hidden = 0, heads = 0, vocab = 0, max_seq = 0, ffn = 0, mtp = 0;
    bool llama = strcmp(kind, "llama") == 0, bert = strcmp(kind, "bert") == 0;
    bool ok = sp_model_get_dim(r, p, "preset", "layers", true, 1, 100000, 0, &n);
    ok &= sp_model_get_dim(r, p, "preset", "mtp_layers", false, 0, 64, 0, &mtp);
    ok &= sp_model_get_dim(r, p, "preset", "hidden", true, 1, SP_MODEL_MAX_DIM, 0, &hidden);
    ok &= sp_model_get_dim(r, p, "preset", "heads", true, 1, SP_MODEL_MAX_DIM, 0, &heads);
    ok &= sp_model_get_dim(r, p, "preset", "vocab", true, 1, SP_MODEL_MAX_DIM, 0, &vocab);
    ok &= sp_model_get_dim(r, p, "preset", "max_seq_len", true, 1, SP_MODEL_MAX_DIM, 0, &max_seq);
    ok &= sp_model_get_dim(r, p, "preset", "ffn", llama, 1, SP_MODEL_MAX_DIM,
                           hidden <= SP_MODEL_MAX_DIM / 4 ? 4 * hidden : SP_MODEL_MAX_DIM, &ffn);
    if (!ok)
        return false;
    if (mtp && bert) {
        sp_json_problem(r, "preset", "mtp_layers",
                        "expected 0 for a bert model: multi-token prediction predicts the "
                        "following tokens, which a bidirectional model sees");
        return false;
    }
    cJSON *o = add_layer(layers, "embedding", "embedding");
    ok = num(o, "vocab", vocab) && num(o, "hidden", hidden) && num(o, "max_seq_len", max_seq);
    for (uint32_t i = 0; ok && i < n; i++) {
        char name[32];
        snprintf(name, sizeof name, "layers.%u", i);
        ok = (o = add_layer(layers, name, "transformer")) &&
             transformer_fields(o, hidden, heads, ffn, llama, bert);
    }
    /* Multi-token prediction, as DeepSeek-V3 and Megatron-LM build it (docs/models.md): per MTP
     * depth, hnorm and enorm, eh_proj (2H -> H) on the concatenation of the normed hidden state
     * and the normed next-token embedding, then a transformer block. The chain carries one
     * tensor, so the projection's two H x H halves are applied one after the other to the
     * hidden state: the same products and parameters, not the same values. */
    for (uint32_t i = 0; ok && i < mtp; i++) {
        char name[32];
        snprintf(name, sizeof name, "mtp.%u", i);
        cJSON *ops = NULL, *c = NULL;
        ok = (o = cJSON_CreateObject()) && cJSON_AddItemToArray(layers, o) &&
             cJSON_AddStringToObject(o, "name", name) &&
             cJSON_AddStringToObject(o, "kind", "mtp") && (ops = cJSON_AddArrayToObject(o, "ops"));
        for (int k = 0; ok && k < 4; k++) {
            static const char *const op[4] = {"", "linear", "linear", "transformer"};
            ok = (c = cJSON_CreateObject()) && cJSON_AddItemToArray(ops, c) &&
                 cJSON_AddStringToObject(c, "op",
                                         k       ? op[k]
                                         : llama ? "rmsnorm"
                                                 : "layernorm");
            if (ok && k == 0)
                ok = num(c, "hidden", hidden);
            else if (ok && k < 3)
                ok = num(c, "in_features", hidden) && num(c, "out_features", hidden) &&
                     cJSON_AddBoolToObject(c, "bias", false);
            else if (ok)
                ok = transformer_fields(c, hidden, heads, ffn, llama, bert);
        }
    }
    ok = ok && num(o = add_layer(layers, llama ? "norm" : "ln_f", llama ? "rmsnorm" : "layernorm"),
                   "hidden", hidden);
    ok = ok && (o = add_layer(layers, "lm_head", "lm_head")) && num(o, "hidden", hidden) &&
         num(o, "vocab", vocab);
    if (!ok)
        sp_oom(r->ctx, "expanding a preset");
    return ok;
}

/* ResNet-18's shape on small images: a 3x3 stem, four stages of `blocks[s]` blocks of two 3x3
 * convolutions (batchnorm, relu after each; the first block of stages 2-4 halves the size and
 * doubles the width), global average pooling and a classifier. A plain chain: the residual
 * shortcuts of a real ResNet are not modelled (docs/models.md). */
bool sp_model_expand_resnet(struct sp_json_reader *r, const cJSON *p, cJSON *layers,
                            struct sp_shape *input) {
    uint32_t width = 0, classes = 0, image = 0, channels = 0;
    bool ok = sp_model_get_dim(r, p, "preset", "width", false, 1, 4096, 64, &width);
    ok &= sp_model_get_dim(r, p, "preset", "classes", false, 1, SP_MODEL_MAX_DIM, 10, &classes);
    ok &= sp_model_get_dim(r, p, "preset", "image_size", false, 8, 4096, 32, &image);
    ok &= sp_model_get_dim(r, p, "preset", "channels", false, 1, 64, 3, &channels);
    uint32_t blocks[4] = {2, 2, 2, 2};
    const cJSON *b = cJSON_GetObjectItemCaseSensitive(p, "blocks");
    if (b) {
        int k = 0;
        if (!cJSON_IsArray(b) || cJSON_GetArraySize(b) != 4) {
            sp_json_problem(r, "preset", "blocks", "expected an array of 4 block counts");
            return false;
        }
        for (const cJSON *e = b->child; e; e = e->next, k++) {
            if (!cJSON_IsNumber(e) || e->valuedouble < 1 || e->valuedouble > 64 ||
                e->valuedouble != (double)(uint32_t)e->valuedouble) {
                sp_json_problem(r, "preset", "blocks", "element %d: expected an integer in [1, 64]",
                                k);
                return false;
            }
            blocks[k] = (uint32_t)e->valuedouble;
        }
    }
    if (!ok)
        return false;
    *input = (struct sp_shape){channels, image, image};
    ok = true;
    cJSON *o = cJSON_CreateObject(), *ops = NULL, *c = NULL;
    ok = o && cJSON_AddItemToArray(layers, o) && cJSON_AddStringToObject(o, "name", "stem") &&
         cJSON_AddStringToObject(o, "kind", "conv") && (ops = cJSON_AddArrayToObject(o, "ops"));
#define OP(arr, kind)                                                                              \
    ((c = cJSON_CreateObject()) && cJSON_AddItemToArray(arr, c) &&                                 \
     cJSON_AddStringToObject(c, "op", kind))
    ok = ok && OP(ops, "conv2d") && num(c, "in_channels", channels) &&
         num(c, "out_channels", width) && num(c, "kernel", 3) && num(c, "padding", 1) &&
         OP(ops, "batchnorm") && num(c, "channels", width) && OP(ops, "relu");
    uint32_t ch = width;
    for (int s = 0; ok && s < 4; s++)
        for (uint32_t k = 0; ok && k < blocks[s]; k++) {
            uint32_t out = width << s, stride = (s > 0 && k == 0) ? 2 : 1;
            char name[32];
            snprintf(name, sizeof name, "layer%d.%u", s + 1, k);
            ok = (o = cJSON_CreateObject()) && cJSON_AddItemToArray(layers, o) &&
                 cJSON_AddStringToObject(o, "name", name) &&
                 cJSON_AddStringToObject(o, "kind", "conv") &&
                 (ops = cJSON_AddArrayToObject(o, "ops")) && OP(ops, "conv2d") &&
                 num(c, "in_channels", ch) && num(c, "out_channels", out) && num(c, "kernel", 3) &&
                 num(c, "stride", stride) && num(c, "padding", 1) && OP(ops, "batchnorm") &&
                 num(c, "channels", out) && OP(ops, "relu") && OP(ops, "conv2d") &&
                 num(c, "in_channels", out) && num(c, "out_channels", out) && num(c, "kernel", 3) &&
                 num(c, "padding", 1) && OP(ops, "batchnorm") && num(c, "channels", out) &&
                 OP(ops, "relu");
            ch = out;
        }
#undef OP
    ok = ok && (o = add_layer(layers, "avgpool", "pool")) &&
         cJSON_AddStringToObject(o, "pool", "avg_global");
    ok = ok && (o = add_layer(layers, "fc", "lm_head")) && num(o, "hidden", ch) &&
         num(o, "vocab", classes);
    if (!ok)
        sp_oom(r->ctx, "expanding a preset");
    return ok;
}

/* models/model_load.c: reading "stagepart-model" documents (docs/formats.md#model) and expanding
 * their presets.
 *
 * A preset ("gpt", "llama", "bert", "resnet") is expanded into the same JSON layer objects a
 * user would write, and those go through the one layer reader, so a preset can never mean
 * something the explicit form cannot. Every problem is reported with the file and JSON path. */
#include <stdio.h>
#include <string.h>

#include "json_util.h"
#include "model_impl.h"

#define MODEL_MAX_FILE_BYTES ((size_t)64 << 20)
#define MAX_DIM              (1u << 24) /* any one size: hidden, vocab, channels, ... */
#define MAX_LISTED_OPS       8          /* each may expand to 2: SP_MAX_OPS_PER_LAYER */
#define MAX_SOURCE_BYTES     (1u << 16)

void sp_model_destroy(sp_model *m) {
    if (!m)
        return;
    for (size_t i = 0; i < m->n_layers; i++) {
        sp_free(m->layers[i].name);
        sp_free(m->layers[i].kind);
        sp_free(m->layers[i].ops);
    }
    sp_free(m->layers);
    sp_free(m->name);
    sp_free(m->source);
    sp_free(m->preset);
    sp_free(m->dtype);
    sp_free(m);
}

/* an integer field in [lo, hi]; absent: *out = dflt when not required */
static bool get_dim(struct sp_json_reader *r, const cJSON *obj, const char *where, const char *key,
                    bool required, uint32_t lo, uint32_t hi, uint32_t dflt, uint32_t *out) {
    uint64_t v = dflt;
    if (!sp_json_get_uint(r, obj, where, key, required, lo, &v))
        return false;
    if (v > hi) {
        sp_json_problem(r, where, key, "expected an integer in [%u, %u], got %llu", lo, hi,
                        (unsigned long long)v);
        return false;
    }
    *out = (uint32_t)v;
    return true;
}

/* one of names[] (NULL-terminated); absent: *out = dflt */
static bool get_choice(struct sp_json_reader *r, const cJSON *obj, const char *where,
                       const char *key, const char *const *names, int dflt, int *out) {
    const char *s = NULL;
    *out = dflt;
    if (!sp_json_get_string(r, obj, where, key, false, 64, &s))
        return false;
    if (!s)
        return true;
    for (int k = 0; names[k]; k++)
        if (strcmp(s, names[k]) == 0) {
            *out = k;
            return true;
        }
    char list[256] = "";
    for (int k = 0; names[k]; k++)
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s\"%s\"", k ? ", " : "",
                 names[k]);
    sp_json_problem(r, where, key, "expected one of %s, got \"%s\"", list, s);
    return false;
}

static const char *const norm_names[] = {"layernorm", "rmsnorm", NULL};
static const char *const act_names[] = {"gelu", "swiglu", NULL};
static const char *const pool_names[] = {"max", "avg_global", NULL};

/* The op kinds a model file names, with the profile kind a one-op layer gets by default. */
static const struct {
    const char *name, *profile_kind;
} op_names[] = {
    {"embedding", "embedding"}, {"layernorm", "norm"}, {"rmsnorm", "norm"},
    {"attention", "attention"}, {"mlp", "mlp"},        {"transformer", "transformer"},
    {"linear", "linear"},       {"lm_head", "head"},   {"conv2d", "conv"},
    {"batchnorm", "batchnorm"}, {"relu", "relu"},      {"pool", "pool"},
};

/* Read one op object into ops[*n] (a "transformer" fills two: attention and mlp). */
static bool read_op(struct sp_json_reader *r, const cJSON *o, const char *where, const char *op,
                    struct sp_op *ops, size_t *n) {
    struct sp_op x;
    memset(&x, 0, sizeof x);
    bool ok = true;
    int norm = 0, act = 0, pool = 0;
    bool causal = true, bias = true;
    if (strcmp(op, "attention") == 0 || strcmp(op, "mlp") == 0 || strcmp(op, "transformer") == 0) {
        ok &= get_dim(r, o, where, "hidden", true, 1, MAX_DIM, 0, &x.hidden);
        ok &= get_choice(r, o, where, "norm", norm_names, 0, &norm);
        ok &= sp_json_get_bool(r, o, where, "bias", false, &bias);
        x.norm = (enum sp_norm_kind)norm;
        x.bias = bias;
        if (strcmp(op, "mlp") != 0) {
            ok &= get_dim(r, o, where, "heads", true, 1, MAX_DIM, 0, &x.heads);
            ok &= sp_json_get_bool(r, o, where, "causal", false, &causal);
            x.causal = causal;
        }
        if (strcmp(op, "attention") != 0) {
            ok &= get_dim(r, o, where, "ffn", strcmp(op, "mlp") == 0, 1, MAX_DIM,
                          x.hidden <= MAX_DIM / 4 ? 4 * x.hidden : MAX_DIM, &x.ffn);
            ok &= get_choice(r, o, where, "activation", act_names, 0, &act);
            x.act = (enum sp_act_kind)act;
        }
        if (!ok)
            return false;
        if (strcmp(op, "mlp") != 0 && x.hidden % x.heads) {
            sp_json_problem(r, where, "heads", "hidden (%u) must be a multiple of heads (%u)",
                            x.hidden, x.heads);
            return false;
        }
        if (strcmp(op, "mlp") != 0) {
            x.kind = SP_OP_ATTENTION;
            ops[(*n)++] = x;
        }
        if (strcmp(op, "attention") != 0) {
            x.kind = SP_OP_MLP;
            ops[(*n)++] = x;
        }
        return true;
    }
    if (strcmp(op, "embedding") == 0) {
        x.kind = SP_OP_EMBEDDING;
        ok &= get_dim(r, o, where, "vocab", true, 1, MAX_DIM, 0, &x.vocab);
        ok &= get_dim(r, o, where, "hidden", true, 1, MAX_DIM, 0, &x.hidden);
        ok &= get_dim(r, o, where, "max_seq_len", true, 1, MAX_DIM, 0, &x.max_seq);
    } else if (strcmp(op, "layernorm") == 0 || strcmp(op, "rmsnorm") == 0) {
        x.kind = SP_OP_NORM;
        x.norm = op[0] == 'l' ? SP_NORM_LAYER : SP_NORM_RMS;
        ok &= get_dim(r, o, where, "hidden", true, 1, MAX_DIM, 0, &x.hidden);
    } else if (strcmp(op, "linear") == 0) {
        x.kind = SP_OP_LINEAR;
        ok &= get_dim(r, o, where, "in_features", true, 1, MAX_DIM, 0, &x.in_features);
        ok &= get_dim(r, o, where, "out_features", true, 1, MAX_DIM, 0, &x.out_features);
        ok &= sp_json_get_bool(r, o, where, "bias", false, &bias);
        x.bias = bias;
    } else if (strcmp(op, "lm_head") == 0) {
        x.kind = SP_OP_LM_HEAD;
        ok &= get_dim(r, o, where, "hidden", true, 1, MAX_DIM, 0, &x.hidden);
        ok &= get_dim(r, o, where, "vocab", true, 1, MAX_DIM, 0, &x.vocab);
    } else if (strcmp(op, "conv2d") == 0) {
        x.kind = SP_OP_CONV2D;
        ok &= get_dim(r, o, where, "in_channels", true, 1, MAX_DIM, 0, &x.in_ch);
        ok &= get_dim(r, o, where, "out_channels", true, 1, MAX_DIM, 0, &x.out_ch);
        ok &= get_dim(r, o, where, "kernel", true, 1, 64, 0, &x.kernel);
        ok &= get_dim(r, o, where, "stride", false, 1, 64, 1, &x.stride);
        ok &= get_dim(r, o, where, "padding", false, 0, 64, 0, &x.pad);
    } else if (strcmp(op, "batchnorm") == 0) {
        x.kind = SP_OP_BATCHNORM;
        ok &= get_dim(r, o, where, "channels", true, 1, MAX_DIM, 0, &x.in_ch);
    } else if (strcmp(op, "relu") == 0) {
        x.kind = SP_OP_RELU;
    } else if (strcmp(op, "pool") == 0) {
        x.kind = SP_OP_POOL;
        ok &= get_choice(r, o, where, "pool", pool_names, 0, &pool);
        x.pool = (enum sp_pool_kind)pool;
        if (x.pool == SP_POOL_MAX) {
            ok &= get_dim(r, o, where, "kernel", true, 1, 64, 0, &x.kernel);
            ok &= get_dim(r, o, where, "stride", false, 1, 64, x.kernel, &x.stride);
        }
    } else {
        char list[512] = "";
        for (size_t k = 0; k < SP_COUNT_OF(op_names); k++)
            snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", k ? ", " : "",
                     op_names[k].name);
        sp_json_problem(r, where, "op", "expected one of %s, got \"%s\"", list, op);
        return false;
    }
    if (ok)
        ops[(*n)++] = x;
    return ok;
}

static const char *profile_kind_of(const char *op) {
    for (size_t k = 0; k < SP_COUNT_OF(op_names); k++)
        if (strcmp(op, op_names[k].name) == 0)
            return op_names[k].profile_kind;
    return "";
}

/* One layer: {"name", "kind"?, "op": K, fields...} or {"name", "kind", "ops": [{"op": K, ...}]} */
static bool read_layer(struct sp_json_reader *r, const cJSON *o, size_t i,
                       struct sp_model_layer *L) {
    char where[48];
    snprintf(where, sizeof where, "layers[%zu]", i);
    if (!cJSON_IsObject(o)) {
        sp_json_problem(r, "", where, "expected an object");
        return false;
    }
    const char *name = NULL, *kind = NULL, *op = NULL;
    bool ok = sp_json_get_string(r, o, where, "name", true, SP_NAME_MAX_BYTES, &name);
    ok &= sp_json_get_string(r, o, where, "kind", false, SP_NAME_MAX_BYTES, &kind);
    ok &= sp_json_get_string(r, o, where, "op", false, 64, &op);
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(o, "ops");
    if (!ok)
        return false;
    if ((op != NULL) == (list != NULL)) {
        sp_json_problem(r, where, "op", "expected either \"op\" (one op) or \"ops\" (a list), %s",
                        op ? "got both" : "got neither");
        return false;
    }
    struct sp_op ops[SP_MAX_OPS_PER_LAYER];
    size_t n = 0;
    if (op) {
        ok = read_op(r, o, where, op, ops, &n);
    } else {
        int count = cJSON_IsArray(list) ? cJSON_GetArraySize(list) : -1;
        if (count < 1 || count > MAX_LISTED_OPS) {
            sp_json_problem(r, where, "ops", "expected an array of 1 to %d op objects",
                            MAX_LISTED_OPS);
            return false;
        }
        int k = 0;
        for (const cJSON *e = list->child; e; e = e->next, k++) {
            char w[80];
            snprintf(w, sizeof w, "%s.ops[%d]", where, k);
            const char *eop = NULL;
            if (!cJSON_IsObject(e) || !sp_json_get_string(r, e, w, "op", true, 64, &eop)) {
                if (!cJSON_IsObject(e))
                    sp_json_problem(r, where, "ops", "element %d: expected an object", k);
                ok = false;
                continue;
            }
            ok &= read_op(r, e, w, eop, ops, &n);
        }
    }
    if (!ok)
        return false;
    L->name = sp_strdup(name);
    L->kind = sp_strdup(kind ? kind : op ? profile_kind_of(op) : "");
    L->ops = sp_mallocarray(n, sizeof *L->ops);
    if (L->ops)
        memcpy(L->ops, ops, n * sizeof *ops);
    L->n_ops = n;
    return true;
}

/* ---- presets: each becomes a "layers" array of the explicit form */

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

static bool expand_transformer(struct sp_json_reader *r, const cJSON *p, const char *kind,
                               cJSON *layers) {
    uint32_t n = 0, hidden = 0, heads = 0, vocab = 0, max_seq = 0, ffn = 0, mtp = 0;
    bool llama = strcmp(kind, "llama") == 0, bert = strcmp(kind, "bert") == 0;
    bool ok = get_dim(r, p, "preset", "layers", true, 1, 100000, 0, &n);
    ok &= get_dim(r, p, "preset", "mtp_layers", false, 0, 64, 0, &mtp);
    ok &= get_dim(r, p, "preset", "hidden", true, 1, MAX_DIM, 0, &hidden);
    ok &= get_dim(r, p, "preset", "heads", true, 1, MAX_DIM, 0, &heads);
    ok &= get_dim(r, p, "preset", "vocab", true, 1, MAX_DIM, 0, &vocab);
    ok &= get_dim(r, p, "preset", "max_seq_len", true, 1, MAX_DIM, 0, &max_seq);
    ok &= get_dim(r, p, "preset", "ffn", llama, 1, MAX_DIM,
                  hidden <= MAX_DIM / 4 ? 4 * hidden : MAX_DIM, &ffn);
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
static bool expand_resnet(struct sp_json_reader *r, const cJSON *p, cJSON *layers,
                          struct sp_shape *input) {
    uint32_t width = 0, classes = 0, image = 0, channels = 0;
    bool ok = get_dim(r, p, "preset", "width", false, 1, 4096, 64, &width);
    ok &= get_dim(r, p, "preset", "classes", false, 1, MAX_DIM, 10, &classes);
    ok &= get_dim(r, p, "preset", "image_size", false, 8, 4096, 32, &image);
    ok &= get_dim(r, p, "preset", "channels", false, 1, 64, 3, &channels);
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

static sp_status read_model(struct sp_json_reader *r, const cJSON *root, sp_model *m) {
    sp_ctx *ctx = r->ctx;
    if (!cJSON_IsObject(root))
        return sp_fail(ctx, SP_ERR_SCHEMA, "%s: expected a JSON object", r->file);
    if (!sp_json_check_header(r, root, "stagepart-model", 1))
        return SP_ERR_SCHEMA;
    const char *name = NULL, *source = NULL;
    bool ok = sp_json_get_string(r, root, "", "name", true, SP_NAME_MAX_BYTES, &name);
    ok &= sp_json_get_string(r, root, "", "source", false, MAX_SOURCE_BYTES, &source);
    int dt = 0;
    static const char *const dtypes[] = {"fp32", "bf16", NULL};
    ok &= get_choice(r, root, "", "dtype", dtypes, 0, &dt);
    ok &= get_dim(r, root, "", "micro_batch_size", false, 1, 65536, 1, &m->micro_batch_size);
    ok &= get_dim(r, root, "", "seq_len", false, 1, MAX_DIM, 0, &m->seq_len);
    const cJSON *preset = cJSON_GetObjectItemCaseSensitive(root, "preset");
    const cJSON *layers = cJSON_GetObjectItemCaseSensitive(root, "layers");
    if (!ok)
        return SP_ERR_SCHEMA;
    if ((preset != NULL) == (layers != NULL)) {
        sp_json_problem(r, "", "layers", "expected either \"preset\" or \"layers\", %s",
                        preset ? "got both" : "got neither");
        return SP_ERR_SCHEMA;
    }
    cJSON *expanded = NULL;
    if (preset) {
        const char *kind = NULL;
        if (!cJSON_IsObject(preset)) {
            sp_json_problem(r, "", "preset", "expected an object");
            return SP_ERR_SCHEMA;
        }
        if (!sp_json_get_string(r, preset, "preset", "kind", true, 64, &kind))
            return SP_ERR_SCHEMA;
        if (!(expanded = cJSON_CreateArray()))
            return sp_oom(ctx, "expanding a preset");
        bool done;
        if (strcmp(kind, "gpt") == 0 || strcmp(kind, "llama") == 0 || strcmp(kind, "bert") == 0) {
            done = expand_transformer(r, preset, kind, expanded);
        } else if (strcmp(kind, "resnet") == 0) {
            done = expand_resnet(r, preset, expanded, &m->input);
        } else {
            sp_json_problem(r, "preset", "kind",
                            "expected \"gpt\", \"llama\", \"bert\" or \"resnet\", got \"%s\"",
                            kind);
            done = false;
        }
        if (!done) {
            cJSON_Delete(expanded);
            return ctx->status == SP_ERR_NOMEM ? SP_ERR_NOMEM : SP_ERR_SCHEMA;
        }
        m->preset = sp_strdup(kind);
        layers = expanded;
    } else {
        const cJSON *in = cJSON_GetObjectItemCaseSensitive(root, "input");
        if (in) {
            if (!cJSON_IsObject(in)) {
                sp_json_problem(r, "", "input", "expected an object {channels, height, width}");
                return SP_ERR_SCHEMA;
            }
            ok = get_dim(r, in, "input", "channels", true, 1, MAX_DIM, 0, &m->input.c);
            ok &= get_dim(r, in, "input", "height", true, 1, MAX_DIM, 0, &m->input.h);
            ok &= get_dim(r, in, "input", "width", true, 1, MAX_DIM, 0, &m->input.w);
            if (!ok)
                return SP_ERR_SCHEMA;
        }
    }
    int count = cJSON_IsArray(layers) ? cJSON_GetArraySize(layers) : -1;
    sp_status st = SP_OK;
    if (preset && (size_t)count > SP_MODEL_MAX_LAYERS) {
        sp_json_problem(r, "preset", "layers",
                        "the preset expands to %d layers, more than the "
                        "limit of %u",
                        count, SP_MODEL_MAX_LAYERS);
        st = SP_ERR_SCHEMA;
    } else if (count < 1 || (size_t)count > SP_MODEL_MAX_LAYERS) {
        sp_json_problem(r, "", "layers", "expected an array of 1 to %u layers",
                        SP_MODEL_MAX_LAYERS);
        st = SP_ERR_SCHEMA;
    } else if (!(m->layers = sp_calloc((size_t)count, sizeof *m->layers))) {
        st = sp_oom(ctx, "the model's layers");
    } else {
        size_t i = 0;
        for (const cJSON *e = layers->child; e; e = e->next, i++) {
            if (!read_layer(r, e, i, &m->layers[i]))
                st = SP_ERR_SCHEMA;
            else if (!m->layers[i].name || !m->layers[i].kind || !m->layers[i].ops)
                st = sp_oom(ctx, "the model's layers");
            m->n_layers = i + 1;
            if (st == SP_ERR_NOMEM)
                break;
        }
    }
    cJSON_Delete(expanded);
    if (st != SP_OK)
        return st;
    /* names are unique: profiles and plans match layers by name (the name is each layer's
     * first member, as sp_json_check_unique_names reads it) */
    if (!sp_json_check_unique_names(r, m->layers, sizeof *m->layers, m->n_layers))
        return sp_oom(ctx, "checking layer names");
    if (ctx->problems)
        return SP_ERR_SCHEMA;
    /* what the chain starts and ends with */
    for (size_t i = 0; i < m->n_layers; i++)
        for (size_t j = 0; j < m->layers[i].n_ops; j++) {
            const struct sp_op *op = &m->layers[i].ops[j];
            bool first = i == 0 && j == 0;
            bool last = i + 1 == m->n_layers && j + 1 == m->layers[i].n_ops;
            if (op->kind == SP_OP_EMBEDDING && !first) {
                sp_json_problem(r, "", "layers",
                                "layer %zu (%s): an embedding can only be the "
                                "first op of the model",
                                i, m->layers[i].name);
                st = SP_ERR_SCHEMA;
            }
            if ((op->kind == SP_OP_LM_HEAD) != last) {
                if (op->kind == SP_OP_LM_HEAD)
                    sp_json_problem(r, "", "layers",
                                    "layer %zu (%s): lm_head (with the loss) can "
                                    "only be the last op of the model",
                                    i, m->layers[i].name);
                else
                    sp_json_problem(r, "", "layers",
                                    "the last layer (%s) must end in an lm_head "
                                    "op: the loss the backward starts from",
                                    m->layers[i].name);
                st = SP_ERR_SCHEMA;
            }
            if (first) {
                m->tokens = op->kind == SP_OP_EMBEDDING;
                if (m->tokens) {
                    m->input = (struct sp_shape){0, 1, 0};
                    if (!m->seq_len)
                        m->seq_len = op->max_seq < 128 ? op->max_seq : 128;
                    if (m->seq_len > op->max_seq) {
                        sp_json_problem(r, "", "seq_len",
                                        "%u exceeds the embedding's max_seq_len "
                                        "(%u)",
                                        m->seq_len, op->max_seq);
                        st = SP_ERR_SCHEMA;
                    }
                } else if (m->input.c == 0) {
                    sp_json_problem(r, "", "input",
                                    "a model that does not start with an "
                                    "embedding needs \"input\": {channels, height, width}");
                    st = SP_ERR_SCHEMA;
                }
            }
            if (last)
                m->classes = op->vocab;
        }
    if (m->tokens && st == SP_OK && m->classes != m->layers[0].ops[0].vocab) {
        sp_json_problem(r, "", "layers",
                        "the lm_head's vocab (%u) differs from the embedding's "
                        "(%u)",
                        m->classes, m->layers[0].ops[0].vocab);
        st = SP_ERR_SCHEMA;
    }
    if (st != SP_OK)
        return st;
    m->name = sp_strdup(name);
    m->source = sp_strdup(source ? source : "");
    m->dtype = sp_strdup(dtypes[dt]);
    if (!m->name || !m->source || !m->dtype || (preset && !m->preset))
        return sp_oom(ctx, "the model");
    return sp_model_bind(ctx, m, m->micro_batch_size, m->seq_len);
}

sp_status sp_model_parse(sp_ctx *ctx, const char *name, const char *data, size_t len,
                         sp_model **out) {
    if (!ctx || !name || !data || !out)
        return ctx ? sp_fail(ctx, SP_ERR_INVALID_ARG, "sp_model_parse: NULL argument")
                   : SP_ERR_INVALID_ARG;
    sp_ctx_begin(ctx);
    *out = NULL;
    cJSON *root = NULL;
    sp_status st = sp_json_parse(ctx, name, data, len, &root);
    if (st != SP_OK)
        return st;
    sp_model *m = sp_calloc(1, sizeof *m);
    if (!m) {
        cJSON_Delete(root);
        return sp_oom(ctx, "the model");
    }
    struct sp_json_reader r = {ctx, name};
    st = read_model(&r, root, m);
    cJSON_Delete(root);
    if (st != SP_OK) {
        sp_problems_finish(ctx);
        sp_model_destroy(m);
        return st;
    }
    *out = m;
    return SP_OK;
}

sp_status sp_model_load(sp_ctx *ctx, const char *path, sp_model **out) {
    if (!ctx || !path || !out)
        return ctx ? sp_fail(ctx, SP_ERR_INVALID_ARG, "sp_model_load: NULL argument")
                   : SP_ERR_INVALID_ARG;
    sp_ctx_begin(ctx);
    *out = NULL;
    char *data = NULL;
    size_t len = 0;
    sp_status st = sp_read_file(ctx, path, MODEL_MAX_FILE_BYTES, &data, &len);
    if (st != SP_OK)
        return st;
    st = sp_model_parse(ctx, path, data, len, out);
    sp_free(data);
    return st;
}

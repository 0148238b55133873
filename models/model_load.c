/* models/model_load.c: reading "stagepart-model" documents (docs/formats.md#model); their
 * presets are expanded by model_presets.c.
 *
 * A preset ("gpt", "llama", "bert", "resnet") is expanded into the same JSON layer objects a
 * user would write, and those go through the one layer reader, so a preset can never mean
 * something the explicit form cannot. Every problem is reported with the file and JSON path. */
#include <stdio.h>
#include <string.h>

#include "json_util.h"
#include "model_impl.h"
#include "model_json.h"

#define MODEL_MAX_FILE_BYTES ((size_t)64 << 20)
#define MAX_LISTED_OPS       8 /* each may expand to 2: SP_MAX_OPS_PER_LAYER */
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
bool sp_model_get_dim(struct sp_json_reader *r, const cJSON *obj, const char *where,
                      const char *key, bool required, uint32_t lo, uint32_t hi, uint32_t dflt,
                      uint32_t *out) {
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
bool sp_model_get_choice(struct sp_json_reader *r, const cJSON *obj, const char *where,
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
        ok &= sp_model_get_dim(r, o, where, "hidden", true, 1, SP_MODEL_MAX_DIM, 0, &x.hidden);
        ok &= sp_model_get_choice(r, o, where, "norm", norm_names, 0, &norm);
        ok &= sp_json_get_bool(r, o, where, "bias", false, &bias);
        x.norm = (enum sp_norm_kind)norm;
        x.bias = bias;
        if (strcmp(op, "mlp") != 0) {
            ok &= sp_model_get_dim(r, o, where, "heads", true, 1, SP_MODEL_MAX_DIM, 0, &x.heads);
            ok &= sp_json_get_bool(r, o, where, "causal", false, &causal);
            x.causal = causal;
        }
        if (strcmp(op, "attention") != 0) {
            ok &= sp_model_get_dim(
                r, o, where, "ffn", strcmp(op, "mlp") == 0, 1, SP_MODEL_MAX_DIM,
                x.hidden <= SP_MODEL_MAX_DIM / 4 ? 4 * x.hidden : SP_MODEL_MAX_DIM, &x.ffn);
            ok &= sp_model_get_choice(r, o, where, "activation", act_names, 0, &act);
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
        ok &= sp_model_get_dim(r, o, where, "vocab", true, 1, SP_MODEL_MAX_DIM, 0, &x.vocab);
        ok &= sp_model_get_dim(r, o, where, "hidden", true, 1, SP_MODEL_MAX_DIM, 0, &x.hidden);
        ok &=
            sp_model_get_dim(r, o, where, "max_seq_len", true, 1, SP_MODEL_MAX_DIM, 0, &x.max_seq);
    } else if (strcmp(op, "layernorm") == 0 || strcmp(op, "rmsnorm") == 0) {
        x.kind = SP_OP_NORM;
        x.norm = op[0] == 'l' ? SP_NORM_LAYER : SP_NORM_RMS;
        ok &= sp_model_get_dim(r, o, where, "hidden", true, 1, SP_MODEL_MAX_DIM, 0, &x.hidden);
    } else if (strcmp(op, "linear") == 0) {
        x.kind = SP_OP_LINEAR;
        ok &= sp_model_get_dim(r, o, where, "in_features", true, 1, SP_MODEL_MAX_DIM, 0,
                               &x.in_features);
        ok &= sp_model_get_dim(r, o, where, "out_features", true, 1, SP_MODEL_MAX_DIM, 0,
                               &x.out_features);
        ok &= sp_json_get_bool(r, o, where, "bias", false, &bias);
        x.bias = bias;
    } else if (strcmp(op, "lm_head") == 0) {
        x.kind = SP_OP_LM_HEAD;
        ok &= sp_model_get_dim(r, o, where, "hidden", true, 1, SP_MODEL_MAX_DIM, 0, &x.hidden);
        ok &= sp_model_get_dim(r, o, where, "vocab", true, 1, SP_MODEL_MAX_DIM, 0, &x.vocab);
    } else if (strcmp(op, "conv2d") == 0) {
        x.kind = SP_OP_CONV2D;
        ok &= sp_model_get_dim(r, o, where, "in_channels", true, 1, SP_MODEL_MAX_DIM, 0, &x.in_ch);
        ok &=
            sp_model_get_dim(r, o, where, "out_channels", true, 1, SP_MODEL_MAX_DIM, 0, &x.out_ch);
        ok &= sp_model_get_dim(r, o, where, "kernel", true, 1, 64, 0, &x.kernel);
        ok &= sp_model_get_dim(r, o, where, "stride", false, 1, 64, 1, &x.stride);
        ok &= sp_model_get_dim(r, o, where, "padding", false, 0, 64, 0, &x.pad);
    } else if (strcmp(op, "batchnorm") == 0) {
        x.kind = SP_OP_BATCHNORM;
        ok &= sp_model_get_dim(r, o, where, "channels", true, 1, SP_MODEL_MAX_DIM, 0, &x.in_ch);
    } else if (strcmp(op, "relu") == 0) {
        x.kind = SP_OP_RELU;
    } else if (strcmp(op, "pool") == 0) {
        x.kind = SP_OP_POOL;
        ok &= sp_model_get_choice(r, o, where, "pool", pool_names, 0, &pool);
        x.pool = (enum sp_pool_kind)pool;
        if (x.pool == SP_POOL_MAX) {
            ok &= sp_model_get_dim(r, o, where, "kernel", true, 1, 64, 0, &x.kernel);
            ok &= sp_model_get_dim(r, o, where, "stride", false, 1, 64, x.kernel, &x.stride);
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

/* "preset": expanded into a layers array, *expanded (the caller deletes it) */
static sp_status expand_preset(struct sp_json_reader *r, const cJSON *preset, sp_model *m,
                               cJSON **expanded) {
    const char *kind = NULL;
    if (!cJSON_IsObject(preset)) {
        sp_json_problem(r, "", "preset", "expected an object");
        return SP_ERR_SCHEMA;
    }
    if (!sp_json_get_string(r, preset, "preset", "kind", true, 64, &kind))
        return SP_ERR_SCHEMA;
    if (!(*expanded = cJSON_CreateArray()))
        return sp_oom(r->ctx, "expanding a preset");
    bool done;
    if (strcmp(kind, "gpt") == 0 || strcmp(kind, "llama") == 0 || strcmp(kind, "bert") == 0) {
        done = sp_model_expand_transformer(r, preset, kind, *expanded);
    } else if (strcmp(kind, "resnet") == 0) {
        done = sp_model_expand_resnet(r, preset, *expanded, &m->input);
    } else {
        sp_json_problem(r, "preset", "kind",
                        "expected \"gpt\", \"llama\", \"bert\" or \"resnet\", got \"%s\"", kind);
        done = false;
    }
    if (!done)
        return r->ctx->status == SP_ERR_NOMEM ? SP_ERR_NOMEM : SP_ERR_SCHEMA;
    m->preset = sp_strdup(kind);
    return m->preset ? SP_OK : sp_oom(r->ctx, "the model");
}

/* "input" of a model given layer by layer: {channels, height, width} */
static sp_status read_input(struct sp_json_reader *r, const cJSON *root, sp_model *m) {
    const cJSON *in = cJSON_GetObjectItemCaseSensitive(root, "input");
    if (!in)
        return SP_OK;
    if (!cJSON_IsObject(in)) {
        sp_json_problem(r, "", "input", "expected an object {channels, height, width}");
        return SP_ERR_SCHEMA;
    }
    bool ok =
        sp_model_get_dim(r, in, "input", "channels", true, 1, SP_MODEL_MAX_DIM, 0, &m->input.c);
    ok &= sp_model_get_dim(r, in, "input", "height", true, 1, SP_MODEL_MAX_DIM, 0, &m->input.h);
    ok &= sp_model_get_dim(r, in, "input", "width", true, 1, SP_MODEL_MAX_DIM, 0, &m->input.w);
    return ok ? SP_OK : SP_ERR_SCHEMA;
}

/* the layers array (given, or a preset's expansion) into m->layers, names unique */
static sp_status read_layers(struct sp_json_reader *r, const cJSON *layers, bool preset,
                             sp_model *m) {
    int count = cJSON_IsArray(layers) ? cJSON_GetArraySize(layers) : -1;
    if (preset && (size_t)count > SP_MODEL_MAX_LAYERS) {
        sp_json_problem(r, "preset", "layers",
                        "the preset expands to %d layers, more than the limit of %u", count,
                        SP_MODEL_MAX_LAYERS);
        return SP_ERR_SCHEMA;
    }
    if (count < 1 || (size_t)count > SP_MODEL_MAX_LAYERS) {
        sp_json_problem(r, "", "layers", "expected an array of 1 to %u layers",
                        SP_MODEL_MAX_LAYERS);
        return SP_ERR_SCHEMA;
    }
    if (!(m->layers = sp_calloc((size_t)count, sizeof *m->layers)))
        return sp_oom(r->ctx, "the model's layers");
    sp_status st = SP_OK;
    size_t i = 0;
    for (const cJSON *e = layers->child; e && st != SP_ERR_NOMEM; e = e->next, i++) {
        if (!read_layer(r, e, i, &m->layers[i]))
            st = SP_ERR_SCHEMA;
        else if (!m->layers[i].name || !m->layers[i].kind || !m->layers[i].ops)
            st = sp_oom(r->ctx, "the model's layers");
        m->n_layers = i + 1;
    }
    if (st != SP_OK)
        return st;
    /* names are unique: profiles and plans match layers by name (the name is each layer's
     * first member, as sp_json_check_unique_names reads it) */
    if (!sp_json_check_unique_names(r, m->layers, sizeof *m->layers, m->n_layers))
        return sp_oom(r->ctx, "checking layer names");
    return r->ctx->problems ? SP_ERR_SCHEMA : SP_OK;
}

/* the first op of the model, which says what it takes in */
static bool check_first(struct sp_json_reader *r, sp_model *m, const struct sp_op *op) {
    m->tokens = op->kind == SP_OP_EMBEDDING;
    if (!m->tokens && m->input.c == 0) {
        sp_json_problem(r, "", "input",
                        "a model that does not start with an embedding needs \"input\": "
                        "{channels, height, width}");
        return false;
    }
    if (!m->tokens)
        return true;
    m->input = (struct sp_shape){0, 1, 0};
    if (!m->seq_len)
        m->seq_len = op->max_seq < 128 ? op->max_seq : 128;
    if (m->seq_len > op->max_seq) {
        sp_json_problem(r, "", "seq_len", "%u exceeds the embedding's max_seq_len (%u)", m->seq_len,
                        op->max_seq);
        return false;
    }
    return true;
}

/* what the chain starts and ends with: an embedding only first, an lm_head (the loss) last */
static sp_status check_ends(struct sp_json_reader *r, sp_model *m) {
    bool ok = true;
    for (size_t i = 0; i < m->n_layers; i++)
        for (size_t j = 0; j < m->layers[i].n_ops; j++) {
            const struct sp_op *op = &m->layers[i].ops[j];
            bool first = i == 0 && j == 0;
            bool last = i + 1 == m->n_layers && j + 1 == m->layers[i].n_ops;
            if (op->kind == SP_OP_EMBEDDING && !first) {
                sp_json_problem(r, "", "layers",
                                "layer %zu (%s): an embedding can only be the first op of the "
                                "model",
                                i, m->layers[i].name);
                ok = false;
            }
            if (op->kind == SP_OP_LM_HEAD && !last)
                sp_json_problem(r, "", "layers",
                                "layer %zu (%s): lm_head (with the loss) can only be the last "
                                "op of the model",
                                i, m->layers[i].name);
            else if (op->kind != SP_OP_LM_HEAD && last)
                sp_json_problem(r, "", "layers",
                                "the last layer (%s) must end in an lm_head op: the loss the "
                                "backward starts from",
                                m->layers[i].name);
            ok &= (op->kind == SP_OP_LM_HEAD) == last;
            if (first)
                ok &= check_first(r, m, op);
            if (last)
                m->classes = op->vocab;
        }
    if (m->tokens && ok && m->classes != m->layers[0].ops[0].vocab) {
        sp_json_problem(r, "", "layers",
                        "the lm_head's vocab (%u) differs from the embedding's (%u)", m->classes,
                        m->layers[0].ops[0].vocab);
        ok = false;
    }
    return ok ? SP_OK : SP_ERR_SCHEMA;
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
    ok &= sp_model_get_choice(r, root, "", "dtype", dtypes, 0, &dt);
    ok &=
        sp_model_get_dim(r, root, "", "micro_batch_size", false, 1, 65536, 1, &m->micro_batch_size);
    ok &= sp_model_get_dim(r, root, "", "seq_len", false, 1, SP_MODEL_MAX_DIM, 0, &m->seq_len);
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
    sp_status st = preset ? expand_preset(r, preset, m, &expanded) : read_input(r, root, m);
    if (st == SP_OK)
        st = read_layers(r, preset ? expanded : layers, preset != NULL, m);
    cJSON_Delete(expanded);
    if (st == SP_OK)
        st = check_ends(r, m);
    if (st != SP_OK)
        return st;
    m->name = sp_strdup(name);
    m->source = sp_strdup(source ? source : "");
    m->dtype = sp_strdup(dtypes[dt]);
    if (!m->name || !m->source || !m->dtype)
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

/* formats/profile.c: reading and validating "stagepart-profile" documents (docs/formats.md).
 *
 * Validation reports every problem with the file name and JSON path; unknown fields are
 * ignored so newer writers stay readable. Besides the per-field rules, totals are bounded so
 * that the partitioner's exact integer arithmetic cannot overflow: the sum of all layers'
 * fwd_ms + bwd_ms in nanoseconds and the sums of each byte field must stay below 2^62. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "devices_impl.h"
#include "json_util.h"
#include "profile_impl.h"

#define SP_PROFILE_MAX_FILE_BYTES ((size_t)4 << 30) /* 4 GiB: larger files are refused */

struct sp_profile {
    const sp_profile *base; /* a copy with cuts forbidden (sp_profile_forbid_cuts): everything
                             * but its layers is base's, borrowed */
    char *model, *source, *device;
    uint64_t micro_batch_size;
    bool forward_only;     /* "forward_only": the producer says there is no backward */
    bool wgrad_estimated;  /* "wgrad_estimated": the layers' wgrad_ms are not measured */
    uint64_t measured_sms; /* measurement.sms: the GPU SMs the times were taken on; 0: all */
    size_t n_layers;
    sp_layer *layers;
    char *pool; /* names and kinds, NUL-separated: every layer's name and kind lie in it */
    size_t pool_len;
    char sha256[65];
    sp_devices *devices; /* the optional "devices" list, or NULL */
};

void sp_profile_destroy(sp_profile *p) {
    if (!p)
        return;
    if (p->base) {
        sp_free(p->layers);
        sp_free(p);
        return;
    }
    sp_free(p->model);
    sp_free(p->source);
    sp_free(p->device);
    sp_free(p->layers);
    sp_free(p->pool);
    sp_devices_destroy(p->devices);
    sp_free(p);
}

sp_status sp_profile_forbid_cuts(sp_ctx *ctx, const sp_profile *p, const bool *no_cut,
                                 sp_profile **out) {
    *out = NULL;
    sp_profile *copy = sp_malloc(sizeof *copy);
    sp_layer *layers = sp_mallocarray(p->n_layers ? p->n_layers : 1, sizeof *layers);
    if (!copy || !layers) {
        sp_free(copy);
        sp_free(layers);
        return sp_oom(ctx, "copying the profile's layers");
    }
    *copy = *p;
    copy->base = p->base ? p->base : p;
    if (p->n_layers)
        memcpy(layers, p->layers, p->n_layers * sizeof *layers);
    for (size_t l = 0; l < p->n_layers; l++)
        layers[l].cut_after &= !no_cut[l];
    copy->layers = layers;
    *out = copy;
    return SP_OK;
}

const sp_devices *sp_profile_get_devices(const sp_profile *p) {
    return p ? p->devices : NULL;
}

size_t sp_profile_get_layer_count(const sp_profile *p) {
    return p ? p->n_layers : 0;
}
const sp_layer *sp_profile_get_layer(const sp_profile *p, size_t i) {
    return (p && i < p->n_layers) ? &p->layers[i] : NULL;
}
const char *sp_profile_get_model(const sp_profile *p) {
    return p ? p->model : "";
}
const char *sp_profile_get_source(const sp_profile *p) {
    return p && p->source ? p->source : "";
}
uint64_t sp_profile_get_micro_batch_size(const sp_profile *p) {
    return p ? p->micro_batch_size : 0;
}
bool sp_profile_get_wgrad_estimated(const sp_profile *p) {
    return p && p->wgrad_estimated;
}

uint32_t sp_profile_get_measured_sms(const sp_profile *p) {
    return p ? (uint32_t)p->measured_sms : 0;
}
const char *sp_profile_layer_pool(const sp_profile *p, size_t *len) {
    *len = p ? p->pool_len : 0;
    return p ? p->pool : NULL;
}
const char *sp_profile_get_sha256(const sp_profile *p) {
    return p ? p->sha256 : "";
}

enum layer_field {
    F_NAME,
    F_KIND,
    F_FWD,
    F_BWD,
    F_WGRAD,
    F_RECOMPUTE,
    F_ACTIVATION,
    F_SAVED,
    F_PARAM,
    F_MEMORY,
    F_CUT_AFTER,
    F_COUNT
};
static const char *const layer_field_names[F_COUNT] = {
    "name",        "kind",         "fwd_ms",           "bwd_ms",
    "wgrad_ms",    "recompute_ms", "activation_bytes", "saved_bytes",
    "param_bytes", "memory_bytes", "cut_after"};

/* Field of a layer object by key, or -1 for unknown keys (ignored). The first letter is
 * unique among the names, so one strcmp decides: profiles have millions of these. */
static int layer_field(const char *key) {
    static const signed char by_letter[26] = {
        ['a' - 'a'] = F_ACTIVATION + 1, ['b' - 'a'] = F_BWD + 1,   ['c' - 'a'] = F_CUT_AFTER + 1,
        ['f' - 'a'] = F_FWD + 1,        ['k' - 'a'] = F_KIND + 1,  ['m' - 'a'] = F_MEMORY + 1,
        ['n' - 'a'] = F_NAME + 1,       ['p' - 'a'] = F_PARAM + 1, ['r' - 'a'] = F_RECOMPUTE + 1,
        ['s' - 'a'] = F_SAVED + 1,      ['w' - 'a'] = F_WGRAD + 1};
    if (!key || key[0] < 'a' || key[0] > 'z')
        return -1;
    int f = by_letter[key[0] - 'a'] - 1;
    return (f >= 0 && strcmp(key, layer_field_names[f]) == 0) ? f : -1;
}

/* "layers[i]" without snprintf: it runs once per layer, and printf's machinery was a few percent
 * of reading a large profile */
static void layer_where(char *out, size_t i) {
    char digits[24];
    size_t n = 0;
    do
        digits[n++] = (char)('0' + i % 10);
    while ((i /= 10) != 0);
    memcpy(out, "layers[", 7);
    for (size_t k = 0; k < n; k++)
        out[7 + k] = digits[n - 1 - k];
    out[7 + n] = ']';
    out[8 + n] = '\0';
}

void sp_profile_read_layer(struct sp_json_reader *r, const cJSON *obj, size_t i, sp_layer *L) {
    char where[48];
    layer_where(where, i);
    memset(L, 0, sizeof *L);
    L->name = "";
    L->kind = "";
    L->wgrad_ms = -1;
    L->recompute_ms = -1;
    L->cut_after = true;
    if (!cJSON_IsObject(obj)) {
        char got[64];
        sp_json_problem(r, where, "", "expected an object, got %s",
                        sp_json_describe(obj, got, sizeof got));
        return;
    }
    const cJSON *f[F_COUNT] = {NULL};
    for (const cJSON *c = obj->child; c; c = c->next) {
        int k = layer_field(c->string);
        if (k >= 0 && !f[k])
            f[k] = c; /* a repeated key: the first occurrence counts */
    }
    const char *const *key = layer_field_names;
    sp_json_string(r, f[F_NAME], where, key[F_NAME], true, SP_NAME_MAX_BYTES, &L->name);
    sp_json_string(r, f[F_KIND], where, key[F_KIND], false, SP_NAME_MAX_BYTES, &L->kind);
    sp_json_number(r, f[F_FWD], where, key[F_FWD], true, 0, SP_PROFILE_MAX_LAYER_MS, &L->fwd_ms);
    sp_json_number(r, f[F_BWD], where, key[F_BWD], true, 0, SP_PROFILE_MAX_LAYER_MS, &L->bwd_ms);
    if (sp_json_number(r, f[F_WGRAD], where, key[F_WGRAD], false, 0, SP_PROFILE_MAX_LAYER_MS,
                       &L->wgrad_ms) &&
        L->wgrad_ms > L->bwd_ms)
        sp_json_problem(r, where, "wgrad_ms",
                        "expected at most bwd_ms (%g), got %g: wgrad_ms is the weight-gradient "
                        "part of bwd_ms",
                        L->bwd_ms, L->wgrad_ms);
    sp_json_number(r, f[F_RECOMPUTE], where, key[F_RECOMPUTE], false, 0, SP_PROFILE_MAX_LAYER_MS,
                   &L->recompute_ms);
    sp_json_uint(r, f[F_ACTIVATION], where, key[F_ACTIVATION], false, 0, &L->activation_bytes);
    sp_json_uint(r, f[F_SAVED], where, key[F_SAVED], false, 0, &L->saved_bytes);
    sp_json_uint(r, f[F_PARAM], where, key[F_PARAM], false, 0, &L->param_bytes);
    L->memory_bytes = L->param_bytes;
    sp_json_uint(r, f[F_MEMORY], where, key[F_MEMORY], false, 0, &L->memory_bytes);
    sp_json_bool(r, f[F_CUT_AFTER], where, key[F_CUT_AFTER], false, &L->cut_after);
}

/* Copies the borrowed name/kind strings (pointing into the cJSON tree) into one pool. */
static sp_status intern_strings(sp_ctx *ctx, sp_profile *p) {
    size_t total = 0;
    for (size_t i = 0; i < p->n_layers; i++)
        total += strlen(p->layers[i].name) + strlen(p->layers[i].kind) + 2;
    p->pool = sp_malloc(total);
    p->pool_len = total;
    if (!p->pool)
        return sp_oom(ctx, "storing layer names");
    char *w = p->pool;
    for (size_t i = 0; i < p->n_layers; i++) {
        size_t a = strlen(p->layers[i].name) + 1, b = strlen(p->layers[i].kind) + 1;
        memcpy(w, p->layers[i].name, a);
        p->layers[i].name = w;
        w += a;
        memcpy(w, p->layers[i].kind, b);
        p->layers[i].kind = w;
        w += b;
    }
    return SP_OK;
}

/* The sums the partitioner forms must stay exact (see SP_PROFILE_MAX_TOTAL_BYTES/_MS). */
static void check_totals(struct sp_json_reader *r, const sp_profile *p) {
    double time_ms = 0, mem = 0, saved = 0, param = 0, act = 0;
    for (size_t i = 0; i < p->n_layers; i++) {
        const sp_layer *L = &p->layers[i];
        time_ms += L->fwd_ms + L->bwd_ms + (L->recompute_ms > 0 ? L->recompute_ms : 0);
        mem += (double)L->memory_bytes;
        saved += (double)L->saved_bytes;
        param += (double)L->param_bytes;
        act += (double)L->activation_bytes;
    }
    if (time_ms > SP_PROFILE_MAX_TOTAL_MS)
        sp_json_problem(r, "layers", "",
                        "the sum of fwd_ms + bwd_ms + recompute_ms over all layers (%.4g ms) is "
                        "above the limit of %.4g ms (2^62 ns)",
                        time_ms, SP_PROFILE_MAX_TOTAL_MS);
    const struct {
        const char *what;
        double value;
    } totals[] = {{"memory_bytes", mem},
                  {"saved_bytes", saved},
                  {"param_bytes", param},
                  {"activation_bytes", act}};
    for (size_t i = 0; p->forward_only && i < p->n_layers; i++)
        if (p->layers[i].bwd_ms > 0) {
            sp_json_problem(r, "", "forward_only",
                            "expected no backward times with forward_only true, but layer %zu "
                            "('%s') has bwd_ms %g",
                            i, p->layers[i].name, p->layers[i].bwd_ms);
            break;
        }
    for (size_t k = 0; k < sizeof totals / sizeof totals[0]; k++)
        if (totals[k].value > SP_PROFILE_MAX_TOTAL_BYTES)
            sp_json_problem(r, "layers", "",
                            "the sum of %s over all layers (%.4g) is beyond 2^53, where a "
                            "stage's bytes stop being exact JSON integers",
                            totals[k].what, totals[k].value);
}

static sp_status dup_field(sp_ctx *ctx, const char *s, char **out) {
    *out = sp_strdup(s ? s : "");
    return *out ? SP_OK : sp_oom(ctx, "reading a profile");
}

/* ---- the document a piece at a time (core/json_split.c): the root's members except "layers"
 * are parsed into a small root object, and each layer is parsed, read and freed on its own, so a
 * profile of 100,000 layers never becomes one tree of a million nodes. Any JSON-level failure
 * falls back to parsing the whole document, whose messages name the problem as always. */

struct stream {
    sp_ctx *ctx;
    const char *name, *data;
    size_t len;
    cJSON *root;
    const char *layers; /* the "layers" value's text, or NULL */
    struct sp_json_reader *r;
    sp_profile *p;
    struct sp_strbuf pool;    /* names and kinds, NUL-separated, in layer order */
    struct sp_side_job *side; /* the digest, while the layers are read */
};

/* The first "layers" member, when it is an array: read where it stands, in pieces on several
 * threads (formats/profile_layers.c), which also says where it ends. */
static sp_status stream_take(void *arg, const char *key, size_t key_len, const char *value,
                             size_t rest_len, size_t *value_len) {
    struct stream *f = arg;
    if (f->layers || *value != '[' || key_len != 6 || memcmp(key, "layers", 6) != 0)
        return SP_OK;
    struct sp_profile_layers list;
    sp_status st =
        sp_profile_layers_read(f->r, value, rest_len, SP_PROFILE_PIECE_BYTES, 0, f->side, &list);
    if (st != SP_OK)
        return st;
    f->layers = value;
    f->p->layers = list.layers;
    f->p->n_layers = list.n;
    f->pool = list.pool;
    *value_len = (size_t)(list.end - value);
    return SP_OK;
}

static sp_status stream_member(void *arg, const char *key, size_t key_len, const char *value,
                               size_t value_len) {
    struct stream *f = arg;
    if (memchr(key, '\\', key_len)) /* an escaped key: the whole-document path reads it */
        return SP_ERR_PARSE;
    if (key_len == 6 && memcmp(key, "layers", 6) == 0) {
        if (!f->layers) /* not an array (a repeated key: the first counts, as cJSON reads it) */
            f->layers = value;
        return SP_OK;
    }
    cJSON *v = NULL;
    sp_status st = sp_json_parse_piece(f->ctx, f->name, f->data, f->len, value, value_len, &v);
    char *k = st == SP_OK ? sp_malloc(key_len + 1) : NULL;
    if (st == SP_OK && !k)
        st = SP_ERR_NOMEM;
    if (k) {
        memcpy(k, key, key_len);
        k[key_len] = '\0';
        if (!cJSON_AddItemToObject(f->root, k, v))
            st = SP_ERR_NOMEM;
        else
            v = NULL;
    }
    sp_free(k);
    cJSON_Delete(v);
    return st;
}

/* The root (without "layers") and every layer read; another status than SP_OK or SP_ERR_NOMEM
 * when the whole-document path must read it instead (malformed, not an object, no "layers"
 * array, no layer or too many, a NUL byte, an escaped key), with nothing of it kept. */
static sp_status stream_profile(struct stream *f) {
    if (strlen(f->data) != f->len)
        return SP_ERR_PARSE;
    if (!(f->root = cJSON_CreateObject()))
        return SP_ERR_NOMEM;
    sp_status st =
        sp_json_split_object_take(f->ctx, f->name, f->data, f->len, stream_take, stream_member, f);
    if (st == SP_OK && (!f->layers || f->layers[0] != '['))
        st = SP_ERR_PARSE;
    if (st == SP_OK && f->p->n_layers == 0)
        st = SP_ERR_PARSE; /* the whole-document path says why */
    if (st == SP_OK) {     /* the pool stops moving: offsets become pointers */
        const char *base = sp_strbuf_str(&f->pool);
        for (size_t i = 0; i < f->p->n_layers; i++) {
            f->p->layers[i].name = base + (uintptr_t)f->p->layers[i].name;
            f->p->layers[i].kind = base + (uintptr_t)f->p->layers[i].kind;
        }
    }
    return st;
}

/* the profile's digest, on whichever thread is free while the layers are read */
struct digest_job {
    const char *data;
    size_t len;
    char hex[65];
    bool ok;
};

static void run_digest(void *arg) {
    struct digest_job *d = arg;
    sp_ctx own = {0}; /* a failure is told by computing it again on the caller's context */
    d->ok = sp_sha256_hex(&own, d->data, d->len, d->hex) == SP_OK;
    sp_strbuf_release(&own.err);
    sp_strbuf_release(&own.warn);
}

/* the top level's fields besides the layers */
struct profile_head {
    const char *model, *source, *device;
};
static const struct sp_json_field head_fields[] = {
    {"model", SP_JSON_STRING, true, offsetof(struct profile_head, model), 0, SP_NAME_MAX_BYTES, 0},
    {"source", SP_JSON_STRING, false, offsetof(struct profile_head, source), 0, 1 << 20, 0},
    {"device", SP_JSON_STRING, false, offsetof(struct profile_head, device), 0, SP_NAME_MAX_BYTES,
     0},
};
/* and those that go into the profile as they are (micro_batch_size is optional: published
 * profiles often do not record it; 0: unknown) */
static const struct sp_json_field profile_fields[] = {
    {"micro_batch_size", SP_JSON_UINT, false, offsetof(sp_profile, micro_batch_size), 1, 0, 0},
    {"forward_only", SP_JSON_BOOL, false, offsetof(sp_profile, forward_only), 0, 0, 0},
    {"wgrad_estimated", SP_JSON_BOOL, false, offsetof(sp_profile, wgrad_estimated), 0, 0, 0},
};

/* the document as a tree: streamed (the layers read on every core as they are split off), else
 * parsed whole, whose messages say what is wrong; *streamed says which */
static sp_status parse_tree(struct stream *f, cJSON **root, bool *streamed) {
    sp_ctx *ctx = f->ctx;
    sp_profile *p = f->p;
    sp_strbuf_init(&f->pool);
    sp_status st = stream_profile(f);
    *root = f->root;
    *streamed = st == SP_OK;
    if (st == SP_OK) {
        p->pool = f->pool.buf; /* the layers' names and kinds */
        p->pool_len = f->pool.len;
        return SP_OK;
    }
    sp_strbuf_release(&f->pool);
    cJSON_Delete(*root);
    *root = NULL;
    sp_free(p->layers);
    p->layers = NULL;
    p->n_layers = 0;
    if (st == SP_ERR_NOMEM) {
        char what[512];
        snprintf(what, sizeof what, "reading %s", f->name);
        return sp_oom(ctx, what);
    }
    sp_ctx_begin(ctx); /* the whole document, as one tree: its messages say what is wrong */
    return sp_json_parse(ctx, f->name, f->data, f->len, root);
}

/* the header, the head's fields, the SMs measured on, the devices: SP_OK (problems with the
 * fields recorded, so that the layers' are reported beside them), SP_ERR_SCHEMA when the
 * document is no profile, SP_ERR_NOMEM */
static sp_status read_head(struct sp_json_reader *r, const cJSON *root, sp_profile *p,
                           struct profile_head *h) {
    if (!cJSON_IsObject(root)) {
        char got[64];
        sp_json_problem(r, "", "", "expected a JSON object at the top level, got %s",
                        sp_json_describe(root, got, sizeof got));
        return SP_ERR_SCHEMA;
    }
    if (!sp_json_check_header(r, root, "stagepart-profile", 1))
        return SP_ERR_SCHEMA; /* another kind of document: its fields would only add noise */
    sp_json_read_fields(r, root, "", head_fields, SP_COUNT_OF(head_fields), h);
    sp_json_read_fields(r, root, "", profile_fields, SP_COUNT_OF(profile_fields), p);
    const cJSON *measurement = cJSON_GetObjectItemCaseSensitive(root, "measurement");
    if (cJSON_IsObject(measurement) &&
        sp_json_get_uint(r, measurement, "measurement", "sms", false, 1, &p->measured_sms) &&
        p->measured_sms > SP_MAX_SMS)
        sp_json_problem(r, "measurement", "sms", "expected at most %u SMs, got %llu", SP_MAX_SMS,
                        (unsigned long long)p->measured_sms);
    const cJSON *devices = cJSON_GetObjectItemCaseSensitive(root, "devices");
    if (devices && !cJSON_IsNull(devices) &&
        sp_devices_from_json(r, devices, "devices", &p->devices) == SP_ERR_NOMEM)
        return SP_ERR_NOMEM;
    return SP_OK;
}

/* the layers of a document parsed whole: SP_OK (each layer's problems recorded), SP_ERR_SCHEMA
 * when there is no array of them, SP_ERR_LIMIT, SP_ERR_NOMEM */
static sp_status read_tree_layers(struct sp_json_reader *r, const cJSON *root, sp_profile *p) {
    const cJSON *layers = cJSON_GetObjectItemCaseSensitive(root, "layers");
    if (!cJSON_IsArray(layers)) {
        char got[64];
        sp_json_problem(r, "", "layers", "expected an array of layer objects, got %s",
                        layers ? sp_json_describe(layers, got, sizeof got)
                               : "nothing (field missing)");
        return SP_ERR_SCHEMA;
    }
    size_t n = 0;
    for (const cJSON *c = layers->child; c; c = c->next)
        n++;
    if (n == 0) {
        sp_json_problem(r, "", "layers", "expected at least one layer, got an empty array");
        return SP_ERR_SCHEMA;
    }
    if (n > SP_PROFILE_MAX_LAYERS) {
        sp_json_problem(r, "", "layers", "%zu layers is more than the limit of %u", n,
                        SP_PROFILE_MAX_LAYERS);
        return SP_ERR_LIMIT;
    }
    if (!(p->layers = sp_mallocarray(n, sizeof *p->layers)))
        return sp_oom(r->ctx, "reading layers");
    p->n_layers = n;
    size_t i = 0;
    for (const cJSON *c = layers->child; c; c = c->next, i++)
        sp_profile_read_layer(r, c, i, &p->layers[i]);
    return SP_OK;
}

/* names unique, totals within a profile's limits; the strings interned when parsed whole */
static sp_status check_layers(struct sp_json_reader *r, sp_profile *p, bool streamed) {
    if (r->ctx->problems)
        return SP_ERR_SCHEMA;
    if (!sp_json_check_unique_names(r, p->layers, sizeof *p->layers, p->n_layers))
        return sp_oom(r->ctx, "checking layer names");
    if (r->ctx->problems == 0)
        check_totals(r, p);
    if (r->ctx->problems == 0 && !streamed)
        return intern_strings(r->ctx, p);
    return r->ctx->problems ? SP_ERR_SCHEMA : SP_OK;
}

static sp_status read_profile(struct sp_json_reader *r, const cJSON *root, bool streamed,
                              sp_profile *p, struct profile_head *h) {
    sp_status st = read_head(r, root, p, h);
    if (st == SP_OK && !streamed)
        st = read_tree_layers(r, root, p);
    return st == SP_OK ? check_layers(r, p, streamed) : st;
}

sp_status sp_profile_parse(sp_ctx *ctx, const char *name, const char *data, size_t len,
                           sp_profile **out) {
    if (!ctx)
        return SP_ERR_INVALID_ARG;
    sp_ctx_begin(ctx);
    if (!out || !data)
        return sp_fail(ctx, SP_ERR_INVALID_ARG, "sp_profile_parse: NULL argument");
    *out = NULL;
    name = name ? name : "<profile>";
    struct sp_json_reader r = {ctx, name};
    sp_profile *p = sp_calloc(1, sizeof *p);
    if (!p)
        return sp_oom(ctx, "reading a profile");
    struct digest_job digest = {.data = data, .len = len};
    struct sp_side_job side = {.run = run_digest, .arg = &digest};
    struct stream f = {
        .ctx = ctx, .name = name, .data = data, .len = len, .r = &r, .p = p, .side = &side};
    cJSON *root = NULL;
    bool streamed = false;
    struct profile_head h = {0};
    sp_status st = parse_tree(&f, &root, &streamed);
    if (st == SP_OK)
        st = read_profile(&r, root, streamed, p, &h);
    if (ctx->problems && st != SP_ERR_NOMEM) {
        sp_problems_finish(ctx);
        ctx->status = st;
    }
    if (st == SP_OK)
        st = dup_field(ctx, h.model, &p->model);
    if (st == SP_OK)
        st = dup_field(ctx, h.source, &p->source);
    if (st == SP_OK)
        st = dup_field(ctx, h.device, &p->device);
    if (st == SP_OK && side.done && digest.ok)
        memcpy(p->sha256, digest.hex, sizeof p->sha256);
    else if (st == SP_OK)
        st = sp_sha256_hex(ctx, data, len, p->sha256);
    cJSON_Delete(root);
    if (st != SP_OK) {
        sp_profile_destroy(p);
        return st;
    }
    *out = p;
    return SP_OK;
}

sp_status sp_profile_load(sp_ctx *ctx, const char *path, sp_profile **out) {
    if (!ctx)
        return SP_ERR_INVALID_ARG;
    sp_ctx_begin(ctx);
    if (!path || !out)
        return sp_fail(ctx, SP_ERR_INVALID_ARG, "sp_profile_load: NULL argument");
    *out = NULL;
    char *data = NULL;
    size_t len = 0;
    sp_status st = sp_read_file(ctx, path, SP_PROFILE_MAX_FILE_BYTES, &data, &len);
    if (st != SP_OK)
        return st;
    st = sp_profile_parse(ctx, path, data, len, out);
    sp_free(data);
    return st;
}

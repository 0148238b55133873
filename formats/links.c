/* formats/links.c: link matrices, the "stagepart-links" document: read and validated (with the
 * file name and JSON path in every message), looked up by the partitioner, and written from what
 * a bandwidth probe fitted (the probe's measurement details ride along, profiler/links_json.c). */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "devices_impl.h"
#include "json_util.h"

void sp_links_destroy(sp_links *l) {
    if (!l)
        return;
    for (size_t i = 0; i < l->n; i++)
        sp_free(l->names[i]);
    sp_free(l->names);
    sp_free(l->bw_GBps);
    sp_free(l->latency_us);
    sp_free(l);
}
size_t sp_links_get_count(const sp_links *l) {
    return l ? l->n : 0;
}
const char *sp_links_get_name(const sp_links *l, size_t i) {
    return l && i < l->n ? l->names[i] : NULL;
}
size_t sp_links_find(const sp_links *l, const char *name) {
    size_t k = 0;
    while (k < sp_links_get_count(l) && strcmp(l->names[k], name) != 0)
        k++;
    return k;
}

sp_status sp_links_select(sp_ctx *ctx, const sp_links *src, const size_t *idx, size_t n,
                          sp_links **out) {
    *out = NULL;
    sp_links *l = sp_calloc(1, sizeof *l);
    if (!l || !(l->names = sp_calloc(n, sizeof *l->names)) ||
        !(l->bw_GBps = sp_mallocarray(n * n, sizeof *l->bw_GBps)) ||
        !(l->latency_us = sp_mallocarray(n * n, sizeof *l->latency_us))) {
        sp_links_destroy(l);
        return sp_oom(ctx, "choosing links");
    }
    l->n = n;
    for (size_t i = 0; i < n; i++) {
        if (!(l->names[i] = sp_strdup(src->names[idx[i]]))) {
            sp_links_destroy(l);
            return sp_oom(ctx, "choosing links");
        }
        for (size_t j = 0; j < n; j++) {
            l->bw_GBps[i * n + j] = src->bw_GBps[idx[i] * src->n + idx[j]];
            l->latency_us[i * n + j] = src->latency_us[idx[i] * src->n + idx[j]];
        }
    }
    *out = l;
    return SP_OK;
}

double sp_links_transfer_ms(const sp_links *l, size_t from, size_t to, uint64_t bytes) {
    if (!l || from >= l->n || to >= l->n)
        return -1;
    if (from == to)
        return 0;
    size_t k = from * l->n + to;
    return l->latency_us[k] / 1e3 + (double)bytes / (l->bw_GBps[k] * 1e6);
}

/* An N x N matrix of numbers: the diagonal (a device to itself, ignored) finite and >= 0, the
 * others in [off_min, off_max]. */
static void read_matrix(struct sp_json_reader *r, const cJSON *root, const char *key, size_t n,
                        double off_min, double off_max, double *out) {
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(root, key);
    char got[64];
    if (!cJSON_IsArray(m) || (size_t)cJSON_GetArraySize(m) != n) {
        sp_json_problem(r, "", key, "expected an array of %zu rows (one per device), got %s", n,
                        m ? sp_json_describe(m, got, sizeof got) : "nothing (field missing)");
        return;
    }
    size_t i = 0;
    for (const cJSON *row = m->child; row; row = row->next, i++) {
        char where[64];
        snprintf(where, sizeof where, "%s[%zu]", key, i);
        if (!cJSON_IsArray(row) || (size_t)cJSON_GetArraySize(row) != n) {
            sp_json_problem(r, where, "", "expected an array of %zu numbers", n);
            continue;
        }
        size_t j = 0;
        for (const cJSON *v = row->child; v; v = v->next, j++) {
            char at[80];
            snprintf(at, sizeof at, "%s[%zu][%zu]", key, i, j);
            if (!cJSON_IsNumber(v)) {
                sp_json_problem(r, at, "", "expected a number, got %s",
                                sp_json_describe(v, got, sizeof got));
                continue;
            }
            sp_json_number(r, v, at, "", true, i == j ? 0 : off_min,
                           i == j ? (double)INFINITY : off_max, &out[i * n + j]);
        }
    }
}

static sp_status links_from_doc(sp_ctx *ctx, const char *path, cJSON *root, sp_links **out);

sp_status sp_links_load(sp_ctx *ctx, const char *path, sp_links **out) {
    if (!ctx)
        return SP_ERR_INVALID_ARG;
    sp_ctx_begin(ctx);
    if (!path || !out)
        return sp_fail(ctx, SP_ERR_INVALID_ARG, "sp_links_load: NULL argument");
    *out = NULL;
    cJSON *root = NULL;
    sp_status st = sp_small_doc_load(ctx, path, "stagepart-links", &root);
    return st == SP_OK ? links_from_doc(ctx, path, root, out) : st;
}

sp_status sp_links_parse(sp_ctx *ctx, const char *name, const char *data, size_t len,
                         sp_links **out) {
    if (!ctx)
        return SP_ERR_INVALID_ARG;
    sp_ctx_begin(ctx);
    if (!data || !out)
        return sp_fail(ctx, SP_ERR_INVALID_ARG, "sp_links_parse: NULL argument");
    *out = NULL;
    name = name ? name : "<links>";
    cJSON *root = NULL;
    sp_status st = sp_small_doc_parse(ctx, name, data, len, "stagepart-links", &root);
    return st == SP_OK ? links_from_doc(ctx, name, root, out) : st;
}

/* consumes root */
static sp_status links_from_doc(sp_ctx *ctx, const char *path, cJSON *root, sp_links **out) {
    struct sp_json_reader r = {ctx, path};
    const cJSON *names = cJSON_GetObjectItemCaseSensitive(root, "devices");
    size_t n = cJSON_IsArray(names) ? (size_t)cJSON_GetArraySize(names) : 0;
    if (n == 0 || n > SP_MAX_DEVICES) {
        sp_json_problem(&r, "", "devices", "expected an array of 1 to %u device names",
                        SP_MAX_DEVICES);
        sp_problems_finish(ctx);
        cJSON_Delete(root);
        return SP_ERR_SCHEMA;
    }
    sp_links *l = sp_calloc(1, sizeof *l);
    if (!l || !(l->names = sp_calloc(n, sizeof *l->names)) ||
        !(l->bw_GBps = sp_calloc(n * n, sizeof *l->bw_GBps)) ||
        !(l->latency_us = sp_calloc(n * n, sizeof *l->latency_us))) {
        sp_links_destroy(l);
        cJSON_Delete(root);
        return sp_oom(ctx, "reading links");
    }
    l->n = n;
    size_t i = 0;
    for (const cJSON *c = names->child; c; c = c->next, i++) {
        char where[48];
        snprintf(where, sizeof where, "devices[%zu]", i);
        if (!cJSON_IsString(c) || !*c->valuestring)
            sp_json_problem(&r, where, "", "expected a device name");
        l->names[i] = sp_strdup(cJSON_IsString(c) ? c->valuestring : "");
        if (!l->names[i]) {
            sp_links_destroy(l);
            cJSON_Delete(root);
            return sp_oom(ctx, "reading links");
        }
    }
    read_matrix(&r, root, "bandwidth_GBps", n, SP_LINKS_MIN_BANDWIDTH_GBPS, (double)INFINITY,
                l->bw_GBps);
    read_matrix(&r, root, "latency_us", n, 0, SP_LINKS_MAX_LATENCY_US, l->latency_us);
    cJSON_Delete(root);
    if (ctx->problems) {
        sp_problems_finish(ctx);
        ctx->status = SP_ERR_SCHEMA;
        sp_links_destroy(l);
        return SP_ERR_SCHEMA;
    }
    *out = l;
    return SP_OK;
}

sp_status sp_links_to_json(sp_ctx *ctx, size_t n, const char *const *names, const double *bw_GBps,
                           const double *latency_us, cJSON *measurement, char **json) {
    *json = NULL;
    cJSON *root = cJSON_CreateObject(), *devs = NULL, *bw = NULL, *lat = NULL;
    bool ok = root && cJSON_AddStringToObject(root, "format", "stagepart-links") &&
              cJSON_AddNumberToObject(root, "version", 1) &&
              (devs = cJSON_AddArrayToObject(root, "devices")) &&
              (bw = cJSON_AddArrayToObject(root, "bandwidth_GBps")) &&
              (lat = cJSON_AddArrayToObject(root, "latency_us"));
    for (size_t i = 0; ok && i < n; i++) {
        cJSON *rb = NULL, *rl = NULL;
        ok = cJSON_AddItemToArray(devs, cJSON_CreateString(names[i])) &&
             (rb = cJSON_CreateArray()) && cJSON_AddItemToArray(bw, rb) &&
             (rl = cJSON_CreateArray()) && cJSON_AddItemToArray(lat, rl);
        for (size_t j = 0; ok && j < n; j++)
            ok = cJSON_AddItemToArray(rb, cJSON_CreateNumber(bw_GBps[i * n + j])) &&
                 cJSON_AddItemToArray(rl, cJSON_CreateNumber(latency_us[i * n + j]));
    }
    if (ok && measurement) /* the measurement last, behind the matrices it explains */
        ok = cJSON_AddItemToObject(root, "measurement", measurement);
    else
        cJSON_Delete(measurement);
    sp_status st = ok ? sp_json_print(ctx, root, 0, "the links", json) : sp_oom(ctx, "the links");
    cJSON_Delete(root);
    return st;
}

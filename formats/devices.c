/* formats/devices.c: device lists ("stagepart-devices" files and a profile's "devices" array) and
 * link matrices ("stagepart-links" files). Both are small; both are validated fully with the
 * file name and JSON path in every message. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "devices_impl.h"
#include "json_util.h"

#define SP_SMALL_FILE_BYTES ((size_t)64 << 20)

void sp_devices_destroy(sp_devices *d) {
    if (!d)
        return;
    for (size_t i = 0; i < d->n; i++)
        sp_free((char *)d->info[i].name);
    sp_free(d->info);
    sp_free(d);
}
size_t sp_devices_count(const sp_devices *d) {
    return d ? d->n : 0;
}
const sp_device_info *sp_devices_get(const sp_devices *d, size_t i) {
    return d && i < d->n ? &d->info[i] : NULL;
}

sp_status sp_devices_select(sp_ctx *ctx, const sp_devices *src, const size_t *idx, size_t n,
                            sp_devices **out) {
    *out = NULL;
    sp_devices *d = sp_calloc(1, sizeof *d);
    if (!d || !(d->info = sp_calloc(n, sizeof *d->info))) {
        sp_free(d);
        return sp_oom(ctx, "choosing devices");
    }
    d->n = n;
    for (size_t i = 0; i < n; i++) {
        d->info[i] = src->info[idx[i]];
        if (!(d->info[i].name = sp_strdup(src->info[idx[i]].name))) {
            sp_devices_destroy(d);
            return sp_oom(ctx, "choosing devices");
        }
    }
    *out = d;
    return SP_OK;
}

sp_status sp_devices_from_json(struct sp_json_reader *r, const cJSON *arr, const char *where,
                               sp_devices **out) {
    *out = NULL;
    char got[64];
    if (!cJSON_IsArray(arr) || !arr->child) {
        sp_json_problem(r, where, "", "expected a non-empty array of device objects, got %s",
                        sp_json_describe(arr, got, sizeof got));
        return SP_ERR_SCHEMA;
    }
    size_t n = 0;
    for (const cJSON *c = arr->child; c; c = c->next)
        n++;
    if (n > SP_MAX_DEVICES) {
        sp_json_problem(r, where, "", "%zu devices is more than the limit of %u", n,
                        SP_MAX_DEVICES);
        return SP_ERR_LIMIT;
    }
    sp_devices *d = sp_calloc(1, sizeof *d);
    if (!d || !(d->info = sp_calloc(n, sizeof *d->info))) {
        sp_free(d);
        return sp_oom(r->ctx, "reading devices");
    }
    d->n = n;
    unsigned before = r->ctx->problems;
    size_t i = 0;
    for (const cJSON *c = arr->child; c; c = c->next, i++) {
        char at[64];
        snprintf(at, sizeof at, "%s[%zu]", where, i);
        sp_device_info *info = &d->info[i];
        info->speed = 1.0;
        const char *name = NULL;
        if (!cJSON_IsObject(c)) {
            sp_json_problem(r, at, "", "expected an object, got %s",
                            sp_json_describe(c, got, sizeof got));
            continue;
        }
        sp_json_get_string(r, c, at, "name", true, SP_NAME_MAX_BYTES, &name);
        sp_json_get_number(r, c, at, "speed", false, SP_MIN_SPEED, SP_MAX_SPEED, &info->speed);
        sp_json_get_uint(r, c, at, "memory_bytes", false, 0, &info->memory_bytes);
        for (size_t k = 0; name && k < i; k++)
            if (d->info[k].name && strcmp(d->info[k].name, name) == 0)
                sp_json_problem(r, at, "name",
                                "duplicate device name \"%s\" (first used by %s[%zu])", name, where,
                                k);
        info->name = sp_strdup(name ? name : "");
        if (!info->name) {
            sp_devices_destroy(d);
            return sp_oom(r->ctx, "reading devices");
        }
    }
    if (r->ctx->problems != before) {
        sp_devices_destroy(d);
        return SP_ERR_SCHEMA;
    }
    *out = d;
    return SP_OK;
}

static sp_status parse_doc(sp_ctx *ctx, const char *path, const char *data, size_t len,
                           const char *format, cJSON **root) {
    sp_status st = sp_json_parse(ctx, path, data, len, root);
    if (st != SP_OK)
        return st;
    struct sp_json_reader r = {ctx, path};
    if (!cJSON_IsObject(*root) || !sp_json_check_header(&r, *root, format, 1)) {
        if (!cJSON_IsObject(*root))
            sp_json_problem(&r, "", "", "expected a JSON object at the top level");
        cJSON_Delete(*root);
        *root = NULL;
        ctx->status = SP_ERR_SCHEMA;
        return SP_ERR_SCHEMA;
    }
    return SP_OK;
}

static sp_status load_doc(sp_ctx *ctx, const char *path, const char *format, cJSON **root) {
    char *data = NULL;
    size_t len = 0;
    sp_status st = sp_read_file(ctx, path, SP_SMALL_FILE_BYTES, &data, &len);
    if (st != SP_OK)
        return st;
    st = parse_doc(ctx, path, data, len, format, root);
    sp_free(data);
    return st;
}

sp_status sp_devices_load(sp_ctx *ctx, const char *path, sp_devices **out) {
    if (!ctx)
        return SP_ERR_INVALID_ARG;
    sp_ctx_begin(ctx);
    if (!path || !out)
        return sp_fail(ctx, SP_ERR_INVALID_ARG, "sp_devices_load: NULL argument");
    *out = NULL;
    cJSON *root = NULL;
    sp_status st = load_doc(ctx, path, "stagepart-devices", &root);
    if (st != SP_OK)
        return st;
    struct sp_json_reader r = {ctx, path};
    st =
        sp_devices_from_json(&r, cJSON_GetObjectItemCaseSensitive(root, "devices"), "devices", out);
    sp_problems_finish(ctx);
    cJSON_Delete(root);
    return st;
}

/* ---- links */

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
size_t sp_links_count(const sp_links *l) {
    return l ? l->n : 0;
}
const char *sp_links_name(const sp_links *l, size_t i) {
    return l && i < l->n ? l->names[i] : NULL;
}
size_t sp_links_find(const sp_links *l, const char *name) {
    size_t k = 0;
    while (k < sp_links_count(l) && strcmp(l->names[k], name) != 0)
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
    sp_status st = load_doc(ctx, path, "stagepart-links", &root);
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
    sp_status st = parse_doc(ctx, name, data, len, "stagepart-links", &root);
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

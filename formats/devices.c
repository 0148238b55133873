/* formats/devices.c: device lists ("stagepart-devices" files and a profile's "devices" array),
 * validated fully with the file name and JSON path in every message; and the loading of small
 * documents that devices and links files share. Links are formats/links.c. */
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
size_t sp_devices_get_count(const sp_devices *d) {
    return d ? d->n : 0;
}
const sp_device_info *sp_devices_get_device(const sp_devices *d, size_t i) {
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

sp_status sp_small_doc_parse(sp_ctx *ctx, const char *path, const char *data, size_t len,
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

sp_status sp_small_doc_load(sp_ctx *ctx, const char *path, const char *format, cJSON **root) {
    char *data = NULL;
    size_t len = 0;
    sp_status st = sp_read_file(ctx, path, SP_SMALL_FILE_BYTES, &data, &len);
    if (st != SP_OK)
        return st;
    st = sp_small_doc_parse(ctx, path, data, len, format, root);
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
    sp_status st = sp_small_doc_load(ctx, path, "stagepart-devices", &root);
    if (st != SP_OK)
        return st;
    struct sp_json_reader r = {ctx, path};
    st =
        sp_devices_from_json(&r, cJSON_GetObjectItemCaseSensitive(root, "devices"), "devices", out);
    sp_problems_finish(ctx);
    cJSON_Delete(root);
    return st;
}

/* formats/module_map.c: the "stagepart-modules" document the PyTorch helper writes
 * (stagepart_torch.describe, Annotation.write_modules): what a model knows of its modules that
 * its trace does not. Read and validated here, with the file and JSON path in every message. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "devices_impl.h"
#include "json_util.h"
#include "stagepart/profile.h"
#include "stagepart/profiler.h"

struct sp_module_map {
    sp_module_entry *entries;
    size_t n;
    cJSON *root; /* owns the strings */
    char *file;
};

void sp_module_map_destroy(sp_module_map *m) {
    if (!m)
        return;
    sp_free(m->entries);
    sp_free(m->file);
    cJSON_Delete(m->root);
    sp_free(m);
}

size_t sp_module_map_get_count(const sp_module_map *m) {
    return m ? m->n : 0;
}

const char *sp_module_map_get_file(const sp_module_map *m) {
    return m && m->file ? m->file : "";
}

const sp_module_entry *sp_module_map_get(const sp_module_map *m, size_t i) {
    return m && i < m->n ? &m->entries[i] : NULL;
}

const sp_module_entry *sp_module_map_find(const sp_module_map *m, const char *name) {
    for (size_t i = 0; m && i < m->n; i++) {
        const sp_module_entry *e = &m->entries[i];
        if (strcmp(e->path, name) == 0 || (e->instance && strcmp(e->instance, name) == 0))
            return e;
    }
    return NULL;
}

static bool read_entry(struct sp_json_reader *r, const cJSON *o, size_t i, sp_module_entry *e) {
    char where[48];
    snprintf(where, sizeof where, "modules[%zu]", i);
    if (!cJSON_IsObject(o)) {
        sp_json_problem(r, where, "", "expected an object");
        return false;
    }
    bool ok = sp_json_get_string(r, o, where, "path", true, SP_NAME_MAX_BYTES, &e->path);
    ok &= sp_json_get_string(r, o, where, "instance", false, SP_NAME_MAX_BYTES, &e->instance);
    ok &= sp_json_get_string(r, o, where, "class", true, SP_NAME_MAX_BYTES, &e->class_name);
    ok &= sp_json_get_uint(r, o, where, "param_bytes", true, 0, &e->param_bytes);
    e->has_activation_bytes = cJSON_GetObjectItemCaseSensitive(o, "activation_bytes") != NULL;
    ok &= sp_json_get_uint(r, o, where, "activation_bytes", false, 0, &e->activation_bytes);
    ok &= sp_json_get_bool(r, o, where, "contains_attention", false, &e->contains_attention);
    return ok;
}

static int cmp_entry_path(const void *a, const void *b) {
    return strcmp((*(const sp_module_entry *const *)a)->path,
                  (*(const sp_module_entry *const *)b)->path);
}

/* a name finds one module: an instance name is no other module's path (the fuzzer found a map
 * where a module's instance was another's path, so the path found the first). false when out of
 * memory; each clash is a problem recorded. */
static bool check_instances_not_paths(struct sp_json_reader *r, const sp_module_map *m) {
    const sp_module_entry **by_path = sp_mallocarray(m->n, sizeof *by_path);
    if (!by_path)
        return false;
    for (size_t i = 0; i < m->n; i++)
        by_path[i] = &m->entries[i];
    qsort(by_path, m->n, sizeof *by_path, cmp_entry_path);
    for (size_t i = 0; i < m->n; i++) {
        const sp_module_entry *e = &m->entries[i], key = {.path = e->instance}, *k = &key;
        if (!e->instance)
            continue;
        const sp_module_entry **hit = bsearch(&k, by_path, m->n, sizeof *by_path, cmp_entry_path);
        if (hit && *hit != e) {
            char where[48];
            snprintf(where, sizeof where, "modules[%zu]", i);
            sp_json_problem(r, where, "instance",
                            "\"%s\" is the path of modules[%zu]: a name must find one module",
                            e->instance, (size_t)(*hit - m->entries));
        }
    }
    sp_free(by_path);
    return true;
}

/* consumes root */
static sp_status map_from_doc(sp_ctx *ctx, const char *path, cJSON *root, sp_module_map **out) {
    struct sp_json_reader r = {ctx, path};
    const cJSON *mods = cJSON_GetObjectItemCaseSensitive(root, "modules");
    size_t n = cJSON_IsArray(mods) ? (size_t)cJSON_GetArraySize(mods) : 0;
    if (n == 0 || n > SP_PROFILE_MAX_LAYERS) {
        sp_json_problem(&r, "", "modules", "expected an array of 1 to %u modules",
                        SP_PROFILE_MAX_LAYERS);
        sp_problems_finish(ctx);
        cJSON_Delete(root);
        return SP_ERR_SCHEMA;
    }
    sp_module_map *m = sp_calloc(1, sizeof *m);
    if (!m || !(m->entries = sp_calloc(n, sizeof *m->entries))) {
        sp_free(m);
        cJSON_Delete(root);
        return sp_oom(ctx, "reading a module map");
    }
    m->root = root;
    m->n = n;
    if (!(m->file = sp_strdup(path))) {
        sp_module_map_destroy(m);
        return sp_oom(ctx, "reading a module map");
    }
    bool ok = true;
    size_t i = 0;
    for (const cJSON *c = mods->child; c; c = c->next, i++)
        ok &= read_entry(&r, c, i, &m->entries[i]);
    /* a name must find one module: paths unique, instance names unique (an entry without one
     * stands in with a name no instance has: a control character and its index) */
    const char **inst = ok ? sp_calloc(n, sizeof *inst) : NULL;
    char *spare = ok ? sp_calloc(n, 24) : NULL;
    for (size_t k = 0; inst && spare && k < n; k++) {
        snprintf(spare + 24 * k, 24, "\x01%zu", k);
        inst[k] = m->entries[k].instance ? m->entries[k].instance : spare + 24 * k;
    }
    if (ok && (!inst || !spare ||
               !sp_json_check_unique(&r, m->entries, sizeof *m->entries, n, "modules", "path",
                                     "module path") ||
               !sp_json_check_unique(&r, inst, sizeof *inst, n, "modules", "instance",
                                     "instance name"))) {
        sp_free(inst);
        sp_free(spare);
        sp_module_map_destroy(m);
        return sp_oom(ctx, "reading a module map");
    }
    sp_free(inst);
    sp_free(spare);
    if (ok && ctx->problems == 0 && !check_instances_not_paths(&r, m)) {
        sp_module_map_destroy(m);
        return sp_oom(ctx, "reading a module map");
    }
    ok = ok && ctx->problems == 0;
    if (!ok) {
        sp_problems_finish(ctx);
        sp_module_map_destroy(m);
        return SP_ERR_SCHEMA;
    }
    *out = m;
    return SP_OK;
}

sp_status sp_module_map_load(sp_ctx *ctx, const char *path, sp_module_map **out) {
    if (!ctx)
        return SP_ERR_INVALID_ARG;
    sp_ctx_begin(ctx);
    if (!path || !out)
        return sp_fail(ctx, SP_ERR_INVALID_ARG, "sp_module_map_load: NULL argument");
    *out = NULL;
    cJSON *root = NULL;
    sp_status st = sp_small_doc_load(ctx, path, "stagepart-modules", &root);
    return st == SP_OK ? map_from_doc(ctx, path, root, out) : st;
}

sp_status sp_module_map_parse(sp_ctx *ctx, const char *name, const char *data, size_t len,
                              sp_module_map **out) {
    if (!ctx)
        return SP_ERR_INVALID_ARG;
    sp_ctx_begin(ctx);
    if (!data || !out)
        return sp_fail(ctx, SP_ERR_INVALID_ARG, "sp_module_map_parse: NULL argument");
    *out = NULL;
    name = name ? name : "<modules>";
    cJSON *root = NULL;
    sp_status st = sp_small_doc_parse(ctx, name, data, len, "stagepart-modules", &root);
    return st == SP_OK ? map_from_doc(ctx, name, root, out) : st;
}

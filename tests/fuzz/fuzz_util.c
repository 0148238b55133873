/* fuzz_util.c: buffers, a temporary file and the one invariant every target checks. */
#include "fuzz_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

char *fuzz_cstring(const uint8_t *data, size_t size) {
    char *text = malloc(size + 1);
    if (text) {
        if (size)
            memcpy(text, data, size);
        text[size] = '\0';
    }
    return text;
}

const char *fuzz_temp_file(const uint8_t *data, size_t size) {
    static char path[64];
    if (!path[0]) {
        const char *dir = getenv("TMPDIR");
        snprintf(path, sizeof path, "%.24s/sp-fuzz-%ld.json", dir && *dir ? dir : "/tmp",
                 (long)getpid());
    }
    FILE *f = fopen(path, "wb");
    if (!f)
        return NULL;
    size_t written = size ? fwrite(data, 1, size, f) : 0;
    if (fclose(f) != 0 || written != size)
        return NULL;
    return path;
}

void fuzz_require_message(const sp_ctx *ctx, sp_status status) {
    if (status != SP_OK) {
        const char *msg = sp_ctx_get_errmsg(ctx);
        if (!msg || !*msg)
            __builtin_trap();
    }
}

void fuzz_check_trace(sp_ctx *ctx, const sp_trace *trace) {
    sp_trace_profile_opts opts;
    sp_trace_profile_opts_init(&opts);
    char *json = NULL;
    sp_status st = sp_trace_to_profile(ctx, trace, &opts, &json, NULL);
    fuzz_require_message(ctx, st);
    if (st == SP_OK) { /* what the importer writes, the profile reader takes */
        sp_profile *p = NULL;
        if (sp_profile_parse(ctx, "profile", json, strlen(json), &p) != SP_OK)
            __builtin_trap();
        sp_profile_destroy(p);
    }
    sp_free(json);
    /* the module tree: listed, and a depth of it made the layers */
    char *text = NULL;
    st = sp_trace_list_modules(ctx, trace, &opts, &text);
    fuzz_require_message(ctx, st);
    sp_free(text);
    json = NULL;
    opts.layers = "1";
    st = sp_trace_to_profile(ctx, trace, &opts, &json, NULL);
    fuzz_require_message(ctx, st);
    sp_free(json);
}

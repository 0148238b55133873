/* core/json_util.c: validating field readers over cJSON (see json_util.h). */
#include "json_util.h"

#include <ctype.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* cJSON keeps the position of the last parse's error in one static variable (global_error in
 * cJSON.c), which every call writes as it starts, so two parses at once race on it
 * (ThreadSanitizer found it in the profile reader's pieces). Every parse in the library goes
 * through here, one at a time in the process; what a thread does with its tree after (the
 * layers' fields, the plan's checks) still runs at once. */
static pthread_mutex_t g_cjson_parse = PTHREAD_MUTEX_INITIALIZER;

#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define SP_TSAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define SP_TSAN 1
#endif
#if defined(SP_TSAN)
/* cJSON (Debian's) is not built with ThreadSanitizer, which therefore cannot see the write it
 * makes on every parse; the same write is made here, where it can, so that a parse outside the
 * lock is reported (.ci/run's ThreadSanitizer step) */
static const char *g_cjson_error_position;
#endif

void sp_cjson_lock(void) {
    pthread_mutex_lock(&g_cjson_parse);
}

void sp_cjson_unlock(void) {
    pthread_mutex_unlock(&g_cjson_parse);
}

cJSON *sp_cjson_parse_locked(const char *text, size_t len, const char **end, bool require_nul) {
#if defined(SP_TSAN)
    g_cjson_error_position = text;
#endif
    return cJSON_ParseWithLengthOpts(text, len, end, require_nul);
}

cJSON *sp_cjson_parse(const char *text, size_t len, const char **end, bool require_nul) {
    sp_cjson_lock();
    cJSON *v = sp_cjson_parse_locked(text, len, end, require_nul);
    sp_cjson_unlock();
    return v;
}

sp_status sp_json_parse(sp_ctx *ctx, const char *name, const char *data, size_t len, cJSON **out) {
    *out = NULL;
    size_t nul = strlen(data);
    const char *end = NULL;
    cJSON *root = NULL;
    unsigned long failures = sp_alloc_failures();
    if (nul == len) {
        /* length len + 1 covers the terminating NUL, which cJSON's
         * require_null_terminated check looks for after the value */
        root = sp_cjson_parse(data, len + 1, &end, true);
    } else {
        end = data + nul;
    }
    if (root) {
        *out = root;
        return SP_OK;
    }
    if (sp_alloc_failures() != failures) { /* cJSON says only "failed": it was memory */
        char what[512];
        snprintf(what, sizeof what, "parsing %s", name);
        return sp_oom(ctx, what);
    }
    if (len == 0)
        return sp_fail(ctx, SP_ERR_PARSE, "%s: empty file, expected a JSON object", name);
    return sp_json_fail_at(ctx, name, data, len, end, nul != len);
}

sp_status sp_json_fail_at(sp_ctx *ctx, const char *name, const char *data, size_t len,
                          const char *end, bool nul_byte) {
    if (!end || end < data || end > data + len)
        end = data + len;
    /* cJSON may stop one byte into a bad token: point at the token's start */
    while (end > data && end < data + len && isalnum((unsigned char)end[0]) &&
           isalnum((unsigned char)end[-1]))
        end--;
    size_t line = 1, col = 1;
    for (const char *p = data; p < end; p++) {
        if (*p == '\n') {
            line++;
            col = 1;
        } else {
            col++;
        }
    }
    if (nul_byte)
        return sp_fail(ctx, SP_ERR_PARSE, "%s:%zu:%zu: malformed JSON: NUL byte in the text", name,
                       line, col);
    if (end >= data + len)
        return sp_fail(ctx, SP_ERR_PARSE, "%s:%zu:%zu: malformed JSON: unexpected end of input",
                       name, line, col);
    char near[24];
    size_t k = 0;
    for (const char *p = end; p < data + len && *p && *p != '\n' && k < sizeof near - 1; p++)
        near[k++] = (*p >= 32 && *p < 127) ? *p : '?';
    near[k] = '\0';
    return sp_fail(ctx, SP_ERR_PARSE, "%s:%zu:%zu: malformed JSON near '%s'", name, line, col,
                   near);
}

const char *sp_json_describe(const cJSON *v, char *buf, size_t size) {
    if (!v || cJSON_IsNull(v))
        snprintf(buf, size, "null");
    else if (cJSON_IsTrue(v))
        snprintf(buf, size, "true");
    else if (cJSON_IsFalse(v))
        snprintf(buf, size, "false");
    else if (cJSON_IsNumber(v) && floor(v->valuedouble) == v->valuedouble &&
             fabs(v->valuedouble) < 1e21)
        snprintf(buf, size, "%.0f", v->valuedouble);
    else if (cJSON_IsNumber(v))
        snprintf(buf, size, "%.17g", v->valuedouble);
    else if (cJSON_IsString(v)) {
        const char *s = v->valuestring;
        size_t n = strlen(s);
        if (n > 40)
            snprintf(buf, size, "\"%.40s...\"", s);
        else
            snprintf(buf, size, "\"%s\"", s);
    } else if (cJSON_IsArray(v))
        snprintf(buf, size, "an array");
    else if (cJSON_IsObject(v))
        snprintf(buf, size, "an object");
    else
        snprintf(buf, size, "an invalid value");
    return buf;
}

void sp_json_problem(struct sp_json_reader *r, const char *where, const char *key, const char *fmt,
                     ...) {
    struct sp_strbuf sb;
    sp_strbuf_init(&sb);
    va_list ap;
    va_start(ap, fmt);
    sp_strbuf_vprintf(&sb, fmt, ap);
    va_end(ap);
    where = where ? where : "";
    key = key ? key : "";
    const char *dot = (*where && *key) ? "." : "";
    if (!*where && !*key)
        sp_problem(r->ctx, "%s: %s", r->file, sp_strbuf_str(&sb));
    else
        sp_problem(r->ctx, "%s: %s%s%s: %s", r->file, where, dot, key, sp_strbuf_str(&sb));
    sp_strbuf_release(&sb);
}

static const cJSON *field(const cJSON *obj, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    return (v && cJSON_IsNull(v)) ? NULL : v;
}

static bool missing(struct sp_json_reader *r, const char *where, const char *key,
                    const char *expected) {
    sp_json_problem(r, where, key, "missing, expected %s", expected);
    return false;
}

bool sp_json_get_string(struct sp_json_reader *r, const cJSON *obj, const char *where,
                        const char *key, bool required, size_t max_len, const char **out) {
    return sp_json_string(r, field(obj, key), where, key, required, max_len, out);
}

bool sp_json_string(struct sp_json_reader *r, const cJSON *v, const char *where, const char *key,
                    bool required, size_t max_len, const char **out) {
    if (v && cJSON_IsNull(v))
        v = NULL;
    if (!v)
        return required ? missing(r, where, key, "a string") : true;
    char got[64];
    if (!cJSON_IsString(v)) {
        sp_json_problem(r, where, key, "expected a string, got %s",
                        sp_json_describe(v, got, sizeof got));
        return false;
    }
    size_t n = strlen(v->valuestring);
    if (required && n == 0) {
        sp_json_problem(r, where, key, "expected a non-empty string, got \"\"");
        return false;
    }
    if (n > max_len) {
        sp_json_problem(r, where, key, "string of %zu bytes is longer than the limit of %zu", n,
                        max_len);
        return false;
    }
    *out = v->valuestring;
    return true;
}

bool sp_json_get_number(struct sp_json_reader *r, const cJSON *obj, const char *where,
                        const char *key, bool required, double min, double max, double *out) {
    return sp_json_number(r, field(obj, key), where, key, required, min, max, out);
}

bool sp_json_number(struct sp_json_reader *r, const cJSON *v, const char *where, const char *key,
                    bool required, double min, double max, double *out) {
    char got[64];
    if (v && cJSON_IsNull(v))
        v = NULL;
    if (!v) {
        if (!required)
            return true;
        sp_json_problem(r, where, key, "missing, expected a finite number >= %g", min);
        return false;
    }
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble < min) {
        sp_json_problem(r, where, key, "expected a finite number >= %g, got %s", min,
                        cJSON_IsNumber(v) && !isfinite(v->valuedouble)
                            ? "a number too large to represent"
                            : sp_json_describe(v, got, sizeof got));
        return false;
    }
    if (v->valuedouble > max) {
        sp_json_problem(r, where, key, "%s is above the limit of %g",
                        sp_json_describe(v, got, sizeof got), max);
        return false;
    }
    *out = v->valuedouble;
    return true;
}

bool sp_json_get_uint(struct sp_json_reader *r, const cJSON *obj, const char *where,
                      const char *key, bool required, uint64_t min, uint64_t *out) {
    return sp_json_uint(r, field(obj, key), where, key, required, min, out);
}

bool sp_json_uint(struct sp_json_reader *r, const cJSON *v, const char *where, const char *key,
                  bool required, uint64_t min, uint64_t *out) {
    char got[64];
    if (v && cJSON_IsNull(v))
        v = NULL;
    if (!v) {
        if (!required)
            return true;
        sp_json_problem(r, where, key, "missing, expected an integer >= %llu",
                        (unsigned long long)min);
        return false;
    }
    double d = cJSON_IsNumber(v) ? v->valuedouble : -1.0;
    /* whole: up to 2^53 the cast's round trip says so exactly (floor is a call, and profiles have
     * millions of these); beyond, every double is whole */
    bool whole = d > SP_MAX_EXACT_INTEGER || (d >= 0 && (double)(uint64_t)d == d);
    if (!cJSON_IsNumber(v) || !isfinite(d) || d < (double)min || !whole) {
        sp_json_problem(r, where, key, "expected an integer >= %llu, got %s",
                        (unsigned long long)min, sp_json_describe(v, got, sizeof got));
        return false;
    }
    if (d > SP_MAX_EXACT_INTEGER) {
        sp_json_problem(r, where, key,
                        "integer %s is beyond 2^53, where JSON numbers stop being exact",
                        sp_json_describe(v, got, sizeof got));
        return false;
    }
    *out = (uint64_t)d;
    return true;
}

bool sp_json_get_bool(struct sp_json_reader *r, const cJSON *obj, const char *where,
                      const char *key, bool required, bool *out) {
    return sp_json_bool(r, field(obj, key), where, key, required, out);
}

bool sp_json_bool(struct sp_json_reader *r, const cJSON *v, const char *where, const char *key,
                  bool required, bool *out) {
    char got[64];
    if (v && cJSON_IsNull(v))
        v = NULL;
    if (!v)
        return required ? missing(r, where, key, "true or false") : true;
    if (!cJSON_IsBool(v)) {
        sp_json_problem(r, where, key, "expected true or false, got %s",
                        sp_json_describe(v, got, sizeof got));
        return false;
    }
    *out = cJSON_IsTrue(v);
    return true;
}

bool sp_json_check_header(struct sp_json_reader *r, const cJSON *root, const char *format,
                          int version) {
    char got[64];
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(root, "format");
    if (!cJSON_IsString(f) || strcmp(f->valuestring, format) != 0) {
        sp_json_problem(r, "", "format", "expected \"%s\", got %s", format,
                        f ? sp_json_describe(f, got, sizeof got) : "nothing (field missing)");
        return false;
    }
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, "version");
    if (!cJSON_IsNumber(v) || v->valuedouble != (double)version) {
        if (cJSON_IsNumber(v) && v->valuedouble > version &&
            floor(v->valuedouble) == v->valuedouble)
            sp_json_problem(r, "", "version",
                            "version %s is newer than this build reads (%d); upgrade stagepart",
                            sp_json_describe(v, got, sizeof got), version);
        else
            sp_json_problem(r, "", "version", "expected %d, got %s", version,
                            v ? sp_json_describe(v, got, sizeof got) : "nothing (field missing)");
        return false;
    }
    return true;
}

/* A number at 15 significant digits: a sum of times in nanoseconds (4744.463187000003) or a
 * difference of percentages (-22.306999999999999) is printed as what it means, 4744.463187 and
 * -22.307, not with the 17 digits cJSON needs for the double's last bits; and never as -0. */
static double at_15_digits(double v) {
    if (v == 0 || !isfinite(v))
        return v == 0 ? 0.0 : v;
    if (v == nearbyint(v))
        return v;                       /* whole (every double from 2^52 on is): exact already */
    int e = (int)floor(log10(fabs(v))); /* v = m x 10^e, 1 <= m < 10 */
    double scale = pow(10.0, 14 - e);
    if (!isfinite(scale) || !isfinite(v * scale) || scale == 0)
        return v;
    double r = nearbyint(v * scale) / scale;
    return r == 0 ? 0.0 : r;
}

static void round_numbers(cJSON *node) {
    for (; node; node = node->next) {
        if (cJSON_IsNumber(node))
            cJSON_SetNumberValue(node, at_15_digits(node->valuedouble));
        else if (node->child)
            round_numbers(node->child);
    }
}

sp_status sp_json_print(sp_ctx *ctx, const cJSON *root, size_t expect_bytes, const char *what,
                        char **out) {
    *out = NULL;
    /* every document's numbers at 15 significant digits: the tree is the caller's, built to be
     * printed */
    if (root)
        round_numbers(((cJSON *)root)->child);
    /* cJSON_Print starts at 256 bytes, doubles (a copy each time: the hooks have no realloc) and
     * copies the text once more to its length; printed into a buffer of the expected size the
     * text is written once (the newline's realloc below then mostly shrinks it, in place). */
    size_t first = expect_bytes + 2 > 256 ? expect_bytes + 2 : 256;
    char *text = cJSON_PrintBuffered(root, first < INT_MAX ? (int)first : INT_MAX, 1);
    if (!text)
        return sp_oom(ctx, what);
    size_t len = strlen(text);
    char *withnl = sp_realloc(text, len + 2); /* cJSON allocates through the same hooks */
    if (!withnl) {
        sp_free(text);
        return sp_oom(ctx, what);
    }
    withnl[len] = '\n';
    withnl[len + 1] = '\0';
    *out = withnl;
    return SP_OK;
}

static uint64_t name_hash(const char *s) {
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static const char *name_at(const void *base, size_t stride, size_t i) {
    const char *name;
    memcpy(&name, (const char *)base + i * stride, sizeof name);
    return name;
}

bool sp_json_check_unique_names(struct sp_json_reader *r, const void *base, size_t stride,
                                size_t n) {
    return sp_json_check_unique(r, base, stride, n, "layers", "name", "layer name");
}

bool sp_json_check_unique(struct sp_json_reader *r, const void *base, size_t stride, size_t n,
                          const char *array, const char *key, const char *what) {
    size_t cap = 16;
    while (cap < 2 * n)
        cap *= 2;
    size_t *slot = sp_mallocarray(cap, sizeof *slot);
    if (!slot)
        return false;
    for (size_t k = 0; k < cap; k++)
        slot[k] = SIZE_MAX;
    for (size_t i = 0; i < n; i++) {
        const char *name = name_at(base, stride, i);
        size_t k = (size_t)name_hash(name) & (cap - 1);
        while (slot[k] != SIZE_MAX && strcmp(name_at(base, stride, slot[k]), name) != 0)
            k = (k + 1) & (cap - 1);
        if (slot[k] == SIZE_MAX) {
            slot[k] = i;
            continue;
        }
        char where[48];
        snprintf(where, sizeof where, "%.16s[%zu]", array, i);
        sp_json_problem(r, where, key, "duplicate %s \"%.60s\" (first used by %s[%zu])", what, name,
                        array, slot[k]);
    }
    sp_free(slot);
    return true;
}

void sp_json_read_fields(struct sp_json_reader *r, const cJSON *obj, const char *where,
                         const struct sp_json_field *fields, size_t n, void *base) {
    for (const struct sp_json_field *f = fields; f < fields + n; f++) {
        void *to = (char *)base + f->offset;
        switch (f->type) {
        case SP_JSON_UINT: {
            const cJSON *v = field(obj, f->key);
            uint64_t value = 0;
            if (!sp_json_uint(r, v, where, f->key, f->required, (uint64_t)f->min, &value) || !v)
                break;
            if (f->max > 0 && (double)value > f->max)
                sp_json_problem(r, where, f->key, "expected at most %.0f, got %llu", f->max,
                                (unsigned long long)value);
            else
                *(uint64_t *)to = value;
            break;
        }
        case SP_JSON_NUMBER:
            sp_json_get_number(r, obj, where, f->key, f->required, f->min, f->max, to);
            break;
        case SP_JSON_BOOL:
            sp_json_get_bool(r, obj, where, f->key, f->required, to);
            break;
        case SP_JSON_STRING:
            sp_json_get_string(r, obj, where, f->key, f->required, (size_t)f->max, to);
            break;
        case SP_JSON_ENUM: {
            const char *name = NULL;
            if (!sp_json_get_string(r, obj, where, f->key, f->required, 64, &name) || !name)
                break;
            int v = sp_names_value(f->names, name);
            if (v < 0)
                sp_json_problem(r, where, f->key, "unknown value \"%s\"", name);
            else
                *(int *)to = v;
            break;
        }
        }
    }
}

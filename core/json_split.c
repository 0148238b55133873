/* core/json_split.c: a large JSON document a piece at a time (json_util.h). The splitter only
 * finds where each value ends (brackets, strings and their escapes); cJSON parses, and so
 * validates, every piece a caller reads, and the splitter itself refuses what is malformed
 * between the pieces (a missing comma or colon, a bracket that does not match). */
#include <stdio.h>
#include <string.h>

#include "json_util.h"

#define MAX_DEPTH 1000 /* cJSON's own nesting limit (CJSON_NESTING_LIMIT) */

const char *sp_json_skip_space(const char *p, const char *end) {
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
        p++;
    return p;
}

/* the end of the string starting at p (a '"'), just past its closing quote; NULL: unterminated */
static const char *skip_string(const char *p, const char *end) {
    for (p++; p < end;) {
        const char *q = memchr(p, '"', (size_t)(end - p));
        if (!q)
            return NULL;
        size_t backslashes = 0; /* an odd run of backslashes escapes the quote */
        for (const char *b = q; b > p && b[-1] == '\\'; b--)
            backslashes++;
        if (backslashes % 2 == 0)
            return q + 1;
        p = q + 1;
    }
    return NULL;
}

/* The end of the value starting at p; *bad where it is malformed (NULL return). Scalars end at
 * the next delimiter; cJSON checks their text when the piece is parsed. */
static const char *skip_value(const char *p, const char *end, const char **bad) {
    if (p >= end) {
        *bad = end;
        return NULL;
    }
    if (*p == '"') {
        const char *q = skip_string(p, end);
        if (!q)
            *bad = end;
        return q;
    }
    if (*p != '{' && *p != '[') {
        const char *q = p;
        while (q < end && !strchr(",]} \t\r\n", *q) && *q)
            q++;
        if (q == p)
            *bad = p;
        return q == p ? NULL : q;
    }
    /* Only quotes, brackets and NUL matter inside a container: a table skips the rest a byte at
     * a time without a chain of comparisons (the layers array of a large profile is most of the
     * file, and this pass runs over all of it). */
    static const unsigned char special[256] = {
        ['"'] = 1, ['{'] = 1, ['['] = 1, ['}'] = 1, [']'] = 1, ['\0'] = 1};
    char stack[MAX_DEPTH];
    size_t depth = 0;
    for (const char *q = p; q < end;) {
        while (q < end && !special[(unsigned char)*q])
            q++;
        if (q == end)
            break;
        char c = *q;
        if (c == '"') {
            q = skip_string(q, end);
            if (!q) {
                *bad = end;
                return NULL;
            }
            continue;
        }
        if (c == '{' || c == '[') {
            if (depth == MAX_DEPTH) {
                *bad = q;
                return NULL;
            }
            stack[depth++] = c == '{' ? '}' : ']';
        } else if (c == '}' || c == ']') {
            if (!depth || stack[depth - 1] != c) {
                *bad = q;
                return NULL;
            }
            if (--depth == 0)
                return q + 1;
        } else { /* NUL */
            *bad = q;
            return NULL;
        }
        q++;
    }
    *bad = end;
    return NULL;
}

static sp_status malformed(sp_ctx *ctx, const char *name, const char *doc, size_t len,
                           const char *at) {
    return sp_json_fail_at(ctx, name, doc, len, at, at < doc + len && *at == '\0');
}

sp_status sp_json_split_object(sp_ctx *ctx, const char *name, const char *doc, size_t len,
                               sp_json_member_fn fn, void *arg) {
    return sp_json_split_object_take(ctx, name, doc, len, NULL, fn, arg);
}

sp_status sp_json_split_object_take(sp_ctx *ctx, const char *name, const char *doc, size_t len,
                                    sp_json_take_fn take, sp_json_member_fn fn, void *arg) {
    const char *end = doc + len, *p = sp_json_skip_space(doc, end);
    if (p == end)
        return sp_fail(ctx, SP_ERR_PARSE, "%s: empty file, expected a JSON object", name);
    if (*p == '[' || *p == '"' || *p == '-' || (*p >= '0' && *p <= '9'))
        return sp_fail(ctx, SP_ERR_SCHEMA, "%s: expected a JSON object at the root, got %s", name,
                       *p == '['   ? "an array"
                       : *p == '"' ? "a string"
                                   : "a number");
    if (*p != '{')
        return malformed(ctx, name, doc, len, p);
    p = sp_json_skip_space(p + 1, end);
    if (p < end && *p == '}')
        return sp_json_skip_space(p + 1, end) == end ? SP_OK
                                                     : malformed(ctx, name, doc, len, p + 1);
    for (;;) {
        const char *bad = NULL;
        if (p >= end || *p != '"')
            return malformed(ctx, name, doc, len, p);
        const char *key_end = skip_string(p, end);
        if (!key_end)
            return malformed(ctx, name, doc, len, end);
        const char *key = p + 1;
        size_t key_len = (size_t)(key_end - 1 - key);
        bool plain = true; /* no escape or control byte: valid as it is, else cJSON checks it */
        for (size_t i = 0; i < key_len && plain; i++)
            plain = key[i] != '\\' && (unsigned char)key[i] >= 0x20;
        if (!plain) {
            cJSON *k = NULL;
            sp_status st = sp_json_parse_piece(ctx, name, doc, len, p, (size_t)(key_end - p), &k);
            cJSON_Delete(k);
            if (st != SP_OK)
                return st;
        }
        p = sp_json_skip_space(key_end, end);
        if (p >= end || *p != ':')
            return malformed(ctx, name, doc, len, p);
        const char *value = sp_json_skip_space(p + 1, end);
        size_t taken = 0;
        sp_status st = take ? take(arg, key, key_len, value, (size_t)(end - value), &taken) : SP_OK;
        if (st != SP_OK)
            return st;
        const char *value_end = taken ? value + taken : skip_value(value, end, &bad);
        if (!value_end)
            return malformed(ctx, name, doc, len, bad);
        if (!taken && (st = fn(arg, key, key_len, value, (size_t)(value_end - value))) != SP_OK)
            return st;
        p = sp_json_skip_space(value_end, end);
        if (p < end && *p == ',') {
            p = sp_json_skip_space(p + 1, end);
            continue;
        }
        if (p < end && *p == '}')
            return sp_json_skip_space(p + 1, end) == end ? SP_OK
                                                         : malformed(ctx, name, doc, len, p + 1);
        return malformed(ctx, name, doc, len, p);
    }
}

sp_status sp_json_split_array(sp_ctx *ctx, const char *name, const char *doc, size_t doc_len,
                              const char *array, size_t array_len, sp_json_element_fn fn,
                              void *arg) {
    const char *end = array + array_len, *p = array;
    if (p >= end || *p != '[')
        return malformed(ctx, name, doc, doc_len, p);
    p = sp_json_skip_space(p + 1, end);
    if (p < end && *p == ']')
        return SP_OK;
    for (;;) {
        const char *bad = NULL;
        const char *value_end = skip_value(p, end, &bad);
        if (!value_end)
            return malformed(ctx, name, doc, doc_len, bad);
        sp_status st = fn(arg, p, (size_t)(value_end - p));
        if (st != SP_OK)
            return st;
        p = sp_json_skip_space(value_end, end);
        if (p < end && *p == ',') {
            p = sp_json_skip_space(p + 1, end);
            continue;
        }
        if (p < end && *p == ']')
            return SP_OK;
        return malformed(ctx, name, doc, doc_len, p);
    }
}

sp_status sp_json_parse_piece(sp_ctx *ctx, const char *name, const char *doc, size_t doc_len,
                              const char *piece, size_t piece_len, cJSON **out) {
    *out = NULL;
    const char *parse_end = NULL;
    unsigned long failures = sp_alloc_failures();
    cJSON *v = sp_cjson_parse(piece, piece_len, &parse_end, false);
    if (v && parse_end == piece + piece_len) {
        *out = v;
        return SP_OK;
    }
    cJSON_Delete(v);
    if (sp_alloc_failures() != failures) {
        char what[512];
        snprintf(what, sizeof what, "parsing %s", name);
        return sp_oom(ctx, what);
    }
    if (!parse_end || parse_end < piece || parse_end > piece + piece_len)
        parse_end = piece + piece_len;
    return malformed(ctx, name, doc, doc_len, parse_end);
}

/* check/report.c: a check's result as the "stagepart-check" JSON document and as JUnit XML, the
 * two forms CI systems read (docs/ci.md). The JSON is built with cJSON, so any layer name in a
 * message (a tab, a quote, a newline) stays valid JSON. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>

#include "check_impl.h"
#include "json_util.h"

sp_status sp_check_to_json(sp_ctx *ctx, const sp_check_result *result, char **json) {
    if (!ctx)
        return SP_ERR_INVALID_ARG;
    sp_ctx_begin(ctx);
    if (!result || !json)
        return sp_fail(ctx, SP_ERR_INVALID_ARG, "sp_check_to_json: NULL argument");
    *json = NULL;
    cJSON *root = cJSON_CreateObject(), *list = NULL;
    bool ok = root && cJSON_AddStringToObject(root, "format", "stagepart-check") &&
              cJSON_AddNumberToObject(root, "version", 1) &&
              cJSON_AddBoolToObject(root, "passed", sp_check_get_failed_count(result) == 0) &&
              cJSON_AddBoolToObject(root, "gate_unattainable",
                                    sp_check_get_failed_count(result) > 0 &&
                                        sp_check_get_unattainable_count(result) ==
                                            sp_check_get_failed_count(result)) &&
              (list = cJSON_AddArrayToObject(root, "criteria"));
    for (size_t i = 0; ok && i < result->n; i++) {
        const sp_check_criterion *c = &result->criteria[i];
        cJSON *o = cJSON_CreateObject();
        ok = o && cJSON_AddItemToArray(list, o) && cJSON_AddStringToObject(o, "name", c->name) &&
             cJSON_AddBoolToObject(o, "passed", c->passed) &&
             cJSON_AddBoolToObject(o, "skipped", c->skipped) &&
             cJSON_AddNumberToObject(o, "value", c->value) &&
             cJSON_AddNumberToObject(o, "limit", c->limit) &&
             (isnan(c->best) || cJSON_AddNumberToObject(o, "best", c->best)) &&
             cJSON_AddBoolToObject(o, "attainable", c->attainable) &&
             cJSON_AddStringToObject(o, "message", c->message);
        if (!o)
            break;
    }
    sp_status st = ok ? sp_json_print(ctx, root, 0, "the check result", json)
                      : sp_oom(ctx, "the check result");
    cJSON_Delete(root);
    return st;
}

/* s as XML attribute or text: the five markup characters as entities, tab and newline as
 * character references, and the other control characters (which XML 1.0 cannot hold at all) as
 * '?'. */
static void xml_escape(struct sp_strbuf *sb, const char *s) {
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        switch (c) {
        case '<':
            sp_strbuf_puts(sb, "&lt;");
            break;
        case '>':
            sp_strbuf_puts(sb, "&gt;");
            break;
        case '&':
            sp_strbuf_puts(sb, "&amp;");
            break;
        case '"':
            sp_strbuf_puts(sb, "&quot;");
            break;
        case '\'':
            sp_strbuf_puts(sb, "&apos;");
            break;
        case '\t':
        case '\n':
        case '\r':
            sp_strbuf_printf(sb, "&#%u;", c);
            break;
        default:
            sp_strbuf_append(sb, c < 0x20 || c == 0x7f ? "?" : s, 1);
        }
    }
}

sp_status sp_check_write_junit(sp_ctx *ctx, const sp_check_result *result, const char *path) {
    if (!ctx)
        return SP_ERR_INVALID_ARG;
    sp_ctx_begin(ctx);
    if (!result || !path)
        return sp_fail(ctx, SP_ERR_INVALID_ARG, "sp_check_write_junit: NULL argument");
    size_t skipped = 0;
    for (size_t i = 0; i < result->n; i++)
        skipped += result->criteria[i].skipped;
    struct sp_strbuf sb;
    sp_strbuf_init(&sb);
    sp_strbuf_printf(&sb,
                     "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n<testsuite "
                     "name=\"stagepart check\" tests=\"%zu\" failures=\"%zu\" skipped=\"%zu\">\n",
                     result->n, sp_check_get_failed_count(result), skipped);
    for (size_t i = 0; i < result->n; i++) {
        const sp_check_criterion *c = &result->criteria[i];
        sp_strbuf_puts(&sb, "  <testcase classname=\"stagepart.check\" name=\"");
        xml_escape(&sb, c->name);
        sp_strbuf_puts(&sb, "\">");
        const char *open = c->skipped   ? "<skipped message=\""
                           : !c->passed ? "<failure message=\""
                                        : "<system-out>";
        sp_strbuf_puts(&sb, open);
        xml_escape(&sb, c->message);
        sp_strbuf_puts(&sb, c->skipped || !c->passed ? "\"/>" : "</system-out>");
        sp_strbuf_puts(&sb, "</testcase>\n");
    }
    sp_strbuf_puts(&sb, "</testsuite>\n</testsuites>\n");
    sp_status st = sb.oom ? sp_oom(ctx, "the JUnit report")
                          : sp_write_file_atomic(ctx, path, sp_strbuf_str(&sb), sb.len);
    sp_strbuf_release(&sb);
    return st;
}

/* core/regex_ere.c: the patterns users give (--layer-pattern, --phase-pattern, --step-pattern)
 * are POSIX extended regular expressions, and the users are Python users: `\d`, `\w` and `\s`,
 * which glibc's regcomp takes as the letters d, w and s, silently matched nothing. They are
 * translated to bracket classes here; Python-only syntax with no POSIX equivalent ((?:...),
 * lookaround, lazy quantifiers, \b) is refused with a message saying so rather than left to
 * mean something else. */
#include <string.h>

#include "internal.h"

/* the class a Python shorthand stands for, outside [...] and inside (without the brackets);
 * NULL: not a shorthand */
static const char *shorthand(char c, bool in_bracket) {
    switch (c) {
    case 'd':
        return in_bracket ? "0-9" : "[0-9]";
    case 'D':
        return in_bracket ? NULL : "[^0-9]";
    case 'w':
        return in_bracket ? "[:alnum:]_" : "[[:alnum:]_]";
    case 'W':
        return in_bracket ? NULL : "[^[:alnum:]_]";
    case 's':
        return in_bracket ? "[:space:]" : "[[:space:]]";
    case 'S':
        return in_bracket ? NULL : "[^[:space:]]";
    default:
        return NULL;
    }
}

sp_status sp_ere_translate(sp_ctx *ctx, const char *what, const char *in, char **out) {
    *out = NULL;
    struct sp_strbuf sb;
    sp_strbuf_init(&sb);
    sp_status st = SP_OK;
    bool in_bracket = false;
    size_t n = strlen(in);
    for (size_t i = 0; i < n && st == SP_OK; i++) {
        char c = in[i], next = in[i + 1];
        if (in_bracket) {
            if (c == '[' && (next == ':' || next == '.' || next == '=')) {
                const char *close = strstr(in + i + 2, (char[]){next, ']', '\0'});
                size_t len = close ? (size_t)(close - (in + i)) + 2 : n - i;
                sp_strbuf_append(&sb, in + i, len); /* [:alpha:] and the like, as they are */
                i += len - 1;
            } else if (c == '\\' && next && shorthand(next, true)) {
                sp_strbuf_puts(&sb, shorthand(next, true));
                i++;
            } else if (c == '\\' && next && strchr("DWS", next)) {
                st = sp_fail(ctx, SP_ERR_INVALID_ARG,
                             "%s '%s': '\\%c' inside [...] has no POSIX equivalent; write the "
                             "class out",
                             what, in, next);
            } else if (c == '\\' && next == ']') {
                st = sp_fail(ctx, SP_ERR_INVALID_ARG,
                             "%s '%s': in a POSIX bracket expression a backslash is literal; put "
                             "']' first ('[]...]') instead of '\\]'",
                             what, in);
            } else if (c == '\\' && next) { /* Python's escaped literal: the literal itself */
                sp_strbuf_append(&sb, in + i + 1, 1);
                i++;
            } else {
                sp_strbuf_append(&sb, &c, 1);
                if (c == ']')
                    in_bracket = false;
            }
            continue;
        }
        if (c == '[') {
            in_bracket = true;
            sp_strbuf_append(&sb, &c, 1);
            if (next == '^') /* "[^" then a leading ']' is a literal */
                sp_strbuf_append(&sb, in + ++i, 1);
            if (in[i + 1] == ']')
                sp_strbuf_append(&sb, in + ++i, 1);
        } else if (c == '\\' && next && shorthand(next, false)) {
            sp_strbuf_puts(&sb, shorthand(next, false));
            i++;
        } else if (c == '\\' && next && strchr("bBAZzG", next)) {
            st = sp_fail(ctx, SP_ERR_INVALID_ARG,
                         "%s '%s': '\\%c' (a Python anchor) has no POSIX extended equivalent; use "
                         "^ and $",
                         what, in, next);
        } else if (c == '(' && next == '?') {
            st = sp_fail(ctx, SP_ERR_INVALID_ARG,
                         "%s '%s': '(?' (Python's (?:...), (?P<name>...) and lookaround) has no "
                         "POSIX extended equivalent; use plain (...)",
                         what, in);
        } else if ((c == '*' || c == '+' || c == '?' || c == '}') && next == '?' &&
                   (i == 0 || in[i - 1] != '\\')) {
            st = sp_fail(ctx, SP_ERR_INVALID_ARG,
                         "%s '%s': '%c?' (a lazy quantifier) has no POSIX extended equivalent",
                         what, in, c);
        } else if (c == '\\' && next) {
            sp_strbuf_append(&sb, in + i, 2);
            i++;
        } else {
            sp_strbuf_append(&sb, &c, 1);
        }
    }
    if (st == SP_OK && sb.oom)
        st = sp_oom(ctx, "a pattern");
    if (st != SP_OK) {
        sp_strbuf_release(&sb);
        return st;
    }
    *out = sb.buf ? sb.buf : sp_strdup("");
    sb.buf = NULL;
    sp_strbuf_release(&sb);
    return *out ? SP_OK : sp_oom(ctx, "a pattern");
}

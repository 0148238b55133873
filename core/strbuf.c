/* core/strbuf.c: a growable string for messages and generated text. */
#include <stdio.h>
#include <string.h>

#include "internal.h"

void sp_strbuf_init(struct sp_strbuf *sb) {
    memset(sb, 0, sizeof *sb);
}

void sp_strbuf_release(struct sp_strbuf *sb) {
    sp_free(sb->buf);
    sp_strbuf_init(sb);
}

void sp_strbuf_reset(struct sp_strbuf *sb) {
    sb->len = 0;
    sb->oom = false;
    if (sb->buf)
        sb->buf[0] = '\0';
}

bool sp_strbuf_reserve(struct sp_strbuf *sb, size_t extra) {
    if (sb->oom)
        return false;
    if (extra > SIZE_MAX / 2 - sb->len) {
        sb->oom = true;
        return false;
    }
    size_t need = sb->len + extra + 1;
    if (need <= sb->cap)
        return true;
    size_t cap = sb->cap ? sb->cap : 64;
    while (cap < need)
        cap *= 2;
    char *nb = sp_realloc(sb->buf, cap);
    if (!nb) {
        sb->oom = true;
        return false;
    }
    sb->buf = nb;
    sb->cap = cap;
    return true;
}

void sp_strbuf_append(struct sp_strbuf *sb, const char *s, size_t n) {
    if (!sp_strbuf_reserve(sb, n))
        return;
    memcpy(sb->buf + sb->len, s, n);
    sb->len += n;
    sb->buf[sb->len] = '\0';
}

void sp_strbuf_puts(struct sp_strbuf *sb, const char *s) {
    sp_strbuf_append(sb, s, strlen(s));
}

void sp_strbuf_vprintf(struct sp_strbuf *sb, const char *fmt, va_list ap) {
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n < 0 || !sp_strbuf_reserve(sb, (size_t)n))
        return;
    vsnprintf(sb->buf + sb->len, (size_t)n + 1, fmt, ap);
    sb->len += (size_t)n;
}

void sp_strbuf_printf(struct sp_strbuf *sb, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    sp_strbuf_vprintf(sb, fmt, ap);
    va_end(ap);
}

const char *sp_strbuf_str(const struct sp_strbuf *sb) {
    return sb->buf ? sb->buf : "";
}

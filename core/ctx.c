/* core/ctx.c: the context that carries the last error's detail and the warnings. */
#include <stdio.h>
#include <string.h>

#include "internal.h"

/* Room for an error message made while memory is short: the buffer is kept across calls
 * (sp_strbuf_reset), so an out-of-memory message fits without allocating. */
#define ERR_RESERVE_BYTES 512

sp_status sp_ctx_create(sp_ctx **out) {
    if (!out)
        return SP_ERR_INVALID_ARG;
    sp_alloc_init();
    *out = sp_calloc(1, sizeof **out);
    if (!*out)
        return SP_ERR_NOMEM;
    char room[ERR_RESERVE_BYTES];
    memset(room, ' ', sizeof room);
    sp_strbuf_append(&(*out)->err, room, sizeof room); /* allocates the room once */
    sp_strbuf_reset(&(*out)->err);
    return SP_OK;
}

void sp_ctx_destroy(sp_ctx *ctx) {
    if (!ctx)
        return;
    sp_strbuf_release(&ctx->err);
    sp_strbuf_release(&ctx->warn);
    sp_free(ctx);
}

const char *sp_ctx_get_errmsg(const sp_ctx *ctx) {
    if (!ctx)
        return "";
    const char *msg = sp_strbuf_str(&ctx->err);
    /* a detail that could not be stored (memory ran out even for it): the status's own line */
    return *msg || ctx->status == SP_OK ? msg : sp_strerror(ctx->status);
}

const char *sp_ctx_get_warnings(const sp_ctx *ctx) {
    return ctx ? sp_strbuf_str(&ctx->warn) : "";
}

void sp_ctx_begin(sp_ctx *ctx) {
    sp_strbuf_reset(&ctx->err);
    sp_strbuf_reset(&ctx->warn);
    ctx->problems = 0;
    ctx->status = SP_OK;
}

SP_PRINTF(2, 0)
static void add_line(struct sp_strbuf *sb, const char *fmt, va_list ap) {
    if (sb->len)
        sp_strbuf_puts(sb, "\n");
    sp_strbuf_vprintf(sb, fmt, ap);
}

sp_status sp_fail(sp_ctx *ctx, sp_status status, const char *fmt, ...) {
    sp_strbuf_reset(&ctx->err);
    va_list ap;
    va_start(ap, fmt);
    add_line(&ctx->err, fmt, ap);
    va_end(ap);
    ctx->problems = 1;
    ctx->status = status;
    return status;
}

void sp_problem(sp_ctx *ctx, const char *fmt, ...) {
    ctx->problems++;
    if (ctx->problems > SP_MAX_REPORTED_PROBLEMS)
        return;
    va_list ap;
    va_start(ap, fmt);
    add_line(&ctx->err, fmt, ap);
    va_end(ap);
}

void sp_problems_finish(sp_ctx *ctx) {
    if (ctx->problems > SP_MAX_REPORTED_PROBLEMS)
        sp_strbuf_printf(&ctx->err, "\n... and %u more problems",
                         ctx->problems - SP_MAX_REPORTED_PROBLEMS);
}

void sp_warn(sp_ctx *ctx, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    add_line(&ctx->warn, fmt, ap);
    va_end(ap);
}

sp_status sp_oom(sp_ctx *ctx, const char *what) {
    if (sp_alloc_take_over_budget()) {
        char budget[16];
        return sp_fail(ctx, SP_ERR_LIMIT,
                       "over the memory budget of %s while %s (the budget keeps an input too "
                       "large for this machine from ending in the OOM killer; set it with "
                       "STAGEPART_MEMORY_BUDGET, docs/security.md)",
                       sp_format_bytes(sp_memory_budget(), budget, sizeof budget), what);
    }
    return sp_fail(ctx, SP_ERR_NOMEM, "out of memory while %s", what);
}

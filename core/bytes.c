/* core/bytes.c: byte counts with unit suffixes ("80GB", "80GiB"), for --memory-limit. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "internal.h"

struct unit {
    const char *suffix;
    double factor;
};

static const struct unit units[] = {
    {"", 1.0},
    {"b", 1.0},
    {"kb", 1e3},
    {"mb", 1e6},
    {"gb", 1e9},
    {"tb", 1e12},
    {"kib", 1024.0},
    {"mib", 1048576.0},
    {"gib", 1073741824.0},
    {"tib", 1099511627776.0},
    {"k", 1e3},
    {"m", 1e6},
    {"g", 1e9},
    {"t", 1e12},
};

sp_status sp_parse_bytes(sp_ctx *ctx, const char *text, uint64_t *out_bytes) {
    if (!ctx || !out_bytes)
        return SP_ERR_INVALID_ARG;
    sp_ctx_begin(ctx);
    if (!text)
        return sp_fail(ctx, SP_ERR_INVALID_ARG, "expected a byte count, got nothing");
    const char *p = text;
    if ((!isdigit((unsigned char)*p) && *p != '.') || strpbrk(p, "xX"))
        goto bad; /* no signs, spaces, hex or inf/nan: strtod would take them */
    errno = 0;
    char *end = NULL;
    double value = strtod(p, &end);
    if (end == p || errno == ERANGE || !isfinite(value) || value < 0)
        goto bad;
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (strcasecmp(end, units[i].suffix) == 0) {
            double bytes = value * units[i].factor;
            if (bytes > SP_MAX_EXACT_INTEGER)
                return sp_fail(ctx, SP_ERR_INVALID_ARG, "byte count '%s' is larger than 2^53 bytes",
                               text);
            if (floor(bytes) != bytes)
                return sp_fail(ctx, SP_ERR_INVALID_ARG,
                               "byte count '%s' is not a whole number of bytes", text);
            *out_bytes = (uint64_t)bytes;
            return SP_OK;
        }
    }
bad:
    return sp_fail(ctx, SP_ERR_INVALID_ARG,
                   "expected a byte count like 80GB, 80GiB or 4096, got '%s'", text);
}

const char *sp_format_bytes(uint64_t bytes, char *buf, size_t size) {
    static const char *const names[] = {"B", "kB", "MB", "GB", "TB", "PB"};
    double v = (double)bytes;
    size_t u = 0;
    while (v >= 999.5 && u + 1 < sizeof names / sizeof names[0]) {
        v /= 1000.0;
        u++;
    }
    if (u == 0)
        snprintf(buf, size, "%llu B", (unsigned long long)bytes);
    else
        snprintf(buf, size, "%.3g %s", v, names[u]);
    return buf;
}

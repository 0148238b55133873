/* profiler/trace_file.c: a trace file, plain or gzip-compressed (torch.profiler writes both),
 * read whole into memory for the JSON importers, within SP_TRACE_MAX_FILE_BYTES. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#include "trace.h"

sp_status sp_trace_check_path(sp_ctx *ctx, const char *path) {
    struct stat sb;
    if (stat(path, &sb) != 0)
        return sp_fail(ctx, SP_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
    if (S_ISDIR(sb.st_mode))
        return sp_fail(ctx, SP_ERR_IO, "'%s' is a directory, not a trace file", path);
    return SP_OK;
}

sp_status sp_trace_read_distinct(sp_ctx *ctx, const char *const *paths, size_t n, size_t i,
                                 char (*sha)[65], char **data, size_t *len) {
    sp_status st = sp_trace_read_file(ctx, paths[i], data, len);
    if (st == SP_OK && n > 1)
        st = sp_sha256_hex(ctx, *data, *len, sha[i]);
    for (size_t j = 0; st == SP_OK && n > 1 && j < i; j++)
        if (strcmp(sha[i], sha[j]) == 0)
            st = sp_fail(ctx, SP_ERR_INVALID_ARG,
                         "%s and %s hold the same trace: each rank's trace is given once (the "
                         "same run twice would count every layer twice)",
                         paths[j], paths[i]);
    if (st != SP_OK) {
        sp_free(*data);
        *data = NULL;
    }
    return st;
}

/* a file, plain or gzip (gzread reads both), into a NUL-terminated buffer */
sp_status sp_trace_read_file(sp_ctx *ctx, const char *path, char **data, size_t *out_len) {
    *data = NULL;
    sp_status checked = sp_trace_check_path(ctx, path);
    if (checked != SP_OK)
        return checked;
    gzFile f = gzopen(path, "rb");
    if (!f)
        return sp_fail(ctx, SP_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
    /* the file's size first: exact for a plain trace (no copies as the buffer grows), a start
     * for a compressed one */
    size_t cap = 1 << 20, len = 0;
    struct stat sb;
    if (stat(path, &sb) == 0 && S_ISREG(sb.st_mode) && (uint64_t)sb.st_size + 1 > cap)
        cap = (uint64_t)sb.st_size + 1 < SP_TRACE_MAX_FILE_BYTES ? (size_t)sb.st_size + 1
                                                                 : SP_TRACE_MAX_FILE_BYTES;
    char *buf = sp_malloc(cap + 1);
    sp_status st = buf ? SP_OK : sp_oom(ctx, "reading a trace");
    while (st == SP_OK) {
        if (len == cap) {
            if (cap >= SP_TRACE_MAX_FILE_BYTES) {
                st = sp_fail(ctx, SP_ERR_LIMIT, "%s: larger than %zu bytes uncompressed", path,
                             (size_t)SP_TRACE_MAX_FILE_BYTES);
                break;
            }
            char *grown = sp_realloc(buf, cap * 2 + 1);
            if (!grown) {
                st = sp_oom(ctx, "reading a trace");
                break;
            }
            buf = grown;
            cap *= 2;
        }
        size_t want = cap - len > (1u << 30) ? (1u << 30) : cap - len;
        int n = gzread(f, buf + len, (unsigned)want);
        if (n < 0) {
            int err = 0;
            const char *msg = gzerror(f, &err);
            st = sp_fail(ctx, SP_ERR_PARSE, "%s: not a readable gzip file: %s", path, msg);
            break;
        }
        if (n == 0) {
            int err = 0;
            gzerror(f, &err);
            if (err == Z_BUF_ERROR) /* the input ended inside the compressed stream */
                st = sp_fail(ctx, SP_ERR_PARSE,
                             "%s: the gzip file is truncated (it ends inside its compressed "
                             "data, after %zu bytes uncompressed): copy or write it again",
                             path, len);
            break;
        }
        len += (size_t)n;
    }
    if (gzclose(f) == Z_BUF_ERROR && st == SP_OK)
        st = sp_fail(ctx, SP_ERR_PARSE,
                     "%s: the gzip file is truncated (it ends inside its compressed data): copy "
                     "or write it again",
                     path);
    if (st == SP_OK && len >= 16 && memcmp(buf, "SQLite format 3", 16) == 0)
        st = sp_fail(ctx, SP_ERR_PARSE,
                     "%s: an SQLite database, not a Kineto JSON trace: for an Nsight Systems "
                     "export use `stagepart import nsys`",
                     path);
    if (st != SP_OK) {
        sp_free(buf);
        return st;
    }
    buf[len] = '\0';
    *data = buf;
    *out_len = len;
    return SP_OK;
}

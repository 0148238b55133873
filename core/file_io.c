/* core/file_io.c: reading whole files and writing them atomically.
 *
 * Atomic write: a temporary file beside the target (same folder, so rename(2) is atomic),
 * written, flushed, fsync'ed, closed, then renamed over the target. Any failure removes the
 * temporary file; the target is either the old file, untouched, or the complete new one. When
 * the output is also the input, the input was read completely before, so this is safe. */
#define _DEFAULT_SOURCE /* madvise, MADV_POPULATE_WRITE */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

/* Pages about to be filled once: made in one call (a hint, where the kernel has it) rather than
 * by a fault each as read(2) copies into them; 5,500 faults were a third of reading a 22 MB
 * profile. */
static void prefault(char *buf, size_t len) {
#if defined(MADV_POPULATE_WRITE)
    sp_advise_pages(buf, len, MADV_POPULATE_WRITE);
#else
    (void)buf;
    (void)len;
#endif
}

/* one part of a file read into its place in the buffer */
struct part {
    int fd;
    char *buf;
    size_t from, to;
    bool ok; /* read whole: the file was not shorter */
};

static void *read_part(void *arg) {
    struct part *h = arg;
    prefault(h->buf + h->from, h->to - h->from);
    h->ok = true;
    for (size_t at = h->from; at < h->to;) {
        ssize_t r = pread(h->fd, h->buf + at, h->to - at, (off_t)at);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            h->ok = false;
            break;
        }
        at += (size_t)r;
    }
    return NULL;
}

/* A large regular file's two halves read at once, the second on a thread of its own: the copy
 * and the fresh pages were most of reading a 22 MB profile, and they go as fast as there are
 * cores. The length read, or 0 (from the start, one read at a time) when the file was shorter
 * than it said or the thread did not start. */
static size_t read_halves(int fd, char *buf, size_t size) {
    struct part first = {fd, buf, 0, size / 2, false}, second = {fd, buf, size / 2, size, false};
    pthread_t tid;
    if (pthread_create(&tid, NULL, read_part, &second) != 0)
        return 0;
    read_part(&first);
    pthread_join(tid, NULL);
    return first.ok && second.ok && lseek(fd, (off_t)size, SEEK_SET) == (off_t)size ? size : 0;
}

sp_status sp_read_file(sp_ctx *ctx, const char *path, size_t max_bytes, char **out_data,
                       size_t *out_len) {
    *out_data = NULL;
    *out_len = 0;
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return sp_fail(ctx, SP_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || S_ISDIR(st.st_mode)) {
        int e = S_ISDIR(st.st_mode) ? EISDIR : errno;
        close(fd);
        return sp_fail(ctx, SP_ERR_IO, "cannot read '%s': %s", path, strerror(e));
    }
    /* a regular file's size, its NUL, and a byte more: the read that finds the end needs room,
     * else the buffer would double only to learn that nothing follows */
    size_t cap = S_ISREG(st.st_mode) && st.st_size > 0 ? (size_t)st.st_size + 2 : 65536;
    if (S_ISREG(st.st_mode) && (uint64_t)st.st_size > max_bytes) {
        close(fd);
        return sp_fail(ctx, SP_ERR_LIMIT, "%s: file is %lld bytes, more than the limit of %zu",
                       path, (long long)st.st_size, max_bytes);
    }
    char what[4200]; /* an allocation that fails names the file */
    snprintf(what, sizeof what, "reading %s", path);
    char *buf = sp_malloc(cap);
    if (!buf) {
        close(fd);
        return sp_oom(ctx, what);
    }
    size_t len = 0;
    if (S_ISREG(st.st_mode) && cap > ((size_t)8 << 20))
        len = read_halves(fd, buf, cap - 2); /* what follows reads on, if the file grew */
    else if (cap > ((size_t)1 << 20))
        prefault(buf, cap);
    for (;;) {
        if (len + 1 >= cap) {
            if (cap > max_bytes + 1) {
                sp_free(buf);
                close(fd);
                return sp_fail(ctx, SP_ERR_LIMIT, "%s: more than the limit of %zu bytes", path,
                               max_bytes);
            }
            char *nb = sp_realloc(buf, cap * 2);
            if (!nb) {
                sp_free(buf);
                close(fd);
                return sp_oom(ctx, what);
            }
            buf = nb;
            cap *= 2;
        }
        ssize_t r = read(fd, buf + len, cap - 1 - len);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            int e = errno;
            sp_free(buf);
            close(fd);
            return sp_fail(ctx, SP_ERR_IO, "cannot read '%s': %s", path, strerror(e));
        }
        if (r == 0)
            break;
        len += (size_t)r;
    }
    close(fd);
    if (len > max_bytes) {
        sp_free(buf);
        return sp_fail(ctx, SP_ERR_LIMIT, "%s: more than the limit of %zu bytes", path, max_bytes);
    }
    buf[len] = '\0';
    *out_data = buf;
    *out_len = len;
    return SP_OK;
}

static sp_status write_all(int fd, const char *data, size_t len) {
    while (len) {
        ssize_t w = write(fd, data, len);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return SP_ERR_IO;
        }
        data += w;
        len -= (size_t)w;
    }
    return SP_OK;
}

sp_status sp_write_file_atomic(sp_ctx *ctx, const char *path, const void *data, size_t len) {
    if (!ctx)
        return SP_ERR_INVALID_ARG;
    sp_ctx_begin(ctx);
    if (!path || !*path || (!data && len))
        return sp_fail(ctx, SP_ERR_INVALID_ARG, "sp_write_file_atomic: no path or data");
    struct sp_strbuf tmp;
    sp_strbuf_init(&tmp);
    sp_strbuf_printf(&tmp, "%s.tmp.XXXXXX", path);
    if (tmp.oom)
        return sp_oom(ctx, "naming a temporary file");
    int fd = mkstemp(tmp.buf);
    if (fd < 0) {
        sp_status st = sp_fail(ctx, SP_ERR_IO, "cannot create a temporary file for '%s': %s", path,
                               strerror(errno));
        sp_strbuf_release(&tmp);
        return st;
    }
    /* mkstemp creates 0600; outputs are ordinary files, so honour the umask like fopen would. */
    mode_t mask = umask(0);
    umask(mask);
    (void)fchmod(fd, 0666 & ~mask);
    const char *what = "write";
    int err = 0;
    if (write_all(fd, data, len) != SP_OK) {
        err = errno;
    } else if (fsync(fd) != 0 && errno != EINVAL && errno != EROFS) {
        what = "sync";
        err = errno;
    }
    if (close(fd) != 0 && !err) {
        what = "close";
        err = errno;
    }
    if (!err && rename(tmp.buf, path) != 0) {
        what = "rename over";
        err = errno;
    }
    if (err) {
        unlink(tmp.buf);
        sp_strbuf_release(&tmp);
        return sp_fail(ctx, SP_ERR_IO, "cannot %s '%s': %s (the existing file is unchanged)", what,
                       path, strerror(err));
    }
    sp_strbuf_release(&tmp);
    return SP_OK;
}

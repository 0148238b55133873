/* core/file_io.c: reading whole files (writing them: core/file_write.c). */
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
    if (S_ISREG(st.st_mode) && cap > ((size_t)8 << 20) && sp_threads_usable() > 1)
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

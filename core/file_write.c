/* core/file_write.c: every output the library and the CLI write goes through here
 * (sp_write_file_atomic), whatever the path turns out to be:
 *
 *   "-"                     standard output;
 *   a character device,     opened and written in place (O_WRONLY, no truncation, no rename):
 *   a FIFO                  /dev/null stays /dev/null, a named pipe's reader gets the bytes;
 *   a symbolic link         followed (to 40 levels, like the kernel), and what it points to is
 *                           written as below, where it lives: the link stays a link;
 *   a regular file, or      a temporary file beside it (same folder, so rename(2) is atomic),
 *   nothing yet             written, fsync'ed, closed, then renamed over it, keeping an existing
 *                           file's mode (and owner, where allowed); any failure removes the
 *                           temporary file and leaves the old file untouched;
 *   anything else           refused: a directory, a block device, a socket, a folder that is
 *                           missing or not a folder, each named with the reason (SP_ERR_IO).
 *
 * When the output is also an input, the input was read completely before, so renaming is safe;
 * the CLI refuses that case anyway (cli_check_output_not_input). */
#define _DEFAULT_SOURCE /* fchown */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

enum { MAX_LINKS = 40 }; /* as the kernel's own limit on a path's symbolic links */

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

/* the folder part of path ("." when it has none), into out */
static void folder_of(const char *path, struct sp_strbuf *out) {
    const char *slash = strrchr(path, '/');
    if (!slash)
        sp_strbuf_append(out, ".", 1);
    else if (slash == path)
        sp_strbuf_append(out, "/", 1);
    else
        sp_strbuf_append(out, path, (size_t)(slash - path));
}

/* path with its symbolic links followed, into target: the file the bytes are for. A dangling
 * link gives the path it points to (the file is then created there). */
static sp_status follow_links(sp_ctx *ctx, const char *path, struct sp_strbuf *target) {
    sp_strbuf_append(target, path, strlen(path));
    for (int level = 0;; level++) {
        struct stat st;
        if (target->oom)
            return sp_oom(ctx, "following an output's symbolic links");
        if (lstat(target->buf, &st) != 0 || !S_ISLNK(st.st_mode))
            return SP_OK;
        if (level == MAX_LINKS)
            return sp_fail(ctx, SP_ERR_IO, "cannot write '%s': %s", path, strerror(ELOOP));
        char link[PATH_MAX];
        ssize_t n = readlink(target->buf, link, sizeof link - 1);
        if (n < 0)
            return sp_fail(ctx, SP_ERR_IO, "cannot write '%s': reading the link '%s': %s", path,
                           target->buf, strerror(errno));
        link[n] = '\0';
        struct sp_strbuf next;
        sp_strbuf_init(&next);
        if (link[0] != '/') { /* relative to the link's own folder */
            folder_of(target->buf, &next);
            sp_strbuf_append(&next, "/", 1);
        }
        sp_strbuf_append(&next, link, (size_t)n);
        sp_strbuf_release(target);
        *target = next;
    }
}

/* a device or FIFO written in place: it is not a file to replace */
static sp_status write_in_place(sp_ctx *ctx, const char *path, const char *target, const void *data,
                                size_t len) {
    int fd = open(target, O_WRONLY | O_NOCTTY | O_CLOEXEC);
    if (fd < 0)
        return sp_fail(ctx, SP_ERR_IO, "cannot open '%s' for writing: %s", path, strerror(errno));
    int err = write_all(fd, data, len) == SP_OK ? 0 : errno;
    if (close(fd) != 0 && !err)
        err = errno;
    return err ? sp_fail(ctx, SP_ERR_IO, "cannot write '%s': %s", path, strerror(err)) : SP_OK;
}

static sp_status write_stdout(sp_ctx *ctx, const void *data, size_t len) {
    if (fflush(stdout) != 0 || write_all(STDOUT_FILENO, data, len) != SP_OK)
        return sp_fail(ctx, SP_ERR_IO, "cannot write to standard output: %s", strerror(errno));
    return SP_OK;
}

/* The folder a new file goes in must exist and be a folder; its writability is tested by making
 * the temporary file (access(2) would say yes to root on a read-only file system). */
static sp_status check_folder(sp_ctx *ctx, const char *path, const char *target) {
    struct sp_strbuf dir;
    sp_strbuf_init(&dir);
    folder_of(target, &dir);
    if (dir.oom)
        return sp_oom(ctx, "naming an output's folder");
    struct stat st;
    sp_status status = SP_OK;
    if (stat(dir.buf, &st) != 0)
        status = sp_fail(ctx, SP_ERR_IO, "cannot write '%s': its folder '%s': %s", path, dir.buf,
                         strerror(errno));
    else if (!S_ISDIR(st.st_mode))
        status = sp_fail(ctx, SP_ERR_IO, "cannot write '%s': '%s' is not a folder", path, dir.buf);
    sp_strbuf_release(&dir);
    return status;
}

/* target (a regular file, or none yet) replaced through a temporary file beside it */
static sp_status replace_file(sp_ctx *ctx, const char *path, const char *target,
                              const struct stat *old, const void *data, size_t len) {
    struct sp_strbuf tmp;
    sp_strbuf_init(&tmp);
    sp_strbuf_printf(&tmp, "%s.tmp.XXXXXX", target);
    if (tmp.oom)
        return sp_oom(ctx, "naming a temporary file");
    int fd = mkstemp(tmp.buf);
    if (fd < 0) {
        sp_status st =
            sp_fail(ctx, SP_ERR_IO, "cannot write '%s': creating a file in its folder: %s", path,
                    strerror(errno));
        sp_strbuf_release(&tmp);
        return st;
    }
    if (old) { /* the file keeps what it was: its mode, and its owner where this process may */
        (void)fchmod(fd, old->st_mode & 07777);
        if (old->st_uid != geteuid() || old->st_gid != getegid())
            (void)fchown(fd, old->st_uid, old->st_gid);
    } else { /* mkstemp creates 0600; a new output is an ordinary file, as fopen makes */
        mode_t mask = umask(0);
        umask(mask);
        (void)fchmod(fd, 0666 & ~mask);
    }
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
    if (!err && rename(tmp.buf, target) != 0) {
        what = "rename over";
        err = errno;
    }
    if (err)
        unlink(tmp.buf);
    sp_strbuf_release(&tmp);
    if (err)
        return sp_fail(ctx, SP_ERR_IO, "cannot %s '%s': %s (the existing file is unchanged)", what,
                       path, strerror(err));
    return SP_OK;
}

sp_status sp_write_file_atomic(sp_ctx *ctx, const char *path, const void *data, size_t len) {
    if (!ctx)
        return SP_ERR_INVALID_ARG;
    sp_ctx_begin(ctx);
    if (!path || !*path || (!data && len))
        return sp_fail(ctx, SP_ERR_INVALID_ARG, "sp_write_file_atomic: no path or data");
    if (strcmp(path, "-") == 0)
        return write_stdout(ctx, data, len);
    struct sp_strbuf target;
    sp_strbuf_init(&target);
    sp_status status = follow_links(ctx, path, &target);
    struct stat st;
    if (status != SP_OK) {
        /* named */
    } else if (stat(target.buf, &st) != 0) {
        if (errno != ENOENT)
            status = sp_fail(ctx, SP_ERR_IO, "cannot write '%s': %s", path, strerror(errno));
        else if ((status = check_folder(ctx, path, target.buf)) == SP_OK)
            status = replace_file(ctx, path, target.buf, NULL, data, len);
    } else if (S_ISREG(st.st_mode)) {
        status = replace_file(ctx, path, target.buf, &st, data, len);
    } else if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)) {
        status = write_in_place(ctx, path, target.buf, data, len);
    } else {
        status = sp_fail(ctx, SP_ERR_IO, "cannot write '%s': it is %s, not a file", path,
                         S_ISDIR(st.st_mode)    ? "a directory"
                         : S_ISBLK(st.st_mode)  ? "a block device"
                         : S_ISSOCK(st.st_mode) ? "a socket"
                                                : "neither a file, a character device nor a FIFO");
    }
    sp_strbuf_release(&target);
    return status;
}

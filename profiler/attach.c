/* profiler/attach.c: sp_attach_run, a program run under the live collector (libstagepart-inject.so,
 * loaded by CUDA_INJECTION64_PATH and NVTX_INJECTION64_PATH) and the event logs it wrote loaded
 * as a trace: what `profile --attach -- CMD` and `profile MODEL --backend cuda` attribute. */
#define _XOPEN_SOURCE 700
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "internal.h"

static bool is_event_log(const char *name) {
    size_t n = strlen(name);
    return strncmp(name, "events-", 7) == 0 && n > 13 && strcmp(name + n - 6, ".splog") == 0;
}

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The event logs in dir, sorted; *n 0 when there are none. NULL only when out of memory. */
static char **list_logs(const char *dir, size_t *n) {
    *n = 0;
    size_t cap = 8;
    char **paths = sp_mallocarray(cap, sizeof *paths);
    DIR *d = opendir(dir);
    if (!paths || !d) {
        if (d)
            closedir(d);
        return paths;
    }
    for (struct dirent *e; (e = readdir(d));) {
        if (!is_event_log(e->d_name))
            continue;
        if (*n == cap) {
            char **p = sp_realloc(paths, 2 * cap * sizeof *p);
            if (!p)
                break;
            paths = p;
            cap *= 2;
        }
        size_t len = strlen(dir) + strlen(e->d_name) + 2;
        if (!(paths[*n] = sp_malloc(len)))
            break;
        snprintf(paths[*n], len, "%s/%s", dir, e->d_name);
        (*n)++;
    }
    closedir(d);
    qsort(paths, *n, sizeof *paths, cmp_str);
    return paths;
}

static void free_logs(char **paths, size_t n, bool remove_files) {
    for (size_t i = 0; paths && i < n; i++) {
        if (remove_files)
            unlink(paths[i]);
        sp_free(paths[i]);
    }
    sp_free(paths);
}

static void set_env(const char *name, const char *value) {
    if (value)
        setenv(name, value, 1);
}

/* Run the program; its wait status, or -1 after recording on ctx why it could not start. */
static int run_program(sp_ctx *ctx, const sp_attach_opts *o, const char *dir) {
    char warmup[24] = "";
    if (o->warmup_steps)
        snprintf(warmup, sizeof warmup, "%u", o->warmup_steps);
    char *step_pattern = NULL; /* the collector compiles it as POSIX: Python's \d translated */
    if (o->step_pattern &&
        sp_ere_translate(ctx, "--step-pattern", o->step_pattern, &step_pattern) != SP_OK)
        return -1;
    int report[2];
    if (pipe(report) != 0) {
        sp_fail(ctx, SP_ERR_IO, "pipe: %s", strerror(errno));
        sp_free(step_pattern);
        return -1;
    }
    fcntl(report[1], F_SETFD, FD_CLOEXEC);
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        sp_fail(ctx, SP_ERR_IO, "fork: %s", strerror(errno));
        close(report[0]);
        close(report[1]);
        sp_free(step_pattern);
        return -1;
    }
    if (pid == 0) { /* the child: only async-signal-safe calls and exec from here */
        close(report[0]);
        signal(SIGINT, SIG_DFL);
        signal(SIGQUIT, SIG_DFL);
        setenv("CUDA_INJECTION64_PATH", o->inject_lib, 1);
        setenv("NVTX_INJECTION64_PATH", o->inject_lib, 1);
        setenv("STAGEPART_INJECT_DIR", dir, 1);
        set_env("STAGEPART_INJECT_STEPS", o->steps);
        set_env("STAGEPART_INJECT_WARMUP", warmup[0] ? warmup : NULL);
        set_env("STAGEPART_INJECT_STEP_PATTERN", step_pattern);
        execvp(o->cmd[0], o->cmd);
        int e = errno;
        ssize_t w = write(report[1], &e, sizeof e);
        (void)w;
        _exit(127);
    }
    close(report[1]);
    sp_free(step_pattern);
    /* Ctrl-C reaches the program (same process group); we wait for it and clean up */
    void (*old_int)(int) = signal(SIGINT, SIG_IGN);
    void (*old_quit)(int) = signal(SIGQUIT, SIG_IGN);
    int exec_errno = 0;
    ssize_t got;
    while ((got = read(report[0], &exec_errno, sizeof exec_errno)) < 0 && errno == EINTR)
        ;
    close(report[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    signal(SIGINT, old_int);
    signal(SIGQUIT, old_quit);
    if (got == (ssize_t)sizeof exec_errno) {
        sp_fail(ctx, SP_ERR_INVALID_ARG, "cannot run '%s': %s", o->cmd[0], strerror(exec_errno));
        return -1;
    }
    return status;
}

/* The folder the logs go to: events_dir (made, and empty of logs), or a new temporary one. */
static sp_status logs_dir(sp_ctx *ctx, const char *events_dir, char *tmp, size_t cap,
                          const char **dir) {
    if (events_dir) {
        if (mkdir(events_dir, 0755) != 0 && errno != EEXIST)
            return sp_fail(ctx, SP_ERR_IO, "--events-dir %s: %s", events_dir, strerror(errno));
        size_t old = 0;
        char **logs = list_logs(events_dir, &old);
        free_logs(logs, old, false);
        if (old)
            return sp_fail(ctx, SP_ERR_INVALID_ARG,
                           "--events-dir %s already holds %zu event logs (events-*.splog) of an "
                           "earlier run: give an empty folder",
                           events_dir, old);
        *dir = events_dir;
        return SP_OK;
    }
    const char *t = getenv("TMPDIR");
    snprintf(tmp, cap, "%s/stagepart-attach-XXXXXX", t && *t ? t : "/tmp");
    if (!mkdtemp(tmp))
        return sp_fail(ctx, SP_ERR_IO, "a temporary folder in %s: %s", t && *t ? t : "/tmp",
                       strerror(errno));
    *dir = tmp;
    return SP_OK;
}

sp_status sp_attach_run(sp_ctx *ctx, const sp_attach_opts *o, sp_trace **trace) {
    if (!ctx)
        return SP_ERR_INVALID_ARG;
    sp_ctx_begin(ctx);
    if (!o || !o->cmd || !o->cmd[0] || !o->inject_lib || !trace)
        return sp_fail(ctx, SP_ERR_INVALID_ARG, "sp_attach_run: NULL argument");
    *trace = NULL;
    char tmp[4096];
    const char *dir = NULL;
    sp_status st = logs_dir(ctx, o->events_dir, tmp, sizeof tmp, &dir);
    if (st != SP_OK)
        return st;
    int status = run_program(ctx, o, dir);
    size_t n = 0;
    char **logs = list_logs(dir, &n);
    const char *prog = o->cmd[0];
    if (status < 0)
        st = ctx->status;
    else if (o->no_device_status && WIFEXITED(status) && WEXITSTATUS(status) == o->no_device_status)
        st = sp_fail(ctx, SP_ERR_NO_DEVICE, "'%s' found no CUDA device: no profile written", prog);
    else if (WIFSIGNALED(status))
        st = sp_fail(ctx, SP_ERR_PROGRAM, "'%s' was killed by signal %d: no profile written", prog,
                     WTERMSIG(status));
    else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        st = sp_fail(ctx, SP_ERR_PROGRAM, "'%s' exited with status %d: no profile written", prog,
                     WEXITSTATUS(status));
    else if (!logs)
        st = sp_oom(ctx, "listing the event logs");
    else if (n == 0)
        st = sp_fail(ctx, SP_ERR_NO_DEVICE,
                     "'%s' wrote no event log: it made no NVTX or CUDA call that loaded the "
                     "collector (is it a CUDA program, and does it keep the environment for its "
                     "children?)",
                     prog);
    else
        st = sp_trace_load_events(ctx, (const char *const *)logs, n, trace);
    free_logs(logs, n, !o->events_dir);
    if (!o->events_dir)
        rmdir(dir);
    return st;
}

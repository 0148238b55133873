/* cli/attach.c: running a program under the live collector (libstagepart-inject.so, loaded by
 * CUDA_INJECTION64_PATH and NVTX_INJECTION64_PATH) and attributing its event logs: `profile
 * --attach -- CMD`, and `profile MODEL --backend cuda`, which attaches to stagepart-model-cuda. */
#define _XOPEN_SOURCE 700
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "attach.h"
#include "attribution.h"

/* A file stagepart ships beside its executable: $env when set, the build tree's (build_path),
 * or <exe>/<relative>. false when none is readable (out then holds what $env named, if set). */
static bool find_helper(const char *env_name, const char *build_path, const char *relative,
                        char *out, size_t cap) {
    const char *env = getenv(env_name);
    if (env && *env)
        return realpath(env, out) != NULL || (snprintf(out, cap, "%s", env), false);
    if (build_path && access(build_path, R_OK) == 0 && realpath(build_path, out))
        return true;
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash) {
            *slash = '\0';
            char candidate[4200];
            snprintf(candidate, sizeof candidate, "%s/%s", exe, relative);
            if (access(candidate, R_OK) == 0 && realpath(candidate, out))
                return true;
        }
    }
    return false;
}

#ifndef SP_INJECT_BUILD_PATH
#define SP_INJECT_BUILD_PATH NULL
#endif
#ifndef SP_MODEL_CUDA_BUILD_PATH
#define SP_MODEL_CUDA_BUILD_PATH NULL
#endif

/* The collector: STAGEPART_INJECT_LIB, the build tree's, or <exe>/../lib's. */
static bool find_inject_lib(char *out, size_t cap) {
    return find_helper("STAGEPART_INJECT_LIB", SP_INJECT_BUILD_PATH,
                       "../lib/libstagepart-inject.so", out, cap);
}

bool cli_find_model_cuda(char *out, size_t cap) {
    return find_helper("STAGEPART_MODEL_CUDA", SP_MODEL_CUDA_BUILD_PATH, "stagepart-model-cuda",
                       out, cap);
}

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
    char **paths = malloc(cap * sizeof *paths);
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
            char **p = realloc(paths, 2 * cap * sizeof *p);
            if (!p)
                break;
            paths = p;
            cap *= 2;
        }
        size_t len = strlen(dir) + strlen(e->d_name) + 2;
        if (!(paths[*n] = malloc(len)))
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
        free(paths[i]);
    }
    free(paths);
}

static void set_env(const char *name, const char *value) {
    if (value)
        setenv(name, value, 1);
}

/* Run the program; its exit status, or -1 after reporting why it could not start. */
static int run_program(char **cmd, const char *lib, const char *dir, const char *steps,
                       const char *warmup, const char *step_pattern) {
    int report[2];
    if (pipe(report) != 0) {
        fprintf(stderr, "stagepart: error: pipe: %s\n", strerror(errno));
        return -1;
    }
    fcntl(report[1], F_SETFD, FD_CLOEXEC);
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "stagepart: error: fork: %s\n", strerror(errno));
        close(report[0]);
        close(report[1]);
        return -1;
    }
    if (pid == 0) {
        close(report[0]);
        signal(SIGINT, SIG_DFL);
        signal(SIGQUIT, SIG_DFL);
        setenv("CUDA_INJECTION64_PATH", lib, 1);
        setenv("NVTX_INJECTION64_PATH", lib, 1);
        setenv("STAGEPART_INJECT_DIR", dir, 1);
        set_env("STAGEPART_INJECT_STEPS", steps);
        set_env("STAGEPART_INJECT_WARMUP", warmup);
        set_env("STAGEPART_INJECT_STEP_PATTERN", step_pattern);
        execvp(cmd[0], cmd);
        int e = errno;
        ssize_t w = write(report[1], &e, sizeof e);
        (void)w;
        _exit(127);
    }
    close(report[1]);
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
        fprintf(stderr, "stagepart: error: cannot run '%s': %s\n", cmd[0], strerror(exec_errno));
        return -1;
    }
    return status;
}

int cli_attach_profile(const struct cli_attach_args *a) {
    const sp_trace_profile_opts *o = &a->opts;
    char **cmd = a->cmd;
    const char *events_dir = a->events_dir;
    char warmup[24] = "";
    if (o->warmup_steps)
        snprintf(warmup, sizeof warmup, "%u", o->warmup_steps);
    char lib[4096];
    if (!find_inject_lib(lib, sizeof lib)) {
        fprintf(stderr,
                "stagepart: error: libstagepart-inject.so %s%s: this stagepart was built without "
                "CUDA (STAGEPART_CUDA=OFF or no toolkit); build with the CUDA toolkit, or set "
                "STAGEPART_INJECT_LIB to the library\n",
                getenv("STAGEPART_INJECT_LIB") ? "not readable at " : "not found",
                getenv("STAGEPART_INJECT_LIB") ? lib : "");
        return CLI_EXIT_UNAVAILABLE;
    }
    char tmp[4096];
    const char *dir = events_dir;
    if (events_dir) {
        if (mkdir(events_dir, 0755) != 0 && errno != EEXIST) {
            fprintf(stderr, "stagepart: error: --events-dir %s: %s\n", events_dir, strerror(errno));
            return CLI_EXIT_USAGE;
        }
        size_t old = 0;
        char **logs = list_logs(events_dir, &old);
        free_logs(logs, old, false);
        if (old)
            return cli_usage_error("profile",
                                   "--events-dir %s already holds %zu event logs (events-*.splog) "
                                   "of an earlier run: give an empty folder",
                                   events_dir, old);
    } else {
        const char *t = getenv("TMPDIR");
        snprintf(tmp, sizeof tmp, "%s/stagepart-attach-XXXXXX", t && *t ? t : "/tmp");
        if (!mkdtemp(tmp)) {
            fprintf(stderr, "stagepart: error: a temporary folder in %s: %s\n",
                    t && *t ? t : "/tmp", strerror(errno));
            return CLI_EXIT_INTERNAL;
        }
        dir = tmp;
    }
    int status = run_program(cmd, lib, dir, a->steps, warmup[0] ? warmup : NULL, o->step_pattern);
    size_t n = 0;
    char **logs = list_logs(dir, &n);
    int code = CLI_EXIT_OK;
    if (status < 0) {
        code = CLI_EXIT_USAGE;
    } else if (a->no_device_status && WIFEXITED(status) &&
               WEXITSTATUS(status) == a->no_device_status) {
        fprintf(stderr, "stagepart: error: '%s' found no CUDA device: no profile written\n",
                cmd[0]);
        code = CLI_EXIT_UNAVAILABLE;
    } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        if (WIFSIGNALED(status))
            fprintf(stderr, "stagepart: error: '%s' was killed by signal %d: no profile written\n",
                    cmd[0], WTERMSIG(status));
        else
            fprintf(stderr, "stagepart: error: '%s' exited with status %d: no profile written\n",
                    cmd[0], WEXITSTATUS(status));
        code = CLI_EXIT_CHECK_FAILED;
    } else if (!logs) {
        fprintf(stderr, "stagepart: error: out of memory listing %s\n", dir);
        code = CLI_EXIT_INTERNAL;
    } else if (n == 0) {
        fprintf(stderr,
                "stagepart: error: '%s' wrote no event log: it made no NVTX or CUDA call that "
                "loaded the collector (is it a CUDA program, and does it keep the environment "
                "for its children?)\n",
                cmd[0]);
        code = CLI_EXIT_UNAVAILABLE;
    } else {
        sp_ctx *ctx = NULL;
        if (sp_ctx_create(&ctx) != SP_OK) {
            code = CLI_EXIT_INTERNAL;
        } else {
            sp_trace *trace = NULL;
            sp_status st = sp_trace_load_events(ctx, (const char *const *)logs, n, &trace);
            if (st != SP_OK) {
                code = cli_report(ctx, st, false);
            } else {
                cli_print_warnings(ctx);
                code = cli_attribution_finish(ctx, trace, o, a->output, true);
            }
            sp_trace_destroy(trace);
            sp_ctx_destroy(ctx);
        }
    }
    free_logs(logs, n, !events_dir);
    if (!events_dir)
        rmdir(dir);
    return code;
}

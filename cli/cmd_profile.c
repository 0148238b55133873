/* cli/cmd_profile.c: `stagepart profile MODEL`: a built-in model measured by stagepart itself
 * (cli/profile_model.c); `stagepart profile --attach -- CMD ARGS...`: run a CUDA program with the
 * live collector injected (CUDA_INJECTION64_PATH and NVTX_INJECTION64_PATH name
 * libstagepart-inject.so), then attribute its event logs with the same engine as `import`. */
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

#include "attribution.h"
#include "profile_model.h"

enum {
    OPT_OUTPUT = 1,
    OPT_ATTACH,
    OPT_STEPS,
    OPT_EVENTS_DIR,
    OPT_BACKEND,
    OPT_SEQ_LEN,
    OPT_WARMUP,
    OPT_ITERS,
    OPT_CORE,
    OPT_QUIET
};

const struct sp_opt cmd_profile_opts[] = {
    {OPT_BACKEND, "backend", 0, "<cpu|cuda>",
     "where MODEL runs: cpu (one pinned thread, OpenBLAS; default). cuda is not built in this "
     "version (exit 4)",
     "Built-in models"},
    {OPT_SEQ_LEN, "seq-len", 0, "<S>",
     "positions per sample for token models (default: the model file's seq_len)",
     "Built-in models"},
    {OPT_WARMUP, "warmup", 0, "<N>", "untimed iterations first (default: 1)", "Built-in models"},
    {OPT_ITERS, "iters", 0, "<K>", "timed iterations; the profile holds their medians (default: 5)",
     "Built-in models"},
    {OPT_CORE, "core", 0, "<C>",
     "pin the measuring thread to core C (default: the last core this process may use)",
     "Built-in models"},
    {OPT_QUIET, "quiet", 'q', NULL, "no progress bar (there is none when stderr is no terminal)",
     "Built-in models"},
    {OPT_ATTACH, "attach", 0, NULL,
     "run CMD ARGS (after --) with the CUPTI + NVTX collector injected", "Collection"},
    {OPT_STEPS, "steps", 0, "<K>",
     "stop recording after K step ranges past the warm-up (default: record until exit)",
     "Collection"},
    {OPT_EVENTS_DIR, "events-dir", 0, "<dir>",
     "keep the event logs (one per process) in <dir>, for `stagepart import events` "
     "(default: a temporary folder, removed)",
     "Collection"},
    SP_ATTRIBUTION_OPTS,
    {OPT_OUTPUT, "output", 'o', "<file>",
     "write the profile to <file> (atomically) and print a summary; default: the profile on "
     "stdout",
     "Output"},
    {0, NULL, 0, NULL, NULL, NULL},
};

const struct sp_command_help cmd_profile_help = {
    "profile",
    "MODEL [--micro-batch-size B] [--seq-len S] [--iters K] [-o PROFILE]\n"
    "       stagepart profile --attach [-o PROFILE] [--steps K --warmup-steps N] [options] -- "
    "CMD ARGS...",
    "Measure a built-in model on the CPU, or a running CUDA program's per-layer GPU time.",
    "MODEL is a stagepart-model file (samples/models/, docs/models.md): stagepart runs it forward\n"
    "  and backward on one thread pinned to one core (OpenBLAS sgemm, fp32), timing every layer,\n"
    "  and writes a profile with the medians, the weight-gradient part of each backward, the\n"
    "  exact activation, saved and parameter bytes, and each layer's spread ('measured'). It\n"
    "  prints the repeatability (coefficient of variation per layer) and warns above 5%.\n"
    "  Ctrl-C stops it and writes nothing (exit 130).\n"
    "With --attach it runs CMD unchanged, with libstagepart-inject.so loaded by the CUDA driver\n"
    "  and by NVTX: the program names its layers with NVTX ranges '<layer>/fwd' and '<layer>/bwd' "
    "(the\n"
    "  PyTorch helper profiler/python/stagepart_torch.py adds them by module hooks) and its\n"
    "  steps 'stagepart/step'. CUPTI's activity API records every kernel, copy and memset;\n"
    "  each goes to the range open on the thread that launched it (CUPTI external\n"
    "  correlation), then to its layer, as in `stagepart import`. Kernels of CUDA graph\n"
    "  launches count for the range around the launch. The collector never stops the program:\n"
    "  a CUPTI failure is reported once and recording turns off. Needs a stagepart built with\n"
    "  CUDA (or STAGEPART_INJECT_LIB naming the library). Exit 1 when the program fails (no\n"
    "  profile is written), 4 when no GPU work was recorded. docs/profiling.md.",
    "  stagepart profile samples/models/gpt2-small.json -o gpt2.json\n"
    "  stagepart profile samples/models/resnet18.json --micro-batch-size 32 --iters 9 -o r.json\n"
    "  stagepart profile --attach -o profile.json --warmup-steps 2 --steps 5 -- python train.py\n"
    "  stagepart profile --attach --events-dir run/ -o profile.json -- ./my_cuda_app\n",
};

/* The collector: STAGEPART_INJECT_LIB, the build tree's, or <exe>/../lib's. */
static bool find_inject_lib(char *out, size_t cap) {
    const char *env = getenv("STAGEPART_INJECT_LIB");
    if (env && *env)
        return realpath(env, out) != NULL || (snprintf(out, cap, "%s", env), false);
#ifdef SP_INJECT_BUILD_PATH
    if (access(SP_INJECT_BUILD_PATH, R_OK) == 0 && realpath(SP_INJECT_BUILD_PATH, out))
        return true;
#endif
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash) {
            *slash = '\0';
            char candidate[4200];
            snprintf(candidate, sizeof candidate, "%s/../lib/libstagepart-inject.so", exe);
            if (access(candidate, R_OK) == 0 && realpath(candidate, out))
                return true;
        }
    }
    (void)cap;
    return false;
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

int cmd_profile(int argc, char **argv) {
    int dashdash = argc;
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--") == 0) {
            dashdash = i;
            break;
        }
    sp_trace_profile_opts opts;
    sp_trace_profile_opts_init(&opts);
    const char *output = NULL, *events_dir = NULL, *steps = NULL;
    char warmup[24] = "";
    bool attach = false;
    uint64_t v = 0;
    struct sp_profile_model_args margs;
    memset(&margs, 0, sizeof margs);
    sp_model_profile_opts_init(&margs.opts);
    struct sp_opt_parser p;
    sp_opt_parser_init(&p, "profile", cmd_profile_opts, dashdash, argv);
    for (int id; (id = sp_opt_next(&p)) != SP_OPT_DONE;) {
        bool taken = false;
        if (id == SP_OPT_ERROR || !sp_attribution_opt(&p, id, &opts, &taken))
            return SP_EXIT_USAGE;
        if (id == SP_ATTR_OPT_MBS)
            margs.micro_batch_size = (uint32_t)opts.micro_batch_size;
        if (taken)
            continue;
        switch (id) {
        case OPT_BACKEND:
            margs.backend = p.value;
            break;
        case OPT_SEQ_LEN:
            if (!sp_opt_uint(&p, 1, 1u << 24, &v))
                return SP_EXIT_USAGE;
            margs.seq_len = (uint32_t)v;
            break;
        case OPT_WARMUP:
            if (!sp_opt_uint(&p, 0, 100000, &v))
                return SP_EXIT_USAGE;
            margs.opts.warmup = (uint32_t)v;
            break;
        case OPT_ITERS:
            if (!sp_opt_uint(&p, 1, 100000, &v))
                return SP_EXIT_USAGE;
            margs.opts.iters = (uint32_t)v;
            break;
        case OPT_CORE:
            if (!sp_opt_uint(&p, 0, 4095, &v))
                return SP_EXIT_USAGE;
            margs.opts.core = (int)v;
            break;
        case OPT_QUIET:
            margs.quiet = true;
            break;
        case SP_OPT_HELP:
            sp_print_command_help(stdout, &cmd_profile_help, cmd_profile_opts);
            return SP_EXIT_OK;
        case OPT_OUTPUT:
            output = p.value;
            break;
        case OPT_ATTACH:
            attach = true;
            break;
        case OPT_STEPS:
            if (!sp_opt_uint(&p, 1, 1000000, &v))
                return SP_EXIT_USAGE;
            steps = p.value;
            break;
        case OPT_EVENTS_DIR:
            events_dir = p.value;
            break;
        }
    }
    if (!attach) {
        if (p.n_positional != 1 || dashdash != argc)
            return sp_usage_error("profile", "give a model file (stagepart profile MODEL), or "
                                             "--attach [options] -- CMD ARGS... for a program");
        margs.model_path = p.positional[0];
        margs.output = output;
        margs.name = opts.model;
        const char *inputs[] = {margs.model_path};
        if (output) {
            int rc = sp_check_output_not_input("profile", "--output", output, inputs, 1);
            if (rc)
                return rc;
        }
        return sp_profile_model_run(&margs);
    }
    if (p.n_positional)
        return sp_usage_error("profile", "unexpected argument '%s' before '--'", p.positional[0]);
    if (dashdash + 1 >= argc)
        return sp_usage_error("profile", "no program to run: put it after '--'");
    char **cmd = argv + dashdash + 1;
    char model[256];
    if (!opts.model) { /* the program's name: "train" for `python train.py`, else argv[0]'s */
        const char *prog = strrchr(cmd[0], '/') ? strrchr(cmd[0], '/') + 1 : cmd[0];
        if (strncmp(prog, "python", 6) == 0 && cmd[1] && cmd[1][0] != '-')
            prog = strrchr(cmd[1], '/') ? strrchr(cmd[1], '/') + 1 : cmd[1];
        snprintf(model, sizeof model, "%s", prog);
        size_t len = strlen(model);
        if (len > 3 && strcmp(model + len - 3, ".py") == 0)
            model[len - 3] = '\0';
        opts.model = model;
    }
    if (opts.warmup_steps)
        snprintf(warmup, sizeof warmup, "%u", opts.warmup_steps);
    char lib[4096];
    if (!find_inject_lib(lib, sizeof lib)) {
        fprintf(stderr,
                "stagepart: error: libstagepart-inject.so %s%s: this stagepart was built without "
                "CUDA (STAGEPART_CUDA=OFF or no toolkit); build with the CUDA toolkit, or set "
                "STAGEPART_INJECT_LIB to the library\n",
                getenv("STAGEPART_INJECT_LIB") ? "not readable at " : "not found",
                getenv("STAGEPART_INJECT_LIB") ? lib : "");
        return SP_EXIT_UNAVAILABLE;
    }
    char tmp[4096];
    const char *dir = events_dir;
    if (events_dir) {
        if (mkdir(events_dir, 0755) != 0 && errno != EEXIST) {
            fprintf(stderr, "stagepart: error: --events-dir %s: %s\n", events_dir, strerror(errno));
            return SP_EXIT_USAGE;
        }
        size_t old = 0;
        char **logs = list_logs(events_dir, &old);
        free_logs(logs, old, false);
        if (old)
            return sp_usage_error("profile",
                                  "--events-dir %s already holds %zu event logs (events-*.splog) "
                                  "of an earlier run: give an empty folder",
                                  events_dir, old);
    } else {
        const char *t = getenv("TMPDIR");
        snprintf(tmp, sizeof tmp, "%s/stagepart-attach-XXXXXX", t && *t ? t : "/tmp");
        if (!mkdtemp(tmp)) {
            fprintf(stderr, "stagepart: error: a temporary folder in %s: %s\n",
                    t && *t ? t : "/tmp", strerror(errno));
            return SP_EXIT_INTERNAL;
        }
        dir = tmp;
    }
    int status = run_program(cmd, lib, dir, steps, warmup[0] ? warmup : NULL, opts.step_pattern);
    size_t n = 0;
    char **logs = list_logs(dir, &n);
    int code = SP_EXIT_OK;
    if (status < 0) {
        code = SP_EXIT_USAGE;
    } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        if (WIFSIGNALED(status))
            fprintf(stderr, "stagepart: error: '%s' was killed by signal %d: no profile written\n",
                    cmd[0], WTERMSIG(status));
        else
            fprintf(stderr, "stagepart: error: '%s' exited with status %d: no profile written\n",
                    cmd[0], WEXITSTATUS(status));
        code = SP_EXIT_CHECK_FAILED;
    } else if (!logs) {
        fprintf(stderr, "stagepart: error: out of memory listing %s\n", dir);
        code = SP_EXIT_INTERNAL;
    } else if (n == 0) {
        fprintf(stderr,
                "stagepart: error: '%s' wrote no event log: it made no NVTX or CUDA call that "
                "loaded the collector (is it a CUDA program, and does it keep the environment "
                "for its children?)\n",
                cmd[0]);
        code = SP_EXIT_UNAVAILABLE;
    } else {
        sp_ctx *ctx = NULL;
        if (sp_ctx_create(&ctx) != SP_OK) {
            code = SP_EXIT_INTERNAL;
        } else {
            sp_trace *trace = NULL;
            sp_status st = sp_trace_load_events(ctx, (const char *const *)logs, n, &trace);
            if (st != SP_OK) {
                code = sp_report(ctx, st, false);
            } else {
                sp_print_warnings(ctx);
                code = sp_attribution_finish(ctx, trace, &opts, output, true);
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

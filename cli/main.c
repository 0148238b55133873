/* cli/main.c: `stagepart`: global options, the command table, help and version.
 * Each command lives in cmd_<name>.c and uses only <stagepart/stagepart.h>. */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

static int cmd_help(int argc, char **argv);
static int cmd_version(int argc, char **argv);

/* Two executables are made from this file (docs/architecture.md). `stagepart` runs the commands
 * that read and write documents: it links no BLAS, MPI, CUDA or NCCL, so they start without
 * them (and without OpenBLAS's thread pool, which could hang start-up under a memory limit).
 * `stagepart-compute` (SP_COMPUTE_HELPER) runs the commands that compute: built-in models,
 * the runtime, the link probes, the collector; `stagepart` hands them over by exec. */
#if defined(SP_COMPUTE_HELPER)
#define COMPUTE(fn) fn
#else
#define COMPUTE(fn) run_in_compute
static int run_in_compute(int argc, char **argv);
#endif

static const struct cli_command_help help_help = {
    "help",
    "[COMMAND [KIND]]",
    "Show the list of commands, or one command's options.",
    NULL,
    "  stagepart help partition\n  stagepart help import kineto\n",
    0};
static const struct cli_command_help version_help = {
    "version", "",   "Show the version, the compiled-in features and the CUDA devices seen.",
    NULL,      NULL, CLI_EXITS_UNAVAILABLE};
static const struct cli_opt no_opts[] = {{0, NULL, 0, NULL, NULL, NULL}};
static const struct cli_command_help import_plan_help = {
    "import-plan",
    "PROFILE (--megatron-layout S | --balance N,N,... | --parts 0,A,...,N) -o PLAN [options]",
    "Write the split you run today as a plan file, for stagepart check (also: import plan).",
    "The same as evaluate (see stagepart help evaluate), and -o is required. 'stagepart import\n"
    "plan ...' is the same command, as import's other kinds are spelled.",
    "  stagepart import-plan model.json --megatron-layout \"Et*8|t*8|t*8|t*8L\" -o plan.json\n",
    CLI_EXITS_INFEASIBLE | CLI_EXITS_UNAVAILABLE};

/* in the order of the work: measure, plan, predict, run, gate, hand over, compare */
static const char *const import_kinds[] = {"kineto", "nsys", "events", "plan", NULL};
const struct cli_command cli_commands[] = {
    {"profile", COMPUTE(cmd_profile), &cmd_profile_help, cmd_profile_opts, NULL},
    {"bandwidth", COMPUTE(cmd_bandwidth), &cmd_bandwidth_help, cmd_bandwidth_opts, NULL},
    {"import", cmd_import, &cmd_import_help, cmd_import_opts, import_kinds},
    {"partition", cmd_partition, &cmd_partition_help, cmd_partition_opts, NULL},
    {"simulate", cmd_simulate, &cmd_simulate_help, cmd_simulate_opts, NULL},
    {"run", COMPUTE(cmd_run), &cmd_run_help, cmd_run_opts, NULL},
    {"check", cmd_check, &cmd_check_help, cmd_check_opts, NULL},
    {"export", cmd_export, &cmd_export_help, cmd_export_opts, NULL},
    {"evaluate", cmd_evaluate, &cmd_evaluate_help, cmd_evaluate_opts, NULL},
    {"import-plan", cmd_import_plan, &import_plan_help, cmd_evaluate_opts, NULL},
    {"help", cmd_help, &help_help, no_opts, NULL},
    {"version", cmd_version, &version_help, no_opts, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static const struct cli_command *find_command(const char *name) {
    for (const struct cli_command *c = cli_commands; c->name; c++)
        if (strcmp(c->name, name) == 0)
            return c;
    return NULL;
}

/* "no command named 'x'", and the command it most likely misspells */
static int no_command(const char *name) {
    const char *names[32];
    size_t n = 0;
    for (const struct cli_command *c = cli_commands; c->name && n < 32; c++)
        names[n++] = c->name;
    const char *near = cli_closest(name, strlen(name), names, n);
    if (near)
        return cli_usage_error(NULL, "no command named '%s' (did you mean '%s'?)", name, near);
    return cli_usage_error(NULL, "no command named '%s'", name);
}

static void print_main_help(FILE *f) {
    fputs("usage: stagepart [--version] [--help] <command> [<args>]\n\n"
          "Balanced pipeline-parallel training: cut a model's layer chain into pipeline stages\n"
          "with exact algorithms and explain what the plan gains over an even split.\n\n"
          "Commands:\n",
          f);
    int width = 0;
    for (const struct cli_command *c = cli_commands; c->name; c++)
        width = (int)strlen(c->name) > width ? (int)strlen(c->name) : width;
    for (const struct cli_command *c = cli_commands; c->name; c++)
        fprintf(f, "  %-*s  %s\n", width, c->name, c->help->summary);
    fputs("\nRun 'stagepart help <command>' or 'stagepart <command> --help' for its options.\n"
          "Documentation: README.md and docs/ (formats, models, runtime, partitioning, "
          "benchmarks).\n\n"
          "Exit codes:\n"
          "  0  ok\n"
          "  1  a check failed\n"
          "  2  usage error or invalid input (the file, JSON path and expectation are named), or\n"
          "     memory the budget or the limits do not leave (named)\n"
          "  3  infeasible: no plan satisfies the constraints (the reason is named)\n"
          "  4  feature or device unavailable (not compiled in, no GPU)\n"
          "  5  internal error\n"
          "  130  interrupted (Ctrl-C) during profile MODEL or run: nothing written\n\n"
          "Environment:\n"
          "  STAGEPART_MEMORY_BUDGET  the most memory a command may hold (e.g. 8GiB; 'none'); by\n"
          "      default 80% of what the machine, its cgroup and ulimits leave: an input too\n"
          "      large for it exits 2 naming the budget (docs/security.md)\n"
          "  STAGEPART_THREADS  the most threads one step starts of its own accord (reading a\n"
          "      large file, a profile's layers in pieces); default: one per CPU this process\n"
          "      may use; 1 starts none\n\n"
          "Outputs (-o, --svg, --trace, --junit ...): '-' is standard output (the command then\n"
          "  prints no table); a device or FIFO is written in place; a symbolic link is followed\n"
          "  and its target replaced; a regular file is replaced atomically (docs/security.md)\n",
          f);
}

static int cmd_help(int argc, char **argv) {
    if (argc < 2) {
        print_main_help(stdout);
        return CLI_EXIT_OK;
    }
    const struct cli_command *c = find_command(argv[1]);
    if (!c)
        return no_command(argv[1]);
    /* help COMMAND KIND: a command of kinds (import kineto) has one help for all of them */
    bool kind = argc == 3 && c->kinds;
    for (const char *const *k = c->kinds; kind && *k && strcmp(*k, argv[2]) != 0; k++)
        kind = k[1] != NULL;
    if (argc == 3 && !kind)
        return cli_usage_error("help", "'%s' has no kind named '%s'%s", argv[1], argv[2],
                               c->kinds ? "" : ": it takes no kind");
    if (argc > 3)
        return cli_usage_error("help", "expected COMMAND [KIND], got %d arguments", argc - 1);
    char joined[64]; /* a kind that is a command of its own (import plan: import-plan) */
    snprintf(joined, sizeof joined, "%s-%s", argv[1], kind ? argv[2] : "");
    const struct cli_command *own = kind ? find_command(joined) : NULL;
    if (own)
        c = own;
    cli_print_command_help(stdout, c->help, c->opts);
    return CLI_EXIT_OK;
}

static int cmd_version(int argc, char **argv) {
    struct cli_opt_parser p;
    cli_opt_parser_init(&p, "version", no_opts, argc, argv);
    for (int id; (id = cli_opt_next(&p)) != CLI_OPT_DONE;) {
        if (id == CLI_OPT_ERROR)
            return CLI_EXIT_USAGE;
        if (id == CLI_OPT_HELP) {
            cli_print_command_help(stdout, &version_help, no_opts);
            return CLI_EXIT_OK;
        }
    }
    if (p.n_positional)
        return cli_usage_error("version", "unexpected argument '%s'", p.positional[0]);
    const char *features = sp_features();
#if !defined(SP_COMPUTE_HELPER)
    if (strstr(features, "cuda")) {       /* the devices are counted where CUDA is linked */
        char *args[] = {"version", NULL}; /* also for `stagepart --version`, argv the whole */
        return run_in_compute(1, args);
    }
#endif
    printf("stagepart %s (git %s)\nfeatures: %s\n", sp_version(), sp_git_hash(),
           *features ? features : "(none: CPU-only build)");
#if defined(SP_COMPUTE_HELPER)
    sp_ctx *ctx = NULL;
    if (sp_ctx_create(&ctx) == SP_OK) {
        int devices = 0;
        sp_status st = sp_cuda_device_count(ctx, &devices);
        if (st == SP_OK)
            printf("cuda devices: %d\n", devices);
        else if (st != SP_ERR_UNSUPPORTED)
            printf("cuda devices: none (%s)\n", sp_ctx_get_errmsg(ctx));
        sp_ctx_destroy(ctx);
    }
#endif
    return CLI_EXIT_OK;
}

/* Flush stdout and fail on write errors (a full disk must not look like success). */
static int finish_stdout(int code) {
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "stagepart: error: cannot write to standard output: %s\n", strerror(errno));
        return code ? code : CLI_EXIT_INTERNAL;
    }
    return code;
}

/* The budget every command runs under (docs/security.md): STAGEPART_MEMORY_BUDGET (a byte
 * count, or 0 / "none"), else 80 % of what this process may still take (what is counted is the
 * blocks' usable sizes; the allocator's own overhead and fragmentation come on top), so that an
 * input too large for the machine is refused with exit 2 instead of being killed by the kernel. */
static int set_memory_budget(void) {
    const char *env = getenv("STAGEPART_MEMORY_BUDGET");
    if (env && *env) {
        uint64_t bytes = 0;
        sp_ctx *ctx = NULL;
        if (sp_ctx_create(&ctx) != SP_OK)
            return CLI_EXIT_INTERNAL;
        sp_status st = strcmp(env, "none") == 0 ? SP_OK : sp_parse_bytes(ctx, env, &bytes);
        if (st != SP_OK)
            fprintf(stderr, "stagepart: error: STAGEPART_MEMORY_BUDGET: %s\n",
                    sp_ctx_get_errmsg(ctx));
        sp_ctx_destroy(ctx);
        if (st != SP_OK)
            return CLI_EXIT_USAGE;
        sp_set_memory_budget((size_t)bytes);
        return CLI_EXIT_OK;
    }
    sp_set_memory_budget(sp_memory_limit() / 5 * 4);
    return CLI_EXIT_OK;
}

/* STAGEPART_THREADS: the most threads one library call starts of its own accord (reading a large
 * file, the profile's pieces; sp_set_thread_limit); unset or 0: one per CPU this process may
 * use */
static int set_thread_limit(void) {
    const char *env = getenv("STAGEPART_THREADS");
    if (!env || !*env)
        return CLI_EXIT_OK;
    char *end = NULL;
    errno = 0;
    unsigned long n = strtoul(env, &end, 10);
    if (errno || *end || end == env || n > 1024) {
        fprintf(stderr,
                "stagepart: error: STAGEPART_THREADS: expected a thread count from 0 to "
                "1024, got '%s'\n",
                env);
        return CLI_EXIT_USAGE;
    }
    sp_set_thread_limit((unsigned)n);
    return CLI_EXIT_OK;
}

#if defined(SP_COMPUTE_HELPER)
/* OpenBLAS, loaded now while this is the only thread, with its thread pool off: it starts the
 * pool as it loads, stagepart computes on one BLAS thread per stage so the pool is never used,
 * and under a data limit (ulimit -d) the pool's threads retried for their buffers for ever
 * while the command waited for them. OPENBLAS_NUM_THREADS=1 is set only while it loads, unless
 * the user set it, so the programs `profile --attach` runs see the user's environment. A load
 * that fails is reported by the command that needs BLAS. */
static void load_blas(void) {
    bool set = !getenv("OPENBLAS_NUM_THREADS") && setenv("OPENBLAS_NUM_THREADS", "1", 1) == 0;
    sp_ctx *ctx = NULL;
    if (sp_ctx_create(&ctx) == SP_OK)
        (void)sp_models_load_blas(ctx);
    sp_ctx_destroy(ctx);
    if (set)
        unsetenv("OPENBLAS_NUM_THREADS");
}
#else
enum { EXE_PATH_MAX = 4096 };

/* path := the stagepart-compute beside this executable, else the one this build made */
static bool find_compute(char *path, size_t cap) {
    ssize_t n = readlink("/proc/self/exe", path, cap - 1);
    if (n > 0) {
        path[n] = '\0';
        char *slash = strrchr(path, '/');
        if (slash && (size_t)(slash - path) + sizeof "/stagepart-compute" <= cap) {
            memcpy(slash, "/stagepart-compute", sizeof "/stagepart-compute");
            if (access(path, X_OK) == 0)
                return true;
        }
    }
#if defined(SP_COMPUTE_BUILD_PATH)
    if (access(SP_COMPUTE_BUILD_PATH, X_OK) == 0) {
        snprintf(path, cap, "%s", SP_COMPUTE_BUILD_PATH);
        return true;
    }
#endif
    return false;
}

/* A command that computes, run by stagepart-compute in this process's place (exec: the same
 * pid, so signals, MPI launchers and exit codes see one program). */
static int run_in_compute(int argc, char **argv) {
    char path[EXE_PATH_MAX];
    if (!find_compute(path, sizeof path)) {
        fprintf(stderr,
                "stagepart: error: '%s' runs in stagepart-compute (the built-in models, the "
                "runtime and the link probes, with OpenBLAS and MPI), which is not installed "
                "beside this stagepart\n",
                argv[0]);
        return CLI_EXIT_UNAVAILABLE;
    }
    char **args = calloc((size_t)argc + 2, sizeof *args);
    if (!args)
        return CLI_EXIT_INTERNAL;
    args[0] = path;
    for (int i = 0; i < argc; i++)
        args[i + 1] = argv[i];
    fflush(stdout);
    execv(path, args);
    fprintf(stderr, "stagepart: error: cannot run %s: %s\n", path, strerror(errno));
    free(args);
    return CLI_EXIT_UNAVAILABLE;
}
#endif

int main(int argc, char **argv) {
#if defined(SP_COMPUTE_HELPER) && defined(__GLIBC__) && defined(M_ARENA_MAX)
    /* One malloc arena: glibc gives each new thread an arena of its own, reserving 64 MiB of
     * address space for it, which the memory budget cannot see; under ulimit -v that reserve
     * took the room OpenBLAS's buffer was counted on, and OpenBLAS then retried its mapping for
     * ever. The threads here allocate their stages' memory before they compute. */
    mallopt(M_ARENA_MAX, 1);
#endif
#if defined(SP_COMPUTE_HELPER)
    load_blas();
#endif
#if defined(__GLIBC__) && defined(M_MXFAST)
    /* A profile's JSON tree is millions of small blocks freed together. In glibc's fastbins
     * they would be coalesced later, all at once, inside the next large allocation (90 ms for
     * a 100,000-layer profile, measured); freeing them straight away is cheaper overall. */
    mallopt(M_MXFAST, 0);
#endif
#if defined(__GLIBC__) && defined(M_MMAP_THRESHOLD)
    /* Blocks up to 16 MiB from the heap, which is never given back before exit: a command's
     * large blocks come and go in phases (the layers, the plan, its text), and each phase then
     * reuses the pages the last one touched instead of faulting in fresh ones (a 100,000-layer
     * partition: 8 ms less planning, 5 ms less writing, measured). Larger blocks (the file's
     * text) stay mmap'd: from the heap, reading a 22 MB profile took 12 ms longer. */
    mallopt(M_MMAP_THRESHOLD, 16 << 20);
    mallopt(M_TRIM_THRESHOLD, INT_MAX);
#endif
    int code = set_memory_budget();
    if (code == CLI_EXIT_OK)
        code = set_thread_limit();
    if (code != CLI_EXIT_OK)
        return code;
    if (argc < 2) {
        print_main_help(stderr);
        return CLI_EXIT_USAGE;
    }
    const char *name = argv[1];
    if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0)
        return finish_stdout(cmd_help(1, argv));
    if (strcmp(name, "--version") == 0 || strcmp(name, "-V") == 0)
        return finish_stdout(cmd_version(1, argv));
    const struct cli_command *c = find_command(name);
    if (!c) {
        if (name[0] == '-')
            return cli_usage_error(NULL, "unknown option '%s'", name);
        return no_command(name);
    }
    return finish_stdout(c->run(argc - 1, argv + 1));
}

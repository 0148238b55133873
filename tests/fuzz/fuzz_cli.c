/* fuzz_cli: the command line itself. The input is split into arguments (at newlines and NUL
 * bytes); the first picks a command, the rest are its options and values as the user would type
 * them, so every option parser and value check meets arbitrary text. "@0".."@6" stand for the
 * sample files (absolute paths: the fuzzer's own paths are relative to where it runs, so the
 * target never changes directory): a profile, a plan, devices, links, a run report, a model and a
 * 2-stage plan of it.
 * Every output option writes into a private temporary folder. What must hold: the command
 * returns an exit code of the documented set, with no crash, sanitizer report or leak.
 *
 * Kept short on purpose, so that one execution stays well under libFuzzer's timeout: the
 * commands that measure or train get their sizes appended last (the last value of an option
 * wins): profile MODEL runs one iteration at 1 x 8, run one step of 2 micro-batches, bandwidth
 * two small sizes once. "profile-attach" is `profile` with "--attach -- <a program that does not
 * exist>" appended, so its options and values are parsed and checked but nothing runs (exit 4
 * without the collector, 2 when the program cannot start); --events-dir goes to the temporary
 * folder. The library's memory budget is 768 MiB, as the command sets one from the machine's, and
 * a micro-batch count or global batch above 2048 is read as 2048 (sizes that only take long).
 * Left out: --solver ilp (its time limit is 30 s), a program of the fuzzer's choosing,
 * and run --transport mpi (it would start MPI in the fuzzer). */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../cli/cli.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { MAX_ARGS = 32, MAX_TAIL = 12, MAX_ARG = 256 };

static const struct {
    const char *name;
    int (*run)(int, char **);
    const char *const tail[MAX_TAIL]; /* appended last: sizes that keep one execution short */
} commands[] = {
    {"partition", cmd_partition, {NULL}},
    {"simulate", cmd_simulate, {NULL}},
    {"evaluate", cmd_evaluate, {NULL}},
    {"import-plan", cmd_import_plan, {NULL}},
    {"check", cmd_check, {NULL}},
    {"export", cmd_export, {NULL}},
    {"profile",
     cmd_profile,
     {"--iters", "1", "--warmup", "0", "--micro-batch-size", "1", "--seq-len", "8", "-q", NULL}},
    {"run",
     cmd_run,
     {"--steps", "1", "--warmup-steps", "0", "-m", "2", "--micro-batch-size", "1", "--seq-len", "8",
      "--timeout", "5"}},
    {"bandwidth",
     cmd_bandwidth,
     {"--sizes", "64KiB,4MiB", "--trials", "1", "--warmup", "0", "--workers", "2", NULL}},
    {"profile-attach",
     cmd_profile,
     {"--attach", "--", "/nonexistent/stagepart-fuzz-program", NULL}},
};

static const char *const files[] = {
    "samples/profiles/llama3-8b.json",   "tests/data/llama3-8b-4-plan.json",
    "samples/devices/two-speeds-8.json", "samples/links/two-nodes-8.json",
    "tests/data/run-report.json",        "tests/data/tiny-gpt-model.json",
    "tests/data/tiny-gpt-2-plan.json",
};

static const char *const outputs[] = {"--output", "--trace", "--svg", "--junit", "--events-dir"};

static char dir[256]; /* this process's temporary folder */

static void cleanup(void) {
    char out[300];
    snprintf(out, sizeof out, "%s/out", dir);
    unlink(out);
    rmdir(out); /* --events-dir made it a folder */
    rmdir(dir);
}

static void setup(void) {
    if (dir[0])
        return;
    snprintf(dir, sizeof dir, "%s/stagepart-fuzz-cli-XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(dir))
        abort();
    atexit(cleanup);
    if (!freopen("/dev/null", "w", stdout)) /* plans and tables: not what is checked */
        abort();
    /* the stagepart command sets a memory budget (cli/main.c); the commands called here get one
     * under libFuzzer's -rss_limit_mb=2048, so a size that asks for more (simulate -m 5000000
     * with a timeline) is refused with its exit code instead of ending the fuzzer */
    sp_set_memory_budget((size_t)768 << 20);
}

/* Sizes that set how much a command simulates: a value above SIZE_CAP is read as SIZE_CAP.
 * The simulator is linear in the micro-batches, so millions of them only make one execution
 * outlast libFuzzer's 10 s (simulate -m 398174 --trace under ASan did); every digit string
 * still reaches the option parser up to that size. */
#define SIZE_CAP 2048ull
static const char *const sized[] = {"-m", "--micro-batches", "--global-batch"};
static bool prev_sized; /* the argument before named one of them */

static void cap_size(char *value) {
    if (!value[0] || strspn(value, "0123456789") != strlen(value))
        return;
    unsigned long long v = strtoull(value, NULL, 10);
    if (strlen(value) > 12 || v > SIZE_CAP)
        snprintf(value, 8, "%llu", SIZE_CAP);
}

/* an argument as typed, made safe: outputs go to the temporary folder */
static bool take(char **argv, int *argc, const char *arg, bool *next_is_output) {
    char buf[MAX_ARG + 300];
    bool sized_value = prev_sized;
    prev_sized = false;
    for (size_t k = 0; k < sizeof sized / sizeof *sized; k++) {
        size_t n = strlen(sized[k]);
        if (strcmp(arg, sized[k]) == 0)
            prev_sized = true;
        else if (strncmp(arg, sized[k], n) == 0 && arg[n] == '=' && strlen(arg) < MAX_ARG) {
            snprintf(buf, sizeof buf, "%s", arg);
            cap_size(buf + n + 1);
            argv[*argc] = strdup(buf);
            return argv[(*argc)++] != NULL;
        }
    }
    if (sized_value && strlen(arg) < MAX_ARG) {
        snprintf(buf, sizeof buf, "%s", arg);
        cap_size(buf);
        argv[*argc] = strdup(buf);
        return argv[(*argc)++] != NULL;
    }
    if (*next_is_output) {
        snprintf(buf, sizeof buf, "%s/out", dir);
        *next_is_output = false;
    } else if (arg[0] == '@' && arg[1] >= '0' &&
               arg[1] < '0' + (int)(sizeof files / sizeof *files) && !arg[2]) {
        snprintf(buf, sizeof buf, "%s/%s", SP_SOURCE_DIR, files[arg[1] - '0']);
    } else {
        if (strstr(arg, "ilp") || strstr(arg, "attach") || strstr(arg, "mpi") ||
            strcmp(arg, "--") == 0 ||
            (arg[0] == '-' && arg[1] != '-' && arg[1] && arg[2] &&
             !(arg[1] >= '0' && arg[1] <= '9')))
            return false; /* the ILP (slow), a program to run, MPI, or bundled short options
                           * that may hide -o */
        snprintf(buf, sizeof buf, "%s", arg);
        for (size_t k = 0; k < sizeof outputs / sizeof *outputs; k++) {
            size_t n = strlen(outputs[k]);
            if (strncmp(arg, outputs[k], n) == 0 && arg[n] == '=')
                snprintf(buf, sizeof buf, "%s=%s/out", outputs[k], dir);
            else if (strcmp(arg, outputs[k]) == 0)
                *next_is_output = true;
        }
        if (strcmp(arg, "-o") == 0)
            *next_is_output = true;
    }
    argv[*argc] = strdup(buf);
    return argv[(*argc)++] != NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    setup();
    prev_sized = false;
    char *argv[MAX_ARGS + MAX_TAIL + 1] = {NULL};
    int argc = 0;
    bool next_is_output = false, ok = true;
    char arg[MAX_ARG + 1];
    size_t len = 0;
    for (size_t i = 0; i <= size && argc < MAX_ARGS && ok; i++) {
        if (i == size || data[i] == '\n' || data[i] == '\0') {
            arg[len] = '\0';
            if (argc == 0) { /* the command */
                bool known = false;
                for (size_t k = 0; k < sizeof commands / sizeof *commands; k++)
                    known |= strcmp(arg, commands[k].name) == 0;
                if (!known)
                    return 0;
                argv[argc++] = strdup(arg);
            } else if (len) {
                ok = take(argv, &argc, arg, &next_is_output);
            }
            len = 0;
        } else if (len < MAX_ARG) {
            arg[len++] = (char)data[i];
        }
    }
    int code = 0;
    if (ok && argc > 0 && !next_is_output)
        for (size_t k = 0; k < sizeof commands / sizeof *commands; k++)
            if (strcmp(argv[0], commands[k].name) == 0) {
                for (size_t j = 0; j < MAX_TAIL && commands[k].tail[j]; j++)
                    if (!(argv[argc++] = strdup(commands[k].tail[j])))
                        ok = false;
                if (ok)
                    code = commands[k].run(argc, argv);
            }
    for (int k = 0; k < argc; k++)
        free(argv[k]);
    if (!(code >= 0 && code <= 5))
        __builtin_trap(); /* an exit code outside the documented set */
    return 0;
}

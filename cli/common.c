/* cli/common.c: error reporting, warnings, exit codes and the recorded command line. */
#include <cjson/cJSON.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"

const char *cli_noun(uint64_t n, const char *one, const char *many) {
    return n == 1 ? one : many;
}

const char *cli_fit(char *buf, size_t size, const char *text, size_t width) {
    size_t len = strlen(text);
    if (width + 1 > size)
        width = size - 1;
    if (len <= width) {
        memcpy(buf, text, len + 1);
        return buf;
    }
    size_t keep = width > 3 ? width - 3 : 0;
    while (keep > 0 && ((unsigned char)text[keep] & 0xC0) == 0x80)
        keep--; /* not inside a UTF-8 character */
    memcpy(buf, text, keep);
    memcpy(buf + keep, "...", 4);
    return buf;
}

void cli_bar(char *buf, size_t width, double share) {
    size_t full = share > 0 ? (size_t)lround(share * (double)width) : 0;
    for (size_t i = 0; i < width; i++)
        buf[i] = i < full ? '#' : '.';
    buf[width] = '\0';
}

double cli_shown(double v, int decimals) {
    return fabs(v) < 0.5 * pow(10.0, -decimals) ? 0.0 : v;
}

int cli_exit_code(sp_status status) {
    switch (status) {
    case SP_OK:
        return CLI_EXIT_OK;
    case SP_ERR_PROGRAM: /* the program profiled with --attach failed */
        return CLI_EXIT_CHECK_FAILED;
    case SP_ERR_INVALID_ARG:
    case SP_ERR_IO:
    case SP_ERR_PARSE:
    case SP_ERR_SCHEMA:
    case SP_ERR_LIMIT:
    case SP_ERR_NOMEM: /* memory the limits do not leave: named, as a limit is */
        return CLI_EXIT_USAGE;
    case SP_ERR_INFEASIBLE:
        return CLI_EXIT_INFEASIBLE;
    case SP_ERR_NO_DEVICE:
    case SP_ERR_CUDA:
    case SP_ERR_CUPTI:
    case SP_ERR_UNSUPPORTED:
        return CLI_EXIT_UNAVAILABLE;
    default:
        return CLI_EXIT_INTERNAL;
    }
}

int cli_report(sp_ctx *ctx, sp_status status, bool json) {
    const char *msg = sp_ctx_get_errmsg(ctx);
    if (!msg || !*msg)
        msg = sp_strerror(status);
    const char *line = msg;
    while (line && *line) {
        const char *nl = strchr(line, '\n');
        int len = nl ? (int)(nl - line) : (int)strlen(line);
        fprintf(stderr, "stagepart: error: %.*s\n", len, line);
        line = nl ? nl + 1 : NULL;
    }
    if (json) {
        cJSON *root = cJSON_CreateObject();
        cJSON *err = root ? cJSON_AddObjectToObject(root, "error") : NULL;
        if (err && cJSON_AddStringToObject(err, "code", sp_status_name(status)) &&
            cJSON_AddStringToObject(err, "message", msg) &&
            cJSON_AddNumberToObject(err, "exit_code", cli_exit_code(status))) {
            char *text = cJSON_Print(root);
            if (text) {
                printf("%s\n", text);
                cJSON_free(text);
            }
        }
        cJSON_Delete(root);
    }
    return cli_exit_code(status);
}

void cli_print_warnings(const sp_ctx *ctx) {
    const char *line = sp_ctx_get_warnings(ctx);
    while (line && *line) {
        const char *nl = strchr(line, '\n');
        int len = nl ? (int)(nl - line) : (int)strlen(line);
        fprintf(stderr, "stagepart: warning: %.*s\n", len, line);
        line = nl ? nl + 1 : NULL;
    }
}

static bool needs_quotes(const char *s) {
    if (!*s)
        return true;
    for (; *s; s++)
        if (!(strchr("@%_-+=:,./", *s) || (*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'z') ||
              (*s >= 'A' && *s <= 'Z')))
            return true;
    return false;
}

char *cli_command_line(int argc, char **argv) {
    size_t cap = sizeof "stagepart ";
    for (int i = 0; i < argc; i++)
        cap += 4 * strlen(argv[i]) + 3;
    char *out = malloc(cap), *w = out;
    if (!out)
        return NULL;
    memcpy(w, "stagepart", 9);
    w += 9;
    for (int i = 0; i < argc; i++) {
        *w++ = ' ';
        const char *a = argv[i];
        if (!needs_quotes(a)) {
            size_t n = strlen(a);
            memcpy(w, a, n);
            w += n;
            continue;
        }
        *w++ = '\'';
        for (const char *c = a; *c; c++) {
            if (*c == '\'') {
                memcpy(w, "'\\''", 4);
                w += 4;
            } else {
                *w++ = *c;
            }
        }
        *w++ = '\'';
    }
    *w = '\0';
    return out;
}

int cli_check_output_not_input(const char *command, const char *option, const char *output,
                               const char *const *inputs, size_t input_count) {
    struct stat out_st, in_st;
    /* stat: an output that is a symbolic link is written where it points (sp_write_file_atomic),
     * so what it points to must not be an input; a device or FIFO is written in place, and
     * reading one as an input was done before, so only a regular file can clash */
    if (!output || strcmp(output, "-") == 0 || stat(output, &out_st) != 0 ||
        !S_ISREG(out_st.st_mode))
        return 0; /* a file that does not exist yet is nobody's input */
    for (size_t i = 0; i < input_count; i++)
        if (inputs[i] && stat(inputs[i], &in_st) == 0 && in_st.st_dev == out_st.st_dev &&
            in_st.st_ino == out_st.st_ino)
            return cli_usage_error(command,
                                   "%s %s is the input %s; stagepart does not overwrite its "
                                   "inputs (choose another output file)",
                                   option, output, inputs[i]);
    return 0;
}

void cli_print_memory_limit(const sp_plan_summary *m, const char *each) {
    char lim[16];
    sp_format_bytes(m->memory_limit_bytes, lim, sizeof lim);
    if (m->memory_saved_unknown)
        printf("memory      every %s's resident memory (parameters, memory_bytes) within the limit "
               "of %s; activations NOT checked: the profile records no saved_bytes\n",
               each, lim);
    else
        printf("memory      every %s within the limit of %s\n", each, lim);
}

bool cli_is_stdout(const char *path) {
    return path && strcmp(path, "-") == 0;
}

int cli_one_stdout(const char *command, const char *const *outputs, size_t n, bool json_too) {
    size_t count = json_too ? 1 : 0;
    for (size_t i = 0; i < n; i++)
        count += cli_is_stdout(outputs[i]);
    if (count > 1)
        return cli_usage_error(command, "only one output can go to standard output ('-')%s",
                               json_too ? "; --json prints there already" : "");
    return 0;
}

volatile int cli_interrupted;

struct cli_signals {
    struct sigaction old_int, old_term;
};

static void on_interrupt(int sig) {
    (void)sig;
    __atomic_store_n(&cli_interrupted, 1, __ATOMIC_RELAXED); /* read by the stages' threads */
}

struct cli_signals *cli_catch_interrupts(void) {
    struct cli_signals *saved = malloc(sizeof *saved);
    if (!saved)
        return NULL;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_interrupt;
    sigaction(SIGINT, &sa, &saved->old_int);
    sigaction(SIGTERM, &sa, &saved->old_term);
    return saved;
}

void cli_restore_signals(struct cli_signals *saved) {
    if (!saved)
        return;
    sigaction(SIGINT, &saved->old_int, NULL);
    sigaction(SIGTERM, &saved->old_term, NULL);
    free(saved);
}

int cli_print_json_tree(cJSON *root, bool ok) {
    char *text = ok && root ? cJSON_Print(root) : NULL;
    cJSON_Delete(root);
    if (!text) {
        fputs("stagepart: error: out of memory\n", stderr);
        return CLI_EXIT_INTERNAL;
    }
    printf("%s\n", text);
    cJSON_free(text);
    return CLI_EXIT_OK;
}

uint64_t cli_peak_device_bytes(const sp_plan *plan) {
    const sp_plan_summary *m = sp_plan_get_summary(plan);
    uint64_t peak = 0;
    for (uint32_t d = 0; d < m->stages; d++) {
        uint64_t sum = 0;
        for (size_t k = 0; k < sp_plan_get_stage_count(plan); k++)
            if (sp_chunk_device(m->chunk_layout, m->stages, (uint32_t)k) == d)
                sum += sp_plan_get_stage(plan, k)->memory_bytes;
        peak = sum > peak ? sum : peak;
    }
    return peak;
}

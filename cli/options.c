/* cli/options.c: option parsing and help text from the declarative tables of options.h.
 *
 * Long options take their value as --name=value or --name value; short ones as -s value or
 * -svalue. Options and positional arguments may be mixed, as with getopt_long's permutation;
 * "--" ends the options. Errors name the option and end with a hint to the command's --help. */
#include "options.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

void cli_opt_parser_init(struct cli_opt_parser *p, const char *command, const struct cli_opt *opts,
                         int argc, char **argv) {
    memset(p, 0, sizeof *p);
    p->command = command;
    p->opts = opts;
    p->argc = argc;
    p->argv = argv;
    p->index = 1;
}

int cli_usage_error(const char *command, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("stagepart: error: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    if (command)
        fprintf(stderr, "hint: try 'stagepart %s --help'\n", command);
    else
        fputs("hint: try 'stagepart help'\n", stderr);
    return 2;
}

/* an unknown long option, and the command's option it most likely misspells */
static void unknown_option(const struct cli_opt_parser *p, const char *name, size_t len) {
    const char *names[128];
    size_t n = 0;
    for (const struct cli_opt *o = p->opts; o && o->id && n < 127; o++)
        names[n++] = o->long_name;
    names[n++] = "help";
    const char *near = cli_closest(name, len, names, n);
    if (near)
        cli_usage_error(p->command, "unknown option '--%.*s' (did you mean --%s?)", (int)len, name,
                        near);
    else
        cli_usage_error(p->command, "unknown option '--%.*s'", (int)len, name);
}

static int take_value(struct cli_opt_parser *p, const struct cli_opt *o, const char *inline_value,
                      const char *spelled) {
    p->current = o;
    p->value = NULL;
    if (!o->arg) {
        if (inline_value) {
            cli_usage_error(p->command, "option '%s' takes no value", spelled);
            return CLI_OPT_ERROR;
        }
        return o->id;
    }
    if (inline_value) {
        p->value = inline_value;
    } else if (p->index < p->argc) {
        p->value = p->argv[p->index++];
    } else {
        cli_usage_error(p->command, "option '%s' needs a value %s", spelled, o->arg);
        return CLI_OPT_ERROR;
    }
    return o->id;
}

int cli_opt_next(struct cli_opt_parser *p) {
    while (p->index < p->argc) {
        char *arg = p->argv[p->index++];
        if (strcmp(arg, "--") == 0) {
            while (p->index < p->argc) {
                if (p->n_positional >= (int)(sizeof p->positional / sizeof *p->positional)) {
                    cli_usage_error(p->command, "too many arguments");
                    return CLI_OPT_ERROR;
                }
                p->positional[p->n_positional++] = p->argv[p->index++];
            }
            break;
        }
        if (arg[0] != '-' || arg[1] == '\0') {
            if (p->n_positional >= (int)(sizeof p->positional / sizeof *p->positional)) {
                cli_usage_error(p->command, "too many arguments");
                return CLI_OPT_ERROR;
            }
            p->positional[p->n_positional++] = arg;
            continue;
        }
        if (arg[1] == '-') {
            const char *name = arg + 2, *eq = strchr(name, '=');
            size_t len = eq ? (size_t)(eq - name) : strlen(name);
            if (len == 4 && strncmp(name, "help", 4) == 0)
                return CLI_OPT_HELP;
            for (const struct cli_opt *o = p->opts; o && o->id; o++)
                if (strlen(o->long_name) == len && strncmp(o->long_name, name, len) == 0)
                    return take_value(p, o, eq ? eq + 1 : NULL, arg);
            unknown_option(p, name, len);
            return CLI_OPT_ERROR;
        }
        char c = arg[1];
        if (c == 'h' && arg[2] == '\0')
            return CLI_OPT_HELP;
        for (const struct cli_opt *o = p->opts; o && o->id; o++) {
            if (o->short_name && o->short_name == c) {
                char spelled[3] = {'-', c, '\0'};
                const char *inline_value = arg[2] ? arg + 2 : NULL;
                return take_value(p, o, inline_value, spelled);
            }
        }
        cli_usage_error(p->command, "unknown option '-%c'", c);
        return CLI_OPT_ERROR;
    }
    return CLI_OPT_DONE;
}

bool cli_opt_uint(const struct cli_opt_parser *p, uint64_t min, uint64_t max, uint64_t *out) {
    const char *v = p->value;
    char *end = NULL;
    errno = 0;
    unsigned long long x = (v && *v >= '0' && *v <= '9') ? strtoull(v, &end, 10) : 0;
    if (!v || !end || *end || errno == ERANGE || x < min || x > max) {
        cli_usage_error(p->command, "--%s expects an integer in [%llu, %llu], got '%s'",
                        p->current->long_name, (unsigned long long)min, (unsigned long long)max,
                        v ? v : "");
        return false;
    }
    *out = x;
    return true;
}

void cli_print_command_help(FILE *f, const struct cli_command_help *h, const struct cli_opt *opts) {
    fprintf(f, "usage: stagepart %s %s\n\n%s\n", h->name, h->synopsis, h->summary);
    if (h->description)
        fprintf(f, "\n%s\n", h->description);
    const char *groups[16];
    int n_groups = 0;
    for (const struct cli_opt *o = opts; o && o->id; o++) {
        bool seen = false;
        for (int g = 0; g < n_groups; g++)
            seen |= strcmp(groups[g], o->group) == 0;
        if (!seen && n_groups < 16)
            groups[n_groups++] = o->group;
    }
    for (int g = 0; g < n_groups; g++) {
        fprintf(f, "\n%s:\n", groups[g]);
        for (const struct cli_opt *o = opts; o && o->id; o++) {
            if (strcmp(o->group, groups[g]) != 0)
                continue;
            char left[64];
            if (o->short_name)
                snprintf(left, sizeof left, "-%c, --%s%s%s", o->short_name, o->long_name,
                         o->arg ? " " : "", o->arg ? o->arg : "");
            else
                snprintf(left, sizeof left, "    --%s%s%s", o->long_name, o->arg ? " " : "",
                         o->arg ? o->arg : "");
            fprintf(f, "  %-30s %s\n", left, o->help);
        }
    }
    fprintf(f, "\nHelp:\n  %-30s %s\n", "-h, --help", "show this help and exit");
    if (h->examples)
        fprintf(f, "\nExamples:\n%s", h->examples);
    fputs("\nExit codes:\n  0    ok\n", f);
    if (h->exits & CLI_EXITS_CHECK_FAILED)
        fprintf(f, "  1    %s\n",
                strcmp(h->name, "check") == 0 ? "a criterion failed"
                                              : "the program profiled with --attach failed");
    fputs("  2    usage error or invalid input (the file, JSON path and expectation named)\n", f);
    if (h->exits & CLI_EXITS_INFEASIBLE)
        fputs("  3    infeasible: no plan satisfies the constraints (the reason named)\n", f);
    if (h->exits & CLI_EXITS_UNAVAILABLE)
        fputs("  4    feature or device unavailable (not compiled in, no GPU)\n", f);
    fputs("  5    internal error\n", f);
    if (h->exits & CLI_EXITS_INTERRUPTED)
        fputs("  130  interrupted (Ctrl-C): nothing written\n", f);
}

static bool bind_value(struct cli_opt_parser *p, const struct cli_bind *b) {
    const char *name = p->current->long_name, *v = p->value;
    switch (b->kind) {
    case CLI_BIND_FLAG_:
        *(bool *)b->var = true;
        return true;
    case CLI_BIND_STRING_:
        *(const char **)b->var = v;
        return true;
    case CLI_BIND_U32_: {
        uint64_t x = 0;
        if (!cli_opt_uint(p, (uint64_t)b->min, (uint64_t)b->max, &x))
            return false;
        *(uint32_t *)b->var = (uint32_t)x;
        return true;
    }
    case CLI_BIND_DOUBLE_: {
        char *end = NULL;
        double x = v ? strtod(v, &end) : 0;
        if (!v || !end || end == v || *end || !(x >= b->min && x <= b->max)) {
            if (b->expects)
                cli_usage_error(p->command, "--%s expects %s, got '%s'", name, b->expects,
                                v ? v : "");
            else
                cli_usage_error(p->command, "--%s expects a number in [%g, %g], got '%s'", name,
                                b->min, b->max, v ? v : "");
            return false;
        }
        *(double *)b->var = x;
        return true;
    }
    }
    return false;
}

int cli_opt_parse(struct cli_opt_parser *p, const struct cli_command_help *help,
                  const struct cli_bind *binds) {
    for (;;) {
        int id = cli_opt_next(p);
        if (id == CLI_OPT_HELP)
            cli_print_command_help(stdout, help, p->opts);
        if (id <= 0) {
            p->ended = id;
            return 0;
        }
        const struct cli_bind *b = binds;
        while (b && b->id && b->id != id)
            b++;
        if (!b || !b->id)
            return id;
        if (!bind_value(p, b)) {
            p->ended = CLI_OPT_ERROR;
            return 0;
        }
    }
}

int cli_opt_exit(const struct cli_opt_parser *p) {
    return p->ended == CLI_OPT_HELP ? 0 : p->ended == CLI_OPT_ERROR ? 2 : -1;
}

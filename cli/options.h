/* cli/options.h: declarative option tables. One table per command gives getopt_long its
 * options and the help text its lines, so the two cannot disagree. */
#ifndef SP_CLI_OPTIONS_H
#define SP_CLI_OPTIONS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <stagepart/stagepart.h>

struct cli_opt {
    int id;                /* returned by cli_opt_next; > 0 */
    const char *long_name; /* "stages" */
    char short_name;       /* 's', or 0 */
    const char *arg;       /* "<n>" when the option takes a value, NULL for a flag */
    const char *help;      /* one line; "(default: ...)" included where there is one */
    const char *group;     /* heading the option is listed under */
};

struct cli_command_help {
    const char *name;        /* "partition" */
    const char *synopsis;    /* "PROFILE --stages P [options]" */
    const char *summary;     /* one line */
    const char *description; /* paragraph(s), may be NULL */
    const char *examples;    /* lines, may be NULL */
};

struct cli_opt_parser {
    const char *command;
    const struct cli_opt *opts;
    int argc;
    char **argv;
    int index;                     /* next argv element */
    const char *value;             /* value of the option just returned */
    const struct cli_opt *current; /* the option just returned */
    char *positional[64];
    int n_positional;
};

enum { CLI_OPT_DONE = 0, CLI_OPT_ERROR = -1, CLI_OPT_HELP = -2 };

void cli_opt_parser_init(struct cli_opt_parser *p, const char *command, const struct cli_opt *opts,
                         int argc, char **argv);
/* Next option's id, CLI_OPT_HELP for -h/--help, CLI_OPT_DONE at the end, CLI_OPT_ERROR after
 * printing a usage error. Positional arguments are collected in p->positional. "--" ends
 * options. */
int cli_opt_next(struct cli_opt_parser *p);

/* Print a usage error (one line plus a hint) to stderr; returns exit code 2. */
int cli_usage_error(const char *command, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Value parsers: print a usage error naming the option and return false on bad input. */
bool cli_opt_uint(const struct cli_opt_parser *p, uint64_t min, uint64_t max, uint64_t *out);

void cli_print_command_help(FILE *f, const struct cli_command_help *h, const struct cli_opt *opts);

#endif

/* cli/options.h: declarative option tables. One table per command gives getopt_long its
 * options and the help text its lines, so the two cannot disagree. */
#ifndef SP_CLI_OPTIONS_H
#define SP_CLI_OPTIONS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <stagepart/stagepart.h>

struct sp_opt {
    int id;                /* returned by sp_opt_next; > 0 */
    const char *long_name; /* "stages" */
    char short_name;       /* 's', or 0 */
    const char *arg;       /* "<n>" when the option takes a value, NULL for a flag */
    const char *help;      /* one line; "(default: ...)" included where there is one */
    const char *group;     /* heading the option is listed under */
};

struct sp_command_help {
    const char *name;        /* "partition" */
    const char *synopsis;    /* "PROFILE --stages P [options]" */
    const char *summary;     /* one line */
    const char *description; /* paragraph(s), may be NULL */
    const char *examples;    /* lines, may be NULL */
};

struct sp_opt_parser {
    const char *command;
    const struct sp_opt *opts;
    int argc;
    char **argv;
    int index;                    /* next argv element */
    const char *value;            /* value of the option just returned */
    const struct sp_opt *current; /* the option just returned */
    char *positional[64];
    int n_positional;
};

enum { SP_OPT_DONE = 0, SP_OPT_ERROR = -1, SP_OPT_HELP = -2 };

void sp_opt_parser_init(struct sp_opt_parser *p, const char *command, const struct sp_opt *opts,
                        int argc, char **argv);
/* Next option's id, SP_OPT_HELP for -h/--help, SP_OPT_DONE at the end, SP_OPT_ERROR after
 * printing a usage error. Positional arguments are collected in p->positional. "--" ends
 * options. */
int sp_opt_next(struct sp_opt_parser *p);

/* Print a usage error (one line plus a hint) to stderr; returns exit code 2. */
int sp_usage_error(const char *command, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Value parsers: print a usage error naming the option and return false on bad input. */
bool sp_opt_uint(const struct sp_opt_parser *p, uint64_t min, uint64_t max, uint64_t *out);

void sp_print_command_help(FILE *f, const struct sp_command_help *h, const struct sp_opt *opts);

#endif

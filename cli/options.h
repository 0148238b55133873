/* cli/options.h: declarative option tables. One table per command gives getopt_long its
 * options and the help text its lines, so the two cannot disagree. */
#ifndef CLI_OPTIONS_H
#define CLI_OPTIONS_H

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
    unsigned exits;          /* the exit codes it can return: CLI_EXITS_* bits */
};
/* one bit per exit code (130: bit 6); 0 and 2 (usage) and 5 (internal, a write to stdout that
 * fails) are every command's */
#define CLI_EXITS_CHECK_FAILED (1u << 1)
#define CLI_EXITS_INFEASIBLE   (1u << 3)
#define CLI_EXITS_UNAVAILABLE  (1u << 4)
#define CLI_EXITS_INTERRUPTED  (1u << 6)

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
    int ended; /* how cli_opt_parse ended: CLI_OPT_DONE, CLI_OPT_HELP or CLI_OPT_ERROR */
};

enum { CLI_OPT_DONE = 0, CLI_OPT_ERROR = -1, CLI_OPT_HELP = -2 };

void cli_opt_parser_init(struct cli_opt_parser *p, const char *command, const struct cli_opt *opts,
                         int argc, char **argv);
/* Next option's id, CLI_OPT_HELP for -h/--help, CLI_OPT_DONE at the end, CLI_OPT_ERROR after
 * printing a usage error. Positional arguments are collected in p->positional. "--" ends
 * options. */
int cli_opt_next(struct cli_opt_parser *p);

/* An option bound to the variable it sets: cli_opt_parse sets it and goes on, so a command's
 * own switch only sees the options that need more than a value (names of enums, "auto", ...).
 * Numbers must lie in [min, max]; a double's message says it expects `expects` (NULL: "a number
 * in [min, max]"). */
enum cli_bind_kind { CLI_BIND_FLAG_ = 1, CLI_BIND_STRING_, CLI_BIND_U32_, CLI_BIND_DOUBLE_ };
struct cli_bind {
    int id;
    enum cli_bind_kind kind;
    void *var; /* bool *, const char **, uint32_t *, double * */
    double min, max;
    const char *expects;
};
#define CLI_FLAG(id, var)                                                                          \
    { (id), CLI_BIND_FLAG_, (bool *)(var), 0, 0, NULL }
#define CLI_STRING(id, var)                                                                        \
    { (id), CLI_BIND_STRING_, (const char **)(var), 0, 0, NULL }
#define CLI_U32(id, var, lo, hi)                                                                   \
    { (id), CLI_BIND_U32_, (uint32_t *)(var), (lo), (hi), NULL }
#define CLI_DOUBLE(id, var, lo, hi, ex)                                                            \
    { (id), CLI_BIND_DOUBLE_, (double *)(var), (lo), (hi), (ex) }
#define CLI_BIND_END                                                                               \
    { 0, 0, NULL, 0, 0, NULL }

/* cli_opt_parse: the next option that is not bound (its id, > 0), after setting every bound one
 * met on the way; 0 at the end. -h/--help prints the command's help and a bad value prints a
 * usage error: both end the options too, and cli_opt_exit says what the command returns then. */
int cli_opt_parse(struct cli_opt_parser *p, const struct cli_command_help *help,
                  const struct cli_bind *binds);
/* after cli_opt_parse returned 0: -1 to go on, else the exit code (0 after --help, 2 after a
 * usage error) */
int cli_opt_exit(const struct cli_opt_parser *p);

/* Print a usage error (one line plus a hint) to stderr; returns exit code 2. */
int cli_usage_error(const char *command, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Value parsers: print a usage error naming the option and return false on bad input. */
bool cli_opt_uint(const struct cli_opt_parser *p, uint64_t min, uint64_t max, uint64_t *out);

void cli_print_command_help(FILE *f, const struct cli_command_help *h, const struct cli_opt *opts);

/* cli_closest: among names[n], the one word[0..len) most likely misspells (one or two edits), or
 * the only one it begins; NULL when none is close (cli/suggest.c) */
const char *cli_closest(const char *word, size_t len, const char *const *names, size_t n);

#endif

/* cli/cli.h: what the stagepart commands share: the command table, error reporting and the
 * one mapping from sp_status to exit codes. */
#ifndef SP_CLI_H
#define SP_CLI_H

#include <stdbool.h>
#include <stdio.h>

#include <stagepart/stagepart.h>

#include "options.h"

/* Exit codes (README, --help and docs/ list the same). */
enum {
    CLI_EXIT_OK = 0,
    CLI_EXIT_CHECK_FAILED = 1,
    CLI_EXIT_USAGE = 2,
    CLI_EXIT_INFEASIBLE = 3,
    CLI_EXIT_UNAVAILABLE = 4,
    CLI_EXIT_INTERNAL = 5,
    CLI_EXIT_INTERRUPTED = 130 /* Ctrl-C or SIGTERM during profile MODEL or run */
};

struct cli_command {
    const char *name;
    int (*run)(int argc, char **argv);
    const struct cli_command_help *help;
    const struct cli_opt *opts;
    const char *const *kinds; /* what its first argument names (import kineto ...), or NULL */
};

extern const struct cli_command cli_commands[];

int cli_exit_code(sp_status status);
/* Report a failed library call: "stagepart: error: <detail>" on stderr (one line per problem),
 * or, with json, an {"error": {...}} document on stdout as well. Returns the exit code. */
/* `partition --schedule compare`: every schedule's plan in one table or JSON; the exit code */
/* After a plan whose schedule runs several chunks per device (interleaved, interleaved-zb, zbv,
 * dualpipev): plain 1F1B's own plan on the same devices, simulated the same way; when it is
 * faster, one line says by how much (optimal for its objective is not faster: interleaving pays
 * a transfer per chunk and fills the pipeline only with enough micro-batches) */
void cli_partition_advice(sp_ctx *ctx, const sp_profile *profile, const sp_partition_opts *opts,
                          const sp_plan *plan);
int cli_partition_compare(sp_ctx *ctx, const sp_profile *profile, const sp_partition_opts *opts,
                          bool json);
/* `partition --gpus N --global-batch B`: pipeline x data parallel splits in one table or JSON,
 * the best split's plan written to `output` (may be NULL) with `cmdline`; the exit code */
int cli_partition_gpus(sp_ctx *ctx, const sp_profile *profile, const sp_partition_opts *opts,
                       uint32_t gpus, uint64_t global_batch, bool json, const char *output,
                       const char *cmdline);
/* `partition --gpus N`: the table of a plan with replicated stages */
void cli_print_replicated(const sp_plan *plan, const sp_profile *profile);
/* cli_noun: one or many, as a count reads in English ("1 step", "2 steps") */
const char *cli_noun(uint64_t n, const char *one, const char *many);
/* cli_fit: text in a column `width` characters wide (buf holds width + 1 bytes at least): as
 * it is when it fits, else cut, at a character's start, and ended with "..." */
const char *cli_fit(char *buf, size_t size, const char *text, size_t width);
/* cli_bar: a bar of `width` characters, '#' for the share (0 to 1) and '.' for the rest */
void cli_bar(char *buf, size_t width, double share);
/* cli_shown: v as it reads printed with `decimals` decimals: 0 where it would print as -0.0 */
double cli_shown(double v, int decimals);
int cli_report(sp_ctx *ctx, sp_status status, bool json);
struct cJSON;
/* print a JSON document built with cJSON and delete it (ok: whether building it succeeded);
 * the exit code */
int cli_print_json_tree(struct cJSON *root, bool ok);
/* the most memory one device of a plan holds: its chunks' memory summed */
uint64_t cli_peak_device_bytes(const sp_plan *plan);
void cli_print_warnings(const sp_ctx *ctx);
/* "stagepart " + the command's argv (argv[0] is the command name) as one shell-quoted string,
 * for provenance; the caller frees it with free(). */
char *cli_command_line(int argc, char **argv);

/* Refuse an output that is one of the command's inputs (the same file by device and inode, so
 * "./x.json" for "x.json", or an output file that an input symlink points to): the atomic write
 * would replace the input the user meant to keep. An output that is itself a symlink is replaced
 * as a link and never counts. inputs may hold NULLs (options not given). Returns 0, or the usage
 * error's exit code. */
int cli_check_output_not_input(const char *command, const char *option, const char *output,
                               const char *const *inputs, size_t input_count);

/* Output "-" is standard output (sp_write_file_atomic): the data goes there, so the command
 * prints none of its human text there (warnings and errors stay on stderr). cli_is_stdout: path
 * is "-". cli_one_stdout: a usage error (exit 2) when more than one of the n outputs is "-", or
 * one is and json_too (--json would print a second document); else 0. */
bool cli_is_stdout(const char *path);
/* the table's line for a plan made under a memory limit: "every stage (or replica) within the
 * limit", or, when the profile records no saved_bytes, that only resident memory was checked */
void cli_print_memory_limit(const sp_plan_summary *m, const char *each);
int cli_one_stdout(const char *command, const char *const *outputs, size_t n, bool json_too);

/* Ctrl-C and SIGTERM during a long library call: the handlers set cli_interrupted, which
 * the call watches (its `cancel` option) and answers with SP_ERR_INTERRUPTED. */
extern volatile int cli_interrupted;
struct cli_signals;
struct cli_signals *cli_catch_interrupts(void); /* NULL when out of memory: not caught */
void cli_restore_signals(struct cli_signals *saved);

int cmd_partition(int argc, char **argv);
int cmd_simulate(int argc, char **argv);
int cmd_check(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_evaluate(int argc, char **argv);
int cmd_import_plan(int argc, char **argv);
int cmd_import(int argc, char **argv);
int cmd_profile(int argc, char **argv);
int cmd_bandwidth(int argc, char **argv);
int cmd_run(int argc, char **argv);
extern const struct cli_command_help cmd_run_help;
extern const struct cli_opt cmd_run_opts[];
extern const struct cli_command_help cmd_bandwidth_help;
extern const struct cli_opt cmd_bandwidth_opts[];
extern const struct cli_command_help cmd_profile_help;
extern const struct cli_opt cmd_profile_opts[];
extern const struct cli_command_help cmd_import_help;
extern const struct cli_opt cmd_import_opts[];
extern const struct cli_command_help cmd_check_help, cmd_export_help, cmd_evaluate_help;
extern const struct cli_opt cmd_check_opts[], cmd_export_opts[], cmd_evaluate_opts[];
extern const struct cli_command_help cmd_simulate_help;
extern const struct cli_opt cmd_simulate_opts[];
extern const struct cli_command_help cmd_partition_help;
extern const struct cli_opt cmd_partition_opts[];

#endif

/* cli/cmd_bandwidth_opts.h: the option ids of `stagepart bandwidth`, shared by its option table
 * (cmd_bandwidth_opts.c, which the stagepart command holds for help) and the command itself
 * (cmd_bandwidth.c, in stagepart-compute: docs/architecture.md). */
#ifndef SP_CLI_CMD_BANDWIDTH_OPTS_H
#define SP_CLI_CMD_BANDWIDTH_OPTS_H
enum { OPT_OUTPUT = 1, OPT_BACKEND, OPT_WORKERS, OPT_SIZES, OPT_TRIALS, OPT_WARMUP };
#endif

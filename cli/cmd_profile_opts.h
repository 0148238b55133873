/* cli/cmd_profile_opts.h: the option ids of `stagepart profile`, shared by its option table
 * (cmd_profile_opts.c, which the stagepart command holds for help) and the command itself
 * (cmd_profile.c, in stagepart-compute: docs/architecture.md). */
#ifndef SP_CLI_CMD_PROFILE_OPTS_H
#define SP_CLI_CMD_PROFILE_OPTS_H
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
    OPT_QUIET,
    OPT_SMS
};
#endif

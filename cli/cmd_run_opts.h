/* cli/cmd_run_opts.h: the option ids of `stagepart run`, shared by its option table
 * (cmd_run_opts.c, which the stagepart command holds for help) and the command itself
 * (cmd_run.c, in stagepart-compute: docs/architecture.md). */
#ifndef SP_CLI_CMD_RUN_OPTS_H
#define SP_CLI_CMD_RUN_OPTS_H
enum {
    OPT_MODEL = 1,
    OPT_BACKEND,
    OPT_TRANSPORT,
    OPT_SCHEDULE,
    OPT_MICRO_BATCHES,
    OPT_STEPS,
    OPT_WARMUP_STEPS,
    OPT_LR,
    OPT_SEED,
    OPT_TIMEOUT,
    OPT_NO_PIN,
    OPT_GPU_SPLIT,
    OPT_ISOLATE,
    OPT_OUTPUT,
    OPT_JSON,
    OPT_TRACE,
    OPT_SVG,
    OPT_FAULT,
    OPT_MBS,
    OPT_SEQ_LEN
};
#endif

/* cli/attribution.h: what `import` and `profile --attach` share: the attribution options (one
 * macro, so both tables and both --help texts say the same), the profile they make from a trace
 * and the summary they print. */
#ifndef CLI_ATTRIBUTION_H
#define CLI_ATTRIBUTION_H

#include "cli.h"

/* Option ids 100..106 are the attribution options'. */
enum {
    CLI_ATTR_OPT_LAYER = 100,
    CLI_ATTR_OPT_PHASE,
    CLI_ATTR_OPT_STEP,
    CLI_ATTR_OPT_WARMUP,
    CLI_ATTR_OPT_NAME,
    CLI_ATTR_OPT_MODEL_AS_NAME, /* the old spelling of --name */
    CLI_ATTR_OPT_MBS,
    CLI_ATTR_OPT_LAYERS,
    CLI_ATTR_OPT_MIN_SHARE,
};

/* -o for the commands that write a profile (import, profile) */
#define CLI_PROFILE_OUTPUT_OPT(id)                                                                 \
    {                                                                                              \
        (id), "output", 'o', "<file>",                                                             \
            "write the profile to <file> (atomically) and print a summary; default: the profile "  \
            "on "                                                                                  \
            "stdout",                                                                              \
            "Output"                                                                               \
    }

#define CLI_ATTRIBUTION_OPTS                                                                       \
    {CLI_ATTR_OPT_LAYERS,                                                                          \
     "layers",                                                                                     \
     0,                                                                                            \
     "<how>",                                                                                      \
     "which ranges are layers: auto (a level of the PyTorch module tree, from with_stack=True "    \
     "ranges), a depth in that tree (0, 1, ...), or a regex (as --layer-pattern); default: the "   \
     "ranges named '<layer>/fwd|bwd', else auto",                                                  \
     "Attribution"},                                                                               \
        {CLI_ATTR_OPT_LAYER,                                                                       \
         "layer-pattern",                                                                          \
         0,                                                                                        \
         "<regex>",                                                                                \
         "ranges that are layers (POSIX extended regex, Python's \\d \\w \\s accepted; group 1 "   \
         "is "                                                                                     \
         "the layer's name; default: "                                                             \
         "'^(.+)/(fwd|bwd|recompute)$')",                                                          \
         "Attribution"},                                                                           \
        {CLI_ATTR_OPT_PHASE,                                                                       \
         "phase-pattern",                                                                          \
         0,                                                                                        \
         "<regex>",                                                                                \
         "group 1 is a range's phase: fwd, forward, bwd, backward, recompute, optimizer "          \
         "(default: '/(fwd|bwd|recompute|optimizer)$'; unmarked layer ranges are forward)",        \
         "Attribution"},                                                                           \
        {CLI_ATTR_OPT_STEP,                                                                        \
         "step-pattern",                                                                           \
         0,                                                                                        \
         "<regex>",                                                                                \
         "training-step ranges (default: '^(stagepart/step|ProfilerStep#[0-9]+)')",                \
         "Attribution"},                                                                           \
        {CLI_ATTR_OPT_WARMUP, "warmup-steps", 0, "<N>", "skip the first N steps (default: 0)",     \
         "Attribution"},                                                                           \
        {CLI_ATTR_OPT_MIN_SHARE,                                                                   \
         "min-layer-share",                                                                        \
         0,                                                                                        \
         "<x>",                                                                                    \
         "refuse a GPU trace whose layers hold less than this share of its GPU time outside the "  \
         "optimizer (their ranges did not launch the model's kernels); 0: no check "               \
         "(default: 0.5)",                                                                         \
         "Attribution"},                                                                           \
        {CLI_ATTR_OPT_NAME,                                                                        \
         "name",                                                                                   \
         0,                                                                                        \
         "<name>",                                                                                 \
         "the profile's model name (default: the trace file's or the program's name)",             \
         "Profile"},                                                                               \
        {CLI_ATTR_OPT_MODEL_AS_NAME,                                                               \
         "model",                                                                                  \
         0,                                                                                        \
         "<name>",                                                                                 \
         "the old spelling of --name, with a warning: --model names a stagepart-model file, as "   \
         "in run",                                                                                 \
         "Profile"},                                                                               \
    {                                                                                              \
        CLI_ATTR_OPT_MBS, "micro-batch-size", 0, "<B>",                                            \
            "samples per micro-batch: what a trace was recorded at (default: 1), or what MODEL "   \
            "runs at (default: the model file's)",                                                 \
            "Profile"                                                                              \
    }

/* Take an attribution option the parser returned; false (after a usage error) on a bad value.
 * Ids that are not attribution options are left alone and return true with *taken false. */
bool cli_attribution_opt(const struct cli_opt_parser *p, int id, sp_trace_profile_opts *opts,
                         bool *taken);

/* Make the profile from the trace and write it to output (atomically) or stdout, print the
 * summary and warnings; returns the exit code. no_gpu_work_is_error: a trace with no GPU
 * activity at all exits 4 (a live run on a machine without a GPU) instead of writing a profile
 * of zeros. */
int cli_attribution_finish(sp_ctx *ctx, const sp_trace *trace, const sp_trace_profile_opts *opts,
                           const char *output, bool no_gpu_work_is_error);

#endif

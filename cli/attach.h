/* cli/attach.h: a program run under the live collector, its event logs attributed (attach.c). */
#ifndef CLI_ATTACH_H
#define CLI_ATTACH_H

#include "cli.h"

struct cli_attach_args {
    char **cmd;             /* the program and its arguments, NULL-terminated */
    const char *events_dir; /* keep the event logs there; NULL: a temporary folder, removed */
    const char *steps;      /* stop recording after this many steps past the warm-up, or NULL */
    const char *output;     /* the profile's file; NULL: stdout */
    sp_trace_profile_opts opts;
    int no_device_status; /* the program's exit status for "no CUDA device" (exit 4); 0: none */
};

/* The exit code of the command: 0, or after a message on stderr 1 (the program failed), 2, 4
 * (no collector, no GPU work), 5. */
int cli_attach_profile(const struct cli_attach_args *a);

/* stagepart-model-cuda (models/cuda/program/): $STAGEPART_MODEL_CUDA, the build tree's, or the
 * one beside this executable. false when this stagepart was built without it. */
bool cli_find_model_cuda(char *out, size_t cap);

#endif

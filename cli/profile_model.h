/* cli/profile_model.h: `stagepart profile MODEL`: a built-in model measured by stagepart itself. */
#ifndef CLI_PROFILE_MODEL_H
#define CLI_PROFILE_MODEL_H

#include "cli.h"

struct cli_profile_model_args {
    const char *model_path, *output, *backend;
    const char *name;          /* --name: the profile's model name, or NULL */
    const char *events_dir;    /* --events-dir: keep the GPU run's event logs there, or NULL */
    uint32_t micro_batch_size; /* 0: the model file's */
    uint32_t seq_len;          /* 0: the model file's */
    uint32_t sms;              /* --sms: the GPU's SMs the model runs on; 0: all of them */
    sp_model_profile_opts opts;
    bool quiet;
};

int cli_profile_model_run(const struct cli_profile_model_args *a);

#endif

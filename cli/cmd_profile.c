/* cli/cmd_profile.c: `stagepart profile MODEL`: a built-in model measured by stagepart itself
 * (cli/profile_model.c); `stagepart profile --attach -- CMD ARGS...`: run a CUDA program with the
 * live collector injected, then attribute its event logs with the same engine as `import`
 * (cli/attach.c). */
#include <string.h>

#include "attach.h"
#include "attribution.h"
#include "cmd_profile_opts.h"
#include "profile_model.h"

int cmd_profile(int argc, char **argv) {
    int dashdash = argc;
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--") == 0) {
            dashdash = i;
            break;
        }
    sp_trace_profile_opts opts;
    sp_trace_profile_opts_init(&opts);
    const char *output = NULL, *events_dir = NULL, *steps = NULL;
    bool attach = false;
    uint64_t v = 0;
    struct cli_profile_model_args margs;
    memset(&margs, 0, sizeof margs);
    sp_model_profile_opts_init(&margs.opts);
    const struct cli_bind binds[] = {
        CLI_STRING(OPT_BACKEND, &margs.backend),
        CLI_U32(OPT_SEQ_LEN, &margs.seq_len, 1, 1u << 24),
        CLI_U32(OPT_SMS, &margs.sms, 1, 1u << 16),
        CLI_U32(OPT_WARMUP, &margs.opts.warmup, 0, 100000),
        CLI_U32(OPT_ITERS, &margs.opts.iters, 1, 100000),
        CLI_FLAG(OPT_QUIET, &margs.quiet),
        CLI_STRING(OPT_OUTPUT, &output),
        CLI_FLAG(OPT_ATTACH, &attach),
        CLI_STRING(OPT_EVENTS_DIR, &events_dir),
        CLI_BIND_END,
    };
    struct cli_opt_parser p;
    cli_opt_parser_init(&p, "profile", cmd_profile_opts, dashdash, argv);
    for (int id; (id = cli_opt_parse(&p, &cmd_profile_help, binds)) > 0;) {
        bool taken = false;
        if (!cli_attribution_opt(&p, id, &opts, &taken))
            return CLI_EXIT_USAGE;
        if (id == CLI_ATTR_OPT_MBS)
            margs.micro_batch_size = (uint32_t)opts.micro_batch_size;
        if (taken)
            continue;
        switch (id) {
        case OPT_CORE:
            if (!cli_opt_uint(&p, 0, 4095, &v))
                return CLI_EXIT_USAGE;
            margs.opts.core = (int)v;
            break;
        case OPT_STEPS:
            if (!cli_opt_uint(&p, 1, 1000000, &v))
                return CLI_EXIT_USAGE;
            steps = p.value;
            break;
        }
    }
    if (cli_opt_exit(&p) >= 0)
        return cli_opt_exit(&p);
    if (!attach) {
        if (p.n_positional != 1 || dashdash != argc)
            return cli_usage_error("profile", "give a model file (stagepart profile MODEL), or "
                                              "--attach [options] -- CMD ARGS... for a program");
        margs.model_path = p.positional[0];
        margs.output = output;
        margs.name = opts.model;
        margs.events_dir = events_dir;
        const char *inputs[] = {margs.model_path};
        if (output) {
            int rc = cli_check_output_not_input("profile", "--output", output, inputs, 1);
            if (rc)
                return rc;
        }
        return cli_profile_model_run(&margs);
    }
    if (p.n_positional)
        return cli_usage_error("profile", "unexpected argument '%s' before '--'", p.positional[0]);
    if (dashdash + 1 >= argc)
        return cli_usage_error("profile", "no program to run: put it after '--'");
    char **cmd = argv + dashdash + 1;
    char model[256];
    if (!opts.model) { /* the program's name: "train" for `python train.py`, else argv[0]'s */
        const char *prog = strrchr(cmd[0], '/') ? strrchr(cmd[0], '/') + 1 : cmd[0];
        if (strncmp(prog, "python", 6) == 0 && cmd[1] && cmd[1][0] != '-')
            prog = strrchr(cmd[1], '/') ? strrchr(cmd[1], '/') + 1 : cmd[1];
        snprintf(model, sizeof model, "%s", prog);
        size_t len = strlen(model);
        if (len > 3 && strcmp(model + len - 3, ".py") == 0)
            model[len - 3] = '\0';
        opts.model = model;
    }
    struct cli_attach_args at = {cmd, events_dir, steps, output, opts, 0};
    return cli_attach_profile(&at);
}

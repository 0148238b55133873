/* cli/cmd_export.c: `stagepart export`: a plan in the form a framework takes. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

enum { OPT_TO = 1, OPT_PREFIX, OPT_NAMES, OPT_OUTPUT, OPT_JSON };

const struct cli_opt cmd_export_opts[] = {
    {OPT_TO, "to", 't', "<framework>",
     "megatron, deepspeed, torchgpipe, pippy, torch-stages, torchtitan, or torch-schedule-csv "
     "(the simulated op order)",
     "Export"},
    {OPT_PREFIX, "module-prefix", 0, "<prefix>",
     "put <prefix> before layer names to make module names (e.g. model.)", "Export"},
    {OPT_NAMES, "module-names", 0, "<names>",
     "profile (default: the layer names) or torchtitan (by kind: tok_embeddings, layers.N, norm, "
     "lm_head)",
     "Export"},
    {OPT_OUTPUT, "output", 'o', "<file>", "write the result to <file> (atomically)", "Output"},
    {OPT_JSON, "json", 0, NULL, "print {\"format\": \"stagepart-export\", ...} with the bare value",
     "Output"},
    {0, NULL, 0, NULL, NULL, NULL},
};

const struct cli_command_help cmd_export_help = {
    "export",
    "PLAN --to FRAMEWORK [--module-prefix P] [--module-names N] [-o FILE] [--json]",
    "Print a plan in the form a framework takes.",
    "megatron: --pipeline-model-parallel-layout (E embedding, t transformer layers, L head and\n"
    "  loss; chunk-major for interleaved plans), and the first/last-stage counts when the plan\n"
    "  has that shape. deepspeed: PipelineModule parts and a subclass that applies them.\n"
    "  torchgpipe: the balance list (also fairscale). pippy: torch.distributed.pipelining\n"
    "  split_spec and torch's schedule class. torch-stages: each stage's module paths and the\n"
    "  Python that builds PipelineStages from them by hand (for models torch's pipeline() does\n"
    "  not split), with a check that the stages in a row equal the whole model. torchtitan: "
    "module_fqns_per_model_part, and its first/last_stage_less_layers\n"
    "  when its own even split with them makes the same parts. torch-schedule-csv: the op order "
    "of\n"
    "  the plan's simulated schedule, one row per rank, as torch.distributed.pipelining's\n"
    "  _load_csv reads it (simulate --order reads it back). Module names are the profile's layer\n"
    "  names with --module-prefix in front (--module-names torchtitan: torchtitan's names by\n"
    "  kind); layers of kind \"loss\" are no modules. A plan a\n"
    "  format cannot express is refused (exit 2) with the stage named. docs/export.md.",
    "  stagepart export plan.json --to megatron\n"
    "  stagepart export plan.json --to deepspeed -o pipeline_parts.py\n"
    "  stagepart export plan.json --to pippy --module-prefix model.\n"
    "  stagepart export plan.json --to torch-stages -o stages.py\n"
    "  stagepart export plan.json --to torchtitan --module-names torchtitan\n"
    "  stagepart export plan.json --to torch-schedule-csv -o schedule.csv\n",
    .exits = CLI_EXITS_UNAVAILABLE,
};

int cmd_export(int argc, char **argv) {
    const char *to = NULL, *prefix = NULL, *output = NULL, *names_arg = NULL;
    bool json = false;
    const struct cli_bind binds[] = {
        CLI_STRING(OPT_TO, &to),           CLI_STRING(OPT_PREFIX, &prefix),
        CLI_STRING(OPT_NAMES, &names_arg), CLI_STRING(OPT_OUTPUT, &output),
        CLI_FLAG(OPT_JSON, &json),         CLI_BIND_END,
    };
    struct cli_opt_parser p;
    cli_opt_parser_init(&p, "export", cmd_export_opts, argc, argv);
    while (cli_opt_parse(&p, &cmd_export_help, binds) > 0) /* every option is bound */
        ;
    if (cli_opt_exit(&p) >= 0)
        return cli_opt_exit(&p);
    if (p.n_positional != 1)
        return cli_usage_error("export", p.n_positional ? "expected one PLAN" : "missing PLAN");
    const char *inputs[] = {p.positional[0]};
    int clash = cli_check_output_not_input("export", "--output", output, inputs, 1);
    if (clash)
        return clash;
    sp_export_format format;
    if (!to)
        return cli_usage_error("export", "missing --to FRAMEWORK");
    if (sp_export_format_from_name(to, &format) != SP_OK)
        return cli_usage_error("export",
                               "--to expects megatron, deepspeed, torchgpipe, pippy, "
                               "torch-stages, torchtitan or torch-schedule-csv, got '%s'",
                               to);
    sp_module_names names = SP_MODULE_NAMES_PROFILE;
    if (names_arg && strcmp(names_arg, "torchtitan") == 0)
        names = SP_MODULE_NAMES_TORCHTITAN;
    else if (names_arg && strcmp(names_arg, "profile") != 0)
        return cli_usage_error("export", "--module-names expects profile or torchtitan, got '%s'",
                               names_arg);
    sp_ctx *ctx = NULL;
    if (sp_ctx_create(&ctx) != SP_OK)
        return CLI_EXIT_INTERNAL;
    sp_plan *plan = NULL;
    char *text = NULL, *value = NULL, *doc = NULL;
    int code = CLI_EXIT_OK;
    sp_status st = sp_plan_load(ctx, p.positional[0], &plan);
    if (st == SP_OK)
        st = sp_plan_export_names(ctx, plan, format, prefix, names, &text, &value);
    if (st == SP_OK && json) {
        size_t cap = strlen(value) + 256;
        doc = malloc(cap);
        if (!doc) {
            code = CLI_EXIT_INTERNAL;
            goto out;
        }
        snprintf(doc, cap,
                 "{\n\t\"format\":\t\"stagepart-export\",\n\t\"version\":\t1,\n\t\"to\":\t\"%s\","
                 "\n\t\"value\":\t%s\n}\n",
                 to, value);
    }
    if (st == SP_OK && output)
        st = sp_write_file_atomic(ctx, output, json ? doc : text, strlen(json ? doc : text));
    if (st != SP_OK) {
        code = cli_report(ctx, st, json);
        goto out;
    }
    if (!output)
        fputs(json ? doc : text, stdout);
    else if (!cli_is_stdout(output))
        printf("wrote %s\n", output);
out:
    free(doc);
    sp_free(text);
    sp_free(value);
    sp_plan_destroy(plan);
    sp_ctx_destroy(ctx);
    return code;
}

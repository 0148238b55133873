/* cli/cmd_import.c: `stagepart import kineto TRACE...|nsys REPORT|events LOG...`: a profile
 * from a profiler's trace or from the live collector's event logs. */
#include <stdlib.h>
#include <string.h>

#include "attribution.h"

enum { OPT_OUTPUT = 1, OPT_LIST_MODULES, OPT_MODULES };

const struct cli_opt cmd_import_opts[] = {
    CLI_ATTRIBUTION_OPTS,
    {OPT_LIST_MODULES, "list-modules", 0, NULL,
     "print the trace's PyTorch module tree (GPU time with descendants and own, share; '*' on "
     "the modules --layers auto or DEPTH makes layers) instead of a profile",
     "Output"},
    {OPT_MODULES, "modules", 0, "<file>",
     "a module map (stagepart_torch.describe or Annotation.write_modules): each layer takes its "
     "module's path (model.layers.3) as its name, its parameter and output bytes and a kind; a "
     "layer the map lacks is an error",
     "Profile"},
    CLI_PROFILE_OUTPUT_OPT(OPT_OUTPUT),
    {0, NULL, 0, NULL, NULL, NULL},
};

const struct cli_command_help cmd_import_help = {
    "import",
    "kineto TRACE... | nsys REPORT | events LOG... [-o PROFILE] [options]\n"
    "       stagepart import plan PROFILE (--megatron-layout S | --balance ... | --parts ...) -o "
    "PLAN",
    "Make a profile from a PyTorch profiler trace, an Nsight Systems export or event logs.",
    "plan: the split you run today as a plan file (stagepart help import-plan; import-plan is\n"
    "  the same command).\n"
    "kineto: the Chrome trace torch.profiler writes (export_chrome_trace or\n"
    "  tensorboard_trace_handler), plain or .gz; several (one per rank) merge, each rank's steps\n"
    "  and ids its own. nsys: `nsys export --type sqlite` of a report recorded with -t cuda,nvtx\n"
    "  (several processes in it are kept apart). events: the logs `stagepart profile --attach\n"
    "  --events-dir` kept (one per process), to attribute a recorded run again. Each GPU kernel,\n"
    "  copy and memset goes to the host range that launched it (correlation ids, the launching\n"
    "  thread, the innermost enclosing range), and from there to the nearest layer range.\n"
    "  Layers are ranges named '<layer>/fwd' and '<layer>/bwd' (a forward inside a backward is\n"
    "  recomputation); without those, a level of the PyTorch module tree (torch.profiler's\n"
    "  with_stack=True ranges, 'nn.Module: Name_N'), chosen as --layers auto says, with each\n"
    "  autograd op's GPU work going to the layer its forward op ran in (the trace's fwdbwd\n"
    "  links). Steps are ranges named 'stagepart/step' or 'ProfilerStep#N'. fwd_ms and\n"
    "  bwd_ms are the median over the steps of each layer's merged GPU busy time; NCCL kernels\n"
    "  and copies are reported apart. The summary says how much GPU time no layer got. A kineto\n"
    "  trace with no GPU events (a CPU run) is attributed by its CPU operators' own time (each\n"
    "  op's span less its child ops'), and the summary says so.\n"
    "  docs/profiling.md.",
    "  stagepart import kineto trace.json.gz -o profile.json --warmup-steps 2\n"
    "  stagepart import kineto rank0.pt.trace.json rank1.pt.trace.json -o profile.json\n"
    "  stagepart import nsys report.sqlite -o profile.json\n"
    "  stagepart import kineto trace.json --list-modules\n"
    "  stagepart import kineto trace.json --layers 2 -o profile.json\n"
    "  stagepart import kineto trace.json --modules modules.json -o profile.json\n"
    "  stagepart import events run/events-*.splog -o profile.json\n",
    .exits = CLI_EXITS_UNAVAILABLE,
};

int cmd_import(int argc, char **argv) {
    /* import plan: the split you run today, as import-plan (one pattern: import KIND ...) */
    if (argc >= 2 && strcmp(argv[1], "plan") == 0)
        return cmd_import_plan(argc - 1, argv + 1);
    sp_trace_profile_opts opts;
    sp_trace_profile_opts_init(&opts);
    const char *output = NULL, *modules = NULL;
    bool list_modules = false;
    const struct cli_bind binds[] = {CLI_STRING(OPT_OUTPUT, &output),
                                     CLI_STRING(OPT_MODULES, &modules),
                                     CLI_FLAG(OPT_LIST_MODULES, &list_modules), CLI_BIND_END};
    struct cli_opt_parser p;
    cli_opt_parser_init(&p, "import", cmd_import_opts, argc, argv);
    for (int id; (id = cli_opt_parse(&p, &cmd_import_help, binds)) > 0;) {
        bool taken = false;
        if (!cli_attribution_opt(&p, id, &opts, &taken))
            return CLI_EXIT_USAGE;
    }
    if (cli_opt_exit(&p) >= 0)
        return cli_opt_exit(&p);
    if (p.n_positional < 2)
        return cli_usage_error("import",
                               "expected kineto TRACE..., nsys REPORT or events LOG..., got %d "
                               "arguments",
                               p.n_positional);
    const char *kind = p.positional[0];
    bool kineto = strcmp(kind, "kineto") == 0, nsys = strcmp(kind, "nsys") == 0;
    bool events = strcmp(kind, "events") == 0;
    if (!kineto && !nsys && !events)
        return cli_usage_error("import", "the trace kind is kineto, nsys or events, got '%s'",
                               kind);
    if (nsys && p.n_positional != 2)
        return cli_usage_error("import", "nsys takes one REPORT, got %d", p.n_positional - 1);
    const char *const *inputs = (const char *const *)p.positional + 1;
    size_t n_inputs = (size_t)p.n_positional - 1;
    int clash = cli_check_output_not_input("import", "--output", output, inputs, n_inputs);
    if (!clash && modules)
        clash = cli_check_output_not_input("import", "--output", output, &modules, 1);
    if (clash)
        return clash;
    sp_ctx *ctx = NULL;
    if (sp_ctx_create(&ctx) != SP_OK)
        return CLI_EXIT_INTERNAL;
    sp_trace *trace = NULL;
    sp_module_map *map = NULL;
    sp_status st = modules ? sp_module_map_load(ctx, modules, &map) : SP_OK;
    opts.modules = map;
    if (st == SP_OK)
        st = kineto ? sp_trace_load_kineto_files(ctx, inputs, n_inputs, &trace)
             : nsys ? sp_trace_load_nsys(ctx, inputs[0], &trace)
                    : sp_trace_load_events(ctx, inputs, n_inputs, &trace);
    int code;
    if (st != SP_OK) {
        code = cli_report(ctx, st, false);
    } else if (list_modules) {
        char *text = NULL;
        st = sp_trace_list_modules(ctx, trace, &opts, &text);
        code = st == SP_OK ? CLI_EXIT_OK : cli_report(ctx, st, false);
        if (st == SP_OK) {
            cli_print_warnings(ctx);
            fputs(text, stdout);
        }
        sp_free(text);
    } else {
        cli_print_warnings(ctx);
        code = cli_attribution_finish(ctx, trace, &opts, output, false);
    }
    sp_trace_destroy(trace);
    sp_module_map_destroy(map);
    sp_ctx_destroy(ctx);
    return code;
}

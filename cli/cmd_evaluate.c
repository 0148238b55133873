/* cli/cmd_evaluate.c: `stagepart evaluate` and `stagepart import-plan`: the split a user runs
 * today read from the command line, evaluated by sp_evaluate (check/evaluate.c) and printed. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

enum {
    OPT_LAYOUT = 1,
    OPT_BALANCE,
    OPT_PARTS,
    OPT_STAGES,
    OPT_SCHEDULE,
    OPT_MICRO_BATCHES,
    OPT_OUTPUT,
    OPT_JSON,
};

const struct cli_opt cmd_evaluate_opts[] = {
    {OPT_LAYOUT, "megatron-layout", 0, "<string>",
     "a Megatron-LM --pipeline-model-parallel-layout, e.g. \"Et*8|t*8|t*8|t*8L\"", "Split"},
    {OPT_BALANCE, "balance", 0, "<n,n,...>", "layers per stage (torchgpipe, fairscale)", "Split"},
    {OPT_PARTS, "parts", 0, "<0,a,...,n>", "stage boundaries (DeepSpeed's parts)", "Split"},
    {OPT_STAGES, "stages", 's', "<P>",
     "pipeline stages, when a layout has virtual stages (default: one per segment)", "Split"},
    {OPT_SCHEDULE, "schedule", 0, "<name>",
     "gpipe, 1f1b (default), zb-h1; with virtual stages interleaved (their default), "
     "interleaved-zb, zbv, dualpipev (zbv and dualpipev: 2 x stages segments, V-shape)",
     "Simulation"},
    {OPT_MICRO_BATCHES, "micro-batches", 'm', "<M>", "micro-batches (default: 4 x stages)",
     "Simulation"},
    {OPT_OUTPUT, "output", 'o', "<file>", "write the split as a plan file (for check)", "Output"},
    {OPT_JSON, "json", 0, NULL, "print the comparison as JSON", "Output"},
    {0, NULL, 0, NULL, NULL, NULL},
};

const struct cli_command_help cmd_evaluate_help = {
    "evaluate",
    "PROFILE (--megatron-layout S | --balance N,N,... | --parts 0,A,...,N) [options]",
    "Evaluate the split you run today and compare it with the optimal plan.",
    "Turns the split into a plan on PROFILE, simulates its schedule, and reports its bottleneck,\n"
    "imbalance and efficiency beside the optimal plan's (same stages, micro-batches and\n"
    "schedule), with the throughput the optimal plan would gain. import-plan does the same and\n"
    "writes the split as a plan file that `stagepart check` can gate.",
    "  stagepart evaluate model.json --megatron-layout \"Et*8|t*8|t*8|t*8L\"\n"
    "  stagepart evaluate model.json --balance 9,9,9,8 --micro-batches 32\n"
    "  stagepart evaluate model.json --balance 5,4,4,4,4,4,4,6 --schedule zbv\n"
    "  stagepart import-plan model.json --parts 0,9,18,27,35 -o current-plan.json\n",
    .exits = CLI_EXITS_INFEASIBLE | CLI_EXITS_UNAVAILABLE,
};

/* "9,9,8" -> numbers; false with a usage message on bad input */
static bool parse_list(const char *opt, const char *text, size_t **out, size_t *n) {
    size_t cap = 1;
    for (const char *c = text; *c; c++)
        cap += *c == ',';
    size_t *v = malloc(cap * sizeof *v);
    *n = 0;
    const char *c = text;
    while (v && *c) {
        char *end = NULL;
        errno = 0;
        unsigned long long x = (*c >= '0' && *c <= '9') ? strtoull(c, &end, 10) : 0;
        if (!end || end == c || errno || (*end && *end != ',')) {
            free(v);
            cli_usage_error("evaluate", "--%s expects numbers separated by commas, got '%s'", opt,
                            text);
            return false;
        }
        v[(*n)++] = (size_t)x;
        c = *end ? end + 1 : end;
    }
    if (!v || !*n) {
        free(v);
        cli_usage_error("evaluate", "--%s expects numbers separated by commas, got '%s'", opt,
                        text);
        return false;
    }
    *out = v;
    return true;
}

/* "2, 5" into buf: the empty stages of a plan; their count returned */
static size_t empty_stages(const sp_plan *plan, char *buf, size_t size) {
    size_t count = 0, used = 0;
    buf[0] = '\0';
    for (size_t k = 0; k < sp_plan_get_stage_count(plan); k++)
        if (!sp_plan_get_stage(plan, k)->layer_count) {
            int w = snprintf(buf + used, size - used, "%s%zu", count ? ", " : "", k);
            used = w > 0 && (size_t)w < size - used ? used + (size_t)w : size - 1;
            count++;
        }
    return count;
}

/* the devices none of whose stages holds a layer (with chunks, a device idles only when all of
 * its virtual stages are empty) */
static size_t idle_devices(const sp_plan *plan, uint32_t devices) {
    size_t idle = 0;
    for (uint32_t d = 0; d < devices; d++) {
        bool busy = false;
        for (size_t k = 0; k < sp_plan_get_stage_count(plan) && !busy; k++)
            busy = sp_plan_get_stage(plan, k)->device == d &&
                   sp_plan_get_stage(plan, k)->layer_count > 0;
        idle += !busy;
    }
    return idle;
}

/* an empty stage's device idles the whole iteration: what that costs */
static void print_empty(const char *who, const sp_plan *plan) {
    char list[256];
    size_t n = empty_stages(plan, list, sizeof list);
    if (!n)
        return;
    const sp_plan_summary *s = sp_plan_get_summary(plan);
    size_t idle = idle_devices(plan, s->stages);
    if (!idle) {
        printf("%s: virtual stage%s %s hold%s no layer; every device holds layers in another "
               "(imbalance %.3f)\n",
               who, n > 1 ? "s" : "", list, n > 1 ? "" : "s", s->imbalance);
        return;
    }
    printf("%s: stage%s %s hold%s no layer: %zu of %u devices idle, the other %zu carry all the "
           "work (imbalance %.3f)\n",
           who, n > 1 ? "s" : "", list, n > 1 ? "" : "s", idle, s->stages, s->stages - idle,
           s->imbalance);
}

static void print_comparison(const sp_plan *yours, const sp_plan *best, double gain) {
    const sp_plan_summary *a = sp_plan_get_summary(yours), *b = sp_plan_get_summary(best);
    printf("%s: %u %s%s, %s, %u %s\n\n", sp_plan_get_model(yours), a->stages,
           cli_noun(a->stages, "stage", "stages"), a->chunks > 1 ? " (interleaved)" : "",
           sp_schedule_name(a->schedule.schedule), a->micro_batches,
           cli_noun(a->micro_batches, "micro-batch", "micro-batches"));
    printf("%-10s %14s %10s %12s %10s %14s\n", "", "bottleneck ms", "at stage", "imbalance",
           "efficiency", "iteration ms");
    printf("%-10s %14.3f %10u %12.3f %9.1f%% %14.3f\n", "your split", a->bottleneck_ms,
           a->bottleneck_stage, a->imbalance, 100 * a->schedule.efficiency,
           a->schedule.iteration_ms);
    /* the other plan is called what its solver proved: the equal split is no optimum, nor is the
     * best of a search that stopped or had no bound */
    const char *other = b->solver == SP_SOLVER_UNIFORM ? "even split"
                        : b->optimal                   ? "optimal"
                                                       : "best found";
    printf("%-10s %14.3f %10u %12.3f %9.1f%% %14.3f\n", other, b->bottleneck_ms,
           b->bottleneck_stage, b->imbalance, 100 * b->schedule.efficiency,
           b->schedule.iteration_ms);
    printf("\n");
    print_empty("your split", yours);
    print_empty(other, best);
    printf("your split: efficiency %.0f%%, bottleneck stage %u; %s: %.0f%%, %+.0f%% "
           "throughput\n",
           100 * a->schedule.efficiency, a->bottleneck_stage, other, 100 * b->schedule.efficiency,
           cli_shown(100 * gain, 0));
}

/* the split the options describe, as each stage's first layer; *usage after a usage error */
static sp_status split_of(sp_ctx *ctx, const sp_profile *profile, const char *layout,
                          const char *balance, const char *parts, size_t **first, size_t *count,
                          bool *usage) {
    size_t *list = NULL, n_list = 0;
    if (layout)
        return sp_megatron_layout_split(ctx, profile, layout, first, count);
    if (!parse_list(balance ? "balance" : "parts", balance ? balance : parts, &list, &n_list)) {
        *usage = true;
        return SP_ERR_INVALID_ARG;
    }
    sp_status st = balance ? sp_split_from_counts(ctx, profile, list, *count = n_list, first)
                           : sp_split_from_parts(ctx, profile, list, n_list, first, count);
    free(list);
    return st;
}

/* the plan written, the comparison shown */
static sp_status write_and_show(sp_ctx *ctx, sp_evaluation *e, const char *output, bool json,
                                int argc, char **argv) {
    sp_status st = SP_OK;
    if (output) {
        char *cmdline = cli_command_line(argc, argv);
        if (cmdline)
            sp_plan_set_command(ctx, sp_evaluation_get_yours(e), cmdline);
        free(cmdline);
        if ((st = sp_plan_write(ctx, sp_evaluation_get_yours(e), output)) != SP_OK)
            return st;
    }
    if (cli_is_stdout(output))
        return SP_OK; /* the plan is on stdout */
    if (json) {
        char *text = NULL;
        if ((st = sp_evaluation_to_json(ctx, e, &text)) == SP_OK)
            fputs(text, stdout);
        sp_free(text);
        return st;
    }
    print_comparison(sp_evaluation_get_yours(e), sp_evaluation_get_optimal(e),
                     sp_evaluation_get_gain(e));
    if (output)
        printf("wrote %s\n", output);
    return SP_OK;
}

static int run(int argc, char **argv, const char *command) {
    const char *layout = NULL, *balance = NULL, *parts = NULL, *output = NULL;
    bool json = false;
    uint32_t stages = 0;
    sp_partition_opts opts;
    sp_partition_opts_init(&opts);
    const struct cli_bind binds[] = {
        CLI_STRING(OPT_LAYOUT, &layout),
        CLI_STRING(OPT_BALANCE, &balance),
        CLI_STRING(OPT_PARTS, &parts),
        CLI_U32(OPT_STAGES, &stages, 1, SP_MAX_STAGES),
        CLI_U32(OPT_MICRO_BATCHES, &opts.micro_batches, 1, SP_MAX_MICRO_BATCHES),
        CLI_STRING(OPT_OUTPUT, &output),
        CLI_FLAG(OPT_JSON, &json),
        CLI_BIND_END,
    };
    struct cli_opt_parser p;
    cli_opt_parser_init(&p, command, cmd_evaluate_opts, argc, argv);
    for (int id; (id = cli_opt_parse(&p, &cmd_evaluate_help, binds)) > 0;)
        if (id == OPT_SCHEDULE && sp_schedule_from_name(p.value, &opts.schedule) != SP_OK)
            return cli_usage_error(command,
                                   "--schedule expects gpipe, 1f1b, zb-h1, interleaved, "
                                   "interleaved-zb, zbv or dualpipev, got '%s'",
                                   p.value);
    if (cli_opt_exit(&p) >= 0)
        return cli_opt_exit(&p);
    if (p.n_positional != 1)
        return cli_usage_error(command,
                               p.n_positional ? "expected one PROFILE" : "missing PROFILE");
    if ((layout != NULL) + (balance != NULL) + (parts != NULL) != 1)
        return cli_usage_error(command,
                               "give the split once: --megatron-layout, --balance or --parts");
    if (strcmp(command, "import-plan") == 0 && !output)
        return cli_usage_error(command, "missing -o PLAN (the file to write)");
    const char *inputs[] = {p.positional[0]};
    int clash = cli_check_output_not_input(command, "--output", output, inputs, 1);
    if (!clash)
        clash = cli_one_stdout(command, &output, 1, json);
    if (clash)
        return clash;
    sp_ctx *ctx = NULL;
    if (sp_ctx_create(&ctx) != SP_OK)
        return CLI_EXIT_INTERNAL;
    sp_profile *profile = NULL;
    sp_evaluation *e = NULL;
    size_t *first = NULL, count = 0;
    bool usage = false;
    sp_status st = sp_profile_load(ctx, p.positional[0], &profile);
    if (st == SP_OK)
        st = split_of(ctx, profile, layout, balance, parts, &first, &count, &usage);
    opts.stages = stages;
    opts.allow_empty_stages = layout != NULL; /* Megatron-LM runs a stage with no layer */
    if (st == SP_OK)
        st = sp_evaluate(ctx, profile, &opts, first, count, &e);
    if (st == SP_OK)
        cli_print_warnings(ctx);
    if (st == SP_OK && layout) { /* what Megatron refuses of a layout's placement (the MTP
                                  * layers' virtual stage) is what its export refuses */
        char *back = NULL;
        st = sp_plan_export(ctx, sp_evaluation_get_yours(e), SP_EXPORT_MEGATRON, NULL, &back, NULL);
        sp_free(back);
    }
    if (st == SP_OK)
        st = write_and_show(ctx, e, output, json, argc, argv);
    int code = usage ? CLI_EXIT_USAGE : st == SP_OK ? CLI_EXIT_OK : cli_report(ctx, st, json);
    sp_free(first);
    sp_evaluation_destroy(e);
    sp_profile_destroy(profile);
    sp_ctx_destroy(ctx);
    return code;
}

int cmd_evaluate(int argc, char **argv) {
    return run(argc, argv, "evaluate");
}
int cmd_import_plan(int argc, char **argv) {
    return run(argc, argv, "import-plan");
}

/* cli/cmd_evaluate.c: `stagepart evaluate` and `stagepart import-plan`: the split a user runs
 * today, as a plan: what it costs, and what the optimal plan gains over it. */
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

const struct sp_opt cmd_evaluate_opts[] = {
    {OPT_LAYOUT, "megatron-layout", 0, "<string>",
     "a Megatron-LM --pipeline-model-parallel-layout, e.g. \"Et*8|t*8|t*8|t*8L\"", "Split"},
    {OPT_BALANCE, "balance", 0, "<n,n,...>", "layers per stage (torchgpipe, fairscale)", "Split"},
    {OPT_PARTS, "parts", 0, "<0,a,...,n>", "stage boundaries (DeepSpeed's parts)", "Split"},
    {OPT_STAGES, "stages", 's', "<P>",
     "pipeline stages, when a layout has virtual stages (default: one per segment)", "Split"},
    {OPT_SCHEDULE, "schedule", 0, "<name>", "gpipe, 1f1b (default), zb-h1", "Simulation"},
    {OPT_MICRO_BATCHES, "micro-batches", 'm', "<M>", "micro-batches (default: 4 x stages)",
     "Simulation"},
    {OPT_OUTPUT, "output", 'o', "<file>", "write the split as a plan file (for check)", "Output"},
    {OPT_JSON, "json", 0, NULL, "print the comparison as JSON", "Output"},
    {0, NULL, 0, NULL, NULL, NULL},
};

const struct sp_command_help cmd_evaluate_help = {
    "evaluate",
    "PROFILE (--megatron-layout S | --balance N,N,... | --parts 0,A,...,N) [options]",
    "Evaluate the split you run today and compare it with the optimal plan.",
    "Turns the split into a plan on PROFILE, simulates its schedule, and reports its bottleneck,\n"
    "imbalance and efficiency beside the optimal plan's (same stages, micro-batches and\n"
    "schedule), with the throughput the optimal plan would gain. import-plan does the same and\n"
    "writes the split as a plan file that `stagepart check` can gate.",
    "  stagepart evaluate model.json --megatron-layout \"Et*8|t*8|t*8|t*8L\"\n"
    "  stagepart evaluate model.json --balance 9,9,9,8 --micro-batches 32\n"
    "  stagepart import-plan model.json --parts 0,9,18,27,35 -o current-plan.json\n",
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
            sp_usage_error("evaluate", "--%s expects numbers separated by commas, got '%s'", opt,
                           text);
            return false;
        }
        v[(*n)++] = (size_t)x;
        c = *end ? end + 1 : end;
    }
    if (!v || !*n) {
        free(v);
        sp_usage_error("evaluate", "--%s expects numbers separated by commas, got '%s'", opt, text);
        return false;
    }
    *out = v;
    return true;
}

static void print_comparison(const sp_plan *yours, const sp_plan *best) {
    const sp_plan_summary *a = sp_plan_get_summary(yours), *b = sp_plan_get_summary(best);
    double gain =
        b->schedule.iteration_ms > 0 ? a->schedule.iteration_ms / b->schedule.iteration_ms - 1 : 0;
    printf("%s: %u stages%s, %s, %u micro-batches\n\n", sp_plan_model(yours), a->stages,
           a->chunks > 1 ? " (interleaved)" : "", sp_schedule_name(a->schedule.schedule),
           a->micro_batches);
    printf("%-10s %14s %10s %12s %10s %14s\n", "", "bottleneck ms", "at stage", "imbalance",
           "efficiency", "iteration ms");
    printf("%-10s %14.3f %10u %12.3f %9.1f%% %14.3f\n", "your split", a->bottleneck_ms,
           a->bottleneck_stage, a->imbalance, 100 * a->schedule.efficiency,
           a->schedule.iteration_ms);
    printf("%-10s %14.3f %10u %12.3f %9.1f%% %14.3f\n", "optimal", b->bottleneck_ms,
           b->bottleneck_stage, b->imbalance, 100 * b->schedule.efficiency,
           b->schedule.iteration_ms);
    printf("\nyour split: efficiency %.0f%%, bottleneck stage %u; optimal: %.0f%%, %+.0f%% "
           "throughput\n",
           100 * a->schedule.efficiency, a->bottleneck_stage, 100 * b->schedule.efficiency,
           100 * gain);
}

static int run(int argc, char **argv, const char *command) {
    const char *layout = NULL, *balance = NULL, *parts = NULL, *output = NULL;
    bool json = false;
    uint64_t v = 0, stages = 0;
    sp_partition_opts opts;
    sp_partition_opts_init(&opts);
    struct sp_opt_parser p;
    sp_opt_parser_init(&p, command, cmd_evaluate_opts, argc, argv);
    for (int id; (id = sp_opt_next(&p)) != SP_OPT_DONE;) {
        switch (id) {
        case SP_OPT_ERROR:
            return SP_EXIT_USAGE;
        case SP_OPT_HELP:
            sp_print_command_help(stdout, &cmd_evaluate_help, cmd_evaluate_opts);
            return SP_EXIT_OK;
        case OPT_LAYOUT:
            layout = p.value;
            break;
        case OPT_BALANCE:
            balance = p.value;
            break;
        case OPT_PARTS:
            parts = p.value;
            break;
        case OPT_STAGES:
            if (!sp_opt_uint(&p, 1, SP_MAX_STAGES, &stages))
                return SP_EXIT_USAGE;
            break;
        case OPT_SCHEDULE:
            if (sp_schedule_from_name(p.value, &opts.schedule) != SP_OK ||
                opts.schedule == SP_SCHEDULE_INTERLEAVED)
                return sp_usage_error(command, "--schedule expects gpipe, 1f1b or zb-h1, got '%s'",
                                      p.value);
            break;
        case OPT_MICRO_BATCHES:
            if (!sp_opt_uint(&p, 1, SP_MAX_MICRO_BATCHES, &v))
                return SP_EXIT_USAGE;
            opts.micro_batches = (uint32_t)v;
            break;
        case OPT_OUTPUT:
            output = p.value;
            break;
        case OPT_JSON:
            json = true;
            break;
        }
    }
    if (p.n_positional != 1)
        return sp_usage_error(command, p.n_positional ? "expected one PROFILE" : "missing PROFILE");
    if ((layout != NULL) + (balance != NULL) + (parts != NULL) != 1)
        return sp_usage_error(command,
                              "give the split once: --megatron-layout, --balance or --parts");
    if (strcmp(command, "import-plan") == 0 && !output)
        return sp_usage_error(command, "missing -o PLAN (the file to write)");
    const char *inputs[] = {p.positional[0]};
    int clash = sp_check_output_not_input(command, "--output", output, inputs, 1);
    if (clash)
        return clash;
    sp_ctx *ctx = NULL;
    if (sp_ctx_create(&ctx) != SP_OK)
        return SP_EXIT_INTERNAL;
    sp_profile *profile = NULL;
    sp_plan *yours = NULL, *best = NULL;
    size_t *first = NULL, count = 0, *list = NULL, n_list = 0;
    int code = SP_EXIT_OK;
    sp_status st = sp_profile_load(ctx, p.positional[0], &profile);
    if (st != SP_OK)
        goto report;
    size_t n = sp_profile_layer_count(profile);
    if (layout) {
        if ((st = sp_megatron_layout_split(ctx, profile, layout, &first, &count)) != SP_OK)
            goto report;
    } else {
        if (!parse_list(balance ? "balance" : "parts", balance ? balance : parts, &list, &n_list)) {
            code = SP_EXIT_USAGE;
            goto out;
        }
        count = balance ? n_list : n_list - 1;
        first = calloc(count ? count : 1, sizeof *first);
        if (!first) {
            code = SP_EXIT_INTERNAL;
            goto out;
        }
        if (balance) {
            size_t at = 0;
            for (size_t s = 0; s < count; s++) {
                first[s] = at;
                at += list[s];
            }
            if (at != n) {
                code = sp_usage_error(
                    command, "--balance adds up to %zu layers; the profile has %zu", at, n);
                goto out;
            }
        } else {
            if (n_list < 2 || list[0] != 0 || list[n_list - 1] != n) {
                code = sp_usage_error(command,
                                      "--parts must run from 0 to the layer count (%zu), got '%s'",
                                      n, parts);
                goto out;
            }
            for (size_t s = 0; s < count; s++)
                first[s] = list[s];
        }
    }
    if (stages && count % stages) {
        code = sp_usage_error(command, "%zu segments cannot be %llu stages of equal chunk count",
                              count, (unsigned long long)stages);
        goto out;
    }
    opts.stages = (uint32_t)(stages ? stages : count);
    opts.chunks = (uint32_t)(count / opts.stages);
    if ((st = sp_plan_from_split(ctx, profile, &opts, first, count, &yours)) != SP_OK)
        goto report;
    sp_print_warnings(ctx);
    sp_partition_opts best_opts = opts;
    best_opts.micro_batches = sp_plan_get_summary(yours)->micro_batches;
    best_opts.solver = opts.chunks > 1 ? SP_SOLVER_UNIFORM : SP_SOLVER_DP;
    if ((st = sp_partition(ctx, profile, &best_opts, &best)) != SP_OK)
        goto report;
    if (output) {
        char *cmdline = sp_command_line(argc, argv);
        if (cmdline)
            sp_plan_set_command(ctx, yours, cmdline);
        free(cmdline);
        if ((st = sp_plan_write(ctx, yours, output)) != SP_OK)
            goto report;
    }
    if (json) {
        const sp_plan_summary *a = sp_plan_get_summary(yours), *b = sp_plan_get_summary(best);
        printf(
            "{\n\t\"format\":\t\"stagepart-evaluation\",\n\t\"version\":\t1,\n"
            "\t\"yours\":\t{\"bottleneck_ms\": %.17g, \"bottleneck_stage\": %u, \"imbalance\": "
            "%.17g, \"iteration_ms\": %.17g, \"efficiency\": %.17g},\n"
            "\t\"optimal\":\t{\"bottleneck_ms\": %.17g, \"bottleneck_stage\": %u, \"imbalance\": "
            "%.17g, \"iteration_ms\": %.17g, \"efficiency\": %.17g},\n"
            "\t\"throughput_gain\":\t%.17g\n}\n",
            a->bottleneck_ms, a->bottleneck_stage, a->imbalance, a->schedule.iteration_ms,
            a->schedule.efficiency, b->bottleneck_ms, b->bottleneck_stage, b->imbalance,
            b->schedule.iteration_ms, b->schedule.efficiency,
            b->schedule.iteration_ms > 0 ? a->schedule.iteration_ms / b->schedule.iteration_ms - 1
                                         : 0);
    } else {
        print_comparison(yours, best);
        if (output)
            printf("wrote %s\n", output);
    }
    goto out;
report:
    code = sp_report(ctx, st, json);
out:
    if (layout)
        sp_free(first);
    else
        free(first);
    free(list);
    sp_plan_destroy(yours);
    sp_plan_destroy(best);
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

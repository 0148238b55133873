/* cli/cmd_check.c: `stagepart check`: the CI gate's command. Loads the committed plan, the fresh
 * profile and what else is given, runs sp_check (check/) and prints its criteria: a line each,
 * JSON, GitHub annotations, JUnit. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

enum {
    OPT_PLAN = 1,
    OPT_PROFILE,
    OPT_MAX_IMBALANCE,
    OPT_MAX_REGRESSION,
    OPT_MAX_STALE,
    OPT_REPORT,
    OPT_MAX_ERROR,
    OPT_JUNIT,
    OPT_JSON,
    OPT_DEVICES,
    OPT_LINKS,
};

const struct cli_opt cmd_check_opts[] = {
    {OPT_PLAN, "plan", 0, "<file>", "the committed plan (the same as the first argument)",
     "Inputs"},
    {OPT_PROFILE, "profile", 0, "<file>",
     "a freshly measured profile of the same model (the same as the second argument)", "Inputs"},
    {OPT_REPORT, "report", 0, "<file>", "a run report (stagepart run) to gate as well", "Inputs"},
    {OPT_DEVICES, "devices", 0, "<file>",
     "the stagepart-devices file the plan was made with (needed when the plan names devices and "
     "the profile has none)",
     "Inputs"},
    {OPT_LINKS, "links", 0, "<file>",
     "the stagepart-links file the plan was made with (needed when the plan has transfers)",
     "Inputs"},
    {OPT_MAX_IMBALANCE, "max-imbalance", 0, "<x>",
     "fail when bottleneck / mean stage time exceeds x (default: 1.10)", "Limits"},
    {OPT_MAX_REGRESSION, "max-regression", 0, "<r>",
     "fail when the predicted iteration time grew by more than r (default: 0.05 = 5%)", "Limits"},
    {OPT_MAX_STALE, "max-stale", 0, "<s>",
     "fail when a new plan would be more than s faster (default: 0.05 = 5%)", "Limits"},
    {OPT_MAX_ERROR, "max-prediction-error", 0, "<e>",
     "with --report: fail when measured and predicted iteration differ by more than e "
     "(default: 0.15)",
     "Limits"},
    {OPT_JUNIT, "junit", 0, "<file>", "also write JUnit XML (one test case per criterion)",
     "Output"},
    {OPT_JSON, "json", 0, NULL, "print the result as JSON", "Output"},
    {0, NULL, 0, NULL, NULL, NULL},
};

const struct cli_command_help cmd_check_help = {
    "check",
    "PLAN PROFILE [--max-imbalance X] [--max-regression R] [--max-stale S] [options]",
    "Gate a committed plan in CI against a freshly measured profile.",
    "Matches the plan's layers to the profile by name (a layer added, removed or renamed fails\n"
    "the check and is named), recomputes the stage times, imbalance and the simulated iteration\n"
    "time under the plan's schedule, compares them with the plan's recorded prediction, and\n"
    "partitions the new profile again to see what a new plan would gain. A plan made for\n"
    "devices or links is re-evaluated on the same ones (--devices, --links), each stage on\n"
    "the device the plan gave it; a replicated plan (partition --gpus N) keeps its replicas\n"
    "(--links required) and is compared with the replicated search on as many GPUs. Prints one\n"
    "line per criterion, the imbalance beside the optimal plan's. Exit 1 when a criterion the\n"
    "plan could pass fails (it regressed, is off balance or stale); exit 3 when the only\n"
    "failures are gates no plan of its stage count can meet (--max-imbalance below the\n"
    "optimal plan's imbalance). With\n"
    "GITHUB_ACTIONS=true failures are also printed as ::error annotations. docs/ci.md has\n"
    "complete GitHub Actions and GitLab CI jobs.",
    "  stagepart check plan.json new-profile.json\n"
    "  stagepart check plan.json p.json --max-imbalance 1.05 --junit check.xml\n"
    "  stagepart check plan.json p.json --devices devices.json --links links.json\n"
    "  stagepart check --plan plan.json --profile p.json   # the same, files named\n",
    .exits = CLI_EXITS_CHECK_FAILED | CLI_EXITS_INFEASIBLE | CLI_EXITS_UNAVAILABLE,
};

/* GitHub Actions annotations: one line each, so newlines and percent signs are escaped */
static void print_annotations(const sp_check_result *r) {
    for (size_t i = 0; i < sp_check_get_criterion_count(r); i++) {
        const sp_check_criterion *c = sp_check_get_criterion(r, i);
        if (c->passed || c->skipped)
            continue;
        printf("::error title=stagepart check: %s::", c->name);
        for (const char *m = c->message; *m; m++)
            fputs(*m == '\n' ? "%0A" : *m == '%' ? "%25" : (char[]){*m, 0}, stdout);
        putchar('\n');
    }
}

/* the plan and the profile as the other commands take files, in order (positional files fill
 * what --plan and --profile left open); -1 to go on, else the exit code */
static int take_files(const struct cli_opt_parser *p, const char **plan_path,
                      const char **profile_path) {
    const char **slots[] = {plan_path, profile_path};
    for (int k = 0, slot = 0; k < p->n_positional; k++, slot++) {
        while (slot < 2 && *slots[slot])
            slot++;
        if (slot == 2)
            return cli_usage_error("check",
                                   "unexpected argument '%s': the plan and the profile are given",
                                   p->positional[k]);
        *slots[slot] = p->positional[k];
    }
    if (!*plan_path || !*profile_path)
        return cli_usage_error("check", "missing %s",
                               *plan_path      ? "PROFILE"
                               : *profile_path ? "PLAN"
                                               : "PLAN and PROFILE");
    return -1;
}

/* one line per criterion, then the count */
static void print_result(const sp_check_result *r) {
    size_t n = sp_check_get_criterion_count(r), failed = sp_check_get_failed_count(r);
    for (size_t i = 0; i < n; i++) {
        const sp_check_criterion *c = sp_check_get_criterion(r, i);
        printf("%s  %-18s %s\n",
               c->skipped  ? "SKIP"
               : c->passed ? "PASS"
                           : "FAIL",
               c->name, c->message);
    }
    size_t gate = sp_check_get_unattainable_count(r);
    printf("stagepart check: %zu passed, %zu failed%s\n", n - failed, failed,
           failed && gate == failed ? " (only gates no plan of this stage count can meet: exit 3)"
                                    : "");
}

int cmd_check(int argc, char **argv) {
    const char *plan_path = NULL, *profile_path = NULL, *report_path = NULL, *junit = NULL;
    const char *devices_path = NULL, *links_path = NULL;
    sp_check_opts opts;
    sp_check_opts_init(&opts);
    bool json = false;
    const struct cli_bind binds[] = {
        CLI_STRING(OPT_PLAN, &plan_path),
        CLI_STRING(OPT_PROFILE, &profile_path),
        CLI_STRING(OPT_REPORT, &report_path),
        CLI_STRING(OPT_JUNIT, &junit),
        CLI_STRING(OPT_DEVICES, &devices_path),
        CLI_STRING(OPT_LINKS, &links_path),
        CLI_FLAG(OPT_JSON, &json),
        CLI_DOUBLE(OPT_MAX_IMBALANCE, &opts.max_imbalance, 1.0, 1e6, "a number >= 1"),
        CLI_DOUBLE(OPT_MAX_REGRESSION, &opts.max_regression, 0.0, 1e6, "a number >= 0"),
        CLI_DOUBLE(OPT_MAX_STALE, &opts.max_stale, 0.0, 1e6, "a number >= 0"),
        CLI_DOUBLE(OPT_MAX_ERROR, &opts.max_prediction_error, 0.0, 1e6, "a number >= 0"),
        CLI_BIND_END,
    };
    struct cli_opt_parser p;
    cli_opt_parser_init(&p, "check", cmd_check_opts, argc, argv);
    while (cli_opt_parse(&p, &cmd_check_help, binds) > 0) /* every option is bound */
        ;
    if (cli_opt_exit(&p) >= 0)
        return cli_opt_exit(&p);
    int code = take_files(&p, &plan_path, &profile_path);
    if (code >= 0)
        return code;
    const char *inputs[] = {plan_path, profile_path, report_path, devices_path, links_path};
    int clash = cli_check_output_not_input("check", "--junit", junit, inputs, 5);
    if (!clash)
        clash = cli_one_stdout("check", &junit, 1, json);
    if (clash)
        return clash;
    sp_ctx *ctx = NULL;
    if (sp_ctx_create(&ctx) != SP_OK)
        return CLI_EXIT_INTERNAL;
    sp_plan *plan = NULL;
    sp_profile *profile = NULL;
    sp_devices *devices = NULL;
    sp_links *links = NULL;
    sp_check_result *r = NULL;
    sp_run_report_summary report;
    char *text = NULL;
    sp_status st;
    if ((st = sp_plan_load(ctx, plan_path, &plan)) != SP_OK ||
        (st = sp_profile_load(ctx, profile_path, &profile)) != SP_OK ||
        (report_path && (st = sp_run_report_load(ctx, report_path, &report)) != SP_OK) ||
        (devices_path && (st = sp_devices_load(ctx, devices_path, &devices)) != SP_OK) ||
        (links_path && (st = sp_links_load(ctx, links_path, &links)) != SP_OK))
        goto out;
    opts.devices = devices;
    opts.links = links;
    opts.report = report_path ? &report : NULL;
    opts.plan_name = plan_path;
    if ((st = sp_check(ctx, plan, profile, &opts, &r)) != SP_OK)
        goto out;
    if (json) {
        if ((st = sp_check_to_json(ctx, r, &text)) != SP_OK)
            goto out;
        fputs(text, stdout);
    } else if (!cli_is_stdout(junit)) {
        print_result(r);
    }
    const char *gha = getenv("GITHUB_ACTIONS");
    if (gha && strcmp(gha, "true") == 0 && !cli_is_stdout(junit))
        print_annotations(r);
    if (junit && (st = sp_check_write_junit(ctx, r, junit)) != SP_OK)
        goto out;
out:;
    /* a plan that misses only gates no plan can meet has not failed: the gate is infeasible */
    size_t fails = r ? sp_check_get_failed_count(r) : 0;
    code = st != SP_OK                                            ? cli_report(ctx, st, json && !r)
           : fails && sp_check_get_unattainable_count(r) == fails ? CLI_EXIT_INFEASIBLE
           : fails                                                ? CLI_EXIT_CHECK_FAILED
                                                                  : CLI_EXIT_OK;
    sp_free(text);
    sp_check_destroy(r);
    sp_plan_destroy(plan);
    sp_profile_destroy(profile);
    sp_devices_destroy(devices);
    sp_links_destroy(links);
    sp_ctx_destroy(ctx);
    return code;
}

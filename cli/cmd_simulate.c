/* cli/cmd_simulate.c: `stagepart simulate`: what efficiency a plan reaches under a schedule,
 * and why (per-device busy and idle time, in-flight activations, the timeline). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

enum { OPT_SCHEDULE = 1, OPT_MICRO_BATCHES, OPT_ORDER, OPT_JSON, OPT_TRACE, OPT_SVG };

const struct cli_opt cmd_simulate_opts[] = {
    {OPT_SCHEDULE, "schedule", 0, "<name>",
     "gpipe, 1f1b, zb-h1, interleaved, interleaved-zb, zbv, dualpipev, or pipedream or 2bw "
     "(without flushes: the steady state) (default: the plan's, else 1f1b)",
     "Simulation"},
    {OPT_ORDER, "order", 0, "<file.csv>",
     "simulate this op order instead (torch's schedule CSV: one row per rank, actions like 1F0, "
     "1I0, 1W0, 1B0; as export --to torch-schedule-csv writes it)",
     "Simulation"},
    {OPT_MICRO_BATCHES, "micro-batches", 'm', "<M>",
     "micro-batches per iteration (default: the plan's)", "Simulation"},
    {OPT_JSON, "json", 0, NULL, "print the result as JSON instead of the table", "Output"},
    {OPT_TRACE, "trace", 0, "<file>", "write the timeline as Chrome trace JSON (Perfetto)",
     "Output"},
    {OPT_SVG, "svg", 0, "<file>", "write the timeline as an SVG picture", "Output"},
    {0, NULL, 0, NULL, NULL, NULL},
};

const struct cli_command_help cmd_simulate_help = {
    "simulate",
    "PLAN [--schedule S] [--micro-batches M] [options]",
    "Simulate a plan's pipeline schedule exactly and report its efficiency.",
    "Each device runs its ops in the schedule's order; an op starts when its device is free and\n"
    "its inputs have arrived (a stage's send_ms is added when the input comes from another\n"
    "device). Reports the iteration time, the bubble fraction (1 - busy / (devices x\n"
    "iteration)), and per device the busy and idle time and the peak number of micro-batches\n"
    "whose activations are held. For equal stages the closed form is printed beside the\n"
    "simulated value. The zero-bubble schedules (zb-h1, interleaved-zb, zbv, dualpipev) need\n"
    "wgrad_ms in the profile; interleaved ones a plan made with --chunks and M a multiple of\n"
    "max(1, M/P); zbv and dualpipev a plan partitioned for them (2 chunks per device, V-shape),\n"
    "dualpipev M >= 2P. docs/schedules.md has every order.",
    "  stagepart simulate plan.json\n"
    "  stagepart simulate plan.json --schedule gpipe --micro-batches 64\n"
    "  stagepart simulate plan.json --svg timeline.svg --trace timeline.json\n"
    "  stagepart simulate plan.json --order schedule.csv\n",
    .exits = CLI_EXITS_UNAVAILABLE,
};

static void print_table(const sp_sim *sim, const char *model) {
    const sp_sim_summary *m = sp_sim_get_summary(sim);
    printf("%s: %s, %u %s", model,
           m->given_order ? "the given order" : sp_schedule_name(m->schedule), m->devices,
           cli_noun(m->devices, "device", "devices"));
    if (m->chunks > 1)
        printf(" x %u chunks", m->chunks);
    printf(", %u %s, %llu %s\n\n", m->micro_batches,
           cli_noun(m->micro_batches, "micro-batch", "micro-batches"), (unsigned long long)m->ops,
           cli_noun(m->ops, "op", "ops"));
    printf("iteration   %.3f ms   bubble %.2f%%   efficiency %.2f%%\n", m->iteration_ms,
           100 * m->bubble_fraction, 100 * m->efficiency);
    if (m->schedule == SP_SCHEDULE_PIPEDREAM || m->schedule == SP_SCHEDULE_2BW)
        printf("steady state: no flush; the %u micro-batches completing after the first %u of a "
               "run of %u (first and last ms below: the whole run)\n",
               m->micro_batches, 2 * m->devices, m->micro_batches + 3 * m->devices);
    if (m->equal_stages && isfinite(m->closed_form_ms))
        printf("closed form %.3f ms for equal stages (simulated %.3f ms)\n", m->closed_form_ms,
               m->iteration_ms);
    printf("ideal       %.3f ms (the busiest device's work)\n\n", m->ideal_ms);
    printf("device %11s %11s %11s %11s %9s %12s\n", "busy ms", "idle ms", "first ms", "last ms",
           "in flight", "peak memory");
    for (size_t d = 0; d < sp_sim_get_device_count(sim); d++) {
        const sp_sim_device *dv = sp_sim_get_device(sim, d);
        char mem[16];
        printf("%6zu %11.3f %11.3f %11.3f %11.3f %9u %12s\n", d, dv->busy_ms, dv->idle_ms,
               dv->first_start_ms, dv->last_end_ms, dv->peak_inflight,
               sp_format_bytes(dv->peak_memory_bytes, mem, sizeof mem));
    }
    printf("\nassumes one op at a time per device in a fixed order, op times independent of\n"
           "contention and of M, and transfers as pure delays (send_ms)\n");
}

int cmd_simulate(int argc, char **argv) {
    sp_sim_opts opts;
    sp_sim_opts_init(&opts);
    bool json = false, schedule_given = false;
    const char *trace = NULL, *svg = NULL;
    const struct cli_bind binds[] = {
        CLI_U32(OPT_MICRO_BATCHES, &opts.micro_batches, 1, SP_MAX_MICRO_BATCHES),
        CLI_STRING(OPT_ORDER, &opts.order_path),
        CLI_FLAG(OPT_JSON, &json),
        CLI_STRING(OPT_TRACE, &trace),
        CLI_STRING(OPT_SVG, &svg),
        CLI_BIND_END,
    };
    struct cli_opt_parser p;
    cli_opt_parser_init(&p, "simulate", cmd_simulate_opts, argc, argv);
    for (int id; (id = cli_opt_parse(&p, &cmd_simulate_help, binds)) > 0;) {
        switch (id) {
        case OPT_SCHEDULE:
            if (sp_schedule_from_name(p.value, &opts.schedule) != SP_OK)
                return cli_usage_error("simulate",
                                       "--schedule expects gpipe, 1f1b, zb-h1, interleaved, "
                                       "interleaved-zb, zbv, dualpipev, pipedream or 2bw, got "
                                       "'%s'",
                                       p.value);
            schedule_given = true;
            break;
        }
    }
    if (cli_opt_exit(&p) >= 0)
        return cli_opt_exit(&p);
    if (p.n_positional != 1)
        return cli_usage_error("simulate", p.n_positional ? "expected one PLAN" : "missing PLAN");
    const char *inputs[] = {p.positional[0]};
    int clash = cli_check_output_not_input("simulate", "--trace", trace, inputs, 1);
    if (!clash)
        clash = cli_check_output_not_input("simulate", "--svg", svg, inputs, 1);
    const char *outputs[] = {trace, svg};
    if (!clash)
        clash = cli_one_stdout("simulate", outputs, 2, json);
    if (clash)
        return clash;
    opts.keep_ops = trace || svg;
    sp_ctx *ctx = NULL;
    if (sp_ctx_create(&ctx) != SP_OK)
        return CLI_EXIT_INTERNAL;
    sp_plan *plan = NULL;
    sp_sim *sim = NULL;
    int code = CLI_EXIT_OK;
    sp_status st = sp_plan_load(ctx, p.positional[0], &plan);
    if (st == SP_OK && !schedule_given) {
        const sp_plan_summary *m = sp_plan_get_summary(plan);
        opts.schedule = m->schedule.present              ? m->schedule.schedule
                        : m->chunk_layout == SP_CHUNKS_V ? SP_SCHEDULE_ZBV
                        : m->chunks > 1                  ? SP_SCHEDULE_INTERLEAVED
                                                         : SP_SCHEDULE_1F1B;
    }
    if (st == SP_OK)
        st = sp_simulate(ctx, plan, &opts, &sim);
    if (st == SP_OK && trace)
        st = sp_sim_write_trace(ctx, sim, trace);
    if (st == SP_OK && svg)
        st = sp_sim_write_svg(ctx, sim, NULL, svg);
    if (st != SP_OK) {
        code = cli_report(ctx, st, json);
        goto out;
    }
    if (json) {
        char *text = NULL;
        if ((st = sp_sim_to_json(ctx, sim, &text)) != SP_OK) {
            code = cli_report(ctx, st, json);
            goto out;
        }
        fputs(text, stdout);
        sp_free(text);
    } else if (!cli_is_stdout(trace) && !cli_is_stdout(svg)) {
        print_table(sim, sp_plan_get_model(plan));
        if (trace)
            printf("wrote       %s (open in https://ui.perfetto.dev or chrome://tracing)\n", trace);
        if (svg)
            printf("wrote       %s\n", svg);
    }
out:
    sp_sim_destroy(sim);
    sp_plan_destroy(plan);
    sp_ctx_destroy(ctx);
    return code;
}

/* cli/cmd_partition.c: `stagepart partition`: profile in, stage plan out, with the comparison
 * against an even split that tells users what balancing gains them. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

enum {
    OPT_STAGES = 1,
    OPT_MICRO_BATCHES,
    OPT_OBJECTIVE,
    OPT_SOLVER,
    OPT_MEMORY_LIMIT,
    OPT_OUTPUT,
    OPT_JSON,
    OPT_SCHEDULE,
    OPT_DEVICES,
    OPT_LINKS,
    OPT_TARGET,
    OPT_COMM,
    OPT_CHUNKS,
    OPT_TIME_LIMIT,
    OPT_RECOMPUTE,
    OPT_PLACEMENT,
    OPT_ALLOW_EMPTY,
    OPT_GPUS,
    OPT_GLOBAL_BATCH,
    OPT_FRAMEWORK,
    OPT_REPLICA_COST,
    OPT_ACTIVATION_RATIO,
};

const struct cli_opt cmd_partition_opts[] = {
    {OPT_STAGES, "stages", 's', "<P>", "number of pipeline stages (default: 4)", "Plan"},
    {OPT_MICRO_BATCHES, "micro-batches", 'm', "<M|auto>",
     "micro-batches per iteration (default: 4 x stages); auto: the smallest M reaching "
     "--target-efficiency",
     "Plan"},
    {OPT_TARGET, "target-efficiency", 0, "<x>",
     "efficiency --micro-batches auto aims for, in (0, 1) (default: 0.9)", "Plan"},
    {OPT_OBJECTIVE, "objective", 0, "<name>",
     "bottleneck (default), variance, iteration; range or deviation with --solver ilp; see "
     "docs/partitioning.md",
     "Plan"},
    {OPT_SOLVER, "solver", 0, "<name>",
     "dp (default, exact; with --chunks the interleaved search), ilp (GLPK: recomputation, "
     "placement, range, deviation), uniform or parameters (baselines)",
     "Plan"},
    {OPT_SCHEDULE, "schedule", 0, "<name>",
     "schedule to simulate the plan with: gpipe, 1f1b (default), zb-h1; interleaved or "
     "interleaved-zb with --chunks; zbv or dualpipev (2 chunks per device, V-shape, "
     "partitioned exactly); pipedream or 2bw (without flushes: the steady state, stashed "
     "weight versions in the memory model); compare (every flushing schedule that fits, in one "
     "table)",
     "Plan"},
    {OPT_TIME_LIMIT, "time-limit", 0, "<s>",
     "ilp solver and the interleaved search: stop after s seconds with the best plan found and "
     "its gap (default: 30)",
     "Plan"},
    {OPT_RECOMPUTE, "recompute", 0, "<auto|off>",
     "ilp solver: choose which layers recompute their forward instead of keeping saved_bytes "
     "(default: off)",
     "Constraints"},
    {OPT_CHUNKS, "chunks", 0, "<V>",
     "V model chunks per device for the interleaved schedules, chunk k on device k mod P "
     "(balanced exactly by the default solver; --solver uniform: equal chunks)",
     "Plan"},
    {OPT_MEMORY_LIMIT, "memory-limit", 0, "<bytes>",
     "per-stage memory cap, e.g. 80GB or 80GiB (default: none)", "Constraints"},
    {OPT_DEVICES, "devices", 0, "<file>",
     "stagepart-devices file: stage s runs on device s (or as --placement search chooses), at its "
     "speed, within its memory "
     "(default: the profile's devices, else identical ones)",
     "Constraints"},
    {OPT_PLACEMENT, "placement", 0, "<order|search>",
     "order (default): stage s on device s; search (ilp solver): choose each stage's device "
     "from --devices by speed, memory and the --links between consecutive stages",
     "Constraints"},
    {OPT_ALLOW_EMPTY, "allow-empty-stages", 0, NULL,
     "when the profile has fewer places to cut than stages - 1, leave the extra stages empty "
     "(first in the pipeline; Megatron-LM runs them) instead of failing",
     "Constraints"},
    {OPT_LINKS, "links", 0, "<file>",
     "stagepart-links file: each boundary's transfer time (send_ms)", "Constraints"},
    {OPT_FRAMEWORK, "framework", 0, "<name>",
     "megatron: cut only where Megatron-LM's layout can (never inside the embedding group, the "
     "MTP layers or the output and loss group), so export --to megatron takes the plan; any "
     "(default): wherever the profile allows",
     "Constraints"},
    {OPT_COMM, "comm", 0, "<model>",
     "overlap (default: transfers delay the schedule, not the stages) or blocking (transfers "
     "add to both stages' times)",
     "Constraints"},
    {OPT_GPUS, "gpus", 0, "<N>",
     "alone: PipeDream's planner, the stage count, cuts and data-parallel replicas of each "
     "stage on N GPUs, exactly (least bottleneck share, then fewest stages, then fewest devices; "
     "needs --links over the N GPUs; gpipe, 1f1b, pipedream or 2bw). With --global-batch: "
     "every split of N GPUs into pipeline stages x data-parallel replicas of the whole "
     "pipeline, each with its exact plan, simulated iteration and gradient all-reduce, in one "
     "table; -o writes the best split's plan",
     "Parallelism"},
    {OPT_REPLICA_COST, "replica-cost", 0, "<ring|pipedream>",
     "--gpus alone: how a stage's all-reduce is charged. ring (default): over the links, "
     "2 (r-1)/r x bytes / bandwidth + latency; pipedream (with --schedule pipedream or 2bw): "
     "PipeDream's planner's 4 (r-1)/r x bytes / bandwidth. Under pipedream and 2bw either is "
     "added to the compute, once per micro-batch",
     "Parallelism"},
    {OPT_ACTIVATION_RATIO, "activation-ratio", 0, "<R>",
     "with --replica-cost pipedream: PipeDream's planner's --activation_compression_ratio, each "
     "stage's time at least its activation transfers, 2 x bytes / (bandwidth x replicas) / R "
     "(input of every stage but the first, output of every stage but the first and the last); "
     "an exhaustive search, no --memory-limit",
     "Parallelism"},
    {OPT_GLOBAL_BATCH, "global-batch", 0, "<B>",
     "samples per training step for --gpus: each split runs B / (replicas x the profile's "
     "micro_batch_size) micro-batches",
     "Parallelism"},
    {OPT_OUTPUT, "output", 'o', "<file>", "write the plan JSON to <file> (atomically)", "Output"},
    {OPT_JSON, "json", 0, NULL, "print the plan JSON on stdout instead of the table", "Output"},
    {0, NULL, 0, NULL, NULL, NULL},
};

const struct cli_command_help cmd_partition_help = {
    "partition",
    "PROFILE [--stages P] [options]",
    "Cut a profile's layer chain into P contiguous pipeline stages.",
    "Stage time is the sum of fwd_ms + bwd_ms of its layers. The default objective, bottleneck,\n"
    "finds the smallest possible largest stage time (exact), and among the plans reaching it the\n"
    "one with the smallest stage-time variance. --objective variance minimizes variance alone,\n"
    "which can lose throughput; --objective iteration minimizes (M-1) x bottleneck + the sum of\n"
    "stage times. zbv and dualpipev cut 2P chunks, V-shape: the bottleneck is the largest\n"
    "device load (its two chunks), then balanced chunks; --objective iteration there keeps the\n"
    "least simulated iteration over device-load caps up to 25% above the least bottleneck.\n"
    "--chunks V (interleaved): the least largest chunk, then the least largest device load\n"
    "(the sum of its V chunks), then the most balanced chunks, proven by an exact search (or\n"
    "its gap at --time-limit).\n"
    "Under --memory-limit, stage s of P holds its memory_bytes plus its saved_bytes times the\n"
    "micro-batches in flight under the schedule (1F1B: min(P - s, M); GPipe: M). Layers with\n"
    "\"cut_after\": false are never followed by a stage boundary.",
    "  stagepart partition samples/profiles/llama3-8b.json --stages 4\n"
    "  stagepart partition model.json -s 8 --memory-limit 80GB -o plan.json\n"
    "  stagepart partition model.json -s 8 --solver uniform --json\n"
    "  stagepart partition model.json -s 8 --chunks 2 --schedule interleaved\n"
    "  stagepart partition model.json -s 4 -m 16 --schedule compare\n"
    "  stagepart partition model.json --gpus 8 --links links.json\n"
    "  stagepart partition model.json --gpus 8 --global-batch 256 --links links.json\n",
    .exits = CLI_EXITS_INFEASIBLE | CLI_EXITS_UNAVAILABLE,
};

/* what the solver proved, as the heading says it */
static const char *guarantee_words(const sp_plan_summary *m, char *buf, size_t size) {
    switch (m->guarantee) {
    case SP_GUARANTEE_EXACT:
    case SP_GUARANTEE_PROVEN:
        return ", optimal";
    case SP_GUARANTEE_BOUNDED:
        snprintf(buf, size, ", the best found, %.2f%% gap to its proven bound", 100 * m->mip_gap);
        return buf;
    case SP_GUARANTEE_SEARCH:
        return ", the best of a search: not proven optimal";
    default:
        return "";
    }
}

/* one line per stage, its device's share of the bottleneck as a bar */
static void print_stages(const sp_plan *plan, const sp_plan_summary *m) {
    size_t namew = 6, K = sp_plan_get_stage_count(plan);
    for (size_t s = 0; s < K; s++) {
        const sp_stage *st = sp_plan_get_stage(plan, s);
        size_t w = strlen(st->first_name) + strlen(st->last_name) + 4;
        if (w > namew)
            namew = w;
    }
    if (namew > 48)
        namew = 48;
    printf("stage  %-*s %6s %10s %10s %10s %10s  share of bottleneck\n", (int)namew, "layers",
           "count", "fwd ms", "bwd ms", "time ms", "memory");
    for (size_t s = 0; s < K; s++) {
        const sp_stage *st = sp_plan_get_stage(plan, s);
        char range[256], mem[16], b[21], first[64], last[64];
        size_t half = (namew - 4) / 2; /* too long: each name cut, both still there */
        bool cut = strlen(st->first_name) + strlen(st->last_name) + 4 > namew;
        if (!st->layer_count)
            snprintf(range, sizeof range, "(empty)");
        else if (st->layer_count == 1)
            snprintf(range, sizeof range, "%s", st->first_name);
        else
            snprintf(range, sizeof range, "%s .. %s",
                     cut ? cli_fit(first, sizeof first, st->first_name, half) : st->first_name,
                     cut ? cli_fit(last, sizeof last, st->last_name, namew - 4 - half)
                         : st->last_name);
        /* the row's own share of the bottleneck (with chunks, of its device's load, which the
         * rows of its other chunks make up with it) */
        double share = m->bottleneck_ms > 0 ? st->time_ms / m->bottleneck_ms : 1.0;
        cli_bar(b, 20, share);
        char fit[64];
        printf("%5zu  %-*s %6zu %10.3f %10.3f %10.3f %10s  %s %3.0f%%\n", s, (int)namew,
               cli_fit(fit, sizeof fit, range, namew), st->layer_count, st->fwd_ms, st->bwd_ms,
               st->time_ms, sp_format_bytes(st->memory_bytes, mem, sizeof mem), b, 100 * share);
    }
}

/* the plan's bottleneck against the even split of layers */
static void print_even_split(const sp_plan_summary *m) {
    double ratio = m->bottleneck_ms > 0 ? m->even_split_bottleneck_ms / m->bottleneck_ms : 1;
    if (m->even_split_over_memory)
        printf("even split  %.3f ms, but it does not fit the memory limits: no alternative to "
               "this plan\n",
               m->even_split_bottleneck_ms);
    else if (ratio > 1.0005)
        printf("even split  %.3f ms: bottleneck %.2fx lower than an even split of layers\n",
               m->even_split_bottleneck_ms, ratio);
    else if (ratio < 0.9995)
        printf("even split  %.3f ms: bottleneck %.2fx higher than an even split of layers\n",
               m->even_split_bottleneck_ms, 1 / ratio);
    else
        printf("even split  %.3f ms: same bottleneck as an even split of layers\n",
               m->even_split_bottleneck_ms);
}

/* the micro-batch search, the simulated schedule, the objective's value */
static void print_schedule(const sp_plan *plan, const sp_plan_summary *m) {
    size_t n_search = 0;
    const sp_mb_point *search = sp_plan_get_micro_batch_search(plan, &n_search);
    if (n_search) {
        printf("micro-batches searched for %.1f%% efficiency (%s):", 100 * m->target_efficiency,
               sp_schedule_name(m->schedule.schedule));
        for (size_t i = 0; i < n_search; i++)
            printf("%s M=%u %.1f%%", i ? "," : "", search[i].micro_batches,
                   100 * search[i].efficiency);
        printf("\n");
    }
    if (m->schedule.present)
        printf("schedule    %s, %u %s: iteration %.3f ms, bubble %.1f%%, efficiency "
               "%.1f%% (simulated)\n",
               sp_schedule_name(m->schedule.schedule), m->schedule.micro_batches,
               cli_noun(m->schedule.micro_batches, "micro-batch", "micro-batches"),
               m->schedule.iteration_ms, 100 * m->schedule.bubble_fraction,
               100 * m->schedule.efficiency);
    if (m->objective == SP_OBJECTIVE_ITERATION && m->guarantee == SP_GUARANTEE_SEARCH)
        printf("objective   the least simulated iteration among balanced-chunk plans with device "
               "loads capped from the least bottleneck to +25%% (a search, not an exact "
               "optimum)\n");
    else if (m->objective == SP_OBJECTIVE_ITERATION)
        printf("objective   (M-1) x bottleneck + sum = %.3f ms (the formula minimized; the "
               "simulated iteration above is what to expect)\n",
               m->formula_iteration_ms);
}

static void print_heading(const sp_plan *plan, const sp_profile *profile,
                          const sp_plan_summary *m) {
    char proof[64];
    size_t n = sp_profile_get_layer_count(profile);
    printf("%s: %zu %s -> %u %s (solver %s, objective %s%s%s%s, %u %s)\n\n",
           sp_plan_get_model(plan), n, cli_noun(n, "layer", "layers"), m->stages,
           cli_noun(m->stages, "stage", "stages"), sp_solver_name(m->solver),
           sp_objective_name(m->objective), guarantee_words(m, proof, sizeof proof),
           m->framework != SP_FRAMEWORK_ANY ? " among the cuts of a layout for " : "",
           m->framework != SP_FRAMEWORK_ANY ? sp_framework_name(m->framework) : "",
           m->micro_batches, cli_noun(m->micro_batches, "micro-batch", "micro-batches"));
    if (m->chunks > 1 && m->chunk_layout == SP_CHUNKS_V)
        printf("V-shape: 2 chunks per device, chunk k on device k for k < %u, else %u-k; the "
               "bottleneck is a device's load (the sum of its chunks), each row's share the "
               "chunk's own\n\n",
               m->stages, 2 * m->stages - 1);
    else if (m->chunks > 1)
        printf("interleaved: %u chunks per device, chunk k on device k mod %u; the bottleneck is "
               "a device's load (the sum of its chunks), each row's share the chunk's own\n\n",
               m->chunks, m->stages);
    if (m->placement == SP_PLACEMENT_SEARCH) {
        printf("placement: each stage's device chosen by the search; boundary transfers %.3f ms "
               "per micro-batch (one way, summed)\n",
               m->transfer_ms);
        for (size_t s = 0; s < m->stages; s++) /* chunks follow their stage's device */
            printf("%s%zu -> %s", s ? ", " : "  ", s, sp_plan_get_stage(plan, s)->device_name);
        printf("\n\n");
    }
}

static void print_table(const sp_plan *plan, const sp_profile *profile, const char *written) {
    const sp_plan_summary *m = sp_plan_get_summary(plan);
    if (m->gpus) {
        cli_print_replicated(plan, profile);
        if (written)
            printf("wrote       %s\n", written);
        return;
    }
    print_heading(plan, profile, m);
    print_stages(plan, m);
    double gap = m->lower_bound_ms > 0 ? (m->bottleneck_ms / m->lower_bound_ms - 1) * 100 : 0;
    printf("\nbottleneck  %.3f ms (%s %u)   lower bound %.3f ms (+%.1f%%)\n", m->bottleneck_ms,
           m->chunks > 1 ? "device" : "stage", m->bottleneck_stage, m->lower_bound_ms, gap);
    printf("mean        %.3f ms   stddev %.3f ms   imbalance %.3f (bottleneck / mean)\n",
           m->mean_ms, m->stddev_ms, m->imbalance);
    if (m->memory_limit_bytes) {
        cli_print_memory_limit(m, "stage");
    } else if (m->memory_saved_unknown) {
        printf("memory      resident only (parameters, memory_bytes): the profile records no "
               "saved_bytes, so the activations kept for backward are not counted\n");
    }
    if (m->forward_only)
        printf("forward     forward passes only: the profile has no backward times (an inference "
               "trace); the stages balance inference, not training\n");
    print_even_split(m);
    print_schedule(plan, m);
    printf("solved in   %.3f ms\n", m->solve_ms);
    if (written)
        printf("wrote       %s\n", written);
}

/* what the command line asks for */
struct partition_args {
    sp_partition_opts opts;
    const char *profile, *output, *memory_text, *devices_path, *links_path;
    bool json, compare, stages_given, replica_cost_given;
    uint32_t gpus;
    uint64_t global_batch;
};

/* the options whose value is a name or more than a number; false after a usage error */
static bool parse_named(struct cli_opt_parser *p, int id, struct partition_args *a) {
    sp_partition_opts *o = &a->opts;
    const char *v = p->value;
    switch (id) {
    case OPT_MICRO_BATCHES: {
        uint64_t m = 0;
        if (v && strcmp(v, "auto") == 0)
            o->micro_batches = SP_MICRO_BATCHES_AUTO;
        else if (!cli_opt_uint(p, 1, SP_MAX_MICRO_BATCHES, &m))
            return false;
        else
            o->micro_batches = (uint32_t)m;
        return true;
    }
    case OPT_RECOMPUTE:
        if (strcmp(v, "auto") != 0 && strcmp(v, "off") != 0)
            return !cli_usage_error("partition", "--recompute expects auto or off, got '%s'", v);
        o->recompute = strcmp(v, "auto") == 0;
        return true;
    case OPT_FRAMEWORK:
        return sp_framework_from_name(v, &o->framework) == SP_OK ||
               !cli_usage_error("partition", "--framework expects megatron or any, got '%s'", v);
    case OPT_REPLICA_COST:
        a->replica_cost_given = true;
        return sp_replica_cost_from_name(v, &o->replica_cost) == SP_OK ||
               !cli_usage_error("partition", "--replica-cost expects ring or pipedream, got '%s'",
                                v);
    case OPT_COMM:
        return sp_comm_from_name(v, &o->comm) == SP_OK ||
               !cli_usage_error("partition", "--comm expects overlap or blocking, got '%s'", v);
    case OPT_PLACEMENT:
        return sp_placement_from_name(v, &o->placement) == SP_OK ||
               !cli_usage_error("partition", "--placement expects order or search, got '%s'", v);
    case OPT_OBJECTIVE:
        return sp_objective_from_name(v, &o->objective) == SP_OK ||
               !cli_usage_error("partition",
                                "--objective expects bottleneck, variance, iteration, range or "
                                "deviation, got '%s'",
                                v);
    case OPT_SOLVER:
        return (sp_solver_from_name(v, &o->solver) == SP_OK && o->solver != SP_SOLVER_GIVEN) ||
               !cli_usage_error("partition",
                                "--solver expects dp, ilp, uniform or parameters, got '%s'", v);
    case OPT_SCHEDULE:
        a->compare = strcmp(v, "compare") == 0;
        return a->compare || sp_schedule_from_name(v, &o->schedule) == SP_OK ||
               !cli_usage_error("partition",
                                "--schedule expects gpipe, 1f1b, zb-h1, interleaved, "
                                "interleaved-zb, zbv, dualpipev, pipedream, 2bw or compare, got "
                                "'%s'",
                                v);
    }
    return true;
}

/* the options, bound or named; -1 to go on, else the exit code */
static int parse_args(int argc, char **argv, struct partition_args *a) {
    sp_partition_opts *o = &a->opts;
    sp_partition_opts_init(o);
    double target = (double)NAN, ratio = (double)NAN; /* NAN, 0: not given */
    uint32_t stages = 0;
    const struct cli_bind binds[] = {
        CLI_U32(OPT_STAGES, &stages, 1, SP_MAX_STAGES),
        CLI_U32(OPT_GPUS, &a->gpus, 1, 1u << 20),
        CLI_U32(OPT_CHUNKS, &o->chunks, 1, SP_MAX_STAGES),
        CLI_DOUBLE(OPT_TARGET, &target, DBL_MIN, 1 - DBL_EPSILON / 2, "a number in (0, 1)"),
        CLI_DOUBLE(OPT_TIME_LIMIT, &o->time_limit_s, DBL_MIN, 1e6, "seconds in (0, 1e6]"),
        CLI_DOUBLE(OPT_ACTIVATION_RATIO, &ratio, DBL_MIN, 1e9, "a number in (0, 1e9]"),
        CLI_STRING(OPT_DEVICES, &a->devices_path),
        CLI_STRING(OPT_LINKS, &a->links_path),
        CLI_STRING(OPT_MEMORY_LIMIT, &a->memory_text),
        CLI_STRING(OPT_OUTPUT, &a->output),
        CLI_FLAG(OPT_JSON, &a->json),
        CLI_FLAG(OPT_ALLOW_EMPTY, &o->allow_empty_stages),
        CLI_BIND_END,
    };
    struct cli_opt_parser p;
    cli_opt_parser_init(&p, "partition", cmd_partition_opts, argc, argv);
    for (int id; (id = cli_opt_parse(&p, &cmd_partition_help, binds)) > 0;)
        if (id == OPT_GLOBAL_BATCH && !cli_opt_uint(&p, 1, (uint64_t)1 << 40, &a->global_batch))
            return CLI_EXIT_USAGE;
        else if (!parse_named(&p, id, a))
            return CLI_EXIT_USAGE;
    if (cli_opt_exit(&p) >= 0)
        return cli_opt_exit(&p);
    if (p.n_positional == 0)
        return cli_usage_error("partition", "missing PROFILE");
    if (p.n_positional > 1)
        return cli_usage_error("partition", "expected one PROFILE, got %d arguments",
                               p.n_positional);
    a->profile = p.positional[0];
    a->stages_given = stages != 0;
    if (stages)
        o->stages = stages;
    if (!isnan(ratio)) {
        o->activation_ratio = ratio;
        a->replica_cost_given = true;
    }
    if (!isnan(target) && o->micro_batches != SP_MICRO_BATCHES_AUTO)
        return cli_usage_error("partition", "--target-efficiency needs --micro-batches auto");
    if (!isnan(target))
        o->target_efficiency = target;
    return -1;
}

/* what the options cannot ask for together; -1 to go on, else the exit code */
static int check_args(const struct partition_args *a) {
    const sp_partition_opts *o = &a->opts;
    if (a->compare && a->output)
        return cli_usage_error("partition", "--schedule compare writes no plan: compare, then "
                                            "run again with --schedule NAME -o PLAN");
    if (a->compare && o->micro_batches == SP_MICRO_BATCHES_AUTO)
        return cli_usage_error("partition", "--schedule compare simulates every schedule with "
                                            "the same micro-batch count: give -m M, not auto");
    if (a->global_batch && !a->gpus)
        return cli_usage_error("partition", "--global-batch needs --gpus N");
    if (a->replica_cost_given && (!a->gpus || a->global_batch))
        return cli_usage_error("partition", "--replica-cost and --activation-ratio charge "
                                            "replicated stages: they need --gpus N without "
                                            "--global-batch");
    if (a->gpus && (a->stages_given || a->compare || (a->global_batch && o->micro_batches)))
        return cli_usage_error("partition", "--gpus chooses the stage count%s itself: drop %s",
                               a->global_batch ? " and the micro-batches (from --global-batch)"
                                               : "",
                               a->stages_given ? "--stages"
                               : a->compare    ? "--schedule compare"
                                               : "--micro-batches");
    return -1;
}

/* the memory limit, the devices and the links the options name */
static int load_inputs(sp_ctx *ctx, struct partition_args *a, sp_devices **devices,
                       sp_links **links) {
    sp_status st = SP_OK;
    if (a->memory_text) {
        if (sp_parse_bytes(ctx, a->memory_text, &a->opts.memory_limit_bytes) != SP_OK)
            return cli_usage_error("partition", "--memory-limit: %s", sp_ctx_get_errmsg(ctx));
        if (a->opts.memory_limit_bytes == 0)
            return cli_usage_error("partition", "--memory-limit must be more than 0 bytes");
    }
    if (a->devices_path && (st = sp_devices_load(ctx, a->devices_path, devices)) != SP_OK)
        return cli_report(ctx, st, a->json);
    if (a->links_path && (st = sp_links_load(ctx, a->links_path, links)) != SP_OK)
        return cli_report(ctx, st, a->json);
    a->opts.devices = *devices;
    a->opts.links = *links;
    return -1;
}

/* one plan: made, its command recorded, written, shown */
static int plan_one(sp_ctx *ctx, const struct partition_args *a, const sp_profile *profile,
                    char *cmdline) {
    sp_plan *plan = NULL;
    sp_status st = a->gpus ? sp_partition_replicated(ctx, profile, &a->opts, a->gpus, &plan)
                           : sp_partition(ctx, profile, &a->opts, &plan);
    if (st == SP_OK)
        cli_print_warnings(ctx);
    if (st == SP_OK && cmdline)
        st = sp_plan_set_command(ctx, plan, cmdline);
    if (st == SP_OK && a->output)
        st = sp_plan_write(ctx, plan, a->output);
    char *text = NULL;
    if (st == SP_OK && a->json && !cli_is_stdout(a->output))
        st = sp_plan_to_json(ctx, plan, &text);
    int code = st == SP_OK ? CLI_EXIT_OK : cli_report(ctx, st, a->json);
    if (text)
        fputs(text, stdout);
    else if (st == SP_OK && !a->json && !cli_is_stdout(a->output)) {
        print_table(plan, profile, a->output);
        cli_partition_advice(ctx, profile, &a->opts, plan);
    }
    sp_free(text);
    sp_plan_destroy(plan);
    return code;
}

int cmd_partition(int argc, char **argv) {
    struct partition_args a = {0};
    int code = parse_args(argc, argv, &a);
    if (code < 0)
        code = check_args(&a);
    if (code >= 0)
        return code;
    const char *inputs[] = {a.profile, a.devices_path, a.links_path};
    int clash = cli_check_output_not_input("partition", "--output", a.output, inputs, 3);
    if (!clash)
        clash = cli_one_stdout("partition", &a.output, 1, a.json);
    if (clash)
        return clash;
    sp_ctx *ctx = NULL;
    if (sp_ctx_create(&ctx) != SP_OK) {
        fputs("stagepart: error: out of memory\n", stderr);
        return CLI_EXIT_INTERNAL;
    }
    sp_devices *devices = NULL;
    sp_links *links = NULL;
    sp_profile *profile = NULL;
    char *cmdline = cli_command_line(argc, argv);
    sp_status st = SP_OK;
    code = load_inputs(ctx, &a, &devices, &links);
    if (code < 0 && (st = sp_profile_load(ctx, a.profile, &profile)) != SP_OK)
        code = cli_report(ctx, st, a.json);
    if (code < 0 && a.gpus && a.global_batch)
        code = cli_partition_gpus(ctx, profile, &a.opts, a.gpus, a.global_batch, a.json, a.output,
                                  cmdline);
    else if (code < 0 && a.compare)
        code = cli_partition_compare(ctx, profile, &a.opts, a.json);
    else if (code < 0)
        code = plan_one(ctx, &a, profile, cmdline);
    free(cmdline);
    sp_profile_destroy(profile);
    sp_devices_destroy(devices);
    sp_links_destroy(links);
    sp_ctx_destroy(ctx);
    return code;
}

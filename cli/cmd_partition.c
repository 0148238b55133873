/* cli/cmd_partition.c: `stagepart partition`: profile in, stage plan out, with the comparison
 * against an even split that tells users what balancing gains them. */
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
     "bottleneck (default), variance or iteration; see docs/partitioning.md", "Plan"},
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
};

static void bar(char *buf, size_t width, double share) {
    size_t full = (size_t)lround(share * (double)width);
    if (full > width)
        full = width;
    for (size_t i = 0; i < width; i++)
        buf[i] = i < full ? '#' : '.';
    buf[width] = '\0';
}

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

static void print_table(const sp_plan *plan, const sp_profile *profile, const char *written) {
    const sp_plan_summary *m = sp_plan_get_summary(plan);
    char proof[64];
    if (m->gpus) {
        cli_print_replicated(plan, profile);
        if (written)
            printf("wrote       %s\n", written);
        return;
    }
    printf("%s: %zu layers -> %u stages (solver %s, objective %s%s%s%s, %u micro-batches)\n\n",
           sp_plan_get_model(plan), sp_profile_get_layer_count(profile), m->stages,
           sp_solver_name(m->solver), sp_objective_name(m->objective),
           guarantee_words(m, proof, sizeof proof),
           m->framework != SP_FRAMEWORK_ANY ? " among the cuts of a layout for " : "",
           m->framework != SP_FRAMEWORK_ANY ? sp_framework_name(m->framework) : "",
           m->micro_batches);
    size_t namew = 6;
    for (size_t s = 0; s < sp_plan_get_stage_count(plan); s++) {
        const sp_stage *st = sp_plan_get_stage(plan, s);
        size_t w = strlen(st->first_name) + strlen(st->last_name) + 4;
        if (w > namew)
            namew = w;
    }
    if (namew > 48)
        namew = 48;
    if (m->chunks > 1 && m->chunk_layout == SP_CHUNKS_V)
        printf("V-shape: 2 chunks per device, chunk k on device k for k < %u, else %u-k; the "
               "bottleneck is a device's load (the sum of its chunks)\n\n",
               m->stages, 2 * m->stages - 1);
    else if (m->chunks > 1)
        printf("interleaved: %u chunks per device, chunk k on device k mod %u; the bottleneck is "
               "a device's load (the sum of its chunks)\n\n",
               m->chunks, m->stages);
    if (m->placement == SP_PLACEMENT_SEARCH) {
        printf("placement: each stage's device chosen by the search; boundary transfers %.3f ms "
               "per micro-batch (one way, summed)\n",
               m->transfer_ms);
        for (size_t s = 0; s < m->stages; s++) /* chunks follow their stage's device */
            printf("%s%zu -> %s", s ? ", " : "  ", s, sp_plan_get_stage(plan, s)->device_name);
        printf("\n\n");
    }
    printf("stage  %-*s %6s %10s %10s %10s %10s  share of bottleneck\n", (int)namew, "layers",
           "count", "fwd ms", "bwd ms", "time ms", "memory");
    for (size_t s = 0; s < sp_plan_get_stage_count(plan); s++) {
        const sp_stage *st = sp_plan_get_stage(plan, s);
        char range[256], mem[16], b[21];
        if (!st->layer_count)
            snprintf(range, sizeof range, "(empty)");
        else if (st->layer_count == 1)
            snprintf(range, sizeof range, "%s", st->first_name);
        else
            snprintf(range, sizeof range, "%s .. %s", st->first_name, st->last_name);
        double device_ms = 0; /* the stage's device load: itself, or the sum of its chunks */
        uint32_t dev = sp_chunk_device(m->chunk_layout, m->stages, (uint32_t)s);
        for (size_t k = 0; k < sp_plan_get_stage_count(plan); k++)
            if (sp_chunk_device(m->chunk_layout, m->stages, (uint32_t)k) == dev)
                device_ms += sp_plan_get_stage(plan, k)->time_ms;
        bar(b, 20, m->bottleneck_ms > 0 ? device_ms / m->bottleneck_ms : 1.0);
        printf("%5zu  %-*.*s %6zu %10.3f %10.3f %10.3f %10s  %s %3.0f%%\n", s, (int)namew,
               (int)namew, range, st->layer_count, st->fwd_ms, st->bwd_ms, st->time_ms,
               sp_format_bytes(st->memory_bytes, mem, sizeof mem), b,
               m->bottleneck_ms > 0 ? 100.0 * device_ms / m->bottleneck_ms : 100.0);
    }
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
        printf("schedule    %s, %u micro-batches: iteration %.3f ms, bubble %.1f%%, efficiency "
               "%.1f%% (simulated)\n",
               sp_schedule_name(m->schedule.schedule), m->schedule.micro_batches,
               m->schedule.iteration_ms, 100 * m->schedule.bubble_fraction,
               100 * m->schedule.efficiency);
    if (m->objective == SP_OBJECTIVE_ITERATION && m->chunk_layout == SP_CHUNKS_V &&
        m->chunks == 2 && m->solver == SP_SOLVER_DP)
        printf("objective   the least simulated iteration among balanced-chunk plans with device "
               "loads capped from the least bottleneck to +25%% (a search, not an exact "
               "optimum)\n");
    else if (m->objective == SP_OBJECTIVE_ITERATION)
        printf("objective   (M-1) x bottleneck + sum = %.3f ms (the formula minimized; the "
               "simulated iteration above is what to expect)\n",
               m->formula_iteration_ms);
    printf("solved in   %.3f ms\n", m->solve_ms);
    if (written)
        printf("wrote       %s\n", written);
}

int cmd_partition(int argc, char **argv) {
    sp_partition_opts opts;
    sp_partition_opts_init(&opts);
    const char *output = NULL, *memory_text = NULL;
    bool json = false, target_given = false, compare = false, stages_given = false;
    bool replica_cost_given = false;
    uint32_t gpus = 0;
    uint64_t global_batch = 0;
    const char *devices_path = NULL, *links_path = NULL;
    uint64_t v = 0;
    const struct cli_bind binds[] = {
        CLI_U32(OPT_GPUS, &gpus, 1, 1u << 20),
        CLI_U32(OPT_CHUNKS, &opts.chunks, 1, SP_MAX_STAGES),
        CLI_STRING(OPT_DEVICES, &devices_path),
        CLI_STRING(OPT_LINKS, &links_path),
        CLI_STRING(OPT_MEMORY_LIMIT, &memory_text),
        CLI_STRING(OPT_OUTPUT, &output),
        CLI_FLAG(OPT_JSON, &json),
        CLI_FLAG(OPT_ALLOW_EMPTY, &opts.allow_empty_stages),
        CLI_BIND_END,
    };
    struct cli_opt_parser p;
    cli_opt_parser_init(&p, "partition", cmd_partition_opts, argc, argv);
    for (int id; (id = cli_opt_parse(&p, &cmd_partition_help, binds)) > 0;) {
        switch (id) {
        case OPT_STAGES:
            if (!cli_opt_uint(&p, 1, SP_MAX_STAGES, &v))
                return CLI_EXIT_USAGE;
            opts.stages = (uint32_t)v;
            stages_given = true;
            break;
        case OPT_GLOBAL_BATCH:
            if (!cli_opt_uint(&p, 1, (uint64_t)1 << 40, &v))
                return CLI_EXIT_USAGE;
            global_batch = v;
            break;
        case OPT_MICRO_BATCHES:
            if (p.value && strcmp(p.value, "auto") == 0) {
                opts.micro_batches = SP_MICRO_BATCHES_AUTO;
                break;
            }
            if (!cli_opt_uint(&p, 1, SP_MAX_MICRO_BATCHES, &v))
                return CLI_EXIT_USAGE;
            opts.micro_batches = (uint32_t)v;
            break;
        case OPT_TARGET: {
            char *end = NULL;
            opts.target_efficiency = strtod(p.value, &end);
            if (!end || *end || !(opts.target_efficiency > 0 && opts.target_efficiency < 1))
                return cli_usage_error("partition",
                                       "--target-efficiency expects a number in (0, 1), got '%s'",
                                       p.value);
            target_given = true;
            break;
        }
        case OPT_TIME_LIMIT: {
            char *end = NULL;
            opts.time_limit_s = strtod(p.value, &end);
            if (!end || *end || !(opts.time_limit_s > 0) || opts.time_limit_s > 1e6)
                return cli_usage_error(
                    "partition", "--time-limit expects seconds in (0, 1e6], got '%s'", p.value);
            break;
        }
        case OPT_RECOMPUTE:
            if (strcmp(p.value, "auto") != 0 && strcmp(p.value, "off") != 0)
                return cli_usage_error("partition", "--recompute expects auto or off, got '%s'",
                                       p.value);
            opts.recompute = strcmp(p.value, "auto") == 0;
            break;
        case OPT_FRAMEWORK:
            if (sp_framework_from_name(p.value, &opts.framework) != SP_OK)
                return cli_usage_error("partition", "--framework expects megatron or any, got '%s'",
                                       p.value);
            break;
        case OPT_REPLICA_COST:
            if (sp_replica_cost_from_name(p.value, &opts.replica_cost) != SP_OK)
                return cli_usage_error(
                    "partition", "--replica-cost expects ring or pipedream, got '%s'", p.value);
            replica_cost_given = true;
            break;
        case OPT_ACTIVATION_RATIO: {
            char *end = NULL;
            opts.activation_ratio = strtod(p.value, &end);
            if (!end || *end || !(opts.activation_ratio > 0 && opts.activation_ratio <= 1e9))
                return cli_usage_error("partition",
                                       "--activation-ratio expects a number in (0, 1e9], got '%s'",
                                       p.value);
            replica_cost_given = true;
            break;
        }
        case OPT_COMM:
            if (sp_comm_from_name(p.value, &opts.comm) != SP_OK)
                return cli_usage_error("partition", "--comm expects overlap or blocking, got '%s'",
                                       p.value);
            break;
        case OPT_PLACEMENT:
            if (sp_placement_from_name(p.value, &opts.placement) != SP_OK)
                return cli_usage_error("partition", "--placement expects order or search, got '%s'",
                                       p.value);
            break;
        case OPT_OBJECTIVE:
            if (sp_objective_from_name(p.value, &opts.objective) != SP_OK)
                return cli_usage_error("partition",
                                       "--objective expects bottleneck, variance or iteration, "
                                       "got '%s'",
                                       p.value);
            break;
        case OPT_SOLVER:
            if (sp_solver_from_name(p.value, &opts.solver) != SP_OK ||
                opts.solver == SP_SOLVER_GIVEN)
                return cli_usage_error("partition",
                                       "--solver expects dp, ilp, uniform or parameters, got '%s'",
                                       p.value);
            break;
        case OPT_SCHEDULE:
            compare = strcmp(p.value, "compare") == 0;
            if (!compare && sp_schedule_from_name(p.value, &opts.schedule) != SP_OK)
                return cli_usage_error("partition",
                                       "--schedule expects gpipe, 1f1b, zb-h1, interleaved, "
                                       "interleaved-zb, zbv, dualpipev, pipedream, 2bw or "
                                       "compare, got '%s'",
                                       p.value);
            break;
        }
    }
    if (cli_opt_exit(&p) >= 0)
        return cli_opt_exit(&p);
    if (p.n_positional == 0)
        return cli_usage_error("partition", "missing PROFILE");
    if (p.n_positional > 1)
        return cli_usage_error("partition", "expected one PROFILE, got %d arguments",
                               p.n_positional);
    if (target_given && opts.micro_batches != SP_MICRO_BATCHES_AUTO)
        return cli_usage_error("partition", "--target-efficiency needs --micro-batches auto");
    if (compare && output)
        return cli_usage_error("partition", "--schedule compare writes no plan: compare, then "
                                            "run again with --schedule NAME -o PLAN");
    if (compare && opts.micro_batches == SP_MICRO_BATCHES_AUTO)
        return cli_usage_error("partition", "--schedule compare simulates every schedule with "
                                            "the same micro-batch count: give -m M, not auto");
    if (global_batch && !gpus)
        return cli_usage_error("partition", "--global-batch needs --gpus N");
    if (replica_cost_given && (!gpus || global_batch))
        return cli_usage_error("partition", "--replica-cost and --activation-ratio charge "
                                            "replicated stages: they need --gpus N without "
                                            "--global-batch");
    if (gpus && (stages_given || compare || (global_batch && opts.micro_batches)))
        return cli_usage_error("partition", "--gpus chooses the stage count%s itself: drop %s",
                               global_batch ? " and the micro-batches (from --global-batch)" : "",
                               stages_given ? "--stages"
                               : compare    ? "--schedule compare"
                                            : "--micro-batches");
    const char *inputs[] = {p.positional[0], devices_path, links_path};
    int clash = cli_check_output_not_input("partition", "--output", output, inputs, 3);
    if (!clash)
        clash = cli_one_stdout("partition", &output, 1, json);
    if (clash)
        return clash;
    sp_ctx *ctx = NULL;
    if (sp_ctx_create(&ctx) != SP_OK) {
        fputs("stagepart: error: out of memory\n", stderr);
        return CLI_EXIT_INTERNAL;
    }
    sp_devices *devices = NULL;
    sp_links *links = NULL;
    int code = CLI_EXIT_OK;
    sp_profile *profile = NULL;
    sp_plan *plan = NULL;
    char *cmdline = NULL;
    sp_status st = SP_OK;
    if (memory_text) {
        st = sp_parse_bytes(ctx, memory_text, &opts.memory_limit_bytes);
        if (st != SP_OK) {
            code = cli_usage_error("partition", "--memory-limit: %s", sp_ctx_get_errmsg(ctx));
            goto out;
        }
        if (opts.memory_limit_bytes == 0) {
            code = cli_usage_error("partition", "--memory-limit must be more than 0 bytes");
            goto out;
        }
    }
    if (devices_path && (st = sp_devices_load(ctx, devices_path, &devices)) != SP_OK) {
        code = cli_report(ctx, st, json);
        goto out;
    }
    if (links_path && (st = sp_links_load(ctx, links_path, &links)) != SP_OK) {
        code = cli_report(ctx, st, json);
        goto out;
    }
    opts.devices = devices;
    opts.links = links;
    if (gpus && global_batch) {
        cmdline = cli_command_line(argc, argv);
        if ((st = sp_profile_load(ctx, p.positional[0], &profile)) != SP_OK)
            code = cli_report(ctx, st, json);
        else
            code =
                cli_partition_gpus(ctx, profile, &opts, gpus, global_batch, json, output, cmdline);
        goto out;
    }
    if (compare) {
        if ((st = sp_profile_load(ctx, p.positional[0], &profile)) != SP_OK)
            code = cli_report(ctx, st, json);
        else
            code = cli_partition_compare(ctx, profile, &opts, json);
        goto out;
    }
    if ((st = sp_profile_load(ctx, p.positional[0], &profile)) != SP_OK ||
        (st = gpus ? sp_partition_replicated(ctx, profile, &opts, gpus, &plan)
                   : sp_partition(ctx, profile, &opts, &plan)) != SP_OK) {
        code = cli_report(ctx, st, json);
        goto out;
    }
    cli_print_warnings(ctx);
    cmdline = cli_command_line(argc, argv);
    if (cmdline && (st = sp_plan_set_command(ctx, plan, cmdline)) != SP_OK) {
        code = cli_report(ctx, st, json);
        goto out;
    }
    if (output && (st = sp_plan_write(ctx, plan, output)) != SP_OK) {
        code = cli_report(ctx, st, json);
        goto out;
    }
    if (cli_is_stdout(output)) {
        /* the plan is on stdout already */
    } else if (json) {
        char *text = NULL;
        if ((st = sp_plan_to_json(ctx, plan, &text)) != SP_OK) {
            code = cli_report(ctx, st, json);
            goto out;
        }
        fputs(text, stdout);
        sp_free(text);
    } else {
        print_table(plan, profile, output);
        cli_partition_advice(ctx, profile, &opts, plan);
    }
out:
    free(cmdline);
    sp_plan_destroy(plan);
    sp_profile_destroy(profile);
    sp_devices_destroy(devices);
    sp_links_destroy(links);
    sp_ctx_destroy(ctx);
    return code;
}

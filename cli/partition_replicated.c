/* cli/partition_replicated.c: the table of a plan whose stages are replicated (`stagepart
 * partition PROFILE --gpus N`, sp_partition_replicated): each stage's replicas, devices,
 * all-reduce and share of a micro-batch, against the bottleneck. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

static void stage_range(const sp_stage *st, char *buf, size_t size) {
    if (st->layer_count == 1)
        snprintf(buf, size, "%s", st->first_name);
    else
        snprintf(buf, size, "%s .. %s", st->first_name, st->last_name);
}

void cli_print_replicated(const sp_plan *plan, const sp_profile *profile) {
    const sp_plan_summary *m = sp_plan_get_summary(plan);
    bool flushes = m->schedule.present && m->schedule.schedule != SP_SCHEDULE_PIPEDREAM &&
                   m->schedule.schedule != SP_SCHEDULE_2BW;
    size_t n = sp_profile_get_layer_count(profile);
    printf("%s: %zu %s -> %u %s on %u %s (replicated stages, optimal, %u %s)\n\n",
           sp_plan_get_model(plan), n, cli_noun(n, "layer", "layers"), m->stages,
           cli_noun(m->stages, "stage", "stages"), m->gpus, cli_noun(m->gpus, "GPU", "GPUs"),
           m->micro_batches, cli_noun(m->micro_batches, "micro-batch", "micro-batches"));
    printf("stage  %-32s %6s %8s %9s %10s %13s %10s %10s  share of bottleneck\n", "layers", "count",
           "replicas", "devices", "time ms", "all-reduce ms", "share ms", "memory");
    for (size_t s = 0; s < sp_plan_get_stage_count(plan); s++) {
        const sp_stage *st = sp_plan_get_stage(plan, s);
        char range[256], mem[16], devs[32], b[21];
        stage_range(st, range, sizeof range);
        if (st->replicas > 1)
            snprintf(devs, sizeof devs, "%u-%u", st->device, st->device + st->replicas - 1);
        else
            snprintf(devs, sizeof devs, "%u", st->device);
        double share = m->bottleneck_ms > 0 ? st->share_ms / m->bottleneck_ms : 1.0;
        cli_bar(b, 20, share);
        char fit[40];
        printf("%5zu  %-32s %6zu %8u %9s %10.3f %13.3f %10.3f %10s  %s %3.0f%%\n", s,
               cli_fit(fit, sizeof fit, range, 32), st->layer_count, st->replicas, devs,
               st->time_ms, st->allreduce_ms, st->share_ms,
               sp_format_bytes(st->memory_bytes, mem, sizeof mem), b, 100 * share);
    }
    printf("\nshare       one micro-batch's share of a stage's devices: %s\n",
           flushes ? "time / replicas + all-reduce / M (one all-reduce per iteration, after the "
                     "flush)"
                   : "(time + all-reduce) / replicas (one all-reduce per micro-batch, after its "
                     "backward)");
    printf("all-reduce  %s\n",
           m->replica_cost == SP_REPLICA_COST_PIPEDREAM
               ? "PipeDream's planner's charge: 4 (replicas - 1) / replicas x parameter bytes / "
                 "the slowest link's bandwidth among the stage's devices (--replica-cost "
                 "pipedream)"
               : "a ring over the slowest link among the stage's devices: 2 (replicas - 1) / "
                 "replicas x parameter bytes / bandwidth + 2 (replicas - 1) x latency");
    if (m->activation_ratio > 0)
        printf("transfers   each stage's share at least its activation transfers, 2 x bytes / "
               "(bandwidth x replicas) / %g: the input of every stage but the first, the output "
               "of every stage but the first and the last (--activation-ratio, PipeDream's "
               "activation term)\n",
               m->activation_ratio);
    if (m->forward_only)
        printf("forward     forward passes only: the profile has no backward times (an inference "
               "trace); the stages balance inference, not training\n");
    printf("bottleneck  %.3f ms per micro-batch (stage %u): %.1f micro-batches per second   "
           "lower bound %.3f ms (all work spread over every GPU, no all-reduce)\n",
           m->bottleneck_ms, m->bottleneck_stage,
           m->bottleneck_ms > 0 ? 1000.0 / m->bottleneck_ms : 0.0, m->lower_bound_ms);
    if (m->memory_limit_bytes)
        cli_print_memory_limit(m, "replica");
    printf("even split  %.3f ms with the same replicas%s\n", m->even_split_bottleneck_ms,
           m->even_split_over_memory ? ", but it does not fit the memory limits" : "");
    if (m->schedule.present)
        printf("schedule    %s, %u micro-batches on %u devices: iteration %.3f ms, bubble "
               "%.1f%%, efficiency %.1f%% (simulated, every replica a device)\n",
               sp_schedule_name(m->schedule.schedule), m->schedule.micro_batches, m->gpus,
               m->schedule.iteration_ms, 100 * m->schedule.bubble_fraction,
               100 * m->schedule.efficiency);
    printf("solved in   %.3f ms\n", m->solve_ms);
}

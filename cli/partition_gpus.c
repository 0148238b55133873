/* cli/partition_gpus.c: `stagepart partition PROFILE --gpus N --global-batch B`: every split of
 * the N GPUs into pipeline stages x data-parallel replicas (sp_partition_data_parallel), one row
 * each, the best marked; -o writes the best split's plan. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

static void print_rows(const sp_dp_table *t, const sp_profile *profile, const char *written) {
    size_t n = sp_profile_get_layer_count(profile);
    printf("%s: %zu %s on %u %s, global batch %llu (micro-batches of %u): pipeline x data "
           "parallel\n\n",
           sp_profile_get_model(profile), n, cli_noun(n, "layer", "layers"), t->gpus,
           cli_noun(t->gpus, "GPU", "GPUs"), (unsigned long long)t->global_batch,
           t->micro_batch_size);
    printf("%9s %6s %6s %14s %14s %14s %12s %12s %12s\n", "pipeline", "data", "M", "bottleneck ms",
           "iteration ms", "all-reduce ms", "step ms", "samples/s", "peak memory");
    for (size_t i = 0; i < t->count; i++) {
        const sp_dp_candidate *c = &t->candidates[i];
        if (!c->plan) {
            printf("%9u %6u %6s  -  %s\n", c->pipeline, c->data_parallel, "-", c->reason);
            continue;
        }
        const sp_plan_summary *m = sp_plan_get_summary(c->plan);
        char mem[16];
        printf("%9u %6u %6u %14.3f %14.3f %14.3f %12.3f %12.1f %12s%s\n", c->pipeline,
               c->data_parallel, c->micro_batches, m->bottleneck_ms, c->iteration_ms,
               c->allreduce_ms, c->step_ms, c->samples_per_s,
               sp_format_bytes(cli_peak_device_bytes(c->plan), mem, sizeof mem),
               i == t->best ? "  best" : "");
    }
    const sp_dp_candidate *b = &t->candidates[t->best];
    printf("\nstep: the simulated iteration (%s) plus the slowest stage's gradient all-reduce "
           "among its replicas after the flush (ring, over --links; replicas side by side, "
           "stages %u apart). Peak memory: the most one device holds, the same on each "
           "replica.\n",
           sp_schedule_name(sp_plan_get_summary(b->plan)->schedule.schedule), b->data_parallel);
    if (written)
        printf("wrote       %s (the best split's plan: %u stages, %u micro-batches; run it on %u "
               "replicas)\n",
               written, b->pipeline, b->micro_batches, b->data_parallel);
}

static int print_json(const sp_dp_table *t, const sp_profile *profile) {
    cJSON *root = cJSON_CreateObject(), *list = NULL;
    bool ok = root && cJSON_AddStringToObject(root, "format", "stagepart-parallel-plans") &&
              cJSON_AddNumberToObject(root, "version", 1) &&
              cJSON_AddStringToObject(root, "model", sp_profile_get_model(profile)) &&
              cJSON_AddNumberToObject(root, "gpus", t->gpus) &&
              cJSON_AddNumberToObject(root, "global_batch", (double)t->global_batch) &&
              cJSON_AddNumberToObject(root, "micro_batch_size", t->micro_batch_size) &&
              cJSON_AddNumberToObject(root, "best", (double)t->best) &&
              (list = cJSON_AddArrayToObject(root, "candidates"));
    for (size_t i = 0; ok && i < t->count; i++) {
        const sp_dp_candidate *c = &t->candidates[i];
        cJSON *e = cJSON_CreateObject();
        ok = e && cJSON_AddItemToArray(list, e) &&
             cJSON_AddNumberToObject(e, "pipeline", c->pipeline) &&
             cJSON_AddNumberToObject(e, "data_parallel", c->data_parallel);
        if (ok && !c->plan) {
            ok = cJSON_AddStringToObject(e, "error", c->reason) != NULL;
            continue;
        }
        const sp_plan_summary *m = ok ? sp_plan_get_summary(c->plan) : NULL;
        ok = ok && cJSON_AddNumberToObject(e, "micro_batches", c->micro_batches) &&
             cJSON_AddNumberToObject(e, "bottleneck_ms", m->bottleneck_ms) &&
             cJSON_AddNumberToObject(e, "iteration_ms", c->iteration_ms) &&
             cJSON_AddNumberToObject(e, "allreduce_ms", c->allreduce_ms) &&
             cJSON_AddNumberToObject(e, "step_ms", c->step_ms) &&
             cJSON_AddNumberToObject(e, "samples_per_s", c->samples_per_s);
    }
    return cli_print_json_tree(root, ok);
}

int cli_partition_gpus(sp_ctx *ctx, const sp_profile *profile, const sp_partition_opts *opts,
                       uint32_t gpus, uint64_t global_batch, bool json, const char *output,
                       const char *cmdline) {
    sp_dp_table *t = NULL;
    sp_status st = sp_partition_data_parallel(ctx, profile, opts, gpus, global_batch, &t);
    if (st == SP_ERR_INFEASIBLE && t) {
        fprintf(stderr, "stagepart: error: %s:\n", sp_ctx_get_errmsg(ctx));
        for (size_t i = 0; i < t->count; i++)
            fprintf(stderr, "  %u x %u: %s\n", t->candidates[i].pipeline,
                    t->candidates[i].data_parallel, t->candidates[i].reason);
        sp_dp_table_destroy(t);
        return CLI_EXIT_INFEASIBLE;
    }
    if (st != SP_OK)
        return cli_report(ctx, st, json);
    sp_plan *best = t->candidates[t->best].plan;
    if (output && cmdline)
        st = sp_plan_set_command(ctx, best, cmdline);
    if (output && st == SP_OK)
        st = sp_plan_write(ctx, best, output);
    int code = st != SP_OK             ? cli_report(ctx, st, json)
               : cli_is_stdout(output) ? CLI_EXIT_OK /* the plan is on stdout */
               : json                  ? print_json(t, profile)
                                       : (print_rows(t, profile, output), CLI_EXIT_OK);
    sp_dp_table_destroy(t);
    return code;
}

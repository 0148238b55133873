/* cli/partition_compare.c: `stagepart partition PROFILE --schedule compare`: one plan per
 * schedule, each made by the method that is exact for its placement, simulated with the same
 * micro-batch count, in one table (or JSON). A schedule that cannot run on this profile (no
 * wgrad_ms, M < 2P, no --chunks for the interleaved ones) gets its row with the reason. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

static const sp_schedule compared[] = {
    SP_SCHEDULE_GPIPE,          SP_SCHEDULE_1F1B, SP_SCHEDULE_ZB_H1,     SP_SCHEDULE_INTERLEAVED,
    SP_SCHEDULE_INTERLEAVED_ZB, SP_SCHEDULE_ZBV,  SP_SCHEDULE_DUALPIPEV,
};
#define N_COMPARED (sizeof compared / sizeof compared[0])

struct row {
    sp_schedule schedule;
    sp_plan *plan; /* NULL: see status and reason */
    sp_status status;
    char reason[512]; /* why this schedule has no plan */
    uint64_t peak_device_bytes;
};

static void solve_row(sp_ctx *ctx, const sp_profile *profile, const sp_partition_opts *given,
                      struct row *r) {
    sp_partition_opts o = *given;
    bool loop = r->schedule == SP_SCHEDULE_INTERLEAVED || r->schedule == SP_SCHEDULE_INTERLEAVED_ZB;
    o.schedule = r->schedule;
    if (loop && given->chunks < 2) {
        snprintf(r->reason, sizeof r->reason, "give --chunks V (V >= 2) to compare it");
        r->status = SP_ERR_INVALID_ARG;
        return;
    }
    if (!loop)
        o.chunks = 1; /* the V-shape schedules choose their 2 chunks themselves */
    if ((r->status = sp_partition(ctx, profile, &o, &r->plan)) != SP_OK) {
        snprintf(r->reason, sizeof r->reason, "%s", sp_ctx_get_errmsg(ctx));
        r->plan = NULL;
        return;
    }
    r->peak_device_bytes = cli_peak_device_bytes(r->plan);
}

void cli_partition_advice(sp_ctx *ctx, const sp_profile *profile, const sp_partition_opts *opts,
                          const sp_plan *plan) {
    const sp_plan_summary *m = sp_plan_get_summary(plan);
    if (m->chunks < 2 || !m->schedule.present || m->gpus)
        return;
    struct row r = {.schedule = SP_SCHEDULE_1F1B};
    sp_partition_opts o = *opts;
    o.micro_batches = m->schedule.micro_batches; /* the same M as the plan's simulation */
    solve_row(ctx, profile, &o, &r);
    const sp_plan_summary *f = r.plan ? sp_plan_get_summary(r.plan) : NULL;
    if (f && f->schedule.present && f->schedule.iteration_ms < m->schedule.iteration_ms * 0.995)
        printf("advice      plain 1f1b's own plan on the same %u devices simulates %.2fx faster: "
               "%.3f ms against %.3f ms per iteration (M = %u; --schedule compare shows every "
               "schedule)\n",
               m->stages, m->schedule.iteration_ms / f->schedule.iteration_ms,
               f->schedule.iteration_ms, m->schedule.iteration_ms, m->schedule.micro_batches);
    sp_plan_destroy(r.plan);
}

static void print_rows(const struct row *rows, size_t n, const sp_profile *profile,
                       const sp_partition_opts *o, size_t fastest) {
    size_t layers = sp_profile_get_layer_count(profile);
    uint32_t M = o->micro_batches ? o->micro_batches : 4 * o->stages;
    printf("%s: %zu %s on %u %s, %u %s: each schedule's own plan, simulated\n\n",
           sp_profile_get_model(profile), layers, cli_noun(layers, "layer", "layers"), o->stages,
           cli_noun(o->stages, "device", "devices"), M,
           cli_noun(M, "micro-batch", "micro-batches"));
    printf("%-15s %7s %8s %14s %14s %8s %11s %12s\n", "schedule", "chunks", "solver",
           "bottleneck ms", "iteration ms", "bubble", "efficiency", "peak memory");
    for (size_t i = 0; i < n; i++) {
        const struct row *r = &rows[i];
        if (!r->plan) {
            printf("%-15s  -  %s\n", sp_schedule_name(r->schedule), r->reason);
            continue;
        }
        const sp_plan_summary *m = sp_plan_get_summary(r->plan);
        char mem[16];
        printf("%-15s %7u %8s %14.3f %14.3f %7.1f%% %10.1f%% %12s%s\n",
               sp_schedule_name(r->schedule), m->chunks, sp_solver_name(m->solver),
               m->bottleneck_ms, m->schedule.iteration_ms, 100 * m->schedule.bubble_fraction,
               100 * m->schedule.efficiency, sp_format_bytes(r->peak_device_bytes, mem, sizeof mem),
               i == fastest ? "  fastest" : "");
    }
    printf("\npeak memory: the most one device holds (weights, and the activations its schedule "
           "keeps in flight). Pick one and run `partition --schedule NAME -o PLAN`.\n");
}

static int print_json(const struct row *rows, size_t n, const sp_profile *profile,
                      const sp_partition_opts *o) {
    cJSON *root = cJSON_CreateObject(), *list = NULL;
    bool ok = root && cJSON_AddStringToObject(root, "format", "stagepart-schedule-comparison") &&
              cJSON_AddNumberToObject(root, "version", 1) &&
              cJSON_AddStringToObject(root, "model", sp_profile_get_model(profile)) &&
              cJSON_AddNumberToObject(root, "devices", o->stages) &&
              cJSON_AddNumberToObject(root, "micro_batches",
                                      o->micro_batches ? o->micro_batches : 4 * o->stages) &&
              (list = cJSON_AddArrayToObject(root, "schedules"));
    for (size_t i = 0; ok && i < n; i++) {
        const struct row *r = &rows[i];
        cJSON *e = cJSON_CreateObject();
        ok = e && cJSON_AddItemToArray(list, e) &&
             cJSON_AddStringToObject(e, "schedule", sp_schedule_name(r->schedule));
        if (ok && !r->plan) {
            ok = cJSON_AddStringToObject(e, "error", r->reason) != NULL;
            continue;
        }
        const sp_plan_summary *m = ok ? sp_plan_get_summary(r->plan) : NULL;
        ok = ok && cJSON_AddNumberToObject(e, "chunks", m->chunks) &&
             cJSON_AddStringToObject(e, "solver", sp_solver_name(m->solver)) &&
             cJSON_AddNumberToObject(e, "bottleneck_ms", m->bottleneck_ms) &&
             cJSON_AddNumberToObject(e, "iteration_ms", m->schedule.iteration_ms) &&
             cJSON_AddNumberToObject(e, "bubble_fraction", m->schedule.bubble_fraction) &&
             cJSON_AddNumberToObject(e, "efficiency", m->schedule.efficiency) &&
             cJSON_AddNumberToObject(e, "peak_device_memory_bytes", (double)r->peak_device_bytes);
    }
    return cli_print_json_tree(root, ok);
}

int cli_partition_compare(sp_ctx *ctx, const sp_profile *profile, const sp_partition_opts *opts,
                          bool json) {
    struct row rows[N_COMPARED];
    size_t fastest = SIZE_MAX;
    for (size_t i = 0; i < N_COMPARED; i++) {
        memset(&rows[i], 0, sizeof rows[i]);
        rows[i].schedule = compared[i];
        solve_row(ctx, profile, opts, &rows[i]);
        if (rows[i].plan && (fastest == SIZE_MAX ||
                             sp_plan_get_summary(rows[i].plan)->schedule.iteration_ms <
                                 sp_plan_get_summary(rows[fastest].plan)->schedule.iteration_ms))
            fastest = i;
    }
    int code = CLI_EXIT_OK;
    if (fastest == SIZE_MAX) {
        fprintf(stderr, "stagepart: error: no schedule has a plan for this profile:\n");
        for (size_t i = 0; i < N_COMPARED; i++)
            fprintf(stderr, "  %s: %s\n", sp_schedule_name(rows[i].schedule), rows[i].reason);
        code = cli_exit_code(rows[1].status); /* 1f1b's: the plainest schedule's reason */
    } else if (json) {
        code = print_json(rows, N_COMPARED, profile, opts);
    } else {
        print_rows(rows, N_COMPARED, profile, opts, fastest);
    }
    for (size_t i = 0; i < N_COMPARED; i++)
        sp_plan_destroy(rows[i].plan);
    return code;
}

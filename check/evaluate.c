/* check/evaluate.c: sp_evaluate, the split a user runs today (a Megatron layout, a balance, parts)
 * as a plan beside the optimal plan of the same options, and what the optimal one gains. What
 * `stagepart evaluate` and `import-plan` print and write. */
#include <cjson/cJSON.h>
#include <string.h>

#include "json_util.h"

struct sp_evaluation {
    sp_plan *yours, *optimal;
};

void sp_evaluation_destroy(sp_evaluation *e) {
    if (!e)
        return;
    sp_plan_destroy(e->yours);
    sp_plan_destroy(e->optimal);
    sp_free(e);
}

sp_plan *sp_evaluation_get_yours(const sp_evaluation *e) {
    return e ? e->yours : NULL;
}

const sp_plan *sp_evaluation_get_optimal(const sp_evaluation *e) {
    return e ? e->optimal : NULL;
}

double sp_evaluation_get_gain(const sp_evaluation *e) {
    if (!e)
        return 0;
    double a = sp_plan_get_summary(e->yours)->schedule.iteration_ms;
    double b = sp_plan_get_summary(e->optimal)->schedule.iteration_ms;
    return b > 0 ? a / b - 1 : 0;
}

sp_status sp_evaluate(sp_ctx *ctx, const sp_profile *profile, const sp_partition_opts *opts,
                      const size_t *first_layers, size_t count, sp_evaluation **out) {
    if (!ctx)
        return SP_ERR_INVALID_ARG;
    sp_ctx_begin(ctx);
    if (!profile || !opts || !first_layers || !out)
        return sp_fail(ctx, SP_ERR_INVALID_ARG, "sp_evaluate: NULL argument");
    *out = NULL;
    if (count == 0 || (opts->stages && count % opts->stages))
        return sp_fail(ctx, SP_ERR_INVALID_ARG,
                       "%zu segments cannot be %u stages of equal chunk count", count,
                       opts->stages);
    sp_partition_opts o = *opts;
    /* V-shape schedules run two chunks per device: 2P segments are P devices */
    bool vshape = sp_schedule_chunk_layout(opts->schedule) == SP_CHUNKS_V;
    if (vshape && !opts->stages && count % 2 == 0)
        o.stages = (uint32_t)(count / 2);
    else
        o.stages = (uint32_t)(opts->stages ? opts->stages : count);
    o.chunks = (uint32_t)(count / o.stages);
    sp_evaluation *e = sp_calloc(1, sizeof *e);
    if (!e)
        return sp_oom(ctx, "the evaluation");
    sp_status st = sp_plan_from_split(ctx, profile, &o, first_layers, count, &e->yours);
    if (st == SP_OK) {
        /* the given split's warnings (an ignored option) are the caller's to see; the optimal
         * plan's own are not: they are set aside while it is made, then dropped */
        struct sp_strbuf split_warnings = ctx->warn;
        sp_strbuf_init(&ctx->warn);
        sp_partition_opts best = o;
        best.micro_batches = sp_plan_get_summary(e->yours)->micro_batches;
        /* the exact method for the layout: the DP, the V-shape solver, or for chunks in a loop
         * the interleaved search (partitioner/solvers/interleaved.c) */
        best.solver = SP_SOLVER_DP;
        best.schedule = sp_plan_get_summary(e->yours)->schedule.schedule;
        st = sp_partition(ctx, profile, &best, &e->optimal);
        sp_strbuf_release(&ctx->warn);
        ctx->warn = split_warnings;
    }
    if (st != SP_OK) {
        sp_evaluation_destroy(e);
        return st;
    }
    *out = e;
    return SP_OK;
}

static cJSON *side(cJSON *root, const char *key, const sp_plan *plan) {
    const sp_plan_summary *s = sp_plan_get_summary(plan);
    size_t empty = 0; /* stages holding no layer: their devices idle */
    for (size_t k = 0; k < sp_plan_get_stage_count(plan); k++)
        empty += sp_plan_get_stage(plan, k)->layer_count == 0;
    cJSON *o = cJSON_AddObjectToObject(root, key);
    return o && cJSON_AddStringToObject(o, "solver", sp_solver_name(s->solver)) &&
                   cJSON_AddNumberToObject(o, "bottleneck_ms", s->bottleneck_ms) &&
                   cJSON_AddNumberToObject(o, "bottleneck_stage", s->bottleneck_stage) &&
                   cJSON_AddNumberToObject(o, "imbalance", s->imbalance) &&
                   cJSON_AddNumberToObject(o, "iteration_ms", s->schedule.iteration_ms) &&
                   cJSON_AddNumberToObject(o, "efficiency", s->schedule.efficiency) &&
                   cJSON_AddNumberToObject(o, "empty_stages", (double)empty)
               ? o
               : NULL;
}

sp_status sp_evaluation_to_json(sp_ctx *ctx, const sp_evaluation *e, char **json) {
    if (!ctx)
        return SP_ERR_INVALID_ARG;
    sp_ctx_begin(ctx);
    if (!e || !json)
        return sp_fail(ctx, SP_ERR_INVALID_ARG, "sp_evaluation_to_json: NULL argument");
    *json = NULL;
    cJSON *root = cJSON_CreateObject();
    bool ok = root && cJSON_AddStringToObject(root, "format", "stagepart-evaluation") &&
              cJSON_AddNumberToObject(root, "version", 1) && side(root, "yours", e->yours) &&
              side(root, "optimal", e->optimal) &&
              cJSON_AddNumberToObject(root, "throughput_gain", sp_evaluation_get_gain(e));
    sp_status st =
        ok ? sp_json_print(ctx, root, 0, "the evaluation", json) : sp_oom(ctx, "the evaluation");
    cJSON_Delete(root);
    return st;
}

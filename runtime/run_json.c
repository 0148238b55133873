/* runtime/run_json.c: the public view of a run, and its "stagepart-run-report" document (written
 * by formats/run_report.c from what the run measured). */
#include <math.h>
#include <string.h>

#include "run_impl.h"
#include "run_report_doc.h"

const sp_run_summary *sp_run_get_summary(const sp_run *run) {
    return run ? &run->summary : NULL;
}

const sp_run_stage *sp_run_get_stage(const sp_run *run, size_t i) {
    return run && i < run->summary.stages ? &run->stages[i] : NULL;
}

double sp_run_get_step_loss(const sp_run *run, size_t i) {
    return run && i < (size_t)run->summary.warmup_steps + run->summary.steps ? run->step_loss[i]
                                                                             : (double)NAN;
}

const sp_sim *sp_run_get_timeline(const sp_run *run) {
    return run ? run->timeline : NULL;
}

const float *sp_run_get_stage_params(const sp_run *run, size_t stage, size_t layer, size_t *count) {
    *count = 0;
    if (!run || !run->kept || stage >= run->summary.stages)
        return NULL;
    const struct sp_stage_exec *se = run->kept[stage];
    if (layer < se->first || layer > se->last)
        return NULL;
    *count = se->m->layers[layer].param_elems;
    return se->params[layer - se->first];
}

sp_status sp_run_to_json(sp_ctx *ctx, const sp_run *run, char **out) {
    if (!ctx || !run || !out)
        return ctx ? sp_fail(ctx, SP_ERR_INVALID_ARG, "sp_run_to_json: NULL argument")
                   : SP_ERR_INVALID_ARG;
    sp_ctx_begin(ctx);
    *out = NULL;
    const sp_run_summary *S = &run->summary;
    double *cpu = sp_calloc(S->stages ? S->stages : 1, sizeof *cpu);
    if (!cpu)
        return sp_oom(ctx, "the run report");
    for (uint32_t s = 0; s < S->stages; s++) /* each stage's thread CPU time, mean per step */
        for (uint32_t k = 0; k < S->steps; k++)
            cpu[s] += run->stats[(size_t)(S->warmup_steps + k) * S->stages + s].cpu_ms / S->steps;
    struct sp_run_report_doc doc = {.model = run->model_name,
                                    .transport = run->transport,
                                    .summary = S,
                                    .stages = run->stages,
                                    .stage_cpu_ms = cpu,
                                    .predicted_time_ms = run->predicted_time_ms,
                                    .optimizer_ms = run->optimizer_ms,
                                    .step_loss = run->step_loss};
    sp_status st = sp_run_report_to_json(ctx, &doc, out);
    sp_free(cpu);
    return st;
}

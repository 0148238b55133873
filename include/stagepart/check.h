/* stagepart/check.h: the CI gate: a committed plan held to limits on a fresh profile (check/). */
#ifndef STAGEPART_CHECK_H
#define STAGEPART_CHECK_H

#include "stagepart/run.h"

#ifdef __cplusplus
extern "C" {
#endif

/* sp_plan_remap: the plan's stages on a changed profile, matched by layer name: first_layers
 * [stage count] gets each stage's first layer in `profile`. SP_ERR_SCHEMA when the layers differ
 * (the message lists the layers added, removed or moved) or the plan recorded no names. */
SP_API sp_status sp_plan_remap(sp_ctx *ctx, const sp_plan *plan, const sp_profile *profile,
                               size_t *first_layers);

/* ---- check: the CI gate (check/) */

/* The limits a committed plan is held to, and what it is re-evaluated with. */
typedef struct sp_check_opts {
    double max_imbalance;        /* bottleneck / mean stage time (default 1.10) */
    double max_regression;       /* predicted iteration growth, 0.05 = 5% (default 0.05) */
    double max_stale;            /* what a new plan would gain (default 0.05) */
    double max_prediction_error; /* with a report: measured against predicted iteration, either
                                  * way (default 0.15) */
    const sp_devices *devices;   /* the devices the plan was made for, or NULL: the profile's */
    const sp_links *links;       /* the links it was made with, or NULL */
    const sp_run_report_summary *report; /* a run of the plan to gate as well, or NULL */
    const char *plan_name; /* names the plan in messages (its file), or NULL: "the plan" */
} sp_check_opts;
SP_API void sp_check_opts_init(sp_check_opts *opts);

/* One criterion of the gate. `message` says what was measured against what: one line, or for
 * "layers match" one line per layer that differs. */
typedef struct sp_check_criterion {
    const char *name;     /* "layers match", "imbalance", "regression", "staleness", "measured
                           * imbalance", "prediction error" */
    bool passed, skipped; /* skipped: not applicable (the plan records no schedule) */
    double value, limit;
    const char *message;
    /* "imbalance": the bottleneck-optimal plan's imbalance for the same stage count and options,
     * which is the least any plan reaches where every split has the same mean stage time (one
     * device speed, no links, no replicas), and there whether the limit can be met at all: a
     * failed criterion that is not attainable is no regression of the plan. Elsewhere, and for
     * other criteria, attainable is true (best is NaN for other criteria). */
    double best;
    bool attainable;
} sp_check_criterion;

typedef struct sp_check_result sp_check_result;

/* sp_check: the committed plan re-evaluated on a fresh profile: its layers matched by name (a
 * layer added, removed or renamed fails "layers match" and is named), its stage times, imbalance
 * and simulated iteration recomputed under its own options, compared with its recorded
 * prediction, and the profile partitioned again to see what a new plan would gain. A plan made
 * for named devices or with transfers is only comparable on the same ones: SP_ERR_INVALID_ARG
 * naming what is missing or different. A failed criterion is a result, not an error. *out is
 * freed with sp_check_destroy. */
SP_API sp_status sp_check(sp_ctx *ctx, const sp_plan *plan, const sp_profile *profile,
                          const sp_check_opts *opts, sp_check_result **out);
SP_API void sp_check_destroy(sp_check_result *result);
SP_API size_t sp_check_get_criterion_count(const sp_check_result *result);
/* criterion i (borrowed from the result), or NULL past the end */
SP_API const sp_check_criterion *sp_check_get_criterion(const sp_check_result *result, size_t i);
/* how many criteria failed (skipped ones do not) */
SP_API size_t sp_check_get_failed_count(const sp_check_result *result);
/* how many of those no plan of the stage count could pass (sp_check_criterion.attainable false):
 * when every failure is one of them, the gate, not the plan, is what fails (the CLI exits 3) */
SP_API size_t sp_check_get_unattainable_count(const sp_check_result *result);
/* sp_check_to_json: the "stagepart-check" document (docs/ci.md) into *json (sp_free it). */
SP_API sp_status sp_check_to_json(sp_ctx *ctx, const sp_check_result *result, char **json);
/* sp_check_write_junit: JUnit XML, one test case per criterion, written atomically to path. */
SP_API sp_status sp_check_write_junit(sp_ctx *ctx, const sp_check_result *result, const char *path);

/* ---- evaluate: the split a user runs today against the optimal plan (check/) */

typedef struct sp_evaluation sp_evaluation;

/* sp_evaluate: the split given by first_layers[count] (sp_plan_from_split: count segments, as
 * opts->stages stages of count / opts->stages chunks; opts->stages 0: one stage per segment)
 * as a plan, and the optimal plan of the same stages, micro-batches and schedule (the exact DP;
 * the uniform split of chunks when the split interleaves). SP_ERR_INVALID_ARG when count is not
 * a multiple of the stages, or the split is not one. *out is freed with sp_evaluation_destroy. */
SP_API sp_status sp_evaluate(sp_ctx *ctx, const sp_profile *profile, const sp_partition_opts *opts,
                             const size_t *first_layers, size_t count, sp_evaluation **out);
SP_API void sp_evaluation_destroy(sp_evaluation *evaluation);
/* the given split as a plan (solver "given"), and the optimal plan. Borrowed. */
SP_API sp_plan *sp_evaluation_get_yours(const sp_evaluation *evaluation);
SP_API const sp_plan *sp_evaluation_get_optimal(const sp_evaluation *evaluation);
/* the throughput the optimal plan gains: your iteration time / the optimal one - 1 */
SP_API double sp_evaluation_get_gain(const sp_evaluation *evaluation);
/* sp_evaluation_to_json: the "stagepart-evaluation" document (docs/export.md) into *json
 * (sp_free it). */
SP_API sp_status sp_evaluation_to_json(sp_ctx *ctx, const sp_evaluation *evaluation, char **json);

#ifdef __cplusplus
}
#endif
#endif

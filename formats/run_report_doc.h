/* formats/run_report_doc.h: what a run measured, as the run report's writer takes it
 * (formats/run_report.c; runtime/ fills it from its own records). */
#ifndef SP_FORMATS_RUN_REPORT_DOC_H
#define SP_FORMATS_RUN_REPORT_DOC_H

#include "internal.h"

struct sp_run_report_doc {
    const char *model;
    sp_transport transport;
    const sp_run_summary *summary;
    const sp_run_stage *stages;      /* [summary->stages] */
    const double *stage_cpu_ms;      /* [stages]: thread CPU time over the compute, per step */
    const double *predicted_time_ms; /* [stages]: the plan's stage times */
    double optimizer_ms;
    const double *step_loss; /* [warmup_steps + steps] */
};

/* sp_run_report_to_json: the "stagepart-run-report" document (docs/formats.md#run-report) into
 * *out (sp_free it); the reader is sp_run_report_load, in the same file. */
sp_status sp_run_report_to_json(sp_ctx *ctx, const struct sp_run_report_doc *run, char **out);

#endif

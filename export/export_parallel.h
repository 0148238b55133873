/* export/export_parallel.h: what an export does with a plan's parallelism: schedules without
 * flushes and replicated stages. */
#ifndef SP_EXPORT_EXPORT_PARALLEL_H
#define SP_EXPORT_EXPORT_PARALLEL_H

#include "internal.h"

/* *replicas: the stages' common replica count (1 for an unreplicated plan); SP_ERR_INVALID_ARG
 * or SP_ERR_UNSUPPORTED naming why when the frameworks cannot express the plan (made for a
 * schedule without flushes, replicas differing per stage, a replicated plan as torch's
 * schedule CSV). */
sp_status sp_export_parallelism(sp_ctx *ctx, const sp_plan *plan, sp_export_format format,
                                uint32_t *replicas);
/* the export's closing comment: the framework's data-parallel size */
void sp_export_parallel_note(const sp_plan *plan, uint32_t replicas, struct sp_strbuf *text);

/* where a plan with chunks puts stage k ("looped: stage k on rank k % P", or V-shape's), for a
 * person; NULL for one stage per rank */
const char *sp_export_placement(const sp_plan *plan);

#endif

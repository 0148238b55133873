/* export/export_torch_stages.h: a plan as PipelineStages built by hand (export_torch_stages.c). */
#ifndef SP_EXPORT_TORCH_STAGES_H
#define SP_EXPORT_TORCH_STAGES_H

#include "module_names.h"

/* The stages' module paths as JSON into value, and the Python that builds each stage from them
 * into text (the caller adds the schedule's line). */
sp_status sp_export_torch_stages(sp_ctx *ctx, const sp_plan *plan, const struct module_names *mods,
                                 const char *module_prefix, struct sp_strbuf *text,
                                 struct sp_strbuf *value);

#endif

/* export/export_torchtitan.h: a plan as torchtitan's job config (export_torchtitan.c). */
#ifndef SP_EXPORT_TORCHTITAN_H
#define SP_EXPORT_TORCHTITAN_H

#include "module_names.h"

/* module_fqns_per_model_part as JSON into value, the Python config lines into text */
sp_status sp_export_torchtitan(sp_ctx *ctx, const sp_plan *plan, const struct module_names *mods,
                               const char *module_prefix, sp_module_names names,
                               struct sp_strbuf *text, struct sp_strbuf *value);

#endif

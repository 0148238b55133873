/* export/module_names.h: the module each layer of a plan is, by the name a framework finds it
 * by (module_names.c). */
#ifndef SP_EXPORT_MODULE_NAMES_H
#define SP_EXPORT_MODULE_NAMES_H

#include "plan_impl.h"

/* each layer's modules: none for the loss, two for a head that carries the final norm under
 * torchtitan's names */
struct module_names {
    char **first, **second; /* per layer; NULL: none */
    size_t n;
};

/* whether layer l is a module of the model (the loss is the framework's loss_fn, no module) */
bool sp_export_is_module(const sp_plan *plan, size_t l);

/* the names; need_paths: the format finds modules by path (pippy, torchtitan), so a layer named
 * as torch.profiler names an instance ("Qwen2DecoderLayer_3") is refused, saying how to get
 * paths. SP_ERR_INVALID_ARG naming the layer, SP_ERR_NOMEM. */
sp_status sp_export_module_names(sp_ctx *ctx, const sp_plan *plan, sp_module_names names,
                                 bool need_paths, struct module_names *m);
void sp_export_module_names_release(struct module_names *m);

/* torch.distributed.pipelining's name for a schedule (get_schedule_class; torchtitan's
 * pipeline_parallel_schedule), NULL where torch has none */
const char *sp_torch_schedule_name(sp_schedule s);
/* a module's name as a Python string, after the prefix */
void sp_export_module_name(struct sp_strbuf *sb, const char *prefix, const char *name);

#endif

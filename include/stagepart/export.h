/* stagepart/export.h: a plan in the form each framework takes (export/). */
#ifndef STAGEPART_EXPORT_H
#define STAGEPART_EXPORT_H

#include "stagepart/simulate.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Frameworks a plan can be exported to (docs/export.md). */
typedef enum sp_export_format {
    SP_EXPORT_MEGATRON = 0,           /* --pipeline-model-parallel-layout (and first/last counts) */
    SP_EXPORT_DEEPSPEED = 1,          /* PipelineModule parts and a subclass applying them */
    SP_EXPORT_TORCHGPIPE = 2,         /* balance list (torchgpipe, fairscale) */
    SP_EXPORT_PIPPY = 3,              /* torch.distributed.pipelining split_spec */
    SP_EXPORT_TORCHTITAN = 4,         /* module_fqns_per_model_part */
    SP_EXPORT_TORCH_SCHEDULE_CSV = 5, /* the simulated op order, one row per rank, as
                                       * torch.distributed.pipelining's schedule CSV */
    SP_EXPORT_TORCH_STAGES = 6        /* each stage's module paths, and the Python that builds
                                       * PipelineStages from them by hand */
} sp_export_format;
SP_API const char *sp_export_format_name(sp_export_format format);
SP_API sp_status sp_export_format_from_name(const char *name, sp_export_format *out);

/* sp_plan_export: the plan in a framework's own form. *text gets what to paste (flags or a
 * Python snippet, ending in a newline), *value the bare value as JSON (a string, list or
 * object); both freed with sp_free(), either may be NULL. Module names are the profile's layer
 * names with module_prefix (may be NULL) in front; layers of kind "loss" are no modules and are
 * left out of module lists. SP_ERR_INVALID_ARG when the format cannot express the plan (the
 * message names the stage), e.g. a boundary inside Megatron's E or L group, chunks for DeepSpeed.
 * SP_EXPORT_TORCH_SCHEDULE_CSV writes the order the plan's recorded schedule runs (its "schedule"
 * object, else the default for its chunks) as sp_schedule_to_torch_csv does; *value gets the
 * rows as a JSON list of lists of action strings. */
SP_API sp_status sp_plan_export(sp_ctx *ctx, const sp_plan *plan, sp_export_format format,
                                const char *module_prefix, char **text, char **value);

/* Which module names the exports use. */
typedef enum sp_module_names {
    SP_MODULE_NAMES_PROFILE = 0,   /* the profile's layer names */
    SP_MODULE_NAMES_TORCHTITAN = 1 /* by kind, as torchtitan's models name their modules:
                                    * embedding tok_embeddings, the k-th transformer layer
                                    * layers.k, norm norm, head output (and norm before it when
                                    * the profile has no norm layer); another kind, or an
                                    * embedding or norm out of place, is SP_ERR_INVALID_ARG */
} sp_module_names;

/* sp_plan_export_names: sp_plan_export with the module names chosen (sp_plan_export uses the
 * profile's). The torchtitan export also gives pipeline_parallel_first/last_stage_less_layers
 * when torchtitan's own even split with those weights makes exactly the plan's module lists
 * (default names, no module_prefix). */
SP_API sp_status sp_plan_export_names(sp_ctx *ctx, const sp_plan *plan, sp_export_format format,
                                      const char *module_prefix, sp_module_names names, char **text,
                                      char **value);

#ifdef __cplusplus
}
#endif
#endif

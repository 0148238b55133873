/* profiler/module_map_apply.h: a module map into a profile made from a trace. */
#ifndef SP_PROFILER_MODULE_MAP_APPLY_H
#define SP_PROFILER_MODULE_MAP_APPLY_H

#include <cjson/cJSON.h>

#include "internal.h"
#include "profile_doc.h"
#include "stagepart/profiler.h"

/* Each layer of doc looked up in map by its name (an instance name or a path): its name becomes
 * the module's path (a string of the map: the map outlives the doc), its parameter bytes and
 * output bytes (when the trace had none) and a kind from its class are set; measurement gets
 * "module_map". A layer the map lacks (the helper's "loss" apart), two layers on one module, or
 * the model itself as a layer: SP_ERR_SCHEMA naming the trace, the layer and the map. */
sp_status sp_profile_apply_module_map(sp_ctx *ctx, const sp_module_map *map, const char *trace_file,
                                      struct sp_profile_doc *doc);

#endif

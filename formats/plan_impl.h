/* formats/plan_impl.h: the plan object (formats/plan.c), built by the partitioner from stage
 * boundaries (partitioner/model/cost.c) or read from a document (formats/plan_read.c). */
#ifndef SP_FORMATS_PLAN_IMPL_H
#define SP_FORMATS_PLAN_IMPL_H

#include "internal.h"

struct sp_plan {
    char *model;
    char *command; /* NULL until sp_plan_set_command */
    char profile_sha256[65];
    size_t n_layers;
    sp_plan_summary summary;
    size_t n_stages;
    sp_stage *stages;         /* stages[n_stages] */
    char *names;              /* first/last names of the stages, NUL-separated */
    const char **layer_names; /* layer_names[n_layers] (and kinds), or NULL when not recorded */
    const char **layer_kinds;
    char *layer_pool;
    size_t layer_pool_len; /* its bytes: every name and kind with its NUL */
    bool *recomputed;      /* recomputed[n_layers], or NULL when no layer is */
    sp_mb_point *search;   /* search[n_search]: the M tried by --micro-batches auto */
    size_t n_search;
    char *device_pool; /* the stages' device names, NUL-separated */
};

/* sp_plan_set_devices: stage k runs on device[k] (NULL: keep each stage's) named names[k]
 * (copied; NULL: every name ""). */
sp_status sp_plan_set_devices(sp_ctx *ctx, sp_plan *plan, const uint32_t *device,
                              const char *const *names);

/* sp_plan_recompute_summary: the summary's bottleneck (and its stage), mean, stddev, imbalance and
 * transfer_ms from the stages: their time_ms (a device's chunks added), or with replicated
 * stages (summary.gpus set) their share_ms. */
void sp_plan_recompute_summary(sp_plan *plan);

/* sp_plan_set_layers: record the profile's layer names and kinds (copied). */
sp_status sp_plan_set_layers(sp_ctx *ctx, sp_plan *plan, size_t n, const char *const *names,
                             const char *const *kinds);
/* sp_plan_set_profile_layers: the same for every layer of a profile, its names' block copied at
 * once (a plan of 100,000 layers copied each name on its own: 6 ms). */
sp_status sp_plan_set_profile_layers(sp_ctx *ctx, sp_plan *plan, const sp_profile *profile);

#endif

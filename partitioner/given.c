/* partitioner/given.c: sp_plan_from_split, a split the user gives (evaluate, import-plan, check)
 * as a plan with the same figures a solver's plan has. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "baselines.h"
#include "cost.h"
#include "devices_impl.h"
#include "partition_impl.h"
#include "sim_impl.h"

/* The devices (and links, matched by name) a plan placed its pipeline stages on, in stage order:
 * what sp_plan_from_split runs stage s on when opts->placed_as is set. *device_out gets each
 * stage's index in `list` (freed by the caller). */
static sp_status devices_placed_as(sp_ctx *ctx, const sp_plan *placed, const sp_devices *list,
                                   const sp_links *links, uint32_t stages, sp_devices **devices_out,
                                   sp_links **links_out, size_t **device_out) {
    *devices_out = NULL;
    *links_out = NULL;
    size_t *device = sp_mallocarray(stages, sizeof *device), *link = NULL;
    if (!device)
        return sp_oom(ctx, "placing stages");
    sp_status st = SP_OK;
    if (!list || sp_plan_get_stage_count(placed) < stages)
        st = sp_fail(ctx, SP_ERR_INVALID_ARG,
                     "placing stages as a plan did needs its devices and its %u stages", stages);
    for (uint32_t s = 0; st == SP_OK && s < stages; s++) {
        device[s] = sp_plan_get_stage(placed, s)->device;
        if (device[s] >= sp_devices_get_count(list))
            st = sp_fail(ctx, SP_ERR_INVALID_ARG,
                         "the plan places stage %u on device %zu; the device list has %zu", s,
                         device[s], sp_devices_get_count(list));
    }
    if (st == SP_OK && links && !(link = sp_mallocarray(stages, sizeof *link)))
        st = sp_oom(ctx, "placing stages");
    for (uint32_t s = 0; st == SP_OK && link && s < stages; s++) {
        const char *name = sp_devices_get_device(list, device[s])->name;
        link[s] = sp_links_find(links, name);
        if (link[s] == sp_links_get_count(links))
            st = sp_fail(ctx, SP_ERR_INVALID_ARG,
                         "device '%s' (stage %u) has no entry in the links file (its \"devices\" "
                         "must name every device the plan uses)",
                         name, s);
    }
    if (st == SP_OK)
        st = sp_devices_select(ctx, list, device, stages, devices_out);
    if (st == SP_OK && link)
        st = sp_links_select(ctx, links, link, stages, links_out);
    sp_free(link);
    if (st != SP_OK) {
        sp_devices_destroy(*devices_out);
        *devices_out = NULL;
        sp_free(device);
        return st;
    }
    *device_out = device;
    return SP_OK;
}

/* the options of a given split: solver "given", stage s on device s, the default micro-batches,
 * the chunk layout made whole; SP_ERR_INVALID_ARG when the split's count does not fit them */
static sp_status given_opts(sp_ctx *ctx, sp_partition_opts *o, size_t count) {
    o->solver = SP_SOLVER_GIVEN;
    if (o->chunks == 0)
        o->chunks = 1;
    o->placement = SP_PLACEMENT_ORDER; /* a given split keeps stage s on device s */
    if (o->micro_batches == 0 || o->micro_batches == SP_MICRO_BATCHES_AUTO)
        o->micro_batches = 4 * o->stages;
    bool vshape = sp_schedule_chunk_layout(o->schedule) == SP_CHUNKS_V;
    if (vshape && o->chunks != 2)
        return sp_fail(ctx, SP_ERR_INVALID_ARG,
                       "%s runs 2 chunks per device, V-shape: the split needs 2 x %u segments, "
                       "got %zu",
                       sp_schedule_name(o->schedule), o->stages, count);
    if (!vshape && o->chunks > 1 && o->schedule != SP_SCHEDULE_INTERLEAVED_ZB)
        o->schedule = SP_SCHEDULE_INTERLEAVED; /* chunks in a loop run interleaved */
    if (o->chunks == 1 && sp_schedule_chunks_needed(o->schedule) == 0)
        return sp_fail(ctx, SP_ERR_INVALID_ARG,
                       "the %s schedule needs virtual stages: a split of stages x chunks "
                       "segments with --stages P",
                       sp_schedule_name(o->schedule));
    if (o->stages < 1 || (uint64_t)o->stages * o->chunks != count || count > SP_MAX_STAGES)
        return sp_fail(ctx, SP_ERR_INVALID_ARG,
                       "the split has %zu stages; expected stages x chunks = %u x %u", count,
                       o->stages, o->chunks);
    return sp_check_rounds(ctx, o) != SP_OK ? SP_ERR_INVALID_ARG : SP_OK;
}

/* the split's boundaries in order from layer 0, empty stages only where allowed; a warning for
 * a cut the profile forbids */
static sp_status check_bounds(sp_ctx *ctx, const sp_profile *profile, const sp_partition_opts *o,
                              const size_t *bounds, size_t count) {
    size_t n = sp_profile_get_layer_count(profile);
    if (bounds[0] != 0)
        return sp_fail(ctx, SP_ERR_INVALID_ARG, "stage 0 must start at layer 0, not %zu",
                       bounds[0]);
    for (size_t s = 0; s < count; s++)
        if (bounds[s + 1] < bounds[s])
            return sp_fail(ctx, SP_ERR_INVALID_ARG,
                           "stage %zu is out of order (starts at layer %zu, the next at %zu; the "
                           "profile has %zu layers)",
                           s, bounds[s], bounds[s + 1], n);
        else if (bounds[s + 1] == bounds[s] && !o->allow_empty_stages)
            return sp_fail(ctx, SP_ERR_INVALID_ARG,
                           "stage %zu is empty (starts at layer %zu, as the next does; the "
                           "profile has %zu layers): every stage needs at least one layer unless "
                           "empty stages are allowed (--allow-empty-stages)",
                           s, bounds[s], n);
    for (size_t s = 1; s < count; s++) /* each cut once, empty stages or not */
        if (bounds[s] > 0 && bounds[s] < n && bounds[s] != bounds[s - 1] &&
            !sp_profile_get_layer(profile, bounds[s] - 1)->cut_after)
            sp_warn(ctx, "stage %zu starts after layer '%s', which has cut_after: false", s,
                    sp_profile_get_layer(profile, bounds[s] - 1)->name);
    return SP_OK;
}

/* the even split of as many stages on the same devices, for comparison (the plan's own
 * bottleneck when there is none) */
static void compare_even(sp_ctx *ctx, const sp_profile *profile, const sp_partition_opts *o,
                         const double *speed, size_t count, sp_plan *plan) {
    plan->summary.even_split_bottleneck_ms = plan->summary.bottleneck_ms;
    size_t *even = sp_mallocarray(count + 1, sizeof *even);
    sp_plan *even_plan = NULL;
    struct sp_chain c = {0}; /* the allowed cuts, for the even split */
    struct sp_chain_model cuts = {.weight = SP_WEIGHT_TIME,
                                  .stages = (uint32_t)count,
                                  .micro_batches = 1,
                                  .schedule = SP_SCHEDULE_1F1B};
    if (even && sp_chain_init(ctx, &c, profile, &cuts) == SP_OK &&
        sp_uniform_bounds(ctx, profile, &c, (uint32_t)count, even) == SP_OK &&
        sp_plan_figures(ctx, profile, o, speed, even, &even_plan) == SP_OK)
        plan->summary.even_split_bottleneck_ms = even_plan->summary.bottleneck_ms;
    sp_chain_release(&c);
    sp_plan_destroy(even_plan);
    sp_free(even);
}

sp_status sp_plan_from_split(sp_ctx *ctx, const sp_profile *profile, const sp_partition_opts *opts,
                             const size_t *first_layers, size_t count, sp_plan **out) {
    if (!ctx)
        return SP_ERR_INVALID_ARG;
    sp_ctx_begin(ctx);
    if (!profile || !opts || !first_layers || !out)
        return sp_fail(ctx, SP_ERR_INVALID_ARG, "sp_plan_from_split: NULL argument");
    *out = NULL;
    sp_partition_opts o = *opts;
    sp_status st = given_opts(ctx, &o, count);
    if (st != SP_OK)
        return st;
    size_t *bounds = sp_mallocarray(count + 1, sizeof *bounds);
    if (!bounds)
        return sp_oom(ctx, "evaluating a split");
    memcpy(bounds, first_layers, count * sizeof *bounds);
    bounds[count] = sp_profile_get_layer_count(profile);
    st = check_bounds(ctx, profile, &o, bounds, count);
    sp_devices *placed_devices = NULL; /* with opts->placed_as: stage s's device at s */
    sp_links *placed_links = NULL;
    size_t *placed_index = NULL;
    if (st == SP_OK && o.placed_as) {
        st = devices_placed_as(ctx, o.placed_as,
                               o.devices ? o.devices : sp_profile_get_devices(profile), o.links,
                               o.stages, &placed_devices, &placed_links, &placed_index);
        o.devices = placed_devices;
        o.links = placed_links;
    }
    struct sp_stage_devices d = {0};
    if (st == SP_OK)
        st = sp_stage_devices_init(ctx, profile, &o, &d);
    sp_plan *plan = NULL;
    if (st == SP_OK)
        st = sp_plan_build(ctx, profile, &o, d.speed, bounds, &plan);
    if (st == SP_OK && placed_index)
        st = sp_record_placement(ctx, plan,
                                 opts->devices ? opts->devices : sp_profile_get_devices(profile),
                                 placed_index);
    if (st == SP_OK) {
        compare_even(ctx, profile, &o, d.speed, count, plan);
        st = sp_plan_simulate(ctx, plan, o.schedule);
    }
    sp_stage_devices_release(&d);
    sp_free(bounds);
    sp_devices_destroy(placed_devices);
    sp_links_destroy(placed_links);
    sp_free(placed_index);
    if (st != SP_OK) {
        sp_plan_destroy(plan);
        return st;
    }
    *out = plan;
    return SP_OK;
}

/* The layer index of each module, in order: frameworks count modules, and a layer of kind
 * "loss" is none (DeepSpeed's loss_fn, the criterion outside torchgpipe's nn.Sequential); a loss
 * layer rides with the stage of the module before it. */
static sp_status module_layers(sp_ctx *ctx, const sp_profile *profile, size_t **out, size_t *n) {
    size_t layers = sp_profile_get_layer_count(profile);
    size_t *idx = sp_mallocarray(layers ? layers : 1, sizeof *idx);
    if (!idx)
        return sp_oom(ctx, "the split");
    *n = 0;
    for (size_t l = 0; l < layers; l++)
        if (strcmp(sp_profile_get_layer(profile, l)->kind, "loss") != 0)
            idx[(*n)++] = l;
    *out = idx;
    return SP_OK;
}

sp_status sp_split_from_counts(sp_ctx *ctx, const sp_profile *profile, const size_t *counts,
                               size_t n, size_t **first_layers) {
    if (!ctx)
        return SP_ERR_INVALID_ARG;
    sp_ctx_begin(ctx);
    if (!profile || !first_layers || (n && !counts))
        return sp_fail(ctx, SP_ERR_INVALID_ARG, "sp_split_from_counts: NULL argument");
    *first_layers = NULL;
    if (!n)
        return sp_fail(ctx, SP_ERR_INVALID_ARG, "the balance names no stage");
    size_t *mod = NULL, modules = 0, at = 0;
    sp_status st = module_layers(ctx, profile, &mod, &modules);
    if (st != SP_OK)
        return st;
    bool more = false; /* the sum passes the module count (counted no further: no overflow) */
    for (size_t s = 0; s < n && !more && st == SP_OK; s++) {
        if (counts[s] == 0)
            st = sp_fail(ctx, SP_ERR_INVALID_ARG, "the balance gives stage %zu no module", s);
        more = counts[s] > modules - at;
        at += more ? 0 : counts[s];
    }
    if (st == SP_OK && (more || at != modules))
        st = sp_fail(ctx, SP_ERR_INVALID_ARG,
                     "the balance adds up to %s%zu modules; the profile has %zu (its layers, "
                     "less the %zu of kind \"loss\", which is no module of the nn.Sequential)",
                     more ? "more than " : "", more ? modules : at, modules,
                     sp_profile_get_layer_count(profile) - modules);
    size_t *first = st == SP_OK ? sp_mallocarray(n, sizeof *first) : NULL;
    if (st == SP_OK && !first)
        st = sp_oom(ctx, "the split");
    at = 0;
    for (size_t s = 0; st == SP_OK && s < n; s++) {
        first[s] = s ? mod[at] : 0;
        at += counts[s];
    }
    sp_free(mod);
    if (st != SP_OK)
        return st;
    *first_layers = first;
    return SP_OK;
}

sp_status sp_split_from_parts(sp_ctx *ctx, const sp_profile *profile, const size_t *parts, size_t n,
                              size_t **first_layers, size_t *count) {
    if (!ctx)
        return SP_ERR_INVALID_ARG;
    sp_ctx_begin(ctx);
    if (!profile || !first_layers || !count || (n && !parts))
        return sp_fail(ctx, SP_ERR_INVALID_ARG, "sp_split_from_parts: NULL argument");
    *first_layers = NULL;
    *count = 0;
    size_t *mod = NULL, modules = 0;
    sp_status st = module_layers(ctx, profile, &mod, &modules);
    if (st != SP_OK)
        return st;
    if (n < 2 || parts[0] != 0 || parts[n - 1] != modules)
        st = sp_fail(ctx, SP_ERR_INVALID_ARG,
                     "the parts must run from 0 to the module count (%zu: the profile's layers, "
                     "less the %zu of kind \"loss\", which DeepSpeed takes as loss_fn)",
                     modules, sp_profile_get_layer_count(profile) - modules);
    for (size_t s = 0; st == SP_OK && s + 1 < n; s++)
        if (parts[s + 1] <= parts[s])
            st = sp_fail(ctx, SP_ERR_INVALID_ARG,
                         "the parts must increase: stage %zu runs from %zu to %zu", s, parts[s],
                         parts[s + 1]);
    size_t *first = st == SP_OK ? sp_mallocarray(n - 1, sizeof *first) : NULL;
    if (st == SP_OK && !first)
        st = sp_oom(ctx, "the split");
    for (size_t s = 0; st == SP_OK && s + 1 < n; s++)
        first[s] = s ? mod[parts[s]] : 0;
    sp_free(mod);
    if (st != SP_OK)
        return st;
    *first_layers = first;
    *count = n - 1;
    return SP_OK;
}

/* formats/plan_write.c: writing plans as "stagepart-plan" version 1 documents (docs/formats.md).
 *
 * Key order is fixed and arrays are in stage order, so plans diff cleanly. Provenance
 * (generator) records the tool version, features, command line and creation time. */
#include <cjson/cJSON.h>
#include <string.h>
#include <time.h>

#include "json_util.h"
#include "plan_impl.h"

static bool add_number(cJSON *obj, const char *key, double v) {
    return cJSON_AddNumberToObject(obj, key, v) != NULL;
}
static bool add_string(cJSON *obj, const char *key, const char *v) {
    return cJSON_AddStringToObject(obj, key, v) != NULL;
}

static bool add_generator(cJSON *root, const sp_plan *plan) {
    cJSON *g = cJSON_AddObjectToObject(root, "generator");
    if (!g)
        return false;
    char when[32] = "";
    time_t now = time(NULL);
    struct tm tm;
    if (gmtime_r(&now, &tm))
        strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return add_string(g, "tool", "stagepart") && add_string(g, "version", sp_version()) &&
           add_string(g, "git", sp_git_hash()) && add_string(g, "features", sp_features()) &&
           add_string(g, "command", plan->command ? plan->command : "") &&
           add_string(g, "created", when);
}

static bool add_stage(cJSON *arr, const sp_stage *s, bool replicated) {
    cJSON *o = cJSON_CreateObject();
    if (!o || !cJSON_AddItemToArray(arr, o)) {
        cJSON_Delete(o);
        return false;
    }
    return add_number(o, "index", s->index) && add_number(o, "device", s->device) &&
           add_string(o, "device_name", s->device_name ? s->device_name : "") &&
           add_number(o, "first_layer", (double)s->first_layer) &&
           (s->layer_count ? add_number(o, "last_layer", (double)s->last_layer)
                           : cJSON_AddNullToObject(o, "last_layer") != NULL) &&
           add_number(o, "layers", (double)s->layer_count) &&
           add_string(o, "first_name", s->first_name) && add_string(o, "last_name", s->last_name) &&
           add_number(o, "fwd_ms", s->fwd_ms) && add_number(o, "bwd_ms", s->bwd_ms) &&
           add_number(o, "time_ms", s->time_ms) &&
           add_number(o, "param_bytes", (double)s->param_bytes) &&
           add_number(o, "resident_bytes", (double)s->resident_bytes) &&
           add_number(o, "saved_bytes", (double)s->saved_bytes) &&
           add_number(o, "inflight_micro_batches", s->inflight) &&
           add_number(o, "memory_bytes", (double)s->memory_bytes) &&
           (s->wgrad_ms >= 0 ? add_number(o, "wgrad_ms", s->wgrad_ms)
                             : cJSON_AddNullToObject(o, "wgrad_ms") != NULL) &&
           add_number(o, "send_ms", s->send_ms) && add_number(o, "comm_ms", s->comm_ms) &&
           add_number(o, "recompute_ms", s->recompute_ms) && add_number(o, "chunk", s->chunk) &&
           (s->weight_versions <= 1 || add_number(o, "weight_versions", s->weight_versions)) &&
           (!replicated || (add_number(o, "replicas", s->replicas) &&
                            add_number(o, "allreduce_ms", s->allreduce_ms) &&
                            add_number(o, "share_ms", s->share_ms)));
}

/* an array of the plan's own strings, not copied: the tree lives shorter than the plan, and a
 * plan of 100,000 layers would otherwise copy 200,000 names */
static bool add_string_refs(cJSON *root, const char *key, const char *const *strings, size_t n) {
    cJSON *arr = cJSON_AddArrayToObject(root, key);
    for (size_t i = 0; arr && i < n; i++) {
        cJSON *str = cJSON_CreateStringReference(strings[i]);
        if (!str || !cJSON_AddItemToArray(arr, str)) {
            cJSON_Delete(str);
            return false;
        }
    }
    return arr != NULL;
}

/* what the plan is: the document, the profile, the options it was made with */
static bool add_head(cJSON *root, const sp_plan *plan) {
    const sp_plan_summary *m = &plan->summary;
    bool ok =
        add_string(root, "format", "stagepart-plan") && add_number(root, "version", 1) &&
        add_generator(root, plan) && add_string(root, "model", plan->model) &&
        add_string(root, "profile_sha256", plan->profile_sha256) &&
        add_number(root, "profile_layers", (double)plan->n_layers) &&
        (!m->profile_sms || add_number(root, "profile_sms", m->profile_sms)) &&
        add_string(root, "solver", sp_solver_name(m->solver)) &&
        add_string(root, "objective", sp_objective_name(m->objective)) &&
        cJSON_AddBoolToObject(root, "optimal", m->optimal) &&
        add_string(root, "guarantee", sp_guarantee_name(m->guarantee)) &&
        add_number(root, "stage_count", m->stages) && add_number(root, "chunks", m->chunks) &&
        add_number(root, "micro_batches", m->micro_batches) &&
        (!m->gpus || add_number(root, "gpus", m->gpus)) &&
        /* whose op order the in-flight counts follow: the simulated schedule's */
        add_string(root, "memory_model",
                   m->schedule.present ? sp_schedule_name(m->schedule.schedule) : "1f1b") &&
        add_string(root, "comm", sp_comm_name(m->comm)) &&
        add_string(root, "placement", sp_placement_name(m->placement)) &&
        (m->chunks < 2 || add_string(root, "chunk_layout", sp_chunk_layout_name(m->chunk_layout)));
    if (ok)
        ok = m->memory_limit_bytes
                 ? add_number(root, "memory_limit_bytes", (double)m->memory_limit_bytes)
                 : cJSON_AddNullToObject(root, "memory_limit_bytes") != NULL;
    if (ok && m->framework != SP_FRAMEWORK_ANY)
        ok = add_string(root, "framework", sp_framework_name(m->framework));
    if (ok && m->replica_cost != SP_REPLICA_COST_RING)
        ok = add_string(root, "replica_cost", sp_replica_cost_name(m->replica_cost));
    if (ok && m->activation_ratio > 0)
        ok = add_number(root, "activation_ratio", m->activation_ratio);
    if (ok && m->memory_saved_unknown) /* the stages' memory_bytes are resident memory alone */
        ok = cJSON_AddBoolToObject(root, "memory_saved_unknown", true) != NULL;
    if (ok && m->forward_only) /* the stage times are forward passes alone */
        ok = cJSON_AddBoolToObject(root, "forward_only", true) != NULL;
    return ok;
}

/* the plan's figures, and how the search that made it ended */
static bool add_figures(cJSON *root, const sp_plan_summary *m) {
    bool ok =
        add_number(root, "bottleneck_ms", m->bottleneck_ms) &&
        add_number(root, "bottleneck_stage", m->bottleneck_stage) &&
        add_number(root, "lower_bound_ms", m->lower_bound_ms) &&
        add_number(root, "mean_ms", m->mean_ms) && add_number(root, "stddev_ms", m->stddev_ms) &&
        add_number(root, "imbalance", m->imbalance) && add_number(root, "total_ms", m->total_ms) &&
        add_number(root, "formula_iteration_ms", m->formula_iteration_ms) &&
        add_number(root, "transfer_ms", m->transfer_ms) &&
        add_number(root, "even_split_bottleneck_ms", m->even_split_bottleneck_ms) &&
        add_number(root, "speedup_vs_even_split",
                   m->bottleneck_ms > 0 ? m->even_split_bottleneck_ms / m->bottleneck_ms : 1.0) &&
        add_number(root, "solve_ms", m->solve_ms);
    if (ok && m->even_split_over_memory)
        ok = cJSON_AddBoolToObject(root, "even_split_over_memory", true) != NULL;
    if (ok && m->solver == SP_SOLVER_ILP) {
        cJSON *o = cJSON_AddObjectToObject(root, "ilp");
        ok = o && add_string(o, "status", m->solver_status ? m->solver_status : "") &&
             add_number(o, "mip_gap", m->mip_gap) &&
             add_number(o, "best_bound_ms", m->best_bound_ms) &&
             add_number(o, "objective_ms", m->objective_ms) &&
             add_number(o, "nodes", (double)m->nodes) &&
             add_number(o, "free_binaries", (double)m->free_binaries);
    } else if (ok && m->solver_status) { /* the interleaved search: proven or its gap */
        cJSON *o = cJSON_AddObjectToObject(root, "search");
        ok = o && add_string(o, "status", m->solver_status) && add_number(o, "gap", m->mip_gap) &&
             add_number(o, "best_bound_ms", m->best_bound_ms) &&
             add_number(o, "objective_ms", m->objective_ms) &&
             add_number(o, "states", (double)m->nodes);
    }
    if (ok && m->schedule.present) {
        const sp_plan_schedule *sc = &m->schedule;
        cJSON *o = cJSON_AddObjectToObject(root, "schedule");
        ok = o && add_string(o, "name", sp_schedule_name(sc->schedule)) &&
             add_number(o, "micro_batches", sc->micro_batches) &&
             add_number(o, "chunks", sc->chunks) &&
             add_number(o, "iteration_ms", sc->iteration_ms) &&
             add_number(o, "bubble_fraction", sc->bubble_fraction) &&
             add_number(o, "efficiency", sc->efficiency);
    }
    return ok;
}

static cJSON *plan_tree(const sp_plan *plan) {
    const sp_plan_summary *m = &plan->summary;
    cJSON *root = cJSON_CreateObject();
    bool ok = root && add_head(root, plan) && add_figures(root, m);
    if (ok && plan->n_search) {
        cJSON *arr = cJSON_AddArrayToObject(root, "micro_batch_search");
        ok = arr && add_number(root, "target_efficiency", m->target_efficiency);
        for (size_t i = 0; ok && i < plan->n_search; i++) {
            cJSON *o = cJSON_CreateObject();
            ok = o && cJSON_AddItemToArray(arr, o) &&
                 add_number(o, "micro_batches", plan->search[i].micro_batches) &&
                 add_number(o, "efficiency", plan->search[i].efficiency);
        }
    }
    cJSON *stages = ok ? cJSON_AddArrayToObject(root, "stages") : NULL;
    ok = stages != NULL;
    for (size_t s = 0; ok && s < plan->n_stages; s++)
        ok = add_stage(stages, &plan->stages[s], m->gpus > 0);
    if (ok && plan->recomputed && plan->layer_names) {
        cJSON *arr = cJSON_AddArrayToObject(root, "recomputed_layers");
        ok = arr != NULL;
        for (size_t l = 0; ok && l < plan->n_layers; l++)
            if (plan->recomputed[l]) {
                cJSON *str = cJSON_CreateString(plan->layer_names[l]);
                ok = str && cJSON_AddItemToArray(arr, str);
            }
    }
    if (ok && plan->layer_names)
        ok = add_string_refs(root, "layer_names", plan->layer_names, plan->n_layers) &&
             add_string_refs(root, "layer_kinds", plan->layer_kinds, plan->n_layers);
    if (!ok) {
        cJSON_Delete(root);
        return NULL;
    }
    return root;
}

sp_status sp_plan_to_json(sp_ctx *ctx, const sp_plan *plan, char **out) {
    if (!ctx)
        return SP_ERR_INVALID_ARG;
    sp_ctx_begin(ctx);
    if (!plan || !out)
        return sp_fail(ctx, SP_ERR_INVALID_ARG, "sp_plan_to_json: NULL argument");
    *out = NULL;
    /* the tree's nodes from an arena sized for the plan (what does not fit is malloc'd): a large
     * plan is a few hundred thousand nodes, made and freed once. A layer is two nodes (its name
     * and kind, not copied), a stage or a summary field a node and its key. */
    const size_t node = (sizeof(cJSON) + 15) & ~(size_t)15, member = node + 32;
    struct sp_parse_arena arena;
    sp_parse_arena_init(&arena, (size_t)plan->n_layers * 2 * node +
                                    ((size_t)plan->n_stages + 8) * 32 * member);
    sp_parse_arena_enter(&arena);
    cJSON *root = plan_tree(plan);
    sp_parse_arena_leave(); /* the text is the caller's: printed with the usual allocator */
    /* the text's length, about: every layer's name and kind quoted and separated (4 bytes each
     * besides its letters), about 1 KiB a stage and 8 KiB for the rest */
    size_t expect = plan->layer_names ? plan->layer_pool_len + 8 * plan->n_layers : 0;
    expect += ((size_t)plan->n_stages + 8) * 1024;
    sp_status st = root ? sp_json_print(ctx, root, expect, "writing a plan", out)
                        : sp_oom(ctx, "writing a plan");
    if (!sp_parse_arena_holds_all(&arena)) { /* else releasing the arena frees the tree */
        sp_parse_arena_enter(&arena);
        cJSON_Delete(root);
        sp_parse_arena_leave();
    }
    sp_parse_arena_release(&arena);
    return st;
}

sp_status sp_plan_write(sp_ctx *ctx, const sp_plan *plan, const char *path) {
    char *text = NULL;
    sp_status st = sp_plan_to_json(ctx, plan, &text);
    if (st != SP_OK)
        return st;
    st = sp_write_file_atomic(ctx, path, text, strlen(text));
    sp_free(text);
    return st;
}

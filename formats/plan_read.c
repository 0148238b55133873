/* formats/plan_read.c: reading "stagepart-plan" documents back (for simulate, check, export).
 *
 * Validates what later steps rely on: the stage list covers the layers contiguously and in
 * order, every time is a finite number >= 0, chunk counts fit. The summary figures that follow
 * from the stages (bottleneck, mean, stddev, imbalance) are recomputed from them, so a plan
 * edited by hand cannot carry stale ones; the others are read as recorded. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "json_util.h"
#include "plan_impl.h"

#define SP_PLAN_MAX_FILE_BYTES ((size_t)1 << 30)
/* The most a plan the library writes can hold, with room for rounding to a nanosecond: a
 * stage's time, work and blocking transfers, stays below 2^62 ns (sp_partition refuses inputs
 * that could pass it); one transfer to the next stage (send_ms) is bounded by the links file. */
#define SP_PLAN_MAX_STAGE_MS (SP_PROFILE_MAX_TOTAL_MS * 1.001)
#define SP_PLAN_MAX_SEND_MS  (SP_MAX_TRANSFER_MS * 1.001)

/* "guarantee", which plans written before it existed lack: then "proven" when "optimal" says so,
 * else "none"; when present, "optimal" must agree with it */
static void read_guarantee(struct sp_json_reader *r, int guarantee, sp_plan_summary *m) {
    if (guarantee < 0) {
        m->guarantee = m->optimal ? SP_GUARANTEE_PROVEN : SP_GUARANTEE_NONE;
        return;
    }
    m->guarantee = (sp_guarantee)guarantee;
    bool optimal = m->guarantee == SP_GUARANTEE_EXACT || m->guarantee == SP_GUARANTEE_PROVEN;
    if (optimal != m->optimal)
        sp_json_problem(r, "", "optimal", "expected %s with \"guarantee\": \"%s\"",
                        optimal ? "true" : "false", sp_guarantee_name(m->guarantee));
}

static void read_stage(struct sp_json_reader *r, const cJSON *obj, size_t k, sp_stage *st,
                       const char **first, const char **last, const char **device_name) {
    char where[48];
    snprintf(where, sizeof where, "stages[%zu]", k);
    memset(st, 0, sizeof *st);
    *first = *last = *device_name = "";
    st->wgrad_ms = -1;
    if (!cJSON_IsObject(obj)) {
        char got[64];
        sp_json_problem(r, where, "", "expected an object, got %s",
                        sp_json_describe(obj, got, sizeof got));
        return;
    }
    uint64_t index = k, device = 0, first_layer = 0, last_layer = 0, inflight = 1, chunk = 0,
             versions = 1, replicas = 1;
    sp_json_get_uint(r, obj, where, "index", true, 0, &index);
    if (index != k)
        sp_json_problem(r, where, "index", "expected %zu (stages in order), got %llu", k,
                        (unsigned long long)index);
    sp_json_get_uint(r, obj, where, "device", false, 0, &device);
    sp_json_get_uint(r, obj, where, "first_layer", true, 0, &first_layer);
    /* an empty stage (docs/formats.md#plan): "layers": 0 and "last_layer": null */
    const cJSON *last_json = cJSON_GetObjectItemCaseSensitive(obj, "last_layer");
    bool empty = cJSON_IsNull(last_json);
    if (!empty)
        sp_json_get_uint(r, obj, where, "last_layer", true, 0, &last_layer);
    uint64_t layers = UINT64_MAX;
    sp_json_get_uint(r, obj, where, "layers", false, 0, &layers);
    sp_json_get_string(r, obj, where, "first_name", false, SP_NAME_MAX_BYTES, first);
    sp_json_get_string(r, obj, where, "last_name", false, SP_NAME_MAX_BYTES, last);
    sp_json_get_string(r, obj, where, "device_name", false, SP_NAME_MAX_BYTES, device_name);
    sp_json_get_number(r, obj, where, "fwd_ms", true, 0, SP_PLAN_MAX_STAGE_MS, &st->fwd_ms);
    sp_json_get_number(r, obj, where, "bwd_ms", true, 0, SP_PLAN_MAX_STAGE_MS, &st->bwd_ms);
    st->time_ms = st->fwd_ms + st->bwd_ms;
    sp_json_get_number(r, obj, where, "time_ms", false, 0, SP_PLAN_MAX_STAGE_MS, &st->time_ms);
    if (sp_json_get_number(r, obj, where, "wgrad_ms", false, 0, SP_PLAN_MAX_STAGE_MS,
                           &st->wgrad_ms) &&
        st->wgrad_ms > st->bwd_ms)
        sp_json_problem(r, where, "wgrad_ms", "expected at most bwd_ms (%g), got %g", st->bwd_ms,
                        st->wgrad_ms);
    sp_json_get_number(r, obj, where, "send_ms", false, 0, SP_PLAN_MAX_SEND_MS, &st->send_ms);
    sp_json_get_number(r, obj, where, "comm_ms", false, 0, SP_PLAN_MAX_STAGE_MS, &st->comm_ms);
    sp_json_get_uint(r, obj, where, "param_bytes", false, 0, &st->param_bytes);
    sp_json_get_uint(r, obj, where, "resident_bytes", false, 0, &st->resident_bytes);
    sp_json_get_uint(r, obj, where, "saved_bytes", false, 0, &st->saved_bytes);
    sp_json_get_uint(r, obj, where, "inflight_micro_batches", false, 0, &inflight);
    if (sp_json_get_uint(r, obj, where, "weight_versions", false, 0, &versions) &&
        (versions < 1 || versions > SP_MAX_STAGES))
        sp_json_problem(r, where, "weight_versions", "expected 1 to %u, got %llu", SP_MAX_STAGES,
                        (unsigned long long)versions);
    st->memory_bytes =
        st->resident_bytes + inflight * st->saved_bytes +
        (versions > 1 && versions <= SP_MAX_STAGES ? versions - 1 : 0) * st->param_bytes;
    sp_json_get_uint(r, obj, where, "memory_bytes", false, 0, &st->memory_bytes);
    sp_json_get_uint(r, obj, where, "chunk", false, 0, &chunk);
    if (sp_json_get_uint(r, obj, where, "replicas", false, 1, &replicas) &&
        replicas > SP_MAX_REPLICATED_GPUS)
        sp_json_problem(r, where, "replicas", "expected 1 to %u, got %llu", SP_MAX_REPLICATED_GPUS,
                        (unsigned long long)replicas);
    st->replicas = replicas <= SP_MAX_REPLICATED_GPUS ? (uint32_t)replicas : 1;
    sp_json_get_number(r, obj, where, "allreduce_ms", false, 0, SP_PLAN_MAX_STAGE_MS,
                       &st->allreduce_ms);
    st->share_ms = st->time_ms;
    sp_json_get_number(r, obj, where, "share_ms", false, 0, SP_PLAN_MAX_STAGE_MS, &st->share_ms);
    if (empty) {
        if (layers != 0)
            sp_json_problem(r, where, "layers",
                            "expected 0 (last_layer is null: an empty stage), got %s",
                            layers == UINT64_MAX ? "nothing" : "a count above 0");
        last_layer = first_layer;
    } else if (last_layer < first_layer) {
        sp_json_problem(r, where, "last_layer", "expected at least first_layer (%llu), got %llu",
                        (unsigned long long)first_layer, (unsigned long long)last_layer);
    } else if (layers != UINT64_MAX && layers != last_layer - first_layer + 1) {
        sp_json_problem(
            r, where, "layers", "expected %llu (last_layer - first_layer + 1), got %llu",
            (unsigned long long)(last_layer - first_layer + 1), (unsigned long long)layers);
    }
    st->index = (uint32_t)k;
    st->device = device > UINT32_MAX ? UINT32_MAX : (uint32_t)device;
    st->first_layer = (size_t)first_layer;
    st->last_layer = (size_t)last_layer;
    st->layer_count = empty ? 0 : (size_t)(last_layer - first_layer + 1);
    st->inflight = inflight > UINT32_MAX ? UINT32_MAX : (uint32_t)inflight;
    st->chunk = chunk > UINT32_MAX ? UINT32_MAX : (uint32_t)chunk;
    st->weight_versions = versions >= 1 && versions <= SP_MAX_STAGES ? (uint32_t)versions : 1;
}

/* The top level's fields that need a check or a conversion before they go into the plan */
struct plan_head {
    const char *model, *sha, *command;
    uint64_t stages, chunks, micro, layers, limit, profile_sms, gpus;
    int solver, objective, comm, placement, layout, framework, replica_cost;
    int guarantee; /* -1: not recorded */
};
#define HEAD(key, type, required, member, min, max)                                                \
    { key, type, required, offsetof(struct plan_head, member), min, max, 0 }
#define HEAD_ENUM(key, member, table)                                                              \
    { key, SP_JSON_ENUM, false, offsetof(struct plan_head, member), 0, 0, table }
static const struct sp_json_field head_fields[] = {
    HEAD("model", SP_JSON_STRING, true, model, 0, SP_NAME_MAX_BYTES),
    HEAD("profile_sha256", SP_JSON_STRING, false, sha, 0, 64),
    HEAD("profile_layers", SP_JSON_UINT, false, layers, 1, 0),
    HEAD("profile_sms", SP_JSON_UINT, false, profile_sms, 1, SP_MAX_SMS),
    HEAD_ENUM("solver", solver, SP_NAMES_SOLVER),
    HEAD_ENUM("objective", objective, SP_NAMES_OBJECTIVE),
    HEAD_ENUM("comm", comm, SP_NAMES_COMM),
    HEAD_ENUM("placement", placement, SP_NAMES_PLACEMENT),
    HEAD_ENUM("framework", framework, SP_NAMES_FRAMEWORK),
    HEAD_ENUM("replica_cost", replica_cost, SP_NAMES_REPLICA_COST),
    HEAD_ENUM("chunk_layout", layout, SP_NAMES_CHUNK_LAYOUT),
    HEAD_ENUM("guarantee", guarantee, SP_NAMES_GUARANTEE),
    HEAD("stage_count", SP_JSON_UINT, true, stages, 1, 0),
    HEAD("chunks", SP_JSON_UINT, false, chunks, 1, 0),
    HEAD("micro_batches", SP_JSON_UINT, true, micro, 1, 0),
    HEAD("gpus", SP_JSON_UINT, false, gpus, 1, 0),
    HEAD("memory_limit_bytes", SP_JSON_UINT, false, limit, 1, 0),
};
/* and those that go into the summary as they are recorded */
#define SUMMARY(key, type, member, min, max)                                                       \
    { key, type, false, offsetof(sp_plan_summary, member), min, max, 0 }
static const struct sp_json_field summary_fields[] = {
    SUMMARY("activation_ratio", SP_JSON_NUMBER, activation_ratio, 1e-9, 1e9),
    SUMMARY("optimal", SP_JSON_BOOL, optimal, 0, 0),
    SUMMARY("memory_saved_unknown", SP_JSON_BOOL, memory_saved_unknown, 0, 0),
    SUMMARY("forward_only", SP_JSON_BOOL, forward_only, 0, 0),
    SUMMARY("lower_bound_ms", SP_JSON_NUMBER, lower_bound_ms, 0, HUGE_VAL),
    SUMMARY("total_ms", SP_JSON_NUMBER, total_ms, 0, HUGE_VAL),
    SUMMARY("formula_iteration_ms", SP_JSON_NUMBER, formula_iteration_ms, 0, HUGE_VAL),
    SUMMARY("even_split_bottleneck_ms", SP_JSON_NUMBER, even_split_bottleneck_ms, 0, HUGE_VAL),
    SUMMARY("solve_ms", SP_JSON_NUMBER, solve_ms, 0, HUGE_VAL),
    SUMMARY("even_split_over_memory", SP_JSON_BOOL, even_split_over_memory, 0, 0),
};
/* "schedule": the simulated schedule recorded with the plan */
struct plan_schedule {
    const char *name;
    uint64_t micro, chunks;
    double iteration_ms, bubble, efficiency;
};
#define SCHEDULE(key, type, required, member, min, max)                                            \
    { key, type, required, offsetof(struct plan_schedule, member), min, max, 0 }
static const struct sp_json_field schedule_fields[] = {
    SCHEDULE("name", SP_JSON_STRING, true, name, 0, 64),
    SCHEDULE("micro_batches", SP_JSON_UINT, true, micro, 1, 0),
    SCHEDULE("chunks", SP_JSON_UINT, false, chunks, 1, 0),
    SCHEDULE("iteration_ms", SP_JSON_NUMBER, true, iteration_ms, 0, HUGE_VAL),
    SCHEDULE("bubble_fraction", SP_JSON_NUMBER, true, bubble, 0, 1),
    SCHEDULE("efficiency", SP_JSON_NUMBER, true, efficiency, 0, 1),
};

static void read_schedule(struct sp_json_reader *r, const cJSON *root, sp_plan_schedule *sc) {
    const cJSON *obj = cJSON_GetObjectItemCaseSensitive(root, "schedule");
    if (!cJSON_IsObject(obj))
        return;
    struct plan_schedule v = {.micro = 1, .chunks = 1};
    sp_json_read_fields(r, obj, "schedule", schedule_fields, SP_COUNT_OF(schedule_fields), &v);
    if (v.name && sp_schedule_from_name(v.name, &sc->schedule) != SP_OK)
        sp_json_problem(r, "schedule", "name", "unknown schedule \"%s\"", v.name);
    sc->micro_batches = v.micro > SP_MAX_MICRO_BATCHES ? SP_MAX_MICRO_BATCHES : (uint32_t)v.micro;
    sc->chunks = v.chunks > SP_MAX_STAGES ? SP_MAX_STAGES : (uint32_t)v.chunks;
    sc->iteration_ms = v.iteration_ms;
    sc->bubble_fraction = v.bubble;
    sc->efficiency = v.efficiency;
    sc->present = true;
}

/* the top level: the fields' table, what ties them together, the schedule and the command;
 * SP_ERR_LIMIT for counts beyond the limits, else SP_ERR_SCHEMA (the problems say which) */
static sp_status read_head(struct sp_json_reader *r, const cJSON *root, struct plan_head *h,
                           sp_plan_summary *m) {
    if (!cJSON_IsObject(root)) {
        char got[64];
        sp_json_problem(r, "", "", "expected a JSON object at the top level, got %s",
                        sp_json_describe(root, got, sizeof got));
        return SP_ERR_SCHEMA;
    }
    if (!sp_json_check_header(r, root, "stagepart-plan", 1))
        return SP_ERR_SCHEMA;
    sp_json_read_fields(r, root, "", head_fields, SP_COUNT_OF(head_fields), h);
    sp_json_read_fields(r, root, "", summary_fields, SP_COUNT_OF(summary_fields), m);
    read_guarantee(r, h->guarantee, m);
    if (h->layout == SP_CHUNKS_V && h->chunks != 2)
        sp_json_problem(r, "", "chunk_layout",
                        "\"v\" places exactly 2 chunks per device; this plan has %llu",
                        (unsigned long long)h->chunks);
    if (h->gpus && (h->gpus > SP_MAX_REPLICATED_GPUS || h->chunks != 1))
        sp_json_problem(r, "", "gpus",
                        "expected at most %u devices and one chunk per stage (replicated "
                        "stages), got %llu devices and %llu chunks",
                        SP_MAX_REPLICATED_GPUS, (unsigned long long)h->gpus,
                        (unsigned long long)h->chunks);
    read_schedule(r, root, &m->schedule);
    const cJSON *gen = cJSON_GetObjectItemCaseSensitive(root, "generator");
    if (cJSON_IsObject(gen))
        sp_json_get_string(r, gen, "generator", "command", false, (size_t)1 << 20, &h->command);
    if (h->stages > SP_MAX_STAGES || h->chunks > SP_MAX_STAGES || h->micro > SP_MAX_MICRO_BATCHES) {
        sp_json_problem(r, "", "stage_count",
                        "stage_count (%llu), chunks (%llu) or "
                        "micro_batches (%llu) beyond the limits (%u, %u, %u)",
                        (unsigned long long)h->stages, (unsigned long long)h->chunks,
                        (unsigned long long)h->micro, SP_MAX_STAGES, SP_MAX_STAGES,
                        SP_MAX_MICRO_BATCHES);
        return SP_ERR_LIMIT;
    }
    return SP_ERR_SCHEMA;
}

/* "stages": one object per stage, stage_count x chunks of them; names[3k..3k+2] get stage k's
 * first, last and device names (into the tree) */
static sp_status read_stages(struct sp_json_reader *r, const cJSON *root, const struct plan_head *h,
                             sp_plan *plan, const char ***names) {
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(root, "stages");
    if (!cJSON_IsArray(arr)) {
        sp_json_problem(r, "", "stages", "expected an array of stage objects");
        return SP_ERR_SCHEMA;
    }
    size_t n = 0;
    for (const cJSON *c = arr->child; c; c = c->next)
        n++;
    if (r->ctx->problems)
        return SP_ERR_SCHEMA;
    if (n != h->stages * h->chunks) {
        sp_json_problem(r, "", "stages",
                        "expected %llu stages (stage_count %llu x chunks %llu), got %zu",
                        (unsigned long long)(h->stages * h->chunks), (unsigned long long)h->stages,
                        (unsigned long long)h->chunks, n);
        return SP_ERR_SCHEMA;
    }
    plan->stages = sp_calloc(n, sizeof *plan->stages);
    *names = sp_calloc(3 * n, sizeof **names);
    if (!plan->stages || !*names)
        return sp_oom(r->ctx, "reading a plan");
    plan->n_stages = n;
    const char **nm = *names;
    size_t k = 0;
    for (const cJSON *c = arr->child; c; c = c->next, k++)
        read_stage(r, c, k, &plan->stages[k], &nm[3 * k], &nm[3 * k + 1], &nm[3 * k + 2]);
    return SP_OK;
}

/* replicated stages take devices in order, idle ones allowed between stages, and their replicas
 * add up to gpus */
static void check_replicated(struct sp_json_reader *r, const sp_plan *plan, uint64_t gpus) {
    uint64_t devices_before = 0, next_device = 0;
    for (size_t k = 0; k < plan->n_stages; k++) {
        const sp_stage *s = &plan->stages[k];
        char where[48];
        snprintf(where, sizeof where, "stages[%zu]", k);
        if (s->device < next_device)
            sp_json_problem(r, where, "device",
                            "expected at least %llu (replicated stages take devices in order: "
                            "after the devices of the stage before), got %u",
                            (unsigned long long)next_device, s->device);
        next_device = (uint64_t)s->device + s->replicas;
        devices_before += s->replicas;
    }
    char last[48];
    snprintf(last, sizeof last, "stages[%zu]", plan->n_stages - 1);
    if (devices_before != gpus)
        sp_json_problem(r, last, "replicas",
                        "expected the stages' replicas to add up to gpus (%llu), got %llu",
                        (unsigned long long)gpus, (unsigned long long)devices_before);
}

/* stage k on the device its chunk layout says, or with placement "search" a device no other
 * pipeline stage uses and chunk k on the device of stage k's */
static sp_status check_devices(struct sp_json_reader *r, const sp_plan *plan,
                               const struct plan_head *h) {
    uint8_t *used = h->placement == SP_PLACEMENT_SEARCH ? sp_calloc(SP_MAX_DEVICES, 1) : NULL;
    if (h->placement == SP_PLACEMENT_SEARCH && !used)
        return sp_oom(r->ctx, "reading a plan");
    sp_chunk_layout layout = (sp_chunk_layout)h->layout;
    const char *rule = layout == SP_CHUNKS_V ? "k for k < P, else 2P-1-k" : "k mod P";
    for (size_t k = 0; k < plan->n_stages && !r->ctx->problems; k++) {
        const sp_stage *s = &plan->stages[k];
        char where[48];
        snprintf(where, sizeof where, "stages[%zu]", k);
        uint32_t dev = sp_chunk_device(layout, (uint32_t)h->stages, (uint32_t)k);
        if (used && k >= h->stages && s->device != plan->stages[dev].device)
            sp_json_problem(r, where, "device",
                            "expected %u, the device of stage %u (chunk k runs on the device of "
                            "stage %s, P = %llu), got %u",
                            plan->stages[dev].device, dev, rule, (unsigned long long)h->stages,
                            s->device);
        else if (used && k < h->stages && (s->device >= SP_MAX_DEVICES || used[s->device]++))
            sp_json_problem(r, where, "device",
                            "expected a device index below %u that no other stage uses "
                            "(placement \"search\"), got %u",
                            SP_MAX_DEVICES, s->device);
        else if (!used && s->device != dev)
            sp_json_problem(r, where, "device",
                            "expected %u (chunk_layout \"%s\": stage k runs on device %s, P = "
                            "%llu), got %u",
                            dev, sp_chunk_layout_name(layout), rule, (unsigned long long)h->stages,
                            s->device);
    }
    sp_free(used);
    return SP_OK;
}

/* the stages cover the layers contiguously, in order, to the profile's last; their devices */
static sp_status check_stages(struct sp_json_reader *r, const sp_plan *plan,
                              const struct plan_head *h) {
    size_t n = plan->n_stages;
    for (size_t k = 0; k < n && !r->ctx->problems; k++) {
        const sp_stage *s = &plan->stages[k];
        char where[48];
        snprintf(where, sizeof where, "stages[%zu]", k);
        size_t expect = k ? plan->stages[k - 1].first_layer + plan->stages[k - 1].layer_count : 0;
        if (s->first_layer != expect)
            sp_json_problem(r, where, "first_layer",
                            "expected %zu (stages cover the layers contiguously), got %zu", expect,
                            s->first_layer);
        if (!h->gpus && s->replicas != 1)
            sp_json_problem(r, where, "replicas",
                            "expected 1: only a plan with \"gpus\" replicates stages, got %u",
                            s->replicas);
    }
    sp_status st = SP_OK;
    if (!r->ctx->problems && h->gpus)
        check_replicated(r, plan, h->gpus);
    else if (!r->ctx->problems)
        st = check_devices(r, plan, h);
    size_t covered = n ? plan->stages[n - 1].first_layer + plan->stages[n - 1].layer_count : 0;
    if (!r->ctx->problems && h->layers && covered != h->layers)
        sp_json_problem(r, "stages[last]", "last_layer",
                        "expected the stages to end at layer %llu (the profile's last), got %zu",
                        (unsigned long long)(h->layers - 1), covered - 1);
    if (!r->ctx->problems && !covered)
        sp_json_problem(r, "stages", "", "expected at least one layer in some stage");
    return st;
}

static void fill_summary(sp_plan_summary *m, const struct plan_head *h) {
    m->solver = (sp_solver)h->solver;
    m->objective = (sp_objective)h->objective;
    m->comm = (sp_comm)h->comm;
    m->placement = (sp_placement)h->placement;
    m->framework = (sp_framework)h->framework;
    m->replica_cost = (sp_replica_cost)h->replica_cost;
    m->stages = (uint32_t)h->stages;
    m->chunks = (uint32_t)h->chunks;
    m->chunk_layout = (sp_chunk_layout)h->layout;
    m->micro_batches = (uint32_t)h->micro;
    m->profile_sms = (uint32_t)h->profile_sms;
    m->gpus = (uint32_t)h->gpus;
    m->memory_limit_bytes = h->limit;
}

/* the model, command and stage names copied out of the tree; the devices' names */
static sp_status keep_names(sp_ctx *ctx, sp_plan *plan, const struct plan_head *h,
                            const char **names) {
    snprintf(plan->profile_sha256, sizeof plan->profile_sha256, "%s", h->sha ? h->sha : "");
    plan->model = sp_strdup(h->model);
    plan->command = h->command ? sp_strdup(h->command) : NULL;
    size_t total = 0;
    for (size_t i = 0; i < plan->n_stages; i++)
        total += strlen(names[3 * i]) + strlen(names[3 * i + 1]) + 2;
    plan->names = sp_malloc(total);
    if (!plan->model || (h->command && !plan->command) || !plan->names)
        return sp_oom(ctx, "reading a plan");
    char *w = plan->names;
    for (size_t i = 0; i < plan->n_stages; i++) {
        sp_stage *st = &plan->stages[i];
        size_t l = strlen(names[3 * i]) + 1;
        st->first_name = memcpy(w, names[3 * i], l);
        w += l;
        l = strlen(names[3 * i + 1]) + 1;
        st->last_name = memcpy(w, names[3 * i + 1], l);
        w += l;
    }
    const char **device_names = sp_mallocarray(plan->n_stages, sizeof *device_names);
    for (size_t i = 0; device_names && i < plan->n_stages; i++)
        device_names[i] = names[3 * i + 2];
    sp_status st = device_names ? sp_plan_set_devices(ctx, plan, NULL, device_names)
                                : sp_oom(ctx, "reading a plan");
    sp_free(device_names);
    return st;
}

/* "layer_names" and "layer_kinds", when the plan carries them: one per profile layer */
static sp_status read_layer_names(struct sp_json_reader *r, const cJSON *root, sp_plan *plan) {
    const cJSON *ln = cJSON_GetObjectItemCaseSensitive(root, "layer_names");
    const cJSON *lk = cJSON_GetObjectItemCaseSensitive(root, "layer_kinds");
    if (!ln || cJSON_IsNull(ln))
        return SP_OK;
    size_t count = cJSON_IsArray(ln) ? (size_t)cJSON_GetArraySize(ln) : 0;
    size_t kcount = cJSON_IsArray(lk) ? (size_t)cJSON_GetArraySize(lk) : 0;
    if (count != plan->n_layers || (lk && !cJSON_IsNull(lk) && kcount != count)) {
        sp_json_problem(r, "", "layer_names",
                        "expected %zu names (and as many kinds), one per profile layer",
                        plan->n_layers);
        return SP_ERR_SCHEMA;
    }
    const char **ns = sp_calloc(count, sizeof *ns), **ks = sp_calloc(count, sizeof *ks);
    sp_status st = ns && ks ? SP_OK : sp_oom(r->ctx, "reading a plan");
    size_t i = 0;
    const cJSON *kv = cJSON_IsArray(lk) ? lk->child : NULL;
    for (const cJSON *c = ln->child; st == SP_OK && c;
         c = c->next, i++, kv = kv ? kv->next : NULL) {
        ns[i] = cJSON_IsString(c) ? c->valuestring : NULL;
        ks[i] = kv && cJSON_IsString(kv) ? kv->valuestring : "";
        if (!ns[i])
            sp_json_problem(r, "layer_names", "", "entry %zu is not a string", i);
    }
    if (st == SP_OK && r->ctx->problems)
        st = SP_ERR_SCHEMA;
    else if (st == SP_OK)
        st = sp_plan_set_layers(r->ctx, plan, count, ns, ks);
    sp_free(ns);
    sp_free(ks);
    return st;
}

/* the plan from the tree: SP_OK, or the status with the problems reported (schema) or the
 * context's message (memory) */
static sp_status read_plan(struct sp_json_reader *r, const cJSON *root, sp_plan *plan) {
    struct plan_head h = {.sha = "",
                          .chunks = 1,
                          .micro = 1,
                          .solver = SP_SOLVER_DP,
                          .objective = SP_OBJECTIVE_BOTTLENECK,
                          .comm = SP_COMM_OVERLAP,
                          .placement = SP_PLACEMENT_ORDER,
                          .layout = SP_CHUNKS_LOOP,
                          .framework = SP_FRAMEWORK_ANY,
                          .replica_cost = SP_REPLICA_COST_RING,
                          .guarantee = -1};
    const char **names = NULL;
    sp_status st = read_head(r, root, &h, &plan->summary);
    if (r->ctx->problems)
        return st;
    st = read_stages(r, root, &h, plan, &names);
    if (st == SP_OK && !r->ctx->problems)
        st = check_stages(r, plan, &h);
    if (st == SP_OK && !r->ctx->problems) {
        fill_summary(&plan->summary, &h);
        plan->n_layers = h.layers ? (size_t)h.layers
                                  : plan->stages[plan->n_stages - 1].first_layer +
                                        plan->stages[plan->n_stages - 1].layer_count;
        st = keep_names(r->ctx, plan, &h, names);
        if (st == SP_OK)
            sp_plan_recompute_summary(plan);
        if (st == SP_OK)
            st = read_layer_names(r, root, plan);
    }
    sp_free(names);
    return r->ctx->problems && st != SP_ERR_NOMEM ? SP_ERR_SCHEMA : st;
}

sp_status sp_plan_parse(sp_ctx *ctx, const char *name, const char *data, size_t len,
                        sp_plan **out) {
    if (!ctx)
        return SP_ERR_INVALID_ARG;
    sp_ctx_begin(ctx);
    if (!out || !data)
        return sp_fail(ctx, SP_ERR_INVALID_ARG, "sp_plan_parse: NULL argument");
    *out = NULL;
    name = name ? name : "<plan>";
    cJSON *root = NULL;
    sp_status st = sp_json_parse(ctx, name, data, len, &root);
    if (st != SP_OK)
        return st;
    struct sp_json_reader r = {ctx, name};
    sp_plan *plan = sp_calloc(1, sizeof *plan);
    st = plan ? read_plan(&r, root, plan) : sp_oom(ctx, "reading a plan");
    if (ctx->problems && st != SP_ERR_NOMEM) {
        sp_problems_finish(ctx);
        ctx->status = st;
    }
    cJSON_Delete(root);
    if (st != SP_OK) {
        sp_plan_destroy(plan);
        return st;
    }
    *out = plan;
    return SP_OK;
}

sp_status sp_plan_load(sp_ctx *ctx, const char *path, sp_plan **out) {
    if (!ctx)
        return SP_ERR_INVALID_ARG;
    sp_ctx_begin(ctx);
    if (!path || !out)
        return sp_fail(ctx, SP_ERR_INVALID_ARG, "sp_plan_load: NULL argument");
    *out = NULL;
    char *data = NULL;
    size_t len = 0;
    sp_status st = sp_read_file(ctx, path, SP_PLAN_MAX_FILE_BYTES, &data, &len);
    if (st != SP_OK)
        return st;
    st = sp_plan_parse(ctx, path, data, len, out);
    sp_free(data);
    return st;
}

/* formats/plan_read.c: reading "stagepart-plan" documents back (for simulate, check, export).
 *
 * Validates what later steps rely on: the stage list covers the layers contiguously and in
 * order, every time is a finite number >= 0, chunk counts fit. The summary figures that follow
 * from the stages (bottleneck, mean, stddev, imbalance) are recomputed from them, so a plan
 * edited by hand cannot carry stale ones; the others are read as recorded. */
#include <math.h>
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

static bool read_enum(struct sp_json_reader *r, const cJSON *root, const char *key, sp_names table,
                      int *out) {
    const char *name = NULL;
    if (!sp_json_get_string(r, root, "", key, false, 64, &name) || !name)
        return true;
    int v = sp_names_value(table, name);
    if (v < 0) {
        sp_json_problem(r, "", key, "unknown value \"%s\"", name);
        return false;
    }
    *out = v;
    return true;
}

/* "guarantee", which plans written before it existed lack: then "proven" when "optimal" says so,
 * else "none"; when present, "optimal" must agree with it */
static void read_guarantee(struct sp_json_reader *r, const cJSON *root, sp_plan_summary *m) {
    int guarantee = -1;
    read_enum(r, root, "guarantee", SP_NAMES_GUARANTEE, &guarantee);
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
    const char **names = NULL;
    sp_status fail = SP_ERR_SCHEMA;
    if (!plan) {
        cJSON_Delete(root);
        return sp_oom(ctx, "reading a plan");
    }
    sp_plan_summary *m = &plan->summary;
    const char *model = NULL, *sha = "", *command = NULL;
    uint64_t stages = 0, chunks = 1, micro = 1, layers = 0, limit = 0;
    int solver = SP_SOLVER_DP, objective = SP_OBJECTIVE_BOTTLENECK, comm = SP_COMM_OVERLAP;
    int placement = SP_PLACEMENT_ORDER, layout = SP_CHUNKS_LOOP, framework = SP_FRAMEWORK_ANY;
    int replica_cost = SP_REPLICA_COST_RING;
    uint8_t *device_used = NULL; /* placement search: one stage per device */
    size_t covered = 0;          /* layers the stages hold, in order */
    if (!cJSON_IsObject(root)) {
        char got[64];
        sp_json_problem(&r, "", "", "expected a JSON object at the top level, got %s",
                        sp_json_describe(root, got, sizeof got));
        goto done;
    }
    if (!sp_json_check_header(&r, root, "stagepart-plan", 1))
        goto done;
    sp_json_get_string(&r, root, "", "model", true, SP_NAME_MAX_BYTES, &model);
    sp_json_get_string(&r, root, "", "profile_sha256", false, 64, &sha);
    sp_json_get_uint(&r, root, "", "profile_layers", false, 1, &layers);
    uint64_t profile_sms = 0;
    if (sp_json_get_uint(&r, root, "", "profile_sms", false, 1, &profile_sms) &&
        profile_sms > SP_MAX_SMS)
        sp_json_problem(&r, "", "profile_sms", "expected at most %u SMs, got %llu", SP_MAX_SMS,
                        (unsigned long long)profile_sms);
    read_enum(&r, root, "solver", SP_NAMES_SOLVER, &solver);
    read_enum(&r, root, "objective", SP_NAMES_OBJECTIVE, &objective);
    read_enum(&r, root, "comm", SP_NAMES_COMM, &comm);
    read_enum(&r, root, "placement", SP_NAMES_PLACEMENT, &placement);
    read_enum(&r, root, "framework", SP_NAMES_FRAMEWORK, &framework);
    read_enum(&r, root, "replica_cost", SP_NAMES_REPLICA_COST, &replica_cost);
    sp_json_get_number(&r, root, "", "activation_ratio", false, 1e-9, 1e9, &m->activation_ratio);
    read_enum(&r, root, "chunk_layout", SP_NAMES_CHUNK_LAYOUT, &layout);
    sp_json_get_bool(&r, root, "", "optimal", false, &m->optimal);
    read_guarantee(&r, root, m);
    sp_json_get_uint(&r, root, "", "stage_count", true, 1, &stages);
    sp_json_get_uint(&r, root, "", "chunks", false, 1, &chunks);
    if (layout == SP_CHUNKS_V && chunks != 2)
        sp_json_problem(&r, "", "chunk_layout",
                        "\"v\" places exactly 2 chunks per device; this plan has %llu",
                        (unsigned long long)chunks);
    sp_json_get_uint(&r, root, "", "micro_batches", true, 1, &micro);
    uint64_t gpus = 0; /* replicated stages: the devices used */
    sp_json_get_uint(&r, root, "", "gpus", false, 1, &gpus);
    if (gpus && (gpus > SP_MAX_REPLICATED_GPUS || chunks != 1))
        sp_json_problem(&r, "", "gpus",
                        "expected at most %u devices and one chunk per stage (replicated "
                        "stages), got %llu devices and %llu chunks",
                        SP_MAX_REPLICATED_GPUS, (unsigned long long)gpus,
                        (unsigned long long)chunks);
    sp_json_get_uint(&r, root, "", "memory_limit_bytes", false, 1, &limit);
    bool saved_unknown = false;
    sp_json_get_bool(&r, root, "", "memory_saved_unknown", false, &saved_unknown);
    bool forward_only = false;
    sp_json_get_bool(&r, root, "", "forward_only", false, &forward_only);
    sp_json_get_number(&r, root, "", "lower_bound_ms", false, 0, (double)INFINITY,
                       &m->lower_bound_ms);
    sp_json_get_number(&r, root, "", "total_ms", false, 0, (double)INFINITY, &m->total_ms);
    sp_json_get_number(&r, root, "", "formula_iteration_ms", false, 0, (double)INFINITY,
                       &m->formula_iteration_ms);
    sp_json_get_number(&r, root, "", "even_split_bottleneck_ms", false, 0, (double)INFINITY,
                       &m->even_split_bottleneck_ms);
    sp_json_get_number(&r, root, "", "solve_ms", false, 0, (double)INFINITY, &m->solve_ms);
    sp_json_get_bool(&r, root, "", "even_split_over_memory", false, &m->even_split_over_memory);
    const cJSON *sched = cJSON_GetObjectItemCaseSensitive(root, "schedule");
    if (cJSON_IsObject(sched)) {
        sp_plan_schedule *sc = &m->schedule;
        const char *sname = NULL;
        uint64_t smb = 1, sch = 1;
        sp_json_get_string(&r, sched, "schedule", "name", true, 64, &sname);
        if (sname && sp_schedule_from_name(sname, &sc->schedule) != SP_OK)
            sp_json_problem(&r, "schedule", "name", "unknown schedule \"%s\"", sname);
        sp_json_get_uint(&r, sched, "schedule", "micro_batches", true, 1, &smb);
        sp_json_get_uint(&r, sched, "schedule", "chunks", false, 1, &sch);
        sp_json_get_number(&r, sched, "schedule", "iteration_ms", true, 0, (double)INFINITY,
                           &sc->iteration_ms);
        sp_json_get_number(&r, sched, "schedule", "bubble_fraction", true, 0, 1,
                           &sc->bubble_fraction);
        sp_json_get_number(&r, sched, "schedule", "efficiency", true, 0, 1, &sc->efficiency);
        sc->micro_batches = smb > SP_MAX_MICRO_BATCHES ? SP_MAX_MICRO_BATCHES : (uint32_t)smb;
        sc->chunks = sch > SP_MAX_STAGES ? SP_MAX_STAGES : (uint32_t)sch;
        sc->present = true;
    }
    const cJSON *gen = cJSON_GetObjectItemCaseSensitive(root, "generator");
    if (cJSON_IsObject(gen))
        sp_json_get_string(&r, gen, "generator", "command", false, (size_t)1 << 20, &command);
    if (stages > SP_MAX_STAGES || chunks > SP_MAX_STAGES || micro > SP_MAX_MICRO_BATCHES) {
        sp_json_problem(&r, "", "stage_count",
                        "stage_count (%llu), chunks (%llu) or "
                        "micro_batches (%llu) beyond the limits (%u, %u, %u)",
                        (unsigned long long)stages, (unsigned long long)chunks,
                        (unsigned long long)micro, SP_MAX_STAGES, SP_MAX_STAGES,
                        SP_MAX_MICRO_BATCHES);
        fail = SP_ERR_LIMIT;
        goto done;
    }
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(root, "stages");
    if (!cJSON_IsArray(arr)) {
        sp_json_problem(&r, "", "stages", "expected an array of stage objects");
        goto done;
    }
    size_t n = 0;
    for (const cJSON *c = arr->child; c; c = c->next)
        n++;
    if (ctx->problems)
        goto done;
    if (n != stages * chunks) {
        sp_json_problem(&r, "", "stages",
                        "expected %llu stages (stage_count %llu x chunks %llu), "
                        "got %zu",
                        (unsigned long long)(stages * chunks), (unsigned long long)stages,
                        (unsigned long long)chunks, n);
        goto done;
    }
    plan->stages = sp_calloc(n, sizeof *plan->stages);
    names = sp_calloc(3 * n, sizeof *names);
    if (placement == SP_PLACEMENT_SEARCH)
        device_used = sp_calloc(SP_MAX_DEVICES, 1);
    if (!plan->stages || !names || (placement == SP_PLACEMENT_SEARCH && !device_used)) {
        fail = sp_oom(ctx, "reading a plan");
        goto done_status;
    }
    plan->n_stages = n;
    size_t k = 0;
    for (const cJSON *c = arr->child; c; c = c->next, k++)
        read_stage(&r, c, k, &plan->stages[k], &names[3 * k], &names[3 * k + 1], &names[3 * k + 2]);
    uint64_t devices_before = 0, next_device = 0; /* replicated: the replicas before stage k,
                                                   * the first device after the stage before */
    for (k = 0; k < n && !ctx->problems; k++) {
        const sp_stage *s = &plan->stages[k];
        char where[48];
        snprintf(where, sizeof where, "stages[%zu]", k);
        size_t expect = k ? plan->stages[k - 1].first_layer + plan->stages[k - 1].layer_count : 0;
        if (s->first_layer != expect)
            sp_json_problem(&r, where, "first_layer",
                            "expected %zu (stages cover the layers contiguously), got %zu", expect,
                            s->first_layer);
        if (!gpus && s->replicas != 1)
            sp_json_problem(&r, where, "replicas",
                            "expected 1: only a plan with \"gpus\" replicates stages, got %u",
                            s->replicas);
        if (gpus) { /* devices in order, idle ones allowed between stages */
            if (s->device < next_device)
                sp_json_problem(&r, where, "device",
                                "expected at least %llu (replicated stages take devices in "
                                "order: after the devices of the stage before), got %u",
                                (unsigned long long)next_device, s->device);
            next_device = (uint64_t)s->device + s->replicas;
            devices_before += s->replicas;
            if (k + 1 == n && devices_before != gpus)
                sp_json_problem(&r, where, "replicas",
                                "expected the stages' replicas to add up to gpus (%llu), got %llu",
                                (unsigned long long)gpus, (unsigned long long)devices_before);
            continue;
        }
        uint32_t dev = sp_chunk_device((sp_chunk_layout)layout, (uint32_t)stages, (uint32_t)k);
        const char *rule = layout == SP_CHUNKS_V ? "k for k < P, else 2P-1-k" : "k mod P";
        if (placement == SP_PLACEMENT_SEARCH && k >= stages) {
            if (s->device != plan->stages[dev].device)
                sp_json_problem(&r, where, "device",
                                "expected %u, the device of stage %u (chunk k runs on the "
                                "device of stage %s, P = %llu), got %u",
                                plan->stages[dev].device, dev, rule, (unsigned long long)stages,
                                s->device);
        } else if (placement == SP_PLACEMENT_SEARCH) {
            if (s->device >= SP_MAX_DEVICES || device_used[s->device]++)
                sp_json_problem(&r, where, "device",
                                "expected a device index below %u that no other stage uses "
                                "(placement \"search\"), got %u",
                                SP_MAX_DEVICES, s->device);
        } else if (s->device != dev) {
            sp_json_problem(&r, where, "device",
                            "expected %u (chunk_layout \"%s\": stage k runs on device %s, P = "
                            "%llu), got %u",
                            dev, sp_chunk_layout_name((sp_chunk_layout)layout), rule,
                            (unsigned long long)stages, s->device);
        }
    }
    covered = n ? plan->stages[n - 1].first_layer + plan->stages[n - 1].layer_count : 0;
    if (!ctx->problems && layers && covered != layers)
        sp_json_problem(&r, "stages[last]", "last_layer",
                        "expected the stages to end at layer %llu (the profile's last), got %zu",
                        (unsigned long long)(layers - 1), covered - 1);
    if (!ctx->problems && !covered)
        sp_json_problem(&r, "stages", "", "expected at least one layer in some stage");

done:
    if (ctx->problems) {
        sp_problems_finish(ctx);
        ctx->status = fail;
        goto done_status;
    }
    m->solver = (sp_solver)solver;
    m->objective = (sp_objective)objective;
    m->comm = (sp_comm)comm;
    m->placement = (sp_placement)placement;
    m->framework = (sp_framework)framework;
    m->replica_cost = (sp_replica_cost)replica_cost;
    m->stages = (uint32_t)stages;
    m->chunks = (uint32_t)chunks;
    m->chunk_layout = (sp_chunk_layout)layout;
    m->micro_batches = (uint32_t)micro;
    m->profile_sms = (uint32_t)profile_sms;
    m->gpus = (uint32_t)gpus;
    m->memory_limit_bytes = limit;
    m->memory_saved_unknown = saved_unknown;
    m->forward_only = forward_only;
    plan->n_layers = layers ? (size_t)layers : covered;
    snprintf(plan->profile_sha256, sizeof plan->profile_sha256, "%s", sha ? sha : "");
    plan->model = sp_strdup(model);
    plan->command = command ? sp_strdup(command) : NULL;
    size_t total = 0;
    for (size_t i = 0; i < plan->n_stages; i++)
        total += strlen(names[3 * i]) + strlen(names[3 * i + 1]) + 2;
    plan->names = sp_malloc(total);
    if (!plan->model || (command && !plan->command) || !plan->names) {
        fail = sp_oom(ctx, "reading a plan");
        goto done_status;
    }
    char *w = plan->names;
    for (size_t i = 0; i < plan->n_stages; i++) {
        for (int e = 0; e < 2; e++) {
            size_t l = strlen(names[3 * i + e]) + 1;
            memcpy(w, names[3 * i + e], l);
            if (e == 0)
                plan->stages[i].first_name = w;
            else
                plan->stages[i].last_name = w;
            w += l;
        }
    }
    sp_plan_recompute_summary(plan);
    {
        const char **device_names = sp_mallocarray(plan->n_stages, sizeof *device_names);
        for (size_t i = 0; device_names && i < plan->n_stages; i++)
            device_names[i] = names[3 * i + 2];
        fail = device_names ? sp_plan_set_devices(ctx, plan, NULL, device_names)
                            : sp_oom(ctx, "reading a plan");
        sp_free(device_names);
        if (fail != SP_OK)
            goto done_status;
        fail = SP_ERR_SCHEMA;
    }
    const cJSON *ln = cJSON_GetObjectItemCaseSensitive(root, "layer_names");
    const cJSON *lk = cJSON_GetObjectItemCaseSensitive(root, "layer_kinds");
    if (ln && !cJSON_IsNull(ln)) {
        size_t count = cJSON_IsArray(ln) ? (size_t)cJSON_GetArraySize(ln) : 0;
        size_t kcount = cJSON_IsArray(lk) ? (size_t)cJSON_GetArraySize(lk) : 0;
        if (count != plan->n_layers || (lk && !cJSON_IsNull(lk) && kcount != count)) {
            sp_json_problem(&r, "", "layer_names",
                            "expected %zu names (and as many kinds), one per profile layer",
                            plan->n_layers);
        } else {
            const char **ns = sp_calloc(count, sizeof *ns), **ks = sp_calloc(count, sizeof *ks);
            if (!ns || !ks) {
                sp_free(ns);
                sp_free(ks);
                fail = sp_oom(ctx, "reading a plan");
                goto done_status;
            }
            size_t i = 0;
            const cJSON *kv = cJSON_IsArray(lk) ? lk->child : NULL;
            for (const cJSON *c = ln->child; c; c = c->next, i++, kv = kv ? kv->next : NULL) {
                ns[i] = cJSON_IsString(c) ? c->valuestring : NULL;
                ks[i] = kv && cJSON_IsString(kv) ? kv->valuestring : "";
                if (!ns[i])
                    sp_json_problem(&r, "layer_names", "", "entry %zu is not a string", i);
            }
            if (!ctx->problems && sp_plan_set_layers(ctx, plan, count, ns, ks) != SP_OK)
                fail = SP_ERR_NOMEM;
            sp_free(ns);
            sp_free(ks);
        }
        if (ctx->problems || fail == SP_ERR_NOMEM) {
            sp_problems_finish(ctx);
            if (fail != SP_ERR_NOMEM)
                ctx->status = fail = SP_ERR_SCHEMA;
            goto done_status;
        }
    }
    sp_free(names);
    sp_free(device_used);
    cJSON_Delete(root);
    *out = plan;
    return SP_OK;

done_status:
    sp_free(names);
    sp_free(device_used);
    cJSON_Delete(root);
    sp_plan_destroy(plan);
    return fail;
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

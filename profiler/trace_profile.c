/* profiler/trace_profile.c: sp_trace_to_profile, the attribution written as a stagepart-profile.
 *
 * fwd_ms and bwd_ms are each layer's merged GPU busy time (kernels and memsets; overlapping
 * streams counted once; NCCL kernels and copies reported apart), the median over the steps used.
 * A layer's recomputation (a forward inside a backward) is recompute_ms, not part of bwd_ms, so
 * the partitioner's recomputation model does not count it twice. "measurement" records how the
 * numbers were made; "measured" per layer the spread and the rest of the figures. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "attribute.h"
#include "json_util.h"
#include "module_map_apply.h"
#include "modules.h"
#include "profile_doc.h"
#include "stagepart/stagepart.h"

void sp_trace_profile_opts_init(sp_trace_profile_opts *opts) {
    memset(opts, 0, sizeof *opts);
    opts->micro_batch_size = 1;
    opts->min_layer_share = 0.5;
}

void sp_trace_destroy(sp_trace *trace) {
    sp_trace_release(trace);
    sp_free(trace);
}

/* the extensions trace files end with (torch's host.pid.pt.trace.json.gz, nsys's .sqlite, an
 * event log's .jsonl), removed from the end as long as one matches */
static void strip_trace_extensions(char *name) {
    static const char *const ext[] = {".gz",     ".json",     ".jsonl", ".trace", ".pt",
                                      ".sqlite", ".nsys-rep", ".qdrep", ".log",   ".events"};
    for (bool more = true; more;) {
        more = false;
        size_t n = strlen(name);
        for (size_t i = 0; i < sizeof ext / sizeof *ext && !more; i++) {
            size_t k = strlen(ext[i]);
            if (n > k && strcmp(name + n - k, ext[i]) == 0) {
                name[n - k] = '\0';
                more = true;
            }
        }
    }
}

/* A GPU trace whose layers hold too little of its GPU time (the optimizer's left out) did not
 * have its kernels launched inside the layer ranges: refused, naming where they were launched. */
static sp_status check_layer_share(sp_ctx *ctx, const sp_trace *trace,
                                   const sp_trace_profile_opts *opts, const sp_trace_summary *sum) {
    double model_ms = sum->gpu_ms - sum->optimizer_ms;
    if (trace->cpu_time || !(opts->min_layer_share > 0) || !(model_ms > 0) ||
        sum->layer_ms >= opts->min_layer_share * model_ms)
        return SP_OK;
    char where[512] = ""; /* the ranges of the largest work in no layer, each once */
    size_t len = 0, n = sum->n_outside < SP_TRACE_SUMMARY_OUTSIDE ? sum->n_outside
                                                                  : SP_TRACE_SUMMARY_OUTSIDE;
    for (size_t i = 0; i < n && len + 1 < sizeof where; i++) {
        double ms = 0;
        bool seen = false;
        for (size_t j = 0; j < n; j++) {
            bool same = strcmp(sum->outside[j].range, sum->outside[i].range) == 0;
            seen |= same && j < i;
            ms += same ? sum->outside[j].ms : 0;
        }
        if (!seen)
            len += (size_t)snprintf(where + len, sizeof where - len, "%s%s (%.3f ms)",
                                    len ? ", " : "", sum->outside[i].range, ms);
    }
    return sp_fail(ctx, SP_ERR_SCHEMA,
                   "%s: the %zu layers hold %.1f%% of the GPU time outside the optimizer (%.3f of "
                   "%.3f ms), under the %.0f%% a profile needs: the model's kernels were launched "
                   "outside the layer ranges, mostly in %s. Put the layer ranges around the code "
                   "that launches them (with_stack, the module ranges, NVTX ranges on the "
                   "launching thread), or lower --min-layer-share if the rest is truly not the "
                   "model's",
                   trace->file, sum->layers, 100 * sum->layer_ms / model_ms, sum->layer_ms,
                   model_ms, 100 * opts->min_layer_share, len ? where : "no range");
}

/* which layers the module choice marked as blocks by structure (SP_MODULE_BLOCK) */
static sp_status find_blocks(sp_ctx *ctx, const sp_trace *trace, const uint8_t *modules,
                             const struct sp_attribution *a, bool **out) {
    *out = sp_calloc(a->n_layers ? a->n_layers : 1, sizeof **out);
    if (!*out)
        return sp_oom(ctx, "naming the layers' kinds");
    for (size_t s = 0; s < trace->n_strings; s++) {
        if (modules[s] != SP_MODULE_BLOCK)
            continue;
        const char *name = sp_module_layer_name(trace->strings[s]);
        for (size_t i = 0; i < a->n_layers; i++)
            (*out)[i] |= strcmp(a->layers[i].name, name) == 0;
    }
    return SP_OK;
}

/* no layer with backward time, some with forward time */
static bool forward_only(const struct sp_profile_doc *doc) {
    bool work = false;
    for (size_t i = 0; i < doc->n_layers; i++) {
        if (doc->layers[i].bwd_ms > 0)
            return false;
        work |= doc->layers[i].fwd_ms > 0;
    }
    return work;
}

static bool num(cJSON *o, const char *k, double v) {
    return cJSON_AddNumberToObject(o, k, v) != NULL;
}

/* A built-in model's kinds and exact byte counts into the layers of the same names (the trace
 * knows only the activation bytes its ranges carried). */
static sp_status add_model_bytes(sp_ctx *ctx, const sp_model *model, struct sp_profile_doc *doc) {
    sp_model_info info;
    sp_model_get_info(model, &info);
    sp_model_layer_info L;
    for (size_t i = 0; sp_model_get_layer(model, i, &L); i++) {
        struct sp_profile_doc_layer *o = NULL;
        for (size_t k = 0; k < doc->n_layers && !o; k++)
            if (strcmp(doc->layers[k].name, L.name) == 0)
                o = &doc->layers[k];
        if (!o)
            return sp_fail(ctx, SP_ERR_INVALID_ARG,
                           "the trace has no ranges of layer %zu (%s) of model %s: it ran "
                           "another model, or recorded too few steps",
                           i, L.name, info.name);
        o->kind = L.kind;
        o->has_activation_bytes = true;
        o->activation_bytes = L.activation_bytes;
        o->has_model_bytes = true;
        o->saved_bytes = L.saved_bytes;
        o->param_bytes = L.param_bytes;
        o->memory_bytes = 2 * L.param_bytes; /* weights, gradients */
    }
    if (!cJSON_AddStringToObject(doc->measurement, "model_dtype", info.dtype))
        return sp_oom(ctx, "writing the profile");
    return SP_OK;
}

static bool add_phase(cJSON *measured, const char *key, const struct sp_phase_stats *p) {
    cJSON *o = cJSON_AddObjectToObject(measured, key);
    return o && num(o, "busy_ms", p->busy_ms) && num(o, "stddev_ms", p->stddev_ms) &&
           num(o, "kernel_ms", p->kernel_ms) && num(o, "span_ms", p->span_ms) &&
           num(o, "kernels", (double)p->kernels) && num(o, "nccl_ms", p->nccl_ms) &&
           num(o, "copy_ms", p->copy_ms) && num(o, "copies", (double)p->copies) &&
           num(o, "copy_bytes", (double)p->copy_bytes);
}

/* where work in no layer was launched, for a person */
static const char *outside_range(const sp_trace *trace, const struct sp_outside_work *w) {
    if (w->range == UINT32_MAX)
        return "(no launch record)";
    if (w->range == 0 || w->range > trace->n_strings)
        return "(outside every range)";
    return trace->strings[w->range - 1];
}

/* measurement.outside_layers: the ten largest, as the summary lists them */
static bool add_outside(cJSON *m, const sp_trace *trace, const struct sp_attribution *a) {
    cJSON *arr = cJSON_AddArrayToObject(m, "outside_layers");
    for (size_t i = 0; arr && i < a->n_outside && i < 10; i++) {
        const struct sp_outside_work *w = &a->outside[i];
        cJSON *o = cJSON_CreateObject();
        if (!o || !cJSON_AddItemToArray(arr, o) ||
            !cJSON_AddStringToObject(o, "name", trace->strings[w->name]) ||
            !cJSON_AddStringToObject(o, "launched_in", outside_range(trace, w)) ||
            !cJSON_AddStringToObject(o, "class", w->cls == SP_PHASE_OTHER ? "other" : "none") ||
            !num(o, "ms", w->ms) || !num(o, "count", (double)w->count))
            return false;
    }
    return arr != NULL;
}

static const char *base_name(const char *path) {
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

/* Which ranges are layers (sp_trace_profile_opts.layers): into ao, and *modules (freed by the
 * caller) when a level of the module tree; said says how, for a person. */
static sp_status choose_layers(sp_ctx *ctx, const sp_trace *trace,
                               const sp_trace_profile_opts *opts, struct sp_attrib_opts *ao,
                               struct sp_module_choice *modules, char *said, size_t said_size) {
    memset(modules, 0, sizeof *modules);
    const char *how = opts->layers;
    if (how && opts->layer_pattern)
        return sp_fail(ctx, SP_ERR_INVALID_ARG,
                       "--layers and --layer-pattern both given: --layers REGEX is "
                       "--layer-pattern REGEX; give one");
    if (how && strcmp(how, "auto") != 0 && !sp_module_is_depth(how)) {
        ao->layer_pattern = how;
        snprintf(said, said_size, "ranges matching '%.200s'", how);
        return SP_OK;
    }
    if (!how && opts->layer_pattern) {
        snprintf(said, said_size, "ranges matching '%.200s'", opts->layer_pattern);
        return SP_OK;
    }
    if (!how) { /* the naming convention, else the module tree when the trace has one */
        size_t n = 0;
        sp_status st = sp_attrib_count_layer_ranges(ctx, trace, NULL, &n);
        if (st != SP_OK)
            return st;
        if (n > 0 || !sp_trace_has_modules(trace)) {
            snprintf(said, said_size, "ranges named '<layer>/fwd|bwd|recompute'");
            return SP_OK;
        }
        how = "auto";
    }
    struct sp_module_tree tree;
    sp_status st = sp_module_tree_build(ctx, trace, ao, &tree);
    if (st == SP_OK)
        st = sp_module_choose(ctx, trace, &tree, how, modules, said, said_size);
    sp_module_tree_release(&tree);
    ao->layer_names = modules->flags;
    ao->layer_into = modules->into;
    return st;
}

sp_status sp_trace_list_modules(sp_ctx *ctx, const sp_trace *trace,
                                const sp_trace_profile_opts *opts, char **text) {
    if (!ctx)
        return SP_ERR_INVALID_ARG;
    sp_ctx_begin(ctx);
    if (!trace || !opts || !text)
        return sp_fail(ctx, SP_ERR_INVALID_ARG, "sp_trace_list_modules: NULL argument");
    *text = NULL;
    const char *how = opts->layers ? opts->layers : "auto";
    if (strcmp(how, "auto") != 0 && !sp_module_is_depth(how))
        return sp_fail(ctx, SP_ERR_INVALID_ARG,
                       "--list-modules marks the modules of --layers auto or a depth, not a "
                       "pattern ('%s')",
                       how);
    struct sp_attrib_opts ao = {.step_pattern = opts->step_pattern,
                                .warmup_steps = opts->warmup_steps};
    struct sp_module_tree tree;
    sp_status st = sp_module_tree_build(ctx, trace, &ao, &tree);
    if (st == SP_OK)
        st = sp_module_tree_text(ctx, trace, &tree, how, text);
    sp_module_tree_release(&tree);
    return st;
}

/* what a profile can hold (docs/formats.md): names, each layer's time, the layer count, and
 * the sums, summed as the profile reader sums them */
static sp_status check_limits(sp_ctx *ctx, const sp_trace *trace, const struct sp_attribution *a) {
    for (size_t i = 0; i < a->n_layers; i++) {
        const struct sp_layer_stats *L = &a->layers[i];
        size_t len = strlen(L->name);
        double most = 0;
        for (int ph = 0; ph < SP_LAYER_PHASES; ph++)
            most = L->phase[ph].busy_ms > most ? L->phase[ph].busy_ms : most;
        if (len == 0 || len > SP_NAME_MAX_BYTES || most > SP_PROFILE_MAX_LAYER_MS)
            return sp_fail(ctx, len ? SP_ERR_LIMIT : SP_ERR_SCHEMA, "%s: layer %zu: %s",
                           trace->file, i,
                           len == 0                  ? "the layer pattern gives an empty name"
                           : len > SP_NAME_MAX_BYTES ? "its name is longer than 4096 bytes"
                                                     : "its time exceeds 1e9 ms");
    }
    if (a->n_layers > SP_PROFILE_MAX_LAYERS)
        return sp_fail(ctx, SP_ERR_LIMIT, "%s: more than %u layers", trace->file,
                       SP_PROFILE_MAX_LAYERS);
    double total_ms = 0, total_bytes = 0;
    for (size_t i = 0; i < a->n_layers; i++) {
        const struct sp_phase_stats *ph = a->layers[i].phase;
        double rc = ph[SP_PHASE_RECOMPUTE].busy_ms;
        total_ms += ph[SP_PHASE_FWD].busy_ms + ph[SP_PHASE_BWD].busy_ms + (rc > 0 ? rc : 0);
        total_bytes += a->layers[i].has_bytes ? (double)a->layers[i].activation_bytes : 0;
    }
    if (total_ms > SP_PROFILE_MAX_TOTAL_MS || total_bytes > SP_PROFILE_MAX_TOTAL_BYTES)
        return sp_fail(ctx, SP_ERR_LIMIT, "%s: the layers' %s sum to %.4g, beyond a profile's %s",
                       trace->file, total_ms > SP_PROFILE_MAX_TOTAL_MS ? "times" : "output bytes",
                       total_ms > SP_PROFILE_MAX_TOTAL_MS ? total_ms : total_bytes,
                       total_ms > SP_PROFILE_MAX_TOTAL_MS ? "2^62 ns" : "2^53 bytes");
    return SP_OK;
}

static void summarize(const sp_trace *trace, const struct sp_attribution *a, const char *chosen,
                      sp_trace_summary *sum) {
    memset(sum, 0, sizeof *sum);
    sum->layers = a->n_layers;
    sum->steps_total = a->steps_total;
    sum->steps_from_optimizer = a->steps_by == SP_STEPS_BY_OPTIMIZER;
    sum->steps_from_forward = a->steps_by == SP_STEPS_BY_FORWARD;
    sum->steps_used = a->steps_used;
    sum->activities = a->activities;
    sum->unmatched = a->unmatched;
    sum->gpu_ms = a->gpu_ms;
    sum->cpu_time = trace->cpu_time;
    sum->layer_ms =
        a->class_ms[SP_PHASE_FWD] + a->class_ms[SP_PHASE_BWD] + a->class_ms[SP_PHASE_RECOMPUTE];
    sum->optimizer_ms = a->class_ms[SP_PHASE_OPTIMIZER];
    sum->other_ms = a->class_ms[SP_PHASE_OTHER];
    sum->unattributed_ms = a->class_ms[SP_PHASE_UNATTRIBUTED];
    sum->unattributed_share = a->gpu_ms > 0 ? sum->unattributed_ms / a->gpu_ms : 0;
    sum->outside_steps_ms = a->outside_steps_ms;
    sum->dropped_records = trace->dropped_records;
    sum->malformed = trace->malformed_activities;
    sum->late = a->late;
    sum->late_ms = a->late_ms;
    snprintf(sum->layers_chosen, sizeof sum->layers_chosen, "%s", chosen);
    for (size_t i = 0; i < a->n_outside && i < SP_TRACE_SUMMARY_OUTSIDE; i++) {
        snprintf(sum->outside[i].name, sizeof sum->outside[i].name, "%s",
                 trace->strings[a->outside[i].name]);
        snprintf(sum->outside[i].range, sizeof sum->outside[i].range, "%s",
                 outside_range(trace, &a->outside[i]));
        sum->outside[i].ms = a->outside[i].ms;
        sum->outside[i].count = a->outside[i].count;
        sum->n_outside = i + 1;
    }
}

static void warn_records(sp_ctx *ctx, const sp_trace *trace, const struct sp_attribution *a) {
    if (trace->malformed_activities)
        sp_warn(ctx,
                "%s: %llu GPU activities left out: no start time, or a negative duration "
                "(measurement.malformed_activities); the layers' times lack them",
                trace->file, (unsigned long long)trace->malformed_activities);
    if (a->late)
        sp_warn(ctx,
                "%s: %llu activities (%.3f ms) came more than %zu records out of time order; "
                "their layers' busy time may be over-counted by up to that much",
                trace->file, (unsigned long long)a->late, a->late_ms,
                (size_t)SP_ATTRIB_REORDER_WINDOW);
}

/* the model's name (the file's without the extensions traces carry; a dot of the model's own
 * stays: qwen1.5-0.5b.json is qwen1.5-0.5b) and the profile's source line */
static void name_source(const sp_trace *trace, const sp_trace_profile_opts *opts,
                        const struct sp_attribution *a, const sp_trace_summary *sum,
                        char model[256], char source[1024]) {
    if (opts->model) {
        snprintf(model, 256, "%s", opts->model);
    } else {
        snprintf(model, 256, "%s", base_name(trace->file));
        strip_trace_extensions(model);
    }
    char steps[128];
    if (a->steps_total)
        snprintf(steps, sizeof steps, "median of %u steps%s (%u warm-up skipped)", a->steps_used,
                 a->steps_by == SP_STEPS_BY_OPTIMIZER ? " found by the optimizer's steps"
                 : a->steps_by == SP_STEPS_BY_FORWARD ? " found by the model's top-level calls"
                                                      : "",
                 a->steps_total - a->steps_used);
    else
        snprintf(steps, sizeof steps, "one pass (no step ranges)");
    snprintf(source, 1024, "%s %s: %s, %.1f%% of %s time unattributed", trace->collector,
             base_name(trace->file), steps, 100 * sum->unattributed_share,
             trace->cpu_time ? "CPU operators'" : "GPU");
}

/* the profile's "measurement": where the times came from and what was left out */
static bool add_measurement(cJSON *m, const sp_trace *trace, const sp_trace_profile_opts *opts,
                            const struct sp_attribution *a, const sp_trace_summary *sum,
                            const char *layer_pattern) {
    char when[32] = "";
    time_t now = time(NULL);
    struct tm tm;
    if (gmtime_r(&now, &tm))
        strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
    cJSON *devs = NULL;
    bool ok = m && cJSON_AddStringToObject(m, "collector", trace->collector) &&
              cJSON_AddStringToObject(m, "file", trace->file) &&
              cJSON_AddStringToObject(m, "versions", trace->versions ? trace->versions : "") &&
              cJSON_AddStringToObject(m, "created", when) &&
              (devs = cJSON_AddArrayToObject(m, "devices"));
    for (size_t i = 0; ok && i < trace->n_devices; i++)
        if (trace->devices[i]) {
            cJSON *d = cJSON_CreateObject();
            ok = d && cJSON_AddItemToArray(devs, d) && num(d, "id", (double)i) &&
                 cJSON_AddStringToObject(d, "name", trace->devices[i]);
        }
    if (ok && opts->sms)
        ok = num(m, "sms", opts->sms);
    return ok && num(m, "steps_total", a->steps_total) && num(m, "steps_used", a->steps_used) &&
           cJSON_AddStringToObject(m, "steps_from",
                                   a->steps_by == SP_STEPS_BY_OPTIMIZER
                                       ? "optimizer steps (Optimizer.step#...)"
                                   : a->steps_by == SP_STEPS_BY_FORWARD
                                       ? "the model's top-level calls (its outermost module)"
                                   : a->steps_total ? "step ranges"
                                                    : "none: one pass") &&
           num(m, "warmup_steps", opts->warmup_steps) &&
           cJSON_AddStringToObject(m, "layers", sum->layers_chosen) &&
           (!layer_pattern || cJSON_AddStringToObject(m, "layer_pattern", layer_pattern)) &&
           num(m, "activities", (double)a->activities) &&
           num(m, "unmatched", (double)a->unmatched) && num(m, "gpu_ms", a->gpu_ms) &&
           num(m, "layer_ms", sum->layer_ms) && num(m, "optimizer_ms", sum->optimizer_ms) &&
           num(m, "other_ms", sum->other_ms) && num(m, "unattributed_ms", sum->unattributed_ms) &&
           num(m, "unattributed_share", sum->unattributed_share) &&
           num(m, "outside_steps_ms", sum->outside_steps_ms) &&
           num(m, "dropped_records", (double)trace->dropped_records) &&
           num(m, "malformed_activities", (double)trace->malformed_activities) &&
           num(m, "zero_time_records", (double)trace->zero_time_records) &&
           num(m, "unusable_payloads", (double)trace->unusable_payloads) &&
           num(m, "late_activities", (double)a->late) && num(m, "late_ms", a->late_ms) &&
           cJSON_AddStringToObject(m, "time",
                                   trace->cpu_time
                                       ? "no GPU activity in the trace: CPU operators' own time "
                                         "(span less child ops), merged per thread"
                                       : "merged GPU busy time of kernels and memsets") &&
           cJSON_AddStringToObject(m, "cuda_graphs",
                                   "kernels of a graph launch count for the range around the "
                                   "launch") &&
           add_outside(m, trace, a) &&
           cJSON_AddStringToObject(m, "wgrad",
                                   "estimated: wgrad_ms = bwd_ms / 2 (a matmul's weight gradient "
                                   "is half its backward's FLOPs; the trace does not separate "
                                   "weight-gradient kernels)");
}

/* each layer's times and what was measured; a kind where the module tree (block: each layer a
 * transformer block by its structure) or the name says it */
static bool fill_layers(struct sp_profile_doc *doc, const struct sp_attribution *a,
                        const bool *block, bool modules_chosen) {
    bool ok = true;
    for (size_t i = 0; ok && i < a->n_layers; i++) {
        const struct sp_layer_stats *L = &a->layers[i];
        double rc = L->phase[SP_PHASE_RECOMPUTE].busy_ms;
        cJSON *meas = cJSON_CreateObject();
        doc->layers[i] =
            (struct sp_profile_doc_layer){.name = L->name,
                                          .fwd_ms = L->phase[SP_PHASE_FWD].busy_ms,
                                          .bwd_ms = L->phase[SP_PHASE_BWD].busy_ms,
                                          /* no trace splits the backward: the documented
                                           * estimate (docs/profiling.md), marked so */
                                          .wgrad_ms = L->phase[SP_PHASE_BWD].busy_ms / 2,
                                          .recompute_ms = rc,
                                          .has_activation_bytes = L->has_bytes,
                                          .activation_bytes = L->activation_bytes,
                                          .measured = meas};
        if (modules_chosen) /* a kind from the module's class, where that is clear, else from
                             * the tree's structure (a repeated module with attention inside) */
            doc->layers[i].kind = sp_module_kind(L->name) ? sp_module_kind(L->name)
                                  : block[i]              ? "transformer"
                                                          : NULL;
        else if (strcmp(L->name, "loss") == 0) /* the PyTorch helper's loss layer */
            doc->layers[i].kind = "loss";
        if (modules_chosen && i + 1 == a->n_layers && !doc->layers[i].kind &&
            strncmp(L->name, "Linear_", 7) == 0)
            doc->layers[i].kind = "head"; /* the model's last module, a projection */
        ok = meas && num(meas, "samples", a->steps_used) &&
             add_phase(meas, "fwd", &L->phase[SP_PHASE_FWD]) &&
             add_phase(meas, "bwd", &L->phase[SP_PHASE_BWD]) &&
             (rc <= 0 || add_phase(meas, "recompute", &L->phase[SP_PHASE_RECOMPUTE]));
    }
    return ok;
}

/* the profile document of an attribution, as JSON */
static sp_status write_profile(sp_ctx *ctx, const sp_trace *trace,
                               const sp_trace_profile_opts *opts, const struct sp_attribution *a,
                               const bool *block, const sp_trace_summary *sum,
                               const char *layer_pattern, char **json) {
    char model[256], source[1024];
    name_source(trace, opts, a, sum, model, source);
    const char *device = NULL;
    for (size_t i = 0; i < trace->n_devices && !device; i++)
        device = trace->devices[i];
    struct sp_profile_doc doc = {.model = model,
                                 .source = source,
                                 .device = device,
                                 .micro_batch_size = opts->micro_batch_size,
                                 .measurement = cJSON_CreateObject(),
                                 .layers =
                                     sp_calloc(a->n_layers ? a->n_layers : 1, sizeof *doc.layers),
                                 .n_layers = a->n_layers,
                                 .wgrad_estimated = true};
    bool ok = doc.layers && add_measurement(doc.measurement, trace, opts, a, sum, layer_pattern) &&
              fill_layers(&doc, a, block, !layer_pattern);
    sp_status st = ok ? SP_OK : sp_oom(ctx, "writing the profile");
    doc.forward_only = st == SP_OK && forward_only(&doc);
    if (doc.forward_only)
        sp_warn(ctx,
                "%s holds no backward pass (an inference trace, or forwards alone): every "
                "layer's bwd_ms is 0, and the profile is marked forward_only; partitioned, it "
                "balances forward passes, not training steps (trace a step with its backward "
                "to plan training)",
                trace->file);
    if (st == SP_OK && opts->built_in)
        st = add_model_bytes(ctx, opts->built_in, &doc);
    if (st == SP_OK && opts->modules)
        st = sp_profile_apply_module_map(ctx, opts->modules, trace->file, &doc);
    if (st == SP_OK)
        st = sp_profile_doc_to_json(ctx, &doc, json);
    sp_profile_doc_release(&doc);
    sp_free(doc.layers);
    return st;
}

sp_status sp_trace_to_profile(sp_ctx *ctx, const sp_trace *trace, const sp_trace_profile_opts *opts,
                              char **json, sp_trace_summary *summary) {
    if (!ctx)
        return SP_ERR_INVALID_ARG;
    sp_ctx_begin(ctx);
    if (!trace || !opts || !json)
        return sp_fail(ctx, SP_ERR_INVALID_ARG, "sp_trace_to_profile: NULL argument");
    *json = NULL;
    if (opts->micro_batch_size < 1)
        return sp_fail(ctx, SP_ERR_INVALID_ARG, "the micro-batch size must be at least 1");
    struct sp_attrib_opts ao = {.layer_pattern = opts->layer_pattern,
                                .phase_pattern = opts->phase_pattern,
                                .step_pattern = opts->step_pattern,
                                .warmup_steps = opts->warmup_steps};
    struct sp_attribution a;
    struct sp_module_choice modules;
    char chosen[512] = "";
    sp_status st = choose_layers(ctx, trace, opts, &ao, &modules, chosen, sizeof chosen);
    if (st == SP_OK)
        st = sp_attribute(ctx, trace, &ao, &a);
    bool modules_chosen = modules.flags != NULL;
    bool *block = NULL; /* each layer: a transformer block by the module tree's structure */
    if (st == SP_OK && modules_chosen && (st = find_blocks(ctx, trace, modules.flags, &a, &block)))
        sp_attribution_release(&a);
    sp_module_choice_release(&modules);
    ao.layer_names = NULL; /* the choice's, released */
    ao.layer_into = NULL;
    if (st != SP_OK)
        return st;
    sp_trace_summary sum;
    summarize(trace, &a, chosen, &sum);
    st = check_limits(ctx, trace, &a);
    if (st == SP_OK)
        st = check_layer_share(ctx, trace, opts, &sum);
    if (st == SP_OK) {
        warn_records(ctx, trace, &a);
        const char *pattern = ao.layer_pattern ? ao.layer_pattern : SP_DEFAULT_LAYER_PATTERN;
        st =
            write_profile(ctx, trace, opts, &a, block, &sum, modules_chosen ? NULL : pattern, json);
    }
    sp_free(block);
    sp_attribution_release(&a);
    if (st == SP_OK && summary)
        *summary = sum;
    return st;
}

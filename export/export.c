/* export/export.c: plans in each framework's own form (docs/export.md; the formats are described
 * in the design notes' ecosystem.md). Every output is derived from the plan's stage boundaries
 * and recorded layer names and kinds; a plan a format cannot express is refused, naming the
 * stage, rather than silently approximated. */
#include <stdio.h>
#include <string.h>

#include "export_parallel.h"
#include "export_torch_stages.h"
#include "export_torchtitan.h"
#include "layout_impl.h"
#include "module_names.h"
#include "plan_impl.h"

static sp_status megatron(sp_ctx *ctx, const sp_plan *plan, struct sp_strbuf *text,
                          struct sp_strbuf *value) {
    size_t n = plan->n_layers, K = plan->n_stages;
    if (plan->summary.chunks > 1 && plan->summary.chunk_layout == SP_CHUNKS_V)
        return sp_fail(
            ctx, SP_ERR_INVALID_ARG,
            "this plan places its chunks V-shape (chunk k on device 2P-1-k for k >= "
            "P, for zbv or dualpipev); Megatron-LM's layout puts virtual stage k on rank "
            "k mod P. Export it --to torchtitan, pippy or torch-schedule-csv");
    struct sp_layout_groups g;
    sp_status st = sp_layout_groups(ctx, n, plan->layer_kinds, plan->layer_names, &g);
    if (st != SP_OK)
        return st;
    size_t *t = sp_calloc(K, sizeof *t), *m = sp_calloc(K, sizeof *m);
    bool *e = sp_calloc(K, sizeof *e), *l = sp_calloc(K, sizeof *l);
    if (!t || !m || !e || !l) {
        st = sp_oom(ctx, "exporting a plan");
        goto out;
    }
    uint32_t P = plan->summary.stages, V = plan->summary.chunks;
    size_t mtp_stage = SIZE_MAX;
    for (size_t k = 0; k < K && st == SP_OK; k++) {
        size_t a = plan->stages[k].first_layer, b = a + plan->stages[k].layer_count;
        if (a > 0 && a < g.e_end)
            st = sp_fail(ctx, SP_ERR_INVALID_ARG,
                         "stage %zu starts inside the embedding group (layers %s..%s): Megatron's "
                         "E cannot be split",
                         k, plan->layer_names[0], plan->layer_names[g.e_end - 1]);
        else if (a > g.t_end && a < g.l_start)
            st = sp_fail(ctx, SP_ERR_INVALID_ARG,
                         "stage %zu starts inside the MTP layers (%s..%s): Megatron wants all "
                         "of them in one virtual stage",
                         k, plan->layer_names[g.t_end], plan->layer_names[g.l_start - 1]);
        else if (a > g.l_start && a < n)
            st = sp_fail(ctx, SP_ERR_INVALID_ARG,
                         "stage %zu starts inside the output group (layers %s..%s): Megatron's L "
                         "cannot be split",
                         k, plan->layer_names[g.l_start], plan->layer_names[n - 1]);
        e[k] = a == 0 && b > a; /* an empty stage holds neither, and is an empty segment */
        l[k] = b == n && b > a;
        size_t lo = a > g.e_end ? a : g.e_end, hi = b < g.t_end ? b : g.t_end;
        t[k] = hi > lo ? hi - lo : 0;
        lo = a > g.t_end ? a : g.t_end;
        hi = b < g.l_start ? b : g.l_start;
        m[k] = hi > lo ? hi - lo : 0;
        if (m[k])
            mtp_stage = k;
    }
    /* Megatron: the MTP layers in the last virtual stage of their rank (validate_layer_layout) */
    if (st == SP_OK && mtp_stage != SIZE_MAX && mtp_stage / P != V - 1)
        st = sp_fail(ctx, SP_ERR_INVALID_ARG,
                     "the MTP layers are in stage %zu, chunk %zu of rank %zu; Megatron wants them "
                     "in the last virtual stage of their rank (chunk %u)",
                     mtp_stage, mtp_stage / P, mtp_stage % P, V - 1);
    if (st != SP_OK)
        goto out;
    sp_layout_write(value, K, e, t, m, l);
    size_t decoders = g.t_end - g.e_end, mtps = g.l_start - g.t_end;
    sp_strbuf_printf(text,
                     "--pipeline-model-parallel-size %u --num-layers %zu "
                     "--pipeline-model-parallel-layout \"%s\"",
                     P, decoders, sp_strbuf_str(value));
    if (mtps)
        sp_strbuf_printf(text, " --mtp-num-layers %zu", mtps);
    sp_strbuf_puts(text, "\n");
    if (mtps && mtp_stage % P != P - 1) /* as Megatron detects it */
        sp_strbuf_printf(text,
                         "# standalone MTP: the MTP layers run on rank %zu, not on the last "
                         "rank with the loss\n",
                         mtp_stage % P);
    /* the first/last form, when the plan has exactly that shape: free first and last counts,
     * the middle ranks equal (Megatron splits the rest evenly over them) */
    if (V == 1 && P >= 2 && !mtps) {
        /* Megatron wants both counts > 0; every middle rank gets an equal share, never none */
        bool shape = t[0] > 0 && t[K - 1] > 0;
        for (size_t k = 1; k + 1 < K; k++)
            shape = shape && t[k] == t[1] && t[k] > 0;
        if (shape)
            sp_strbuf_printf(text,
                             "# or, equivalently:\n--pipeline-model-parallel-size %u --num-layers "
                             "%zu --decoder-first-pipeline-num-layers %zu "
                             "--decoder-last-pipeline-num-layers %zu\n",
                             P, decoders, t[0], t[K - 1]);
    }
out:
    sp_free(t);
    sp_free(m);
    sp_free(e);
    sp_free(l);
    return st;
}

/* the torch schedule class that runs the plan's schedule, named in the pippy export */
static sp_status pippy_schedule(sp_ctx *ctx, const sp_plan *plan, struct sp_strbuf *text) {
    const char *name = plan->summary.schedule.present
                           ? sp_torch_schedule_name(plan->summary.schedule.schedule)
                           : NULL;
    if (name)
        sp_strbuf_printf(text,
                         "# the plan's schedule (%s), as torch names it: run each rank's "
                         "stages under it\n"
                         "from torch.distributed.pipelining.schedules import get_schedule_class\n"
                         "schedule_class = get_schedule_class(\"%s\")  # Schedule%s\n",
                         sp_schedule_name(plan->summary.schedule.schedule), name, name);
    else if (plan->summary.schedule.present)
        sp_strbuf_printf(text,
                         "# torch.distributed.pipelining has no schedule class for %s: "
                         "export --to torch-schedule-csv gives its order for torch's "
                         "_PipelineScheduleRuntime\n",
                         sp_schedule_name(plan->summary.schedule.schedule));
    else
        sp_strbuf_puts(text, "# the plan names no schedule: partition with --schedule for the "
                             "torch class that runs it\n");
    return text->oom ? sp_oom(ctx, "exporting a plan") : SP_OK;
}

static sp_status no_chunks(sp_ctx *ctx, const sp_plan *plan, const char *what) {
    if (plan->summary.chunks > 1)
        return sp_fail(ctx, SP_ERR_INVALID_ARG,
                       "%s has no interleaved schedule; this plan has %u chunks per device", what,
                       plan->summary.chunks);
    return SP_OK;
}

/* the op order of the plan's schedule as torch's CSV, and its rows as JSON */
static sp_status torch_schedule(sp_ctx *ctx, const sp_plan *plan, struct sp_strbuf *text,
                                struct sp_strbuf *value) {
    const sp_plan_summary *m = &plan->summary;
    sp_sim_opts so;
    sp_sim_opts_init(&so);
    if (m->schedule.present) {
        so.schedule = m->schedule.schedule;
        so.micro_batches = m->schedule.micro_batches;
    } else if (m->chunks > 1) {
        so.schedule = m->chunk_layout == SP_CHUNKS_V ? SP_SCHEDULE_ZBV : SP_SCHEDULE_INTERLEAVED;
    }
    char *csv = NULL;
    sp_status st = sp_schedule_to_torch_csv(ctx, plan, &so, &csv);
    if (st != SP_OK)
        return st;
    sp_strbuf_puts(text, csv);
    sp_strbuf_puts(value, "[");
    bool row_open = false;
    for (const char *c = csv; *c;) {
        size_t len = strcspn(c, ",\n");
        if (!row_open)
            sp_strbuf_puts(value, value->len > 1 ? ", [" : "[");
        else
            sp_strbuf_puts(value, ", ");
        row_open = true;
        if (len)
            sp_strbuf_printf(value, "\"%.*s\"", (int)len, c);
        c += len;
        if (*c == '\n') {
            sp_strbuf_puts(value, "]");
            row_open = false;
        }
        if (*c)
            c++;
    }
    sp_strbuf_puts(value, "]");
    sp_free(csv);
    return SP_OK;
}

/* modules before layer l: a framework's index of the module that layer l is (the loss is the
 * framework's loss_fn, no module of the model) */
static size_t modules_before(const sp_plan *plan, size_t l) {
    size_t n = 0;
    for (size_t i = 0; i < l; i++)
        n += sp_export_is_module(plan, i);
    return n;
}

/* every stage must hold a module: a stage of nothing but the loss is no pipeline stage in any
 * framework; an empty stage only where the format runs one (empty_ok) */
static sp_status every_stage_a_module(sp_ctx *ctx, const sp_plan *plan, bool empty_ok) {
    for (size_t k = 0; k < plan->n_stages; k++) {
        if (!plan->stages[k].layer_count && empty_ok)
            continue;
        if (!plan->stages[k].layer_count)
            return sp_fail(ctx, SP_ERR_INVALID_ARG,
                           "stage %zu is empty: of the formats stagepart writes, only "
                           "Megatron-LM's layout runs a stage with no layer (--to megatron); "
                           "partition again without --allow-empty-stages, or with fewer stages",
                           k);
        bool any = false;
        for (size_t l = plan->stages[k].first_layer; l <= plan->stages[k].last_layer; l++)
            any |= sp_export_is_module(plan, l);
        if (!any)
            return sp_fail(ctx, SP_ERR_INVALID_ARG,
                           "stage %zu holds only layers of kind \"loss\" ('%s'), which no "
                           "framework runs as a pipeline stage (the loss is its loss_fn): "
                           "partition again with the loss on the stage before",
                           k, plan->layer_names[plan->stages[k].first_layer]);
    }
    return SP_OK;
}

sp_status sp_plan_export(sp_ctx *ctx, const sp_plan *plan, sp_export_format format,
                         const char *module_prefix, char **text_out, char **value_out) {
    return sp_plan_export_names(ctx, plan, format, module_prefix, SP_MODULE_NAMES_PROFILE, text_out,
                                value_out);
}

/* what every format's writer gets: the plan, each layer's module names, the prefix */
struct export_job {
    const sp_plan *plan;
    const struct module_names *mods;
    const char *module_prefix;
    sp_module_names names;
};

static sp_status export_megatron(sp_ctx *ctx, const struct export_job *j, struct sp_strbuf *text,
                                 struct sp_strbuf *value) {
    struct sp_strbuf layout;
    sp_strbuf_init(&layout);
    sp_status st = megatron(ctx, j->plan, text, &layout);
    sp_strbuf_printf(value, "\"%s\"", sp_strbuf_str(&layout));
    sp_strbuf_release(&layout);
    return st;
}

static sp_status export_deepspeed(sp_ctx *ctx, const struct export_job *j, struct sp_strbuf *text,
                                  struct sp_strbuf *value) {
    const sp_plan *plan = j->plan;
    size_t K = plan->n_stages;
    sp_status st = no_chunks(ctx, plan, "DeepSpeed's PipelineModule");
    if (st != SP_OK)
        return st;
    sp_strbuf_puts(value, "["); /* module indices: the loss is loss_fn, no layer spec */
    for (size_t k = 0; k <= K; k++)
        sp_strbuf_printf(
            value, "%s%zu", k ? ", " : "",
            modules_before(plan, k < K ? plan->stages[k].first_layer : plan->n_layers));
    sp_strbuf_puts(value, "]");
    sp_strbuf_printf(
        text,
        "# stagepart plan for %s (profile sha256 %.12s): stage s owns "
        "layers[parts[s]:parts[s+1]]\n"
        "# (the layer specs, without the loss: pass it as loss_fn)\n"
        "from deepspeed.pipe import PipelineModule\n\n\n"
        "class PlannedPipelineModule(PipelineModule):\n"
        "    PARTS = %s\n\n"
        "    def _partition_layers(self, method=\"parameters\"):\n"
        "        num_stages = self._topo.get_dim(\"pipe\")\n"
        "        stage_id = self._topo.get_coord(self.global_rank).pipe\n"
        "        assert len(self.PARTS) == num_stages + 1, \"plan made for %zu stages\"\n"
        "        assert self.PARTS[-1] == len(self._layer_specs), \"plan made for %zu "
        "layers\"\n"
        "        self.parts = list(self.PARTS)\n"
        "        self._set_bounds(start=self.parts[stage_id], stop=self.parts[stage_id + 1])\n",
        plan->model, plan->profile_sha256, sp_strbuf_str(value), K,
        modules_before(plan, plan->n_layers));
    return SP_OK;
}

static sp_status export_torchgpipe(sp_ctx *ctx, const struct export_job *j, struct sp_strbuf *text,
                                   struct sp_strbuf *value) {
    const sp_plan *plan = j->plan;
    sp_status st = no_chunks(ctx, plan, "torchgpipe's GPipe");
    if (st != SP_OK)
        return st;
    sp_strbuf_puts(value, "["); /* modules of the nn.Sequential: the loss is none */
    for (size_t k = 0; k < plan->n_stages; k++)
        sp_strbuf_printf(value, "%s%zu", k ? ", " : "",
                         modules_before(plan, plan->stages[k].last_layer + 1) -
                             modules_before(plan, plan->stages[k].first_layer));
    sp_strbuf_puts(value, "]");
    sp_strbuf_printf(text,
                     "# stagepart plan for %s: layer counts per partition of the nn.Sequential\n"
                     "balance = %s\n"
                     "model = GPipe(model, balance=balance, chunks=%u)  # or fairscale Pipe\n",
                     plan->model, sp_strbuf_str(value), plan->summary.micro_batches);
    if (plan->summary.schedule.present && plan->summary.schedule.schedule != SP_SCHEDULE_GPIPE)
        sp_strbuf_printf(text,
                         "# torchgpipe runs GPipe's fill-drain order (with checkpointing by "
                         "default); this plan was simulated under %s: partition with "
                         "--schedule gpipe for a prediction of what torchgpipe runs\n",
                         sp_schedule_name(plan->summary.schedule.schedule));
    return SP_OK;
}

static sp_status export_pippy(sp_ctx *ctx, const struct export_job *j, struct sp_strbuf *text,
                              struct sp_strbuf *value) {
    const sp_plan *plan = j->plan;
    size_t K = plan->n_stages;
    sp_strbuf_puts(value, "{");
    for (size_t k = 1; k < K; k++) {
        size_t l = plan->stages[k].first_layer;
        if (!sp_export_is_module(plan, l))
            return sp_fail(ctx, SP_ERR_INVALID_ARG,
                           "stage %zu begins at layer '%s' of kind \"loss\", which is no module "
                           "a split point can name",
                           k, plan->layer_names[l]);
        sp_strbuf_puts(value, k > 1 ? ", " : "");
        sp_export_module_name(value, j->module_prefix, j->mods->first[l]);
        sp_strbuf_puts(value, ": \"BEGINNING\"");
    }
    sp_strbuf_puts(value, "}");
    const char *placement = sp_export_placement(plan);
    sp_strbuf_printf(text,
                     "# stagepart plan for %s: %zu stages%s%s%s\n"
                     "from torch.distributed.pipelining import SplitPoint, pipeline\n\n"
                     "split_spec = {",
                     plan->model, K, placement ? " (" : "", placement ? placement : "",
                     !placement ? ""
                     : plan->summary.chunk_layout == SP_CHUNKS_V
                         ? ", as ScheduleZBVZeroBubble and ScheduleDualPipeV place them; not "
                           "the looped schedules)"
                         : ", as ScheduleInterleaved1F1B, ScheduleLoopedBFS and "
                           "ScheduleInterleavedZeroBubble place them; not ZBV or DualPipeV)");
    for (size_t k = 1; k < K; k++) {
        sp_strbuf_puts(text, k > 1 ? ", " : "");
        sp_export_module_name(text, j->module_prefix, j->mods->first[plan->stages[k].first_layer]);
        sp_strbuf_puts(text, ": SplitPoint.BEGINNING");
    }
    sp_strbuf_printf(text,
                     "}\npipe = pipeline(model, mb_args=(example_micro_batch,), "
                     "split_spec=split_spec)\n"
                     "# a split module not called through __call__, or called twice, changes "
                     "the stage count silently\n"
                     "assert pipe.num_stages == %zu, f\"the plan has %zu stages, the split "
                     "made {pipe.num_stages}\"\n",
                     K, K);
    return pippy_schedule(ctx, plan, text);
}

static sp_status export_torch_stages(sp_ctx *ctx, const struct export_job *j,
                                     struct sp_strbuf *text, struct sp_strbuf *value) {
    sp_status st = sp_export_torch_stages(ctx, j->plan, j->mods, j->module_prefix, text, value);
    return st == SP_OK ? pippy_schedule(ctx, j->plan, text) : st;
}

static sp_status export_schedule_csv(sp_ctx *ctx, const struct export_job *j,
                                     struct sp_strbuf *text, struct sp_strbuf *value) {
    return torch_schedule(ctx, j->plan, text, value);
}

static sp_status export_torchtitan(sp_ctx *ctx, const struct export_job *j, struct sp_strbuf *text,
                                   struct sp_strbuf *value) {
    return sp_export_torchtitan(ctx, j->plan, j->mods, j->module_prefix, j->names, text, value);
}

/* each format's writer: the text a user reads and the value a script takes */
typedef sp_status (*exporter)(sp_ctx *ctx, const struct export_job *j, struct sp_strbuf *text,
                              struct sp_strbuf *value);
static const exporter exporters[] = {
    [SP_EXPORT_MEGATRON] = export_megatron,
    [SP_EXPORT_DEEPSPEED] = export_deepspeed,
    [SP_EXPORT_TORCHGPIPE] = export_torchgpipe,
    [SP_EXPORT_PIPPY] = export_pippy,
    [SP_EXPORT_TORCHTITAN] = export_torchtitan,
    [SP_EXPORT_TORCH_SCHEDULE_CSV] = export_schedule_csv,
    [SP_EXPORT_TORCH_STAGES] = export_torch_stages,
};

/* what every format needs checked first: layer names, parallelism, the prefix */
static sp_status check_exportable(sp_ctx *ctx, const sp_plan *plan, sp_export_format format,
                                  const char *module_prefix, uint32_t *replicas) {
    if ((size_t)format >= SP_COUNT_OF(exporters) || !exporters[format])
        return sp_fail(ctx, SP_ERR_INVALID_ARG, "sp_plan_export: no plan or unknown format");
    if (!plan->layer_names)
        return sp_fail(ctx, SP_ERR_INVALID_ARG,
                       "the plan records no layer names (made by an older stagepart?); "
                       "partition again to export it");
    if (sp_export_parallelism(ctx, plan, format, replicas) != SP_OK)
        return ctx->status;
    for (const char *c = module_prefix; c && *c; c++)
        if (*c == '"' || *c == '\\' || (unsigned char)*c < 32)
            return sp_fail(ctx, SP_ERR_INVALID_ARG,
                           "--module-prefix: quotes, backslashes and "
                           "control characters are not allowed");
    if (every_stage_a_module(ctx, plan,
                             format == SP_EXPORT_MEGATRON ||
                                 format == SP_EXPORT_TORCH_SCHEDULE_CSV) != SP_OK)
        return ctx->status;
    return SP_OK;
}

sp_status sp_plan_export_names(sp_ctx *ctx, const sp_plan *plan, sp_export_format format,
                               const char *module_prefix, sp_module_names names, char **text_out,
                               char **value_out) {
    if (!ctx)
        return SP_ERR_INVALID_ARG;
    sp_ctx_begin(ctx);
    if (!plan || !sp_export_format_name(format))
        return sp_fail(ctx, SP_ERR_INVALID_ARG, "sp_plan_export: no plan or unknown format");
    if (text_out)
        *text_out = NULL;
    if (value_out)
        *value_out = NULL;
    uint32_t replicas = 1;
    sp_status st = check_exportable(ctx, plan, format, module_prefix, &replicas);
    if (st != SP_OK)
        return st;
    struct sp_strbuf text, value;
    sp_strbuf_init(&text);
    sp_strbuf_init(&value);
    struct module_names mods = {0};
    if (names == SP_MODULE_NAMES_PROFILE || names == SP_MODULE_NAMES_TORCHTITAN)
        st = sp_export_module_names(ctx, plan, names,
                                    format == SP_EXPORT_PIPPY || format == SP_EXPORT_TORCHTITAN ||
                                        format == SP_EXPORT_TORCH_STAGES,
                                    &mods);
    else
        st = sp_fail(ctx, SP_ERR_INVALID_ARG, "sp_plan_export_names: unknown module names");
    struct export_job job = {plan, &mods, module_prefix, names};
    if (st == SP_OK)
        st = exporters[format](ctx, &job, &text, &value);
    if (st == SP_OK && replicas > 1) /* every format above takes '#' comments */
        sp_export_parallel_note(plan, replicas, &text);
    if (st == SP_OK && (text.oom || value.oom))
        st = sp_oom(ctx, "exporting a plan");
    if (st == SP_OK && text_out) {
        *text_out = text.buf ? text.buf : sp_strdup("");
        text.buf = NULL;
    }
    if (st == SP_OK && value_out) {
        *value_out = value.buf ? value.buf : sp_strdup("");
        value.buf = NULL;
    }
    sp_strbuf_release(&text);
    sp_strbuf_release(&value);
    sp_export_module_names_release(&mods);
    return st;
}

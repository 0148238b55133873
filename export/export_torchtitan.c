/* export/export_torchtitan.c: a plan as torchtitan's job config: each model part's module names
 * (module_fqns_per_model_part), the schedule, the micro-batches, and where torchtitan's own even
 * split would make the same parts, the two settings that make it. */
#include <stdio.h>
#include <string.h>

#include "export_torchtitan.h"
#include "plan_impl.h"

/* torchtitan's generate_llm_fqn_per_model_part(S, L, input_weight, output_weight) with its
 * default names: stage s's count of layers.N, or -1 where it raises */
static bool torchtitan_even_split(size_t S, size_t L, size_t iw, size_t ow, size_t *count) {
    size_t eff = L + iw + ow;
    if (S < 2 || S > eff)
        return false;
    size_t per = eff / S, extra = eff % S, next = 0;
    if (per == 0 || iw > per || ow > per)
        return false;
    for (size_t s = 0; s < S; s++) {
        size_t want = per + (s < extra) - (s == 0 ? iw : 0) - (s == S - 1 ? ow : 0);
        size_t take = want < L - next ? want : L - next;
        count[s] = take;
        next += take;
    }
    return true;
}

/* When the stages' module lists are torchtitan's default shape ([tok_embeddings, layers.0, ...],
 * ..., [..., norm, lm_head]) and its even split with some first/last weights makes exactly them,
 * those weights (the smallest first weight, then last); false otherwise. */
static bool torchtitan_less_layers(const sp_plan *plan, const struct module_names *m,
                                   size_t *first_less, size_t *last_less) {
    size_t S = plan->n_stages, L = 0, *want = sp_calloc(S ? S : 1, sizeof *want),
           *got = sp_calloc(S ? S : 1, sizeof *got);
    bool shape = want && got && S >= 2;
    for (size_t k = 0; k < S && shape; k++)
        for (size_t l = plan->stages[k].first_layer; l <= plan->stages[k].last_layer && shape;
             l++) {
            for (int i = 0; i < 2 && shape; i++) {
                const char *nm = i ? m->second[l] : m->first[l];
                char buf[32];
                if (!nm)
                    continue;
                snprintf(buf, sizeof buf, "layers.%zu", L);
                if (strcmp(nm, buf) == 0) {
                    want[k]++;
                    L++;
                } else if (strcmp(nm, "tok_embeddings") == 0) {
                    shape = k == 0 && L == 0;
                } else if (strcmp(nm, "norm") == 0 || strcmp(nm, "lm_head") == 0) {
                    shape = k == S - 1;
                } else {
                    shape = false;
                }
            }
        }
    /* the first stage opens with tok_embeddings, the last ends with norm, lm_head */
    shape = shape && m->first[0] && strcmp(m->first[0], "tok_embeddings") == 0;
    size_t last = plan->n_layers;
    while (shape && last > 0 && !m->first[last - 1])
        last--;
    shape = shape && last > 0 &&
            strcmp(m->second[last - 1] ? m->second[last - 1] : m->first[last - 1], "lm_head") == 0;
    bool found = false;
    for (size_t iw = 0; shape && !found && iw <= L + 1; iw++)
        for (size_t ow = 0; !found && ow <= L + 1; ow++)
            if (torchtitan_even_split(S, L, iw, ow, got) &&
                memcmp(got, want, S * sizeof *got) == 0) {
                *first_less = iw;
                *last_less = ow;
                found = true;
            }
    sp_free(want);
    sp_free(got);
    return found;
}

/* torchtitan's notes on what its splitter keeps: every top-level module a part lists, top-level
 * modules and layers.N only */
static void torchtitan_notes(const sp_plan *plan, const struct module_names *mods,
                             const char *module_prefix, sp_module_names names,
                             struct sp_strbuf *text) {
    size_t first_less = 0, last_less = 0;
    if (!module_prefix && torchtitan_less_layers(plan, mods, &first_less, &last_less))
        sp_strbuf_printf(text,
                         "# torchtitan's own even split makes exactly these parts with:\n"
                         "config.parallelism.pipeline_parallel_first_stage_less_layers = %zu\n"
                         "config.parallelism.pipeline_parallel_last_stage_less_layers = %zu\n",
                         first_less, last_less);
    if (names != SP_MODULE_NAMES_TORCHTITAN)
        sp_strbuf_puts(text,
                       "# torchtitan drops every top-level module no part lists (a final norm "
                       "left out is skipped on every stage): the profile must name them all, "
                       "or use --module-names torchtitan\n");
    for (size_t l = 0; l < plan->n_layers; l++) {
        const char *name = mods->first[l] ? mods->first[l] : "", *dot = strchr(name, '.');
        /* "name" or "name.N" (layers.N); anything deeper is no module the splitter finds */
        bool flat = !dot || (dot[1] && strspn(dot + 1, "0123456789") == strlen(dot + 1));
        if (sp_export_is_module(plan, l) && !flat) {
            sp_strbuf_printf(text,
                             "# '%s' is nested: torchtitan's splitter takes top-level "
                             "modules and layers.N only\n",
                             name);
            break;
        }
    }
}

sp_status sp_export_torchtitan(sp_ctx *ctx, const sp_plan *plan, const struct module_names *mods,
                               const char *module_prefix, sp_module_names names,
                               struct sp_strbuf *text, struct sp_strbuf *value) {
    (void)ctx;
    sp_strbuf_puts(value, "[");
    for (size_t k = 0; k < plan->n_stages; k++) {
        sp_strbuf_puts(value, k ? ", [" : "[");
        bool any = false;
        for (size_t l = plan->stages[k].first_layer; l <= plan->stages[k].last_layer; l++)
            for (int i = 0; i < 2; i++) {
                const char *nm = i ? mods->second[l] : mods->first[l];
                if (!nm)
                    continue;
                sp_strbuf_puts(value, any ? ", " : "");
                sp_export_module_name(value, module_prefix, nm);
                any = true;
            }
        sp_strbuf_puts(value, "]");
    }
    sp_strbuf_puts(value, "]");
    /* torchtitan's job config is Python now (Trainer.Config); its splitter keeps only the
     * modules listed, top-level ones and layers.N */
    sp_strbuf_printf(text,
                     "# stagepart plan for %s: torchtitan's job config (Python, "
                     "Trainer.Config)\n"
                     "config.parallelism.pipeline_parallel_degree = %u\n",
                     plan->model, plan->summary.stages);
    if (plan->summary.stages > 1) /* its config check refuses CUDA graphs with PP (0.3.0) */
        sp_strbuf_puts(text, "config.training.disable_cuda_graphs = True  # torchtitan: CUDA "
                             "graphs do not support pipeline parallelism\n");
    if (plan->summary.schedule.present) {
        sp_schedule sched = plan->summary.schedule.schedule;
        if (sp_torch_schedule_name(sched))
            sp_strbuf_printf(text, "config.parallelism.pipeline_parallel_schedule = \"%s\"\n",
                             sp_torch_schedule_name(sched));
        else
            sp_strbuf_printf(text,
                             "# pipeline_parallel_schedule: torch has no %s for one stage "
                             "per rank\n",
                             sp_schedule_name(sched));
    }
    /* torchtitan (0.3.0) runs local_batch_size / pipeline_parallel_microbatch_size
     * micro-batches: M of them whatever size the user sets first */
    sp_strbuf_printf(text,
                     "# M = %u micro-batches: torchtitan runs local_batch_size / "
                     "pipeline_parallel_microbatch_size\n"
                     "config.training.local_batch_size = %u * "
                     "config.parallelism.pipeline_parallel_microbatch_size\n"
                     "config.parallelism.module_fqns_per_model_part = %s\n",
                     plan->summary.micro_batches, plan->summary.micro_batches,
                     sp_strbuf_str(value));
    torchtitan_notes(plan, mods, module_prefix, names, text);
    return SP_OK;
}

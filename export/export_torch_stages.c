/* export/export_torch_stages.c: a plan as manual torch.distributed.pipelining PipelineStages
 * (docs/export.md): each stage a copy of the model that keeps its own modules, the others made
 * pass-throughs, as torchtitan splits its models; for the models torch's traced pipeline()
 * refuses (Llama-family models at 3+ stages, BERT). The Python is written here whole: the plan
 * gives the stages' module paths and the schedule. */
#include <string.h>

#include "export_parallel.h"
#include "export_torch_stages.h"

/* The part of the export that does not depend on the plan. Why each piece is as it is:
 * - a stage other than the first is called with inputs_embeds= (Hugging Face models then skip
 *   their token embedding), and hands on its output's logits (the hidden states, before the
 *   head): one tensor in, one out, which PipelineStage sends;
 * - Elsewhere gives integer inputs (position ids into an absolute position embedding another
 *   stage holds) 0, since the model adds that embedding's output to the hidden states;
 * - blocks of a ModuleList stay under their own indices, so parameter names do not change;
 * - check_split runs the stages one after another and compares with the whole model: work a
 *   model's forward does between two stages' modules (an activation between two layers of a
 *   head, a scale after the embedding) would run on both sides of the cut, and this says so
 *   rather than training something else. */
static const char *const STAGES_PY =
    "import copy\n"
    "\n"
    "import torch\n"
    "\n"
    "\n"
    "class Elsewhere(torch.nn.Module):\n"
    "    \"\"\"A module another stage holds: hands on the hidden states it is given "
    "(inputs_embeds,\n"
    "    else its first input); given ids (an absolute position embedding another stage holds),\n"
    "    gives 0, which the model adds to the hidden states this stage received.\"\"\"\n"
    "\n"
    "    def forward(self, *args, **kwargs):\n"
    "        x = kwargs.get(\"inputs_embeds\")\n"
    "        if x is None:\n"
    "            x = args[0] if args else next(v for v in kwargs.values() if torch.is_tensor(v))\n"
    "        return x if x.is_floating_point() else torch.zeros((), "
    "dtype=torch.get_default_dtype())\n"
    "\n"
    "\n"
    "class KeptBlocks(torch.nn.Module):\n"
    "    \"\"\"The blocks of a ModuleList a stage holds, under their own indices, iterated and "
    "sliced\n"
    "    as the list was.\"\"\"\n"
    "\n"
    "    def __init__(self, blocks):\n"
    "        super().__init__()\n"
    "        for i, m in blocks:\n"
    "            self.add_module(str(i), m)\n"
    "\n"
    "    def __iter__(self):\n"
    "        return iter(self._modules.values())\n"
    "\n"
    "    def __len__(self):\n"
    "        return len(self._modules)\n"
    "\n"
    "    def __getitem__(self, i):\n"
    "        return list(self._modules.values())[i]\n"
    "\n"
    "\n"
    "def _output(out):\n"
    "    if hasattr(out, \"logits\"):\n"
    "        return out.logits\n"
    "    return out[0] if isinstance(out, (tuple, list)) else out\n"
    "\n"
    "\n"
    "class StageModule(torch.nn.Module):\n"
    "    \"\"\"model (changed in place: give each stage its own copy) with only "
    "stage_modules[stage];\n"
    "    the first stage takes the model's input, the others the hidden states.\"\"\"\n"
    "\n"
    "    def __init__(self, model, stage):\n"
    "        super().__init__()\n"
    "        others = {n for s, names in enumerate(stage_modules) if s != stage for n in names}\n"
    "        lists = {}\n"
    "        for name in sorted(others):\n"
    "            parent, _, leaf = name.rpartition(\".\")\n"
    "            owner = model.get_submodule(parent) if parent else model\n"
    "            if isinstance(owner, torch.nn.ModuleList):\n"
    "                lists[parent] = owner\n"
    "            else:\n"
    "                setattr(owner, leaf, Elsewhere())\n"
    "        for parent, blocks in lists.items():\n"
    "            up, _, leaf = parent.rpartition(\".\")\n"
    "            kept = [(i, m) for i, m in enumerate(blocks) if f\"{parent}.{i}\" not in others]\n"
    "            setattr(model.get_submodule(up) if up else model, leaf, KeptBlocks(kept))\n"
    "        self.model, self.first = model, stage == 0\n"
    "\n"
    "    def forward(self, x):\n"
    "        return _output(self.model(x) if self.first else self.model(inputs_embeds=x))\n"
    "\n"
    "\n"
    "def check_split(model, example, rtol=1e-4, atol=1e-5):\n"
    "    \"\"\"Run the stages (copies of model) one after another on example and compare with the\n"
    "    whole model: raises when the model's forward does work between two stages' "
    "modules.\"\"\"\n"
    "    was = model.training\n"
    "    model.eval()\n"
    "    with torch.no_grad():\n"
    "        want, x = _output(model(example)), example\n"
    "        for stage in range(len(stage_modules)):\n"
    "            x = StageModule(copy.deepcopy(model), stage).eval()(x)\n"
    "    model.train(was)\n"
    "    if x.shape != want.shape or not torch.allclose(x, want, rtol=rtol, atol=atol):\n"
    "        raise RuntimeError(\"the stages run one after another differ from the whole model: "
    "\"\n"
    "                           \"its forward does work between two stages' modules (an activation "
    "\"\n"
    "                           \"between two layers of a head, a scale after the embedding), "
    "which \"\n"
    "                           \"this split runs on both sides; profile that part as one layer "
    "\"\n"
    "                           \"(import --layers), or use --to pippy\")\n"
    "\n"
    "\n"
    "def tied_parameters(model):\n"
    "    \"\"\"Parameters that modules of two or more stages share (a decoder tied to the\n"
    "    embedding), as [{stage: name, ...}]: each of those stages trains its own copy, so sum\n"
    "    their gradients across the stages' ranks after the backward (as Megatron's embedding\n"
    "    group does) before the optimizer steps.\"\"\"\n"
    "    owner = {}\n"
    "    for stage, names in enumerate(stage_modules):\n"
    "        for n in names:\n"
    "            for pn, p in model.get_submodule(n).named_parameters():\n"
    "                owner.setdefault(id(p), {}).setdefault(stage, f\"{n}.{pn}\")\n"
    "    return [o for o in owner.values() if len(o) > 1]\n"
    "\n"
    "\n"
    "# on each rank: check_split(model, example_micro_batch) once, then for each stage it holds\n"
    "#   PipelineStage(StageModule(copy.deepcopy(model), k), k, len(stage_modules), device);\n"
    "# after each backward, sum the gradients of tied_parameters(model) across their stages\n";

sp_status sp_export_torch_stages(sp_ctx *ctx, const sp_plan *plan, const struct module_names *mods,
                                 const char *module_prefix, struct sp_strbuf *text,
                                 struct sp_strbuf *value) {
    size_t K = plan->n_stages;
    sp_strbuf_puts(value, "[");
    for (size_t k = 0; k < K; k++) {
        sp_strbuf_puts(value, k ? ", [" : "[");
        bool any = false;
        for (size_t l = plan->stages[k].first_layer;
             plan->stages[k].layer_count && l <= plan->stages[k].last_layer; l++) {
            if (!mods->first[l])
                continue;
            sp_strbuf_printf(value, "%s\"%s%s\"", any ? ", " : "",
                             module_prefix ? module_prefix : "", mods->first[l]);
            any = true;
        }
        sp_strbuf_puts(value, "]");
    }
    sp_strbuf_puts(value, "]");
    sp_strbuf_printf(text,
                     "# stagepart plan for %s: %zu stages as PipelineStages built by hand "
                     "(torch.distributed.pipelining), each keeping its modules%s%s\n"
                     "stage_modules = %s\n",
                     plan->model, K, sp_export_placement(plan) ? "; " : "",
                     sp_export_placement(plan) ? sp_export_placement(plan) : "",
                     sp_strbuf_str(value));
    sp_strbuf_puts(text, STAGES_PY);
    return text->oom || value->oom ? sp_oom(ctx, "exporting a plan") : SP_OK;
}

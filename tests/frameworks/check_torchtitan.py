#!/usr/bin/env python3
"""tests/frameworks/check_torchtitan.py: `export --to torchtitan` read by torchtitan itself.

The exported lines are pasted into a user's config function (on torchtitan's own
llama3_debugmodel) and loaded by torchtitan's ConfigManager (`--module ... --config ...`, as
its trainer loads a job), then its Llama 3 debug model (6 layers, on the meta device) is split
by torchtitan's own _split_module for each model part, and the parts are placed on ranks by its
own _get_pp_rank_to_stage_indices_mapping for the exported schedule. Each stage must keep exactly
the plan's modules on the plan's rank. Where the export also gives
pipeline_parallel_first/last_stage_less_layers, torchtitan's own generator with them must make
the same parts. The profile names its layers otherwise; `--module-names torchtitan` names them."""
import os
import random
import sys
import textwrap

import fwcheck
import torch

CASES = [  # stages, partition arguments, head weight
    (2, ["-s", 2, "--schedule", "1f1b"], 5.0),
    (4, ["-s", 4, "--schedule", "gpipe"], 3.0),
    (3, ["-s", 3], 1.0),
    (2, ["-s", 2, "--chunks", 2, "--schedule", "interleaved", "--time-limit", 10], 4.0),
    (2, ["-s", 2, "--schedule", "zbv"], 4.0),
]
N_LAYERS = 6  # llama3 debugmodel


def load_config(export_text, tag):
    """torchtitan's ConfigManager reading a config function that holds the export."""
    from torchtitan.config.manager import ConfigManager
    folder = fwcheck.path(tag + ".registry")
    os.makedirs(folder, exist_ok=True)
    module = "stagepart_planned_" + tag.replace("-", "_")
    with open(os.path.join(folder, module + ".py"), "w") as f:
        f.write("from torchtitan.models.llama3.config_registry import llama3_debugmodel\n\n\n"
                "def planned():\n    config = llama3_debugmodel()\n"
                + textwrap.indent(export_text, "    ") + "    return config\n")
    sys.path.insert(0, folder)
    try:
        return ConfigManager().parse_args(["--module", module, "--config", "planned"])
    finally:
        sys.path.remove(folder)


def kept_modules(part):
    """The modules torchtitan's split kept: top-level children not set to None, and each kept
    entry of the layers container."""
    kept = []
    for name, child in part.named_children():
        if child is None:
            continue
        if name == "layers":
            kept += [f"layers.{k}" for k in child.keys()]
        else:
            kept.append(name)
    return set(kept)


def check(stages, args, head_ms, seed):
    from torchtitan.distributed import pipeline_parallel as pp
    rng = random.Random(seed)
    layers = [("embed", "embedding", 0.3)]
    layers += [(f"blocks.{i}", "transformer", rng.uniform(1.0, 3.0)) for i in range(N_LAYERS)]
    layers += [("final_norm", "norm", 0.2), ("head", "head", head_ms), ("loss", "loss", 0.1)]
    tag = f"titan-{seed}"
    prof = fwcheck.write_profile(tag, layers, model="llama3-debug")
    plan_path, plan = fwcheck.partition(prof, tag, *args)
    text = fwcheck.export(plan_path, "torchtitan", "--module-names", "torchtitan")
    cfg = load_config(text, tag)
    par = cfg.parallelism
    parts = par.module_fqns_per_model_part
    titan = {"embed": "tok_embeddings", "final_norm": "norm", "head": "lm_head"}
    want = [{titan.get(layers[i][0], layers[i][0].replace("blocks.", "layers."))
             for i in ls if layers[i][1] != "loss"} for ls in fwcheck.stage_layers(plan)]
    with torch.device("meta"):
        model = cfg.model_spec.model.build()
    for s, names in enumerate(parts):
        got = kept_modules(pp._split_module(model, names))
        if got != want[s]:
            return f"torchtitan's split keeps {sorted(got)} in stage {s}, the plan {sorted(want[s])}"
    for rank in range(par.pipeline_parallel_degree):
        mine = pp._get_pp_rank_to_stage_indices_mapping(rank, par.pipeline_parallel_degree,
                                                        par.pipeline_parallel_schedule, len(parts))
        planned = [k for k, st in enumerate(plan["stages"]) if st["device"] == rank]
        if sorted(mine) != planned:
            return f"torchtitan puts stages {sorted(mine)} on rank {rank}, the plan {planned}"
    if "first_stage_less_layers" in text:
        gen = pp._generate_llm_fqn_per_model_part(len(parts), N_LAYERS,
                                                  par.pipeline_parallel_first_stage_less_layers,
                                                  par.pipeline_parallel_last_stage_less_layers)
        if gen != parts:
            return f"torchtitan's generator with the exported weights makes {gen}, not {parts}"
    micro = cfg.training.local_batch_size // par.pipeline_parallel_microbatch_size
    if micro != plan["micro_batches"]:
        return f"torchtitan runs {micro} micro-batches, the plan {plan['micro_batches']}"
    return None


def main():
    report = fwcheck.Report("torchtitan")
    for seed, (stages, args, head_ms) in enumerate(CASES):
        name = " ".join(str(a) for a in args if a not in ("--time-limit", 10))
        report.case(f"config and split of the llama3 debug model, {name}", check, stages, args, head_ms, seed)
    report.exit()


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""tests/frameworks/check_hf_flow.py: the whole flow a new user runs on a Hugging Face model,
with nothing named by hand: Qwen2, GPT-NeoX and BERT built from tiny random configs, traced on
the CPU with torch.profiler (with_stack=True, no annotation, no step ranges, no optimizer), the
module map stagepart_torch.describe writes, `import kineto --modules`, `partition` at 2 and 4
stages, and each export run by the framework's own code:

  - the profile's layers are the modules a user expects, by their paths in the model (the
    embedding, every block, the final norm, the head; BERT's MLM head `cls` as one unit), with
    their kinds and parameter bytes (the rotary embedding and dropouts, which hold no
    parameters, are part of a neighbour);
  - Megatron Core's PipelineParallelLayerLayout parses and validates the layout, and builds on
    every rank exactly the plan's transformer layers, embedding and loss;
  - DeepSpeed's PipelineModule, given the model's own modules for the profile's layers, takes the
    exported parts (its own count check included) and builds each rank's layers and parameters;
  - torch's pipeline() runs the pippy export on the models it takes at 2 stages (Qwen2,
    GPT-NeoX) with the unpipelined model's loss and gradients (check_pippy's run). Its traced
    split refuses BERT ("input tensor has to be contiguous") and Llama-family models at 4 stages
    ("Backward of skip connections not supported yet"), torch's limits, not the plan's;
  - the torch-stages export (PipelineStages built by hand, its own check_split first) runs all
    three at 2 and 4 stages with the unpipelined loss and gradients.
"""
import json
import os
import sys

import fwcheck
import models
import pipeline_run
import torch
import torch.multiprocessing as mp
from check_deepspeed import _worker as check_deepspeed_worker
from check_megatron import megatron_accepts, megatron_stages, plan_stages

sys.path.insert(0, os.path.join(fwcheck.ROOT, "profiler", "python"))
import stagepart_torch  # noqa: E402

MODELS = ["qwen2", "neox", "bert"]
PIPPY = {"qwen2", "neox"}  # the models torch's traced pipeline() splits (at 2 stages)
N_LAYER = 4


def load(path):
    with open(path) as f:
        return json.load(f)


def record(name):
    """The trace, the module map and the profile of a few training steps on the CPU."""
    model, names, kinds, vocab = models.build({"model": name, "n_layer": N_LAYER})
    torch.manual_seed(7)
    ids = torch.randint(0, vocab, (2, 16))
    trace = fwcheck.path(f"hf-{name}.trace.json")
    mods = fwcheck.path(f"hf-{name}.modules.json")
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU],
                                with_stack=True) as prof:
        for _ in range(3):
            models.loss_fn(model(ids), ids).backward()
    prof.export_chrome_trace(trace)
    stagepart_torch.write_modules(mods, model, ids)
    profile = fwcheck.path(f"hf-{name}.profile.json")
    fwcheck.stagepart("import", "kineto", trace, "--modules", mods, "--warmup-steps", "1",
                      "-o", profile)
    return model, names[:-1], kinds[:-1], profile  # the loss is the caller's: no layer


def check_profile(name, model, names, kinds, profile):
    p = load(profile)
    got = [l["name"] for l in p["layers"]]
    if got != names:
        return f"layers {got}, a user expects {names}"
    if [l.get("kind") for l in p["layers"]] != kinds:
        return f"kinds {[l.get('kind') for l in p['layers']]}, expected {kinds}"
    for l in p["layers"]:
        want = sum(t.numel() * t.element_size() for t in model.get_submodule(l["name"]).parameters())
        if l.get("param_bytes") != want:
            return f"{l['name']}: param_bytes {l.get('param_bytes')}, its parameters hold {want}"
        if not (l["fwd_ms"] > 0 and l["bwd_ms"] > 0):
            return f"{l['name']}: fwd {l['fwd_ms']} ms, bwd {l['bwd_ms']} ms"
    if not p["measurement"]["steps_from"].startswith("the model's top-level calls"):
        return f"steps from {p['measurement']['steps_from']}"
    return None


def check_megatron(plan_path):
    out = fwcheck.export(plan_path, "megatron")
    words = out.split()
    size = int(words[words.index("--pipeline-model-parallel-size") + 1])
    layout = out.split('--pipeline-model-parallel-layout "')[1].split('"')[0]
    lay = megatron_accepts(layout, size, N_LAYER, 0)
    if isinstance(lay, str):
        return f"Megatron rejects {layout!r}: {lay}"
    plan = load(plan_path)
    if megatron_stages(lay) != plan_stages(plan):
        return f"{layout!r}: Megatron builds {megatron_stages(lay)}, the plan {plan_stages(plan)}"
    return None


def check_deepspeed(name, model, names, plan_path, stages, port):
    plan = load(plan_path)
    want = fwcheck.stage_layers(plan)
    job = {"export": fwcheck.export(plan_path, "deepspeed"), "ranks": stages, "model": name,
           "n_layer": N_LAYER, "names": names, "dir": fwcheck.path(f"hf-{name}-{stages}.ds"),
           "port": port}
    os.makedirs(job["dir"], exist_ok=True)
    mp.start_processes(check_deepspeed_worker, args=(job,), nprocs=stages, start_method="spawn")
    sizes = [sum(p.numel() for p in model.get_submodule(n).parameters()) for n in names]
    for r in range(stages):
        got = torch.load(os.path.join(job["dir"], f"rank{r}.pt"))
        if got["local"] != want[r]:
            return f"rank {r} builds layers {got['local']}, the plan's stage {r} holds {want[r]}"
        if got["params"] != sum(sizes[i] for i in want[r]):
            return f"rank {r}: {got['params']} parameters, its layers hold {sum(sizes[i] for i in want[r])}"
    return None


def check_pippy(name, plan_path):
    job = {"model": {"model": name, "n_layer": N_LAYER}, "export": fwcheck.export(plan_path, "pippy"),
           "ranks": 2, "micro_batches": 4, "batch": 8, "seq": 16, "style": "loop",
           "schedule": "GPipe", "dir": fwcheck.path(f"hf-{name}.pippy")}
    results = pipeline_run.run(job)
    return pipeline_run.compare(results, pipeline_run.reference(job))


def check_torch_stages(name, plan_path, stages):
    """--to torch-stages: its check_split, then a training step run by torch; the gradients of
    parameters two stages share (BERT's decoder, tied to its word embedding) summed across them
    as the export's tied_parameters says to."""
    text = fwcheck.export(plan_path, "torch-stages")
    job = {"model": {"model": name, "n_layer": N_LAYER}, "export": text, "ranks": stages,
           "micro_batches": 4, "batch": 8, "seq": 16, "style": "loop", "schedule": "GPipe",
           "dir": fwcheck.path(f"hf-{name}-{stages}.stages")}
    results = pipeline_run.run(job)
    scope = {}
    exec(compile(text, "stagepart export --to torch-stages", "exec"), scope)
    model, _, _, _ = models.build(job["model"])
    grads = {}
    for r in results:
        grads.update(r["grads"])
    for group in scope["tied_parameters"](model):
        names = [group[s] for s in sorted(group)]
        grads[names[0]] = sum(grads.pop(n) for n in names)
    merged = [{"grads": grads, "losses": [x for r in results for x in r["losses"]]}]
    return pipeline_run.compare(merged, pipeline_run.reference(job))


def flow(name, port):
    model, names, kinds, profile = record(name)
    bad = check_profile(name, model, names, kinds, profile)
    if bad:
        return bad
    for stages in (2, 4):
        plan_path, _ = fwcheck.partition(profile, f"hf-{name}-{stages}", "-s", stages, "-m", 4,
                                         "--schedule", "gpipe")
        for what, run in (("megatron", lambda: check_megatron(plan_path)),
                          ("deepspeed", lambda: check_deepspeed(name, model, names, plan_path,
                                                                stages, port + stages)),
                          ("pippy", lambda: check_pippy(name, plan_path)
                           if stages == 2 and name in PIPPY else None),
                          ("torch-stages", lambda: check_torch_stages(name, plan_path, stages))):
            bad = run()
            if bad:
                return f"{stages} stages, {what}: {bad}"
    print(f"  {name}: {len(names)} layers by path; 2 and 4 stages read by Megatron and DeepSpeed"
          + (", run by torch's pipeline() at 2" if name in PIPPY else "")
          + ", by torch's stages built by hand at 2 and 4")
    return None


def main():
    report = fwcheck.Report("hf flow")
    for i, name in enumerate(MODELS):
        report.case(f"{name}: CPU trace to profile, plans at 2 and 4 stages, exports run", flow,
                    name, 29600 + 10 * i)
    report.exit()


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    main()

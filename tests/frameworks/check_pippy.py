#!/usr/bin/env python3
"""tests/frameworks/check_pippy.py: `export --to pippy` executed by torch.distributed.pipelining.

For Hugging Face GPT-2 and a Llama-style model built from small configs, a profile names their
modules (uneven made-up times, so the plan is not the even split), stagepart partitions it and
exports the plan; then, in one gloo process per stage:
  - the exported text runs unedited: `pipeline(model, split_spec=...)` and its own assertion on
    the stage count;
  - each stage's parameters belong to exactly the plan's modules for that stage;
  - one training step under the plan's schedule (torch's class by the name the torchtitan export
    gives) has the unpipelined model's loss and gradients (1e-5 relative).
"""
import os
import random
import re

import fwcheck
import models
import pipeline_run

CASES = [  # name, model spec, stages, micro-batches, schedule
    ("gpt2 P=2 1f1b", {"model": "gpt2", "n_layer": 6}, 2, 4, "1f1b"),
    ("gpt2 P=4 1f1b", {"model": "gpt2", "n_layer": 6}, 4, 4, "1f1b"),
    ("llama P=2 gpipe", {"model": "llama", "n_layer": 4}, 2, 4, "gpipe"),
    # the zero-config flow: a CPU trace with no pattern, its module map, import --modules
    ("llama P=2 gpipe traced", {"model": "llama", "n_layer": 4}, 2, 4, "gpipe"),
]


def torch_schedule_name(plan_path):
    """The schedule as torch names it: what `export --to torchtitan` writes for the plan."""
    text = fwcheck.export(plan_path, "torchtitan")
    return re.search(r'pipeline_parallel_schedule = "([^"]+)"', text).group(1)


def owner(param, names):
    """The profile module a parameter belongs to: the longest name prefixing it."""
    hits = [n for n in names if param.startswith(n + ".")]
    return max(hits, key=len) if hits else param


def make_plan(case_name, spec, stages, micro, schedule, seed):
    _, names, kinds, _ = models.build(spec)
    rng = random.Random(seed)
    ms = [rng.uniform(0.5, 4.0) if k == "transformer" else rng.uniform(0.05, 2.5) for k in kinds]
    tag = re.sub(r"[^a-z0-9]+", "-", case_name)
    prof = fwcheck.write_profile(tag, list(zip(names, kinds, ms)), model=spec["model"])
    plan_path, plan = fwcheck.partition(prof, tag, "-s", stages, "-m", micro, "--schedule", schedule)
    return tag, names, plan_path, plan


def make_plan_traced(case_name, spec, stages, micro, schedule, seed):
    """The profile from a CPU trace recorded with no annotation (module ranges only), named by
    the module map stagepart_torch.describe writes: the layers' paths are what torch resolves."""
    import sys
    import torch

    sys.path.insert(0, os.path.join(fwcheck.ROOT, "profiler", "python"))
    import stagepart_torch

    model, _, _, vocab = models.build(spec)
    torch.manual_seed(seed)
    ids = torch.randint(0, vocab, (2, 16))
    tag = re.sub(r"[^a-z0-9]+", "-", case_name)
    trace, mods = fwcheck.path(tag + ".trace.json"), fwcheck.path(tag + ".modules.json")
    acts = [torch.profiler.ProfilerActivity.CPU]
    with torch.profiler.profile(activities=acts, with_stack=True) as prof:
        for _ in range(2):
            models.loss_fn(model(ids), ids).backward()
    prof.export_chrome_trace(trace)
    stagepart_torch.write_modules(mods, model, ids)
    prof_path = fwcheck.path(tag + ".profile.json")
    fwcheck.stagepart("import", "kineto", trace, "--modules", mods, "-o", prof_path)
    plan_path, plan = fwcheck.partition(prof_path, tag, "-s", stages, "-m", micro, "--schedule",
                                        schedule)
    return tag, plan["layer_names"], plan_path, plan


def check(case_name, spec, stages, micro, schedule, seed):
    make = make_plan_traced if case_name.endswith("traced") else make_plan
    tag, names, plan_path, plan = make(case_name, spec, stages, micro, schedule, seed)
    text = fwcheck.export(plan_path, "pippy")
    job = {"model": spec, "export": text, "ranks": stages, "micro_batches": micro, "batch": 2 * micro,
           "seq": 16, "style": "loop", "schedule": torch_schedule_name(plan_path),
           "dir": fwcheck.path(tag + ".run")}
    results = pipeline_run.run(job)
    if results[0]["num_stages"] != stages:
        return f"pipe has {results[0]['num_stages']} stages, the plan {stages}"
    want = [{names[i] for i in layers if names[i] != "loss"} for layers in fwcheck.stage_layers(plan)]
    for r in results:
        for idx, params in r["stage_params"].items():
            got = {owner(p, names) for p in params}
            if got != want[idx]:
                return f"stage {idx} holds {sorted(got)}, the plan {sorted(want[idx])}"
    return pipeline_run.compare(results, pipeline_run.reference(job))


def main():
    report = fwcheck.Report("pippy")
    for seed, (name, spec, stages, micro, schedule) in enumerate(CASES):
        report.case(name, check, name, spec, stages, micro, schedule, seed)
    report.exit()


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    main()

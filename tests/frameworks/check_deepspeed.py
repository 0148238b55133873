#!/usr/bin/env python3
"""tests/frameworks/check_deepspeed.py: `export --to deepspeed` applied by DeepSpeed itself.

The exported `PlannedPipelineModule` is executed as written and built, on the CPU with gloo and
one process per stage, from the chain model's layers as LayerSpecs (the loss as loss_fn). Every
rank's PipelineModule must hold the plan's boundaries in its own `parts`, build exactly the plan's
layers for its stage (DeepSpeed's _local_start/_local_stop) and their parameters. The head is
made heavy, so the plan is not DeepSpeed's own uniform or parameter split."""
import os
import random

import fwcheck
import models
import torch
import torch.multiprocessing as mp

CASES = [(2, 6), (3, 7), (4, 9)]  # stages, transformer layers


def _worker(rank, job):
    os.environ.update({"RANK": str(rank), "LOCAL_RANK": str(rank), "WORLD_SIZE": str(job["ranks"]),
                       "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(job["port"])})
    import deepspeed
    from deepspeed.pipe import LayerSpec
    deepspeed.init_distributed(dist_backend="gloo")
    scope = {}
    exec(compile(job["export"], "stagepart export --to deepspeed", "exec"), scope)  # as a user would
    if job.get("model"):  # a Hugging Face model's own modules for the profile's layers
        model, _, _, _ = models.build({"model": job["model"], "n_layer": job["n_layer"]})
        layers = [model.get_submodule(n) for n in job["names"]]
    else:  # the chain model's layers as LayerSpecs
        d, vocab, n = 64, 512, job["n_layer"]
        layers = [LayerSpec(torch.nn.Embedding, vocab, d)]
        layers += [LayerSpec(models.Block, d) for _ in range(n)] + [LayerSpec(torch.nn.Linear, d, vocab)]
    torch.manual_seed(0)
    module = scope["PlannedPipelineModule"](layers=layers, num_stages=job["ranks"], loss_fn=models.loss_fn)
    local = list(range(module._local_start, module._local_stop))
    params = sum(p.numel() for p in module.parameters())
    torch.save({"parts": list(module.parts), "local": local, "params": params},
               os.path.join(job["dir"], f"rank{rank}.pt"))


def layer_params(n_layer):
    d, vocab = 64, 512
    block = sum(p.numel() for p in models.Block(d).parameters())
    return [vocab * d] + [block] * n_layer + [d * vocab + vocab]


def check(stages, n_layer, seed):
    _, names, kinds, _ = models.chain(n_layer=n_layer)
    rng = random.Random(seed)
    ms = [rng.uniform(0.5, 2.0) if k == "transformer" else 0.1 for k in kinds]
    ms[kinds.index("head")] = rng.uniform(4.0, 6.0)
    tag = f"ds-{stages}"
    prof = fwcheck.write_profile(tag, list(zip(names, kinds, ms)), model="chain")
    plan_path, plan = fwcheck.partition(prof, tag, "-s", stages)
    want = [[i for i in layers if kinds[i] != "loss"] for layers in fwcheck.stage_layers(plan)]
    want_parts = [s[0] for s in want] + [len(names) - 1]
    job = {"export": fwcheck.export(plan_path, "deepspeed"), "ranks": stages, "n_layer": n_layer,
           "dir": fwcheck.path(tag + ".run"), "port": 29500 + 10 * seed + stages}
    os.makedirs(job["dir"], exist_ok=True)
    mp.start_processes(_worker, args=(job,), nprocs=stages, start_method="spawn")
    sizes = layer_params(n_layer)
    for r in range(stages):
        got = torch.load(os.path.join(job["dir"], f"rank{r}.pt"))
        if got["parts"] != want_parts:
            return f"rank {r}: DeepSpeed's parts {got['parts']}, the plan's {want_parts}"
        if got["local"] != want[r]:
            return f"rank {r} builds layers {got['local']}, the plan's stage {r} holds {want[r]}"
        if got["params"] != sum(sizes[i] for i in want[r]):
            return f"rank {r} built {got['params']} parameters, the plan's layers have {sum(sizes[i] for i in want[r])}"
    even = [round(i * (len(names) - 1) / stages) for i in range(stages + 1)]
    print(f"  {stages} stages: parts {want_parts} (even would be about {even})")
    return None


def main():
    report = fwcheck.Report("deepspeed")
    for seed, (stages, n_layer) in enumerate(CASES):
        report.case(f"PipelineModule with the exported parts, {stages} stages", check, stages, n_layer, seed)
    report.exit()


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    main()

#!/usr/bin/env python3
"""tests/frameworks/check_torch_traces.py: real torch.profiler traces, recorded here on the CPU,
imported by stagepart with no pattern.

Hugging Face GPT-2 (its loss computed by the caller) and samples/torch/train.py's chain model
run a few training steps under torch.profiler (ProfilerActivity.CPU, with_stack=True: the
nn.Module ranges). `stagepart import kineto` must choose the level a user expects (GPT-2: its
two embeddings, each block (its dropout, no parameters, part of the first), the final norm, the
head; the chain: the embedding,
each block, the head), name their kinds, find every block's, each embedding's and the head's
backward through the trace's fwdbwd links, leave the loss's work out of every layer (the head
does not absorb the cross-entropy), and say the times are CPU operators' own time."""
import json
import os

import fwcheck
import models
import torch

CASES = {
    "gpt2": ({"model": "gpt2", "n_layer": 4, "vocab": 2048, "d": 128, "seq": 64},
             ["Embedding", "Embedding"] + ["GPT2Block"] * 4 + ["LayerNorm", "Linear"],
             ["embedding", "embedding"] + ["transformer"] * 4 + ["norm", "head"]),
    "chain": ({"model": "chain", "n_layer": 4, "vocab": 2048, "d": 128},
              ["Embedding"] + ["Block"] * 4 + ["Linear"],
              ["embedding"] + ["transformer"] * 4 + ["head"]),
}


def record(spec, path, steps=3):
    model, _, _, vocab = models.build(spec)
    ids = torch.randint(0, vocab, (4, 64))
    acts = [torch.profiler.ProfilerActivity.CPU]
    with torch.profiler.profile(activities=acts, with_stack=True) as prof:
        for _ in range(steps):
            loss = models.loss_fn(model(ids), ids)
            loss.backward()
    prof.export_chrome_trace(path)


def check(name):
    spec, classes, kinds = CASES[name]
    trace = fwcheck.path(f"torch-{name}.trace.json")
    record(spec, trace)
    prof_path = fwcheck.path(f"torch-{name}.profile.json")
    out = fwcheck.stagepart("import", "kineto", trace, "-o", prof_path).stdout
    if "no GPU activity in the trace" not in out:
        return f"the summary does not say the times are CPU time: {out[:300]}"
    with open(prof_path) as f:
        prof = json.load(f)
    layers = prof["layers"]
    got = [l["name"].rsplit("_", 1)[0] for l in layers]
    if got != classes:
        return f"layers {[l['name'] for l in layers]}, a user expects the modules {classes}"
    if [l.get("kind") for l in layers] != kinds:
        return f"kinds {[l.get('kind') for l in layers]}, expected {kinds}"
    for l, k in zip(layers, kinds):
        if k is not None and not (l["fwd_ms"] > 0 and l["bwd_ms"] > 0):
            return f"{l['name']}: fwd {l['fwd_ms']} ms, bwd {l['bwd_ms']} ms (its backward not found)"
    m = prof["measurement"]
    if not m["time"].startswith("no GPU activity in the trace"):
        return f"measurement.time: {m['time']}"
    outside = {o["name"] for o in m.get("outside_layers", [])}
    if not {"aten::_log_softmax", "aten::_log_softmax_backward_data"} <= outside:
        return f"the loss's work is not apart from the layers: in no layer only {sorted(outside)}"
    print(f"  {name}: {len(layers)} layers, {m['layer_ms']:.1f} of {m['gpu_ms']:.1f} ms of CPU "
          f"operator time in layers, the loss apart")
    return None


def main():
    report = fwcheck.Report("torch traces")
    for name in CASES:
        report.case(f"{name}: CPU trace imported with no pattern", check, name)
    report.exit()


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    torch.manual_seed(0)
    main()

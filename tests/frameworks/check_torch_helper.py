#!/usr/bin/env python3
"""tests/frameworks/check_torch_helper.py: the PyTorch helper (profiler/python/stagepart_torch.py)
on real torch, on the CPU.

Hugging Face GPT-2 (the loss computed inside the model, from labels) and samples/torch/train.py's
chain model (the loss computed by the caller, in `with ann.loss():`), annotated as a user would:
  - through a stand-in for NVTX (push/pop recorded per thread), one training step: every
    annotated layer's forward range opens in module order and the loss's after them; each
    layer's backward range is open when the autograd engine accumulates that layer's parameter
    gradients (torch's own post-accumulate-grad hooks, the engine's order, not the helper's),
    the embeddings' included; the loss's backward range opens first and holds no parameter's;
  - through torch.profiler's record of them (ranges="record_function"), a few steps on the CPU:
    `stagepart import kineto` of the trace, by the ranges' naming convention, gives every
    annotated layer and the loss a forward and a backward time.
"""
import json
import os
import sys
import threading

import fwcheck
import models
import torch

sys.path.insert(0, os.path.join(fwcheck.ROOT, "profiler", "python"))
import stagepart_torch  # noqa: E402

GPT2_LAYERS = ["transformer.wte", "transformer.wpe", "transformer.h.*", "transformer.ln_f", "lm_head"]
CHAIN_LAYERS = ["embedding", "layers.*", "head"]


class Recorder:
    """A stand-in for NVTX: the helper's pushes and pops, per thread, and what the gradient hooks
    saw open."""

    def __init__(self):
        self.stacks, self.events, self.lock = {}, [], threading.Lock()

    def push(self, name):
        with self.lock:
            self.stacks.setdefault(threading.get_ident(), []).append(name)
            self.events.append(("push", name))

    def pop(self):
        with self.lock:
            stack = self.stacks.get(threading.get_ident(), [])
            if stack:
                stack.pop()

    def innermost(self):
        with self.lock:
            stack = self.stacks.get(threading.get_ident(), [])
            return stack[-1] if stack else None


def build(name):
    if name == "gpt2":
        model, names, _, vocab = models.gpt2(n_layer=3, seq=32)
        return model, [n for n in names if n != "loss"], GPT2_LAYERS, vocab
    model, names, _, vocab = models.chain(n_layer=3)
    return model, [n for n in names if n != "loss"], CHAIN_LAYERS, vocab


def one_step(name, model, ann, ids):
    if name == "gpt2":  # Hugging Face style: the loss inside the model's forward
        out = model(ids, labels=ids)
        out.loss.backward()
    else:  # computed by the caller
        logits = model(ids)
        with ann.loss():
            loss = models.loss_fn(logits, ids)
        loss.backward()


def check_ranges(name):
    model, layers, patterns, vocab = build(name)
    rec = Recorder()
    seen = {}  # parameter -> the innermost range open when its gradient was accumulated

    engine_order = []  # layers by their first accumulated gradient: the engine's order

    def hook_for(layer):
        def hook(_p):
            if layer not in seen:
                seen[layer] = rec.innermost()
                engine_order.append(layer)
        return hook

    for layer in layers:
        for p in model.get_submodule(layer).parameters():
            p.register_post_accumulate_grad_hook(hook_for(layer))
    ann = stagepart_torch.annotate(model, patterns, ranges=rec)
    ids = torch.randint(0, vocab, (2, 16))
    one_step(name, model, ann, ids)
    pushes = [n for kind, n in rec.events if kind == "push"]
    fwd = [n[:-4] for n in pushes if n.endswith("/fwd")]
    bwd = [n[:-4] for n in pushes if n.endswith("/bwd")]
    # the chain's caller-side loss opens a second, empty "loss/fwd" after the model's own end
    # (loss="auto" marks what follows the last layer inside the model: nothing here)
    if fwd[:len(layers)] != layers or not fwd[len(layers):] or set(fwd[len(layers):]) != {"loss"}:
        return f"forward ranges {fwd}, the modules run {layers} then the loss"
    for layer in layers:
        if seen.get(layer) != f"{layer}/bwd":
            return f"{layer}'s gradients were accumulated under {seen.get(layer)!r}, not its backward range"
    if bwd[0] != "loss" or bwd[1:] != engine_order:
        return f"backward ranges {bwd}; the autograd engine ran the loss, then {engine_order}"
    return None


def check_trace(name):
    model, layers, patterns, vocab = build(name)
    ann = stagepart_torch.annotate(model, patterns, ranges="record_function")
    ids = torch.randint(0, vocab, (2, 16))
    trace = fwcheck.path(f"helper-{name}.trace.json")
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        for _ in range(3):
            with ann.step():
                one_step(name, model, ann, ids)
    prof.export_chrome_trace(trace)
    out = fwcheck.path(f"helper-{name}.profile.json")
    fwcheck.stagepart("import", "kineto", trace, "--warmup-steps", 1, "-o", out)
    with open(out) as f:
        prof = json.load(f)
    got = [l["name"] for l in prof["layers"]]
    if got != layers + ["loss"]:
        return f"profile layers {got}, annotated {layers} and the loss"
    for l in prof["layers"]:
        if not (l["fwd_ms"] > 0 and l["bwd_ms"] > 0):
            return f"{l['name']}: fwd {l['fwd_ms']} ms, bwd {l['bwd_ms']} ms"
    return None


def main():
    report = fwcheck.Report("torch helper")
    for name in ("gpt2", "chain"):
        report.case(f"{name}: ranges hold each layer's forward and backward, the loss its own", check_ranges, name)
        report.case(f"{name}: torch.profiler's record of the ranges imports, every layer timed", check_trace, name)
    report.exit()


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    torch.manual_seed(0)
    main()

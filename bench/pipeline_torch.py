#!/usr/bin/env python3
"""bench/pipeline_torch.py: stagepart's plan against the even split, run by
torch.distributed.pipelining on the CPU, one gloo process per stage.

The whole flow a user without a GPU can run: a GPT-2 with its real vocabulary (50,257: a heavy
head) is annotated by the PyTorch helper (record_function ranges named by module), recorded by
torch.profiler on the CPU, imported (`stagepart import kineto`), partitioned into 2 stages
(stagepart's exact plan, and `--solver uniform`, the even split of its layers, as the yardstick
in the same run), each exported `--to pippy` and run, unedited, under Schedule1F1B for several
steps. Prints each split's step time (median over the timed steps) and the ratio.

usage: bench/pipeline_torch.py [--stagepart build/cli/stagepart] [--steps 8] [--out DIR]
(with the frameworks' python: scripts/frameworks-setup.sh prints it)
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "frameworks"))
sys.path.insert(0, os.path.join(ROOT, "profiler", "python"))

SPEC = {"model": "gpt2", "n_layer": 6, "vocab": 50257, "d": 256, "seq": 128}
BATCH, MICRO = 8, 4
LAYERS = ["transformer.wte", "transformer.wpe", "transformer.h.*", "transformer.ln_f", "lm_head"]


def profile(out, sp):
    """Measure the unpipelined model on the CPU, one micro-batch a step, through the helper."""
    import torch

    import models
    import stagepart_torch
    torch.set_num_threads(1)
    model, _, _, vocab = models.build(SPEC)
    ann = stagepart_torch.annotate(model, LAYERS, ranges="record_function")
    ids = torch.randint(0, vocab, (BATCH // MICRO, SPEC["seq"]))
    trace = os.path.join(out, "gpt2.trace.json")
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        for _ in range(4):
            with ann.step():
                out_ = model(ids, labels=ids)
                out_.loss.backward()
    prof.export_chrome_trace(trace)
    path = os.path.join(out, "gpt2.profile.json")
    subprocess.run([sp, "import", "kineto", trace, "--warmup-steps", "1", "--model", "gpt2-50k",
                    "--micro-batch-size", str(BATCH // MICRO), "-o", path], check=True,
                   stdout=subprocess.DEVNULL)
    return path


def plan_and_run(sp, prof, out, tag, extra, steps):
    import pipeline_run
    plan = os.path.join(out, tag + ".plan.json")
    subprocess.run([sp, "partition", prof, "-s", "2", "-m", str(MICRO), *extra, "-o", plan],
                   check=True, stdout=subprocess.DEVNULL)
    text = subprocess.run([sp, "export", plan, "--to", "pippy"], check=True, capture_output=True,
                          text=True).stdout
    with open(plan) as f:
        p = json.load(f)
    job = {"model": SPEC, "export": text, "ranks": 2, "micro_batches": MICRO, "batch": BATCH,
           "seq": SPEC["seq"], "style": "loop", "schedule": "1F1B", "steps": steps + 1,
           "dir": os.path.join(out, tag + ".run")}
    results = pipeline_run.run(job)
    times = [max(r["times"][i] for r in results) for i in range(1, steps + 1)]  # first: warm-up
    cuts = [s["first_name"] for s in p["stages"]]
    return statistics.median(times) * 1e3, times, cuts, p["bottleneck_ms"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--stagepart", default=os.path.join(ROOT, "build", "cli", "stagepart"))
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    out = a.out or tempfile.mkdtemp(prefix="stagepart-bench-torch-")
    os.makedirs(out, exist_ok=True)
    prof = profile(out, a.stagepart)
    rows = {}
    for tag, extra in (("even split", ["--solver", "uniform"]), ("stagepart", [])):
        rows[tag] = plan_and_run(a.stagepart, prof, out, tag.replace(" ", "-"), extra, a.steps)
    print(f"GPT-2 (6 blocks, d 256, vocab 50257), 2 stages on 2 gloo processes, 1F1B, M = {MICRO}, "
          f"batch {BATCH} x {SPEC['seq']} tokens, {a.steps} steps timed")
    print(f"{'split':12s} {'stage 1 starts at':>20s} {'planned bottleneck ms':>22s} {'step ms (median)':>17s}  steps ms")
    for tag, (med, times, cuts, bott) in rows.items():
        print(f"{tag:12s} {cuts[1]:>20s} {bott:22.3f} {med:17.1f}  "
              + " ".join(f"{t * 1e3:.0f}" for t in times))
    print(f"stagepart's plan: {rows['even split'][0] / rows['stagepart'][0]:.2f}x the even split's "
          f"throughput")
    with open(os.path.join(out, "pipeline_torch.json"), "w") as f:
        json.dump({k: {"step_ms_median": v[0], "step_ms": [t * 1e3 for t in v[1]],
                       "stage_first_layers": v[2], "planned_bottleneck_ms": v[3]}
                   for k, v in rows.items()}, f, indent=1)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""tests/frameworks/check_schedule_csv.py: `export --to torch-schedule-csv` read by torch's own
CSV reader (_PipelineScheduleRuntime._load_csv, which lowers it to sends and receives) and run.

For 1F1B, interleaved (2 chunks per rank, looped) and ZBV (V-shape, split backward) plans of a
small chain model (samples/torch/train.py's: torch's multi-stage runtime refuses the skip
connections of Hugging Face models, see models.chain) on 2 ranks, the plan's pippy export builds
the stages and the runtime executes the exported op order; the step must give the unpipelined
model's loss and gradients (1e-5)."""
import os
import random

import fwcheck
import models
import pipeline_run

CASES = [  # name, partition arguments, stage placement
    ("1f1b P=2", ["-s", 2, "--schedule", "1f1b"], "loop"),
    ("interleaved P=2 V=2", ["-s", 2, "--chunks", 2, "--schedule", "interleaved",
                             "--time-limit", 10], "loop"),
    ("zbv P=2", ["-s", 2, "--schedule", "zbv"], "v"),
]
MICRO = 4


def check(name, args, style, seed):
    spec = {"model": "chain", "n_layer": 6}
    _, names, kinds, _ = models.build(spec)
    rng = random.Random(100 + seed)
    ms = [rng.uniform(0.5, 4.0) if k == "transformer" else rng.uniform(0.05, 2.0) for k in kinds]
    tag = "csv-" + name.split()[0]
    prof = fwcheck.write_profile(tag, list(zip(names, kinds, ms)), model="chain")
    plan_path, plan = fwcheck.partition(prof, tag, "-m", MICRO, *args)
    csv_path = fwcheck.path(tag + ".csv")
    with open(csv_path, "w") as f:
        f.write(fwcheck.export(plan_path, "torch-schedule-csv"))
    job = {"model": spec, "export": fwcheck.export(plan_path, "pippy"), "ranks": 2,
           "micro_batches": MICRO, "batch": 2 * MICRO, "seq": 16, "style": style, "csv": csv_path,
           "dir": fwcheck.path(tag + ".run")}
    results = pipeline_run.run(job)
    if results[0]["num_stages"] != len(plan["stages"]):
        return f"pipe has {results[0]['num_stages']} stages, the plan {len(plan['stages'])}"
    return pipeline_run.compare(results, pipeline_run.reference(job))


def main():
    report = fwcheck.Report("torch-schedule-csv")
    for seed, (name, args, style) in enumerate(CASES):
        report.case(name, check, name, args, style, seed)
    report.exit()


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    main()

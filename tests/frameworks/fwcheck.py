"""tests/frameworks/fwcheck.py: what every framework check shares.

Each check_*.py runs stagepart's exports through a framework's own code and prints one line per
case, `PASS name` or `FAIL name: why`; scripts/frameworks-check.sh counts them. A case compares
the framework's result with the plan's (or with the unpipelined model's), never with stagepart's
own reading of the framework's rules.

Environment: STAGEPART (the CLI, default build/cli/stagepart), FRAMEWORKS_OUT (a folder for
profiles, plans and exports, default a temporary one).
"""
import json
import os
import subprocess
import sys
import tempfile
import traceback

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
STAGEPART = os.environ.get("STAGEPART", os.path.join(ROOT, "build", "cli", "stagepart"))
_out = []  # made on first use: spawned workers import this module too, and need no folder


def stagepart(*args, check=True):
    """Runs the CLI; returns the completed process (text mode)."""
    p = subprocess.run([STAGEPART, *map(str, args)], capture_output=True, text=True)
    if check and p.returncode != 0:
        raise RuntimeError(f"stagepart {' '.join(map(str, args))}: exit {p.returncode}: {p.stderr.strip()}")
    return p


def path(name):
    if not _out:
        out = os.environ.get("FRAMEWORKS_OUT") or tempfile.mkdtemp(prefix="stagepart-frameworks-")
        os.makedirs(out, exist_ok=True)
        _out.append(out)
    return os.path.join(_out[0], name)


def write_profile(name, layers, model=None, micro_batch_size=1):
    """layers: [(module name, kind, total ms)]; fwd is a third of the total, as a backward that
    costs twice the forward, half of it the weight gradient. Returns the profile's path."""
    prof = {"format": "stagepart-profile", "version": 1, "model": model or name,
            "micro_batch_size": micro_batch_size,
            "layers": [{"name": n, "kind": k, "fwd_ms": t / 3, "bwd_ms": 2 * t / 3,
                        "wgrad_ms": t / 3} for n, k, t in layers]}
    p = path(name + ".profile.json")
    with open(p, "w") as f:
        json.dump(prof, f)
    return p


def partition(profile, out_name, *args):
    """stagepart partition PROFILE ARGS -o OUT; returns (plan path, plan JSON)."""
    p = path(out_name + ".plan.json")
    stagepart("partition", profile, *args, "-o", p)
    with open(p) as f:
        return p, json.load(f)


def export(plan, to, *args):
    return stagepart("export", plan, "--to", to, *args).stdout


def stage_layers(plan):
    """[[layer index, ...] per stage, in stage order] from a plan file's JSON."""
    return [list(range(s["first_layer"], s["last_layer"] + 1)) if s["layers"] else []
            for s in plan["stages"]]


class Report:
    """Collects PASS/FAIL lines; exit status 1 when any case failed."""

    def __init__(self, check):
        self.check, self.passed, self.failed = check, 0, 0

    def case(self, name, fn, *args):
        """Runs fn(*args): None or True passes; a string or False fails (the string says why);
        an exception fails with its text."""
        try:
            why = fn(*args)
        except Exception as e:  # the framework refused: that is the finding
            tb = traceback.format_exc(limit=-3)
            why = f"{type(e).__name__}: {e}\n{tb}"
        ok = why is None or why is True
        if ok:
            self.passed += 1
            print(f"PASS {self.check}: {name}", flush=True)
        else:
            self.failed += 1
            text = str(why) if why is not False else "mismatch"
            print(f"FAIL {self.check}: {name}: {text}", flush=True)
        return ok

    def exit(self):
        sys.exit(1 if self.failed else 0)

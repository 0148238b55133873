#!/usr/bin/env python3
"""bench/gen_trace.py TRACE COPIES OUT: a large PyTorch profiler trace made of COPIES copies of a
real one, one after another in time: timestamps shifted by the trace's span, correlation and flow
ids by the largest id, so each copy is a run of its own steps with the real trace's structure and
mix of events (cpu_op, python_function, cuda_runtime, kernels, ac2g and fwdbwd flows)."""
import gzip
import json
import sys


def main():
    src, copies, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    opener = gzip.open if src.endswith(".gz") else open
    with opener(src, "rt") as f:
        doc = json.load(f)
    ev = [e for e in doc["traceEvents"] if isinstance(e.get("ts"), (int, float))]
    t0 = min(float(e["ts"]) for e in ev)
    t1 = max(float(e["ts"]) + float(e.get("dur", 0)) for e in ev)
    span = t1 - t0 + 1000.0
    big = 0
    for e in ev:
        if isinstance(e.get("id"), int):
            big = max(big, e["id"])
        c = e.get("args", {}).get("correlation") if isinstance(e.get("args"), dict) else None
        if isinstance(c, int):
            big = max(big, c)
    big += 1
    other = [e for e in doc["traceEvents"] if not isinstance(e.get("ts"), (int, float))]
    with open(out, "w") as f:
        f.write('{"schemaVersion": 1, "deviceProperties": ')
        json.dump(doc.get("deviceProperties", []), f)
        f.write(', "traceEvents": [')
        first = True
        for k in range(copies):
            for e in ev:
                e2 = dict(e)
                e2["ts"] = round(float(e["ts"]) + k * span, 3)
                if isinstance(e.get("id"), int):
                    e2["id"] = e["id"] + k * big
                if isinstance(e.get("args"), dict) and isinstance(e["args"].get("correlation"), int):
                    e2["args"] = dict(e["args"], correlation=e["args"]["correlation"] + k * big)
                f.write(("" if first else ",\n") + json.dumps(e2))
                first = False
        for e in other:
            f.write(",\n" + json.dumps(e))
        f.write("]}\n")


if __name__ == "__main__":
    main()

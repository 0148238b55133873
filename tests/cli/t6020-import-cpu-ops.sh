#!/bin/sh
# t6020-import-cpu-ops: `stagepart import kineto` of a trace with no GPU activity (a CPU run, as
# torch.profiler records one with ProfilerActivity.CPU): each CPU operator's own time (its span
# less its child ops') is attributed as a kernel it launched would be: to the module range it ran
# in, a backward op's to its forward op's layer (fwdbwd links), ops on two threads apart. The
# answers are worked out by hand below; the summary and the profile say it is CPU time.
. "$(dirname "$0")/lib.sh"
python3 - "$TMP/cpu.json" <<'PY'
import json, sys
ev = []
def x(cat, name, ts, end, tid=1):
    ev.append({"ph": "X", "cat": cat, "name": name, "pid": 7, "tid": tid, "ts": ts, "dur": end - ts})
def flow(ph, fid, ts, tid):
    e = {"ph": ph, "id": fid, "pid": 7, "tid": tid, "ts": ts, "cat": "fwdbwd", "name": "fwdbwd"}
    if ph == "f":
        e["bp"] = "e"
    ev.append(e)
x("python_function", "nn.Module: Model_0", 0, 1000)
x("python_function", "nn.Module: Linear_0", 10, 300)
x("cpu_op", "aten::linear", 20, 200)          # own 60 us (20-30, 150-200)
x("cpu_op", "aten::addmm", 30, 150)           # own 120 us
flow("s", 1, 30, 1)
x("cpu_op", "aten::relu", 210, 250)           # own 40 us: Linear_0 forward 220 us
x("python_function", "nn.Module: Linear_1", 310, 600)
x("cpu_op", "aten::linear", 320, 500)         # own 30 us
x("cpu_op", "aten::addmm", 330, 480)          # own 130 us
flow("s", 2, 330, 1)
x("cpu_op", "aten::copy_", 340, 360)          # own 20 us: Linear_1 forward 180 us
x("cpu_op", "aten::sum", 700, 800)            # in the model, in no layer: 100 us other
# the backward on the autograd thread
x("cpu_op", "AddmmBackward0", 1100, 1300, 2)  # own 70 us
flow("f", 2, 1100, 2)
x("cpu_op", "aten::mm", 1120, 1250, 2)        # own 130 us: Linear_1 backward 200 us
x("cpu_op", "AddmmBackward0", 1400, 1450, 2)  # Linear_0 backward 50 us
flow("f", 1, 1400, 2)
json.dump({"schemaVersion": 1, "traceEvents": ev}, open(sys.argv[1], "w"))
PY
expect_code "a CPU-only trace imports" 0 "$STAGEPART" import kineto "$TMP/cpu.json" --layers '^nn\.Module: (Linear_\d)$' -o "$TMP/p.json"
expect_stdout_contains "the summary says so" "no GPU activity in the trace: times are its CPU operators' own time"
expect_stdout_contains "CPU time in all" "CPU time          0.750 ms"
expect_stdout_contains "the rest is other" "other           0.100 ms"
if python3 - "$TMP/p.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
got = {l["name"]: (round(l["fwd_ms"], 6), round(l["bwd_ms"], 6)) for l in p["layers"]}
assert got == {"Linear_0": (0.22, 0.05), "Linear_1": (0.18, 0.2)}, got
assert p["measurement"]["time"].startswith("no GPU activity in the trace"), p["measurement"]["time"]
assert "of CPU operators' time unattributed" in p["source"], p["source"]
PY
then pass "each layer's forward and backward: its operators' own time, exact"; else fail "CPU op times"; fi
# no GPU events and no CPU operators: nothing to attribute
printf '{"traceEvents": [{"ph": "X", "cat": "python_function", "name": "nn.Module: A_0", "pid": 1, "tid": 1, "ts": 0, "dur": 5}]}' >"$TMP/empty.json"
expect_code "no work at all is refused" 2 "$STAGEPART" import kineto "$TMP/empty.json"
expect_stderr_contains "names both" "no GPU events (cat kernel, gpu_memcpy or gpu_memset) and no CPU operators"
test_done

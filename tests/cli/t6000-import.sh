#!/bin/sh
# t6000-import: `stagepart import kineto|nsys` on synthetic traces with known answers
# (tests/tools/make_traces.py): per-layer medians over steps, overlapping streams counted once,
# recomputation, NCCL apart, payload bytes, the unattributed share, and the refusals.
. "$(dirname "$0")/lib.sh"
python3 tests/tools/make_traces.py "$TMP/tr" || { fail "make_traces.py"; test_done; exit 1; }
T=$TMP/tr
# check PROFILE BYTES: every layer as expected.json says (BYTES=1: activation_bytes too)
check() {
    python3 - "$1" "$T/expected.json" "$2" <<'PY'
import json, sys
p, e, with_bytes = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3] == "1"
assert [l["name"] for l in p["layers"]] == [l["name"] for l in e["layers"]], "layer order"
for got, want in zip(p["layers"], e["layers"]):
    for k in ("fwd_ms", "bwd_ms"):
        assert abs(got[k] - want[k]) < 1e-6, (got["name"], k, got[k], want[k])
    assert abs(got.get("recompute_ms", 0) - want.get("recompute_ms", 0)) < 1e-6, got["name"]
    if with_bytes:
        assert got["activation_bytes"] == want["nbytes"], got["name"]
head = p["layers"][-1]["measured"]["bwd"]
assert abs(head["nccl_ms"] - e["nccl_ms_head"]) < 1e-6
l1 = p["layers"][2]["measured"]["bwd"]
assert abs(l1["kernel_ms"] - 2.2) < 1e-6 and l1["kernels"] == 2, l1
m = p["measurement"]
assert m["steps_total"] == e["steps_total"] and m["steps_used"] == e["steps_used"], m
assert 0 < m["unattributed_share"] < 0.01 and m["devices"][0]["name"] == "Synthetic GPU", m
PY
}
for f in trace.json trace.json.gz; do
    expect_code "kineto $f" 0 "$STAGEPART" import kineto "$T/$f" --warmup-steps 1 -o "$T/k.json"
    if check "$T/k.json" 0 >"$TMP/check" 2>&1; then pass "kineto $f: every layer's median, overlap, recompute, nccl"; else fail "kineto $f values" "$(cat "$TMP/check")"; fi
done
expect_stdout_contains "summary" "6 layers, median of 3 steps (1 warm-up skipped)"
# work in no layer, named with where it was launched (in the summary and the profile)
expect_stdout_contains "no layer: under a range" "logging_kernel                                    log_metrics"
expect_stdout_contains "no layer: outside every range" "stray_kernel                                      (outside every range)"
if python3 -c '
import json, sys
o = json.load(open(sys.argv[1]))["measurement"]["outside_layers"]
assert [(w["name"], w["launched_in"], w["class"], w["count"]) for w in o] == [("logging_kernel", "log_metrics", "other", 4), ("stray_kernel", "(outside every range)", "none", 4)], o
assert all(abs(w["ms"] - 0.2) < 1e-9 for w in o), o
' "$T/k.json"; then pass "measurement.outside_layers: each kernel, where launched, its time"; else fail "outside_layers"; fi
expect_code "nsys" 0 "$STAGEPART" import nsys "$T/report.sqlite" --warmup-steps 1 -o "$T/n.json"
if check "$T/n.json" 1 >"$TMP/check" 2>&1; then pass "nsys: the same, with payload bytes"; else fail "nsys values" "$(cat "$TMP/check")"; fi
expect_code "the profile partitions" 0 "$STAGEPART" partition "$T/n.json" -s 2
# two ranks, 2 us apart, each numbering its own correlation ids and device 0: in one nsys
# report, and as two kineto traces (one per rank, as torch.profiler writes them)
two_ranks() {
    python3 - "$1" "$T/expected.json" <<'PY'
import json, sys
p, e = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
want = {l["name"]: l for l in e["layers"]}
names = sorted(l["name"] for l in p["layers"])
assert names == sorted(list(want) + ["rank1." + n for n in want]), names
for l in p["layers"]:
    w = want[l["name"].removeprefix("rank1.")]
    for k in ("fwd_ms", "bwd_ms"):
        assert abs(l[k] - w[k]) < 1e-6, (l["name"], k, l[k], w[k])
m = p["measurement"]
assert m["steps_total"] == e["steps_total"] and m["unmatched"] == 0, m
PY
}
expect_code "kineto, two ranks" 0 "$STAGEPART" import kineto "$T/trace.json" \
    "$T/trace-rank1.json" --warmup-steps 1 -o "$T/k2.json"
if two_ranks "$T/k2.json" >"$TMP/check" 2>&1; then pass "kineto, two ranks: each rank's layers as one rank's, steps per rank"; else fail "kineto, two ranks" "$(cat "$TMP/check")"; fi
expect_code "the same trace twice: exit 2" 2 "$STAGEPART" import kineto "$T/trace.json" \
    "$T/trace.json"
expect_stderr_contains "says so" "hold the same trace: each rank's trace is given once"
cp "$T/trace.json" "$TMP/copy.json"
expect_code "a copy of it: exit 2" 2 "$STAGEPART" import kineto "$T/trace.json" "$TMP/copy.json"
expect_code "nsys takes one report" 2 "$STAGEPART" import nsys "$T/report.sqlite" "$T/report.sqlite"
expect_code "nsys, two processes" 0 "$STAGEPART" import nsys "$T/report-2proc.sqlite" \
    --warmup-steps 1 -o "$T/n2.json"
two_ranks "$T/n2.json" >"$TMP/check" 2>&1 && pass "two processes: each rank's layers as one rank's, steps per rank" || fail "two processes" "$(cat "$TMP/check")"
expect_code "without warm-up skipped the median moves" 0 "$STAGEPART" import nsys "$T/report.sqlite"
if python3 -c 'import json,sys; p=json.load(open(sys.argv[1])); assert abs(p["layers"][1]["fwd_ms"]-1.0)>1e-6 and p["measurement"]["steps_used"]==4' "$TMP/stdout"; then pass "all 4 steps used (median of 0.99, 1.00, 1.01, 3.0)"; else fail "warm-up effect"; fi
expect_code "model name" 0 "$STAGEPART" import nsys "$T/report.sqlite" --name gpt-x --micro-batch-size 4
if python3 -c 'import json,sys; p=json.load(open(sys.argv[1])); assert p["model"]=="gpt-x" and p["micro_batch_size"]==4' "$TMP/stdout"; then pass "model and micro-batch size recorded"; else fail "model name"; fi
# --model was the old spelling: it still names the profile, with a warning (--model is a file in run)
expect_code "--model, the old spelling" 0 "$STAGEPART" import nsys "$T/report.sqlite" --model gpt-y
expect_stderr_contains "the old spelling warns" "--model gpt-y names the profile's model: that is --name gpt-y now"
if python3 -c 'import json,sys; assert json.load(open(sys.argv[1]))["model"]=="gpt-y"' "$TMP/stdout"; then pass "--model still names the profile"; else fail "--model still names the profile"; fi
# the model's name is the file's without the extensions traces carry, its own dots kept
cp "$T/trace.json" "$TMP/qwen1.5-0.5b.pt.trace.json"
expect_code "model name from the file" 0 "$STAGEPART" import kineto "$TMP/qwen1.5-0.5b.pt.trace.json"
if python3 -c 'import json,sys; p=json.load(open(sys.argv[1])); assert p["model"]=="qwen1.5-0.5b", p["model"]' "$TMP/stdout"; then pass "qwen1.5-0.5b, not qwen1"; else fail "model name from the file"; fi
# an inference trace: the same without its backward (thread 2's ranges and launches, the
# backward kernels): marked forward_only at import, and partition says it balances forwards
python3 - "$T/trace.json" "$TMP/inference.json" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))
t["traceEvents"] = [e for e in t["traceEvents"]
                    if e.get("tid") != 2 and "_bwd_" not in str(e.get("name", ""))]
json.dump(t, open(sys.argv[2], "w"))
PY
expect_code "an inference trace" 0 "$STAGEPART" import kineto "$TMP/inference.json" \
    --warmup-steps 1 -o "$TMP/inference-profile.json"
expect_stderr_contains "warns at import" "holds no backward pass"
if python3 -c 'import json,sys; p=json.load(open(sys.argv[1])); assert p["forward_only"] is True and all(l["bwd_ms"] == 0 for l in p["layers"]) and any(l["fwd_ms"] > 0 for l in p["layers"])' "$TMP/inference-profile.json"; then pass "forward_only: true in the profile"; else fail "forward_only"; fi
expect_code "partitioned" 0 "$STAGEPART" partition "$TMP/inference-profile.json" -s 2
expect_stdout_contains "the table says so" "forward passes only: the profile has no backward times"
expect_stderr_contains "and stderr" "the plan balances forward passes, not training steps"
expect_code "the plan records it" 0 "$STAGEPART" partition "$TMP/inference-profile.json" -s 2 --json
if python3 -c 'import json,sys; assert json.load(open(sys.argv[1]))["forward_only"] is True' "$TMP/stdout"; then pass "forward_only in the plan"; else fail "the plan's forward_only"; fi
python3 - "$TMP/inference-profile.json" "$TMP/lying.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
p["layers"][1]["bwd_ms"] = 2.0
json.dump(p, open(sys.argv[2], "w"))
PY
expect_code "forward_only with a backward time: exit 2" 2 "$STAGEPART" partition "$TMP/lying.json"
expect_stderr_contains "names the layer" "forward_only true, but layer 1"
# layer ranges on a thread that launched nothing: the layers hold none of the GPU time, and the
# import refuses to write a profile of zeros, naming where the kernels were launched
python3 - "$T/trace.json" "$TMP/nolayers.json" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))
for e in t["traceEvents"]:
    n = str(e.get("name", ""))
    if e.get("cat") == "user_annotation" and n.rsplit("/", 1)[-1] in ("fwd", "bwd", "recompute"):
        e["tid"] = 999
json.dump(t, open(sys.argv[2], "w"))
PY
expect_code "layers that launched nothing: exit 2" 2 "$STAGEPART" import kineto \
    "$TMP/nolayers.json" --warmup-steps 1 -o "$TMP/nolayers-profile.json"
expect_stderr_contains "says the share" "the 6 layers hold 0.0% of the GPU time outside the optimizer"
expect_stderr_contains "names where" "mostly in (outside every range) (49.200 ms)"
if [ -e "$TMP/nolayers-profile.json" ]; then fail "no profile written"; else pass "no profile written"; fi
expect_code "--min-layer-share 0 takes it" 0 "$STAGEPART" import kineto "$TMP/nolayers.json" \
    --warmup-steps 1 --min-layer-share 0 -o "$TMP/nolayers-profile.json"
expect_code "--min-layer-share out of range: usage" 2 "$STAGEPART" import kineto \
    "$TMP/nolayers.json" --min-layer-share 2
# GPU work without a time (a negative duration, no ts) is left out, counted and said
python3 - "$T/trace.json" "$TMP/malformed.json" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))
kernels = [e for e in t["traceEvents"] if e.get("cat") == "kernel"]
kernels[0]["dur"] = -5
del kernels[1]["ts"]
json.dump(t, open(sys.argv[2], "w"))
PY
expect_code "kernels without a time" 0 "$STAGEPART" import kineto "$TMP/malformed.json" \
    --warmup-steps 1 -o "$TMP/malformed-profile.json"
expect_stderr_contains "said" "2 GPU activities left out: no start time, or a negative duration"
if python3 -c 'import json,sys; assert json.load(open(sys.argv[1]))["measurement"]["malformed_activities"] == 2' "$TMP/malformed-profile.json"; then pass "measurement.malformed_activities = 2"; else fail "malformed count"; fi
# what is wrong with a file, said as it is
mkdir "$TMP/adir"
expect_code "kineto on a directory" 2 "$STAGEPART" import kineto "$TMP/adir"
expect_stderr_contains "is a directory" "is a directory, not a trace file"
expect_code "nsys on a directory" 2 "$STAGEPART" import nsys "$TMP/adir"
expect_stderr_contains "is a directory (nsys)" "is a directory, not a trace file"
expect_code "a missing .sqlite" 2 "$STAGEPART" import nsys "$TMP/missing.sqlite"
expect_stderr_contains "No such file" "cannot open '$TMP/missing.sqlite': No such file or directory"
gzip -c "$T/trace.json" >"$TMP/whole.json.gz"
head -c $(($(wc -c <"$TMP/whole.json.gz") / 2)) "$TMP/whole.json.gz" >"$TMP/half.json.gz"
expect_code "a truncated gzip" 2 "$STAGEPART" import kineto "$TMP/half.json.gz"
expect_stderr_contains "says truncated" "the gzip file is truncated"
expect_code "nsys given a Kineto trace" 2 "$STAGEPART" import nsys "$T/trace.json"
expect_stderr_contains "names import kineto" "for a PyTorch profiler trace use \`stagepart import kineto\`"
: >"$TMP/run.nsys-rep"
expect_code "nsys given the report itself" 2 "$STAGEPART" import nsys "$TMP/run.nsys-rep"
expect_stderr_contains "says to export it" "nsys export --type sqlite"
# wgrad_ms: no trace separates it; estimated as bwd_ms / 2 and marked, so the zero-bubble
# schedules plan, saying so
if python3 -c '
import json, sys
p = json.load(open(sys.argv[1]))
assert p["wgrad_estimated"] is True and "bwd_ms / 2" in p["measurement"]["wgrad"]
assert all(abs(l["wgrad_ms"] - l["bwd_ms"] / 2) < 1e-12 for l in p["layers"])
' "$T/k.json"; then pass "wgrad_ms = bwd_ms / 2, marked estimated"; else fail "wgrad estimate"; fi
expect_code "zb-h1 plans an import" 0 "$STAGEPART" partition "$T/k.json" -s 2 --schedule zb-h1
expect_stderr_contains "saying the W steps are estimated" "the profile's wgrad_ms are estimated, not measured"
# no step ranges (torch writes ProfilerStep#N only under a schedule): the iterations come from
# torch.optim's own Optimizer.step#... ranges, one per iteration, and the per-step medians are
# those of the step ranges; without either, --warmup-steps has nothing to skip and is refused
python3 - "$T/trace.json" "$TMP/nosteps.json" "$TMP/nosteps-noopt.json" <<'EOF'
import json, sys
t = json.load(open(sys.argv[1]))
t["traceEvents"] = [e for e in t["traceEvents"]
                    if not str(e.get("name", "")).startswith("ProfilerStep#")]
json.dump(t, open(sys.argv[3], "w"))
for e in t["traceEvents"]:
    if e.get("name") == "stagepart/optimizer":
        e["name"] = "Optimizer.step#SGD.step"
json.dump(t, open(sys.argv[2], "w"))
EOF
expect_code "iterations from the optimizer's steps" 0 "$STAGEPART" import kineto \
    "$TMP/nosteps.json" --warmup-steps 1 -o "$TMP/nosteps-profile.json"
expect_stdout_contains "says where the steps came from" "median of 3 steps found by the optimizer's steps (1 warm-up skipped)"
if check "$TMP/nosteps-profile.json" 0 >"$TMP/check" 2>&1; then pass "every layer's median as with step ranges"; else fail "optimizer steps" "$(cat "$TMP/check")"; fi
expect_code "no steps at all: --warmup-steps refused" 2 "$STAGEPART" import kineto \
    "$TMP/nosteps-noopt.json" --warmup-steps 1
expect_stderr_contains "says why" "no steps to skip: the trace has no step ranges"
expect_code "and one pass without it" 0 "$STAGEPART" import kineto "$TMP/nosteps-noopt.json" \
    --min-layer-share 0
# another naming: every range with a slash is a layer, the phase from a custom pattern
expect_code "layer and phase patterns" 0 "$STAGEPART" import kineto "$T/trace.json" --layer-pattern '^(layers\.[0-9]+)/' --phase-pattern '/(bwd)$' --warmup-steps 1
if python3 -c 'import json,sys; p=json.load(open(sys.argv[1])); assert [l["name"] for l in p["layers"]]==["layers.%d"%i for i in range(4)]' "$TMP/stdout"; then pass "only the matching layers, named by group 1"; else fail "patterns"; fi
# Python's shorthands mean what a Python user means (they matched nothing before)
expect_code "Python's \\d and \\w" 0 "$STAGEPART" import kineto "$T/trace.json" --layer-pattern '^(\w+\.\d+)/' --phase-pattern '/(bwd)$' --warmup-steps 1
if python3 -c 'import json,sys; p=json.load(open(sys.argv[1])); assert [l["name"] for l in p["layers"]]==["layers.%d"%i for i in range(4)]' "$TMP/stdout"; then pass "the same layers as with [0-9]"; else fail "shorthands"; fi
expect_code "Python-only syntax refused" 2 "$STAGEPART" import kineto "$T/trace.json" --layer-pattern '^(?:layers)\.\d+'
expect_stderr_contains "refusal says why" "has no POSIX extended equivalent"
printf '%s\n' '{"traceEvents": [' \
 '{"ph": "X", "cat": "Runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 1, "dur": 2, "args": {"correlation": 5}},' \
 '{"ph": "X", "cat": "Kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 5, "dur": 20, "args": {"correlation": 5}}]}' >"$TMP/old-format.json"
expect_code "the 2021 trace format" 2 "$STAGEPART" import kineto "$TMP/old-format.json"
expect_stderr_contains "the format named" "the 2021 Kineto trace format (2 events of cat Kernel, Runtime"
expect_code "a pattern matching nothing" 2 "$STAGEPART" import kineto "$T/trace.json" --layer-pattern 'nomatch'
expect_stderr_contains "the most frequent range names shown" 'most frequent: "layers.2/fwd" (8), "embedding/fwd" (4)'
expect_code "a bad pattern" 2 "$STAGEPART" import kineto "$T/trace.json" --step-pattern '('
expect_stderr_contains "pattern named" "--step-pattern '('"
expect_code "every step warm-up" 2 "$STAGEPART" import kineto "$T/trace.json" --warmup-steps 4
expect_code "sqlite given as kineto" 2 "$STAGEPART" import kineto "$T/report.sqlite"
expect_stderr_contains "says which importer" "use \`stagepart import nsys\`"
expect_code "json given as nsys" 2 "$STAGEPART" import nsys "$T/trace.json"
printf '{"traceEvents": [' >"$T/cut.json"
expect_code "truncated json" 2 "$STAGEPART" import kineto "$T/cut.json"
expect_stderr_contains "line and column" "cut.json:1:"
echo '{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 1}]}' >"$T/noranges.json"
expect_code "no host ranges" 2 "$STAGEPART" import kineto "$T/noranges.json"
expect_stderr_contains "what to add" "no host ranges"
python3 -c 'import sqlite3,sys; sqlite3.connect(sys.argv[1]).execute("CREATE TABLE x (a)")' "$T/other.sqlite"
expect_code "an unrelated database" 2 "$STAGEPART" import nsys "$T/other.sqlite"
expect_stderr_contains "table named" "no CUPTI_ACTIVITY_KIND_KERNEL table"
expect_code "missing file" 2 "$STAGEPART" import kineto "$T/none.json"
expect_code "unknown kind" 2 "$STAGEPART" import perfetto "$T/trace.json"
cp "$T/k.json" "$T/keep.json"
expect_code "output is the input" 2 "$STAGEPART" import kineto "$T/keep.json" -o "$T/keep.json"
# the PyTorch helper's loss layer ("loss/fwd", "loss/bwd") is of kind loss: the partitioner keeps
# it with the layer before it, exports leave it out of module lists
python3 - "$TMP/loss.json" <<'PY'
import json, sys
ev, corr = [], 1
def rng(name, tid, ts, dur):
    ev.append({"ph": "X", "cat": "user_annotation", "name": name, "pid": 1, "tid": tid, "ts": ts, "dur": dur})
def kernel(tid, ts, dur):
    global corr
    ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": tid, "ts": ts, "dur": 1, "args": {"correlation": corr}})
    ev.append({"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": ts + 2, "dur": dur, "args": {"correlation": corr, "device": 0, "stream": 7}})
    corr += 1
for i, name in enumerate(["a", "b", "loss"]):
    rng(f"{name}/fwd", 1, 100 * i, 50); kernel(1, 100 * i + 5, 20)
    rng(f"{name}/bwd", 2, 1000 - 100 * i, 50); kernel(2, 1000 - 100 * i + 5, 30)
json.dump({"traceEvents": ev}, open(sys.argv[1], "w"))
PY
expect_code "a loss layer" 0 "$STAGEPART" import kineto "$TMP/loss.json" -o "$TMP/loss-profile.json"
if python3 -c 'import json,sys; p=json.load(open(sys.argv[1])); assert [(l["name"], l.get("kind")) for l in p["layers"]] == [("a", None), ("b", None), ("loss", "loss")], p["layers"]' "$TMP/loss-profile.json"; then pass "the loss layer has kind loss"; else fail "loss kind"; fi
expect_code "the loss stays with the layer before it" 3 "$STAGEPART" partition "$TMP/loss-profile.json" -s 3
# a scheduled profiler's trace exported after its `with` block: only the profiler's own Python
# calls (no operators, no kernels); the message names that cause, not ProfilerActivity.CPU
cat >"$TMP/after-with.json" <<'JSON'
{"schemaVersion": 1, "traceEvents": [
 {"ph": "X", "cat": "python_function", "name": "torch/profiler/profiler.py(1415): __exit__", "pid": 1, "tid": 1, "ts": 10, "dur": 50},
 {"ph": "X", "cat": "python_function", "name": "torch/profiler/profiler.py(1432): stop", "pid": 1, "tid": 1, "ts": 12, "dur": 40}]}
JSON
expect_code "exported after the with block" 2 "$STAGEPART" import kineto "$TMP/after-with.json"
expect_stderr_contains "names the cause" "only Python calls: exported while no step was recorded (under a profiler schedule, export in on_trace_ready"
if grep -q "ProfilerActivity.CPU" "$TMP/stderr"; then fail "blames the activities"; else pass "does not blame ProfilerActivity.CPU"; fi
test_done

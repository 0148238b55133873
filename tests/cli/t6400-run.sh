#!/bin/sh
# t6400-run: `stagepart run` trains a built-in model pipelined as a plan splits it and reports
# its measured balance; the report matches its schema and `check --report` gates it; failures
# (a stage that fails, one that stops answering, a plan of another model, Ctrl-C) stop every
# stage with a clear message and write nothing.
. "$(dirname "$0")/lib.sh"
CHECK="python3 tests/tools/schema_check.py"
MODEL=tests/data/tiny-gpt-model.json
"$STAGEPART" profile $MODEL --iters 3 -o "$TMP/profile.json" >/dev/null &&
    "$STAGEPART" partition "$TMP/profile.json" -s 2 -m 4 -o "$TMP/plan.json" >/dev/null ||
    fail "profile and plan"
expect_code "run the plan" 0 "$STAGEPART" run "$TMP/plan.json" --model $MODEL --steps 2 \
    -o "$TMP/report.json" --trace "$TMP/trace.json" --svg "$TMP/run.svg"
expect_stdout_contains "the table" "stage  layers"
expect_stdout_contains "measured against simulated" "iteration   measured"
expect_stdout_contains "the verdict" "balance "
expect_stdout_contains "the files" "wrote       $TMP/run.svg"
expect_code "the report matches its schema" 0 $CHECK docs/schema/run-report.schema.json "$TMP/report.json"
python3 - "$TMP/report.json" "$TMP/trace.json" <<'PY' && pass "report and trace: 2 stages, 4 micro-batches, every op" || fail "report and trace"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["stages"] == 2 and r["micro_batches"] == 4 and r["schedule"] == "1f1b", r
assert len(r["measured"]["stages"]) == 2 and len(r["loss"]) == 3, r
for s in r["measured"]["stages"]:
    assert s["busy_ms"] > 0 and abs(s["busy_ms"] - s["fwd_ms"] - s["bwd_ms"]) < 1e-6, s
# the plan's memory model beside the peak: the peak adds scratch and queue buffers to it
for s, p in zip(r["measured"]["stages"], r["predicted"]["stages"]):
    assert 0 < p["memory_bytes"] <= s["peak_memory_bytes"], (s, p)
t = json.load(open(sys.argv[2]))
ops = [e for e in t["traceEvents"] if e.get("ph") == "X"]
assert len(ops) == 2 * 2 * 4, len(ops)
PY
# --isolate: every op alone, one at a time (no two ops of any stages overlap in the measured
# timeline), busy times against the plan, the pipelined iteration replayed from the op times
expect_code "run --isolate" 0 "$STAGEPART" run "$TMP/plan.json" --model $MODEL --steps 2 --isolate \
    -o "$TMP/iso.json" --trace "$TMP/iso-trace.json"
expect_stdout_contains "isolate said" "isolated: every op ran alone"
expect_stdout_contains "replayed iteration" "iteration   replayed"
expect_code "the isolated report matches its schema" 0 $CHECK docs/schema/run-report.schema.json "$TMP/iso.json"
python3 - "$TMP/iso.json" "$TMP/iso-trace.json" <<'PY' && pass "isolate: ops never overlap; the replay lies between the busiest stage and the row of ops" || fail "isolate"
import json, sys
r = json.load(open(sys.argv[1]))
m = r["measured"]
assert m["isolated"] is True and m["replayed_iteration_ms"] > 0, m
busy = [s["busy_ms"] for s in m["stages"]]
assert max(busy) <= m["replayed_iteration_ms"] + 1e-6 <= m["iteration_ms"] + 1e-3, (busy, m)
assert abs(r["relative_error"]["iteration_ms"] - (m["replayed_iteration_ms"] / r["predicted"]["iteration_ms"] - 1)) < 1e-9
ops = sorted((e["ts"], e["ts"] + e["dur"]) for e in json.load(open(sys.argv[2]))["traceEvents"] if e.get("ph") == "X")
assert len(ops) == 2 * 2 * 4, len(ops)
for (a0, a1), (b0, b1) in zip(ops, ops[1:]):
    assert a1 <= b0 + 1e-3, ("overlap", a0, a1, b0, b1)
PY
# check reads the report (timing under a loaded test machine is not what is checked here: the
# limits are wide), and fails on a report whose measured iteration is off the prediction
expect_code "check --report reads it" 0 "$STAGEPART" check --plan "$TMP/plan.json" \
    --profile "$TMP/profile.json" --report "$TMP/report.json" --max-imbalance 2 \
    --max-regression 0.5 --max-stale 10 --max-prediction-error 10
expect_stdout_contains "the measured imbalance" "PASS  measured imbalance"
python3 - "$TMP/report.json" "$TMP/slow.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
r["measured"]["iteration_ms"] = 2 * r["predicted"]["iteration_ms"]
json.dump(r, open(sys.argv[2], "w"))
PY
expect_code "check fails a run twice as slow as predicted" 1 "$STAGEPART" check --plan "$TMP/plan.json" \
    --profile "$TMP/profile.json" --report "$TMP/slow.json" --max-imbalance 2 \
    --max-regression 0.5 --max-stale 10
expect_stdout_contains "says so" "FAIL  prediction error"
expect_code "--json" 0 "$STAGEPART" run "$TMP/plan.json" --model $MODEL --steps 1 --warmup-steps 0 \
    --schedule gpipe --json
python3 -c 'import json, sys; d = json.load(sys.stdin); assert d["schedule"] == "gpipe"' \
    <"$TMP/stdout" && pass "--json: the report on stdout" || fail "--json: the report on stdout"
expect_code "a stage that fails: exit 4" 4 "$STAGEPART" run "$TMP/plan.json" --model $MODEL \
    --inject-fault 1:0:2:fail
expect_stderr_contains "names stage, step, micro-batch" "stage 1 failed at step 0, micro-batch 2 (forward)"
start=$(date +%s)
expect_code "a stage that stops answering: exit 4" 4 "$STAGEPART" run "$TMP/plan.json" \
    --model $MODEL --inject-fault 0:1:1:hang --timeout 0.5 -o "$TMP/none.json"
expect_stderr_contains "names the silent stage" "stage 0 stopped answering at step 1, micro-batch 1 (forward)"
if [ $(( $(date +%s) - start )) -le 5 ]; then pass "stopped within the timeout"; else fail "stopped within the timeout"; fi
if [ ! -e "$TMP/none.json" ]; then pass "no report after a failure"; else fail "no report after a failure"; fi
printf '{"format": "stagepart-model", "version": 1, "name": "other", "preset": {"kind": "gpt", "layers": 2, "hidden": 8, "heads": 2, "vocab": 16, "max_seq_len": 8}}' >"$TMP/other.json"
# a plan profiled at another sequence length: warned, and run at the profiled size when asked
"$STAGEPART" profile $MODEL --seq-len 16 --iters 1 --warmup 0 -o "$TMP/p16.json" >/dev/null &&
    "$STAGEPART" partition "$TMP/p16.json" -s 2 -m 4 -o "$TMP/plan16.json" >/dev/null || fail "plan16"
expect_code "another profiled size: runs" 0 "$STAGEPART" run "$TMP/plan16.json" --model $MODEL --steps 1 --warmup-steps 0
expect_stderr_contains "warns" "the plan's profile was made at another size"
expect_code "--seq-len as profiled" 0 "$STAGEPART" run "$TMP/plan16.json" --model $MODEL --steps 1 \
    --warmup-steps 0 --seq-len 16
if grep -q "another size" "$TMP/stderr"; then fail "no warning at the profiled size"; else pass "no warning at the profiled size"; fi
expect_code "a plan of another model: exit 2" 2 "$STAGEPART" run "$TMP/plan.json" --model "$TMP/other.json"
expect_stderr_contains "says why" "the plan covers 7 layers and the model other has 5"
expect_code "no model: exit 2" 2 "$STAGEPART" run "$TMP/plan.json"
expect_code "zb-h1: exit 2" 2 "$STAGEPART" run "$TMP/plan.json" --model $MODEL --schedule zb-h1
# --backend cuda: exit 4 saying why without a GPU (or the GPU executor); on a GPU, a report of
# GPU stages (tests/cuda/test_run_cuda_fake.c checks the path on stand-in GPUs)
code=0
"$STAGEPART" run "$TMP/plan.json" --model $MODEL --backend cuda --steps 1 -o "$TMP/gpu.json" \
    >"$TMP/stdout" 2>"$TMP/stderr" || code=$?
if [ "$code" = 4 ] && grep -Eq "no CUDA device|built without the GPU executor" "$TMP/stderr"; then
    pass "--backend cuda without a GPU: exit 4, says why"
elif [ "$code" = 0 ] && python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
assert d["backend"] == "cuda" and all(s["device"] >= 0 for s in d["measured"]["stages"])' \
    "$TMP/gpu.json"; then
    pass "--backend cuda on a GPU: a report of GPU stages"
else
    fail "--backend cuda" "exit $code: $(cat "$TMP/stderr")"
fi
expect_code "--gpu-split with --transport mpi: exit 2" 2 "$STAGEPART" run "$TMP/plan.json" \
    --model $MODEL --backend cuda --transport mpi --gpu-split
expect_stderr_contains "says why" "--gpu-split partitions the GPUs of one process's stages"
expect_code "the plan as output: exit 2" 2 "$STAGEPART" run "$TMP/plan.json" --model $MODEL -o "$TMP/plan.json"
"$STAGEPART" partition "$TMP/profile.json" -s 2 --chunks 2 --solver uniform -m 4 -o "$TMP/chunks.json" >/dev/null
expect_code "an interleaved plan: exit 4" 4 "$STAGEPART" run "$TMP/chunks.json" --model $MODEL
# a stage that cannot hold its layers: the same layer names, a 1 TB embedding
sed 's/"vocab": 512, "max_seq_len": 64/"vocab": 16777216, "hidden": 16384, "max_seq_len": 64/; s/"hidden": 64, //' \
    $MODEL >"$TMP/huge.json"
# (under ASan, a 1 TB request must fail as it does without it, not stop the process)
ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}allocator_may_return_null=1" \
    expect_code "a stage out of memory: exit 3" 3 "$STAGEPART" run "$TMP/plan.json" --model "$TMP/huge.json"
expect_stderr_contains "names the stage" "stage 0 (layers embedding.."
expect_stderr_contains "and the bytes" "TB (weights, gradients"
# Ctrl-C stops every stage and writes nothing
expect_interrupted "Ctrl-C" "$STAGEPART" run "$TMP/plan.json" --model $MODEL --steps 100000 \
    -o "$TMP/ctrl-c.json"
if [ ! -e "$TMP/ctrl-c.json" ]; then pass "Ctrl-C: nothing written"; else fail "Ctrl-C: nothing written"; fi
test_done

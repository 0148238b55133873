#!/bin/sh
# t2600-gpus: `partition --gpus N --global-batch B`, the table of pipeline x data parallel
# splits on a sample profile and links: every divisor of N has its row, the best is marked and
# its plan written; what it cannot do, or without links, is said with its exit code. (--gpus
# alone, replicated stages: t2700.)
. "$(dirname "$0")/lib.sh"

P=$SRC/samples/profiles/gpt3-2.7b.json
L=$SRC/samples/links/two-nodes-8.json

expect_code "8 GPUs, global batch 256" 0 "$STAGEPART" partition "$P" --gpus 8 --global-batch 256 \
    --links "$L" -o "$TMP/best.json"
for row in "        1      8     32" "        2      4     64" "        4      2    128" \
    "        8      1    256"; do
    expect_stdout_contains "a row for $row" "$row"
done
expect_stdout_contains "the best is marked" "  best"
expect_stdout_contains "its plan is written" "wrote       $TMP/best.json (the best split's plan"
best=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["stage_count"])' "$TMP/best.json")
expect_code "the same as JSON" 0 "$STAGEPART" partition "$P" --gpus 8 --global-batch 256 --links "$L" --json
python3 - "$TMP/stdout" "$best" <<'PY' && pass "JSON: the best split is the one written, the most samples/s, step = iteration + all-reduce" || fail "JSON table"
import json, sys
t = json.load(open(sys.argv[1]))
c = t["candidates"]
assert [x["pipeline"] for x in c] == [1, 2, 4, 8], c
best = c[t["best"]]
assert best["pipeline"] == int(sys.argv[2])
assert best["samples_per_s"] == max(x["samples_per_s"] for x in c)
for x in c:
    assert abs(x["step_ms"] - x["iteration_ms"] - x["allreduce_ms"]) < 1e-9
    assert (x["allreduce_ms"] > 0) == (x["data_parallel"] > 1)
PY
expect_code "a batch that does not divide keeps a row with its reason" 0 "$STAGEPART" partition "$P" \
    --gpus 8 --global-batch 100 --links "$L"
expect_stdout_contains "the reason" "the global batch 100 does not split"
expect_code "devices of two speeds" 0 "$STAGEPART" partition "$P" --gpus 8 --global-batch 256 \
    --links "$L" --devices "$SRC/samples/devices/two-speeds-8.json"
expect_stdout_contains "replicas on unlike devices are refused by row" \
    "stage 0's replicas run on unlike devices (node0.gpu0: speed 1"
expect_code "without links: exit 2" 2 "$STAGEPART" partition "$P" --gpus 8 --global-batch 256
expect_stderr_contains "names --links" "needs links between all of them (--links with at least 8 devices"
expect_code "--stages with --gpus: usage" 2 "$STAGEPART" partition "$P" --gpus 8 --global-batch 256 \
    --links "$L" -s 4
expect_code "nothing fits: exit 3" 3 "$STAGEPART" partition "$P" --gpus 8 --global-batch 256 \
    --links "$L" --memory-limit 1GB
expect_stderr_contains "each split's reason" "  8 x 1: layer 'embedding' alone needs"
test_done

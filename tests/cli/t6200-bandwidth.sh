#!/bin/sh
# t6200-bandwidth: `stagepart bandwidth` (CPU backend) measures real copies between two pinned
# threads and writes a links file the partitioner takes; bad options exit 2.
. "$(dirname "$0")/lib.sh"
expect_code "measure" 0 bandwidth_probe --sizes 64KiB,1MiB,4MiB --trials 3 --warmup 1 \
    -o "$TMP/links.json"
expect_stdout_contains "the table" "latency_us bandwidth_GBps"
expect_stdout_contains "both directions" "cpu1->cpu0"
python3 - "$TMP/links.json" <<'PY' && pass "the file: two devices, fits, every sample" || fail "the file"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["format"] == "stagepart-links" and d["devices"] == ["cpu0", "cpu1"], d
assert d["bandwidth_GBps"][0][0] == 0 and d["bandwidth_GBps"][0][1] > 0.1, d["bandwidth_GBps"]
pairs = d["measurement"]["pairs"]
assert [(p["from"], p["to"]) for p in pairs] == [(0, 1), (1, 0)], pairs
for p in pairs:
    assert [s["bytes"] for s in p["samples"]] == [65536, 1 << 20, 4 << 20], p
    assert all(s["p10_ms"] <= s["median_ms"] <= s["p90_ms"] for s in p["samples"]), p
    assert p["fit"]["bandwidth_GBps"] == d["bandwidth_GBps"][p["from"]][p["to"]], p
    assert p["label"] == f"cpu{p['from']}->cpu{p['to']}", p
PY
expect_code "partition takes it" 0 "$STAGEPART" partition samples/profiles/llama3-8b.json -s 2 \
    --links "$TMP/links.json"
expect_code "stdout without -o" 0 bandwidth_probe --sizes 4KiB,1MiB,16MiB --trials 5
python3 -c 'import json, sys; json.load(sys.stdin)' <"$TMP/stdout" && pass "stdout is the file" ||
    fail "stdout is the file"
expect_code "one worker: exit 2" 2 "$STAGEPART" bandwidth --workers 1
expect_code "one size: exit 2" 2 "$STAGEPART" bandwidth --sizes 1MiB
expect_stderr_contains "says why" "2 to 32 message sizes, got 1"
expect_code "a bad size: exit 2" 2 "$STAGEPART" bandwidth --sizes 1MiB,lots
expect_stderr_contains "names it" "lots"
expect_code "another backend: exit 2" 2 "$STAGEPART" bandwidth --backend tpu
expect_stderr_contains "names the choices" "cpu or cuda, got 'tpu'"
expect_code "--workers is for the cpu: exit 2" 2 "$STAGEPART" bandwidth --backend cuda --workers 4
# the CUDA probe: here (no GPU, or a build without CUDA) exit 4 saying which; on a GPU machine a
# links file of its devices (scripts/gpu-check.sh runs it with the full sizes)
code=0
"$STAGEPART" bandwidth --backend cuda --sizes 4KiB,1MiB --trials 3 -o "$TMP/gpu.json" \
    >"$TMP/stdout" 2>"$TMP/stderr" || code=$?
if [ "$code" = 4 ] && grep -Eq "no CUDA device|built without CUDA" "$TMP/stderr"; then
    pass "--backend cuda without a GPU: exit 4, says why"
elif [ "$code" = 0 ] && python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
assert d["devices"] and all(p["fit"]["bandwidth_GBps"] > 0 for p in d["measurement"]["pairs"])' \
    "$TMP/gpu.json"; then
    pass "--backend cuda on a GPU: a links file of its devices"
else
    fail "--backend cuda" "exit $code: $(cat "$TMP/stderr")"
fi
test_done

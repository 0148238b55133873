#!/bin/sh
# t6200-bandwidth: `stagepart bandwidth` (CPU backend) measures real copies between two pinned
# threads and writes a links file the partitioner takes; bad options exit 2.
. "$(dirname "$0")/lib.sh"
expect_code "measure" 0 "$STAGEPART" bandwidth --sizes 64KiB,1MiB,4MiB --trials 3 --warmup 1 \
    -o "$TMP/links.json"
expect_stdout_contains "the table" "latency_us bandwidth_GBps"
expect_stdout_contains "both directions" "cpu1     cpu0"
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
PY
expect_code "partition takes it" 0 "$STAGEPART" partition samples/profiles/llama3-8b.json -s 2 \
    --links "$TMP/links.json"
expect_code "stdout without -o" 0 "$STAGEPART" bandwidth --sizes 4KiB,16MiB --trials 3
python3 -c 'import json, sys; json.load(sys.stdin)' <"$TMP/stdout" && pass "stdout is the file" ||
    fail "stdout is the file"
expect_code "one worker: exit 2" 2 "$STAGEPART" bandwidth --workers 1
expect_code "one size: exit 2" 2 "$STAGEPART" bandwidth --sizes 1MiB
expect_stderr_contains "says why" "2 to 32 message sizes, got 1"
expect_code "a bad size: exit 2" 2 "$STAGEPART" bandwidth --sizes 1MiB,lots
expect_stderr_contains "names it" "lots"
expect_code "the CUDA backend is not built: exit 2" 2 "$STAGEPART" bandwidth --backend cuda
expect_stderr_contains "says so" "only cpu is built"
test_done

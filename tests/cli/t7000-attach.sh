#!/bin/sh
# t7000-attach: `stagepart profile --attach` with the real libstagepart-inject.so on a machine
# without a GPU (CUDA build only; NVTX_PROGRAM is tests/cuda/nvtx_program). NVTX reaches the
# collector without a driver, so the ranges, names, payloads, the second thread, the forked
# child and the logs are checked for real; with no GPU work the command must say so (exit 4),
# and the kept logs must make the profile through `import events`.
. "$(dirname "$0")/lib.sh"
: "${NVTX_PROGRAM:?}"
E=$TMP/events

expect_code "no GPU work: exit 4" 4 "$STAGEPART" profile --attach --events-dir "$E" \
    -o "$TMP/p.json" -- "$NVTX_PROGRAM" 3
expect_stderr_contains "says why" "ran no GPU work the collector saw (3 layers"
if [ ! -e "$TMP/p.json" ]; then pass "no profile written"; else fail "no profile written"; fi
expect_stdout_contains "the program's own output passes through" "ran 3 steps (annotated)"
n=$(ls "$E" | grep -c '^events-.*\.splog$')
if [ "$n" = 1 ]; then pass "one log: the forked child wrote none"; else fail "one log" "$n logs"; fi

expect_code "import events" 0 "$STAGEPART" import events "$E"/events-*.splog -o "$TMP/ev.json"
python3 - "$TMP/ev.json" <<'PY' && pass "layers, steps, payloads" || fail "layers, steps, payloads"
import json, sys
p = json.load(open(sys.argv[1]))
names = [l["name"] for l in p["layers"]]
assert names == ["embed", "block", "head"], names
by = {l["name"]: l for l in p["layers"]}
assert by["embed"]["activation_bytes"] == 4096      # nvtxRangePushEx u64 payload
assert by["block"]["activation_bytes"] == 8192      # sp_annotate_u64
assert "activation_bytes" not in by["head"]         # registered strings, no payload
for l in p["layers"]:
    assert l["measured"]["samples"] == 3, l         # fwd on the main thread, bwd on another
m = p["measurement"]
assert m["steps_total"] == 3 and m["collector"].startswith("stagepart-inject"), m
assert "CUPTI" in m["versions"], m
PY

# two ranks at once (each process execs, so each writes its own log): steps matched per process
rm -rf "$TMP/ranks"
expect_code "two processes" 4 "$STAGEPART" profile --attach --events-dir "$TMP/ranks" -- \
    sh -c '"$0" 3 & "$0" 3; wait' "$NVTX_PROGRAM"
n=$(ls "$TMP/ranks" | grep -c '^events-.*\.splog$')
if [ "$n" = 2 ]; then pass "two processes: two logs"; else fail "two processes: two logs" "$n logs"; fi
expect_code "two processes: import" 0 "$STAGEPART" import events "$TMP/ranks"/events-*.splog \
    -o "$TMP/ranks.json"
python3 -c 'import json, sys; p = json.load(open(sys.argv[1]))
assert p["measurement"]["steps_total"] == 3, p["measurement"]
assert [l["measured"]["samples"] for l in p["layers"]] == [3, 3, 3], p["layers"]' "$TMP/ranks.json" &&
    pass "two processes: 3 steps each, matched per process" || fail "two processes: steps per process"

# a program that ends without atexit handlers, or is killed, loses at most the step in progress
for how in _exit kill; do
    rm -rf "$TMP/$how"
    expect_code "ends by $how" "$([ $how = kill ] && echo 1 || echo 4)" "$STAGEPART" profile \
        --attach --events-dir "$TMP/$how" -- "$NVTX_PROGRAM" 3 $how
    expect_code "ends by $how: the logs hold every step" 0 "$STAGEPART" import events \
        "$TMP/$how"/events-*.splog -o "$TMP/$how.json"
    python3 -c 'import json, sys; p = json.load(open(sys.argv[1]))
assert [l["measured"]["samples"] for l in p["layers"]] == [3, 3, 3], p["layers"]' "$TMP/$how.json" &&
        pass "ends by $how: 3 steps of 3 layers" || fail "ends by $how: 3 steps of 3 layers"
done
expect_code "a kept folder with logs is refused" 2 "$STAGEPART" profile --attach \
    --events-dir "$E" -- "$NVTX_PROGRAM" 1
expect_stderr_contains "names the folder" "already holds 1 event logs"
expect_code "a failing program: exit 1" 1 "$STAGEPART" profile --attach -- sh -c 'exit 3'
expect_stderr_contains "its status" "exited with status 3: no profile written"
expect_code "a program that cannot run: exit 2" 2 "$STAGEPART" profile --attach -- \
    "$TMP/no-such-program"
expect_stderr_contains "why" "cannot run"
expect_code "a program without CUDA or NVTX: exit 4" 4 "$STAGEPART" profile --attach -- true
expect_stderr_contains "no log" "wrote no event log"
expect_code "idle mode writes nothing" 4 env STAGEPART_INJECT_MODE=idle "$STAGEPART" profile \
    --attach -- "$NVTX_PROGRAM" 1
expect_code "--attach is required" 2 "$STAGEPART" profile -- true
expect_code "nothing after --" 2 "$STAGEPART" profile --attach --
expect_code "a missing collector: exit 4" 4 env STAGEPART_INJECT_LIB="$TMP/none.so" \
    "$STAGEPART" profile --attach -- true
printf 'SPEVLOG\0\2\0\0\0\1\0\0\0' >"$TMP/v2.splog"
expect_code "another log version: exit 2" 2 "$STAGEPART" import events "$TMP/v2.splog"
expect_stderr_contains "names the version" "event log version 2"
echo '{}' >"$TMP/x.splog"
expect_code "not a log: exit 2" 2 "$STAGEPART" import events "$TMP/x.splog"
expect_stderr_contains "says what it expected" "not a stagepart event log"
test_done

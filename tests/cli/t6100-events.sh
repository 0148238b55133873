#!/bin/sh
# t6100-events: `stagepart import events` on event logs written from the documented layout by an
# independent writer (tests/tools/make_event_logs.py), in every build (the collector that writes
# them for real is tested in t7000-attach, CUDA builds only).
. "$(dirname "$0")/lib.sh"
python3 tests/tools/make_event_logs.py "$TMP/ev" || { fail "make_event_logs.py"; test_done; exit 1; }
E=$TMP/ev
expect_code "two steps" 0 "$STAGEPART" import events "$E/two-steps.splog" -o "$TMP/p.json"
expect_stdout_contains "median of the steps" "1 layer, median of 2 steps"
expect_stdout_contains "dropped records reported" "the collector dropped 2 records"
expect_stderr_contains "the collector's warning passed on" "the collector said: note"
python3 - "$TMP/p.json" <<'PY' && pass "figures" || fail "figures"
import json, sys
p = json.load(open(sys.argv[1]))
(l,) = p["layers"]
# fwd: the range folded into the API record; bwd: the one joined by an EXTCORR record on the
# other thread; the copy launched by OS thread id 0x1234 lands in L0/fwd but is no busy time
assert (l["name"], l["fwd_ms"], l["bwd_ms"], l["activation_bytes"]) == ("L0", 1, 1, 4096), l
assert l["measured"]["fwd"]["copies"] == 1 and l["measured"]["fwd"]["copy_bytes"] == 1 << 20, l
m = p["measurement"]
assert m["unattributed_share"] == 0 and m["dropped_records"] == 2 and m["steps_used"] == 2, m
assert m["devices"] == [{"id": 0, "name": "GPU 0"}] and m["versions"] == "CUPTI 130001 loaded", m
PY
expect_code "a log cut mid-record reads to its last whole record" 0 "$STAGEPART" import events \
    "$E/cut.splog" -o "$TMP/c.json"
expect_code "two logs merge" 0 "$STAGEPART" import events "$E/two-steps.splog" "$E/cut.splog" \
    -o "$TMP/m.json"
expect_code "another version: exit 2" 2 "$STAGEPART" import events "$E/version2.splog"
expect_stderr_contains "says which" "event log version 2; this stagepart reads version 1"
expect_code "no ranges: exit 2" 2 "$STAGEPART" import events "$E/header-only.splog"
cp "$E/header-only.splog" "$TMP/long.splog"
printf 'K\377\377\377\177' >>"$TMP/long.splog"
expect_code "an absurd record length: exit 2" 2 "$STAGEPART" import events "$TMP/long.splog"
expect_stderr_contains "names the byte" "byte 16: a record longer than any"
expect_code "events takes logs" 2 "$STAGEPART" import events
expect_code "kineto takes one trace" 2 "$STAGEPART" import kineto a.json b.json
# Real event logs an H200 wrote (tests/data/gpu/README.md): every layer's times, the steps, the
# activity count and the attributed share exactly as the H200 run's own import wrote them
for f in tests/data/gpu/h200-events/*.splog.gz; do
    n=$(basename "$f" .splog.gz)
    gzip -dc "$f" >"$TMP/$n.splog"
    w=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["warmup_steps"])' "${f%.splog.gz}.expected.json")
    expect_code "real H200 log $n" 0 "$STAGEPART" import events "$TMP/$n.splog" --warmup-steps "$w" -o "$TMP/$n.json"
    if python3 - "$TMP/$n.json" "${f%.splog.gz}.expected.json" <<'PY'
import json, sys
p, e = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
# documents print numbers at 15 significant digits: equal within that
same = lambda a, b: a == b or abs(a - b) <= 1e-13 * abs(b)
assert [l["name"] for l in p["layers"]] == [l["name"] for l in e["layers"]]
assert all(same(a[k], b[k]) for a, b in zip(p["layers"], e["layers"]) for k in ("fwd_ms", "bwd_ms")), p["layers"]
m = p["measurement"]
for k in ("steps_total", "steps_used", "activities", "unattributed_share", "gpu_ms"):
    assert same(m[k], e[k]), (k, m[k], e[k])
PY
    then pass "real H200 log $n: the same profile as the H200 run's"; else fail "real H200 log $n"; fi
done
test_done

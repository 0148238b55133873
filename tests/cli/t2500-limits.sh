#!/bin/sh
# t2500-limits: the bounds that keep the partitioner's integer arithmetic exact and every plan it
# writes readable. Inputs at the bounds give plans that simulate, check and export read back;
# inputs past them are refused with exit 2, naming what and where. (A plan with a stage's bytes
# beyond 2^53, which the plan reader refused, was found by fuzz_profile in CI.)
. "$(dirname "$0")/lib.sh"

# profile LAYERS FIELDS...: a profile of LAYERS layers, each with the JSON fields given
profile() {
    python3 - "$@" <<'PY'
import json, sys
n, fields = int(sys.argv[1]), json.loads("{" + ",".join(sys.argv[2:]) + "}")
print(json.dumps({"format": "stagepart-profile", "version": 1, "model": "limits",
                  "micro_batch_size": 1,
                  "layers": [dict(name="l%d" % i, **fields) for i in range(n)]}))
PY
}
links() { # links BANDWIDTH_GBPS LATENCY_US: two devices
    printf '{"format":"stagepart-links","version":1,"devices":["a","b"],"bandwidth_GBps":[[0,%s],[%s,0]],"latency_us":[[0,%s],[%s,0]]}\n' "$1" "$1" "$2" "$2"
}
devices() { # devices SPEED: two devices
    printf '{"format":"stagepart-devices","version":1,"devices":[{"name":"a","speed":%s},{"name":"b","speed":%s}]}\n' "$1" "$1"
}
B51=2251799813685248 # 2^51: four layers sum to 2^53

# at the bounds: byte sums of exactly 2^53, the slowest devices the work allows (8e9 ms at speed
# 0.002 is 4e12 ms, under 2^62 ns), the slowest link (overlapped: 2^51 bytes take 2.25e12 ms),
# and blocking transfers over a link as slow as the limit allows (1 GB/s: 3.6e10 ms in all)
profile 4 '"fwd_ms": 1e9' '"bwd_ms": 1e9' "\"activation_bytes\": $B51" "\"param_bytes\": $B51" >"$TMP/edge.json"
links 0.001 1e7 >"$TMP/slowest-links.json"
links 1 1e7 >"$TMP/slow-links.json"
devices 0.002 >"$TMP/slow-devices.json"
for case in "overlap slowest-links" "blocking slow-links"; do
    set -- $case
    expect_code "at the bounds ($1)" 0 "$STAGEPART" partition "$TMP/edge.json" -s 2 \
        --links "$TMP/$2.json" --devices "$TMP/slow-devices.json" --comm "$1" -o "$TMP/plan-$1.json"
    expect_code "its plan simulates ($1)" 0 "$STAGEPART" simulate "$TMP/plan-$1.json"
    expect_code "its plan checks ($1)" 0 "$STAGEPART" check --plan "$TMP/plan-$1.json" --profile "$TMP/edge.json" \
        --devices "$TMP/slow-devices.json" --links "$TMP/$2.json" --max-imbalance 2
    expect_stdout_contains "the check predicts what the plan recorded ($1)" "0.0% <= 5.0% (1f1b, M = 8)"
    expect_code "its plan exports ($1)" 0 "$STAGEPART" export "$TMP/plan-$1.json" --to torchgpipe
done
expect_code "the ILP at the bounds" 0 "$STAGEPART" partition "$TMP/edge.json" -s 2 --solver ilp \
    --links "$TMP/slow-links.json" --devices "$TMP/slow-devices.json" -o "$TMP/plan-ilp.json"
expect_code "its plan simulates" 0 "$STAGEPART" simulate "$TMP/plan-ilp.json"

# past them
profile 5 '"fwd_ms": 1' '"bwd_ms": 1' "\"param_bytes\": $B51" >"$TMP/bytes.json"
expect_code "byte sum beyond 2^53" 2 "$STAGEPART" partition "$TMP/bytes.json" -s 2 -o "$TMP/out.json"
expect_stderr_contains "the sum is named" "bytes.json: layers: the sum of param_bytes over all layers (1.126e+16) is beyond 2^53"
expect_stderr_contains "memory_bytes defaults to param_bytes" "the sum of memory_bytes over all layers"
if [ -e "$TMP/out.json" ]; then fail "nothing written" "out.json exists"; else pass "nothing written"; fi
profile 4000 '"fwd_ms": 1e9' '"bwd_ms": 1e9' '"recompute_ms": 1e9' >"$TMP/time.json"
expect_code "time sum beyond 2^62 ns" 2 "$STAGEPART" partition "$TMP/time.json" -s 2
expect_stderr_contains "the time sum is named" "the sum of fwd_ms + bwd_ms + recompute_ms over all layers (1.2e+13 ms) is above the limit of 4.612e+12 ms (2^62 ns)"
devices 0.001 >"$TMP/slowest-devices.json"
expect_code "work too long on the slowest device" 2 "$STAGEPART" partition "$TMP/edge.json" -s 2 --devices "$TMP/slowest-devices.json"
expect_stderr_contains "the slow device is named" "the profile's 8e+09 ms of work would take 8e+12 ms on the slowest device (speed 0.001), above the limit of 4.612e+12 ms (2^62 ns)"
expect_code "blocking transfers too long on the slowest link" 2 "$STAGEPART" partition "$TMP/edge.json" -s 2 \
    --links "$TMP/slowest-links.json" --comm blocking
expect_stderr_contains "the transfers are named" "plus up to 3.603e+13 ms of blocking transfers over the slowest link: above the limit of 4.612e+12 ms (2^62 ns)"
links 0.0001 5 >"$TMP/bad-links.json"
expect_code "a link under 1 MB/s" 2 "$STAGEPART" partition "$TMP/edge.json" -s 2 --links "$TMP/bad-links.json"
expect_stderr_contains "the bandwidth is named" "bad-links.json: bandwidth_GBps[0][1]: expected a finite number >= 0.001, got 0.0001"
links 1 1e8 >"$TMP/bad-links.json"
expect_code "a latency over 10 s" 2 "$STAGEPART" partition "$TMP/edge.json" -s 2 --links "$TMP/bad-links.json"
expect_stderr_contains "the latency is named" "bad-links.json: latency_us[0][1]: 100000000 is above the limit of 1e+07"
# a stage's memory: 2^52 bytes resident + 2 micro-batches in flight x 2^52 bytes saved
profile 4 '"fwd_ms": 1' '"bwd_ms": 1' "\"param_bytes\": $B51" "\"saved_bytes\": $B51" >"$TMP/memory.json"
expect_code "a stage's memory beyond 2^53" 2 "$STAGEPART" partition "$TMP/memory.json" -s 2 -o "$TMP/out.json"
expect_stderr_contains "the stage is named" "stage 0's memory (4.504e+15 bytes resident + 2 micro-batches in flight x 4.504e+15 bytes saved) is beyond 2^53 bytes"
# STAGEPART_THREADS: the threads a call starts of its own accord (docs/security.md). A 22 MB
# profile is read in two halves and in pieces on every CPU; with 1, on this thread alone.
python3 bench/gen_profile.py 100000 "$TMP/big.json" >/dev/null
threads_started() { strace -f -qq -e trace=clone,clone3 "$@" 2>&1 >/dev/null | grep -c 'clone'; }
if command -v strace >/dev/null; then
    # against a command that starts none (a sanitizer's leak check at exit clones once)
    n0=$(threads_started "$STAGEPART" version)
    n=$(STAGEPART_THREADS=1 threads_started "$STAGEPART" partition "$TMP/big.json" -s 8)
    if [ "$n" = "$n0" ]; then pass "STAGEPART_THREADS=1 starts no thread"; else fail "STAGEPART_THREADS=1 starts no thread" "$n clones, $n0 for version"; fi
    n=$(STAGEPART_THREADS=2 threads_started "$STAGEPART" partition "$TMP/big.json" -s 8)
    if [ "$n" -gt "$n0" ] && [ "$n" -le $((n0 + 4)) ]; then pass "STAGEPART_THREADS=2: a few threads ($n)"; else fail "STAGEPART_THREADS=2" "$n clones"; fi
else
    fail "strace is needed to count the threads (Debian's strace)"
fi
STAGEPART_THREADS=many expect_code "STAGEPART_THREADS not a number: exit 2" 2 "$STAGEPART" partition "$TMP/big.json" -s 8
expect_stderr_contains "the variable is named" "STAGEPART_THREADS: expected a thread count"
# the reader's reservation follows its text, whatever the first layer's name: a name holding
# "}, {" once made a one-thread read reserve 5.5x the text, and this fail a 100 MB budget
python3 - "$TMP/big.json" "$TMP/odd.json" <<'PY'
import sys
s = open(sys.argv[1]).read()
i = s.index('"layer0"')
open(sys.argv[2], "w").write(s[:i] + '"a}, {"' + s[i + len('"layer0"'):])
PY
STAGEPART_THREADS=1 STAGEPART_MEMORY_BUDGET=100MB expect_code "an odd first name read on one thread in 100 MB" 0 \
    "$STAGEPART" partition "$TMP/odd.json" -s 8
STAGEPART_MEMORY_BUDGET=100MB expect_code "and on every CPU" 0 "$STAGEPART" partition "$TMP/odd.json" -s 8
test_done

#!/usr/bin/env bash
# tests/large/ten-million-layers.sh: a profile of 10 million layers is handled, or refused
# cleanly within the memory this machine allows, never ended by a crash or the OOM killer
# (docs/security.md). Run by .ci/run on the release build; about a minute and 0.5 GB of disk.
#   usage: tests/large/ten-million-layers.sh STAGEPART
#   1. a budget far below the need (STAGEPART_MEMORY_BUDGET=1GiB): exit 2 naming the budget and
#      the file; an existing output is left as it was
#   2. an address-space limit (ulimit -v) that the default budget must follow: exit 2 the same
#   3. the default budget on this machine: exit 0 with a plan over all 10,000,000 layers, or
#      exit 2 as above when this machine has too little memory; peak memory printed
set -euo pipefail
STAGEPART=$(realpath "$1")
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

awk 'BEGIN {
    n = 10000000
    printf "{\"format\":\"stagepart-profile\",\"version\":1,\"model\":\"ten-million\",\"micro_batch_size\":1,\"layers\":[\n"
    for (i = 0; i < n; i++)
        printf "{\"name\":\"l%d\",\"fwd_ms\":%d,\"bwd_ms\":%d}%s\n", i, 1 + i % 3, 2 + i % 5, (i < n - 1 ? "," : "")
    print "]}"
}' >"$TMP/big.json"
echo "profile: $(stat -c %s "$TMP/big.json") bytes, 10,000,000 layers"

refused() { # $1: what; then the command; expects exit 2 with the budget named, output intact
    local what=$1 code=0
    shift
    echo "an earlier plan" >"$TMP/plan.json"
    "$@" >"$TMP/out" 2>"$TMP/err" || code=$?
    [ "$code" = 2 ] || { cat "$TMP/err"; fail "$what: exit $code, expected 2"; }
    grep -Eq "over the memory budget of .* while (reading|parsing) $TMP/big.json" "$TMP/err" ||
        { cat "$TMP/err"; fail "$what: no message naming the budget and the file"; }
    [ "$(cat "$TMP/plan.json")" = "an earlier plan" ] || fail "$what: the existing output changed"
    [ -z "$(find "$TMP" -name '*.tmp*')" ] || fail "$what: a temporary file was left"
    echo "ok: $what: $(head -c 160 "$TMP/err")"
}

refused "a 1 GiB budget" env STAGEPART_MEMORY_BUDGET=1GiB \
    "$STAGEPART" partition "$TMP/big.json" -s 8 -o "$TMP/plan.json"
refused "a 2 GiB address-space limit" bash -c \
    'ulimit -v 2097152 && exec "$0" partition "$1" -s 8 -o "$2"' "$STAGEPART" "$TMP/big.json" "$TMP/plan.json"

code=0
# run it, writing the child's peak resident set (kB) to peak_kb
python3 -c 'import resource, subprocess, sys
code = subprocess.call(sys.argv[2:], stdout=open(sys.argv[1] + ".out", "w"), stderr=open(sys.argv[1] + ".err", "w"))
open(sys.argv[1] + ".peak_kb", "w").write(str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss))
sys.exit(code)' "$TMP/run" "$STAGEPART" partition "$TMP/big.json" -s 128 -o "$TMP/plan.json" || code=$?
mv "$TMP/run.err" "$TMP/err"
peak_mb=$(($(cat "$TMP/run.peak_kb") / 1024))
case $code in
0)
    python3 - "$TMP/plan.json" <<'PY' || fail "the default budget: the plan does not cover the layers"
import json, sys
plan = json.load(open(sys.argv[1]))
stages = plan["stages"]
assert len(stages) == 128, len(stages)
assert stages[0]["first_layer"] == 0 and stages[-1]["last_layer"] == 9_999_999
assert all(a["last_layer"] + 1 == b["first_layer"] for a, b in zip(stages, stages[1:]))
PY
    echo "ok: the default budget: handled, 128 stages over 10,000,000 layers, peak ${peak_mb} MB"
    ;;
2)
    grep -q "over the memory budget" "$TMP/err" || { cat "$TMP/err"; fail "the default budget: exit 2 without the budget named"; }
    echo "ok: the default budget: refused cleanly on this machine (peak ${peak_mb} MB): $(head -c 160 "$TMP/err")"
    ;;
*)
    cat "$TMP/err"
    fail "the default budget: exit $code"
    ;;
esac

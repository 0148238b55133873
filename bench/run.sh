#!/bin/sh
# bench/run.sh: every benchmark, printed as markdown tables (docs/benchmarks.md records them).
#   usage: bench/run.sh [BUILD_DIR]   (default: build; run from the source tree)
# The whole-command rows time `stagepart partition` on a 100,000-layer profile (read, solve,
# write) against Python's json.load of the same file, in the same run, median of 5 each.
set -eu
BUILD=${1:-build}
STAGEPART=$BUILD/cli/stagepart
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

"$BUILD/bench/bench_partition" samples/profiles
"$BUILD/bench/bench_simulate"

python3 bench/gen_profile.py 100000 "$TMP/big.json"
median5() { # median wall time of 5 runs of "$@", in ms
    for i in 1 2 3 4 5; do
        s=$(date +%s%N); "$@" >/dev/null; e=$(date +%s%N)
        echo $(( (e - s) / 1000000 ))
    done | sort -n | sed -n 3p
}
# a memory limit that binds: 98 % of the unconstrained plan's largest stage
"$STAGEPART" partition "$TMP/big.json" -s 128 -o "$TMP/plan.json" >/dev/null
limit=$(python3 -c 'import json,sys; p=json.load(open(sys.argv[1])); print(int(max(s["memory_bytes"] for s in p["stages"])*0.98))' "$TMP/plan.json")
size=$(wc -c <"$TMP/big.json")
py=$(median5 python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$TMP/big.json")
cli=$(median5 "$STAGEPART" partition "$TMP/big.json" -s 128 -o "$TMP/plan.json")
clim=$(median5 "$STAGEPART" partition "$TMP/big.json" -s 128 --memory-limit "$limit" -o "$TMP/plan2.json")
echo "## Whole command on a 100,000-layer profile ($((size / 1000000)) MB), median of 5"
echo
echo "| command | wall ms | vs json.load |"
echo "|---|---|---|"
echo "| python3 json.load (parse only) | $py | 1.00x |"
echo "| stagepart partition -s 128 -o plan.json | $cli | $(python3 -c "print(f'{$cli/$py:.2f}x')") |"
echo "| same with --memory-limit $limit | $clim | $(python3 -c "print(f'{$clim/$py:.2f}x')") |"

#!/bin/sh
# bench/schedules.sh BUILD: every schedule's simulated efficiency on the sample profiles, each
# with its own plan (`partition --schedule compare --objective iteration`: the DP's iteration
# formula for one chunk per device, the cap search for zbv and dualpipev), as the Markdown table
# that docs/benchmarks.md shows. P = 4 and 8 devices, M = 4P micro-batches. The loop-chunk
# schedules (interleaved, interleaved-zb) run with 2 chunks per device and Megatron-LM's equal
# split (their exact plan is the ilp's, time-boxed). The fastest schedule of a row is in bold.
set -eu
build=${1:-build}
stagepart="$build/cli/stagepart"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
printf '| profile | P | M | gpipe | 1f1b | zb-h1 | interleaved (equal split) | interleaved-zb (equal split) | zbv | dualpipev |\n'
printf '|---|---|---|---|---|---|---|---|---|---|\n'
for profile in bert-large gpt3-2.7b llama3-8b resnet50 equal-64; do
    for P in 4 8; do
        M=$((4 * P))
        "$stagepart" partition "samples/profiles/$profile.json" -s "$P" -m "$M" \
            --schedule compare --objective iteration --json >"$dir/exact.json"
        "$stagepart" partition "samples/profiles/$profile.json" -s "$P" -m "$M" --chunks 2 \
            --solver uniform --schedule compare --json >"$dir/loop.json"
        python3 - "$dir/exact.json" "$dir/loop.json" "$profile" "$P" "$M" <<'PY'
import json, sys
exact = {e["schedule"]: e for e in json.load(open(sys.argv[1]))["schedules"]}
loop = {e["schedule"]: e for e in json.load(open(sys.argv[2]))["schedules"]}
order = ["gpipe", "1f1b", "zb-h1", "interleaved", "interleaved-zb", "zbv", "dualpipev"]
rows = {s: (loop if s.startswith("interleaved") else exact)[s] for s in order}
ok = {s: e for s, e in rows.items() if "error" not in e}
best = min(ok, key=lambda s: ok[s]["iteration_ms"])
cells = []
for s in order:
    e = rows[s]
    if "error" in e:
        cells.append("-")
    else:
        c = f'{100 * e["efficiency"]:.1f}% ({e["iteration_ms"]:.1f} ms)'
        cells.append(f"**{c}**" if s == best else c)
print(f"| {sys.argv[3]} | {sys.argv[4]} | {sys.argv[5]} | " + " | ".join(cells) + " |")
PY
    done
done

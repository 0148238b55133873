#!/bin/sh
# bench/run.sh: every benchmark, printed as markdown tables (docs/benchmarks.md records them).
#   usage: bench/run.sh [BUILD_DIR]   (default: build; run from the source tree)
# The whole-command rows time `stagepart partition` on a 100,000-layer profile (read, solve,
# write) against Python's json.load of the same file, in the same run, the three in turn.
set -eu
BUILD=${1:-build}
STAGEPART=$BUILD/cli/stagepart
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

"$BUILD/bench/bench_partition" samples/profiles
"$BUILD/bench/bench_interleaved" samples/profiles
"$BUILD/bench/bench_simulate"
"$BUILD/bench/bench_attribute"
"$BUILD/bench/bench_event_log" 1000000
"$BUILD/bench/bench_event_log" 10000000 | tail -1

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
# The three in turn, 9 rounds, so that the shared host's changing load reaches each alike (one
# after another, 5 runs each, the ratio moved from 0.38x to 0.56x between runs of this script);
# the median of each, and the range of the per-round ratios.
python3 - "$STAGEPART" "$TMP" "$limit" "$size" <<'PY'
import statistics, subprocess, sys, time
stagepart, tmp, limit, size = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
cmds = {
    "py": ["python3", "-c", "import json,sys; json.load(open(sys.argv[1]))", f"{tmp}/big.json"],
    "cli": [stagepart, "partition", f"{tmp}/big.json", "-s", "128", "-o", f"{tmp}/plan.json"],
    "clim": [stagepart, "partition", f"{tmp}/big.json", "-s", "128", "--memory-limit", limit,
             "-o", f"{tmp}/plan2.json"],
}
ms = {k: [] for k in cmds}
for _ in range(9):
    for k, c in cmds.items():
        t = time.perf_counter()
        subprocess.run(c, stdout=subprocess.DEVNULL, check=True)
        ms[k].append((time.perf_counter() - t) * 1000)
med = {k: statistics.median(v) for k, v in ms.items()}
def ratios(k):
    r = sorted(a / b for a, b in zip(ms[k], ms["py"]))
    return f"{med[k] / med['py']:.2f}x ({r[0]:.2f}x to {r[-1]:.2f}x)"
print(f"## Whole command on a 100,000-layer profile ({size // 1000000} MB), median of 9 in turn")
print()
print("| command | wall ms | vs json.load (per round) |")
print("|---|---|---|")
print(f"| python3 json.load (parse only) | {med['py']:.0f} | 1.00x |")
print(f"| stagepart partition -s 128 -o plan.json | {med['cli']:.0f} | {ratios('cli')} |")
print(f"| same with --memory-limit {limit} | {med['clim']:.0f} | {ratios('clim')} |")
PY
echo

# Import of a large PyTorch profiler trace: the real H200 trace of samples/torch/train.py copied
# 15 times one after another (bench/gen_trace.py, about 77 MB), against json.load of the same
# file: wall time (median of 5) and peak resident memory, each in a process of its own.
python3 bench/gen_trace.py tests/data/gpu/h200-torch-sample.kineto.json.gz 15 "$TMP/trace.json"
peak_kb() { # peak resident KB of "$@" (a child of its own)
    python3 -c 'import resource, subprocess, sys
subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, check=True)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)' "$@"
}
tsize=$(wc -c <"$TMP/trace.json")
tpy=$(median5 python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$TMP/trace.json")
timp=$(median5 "$STAGEPART" import kineto "$TMP/trace.json" -o "$TMP/trace-profile.json")
mpy=$(peak_kb python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$TMP/trace.json")
mimp=$(peak_kb "$STAGEPART" import kineto "$TMP/trace.json" -o "$TMP/trace-profile.json")
echo
echo "## Import of a $((tsize / 1000000)) MB PyTorch profiler trace, median of 5"
echo
echo "| command | wall ms | vs json.load | peak MB | vs json.load |"
echo "|---|---|---|---|---|"
echo "| python3 json.load (parse only) | $tpy | 1.00x | $((mpy / 1024)) | 1.00x |"
echo "| stagepart import kineto -o profile.json | $timp | $(python3 -c "print(f'{$timp/$tpy:.2f}x')") | $((mimp / 1024)) | $(python3 -c "print(f'{$mimp/$mpy:.2f}x')") |"

# Recomputation: a 128-layer GPT-like chain (gpt3-2.7b's block repeated) under a memory limit
# that binds. The DP keeps every activation; the ILP may recompute chosen layers instead.
python3 - "$TMP/gpt128.json" <<'PY'
import json, sys
g = json.load(open("samples/profiles/gpt3-2.7b.json"))
block = next(l for l in g["layers"] if l["kind"] == "transformer")
head = [l for l in g["layers"] if l["kind"] != "transformer"]
first, last = head[:1], head[1:]
blocks = [dict(block, name=f"layers.{i}") for i in range(125)]
g["model"], g["layers"] = "gpt-like-128", first + blocks + last
json.dump(g, open(sys.argv[1], "w"))
PY
echo
echo "## Recomputation under a 40 GB limit (gpt-like-128, 8 stages)"
echo
echo "| solver | wall ms | bottleneck ms | recomputed layers |"
echo "|---|---|---|---|"
for solver in "dp" "ilp --recompute auto"; do
    s=$(date +%s%N)
    # shellcheck disable=SC2086
    "$STAGEPART" partition "$TMP/gpt128.json" -s 8 --memory-limit 40GB --solver $solver -o "$TMP/rc.json" >/dev/null
    e=$(date +%s%N)
    python3 -c 'import json,sys; p=json.load(open(sys.argv[1])); b=p["bottleneck_ms"]; r=len(p.get("recomputed_layers", [])); print(f"| {sys.argv[2]} | {sys.argv[3]} | {b:.3f} | {r} |")' \
        "$TMP/rc.json" "$solver" $(( (e - s) / 1000000 ))
done

# Recomputation at scale (#29): the same block repeated to 2,048 layers in 64 stages, under
# limits that bind harder and harder; each plan should come back proven.
python3 - "$TMP/gpt2048.json" <<'PY'
import json, sys
g = json.load(open("samples/profiles/gpt3-2.7b.json"))
block = next(l for l in g["layers"] if l["kind"] == "transformer")
head = [l for l in g["layers"] if l["kind"] != "transformer"]
blocks = [dict(block, name=f"layers.{i}") for i in range(2048 - len(head))]
g["model"], g["layers"] = "gpt-like-2048", head[:1] + blocks + head[1:]
json.dump(g, open(sys.argv[1], "w"))
PY
echo
echo "## Recomputation at 2,048 layers in 64 stages (gpt-like-2048, --solver ilp --recompute auto)"
echo
echo "| memory limit | wall ms | bottleneck ms | recomputed layers | proven |"
echo "|---|---|---|---|---|"
for lim in 300GB 200GB 120GB 80GB; do
    s=$(date +%s%N)
    "$STAGEPART" partition "$TMP/gpt2048.json" -s 64 --memory-limit $lim --solver ilp --recompute auto -o "$TMP/rc.json" >/dev/null
    e=$(date +%s%N)
    python3 -c 'import json,sys; p=json.load(open(sys.argv[1])); b, r, o = p["bottleneck_ms"], len(p.get("recomputed_layers", [])), p["optimal"]; print(f"| {sys.argv[2]} | {sys.argv[3]} | {b:.3f} | {r} | {o} |")' \
        "$TMP/rc.json" $lim $(( (e - s) / 1000000 ))
done

# Placement at the same scale (#29): 64 stages on eight nodes of eight GPUs (nodes 4-7 at 0.6x
# speed and half the memory), 300 GB/s inside a node and 25 GB/s between, with three memory sizes:
# 80/40 GB (no placement fits: 1F1B's first stages hold 64 micro-batches), 300/150 GB (memory
# binds) and none. Stage s on device s (the dp) against --placement search.
echo
echo "## Placement search at 2,048 layers on 64 devices (gpt-like-2048, eight nodes of eight)"
echo
echo "| fast / slow memory | stage s on device s ms | search: wall ms | bottleneck ms | proven | node crossings | tie-breaks |"
echo "|---|---|---|---|---|---|---|"
for mem in 80 300 0; do
    python3 - "$TMP/d64.json" "$TMP/l64.json" "$mem" <<'PY'
import json, sys
F = int(sys.argv[3]) * 10**9
names = [f"node{n}.gpu{g}" for n in range(8) for g in range(8)]
devs = [{"name": x, "speed": 1.0 if i < 32 else 0.6,
         "memory_bytes": F if i < 32 else F // 2} for i, x in enumerate(names)]
json.dump({"format": "stagepart-devices", "version": 1, "devices": devs}, open(sys.argv[1], "w"))
same = lambda i, j: i // 8 == j // 8
bw = [[0 if i == j else (300.0 if same(i, j) else 25.0) for j in range(64)] for i in range(64)]
lat = [[0 if i == j else (5.0 if same(i, j) else 20.0) for j in range(64)] for i in range(64)]
json.dump({"format": "stagepart-links", "version": 1, "devices": names, "bandwidth_GBps": bw,
           "latency_us": lat}, open(sys.argv[2], "w"))
PY
    label="$mem / $((mem / 2)) GB"
    [ "$mem" = 0 ] && label="not limited"
    order="no plan fits"
    if "$STAGEPART" partition "$TMP/gpt2048.json" -s 64 --devices "$TMP/d64.json" -o "$TMP/o64.json" >/dev/null 2>&1; then
        order=$(python3 -c 'import json,sys; print("%.3f" % json.load(open(sys.argv[1]))["bottleneck_ms"])' "$TMP/o64.json")
    fi
    s=$(date +%s%N)
    if "$STAGEPART" partition "$TMP/gpt2048.json" -s 64 --devices "$TMP/d64.json" --links "$TMP/l64.json" \
        --solver ilp --placement search -o "$TMP/pl64.json" >/dev/null 2>"$TMP/pl64.err"; then
        e=$(date +%s%N)
        python3 -c '
import json, sys
p = json.load(open(sys.argv[1]))
nodes = [s["device_name"].split(".")[0] for s in p["stages"]]
cross = sum(a != b for a, b in zip(nodes, nodes[1:]))
row = [sys.argv[2], sys.argv[3], sys.argv[4], "%.3f" % p["bottleneck_ms"], p["optimal"], cross,
       p["ilp"]["status"]]
print("| " + " | ".join(str(x) for x in row) + " |")' "$TMP/pl64.json" "$label" "$order" $(( (e - s) / 1000000 ))
    else
        rc=$?
        e=$(date +%s%N)
        echo "| $label | $order | $(( (e - s) / 1000000 )) | exit $rc: $(head -c 120 "$TMP/pl64.err") | | | |"
    fi
done

# Pipeline x data parallel (#30): every split of 64 GPUs (the links above) for a 1,000-layer
# LLM-like profile, each with its exact plan, simulation and all-reduce.
python3 bench/gen_profile.py 1000 "$TMP/p1000.json"
s=$(date +%s%N)
"$STAGEPART" partition "$TMP/p1000.json" --gpus 64 --global-batch 4096 --links "$TMP/l64.json" --json >"$TMP/dp.json"
e=$(date +%s%N)
python3 -c 'import json,sys; t=json.load(open(sys.argv[1])); c=t["candidates"]; b=c[t["best"]]; p, d = b["pipeline"], b["data_parallel"]; print(f"\nPipeline x data parallel, 1,000 layers on 64 GPUs, global batch 4096: {len(c)} splits in {sys.argv[2]} ms, best {p} x {d}")' "$TMP/dp.json" $(( (e - s) / 1000000 ))

# Replicated stages (#30, PipeDream's planner): the same profile and links, cuts and replica
# counts on 64 GPUs, against the yardstick of the DP's plan for 64 stages measured alongside.
for sc in 1f1b pipedream; do
    s=$(date +%s%N)
    "$STAGEPART" partition "$TMP/p1000.json" --gpus 64 --links "$TMP/l64.json" --schedule $sc \
        --json >"$TMP/rep.json"
    e=$(date +%s%N)
    "$STAGEPART" partition "$TMP/p1000.json" -s 64 --schedule $sc --json >"$TMP/dp64.json"
    f=$(date +%s%N)
    python3 -c 'import json,sys; p=json.load(open(sys.argv[1])); st=p["stages"]; r=[s["replicas"] for s in st]; g, sm = p["gpus"], p["solve_ms"]; a, b = int(sys.argv[3]), int(sys.argv[4]); print(f"Replicated stages ({sys.argv[2]}), 1,000 layers on 64 GPUs: {a} ms ({a / b:.1f}x the dp for -s 64, {b} ms), {len(st)} stages on {g} GPUs, replicas {min(r)} to {max(r)}, solve {sm:.0f} ms")' \
        "$TMP/rep.json" $sc $(( (e - s) / 1000000 )) $(( (f - e) / 1000000 ))
done

# Placement: 8 stages on two nodes of four GPUs (node1 at 0.6x speed, half the memory), links
# fast inside a node and slow between. Stage s on device s (the dp) against the ilp's search.
echo
echo "## Placement of 8 stages on samples/devices/two-speeds-8.json + samples/links/two-nodes-8.json"
echo
echo "| profile | memory limit | placement | wall ms | bottleneck ms | node crossings | simulated 1F1B ms | proven |"
echo "|---|---|---|---|---|---|---|---|"
D=samples/devices/two-speeds-8.json
L=samples/links/two-nodes-8.json
for case in "samples/profiles/gpt3-2.7b.json none" "samples/profiles/gpt3-2.7b.json 12GB" \
    "$TMP/gpt128.json none" "$TMP/gpt128.json 48GB"; do
    # shellcheck disable=SC2086
    set -- $case
    lim=""
    [ "$2" = none ] || lim="--memory-limit $2"
    for how in order search; do
        extra=""
        [ "$how" = search ] && extra="--solver ilp --placement search"
        s=$(date +%s%N)
        # shellcheck disable=SC2086
        if "$STAGEPART" partition "$1" -s 8 --devices $D --links $L $lim $extra -o "$TMP/pl.json" >/dev/null 2>&1; then
            e=$(date +%s%N)
            python3 -c '
import json, sys
p = json.load(open(sys.argv[1]))
nodes = [s["device_name"].split(".")[0] for s in p["stages"]]
cross = sum(a != b for a, b in zip(nodes, nodes[1:]))
row = [p["model"], sys.argv[2], sys.argv[3], sys.argv[4], "%.3f" % p["bottleneck_ms"], cross,
       "%.1f" % p["schedule"]["iteration_ms"], p["optimal"]]
print("| " + " | ".join(str(x) for x in row) + " |")' \
                "$TMP/pl.json" "$2" "$how" $(( (e - s) / 1000000 ))
        else
            echo "| $(basename "$1" .json) | $2 | $how | - | no plan fits (exit $?) | | | |"
        fi
    done
done

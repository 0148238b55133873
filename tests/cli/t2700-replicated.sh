#!/bin/sh
# t2700-replicated: `partition PROFILE --gpus N` alone, PipeDream's planner: VGG-16 on the
# two-node sample links, its table and plan (replicas adding up to what it uses, each stage's
# share the largest at the bottleneck), the plan simulated again from its file with every
# replica a device, and what it refuses with its exit code.
. "$(dirname "$0")/lib.sh"

P=$SRC/samples/profiles/vgg16.json
L=$SRC/samples/links/two-nodes-8.json

expect_code "VGG-16 on 8 GPUs" 0 "$STAGEPART" partition "$P" --gpus 8 --links "$L" \
    -o "$TMP/plan.json"
expect_stdout_contains "the title says replicated" "stages on 8 GPUs (replicated stages, optimal"
expect_stdout_contains "the share's rule under 1f1b" "time / replicas + all-reduce / M"
expect_stdout_contains "the simulated schedule" "(simulated, every replica a device)"
python3 - "$TMP/plan.json" <<'PY' && pass "plan: replicas add up to gpus, devices in order, bottleneck = largest share" || fail "plan fields"
import json, sys
p = json.load(open(sys.argv[1]))
st = p["stages"]
assert p["gpus"] == sum(s["replicas"] for s in st) <= 8, p["gpus"]
dev = 0
for s in st:
    assert s["device"] == dev, (s["device"], dev)
    dev += s["replicas"]
    assert s["share_ms"] <= p["bottleneck_ms"] + 1e-12
    # flushing: time / r + all-reduce / M, rounded up to a nanosecond
    want = s["time_ms"] / s["replicas"] + s["allreduce_ms"] / p["micro_batches"]
    assert want <= s["share_ms"] + 1e-9 and s["share_ms"] - want < 1.5e-6, (want, s["share_ms"])
    assert (s["allreduce_ms"] > 0) == (s["replicas"] > 1)
assert max(s["share_ms"] for s in st) == p["bottleneck_ms"]
PY
expect_code "simulated again from the plan" 0 "$STAGEPART" simulate "$TMP/plan.json" --json
python3 - "$TMP/plan.json" "$TMP/stdout" <<'PY' && pass "simulate: one device per replica, the plan's iteration" || fail "simulate of a replicated plan"
import json, sys
p, s = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
summary = s.get("summary", s)
assert summary["devices"] == p["gpus"], summary
assert abs(summary["iteration_ms"] - p["schedule"]["iteration_ms"]) < 1e-6
PY
expect_code "equal replicas export as a data-parallel size" 0 "$STAGEPART" export "$TMP/plan.json" \
    --to deepspeed
expect_stdout_contains "the size" "the framework's data-parallel size is 4"
expect_code "7 GPUs: replicas differ per stage" 0 "$STAGEPART" partition "$P" --gpus 7 --links "$L" \
    -o "$TMP/plan7.json"
expect_code "which no framework expresses: exit 4" 4 "$STAGEPART" export "$TMP/plan7.json" \
    --to megatron
expect_stderr_contains "says why" "cannot express replicas per stage"
expect_code "check: the same profile passes" 0 "$STAGEPART" check --plan "$TMP/plan.json" \
    --profile "$P" --links "$L"
expect_stdout_contains "the replicated plan re-evaluated" "predicted iteration"
python3 - "$P" "$TMP/slow.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
for l in p["layers"]:
    if l["name"].startswith("conv1"):
        l["fwd_ms"] *= 3
        l["bwd_ms"] *= 3
json.dump(p, open(sys.argv[2], "w"))
PY
expect_code "check: slower first layers fail it" 1 "$STAGEPART" check --plan "$TMP/plan.json" \
    --profile "$TMP/slow.json" --links "$L"
expect_stdout_contains "the regression is named" "FAIL  regression"
expect_code "check without the links: exit 2" 2 "$STAGEPART" check --plan "$TMP/plan.json" \
    --profile "$P"
expect_stderr_contains "names --links" "give check the --links file"
expect_code "simulated under zb-h1: exit 4" 4 "$STAGEPART" simulate "$TMP/plan.json" --schedule zb-h1
expect_stderr_contains "says which" "simulated under gpipe, 1f1b, pipedream or 2bw, not zb-h1"
expect_code "pipedream: the share without flushes" 0 "$STAGEPART" partition "$P" --gpus 8 \
    --links "$L" --schedule pipedream
expect_stdout_contains "compute and all-reduce summed" "(time + all-reduce) / replicas"
expect_stdout_contains "the ring named" "a ring over the slowest link"

# PipeDream's own VGG-16 profile (tests/data/pipedream-vgg16.json) at 8 machines and 10 GB/s:
# its planner (optimizer_graph_hierarchical.py) splits it into 2 stages, the convolutions up to
# node23 on 7 replicas and the rest on 1, at 89.926 ms a micro-batch (0.0899265 s in its units);
# --replica-cost pipedream reproduces that plan and figure.
PD=$SRC/tests/data/pipedream-vgg16.json
# uniform_links FILE N GBPS: N machines, every link GBPS, no latency (PipeDream's one bandwidth)
uniform_links() {
    python3 - "$1" "$2" "$3" <<'PY'
import json, sys
n, bw = int(sys.argv[2]), float(sys.argv[3])
json.dump({"format": "stagepart-links", "version": 1, "devices": ["m%d" % i for i in range(n)],
           "bandwidth_GBps": [[0 if i == j else bw for j in range(n)] for i in range(n)],
           "latency_us": [[0] * n for _ in range(n)]}, open(sys.argv[1], "w"))
PY
}
# pd_plan_is PLAN REPLICAS FIRST_OF_LAST BOTTLENECK_MS: the replicas per stage ("7,1"), where the
# last stage starts, and the bottleneck (within 1e-3 ms)
pd_plan_is() {
    python3 - "$@" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
st = p["stages"]
assert [s["replicas"] for s in st] == [int(x) for x in sys.argv[2].split(",")], [s["replicas"] for s in st]
assert st[-1]["first_name"].startswith(sys.argv[3] + "."), st[-1]["first_name"]
assert abs(p["bottleneck_ms"] - float(sys.argv[4])) < 1e-3, p["bottleneck_ms"]
PY
}
uniform_links "$TMP/ten.json" 8 10
expect_code "PipeDream's accounting on its VGG-16" 0 "$STAGEPART" partition "$PD" --gpus 8 \
    --links "$TMP/ten.json" --schedule pipedream --replica-cost pipedream -o "$TMP/pd.json"
expect_stdout_contains "its charge named" "PipeDream's planner's charge"
pd_plan_is "$TMP/pd.json" 7,1 node24 89.926460 && pass "2 stages, 7 + 1 replicas, cut before node24, 89.926 ms" || fail "PipeDream's VGG-16 plan"
python3 - "$TMP/pd.json" <<'PY' && pass "recorded as pipedream; the steady state keeps its pace" || fail "PipeDream's VGG-16 plan's schedule"
import json, sys
p = json.load(open(sys.argv[1]))
assert p["replica_cost"] == "pipedream"
# the schedule's steady state keeps the bottleneck's pace: 32 micro-batches, 32 shares
assert abs(p["schedule"]["iteration_ms"] - 32 * p["bottleneck_ms"]) < 1e-3 * p["bottleneck_ms"]
assert 0 < p["schedule"]["efficiency"] <= 1
PY
expect_code "check re-evaluates it under the same accounting" 0 "$STAGEPART" check \
    --plan "$TMP/pd.json" --profile "$PD" --links "$TMP/ten.json" --max-imbalance 1.3
expect_stdout_contains "the same iteration, no regression" "recorded 2877.647 ms: +0.0%"
expect_code "the ring's charge on the same machines" 0 "$STAGEPART" partition "$PD" --gpus 8 \
    --links "$TMP/ten.json" --schedule pipedream --json
python3 - "$TMP/stdout" <<'PY' && pass "the ring: 7 + 1 as well, its all-reduce half PipeDream's" || fail "ring plan"
import json, sys
p = json.load(open(sys.argv[1]))
assert [s["replicas"] for s in p["stages"]] == [7, 1]
assert "replica_cost" not in p
PY
# with its activation term (--activation_compression_ratio 1) at 1 GB/s, PipeDream's planner puts
# the cut before node26 (7 + 1 replicas, 103.833 ms); without it, 5 stages (4 + 1 + 1 + 1 + 1)
uniform_links "$TMP/one.json" 8 1
expect_code "its activation term" 0 "$STAGEPART" partition "$PD" --gpus 8 --links "$TMP/one.json" \
    --schedule pipedream --replica-cost pipedream --activation-ratio 1 -o "$TMP/pd-act.json"
expect_stdout_contains "the term named" "(--activation-ratio, PipeDream's activation term)"
pd_plan_is "$TMP/pd-act.json" 7,1 node26 103.833170 && pass "7 + 1 replicas, cut before node26, 103.833 ms" || fail "the activation term's plan"
if python3 -c 'import json,sys; assert json.load(open(sys.argv[1]))["activation_ratio"] == 1' "$TMP/pd-act.json"; then pass "activation_ratio recorded"; else fail "activation_ratio"; fi
expect_code "check keeps the term" 0 "$STAGEPART" check --plan "$TMP/pd-act.json" --profile "$PD" \
    --links "$TMP/one.json" --max-imbalance 2
expect_stdout_contains "the same iteration" "+0.0%"
expect_code "without it, another plan" 0 "$STAGEPART" partition "$PD" --gpus 8 \
    --links "$TMP/one.json" --schedule pipedream --replica-cost pipedream --json
python3 - "$TMP/stdout" <<'PY' && pass "4 + 1 + 1 + 1 + 1" || fail "the plan without the term"
import json, sys
p = json.load(open(sys.argv[1]))
assert [s["replicas"] for s in p["stages"]] == [4, 1, 1, 1, 1], [s["replicas"] for s in p["stages"]]
PY
expect_code "--activation-ratio with the ring: usage" 2 "$STAGEPART" partition "$PD" --gpus 8 \
    --links "$TMP/one.json" --schedule pipedream --activation-ratio 1
expect_stderr_contains "names --replica-cost pipedream" "use it with --replica-cost pipedream"
expect_code "--activation-ratio with a memory limit: usage" 2 "$STAGEPART" partition "$PD" \
    --gpus 8 --links "$TMP/one.json" --schedule pipedream --replica-cost pipedream \
    --activation-ratio 1 --memory-limit 80GB
expect_stderr_contains "says why" "takes no --memory-limit"
expect_code "PipeDream's accounting under a flushing schedule: usage" 2 "$STAGEPART" partition \
    "$PD" --gpus 8 --links "$TMP/ten.json" --replica-cost pipedream
expect_stderr_contains "says which" "use it with --schedule pipedream or 2bw"
expect_code "--replica-cost without --gpus: usage" 2 "$STAGEPART" partition "$PD" \
    --replica-cost pipedream
expect_code "an unknown charge: usage" 2 "$STAGEPART" partition "$PD" --gpus 8 \
    --links "$TMP/ten.json" --replica-cost overlap
expect_stderr_contains "names the choices" "--replica-cost expects ring or pipedream"
expect_code "--micro-batches is the M of the all-reduce's share" 0 "$STAGEPART" partition "$P" \
    --gpus 8 --links "$L" -m 64 --json
expect_stdout_contains "M = 64" '"micro_batches":	64'
expect_code "without links: exit 2" 2 "$STAGEPART" partition "$P" --gpus 8
expect_stderr_contains "names --links" "--links must describe at least 8 devices"
expect_code "zb-h1 is not built for replicas: exit 4" 4 "$STAGEPART" partition "$P" --gpus 8 \
    --links "$L" --schedule zb-h1
expect_code "--stages with --gpus: usage" 2 "$STAGEPART" partition "$P" --gpus 8 --links "$L" -s 2
expect_code "nothing fits: exit 3" 3 "$STAGEPART" partition "$P" --gpus 8 --links "$L" \
    --memory-limit 100MB
expect_stderr_contains "says why" "each replica holds its whole stage"
test_done

#!/bin/sh
# t2200-devices: devices (speeds, memory), links (send_ms) and --micro-batches auto.
. "$(dirname "$0")/lib.sh"
P=samples/profiles
D=samples/devices/two-speeds-8.json
L=samples/links/two-nodes-8.json
expect_code "partition on two speeds and two nodes" 0 "$STAGEPART" partition $P/llama3-8b.json -s 8 --devices $D --links $L -o "$TMP/plan.json"
read -r sends fast slow <<EOF2
$(python3 -c 'import json,sys; p=json.load(open(sys.argv[1])); s=p["stages"]; print(",".join("%.3f" % x["send_ms"] for x in s), sum(x["layers"] for x in s[:4]), sum(x["layers"] for x in s[4:]))' "$TMP/plan.json")
EOF2
if [ "$sends" = "0.229,0.229,0.229,2.694,0.229,0.229,0.229,0.000" ]; then pass "send_ms: NVLink inside a node, InfiniBand across"; else fail "send_ms" "got $sends"; fi
if [ "$fast" -gt "$slow" ]; then pass "the fast node gets more layers ($fast vs $slow)"; else fail "fast node gets more layers" "$fast vs $slow"; fi
expect_code "the plan simulates with its transfer delays" 0 "$STAGEPART" simulate "$TMP/plan.json"
expect_stdout_contains "no closed form with delays" "ideal"
expect_code "uniform on the same devices" 0 "$STAGEPART" partition $P/llama3-8b.json -s 8 --devices $D --solver uniform
expect_stdout_contains "uniform is 1.74x worse on slow devices" "bottleneck  322.111 ms (stage 7)"

# blocking transfers: added to both stages' times (twice per cut: activation, gradient)
expect_code "blocking transfers" 0 "$STAGEPART" partition $P/llama3-8b.json -s 8 --devices $D --links $L --comm blocking -o "$TMP/blocking.json"
comm=$(python3 -c 'import json,sys; s=json.load(open(sys.argv[1]))["stages"]; print("%.3f %.3f %s" % (s[3]["comm_ms"], s[4]["comm_ms"], all(abs(x["time_ms"]-x["fwd_ms"]-x["bwd_ms"]-x["comm_ms"])<1e-9 for x in s)))' "$TMP/blocking.json")
if [ "$comm" = "5.846 5.846 True" ]; then pass "comm_ms: both sides of the cross-node cut pay 2 x (in + out)"; else fail "comm_ms" "got $comm"; fi
expect_code "blocking plan simulates" 0 "$STAGEPART" simulate "$TMP/blocking.json" --json
busy=$(python3 -c 'import json,sys; print("%.3f" % json.load(open(sys.argv[1]))["stages"][3]["busy_ms"])' "$TMP/stdout")
want=$(python3 -c 'import json,sys; p=json.load(open(sys.argv[1])); print("%.3f" % (p["micro_batches"]*p["stages"][3]["time_ms"]))' "$TMP/blocking.json")
if [ "$busy" = "$want" ]; then pass "blocking transfers occupy the device in the simulation"; else fail "blocking busy" "$busy vs $want"; fi
expect_code "iteration objective" 0 "$STAGEPART" partition $P/llama3-8b.json -s 8 --devices $D --links $L --comm blocking --objective iteration
expect_code "blocking without links warns" 0 "$STAGEPART" partition $P/llama3-8b.json -s 4 --comm blocking
expect_stderr_contains "warning printed" "warning: --comm blocking has no effect without --links"
expect_code "unknown comm" 2 "$STAGEPART" partition $P/llama3-8b.json --comm sometimes

# devices inside the profile
python3 -c 'import json,sys; p=json.load(open(sys.argv[1])); d=json.load(open(sys.argv[2])); p["devices"]=d["devices"]; json.dump(p,open(sys.argv[3],"w"))' $P/llama3-8b.json $D "$TMP/with-devices.json"
expect_code "a profile's own devices" 0 "$STAGEPART" partition "$TMP/with-devices.json" -s 8 -o "$TMP/plan2.json"
stage_times() { python3 -c 'import json,sys; print([s["time_ms"] for s in json.load(open(sys.argv[1]))["stages"]])' "$1"; }
a=$(stage_times "$TMP/plan.json")
b=$(stage_times "$TMP/plan2.json")
if [ "$a" = "$b" ]; then pass "same plan as --devices"; else fail "same plan as --devices" "$a" "$b"; fi

# errors
expect_code "fewer devices than stages" 3 "$STAGEPART" partition $P/llama3-8b.json -s 16 --devices $D
expect_stderr_contains "device count named" "16 stages need 16 devices (stage s runs on device s); the device list has 8"
sed 's/"speed": 0.6/"speed": -1/' $D >"$TMP/bad-devices.json"
expect_code "negative speed" 2 "$STAGEPART" partition $P/llama3-8b.json -s 8 --devices "$TMP/bad-devices.json"
expect_stderr_contains "speed path named" "devices[4].speed: expected a finite number >= 0.001, got -1"
python3 -c 'import json,sys; l=json.load(open(sys.argv[1])); l["bandwidth_GBps"][0][1]=0; l["latency_us"].pop(); json.dump(l,open(sys.argv[2],"w"))' $L "$TMP/bad-links.json"
expect_code "bad links" 2 "$STAGEPART" partition $P/llama3-8b.json -s 8 --links "$TMP/bad-links.json"
expect_stderr_contains "zero bandwidth named" "bandwidth_GBps[0][1]: expected a finite number >= 0.001, got 0"
expect_stderr_contains "short matrix named" "latency_us: expected an array of 8 rows"
expect_code "variance needs equal speeds" 2 "$STAGEPART" partition $P/llama3-8b.json -s 8 --devices $D --objective variance
expect_stderr_contains "variance refusal explained" "--objective variance needs devices of equal speed"
# the solver table says which solvers take speeds: the V-shape ones do not
cat >"$TMP/speeds4.json" <<'JSON'
{"format": "stagepart-devices", "version": 1, "devices": [{"name": "a"}, {"name": "b", "speed": 0.5}, {"name": "c"}, {"name": "d"}]}
JSON
expect_code "V-shape plans refuse speeds" 4 "$STAGEPART" partition $P/llama3-8b.json -s 4 --schedule zbv --devices "$TMP/speeds4.json"
expect_stderr_contains "the solver is named" "the vshape solver (the V-shape DP: device d runs chunks d and 2P-1-d) assumes devices of equal speed"

# --micro-batches auto
expect_code "auto micro-batches" 0 "$STAGEPART" partition $P/equal-64.json -s 8 -m auto
expect_stdout_contains "search printed" "M=62 89.9%, M=63 90.0%"
expect_stdout_contains "smallest M chosen" "schedule    1f1b, 63 micro-batches"
expect_code "auto with a target" 0 "$STAGEPART" partition $P/equal-64.json -s 4 -m auto --target-efficiency 0.8 --json
expect_stdout_contains "search recorded in the plan" '"micro_batch_search":'
expect_code "unreachable target" 3 "$STAGEPART" partition $P/llama3-8b.json -s 8 -m auto
expect_stderr_contains "the cap is explained" "caps the efficiency of any schedule at 85.6%"
expect_code "target without auto" 2 "$STAGEPART" partition $P/equal-64.json -s 8 --target-efficiency 0.9
expect_code "bad target" 2 "$STAGEPART" partition $P/equal-64.json -s 8 -m auto --target-efficiency 1.5
test_done

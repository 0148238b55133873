#!/bin/sh
# t5150-empty-stages: a stage with no layer, as Megatron-LM's layouts allow: read from a layout,
# recorded in a plan, exported back, simulated, gated; made by partition only when asked
# (--allow-empty-stages) and only for more stages than places to cut; refused by every format
# and tool that cannot run one.
. "$(dirname "$0")/lib.sh"
P=samples/profiles
CHECK="python3 tests/tools/schema_check.py"
# a middle empty stage: evaluate says what it costs
expect_code "a layout with an empty segment" 0 "$STAGEPART" evaluate $P/llama3-8b.json \
    --megatron-layout "Et*16||t*16L"
expect_stdout_contains "the empty stage named" "your split: stage 1 holds no layer: 1 of 3 devices idle"
# with virtual stages a device idles only when all of its stages are empty
expect_code "an empty virtual stage" 0 "$STAGEPART" evaluate samples/profiles/llama3-8b.json --megatron-layout "Et*16||t*16|L" -s 2
expect_stdout_contains "no device idles" "your split: virtual stage 1 holds no layer; every device holds layers in another"
expect_code "--json" 0 "$STAGEPART" evaluate $P/llama3-8b.json --megatron-layout "Et*16||t*16L" --json
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["yours"]["empty_stages"] == 1 and d["optimal"]["empty_stages"] == 0, d' \
    "$TMP/stdout" && pass "--json counts the empty stages" || fail "--json empty_stages"
# recorded in a plan, exported back to the same layout, for empty stages anywhere
for layout in "Et*16||t*16L" "|Et*16|t*16L" "Et*16|t*16L|" "Et*8|(|)*3,t*24L" "Et*16|t*16|||L"; do
    expect_code "import-plan '$layout'" 0 "$STAGEPART" import-plan $P/llama3-8b.json \
        --megatron-layout "$layout" -o "$TMP/e.json"
    expect_code "  the plan matches its schema" 0 $CHECK docs/schema/plan.schema.json "$TMP/e.json"
    expect_code "  export" 0 "$STAGEPART" export "$TMP/e.json" --to megatron
    expect_stdout_contains "  the same layout back" "--pipeline-model-parallel-layout \"$layout\""
done
"$STAGEPART" import-plan $P/llama3-8b.json --megatron-layout "Et*16||t*16L" -o "$TMP/e.json" >/dev/null
python3 - "$TMP/e.json" <<'PY' && pass "the empty stage in the plan: 0 layers, null last_layer, no time" || fail "the plan's empty stage"
import json, sys
d = json.load(open(sys.argv[1]))
s = d["stages"]
assert [x["layers"] for x in s] == [17, 0, 18], s
e = s[1]
assert e["first_layer"] == 17 and e["last_layer"] is None and e["first_name"] == "" and e["time_ms"] == 0, e
assert e["memory_bytes"] == 0 and s[2]["first_layer"] == 17, s
# the empty stage passes layers.15's output on: the same bytes cross both its boundaries
PY
"$STAGEPART" export "$TMP/e.json" --to megatron >/dev/null
expect_code "no first/last form with an empty stage" 1 grep -q decoder-first "$TMP/stdout"
expect_code "simulate it" 0 "$STAGEPART" simulate "$TMP/e.json"
expect_code "check it" 0 "$STAGEPART" check --plan "$TMP/e.json" --profile $P/llama3-8b.json \
    --max-imbalance 10 --max-stale 100
expect_stdout_contains "layers matched" "PASS  layers match"
expect_code "the torch schedule CSV" 0 "$STAGEPART" export "$TMP/e.json" --to torch-schedule-csv
for to in deepspeed torchgpipe pippy torchtitan; do
    expect_code "--to $to refuses an empty stage" 2 "$STAGEPART" export "$TMP/e.json" --to $to
    expect_stderr_contains "  says which and why" "stage 1 is empty: of the formats stagepart writes, only Megatron-LM's layout runs"
done
# the plan reader holds an empty stage to its rules
python3 -c 'import json,sys; p=json.load(open(sys.argv[1])); p["stages"][1]["layers"]=2; json.dump(p,open(sys.argv[2],"w"))' "$TMP/e.json" "$TMP/bad1.json"
expect_code "null last_layer with layers 2: exit 2" 2 "$STAGEPART" simulate "$TMP/bad1.json"
expect_stderr_contains "named" "stages[1].layers: expected 0 (last_layer is null: an empty stage)"
python3 -c 'import json,sys; p=json.load(open(sys.argv[1])); p["stages"][0]["layers"]=0; json.dump(p,open(sys.argv[2],"w"))' "$TMP/e.json" "$TMP/bad2.json"
expect_code "layers 0 with a last_layer: exit 2" 2 "$STAGEPART" simulate "$TMP/bad2.json"
expect_stderr_contains "named" "stages[0].layers: expected 17 (last_layer - first_layer + 1), got 0"
# other splits keep every stage filled: torchgpipe's balance and DeepSpeed's parts refuse empties
expect_code "a balance of 0: exit 2" 2 "$STAGEPART" evaluate $P/llama3-8b.json --balance 17,0,17
expect_code "equal parts: exit 2" 2 "$STAGEPART" evaluate $P/llama3-8b.json --parts 0,17,17,34

# partition: never an empty stage unless asked, and then only past the places to cut
expect_code "35 stages of llama3-8b: exit 3" 3 "$STAGEPART" partition $P/llama3-8b.json -s 35
expect_stderr_contains "points to the option" "--allow-empty-stages leaves the others empty"
expect_code "with --allow-empty-stages" 0 "$STAGEPART" partition $P/llama3-8b.json -s 36 \
    --allow-empty-stages --memory-limit 60GB -m 64 -o "$TMP/p36.json"
expect_stderr_contains "says so" "the profile has places to cut for 34 stages: the plan's first 2 stages are empty"
expect_code "34 stages, no option needed" 0 "$STAGEPART" partition $P/llama3-8b.json -s 34 \
    --memory-limit 60GB -m 64 -o "$TMP/p34.json"
python3 - "$TMP/p36.json" "$TMP/p34.json" <<'PY' && pass "the 34 filled stages are the 34-stage optimum, in-flight counts and memory included" || fail "empty stages first"
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:])
sa, sb = a["stages"], b["stages"]
assert len(sa) == 36 and [s["layers"] for s in sa[:2]] == [0, 0], sa[:3]
assert a["optimal"] is True and a["stage_count"] == 36, a["optimal"]
keys = ("first_layer", "last_layer", "time_ms", "inflight_micro_batches", "memory_bytes")
for x, y in zip(sa[2:], sb):
    assert all(x[k] == y[k] for k in keys), (x, y)
assert a["bottleneck_ms"] == b["bottleneck_ms"]
# the empty stages cost nothing but idle devices: the same iteration
assert abs(a["schedule"]["iteration_ms"] - b["schedule"]["iteration_ms"]) < 1e-6, (a["schedule"], b["schedule"])
PY
expect_code "its Megatron layout" 0 "$STAGEPART" export "$TMP/p36.json" --to megatron
expect_stdout_contains "two leading empty segments" '"||E|(t|)*32,L"'
expect_code "the option with enough cuts changes nothing" 0 "$STAGEPART" partition $P/llama3-8b.json \
    -s 4 --allow-empty-stages --json
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert all(s["layers"] > 0 for s in d["stages"]), d["stages"]' \
    "$TMP/stdout" && pass "no empty stage when every stage can hold layers" || fail "empty stage without need"
expect_code "with chunks: exit 4" 4 "$STAGEPART" partition $P/llama3-8b.json -s 36 --chunks 2 \
    --solver uniform --allow-empty-stages
expect_stderr_contains "says why" "empty stages are placed on one chunk per device"
expect_stderr_contains "names the solver that can" "the default solver places empty interleaved chunks"
expect_code "the default solver places empty chunks" 0 "$STAGEPART" partition $P/llama3-8b.json -s 18 --chunks 2 \
    --allow-empty-stages --json -o "$TMP/empty-chunks.json"
got=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["optimal"], sum(s["layers"] == 0 for s in d["stages"]))' "$TMP/empty-chunks.json")
[ "$got" = "True 2" ] && pass "36 chunks for 35 layers: proven optimal, 2 empty chunks where they balance the 18 devices best" || fail "empty chunks" "$got"

# the runtime runs stages that hold layers
"$STAGEPART" profile tests/data/tiny-gpt-model.json --iters 1 --warmup 0 -o "$TMP/tiny.json" >/dev/null 2>&1
expect_code "a tiny model's layout with an empty segment" 0 "$STAGEPART" import-plan "$TMP/tiny.json" \
    --megatron-layout "Ett||ttL" -o "$TMP/tiny-plan.json"
expect_code "run refuses it: exit 4" 4 "$STAGEPART" run "$TMP/tiny-plan.json" \
    --model tests/data/tiny-gpt-model.json --steps 1
expect_stderr_contains "says why" "stage 1 is empty: this runtime runs stages that hold layers"
test_done

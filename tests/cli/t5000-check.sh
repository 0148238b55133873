#!/bin/sh
# t5000-check: the CI gate: pass, each failing criterion, layer mismatches named, JUnit, GitHub
# annotations, JSON, run reports.
. "$(dirname "$0")/lib.sh"
P=samples/profiles
"$STAGEPART" partition $P/llama3-8b.json -s 4 -o "$TMP/plan.json" >/dev/null
expect_code "a current plan passes" 0 "$STAGEPART" check --plan "$TMP/plan.json" --profile $P/llama3-8b.json
expect_stdout_contains "one line per criterion" "PASS  imbalance          imbalance 1.051 <= 1.100"
expect_stdout_contains "the optimum beside it" "the optimal plan of 4 stages: 1.051)"
expect_stdout_contains "summary line" "stagepart check: 4 passed, 0 failed"
# the optimal plan under a gate no plan of 4 stages can meet: the gate fails, not the plan (3)
expect_code "a gate no plan can meet: exit 3" 3 "$STAGEPART" check --plan "$TMP/plan.json" --profile $P/llama3-8b.json --max-imbalance 1.02
expect_stdout_contains "the failing number is shown" "FAIL  imbalance          imbalance 1.051 > 1.020"
expect_stdout_contains "no plan meets it" "no plan of 4 stages meets this gate, the optimal one reaches 1.051: raise --max-imbalance or change the stage count"
expect_stdout_contains "the summary says why 3" "stagepart check: 3 passed, 1 failed (only gates no plan of this stage count can meet: exit 3)"
# a plan off balance where the optimum passes: the plan failed (1), and says what reaches
"$STAGEPART" import-plan $P/llama3-8b.json --balance 14,8,8,4 -o "$TMP/off.json" >/dev/null
expect_code "an off-balance plan: exit 1" 1 "$STAGEPART" check --plan "$TMP/off.json" --profile $P/llama3-8b.json --max-stale 1
expect_stdout_contains "the optimum that passes" "FAIL  imbalance          imbalance 1.519 > 1.100 (bottleneck 402.129 ms on stage 0, mean 264.813 ms): the plan is off balance, the optimal plan of 4 stages reaches 1.051"
expect_code "the same in JSON" 1 "$STAGEPART" check --plan "$TMP/off.json" --profile $P/llama3-8b.json --max-stale 1 --json
python3 - "$TMP/stdout" <<'PY' && pass "JSON: best, attainable, gate_unattainable" || fail "JSON: best, attainable"
import json, sys
d = json.load(open(sys.argv[1]))
c = [c for c in d["criteria"] if c["name"] == "imbalance"][0]
assert abs(c["best"] - 1.051) < 1e-3 and c["attainable"] is True and d["gate_unattainable"] is False, d
PY
# an even split's plan (--solver uniform) is compared with the optimal plan, not with another
# even split (its staleness read 0.0% and its imbalance would have been called the best)
"$STAGEPART" partition $P/llama3-8b.json -s 4 --solver uniform -o "$TMP/uniform.json" >/dev/null
expect_code "an even split: exit 1" 1 "$STAGEPART" check --plan "$TMP/uniform.json" --profile $P/llama3-8b.json
expect_stdout_contains "its imbalance against the optimum" "the plan is off balance, the optimal plan of 4 stages reaches 1.051"
expect_stdout_contains "its staleness against the optimum" "FAIL  staleness          a new plan would be 11.6% faster (5210.761 ms against 5813.677 ms)"
# under a gate no plan meets, what the plan could do better is the staleness criterion's to say
expect_code "an unmeetable gate and a stale plan: exit 1" 1 "$STAGEPART" check --plan "$TMP/off.json" --profile $P/llama3-8b.json --max-imbalance 1.02
expect_code "an unmeetable gate alone: exit 3" 3 "$STAGEPART" check --plan "$TMP/off.json" --profile $P/llama3-8b.json --max-stale 1 --max-imbalance 1.02

# the model changed: the LM head got 3x slower
python3 -c 'import json,sys; p=json.load(open(sys.argv[1])); h=[l for l in p["layers"] if l["name"]=="lm_head"][0]; h["fwd_ms"]*=3; h["bwd_ms"]*=3; h["wgrad_ms"]*=3; json.dump(p,open(sys.argv[2],"w"))' $P/llama3-8b.json "$TMP/slower.json"
expect_code "a regression fails" 1 "$STAGEPART" check --plan "$TMP/plan.json" --profile "$TMP/slower.json" --max-imbalance 2
expect_stdout_contains "regression named with numbers" "FAIL  regression         predicted iteration"
expect_code "a loose regression limit passes it" 0 "$STAGEPART" check --plan "$TMP/plan.json" --profile "$TMP/slower.json" --max-imbalance 2 --max-regression 1 --max-stale 1

# staleness: a committed even split
"$STAGEPART" import-plan $P/llama3-8b.json --balance 9,8,8,9 -o "$TMP/even.json" >/dev/null
expect_code "a stale plan fails" 1 "$STAGEPART" check --plan "$TMP/even.json" --profile $P/llama3-8b.json --max-imbalance 2
expect_stdout_contains "staleness says what to do" "run stagepart partition again and commit the plan"

# layers added, removed, renamed
python3 -c 'import json,sys; p=json.load(open(sys.argv[1])); p["layers"][5]["name"]="layers.4b"; p["layers"].insert(10, dict(p["layers"][10], name="layers.extra")); json.dump(p,open(sys.argv[2],"w"))' $P/llama3-8b.json "$TMP/changed.json"
expect_code "changed layers fail" 1 "$STAGEPART" check --plan "$TMP/plan.json" --profile "$TMP/changed.json"
expect_stdout_contains "renamed layer named" "layer 'layers.4' of the plan is not in the profile (removed or renamed)"
expect_stdout_contains "added layer named" "layer 'layers.extra' of the profile is not in the plan (added or renamed)"

# JUnit, GitHub annotations, JSON
expect_code "junit" 1 "$STAGEPART" check --plan "$TMP/even.json" --profile $P/llama3-8b.json --junit "$TMP/check.xml"
if grep -q '<testsuite name="stagepart check" tests="4" failures="2"' "$TMP/check.xml" && python3 -c 'import sys,xml.dom.minidom; xml.dom.minidom.parse(sys.argv[1])' "$TMP/check.xml"; then pass "junit XML parses and counts failures"; else fail "junit XML"; fi
GITHUB_ACTIONS=true "$STAGEPART" check --plan "$TMP/even.json" --profile $P/llama3-8b.json >"$TMP/stdout" 2>"$TMP/stderr"
expect_stdout_contains "github annotation" "::error title=stagepart check: imbalance::imbalance 1.197 > 1.100"
expect_code "json" 1 "$STAGEPART" check --plan "$TMP/even.json" --profile $P/llama3-8b.json --json
if python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["format"]=="stagepart-check" and d["passed"] is False and [c["name"] for c in d["criteria"] if not c["passed"]]==["imbalance","staleness"]' "$TMP/stdout"; then pass "json result"; else fail "json result"; fi

# a layer name with a tab, a quote, a newline and markup: the JSON and the JUnit XML stay valid
python3 -c 'import json,sys; p=json.load(open(sys.argv[1])); p["layers"][5]["name"]="layers.4\t\"x\"\n<&>"; json.dump(p,open(sys.argv[2],"w"))' $P/llama3-8b.json "$TMP/odd.json"
expect_code "odd name: json" 1 "$STAGEPART" check --plan "$TMP/plan.json" --profile "$TMP/odd.json" --json --junit "$TMP/odd.xml"
if python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); m=[c for c in d["criteria"] if c["name"]=="layers match"][0]["message"]; assert "layers.4\t\"x\"\n<&>" in m, m' "$TMP/stdout"; then pass "odd name: valid JSON, name intact"; else fail "odd name: json" "$(head -c 600 "$TMP/stdout")"; fi
if python3 -c 'import sys,xml.dom.minidom; d=xml.dom.minidom.parse(sys.argv[1]); f=d.getElementsByTagName("failure")[0].getAttribute("message"); assert "layers.4\t\"x\"\n<&>" in f, f' "$TMP/odd.xml"; then pass "odd name: valid JUnit, name intact"; else fail "odd name: junit" "$(head -c 600 "$TMP/odd.xml")"; fi

# run report
expect_code "run report gated" 0 "$STAGEPART" check --plan "$TMP/plan.json" --profile $P/llama3-8b.json --report tests/data/run-report.json
expect_stdout_contains "prediction error shown" "PASS  prediction error   measured iteration 5400.000 ms, predicted 5210.761 ms: +3.6%"
expect_code "prediction error limit" 1 "$STAGEPART" check --plan "$TMP/plan.json" --profile $P/llama3-8b.json --report tests/data/run-report.json --max-prediction-error 0.02
expect_code "bad report" 2 "$STAGEPART" check --plan "$TMP/plan.json" --profile $P/llama3-8b.json --report "$TMP/plan.json"
expect_stderr_contains "bad report named" 'format: expected "stagepart-run-report"'
# a plan made for devices and links is re-evaluated on the same ones, else refused
D=samples/devices/two-speeds-8.json L=samples/links/two-nodes-8.json
"$STAGEPART" partition $P/llama3-8b.json -s 8 --devices $D --links $L --comm blocking -o "$TMP/hetero.json" >/dev/null
expect_code "devices and links given" 1 "$STAGEPART" check --plan "$TMP/hetero.json" --profile $P/llama3-8b.json --devices $D --links $L
expect_stdout_contains "same prediction on the same devices" "PASS  regression         predicted iteration 6975.896 ms, recorded 6975.896 ms: +0.0%"
expect_code "devices missing" 2 "$STAGEPART" check --plan "$TMP/hetero.json" --profile $P/llama3-8b.json --links $L
expect_stderr_contains "devices asked for" "hetero.json was made for named devices (stage 0 on 'node0.gpu0'); give check the same --devices file so its stage times compare"
expect_code "links missing" 2 "$STAGEPART" check --plan "$TMP/hetero.json" --profile $P/llama3-8b.json --devices $D
expect_stderr_contains "links asked for" "hetero.json was made with links ("
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); d["devices"].reverse(); json.dump(d,open(sys.argv[2],"w"))' $D "$TMP/reversed.json"
expect_code "other devices" 2 "$STAGEPART" check --plan "$TMP/hetero.json" --profile $P/llama3-8b.json --devices "$TMP/reversed.json" --links $L
expect_stderr_contains "the mismatch is named" "hetero.json has stage 0 on device 0, 'node0.gpu0'; the devices given have 'node1.gpu3' there"
# a searched placement: each stage re-evaluated on the device the plan chose, the fresh plan
# searches again
"$STAGEPART" partition $P/gpt3-2.7b.json -s 8 --solver ilp --devices $D --links $L --placement search --memory-limit 12GB -o "$TMP/placed.json" >/dev/null
expect_code "a placed plan checked" 1 "$STAGEPART" check --plan "$TMP/placed.json" --profile $P/gpt3-2.7b.json --devices $D --links $L
expect_stdout_contains "placed: same prediction" "PASS  regression         predicted iteration 585.743 ms, recorded 585.743 ms: +0.0%"
expect_stdout_contains "placed: the fresh plan searches too" "PASS  staleness          a new plan would be 0.0% faster"
expect_code "missing --plan" 2 "$STAGEPART" check --profile $P/llama3-8b.json
expect_stderr_contains "the plan is named missing" "missing PLAN"
# the files as every command takes them, the flags kept: the same check either way
"$STAGEPART" check --plan "$TMP/plan.json" --profile $P/llama3-8b.json --json >"$TMP/named.json"; rc_named=$?
expect_code "check PLAN PROFILE" "$rc_named" "$STAGEPART" check "$TMP/plan.json" $P/llama3-8b.json --json
if "$JSON_DIFF" "$TMP/named.json" "$TMP/stdout" >/dev/null; then pass "positional and named: the same result"; else fail "positional and named: the same result"; fi
expect_code "check --plan PLAN PROFILE" "$rc_named" "$STAGEPART" check --plan "$TMP/plan.json" $P/llama3-8b.json --json
expect_code "a third file" 2 "$STAGEPART" check "$TMP/plan.json" $P/llama3-8b.json extra.json
expect_stderr_contains "the third file is named" "unexpected argument 'extra.json': the plan and the profile are given"
expect_code "no files" 2 "$STAGEPART" check
expect_stderr_contains "both are named missing" "missing PLAN and PROFILE"
expect_code "bad limit" 2 "$STAGEPART" check --plan "$TMP/plan.json" --profile $P/llama3-8b.json --max-imbalance 0.5
test_done

#!/bin/sh
# t2000-partition: the partition command on samples and on bad input.
. "$(dirname "$0")/lib.sh"
P=samples/profiles

for f in "$P"/*.json; do
    expect_code "partition $f" 0 "$STAGEPART" partition "$f" --stages 4
    expect_stdout_contains "$f: table has the bottleneck line" "bottleneck  "
    expect_stdout_contains "$f: table compares with an even split" "even split"
done
expect_code "llama 8 stages json" 0 "$STAGEPART" partition $P/llama3-8b.json -s 8 --json
expect_stdout_contains "json on stdout" '"format":	"stagepart-plan"'
expect_stdout_contains "plan records the command" '"command":	"stagepart partition samples/profiles/llama3-8b.json -s 8 --json"'
cp "$TMP/stdout" "$TMP/plan8.json"
expect_code "json output parses" 0 "$JSON_DIFF" "$TMP/plan8.json" "$TMP/plan8.json"
# numbers as they read: at most 15 significant digits (no 4744.463187000003), no -0
if python3 - "$TMP/plan8.json" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
nums = re.findall(r'(?<=[\s:\[,])-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?(?=[\s,\]}])', text)
long = [n for n in nums if len(re.sub(r'[-.]|[eE].*$', '', n).lstrip('0')) > 15]
assert nums and not long and '-0,' not in text and '-0\n' not in text, long[:5]
PY
then pass "plan JSON: numbers at 15 digits at most"; else fail "plan JSON: numbers at 15 digits at most"; fi

# -o writes atomically and replaces an existing file
echo "old" >"$TMP/plan.json"
expect_code "write plan" 0 "$STAGEPART" partition $P/llama3-8b.json -s 4 -o "$TMP/plan.json"
expect_stdout_contains "table says where the plan went" "wrote       $TMP/plan.json"
expect_code "written plan is JSON" 0 "$JSON_DIFF" "$TMP/plan.json" "$TMP/plan.json"
if grep -q '"stagepart-plan"' "$TMP/plan.json"; then pass "plan replaced the old file"; else fail "plan replaced the old file"; fi
cp "$TMP/plan.json" "$TMP/before.json"
mkdir -p "$TMP/dir/inner" && touch "$TMP/dir/inner/x"
expect_code "unwritable output" 2 "$STAGEPART" partition $P/llama3-8b.json -s 4 -o "$TMP/dir/inner"
expect_stderr_contains "unwritable output is named" "cannot write '$TMP/dir/inner': it is a directory"
if [ -f "$TMP/dir/inner/x" ] && [ -z "$(ls "$TMP/dir" | grep tmp)" ]; then pass "failed write leaves no trace"; else fail "failed write leaves no trace"; fi
expect_code "output into a missing folder" 2 "$STAGEPART" partition $P/llama3-8b.json -o "$TMP/nope/plan.json"
# output is the input: refused (see the end of this file for every command)
cp $P/bert-large.json "$TMP/same.json"
expect_code "output over its own input" 2 "$STAGEPART" partition "$TMP/same.json" -o "$TMP/same.json"
if grep -q '"stagepart-profile"' "$TMP/same.json"; then pass "input kept"; else fail "input kept"; fi

# bad input: exit 2, file and JSON path named
printf '{"format": "stagepart-profile", "version": 1, "layers": [' >"$TMP/trunc.json"
expect_code "truncated JSON" 2 "$STAGEPART" partition "$TMP/trunc.json"
expect_stderr_contains "truncated JSON: file and position" "$TMP/trunc.json:1:"
cat >"$TMP/types.json" <<'JSON'
{"format": "stagepart-profile", "version": 1, "model": "m", "micro_batch_size": 1,
 "layers": [{"name": "a", "fwd_ms": 1, "bwd_ms": 2},
            {"name": "b", "fwd_ms": "abc", "bwd_ms": -3},
            {"name": "a", "fwd_ms": 1, "bwd_ms": 1e999}]}
JSON
expect_code "wrong types" 2 "$STAGEPART" partition "$TMP/types.json"
expect_stderr_contains "wrong type is explained" "$TMP/types.json: layers[1].fwd_ms: expected a finite number >= 0, got \"abc\""
expect_stderr_contains "negative is explained" "layers[1].bwd_ms: expected a finite number >= 0, got -3"
expect_stderr_contains "infinity is explained" "layers[2].bwd_ms: expected a finite number >= 0, got a number too large to represent"
expect_code "json mode errors are JSON" 2 "$STAGEPART" partition "$TMP/types.json" --json
expect_stdout_contains "json error has a code" '"code":	"SP_ERR_SCHEMA"'
expect_code "missing file" 2 "$STAGEPART" partition "$TMP/none.json"
expect_stderr_contains "missing file is named" "cannot open '$TMP/none.json': No such file or directory"
echo '{"format": "stagepart-plan", "version": 1}' >"$TMP/plan-not-profile.json"
expect_code "a plan is not a profile" 2 "$STAGEPART" partition "$TMP/plan-not-profile.json"
expect_stderr_contains "wrong format is named" 'format: expected "stagepart-profile", got "stagepart-plan"'

# infeasible: exit 3 with the reason
expect_code "more stages than layers" 3 "$STAGEPART" partition $P/resnet50.json --stages 20
expect_stderr_contains "stage count is explained" "cannot cut 19 layers into 20 non-empty stages"
expect_code "memory limit too small" 3 "$STAGEPART" partition $P/llama3-8b.json -s 4 --memory-limit 20GB
expect_stderr_contains "memory: how far it gets" "no split into 4 stages fits the memory limit of 20 GB"
expect_code "a layer that fits nowhere" 3 "$STAGEPART" partition $P/llama3-8b.json -s 4 --memory-limit 5GB
expect_stderr_contains "memory: the layer is named" "layer 'embedding' alone needs"
expect_code "memory limit fits" 0 "$STAGEPART" partition $P/llama3-8b.json -s 8 --memory-limit 80GB
expect_stdout_contains "memory limit is reported" "every stage within the limit of 80 GB"
# an output that is an input is refused before anything is written, in every command
cp $P/bert-large.json "$TMP/in.json"
cp "$TMP/in.json" "$TMP/keep.json"
expect_code "partition -o the profile" 2 "$STAGEPART" partition "$TMP/in.json" -s 2 -o "$TMP/./in.json"
expect_stderr_contains "names both" "is the input $TMP/in.json; stagepart does not overwrite its inputs"
ln -s in.json "$TMP/in-link.json"
expect_code "an input symlink to the output" 2 "$STAGEPART" partition "$TMP/in-link.json" -s 2 -o "$TMP/in.json"
# an output link is written where it points (t8100): pointing at the input, it is refused
expect_code "an output symlink to the input is refused" 2 "$STAGEPART" partition "$TMP/in.json" -s 2 -o "$TMP/in-link.json"
if cmp -s "$TMP/in.json" "$TMP/keep.json" && [ -L "$TMP/in-link.json" ]; then pass "the profile is intact"; else fail "the profile is intact"; fi
"$STAGEPART" partition "$TMP/in.json" -s 2 -o "$TMP/plan.json" >/dev/null
cp "$TMP/plan.json" "$TMP/plan-keep.json"
expect_code "simulate --svg the plan" 2 "$STAGEPART" simulate "$TMP/plan.json" --svg "$TMP/plan.json"
expect_code "simulate --trace the plan" 2 "$STAGEPART" simulate "$TMP/plan.json" --trace "$TMP/plan.json"
expect_code "export -o the plan" 2 "$STAGEPART" export "$TMP/plan.json" --to megatron -o "$TMP/plan.json"
expect_code "check --junit the profile" 2 "$STAGEPART" check --plan "$TMP/plan.json" --profile "$TMP/in.json" --junit "$TMP/in.json"
expect_code "import-plan -o the profile" 2 "$STAGEPART" import-plan "$TMP/in.json" --balance 10,17 -o "$TMP/in.json"
if cmp -s "$TMP/in.json" "$TMP/keep.json" && cmp -s "$TMP/plan.json" "$TMP/plan-keep.json"; then pass "inputs intact after every refusal"; else fail "inputs intact after every refusal"; fi
# a profile that does not record its micro-batch size (PipeDream's GNMT, Piper's BERT): unknown
cat >"$TMP/no-mbs.json" <<'JSON'
{"format": "stagepart-profile", "version": 1, "model": "gnmt",
 "layers": [{"name": "a", "fwd_ms": 1, "bwd_ms": 2}, {"name": "b", "fwd_ms": 2, "bwd_ms": 3}]}
JSON
expect_code "no micro_batch_size" 0 "$STAGEPART" partition "$TMP/no-mbs.json" -s 2
sed 's/"gnmt",/"gnmt", "micro_batch_size": null,/' "$TMP/no-mbs.json" >"$TMP/null-mbs.json"
expect_code "micro_batch_size null" 0 "$STAGEPART" partition "$TMP/null-mbs.json" -s 2
expect_code "it matches the schema" 0 python3 tests/tools/schema_check.py docs/schema/profile.schema.json "$TMP/no-mbs.json" "$TMP/null-mbs.json"
# a memory limit on a profile without saved_bytes: only resident memory can be checked, and
# the table, the plan and stderr say so (it read "every stage within the limit" before)
python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))
for l in d["layers"]: l.pop("saved_bytes", None)
json.dump(d, open(sys.argv[2], "w"))' $P/llama3-8b.json "$TMP/nosaved.json"
expect_code "no saved_bytes, a limit" 0 "$STAGEPART" partition "$TMP/nosaved.json" -s 8 --memory-limit 80GB -o "$TMP/nosaved-plan.json"
expect_stdout_contains "the table says activations were not checked" "memory      every stage's resident memory (parameters, memory_bytes) within the limit of 80 GB; activations NOT checked: the profile records no saved_bytes"
expect_stderr_contains "stderr says it" "the profile's layers record no saved_bytes: the memory limits were checked against resident memory only"
if grep -q '"memory_saved_unknown":[[:space:]]*true' "$TMP/nosaved-plan.json"; then pass "the plan says it"; else fail "the plan says it"; fi
expect_code "the plan reads back" 0 "$STAGEPART" simulate "$TMP/nosaved-plan.json"
expect_code "with saved_bytes, a limit" 0 "$STAGEPART" partition $P/llama3-8b.json -s 8 --memory-limit 80GB
expect_stdout_contains "the whole memory checked" "memory      every stage within the limit of 80 GB"
expect_empty_stderr() { if [ ! -s "$TMP/stderr" ]; then pass "$1"; else fail "$1" "stderr: $(head -c 200 "$TMP/stderr")"; fi; }
expect_empty_stderr "no warning"
test_done

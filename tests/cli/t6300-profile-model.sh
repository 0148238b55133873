#!/bin/sh
# t6300-profile-model: `stagepart profile MODEL` runs a built-in model on the CPU and writes a
# profile the partitioner takes; bad models and options exit 2, --backend cuda without a GPU
# exits 4 (a stand-in for the GPU program checks what it is given), Ctrl-C
# writes nothing and leaves an existing profile alone.
. "$(dirname "$0")/lib.sh"
CHECK="python3 tests/tools/schema_check.py"
MODEL=tests/data/tiny-gpt-model.json
expect_code "profile a model" 0 "$STAGEPART" profile $MODEL --iters 3 -o "$TMP/p.json"
expect_stdout_contains "the table" "layers.3       transformer"
expect_stdout_contains "repeatability" "repeatability: coefficient of variation median"
expect_stdout_contains "where it went" "profile written to $TMP/p.json"
expect_code "the profile matches its schema" 0 $CHECK docs/schema/profile.schema.json "$TMP/p.json"
python3 - "$TMP/p.json" <<'PY' && pass "the profile: layers, times, exact bytes, spread" || fail "the profile"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["model"] == "tiny-gpt" and d["micro_batch_size"] == 2, d
names = [l["name"] for l in d["layers"]]
assert names == ["embedding", "layers.0", "layers.1", "layers.2", "layers.3", "ln_f", "lm_head"], names
for l in d["layers"]:
    assert l["fwd_ms"] > 0 and l["bwd_ms"] > 0 and 0 <= l["wgrad_ms"] <= l["bwd_ms"], l
    assert l["measured"]["samples"] == 3, l
B, S, H = 2, 32, 64
t = d["layers"][1]
assert t["kind"] == "transformer" and t["activation_bytes"] == 4 * B * S * H, t
assert t["param_bytes"] == 4 * (12 * H * H + 13 * H), t
assert t["memory_bytes"] == 2 * t["param_bytes"], t
m = d["measurement"]
assert m["backend"] == "cpu" and m["iterations"] == 3 and m["seq_len"] == 32, m
PY
expect_code "partition takes it" 0 "$STAGEPART" partition "$TMP/p.json" -s 2
# mtp_layers: a multi-token prediction layer after the blocks, before the final norm, with the
# norm, the two halves of eh_proj and one block's parameters; Megatron's layout has it as m
expect_code "a model with an MTP layer" 0 "$STAGEPART" profile tests/data/tiny-llama-mtp-model.json \
    --iters 1 --warmup 0 -o "$TMP/mtp.json"
python3 - "$TMP/mtp.json" <<'PY' && pass "the MTP layer: place, kind, parameters, saved bytes" || fail "the MTP layer"
import json, sys
d = json.load(open(sys.argv[1]))
names = [(l["name"], l["kind"]) for l in d["layers"]]
assert names == [("embedding", "embedding"), ("layers.0", "transformer"), ("layers.1", "transformer"),
                 ("layers.2", "transformer"), ("mtp.0", "mtp"), ("norm", "norm"), ("lm_head", "head")], names
B, S, H, F = 2, 16, 64, 128
block = 4 * H * H + 3 * H * F + 2 * H          # attention, SwiGLU, two rmsnorm gains
mtp = d["layers"][4]
assert d["layers"][1]["param_bytes"] == 4 * block, d["layers"][1]
assert mtp["param_bytes"] == 4 * (block + H + 2 * H * H), mtp
# what it keeps for its backward: the block's, plus the norm's input and statistics and both
# projections' inputs
assert mtp["saved_bytes"] > d["layers"][1]["saved_bytes"] + 4 * 3 * B * S * H, mtp
assert mtp["fwd_ms"] > 0 and mtp["bwd_ms"] > 0, mtp
PY
# the cut must not follow timing noise (a busy machine moved it between norm and lm_head, inside
# Megatron's output group, and the export refused): the profile's structure and bytes as
# measured, its times set, so the plan is known: embedding + layers.0-1 | layers.2 .. lm_head
python3 - "$TMP/mtp.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
ms = {"embedding": 1, "mtp.0": 10, "norm": 1, "lm_head": 5}
for l in d["layers"]:
    l["fwd_ms"] = ms.get(l["name"], 10) / 3
    l["bwd_ms"] = 2 * l["fwd_ms"]
    l["wgrad_ms"] = l["fwd_ms"]
json.dump(d, open(sys.argv[1], "w"))
PY
expect_code "partition it" 0 "$STAGEPART" partition "$TMP/mtp.json" -s 2 -o "$TMP/mtp-plan.json"
expect_code "export it to Megatron" 0 "$STAGEPART" export "$TMP/mtp-plan.json" --to megatron
# the layout must be the plan's, m where the plan put it, and standalone MTP said when it is on
# rank 0; the plan is the one the set times give
python3 - "$TMP/mtp-plan.json" "$TMP/stdout" <<'PY' && pass "the layout is the plan's, with m and --mtp-num-layers" || fail "the MTP layout"
import json, sys
plan = json.load(open(sys.argv[1]))
assert [s["first_layer"] for s in plan["stages"]] == [0, 3], plan["stages"]
out = open(sys.argv[2]).read()
kinds, last = plan["layer_kinds"], len(plan["layer_kinds"]) - 1
segments = []  # E with the first layer, L with the last, a t or m per block or MTP layer
for st in plan["stages"]:
    a, b = st["first_layer"], st["last_layer"]
    inner = "".join({"transformer": "t", "mtp": "m"}.get(k, "") for k in kinds[a:b + 1])
    segments.append(("E" if a == 0 else "") + inner + ("L" if b == last else ""))
layout = "|".join(segments)
assert ('--pipeline-model-parallel-layout "%s" --mtp-num-layers 1\n' % layout) in out, (layout, out)
rank = next(i for i, seg in enumerate(segments) if "m" in seg)
standalone = "# standalone MTP: the MTP layers run on rank 0, not on the last rank with the loss"
assert (standalone in out) == (rank == 0), (rank, out)
PY
sed 's/"llama"/"bert"/' tests/data/tiny-llama-mtp-model.json >"$TMP/bert-mtp.json"
expect_code "bert with mtp_layers: exit 2" 2 "$STAGEPART" profile "$TMP/bert-mtp.json"
expect_stderr_contains "says why" "bert-mtp.json: preset.mtp_layers: expected 0 for a bert model"
expect_code "stdout without -o" 0 "$STAGEPART" profile $MODEL --iters 1 --warmup 0
python3 -c 'import json, sys; assert json.load(sys.stdin)["format"] == "stagepart-profile"' \
    <"$TMP/stdout" && pass "stdout is the profile" || fail "stdout is the profile"
expect_code "sizes from the command line" 0 "$STAGEPART" profile $MODEL --iters 1 --warmup 0 \
    --micro-batch-size 3 --seq-len 16 --name renamed -o "$TMP/p2.json"
python3 - "$TMP/p2.json" <<'PY' && pass "--micro-batch-size, --seq-len, --name" || fail "sizes"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["model"] == "renamed" and d["micro_batch_size"] == 3, d
assert d["layers"][1]["activation_bytes"] == 4 * 3 * 16 * 64, d["layers"][1]
PY
expect_code "a sequence beyond the position table: exit 2" 2 "$STAGEPART" profile $MODEL --seq-len 65
expect_stderr_contains "says why" "sequence length 65 exceeds the embedding's max_seq_len (64)"
# --backend cuda runs stagepart-model-cuda under the collector; a stand-in program here (the real
# one on a GPU: tests/cuda, scripts/gpu-check.sh)
expect_code "--backend cuda, no GPU executor: exit 4" 4 \
    env STAGEPART_MODEL_CUDA="$TMP/none" "$STAGEPART" profile $MODEL --backend cuda
expect_stderr_contains "says why" "STAGEPART_MODEL_CUDA names no readable file"
printf '#!/bin/sh\necho "$@" >"%s/args"\nexit ${FAKE_EXIT:-77}\n' "$TMP" >"$TMP/fake-gpu"
chmod +x "$TMP/fake-gpu"
export STAGEPART_MODEL_CUDA="$TMP/fake-gpu" STAGEPART_INJECT_LIB=/dev/null
expect_code "--backend cuda, no device: exit 4" 4 "$STAGEPART" profile $MODEL --backend cuda \
    --warmup 2 --iters 4 --micro-batch-size 3 -o "$TMP/gpu.json"
expect_stderr_contains "says why" "found no CUDA device: no profile written"
grep -q -- "tiny-gpt-model.json --micro-batch-size 3 --steps 6 --seed 1 --seq-len 32" "$TMP/args" &&
    pass "the program gets the model, sizes and warm-up + timed steps" || fail "$(cat "$TMP/args")"
expect_code "--sms: the partition passed on" 4 "$STAGEPART" profile $MODEL --backend cuda --sms 64
grep -q -- "--seq-len 32 --sms 64" "$TMP/args" && pass "the program gets --sms 64" || fail "$(cat "$TMP/args")"
expect_code "--sms on the CPU: exit 2" 2 "$STAGEPART" profile $MODEL --sms 64
expect_stderr_contains "says why" "--sms runs MODEL on a partition of a GPU's SMs: with --backend cuda"
# a profile measured on a partition (measurement.sms) makes plans that say so
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); d.setdefault("measurement", {})["sms"]=64; json.dump(d, open(sys.argv[2], "w"))' \
    "$TMP/p.json" "$TMP/p64.json"
expect_code "partition a --sms profile" 0 "$STAGEPART" partition "$TMP/p64.json" -s 2 -o "$TMP/plan64.json"
python3 -c 'import json,sys; assert json.load(open(sys.argv[1]))["profile_sms"] == 64' "$TMP/plan64.json" &&
    pass "the plan records profile_sms" || fail "profile_sms"
expect_code "  and reads it back" 0 "$STAGEPART" simulate "$TMP/plan64.json"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); d["measurement"]["sms"]=0; json.dump(d, open(sys.argv[2], "w"))' \
    "$TMP/p64.json" "$TMP/p0.json"
expect_code "measurement.sms 0: exit 2" 2 "$STAGEPART" partition "$TMP/p0.json" -s 2
expect_stderr_contains "named" "measurement.sms"
expect_code "--backend cuda, the program fails: exit 1" 1 env FAKE_EXIT=3 "$STAGEPART" profile \
    $MODEL --backend cuda -o "$TMP/gpu.json"
[ ! -e "$TMP/gpu.json" ] && pass "no profile written" || fail "a profile after a failure"
expect_code "--backend cuda with --core: exit 2" 2 "$STAGEPART" profile $MODEL --backend cuda \
    --core 0
unset STAGEPART_MODEL_CUDA STAGEPART_INJECT_LIB
expect_code "an unknown backend: exit 2" 2 "$STAGEPART" profile $MODEL --backend tpu
printf '{"format": "stagepart-model", "version": 1, "name": "x", "preset": {"kind": "gpt", "layers": 2, "hidden": 10, "heads": 3, "vocab": 5, "max_seq_len": 4}}' >"$TMP/bad.json"
expect_code "a bad model: exit 2" 2 "$STAGEPART" profile "$TMP/bad.json"
expect_stderr_contains "names file and path" "bad.json: layers[1].heads: hidden (10) must be a multiple of heads (3)"
expect_code "a missing model: exit 2" 2 "$STAGEPART" profile "$TMP/none.json"
expect_code "no model: exit 2" 2 "$STAGEPART" profile
expect_code "the model as output: exit 2" 2 "$STAGEPART" profile $MODEL -o $MODEL
for f in samples/models/*.json $MODEL; do
    expect_code "$f matches the model schema" 0 $CHECK docs/schema/model.schema.json "$f"
done
sed 's/"gpt"/"gpt-5"/' $MODEL >"$TMP/bad-schema.json"
expect_code "a broken model fails the schema" 1 $CHECK docs/schema/model.schema.json "$TMP/bad-schema.json"
# Ctrl-C: no partial file, the existing profile stays as it was
mkdir "$TMP/out"
cp "$TMP/p.json" "$TMP/out/keep.json"
expect_interrupted "Ctrl-C" "$STAGEPART" profile $MODEL --warmup 0 --iters 100000 -o "$TMP/out/keep.json"
expect_stderr_contains "says so" "no profile written"
if cmp -s "$TMP/p.json" "$TMP/out/keep.json" && [ "$(ls "$TMP/out")" = keep.json ]; then
    pass "Ctrl-C: the existing profile is unchanged, no temporary file left"
else
    fail "Ctrl-C: the existing profile is unchanged, no temporary file left" "$(ls "$TMP/out")"
fi
# --events-dir keeps the GPU collector's logs (passed to the model program's collector); the CPU
# backend writes none, so it is refused rather than ignored
expect_code "--events-dir on the CPU" 2 "$STAGEPART" profile samples/models/gpt2-small.json --events-dir "$TMP/ev"
expect_stderr_contains "says where it applies" "with --backend cuda or --attach, not on the CPU"
test_done

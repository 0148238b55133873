#!/bin/sh
# t6010-import-modules: `stagepart import kineto` of traces with PyTorch module ranges and no
# naming convention (tests/tools/make_module_traces.py, answers computed there on their own): the
# layer level chosen by itself, backward work by the trace's fwdbwd links, recomputation under
# activation checkpointing, two ranks, NCCL apart, --layers DEPTH|REGEX, --list-modules, and both
# ways of naming layers agreeing on one trace.
. "$(dirname "$0")/lib.sh"
python3 tests/tools/make_module_traces.py "$TMP/mt" || { fail "make_module_traces.py"; test_done; exit 1; }
T=$TMP/mt
# check PROFILE KEY: every layer's fwd_ms, bwd_ms, recompute_ms as expected.json[KEY] says
check() {
    python3 - "$1" "$T/expected.json" "$2" <<'PY'
import json, sys
p, e = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))[sys.argv[3]]
assert [l["name"] for l in p["layers"]] == [l["name"] for l in e], [l["name"] for l in p["layers"]]
for got, want in zip(p["layers"], e):
    for k in ("fwd_ms", "bwd_ms", "recompute_ms"):
        assert abs(got.get(k, 0) - want[k]) <= 1e-9 * max(1, want[k]), (got["name"], k, got.get(k), want[k])
    assert got["bwd_ms"] > 0, got["name"]
PY
}
expect_code "zero-config import of two ranks" 0 "$STAGEPART" import kineto "$T/rank0.json" "$T/rank1.json" --warmup-steps 1 -o "$T/auto.json"
expect_stdout_contains "says what it chose" "layers: 7 modules (chosen automatically; opened Model_0, Sequential_0)"
if check "$T/auto.json" auto >"$TMP/check" 2>&1; then pass "auto: every layer's fwd, bwd (fwdbwd links) and recompute exact"; else fail "auto values" "$(cat "$TMP/check")"; fi
if python3 -c '
import json, sys
p = json.load(open(sys.argv[1]))
assert [l.get("kind") for l in p["layers"]] == ["embedding"] + ["transformer"] * 4 + ["norm", "head"], p["layers"]
m = p["measurement"]
assert "layer_pattern" not in m and m["layers"].startswith("7 modules"), m
assert p["layers"][4]["measured"]["bwd"]["nccl_ms"] > 0, "nccl reported apart"
' "$T/auto.json"; then pass "kinds from class names, how chosen recorded, NCCL apart"; else fail "kinds and measurement"; fi
expect_code "a depth" 0 "$STAGEPART" import kineto "$T/rank0.json" "$T/rank1.json" --warmup-steps 1 --layers 3 -o "$T/d3.json"
if check "$T/d3.json" depth3 >"$TMP/check" 2>&1; then pass "--layers 3: the Linears, and shallower leaves, exact"; else fail "depth values" "$(cat "$TMP/check")"; fi
expect_code "a regex" 0 "$STAGEPART" import kineto "$T/rank0.json" --warmup-steps 1 --layers '^nn\.Module: (Block_\d)$'
if python3 -c 'import json,sys; p=json.load(open(sys.argv[1])); assert [l["name"] for l in p["layers"]]==["Block_%d"%i for i in range(4)] and all(l["bwd_ms"]>0 for l in p["layers"])' "$TMP/stdout"; then pass "--layers REGEX: module ranges by pattern, with their backward"; else fail "regex layers"; fi
expect_code "both ways, convention" 0 "$STAGEPART" import kineto "$T/both.json" --warmup-steps 1 -o "$T/b1.json"
expect_code "both ways, modules" 0 "$STAGEPART" import kineto "$T/both.json" --warmup-steps 1 --layers auto -o "$T/b2.json"
if check "$T/b1.json" both >"$TMP/check" 2>&1 && check "$T/b2.json" both >>"$TMP/check" 2>&1; then pass "'<layer>/fwd|bwd' ranges and module ranges give the same times"; else fail "cross-check" "$(cat "$TMP/check")"; fi
expect_code "--list-modules" 0 "$STAGEPART" import kineto "$T/rank0.json" --list-modules
if python3 - "$TMP/stdout" <<'PY'
import sys
lines = open(sys.argv[1]).read().splitlines()
assert lines[0].startswith("module (* = a layer with --layers auto)"), lines[0]
rows = {l[2:].split()[0]: l for l in lines[1:]}
assert len(rows) == 17 and lines[1].split()[0] == "Model_0", lines
assert rows["Block_0"].startswith("*     Block_0") and rows["Sequential_0"].startswith("    Sequential_0")
assert rows["Linear_0"].startswith("        Linear_0")
share = float(rows["Model_0"].split()[3].rstrip("%"))
assert share == 100.0, rows["Model_0"]
assert rows["Model_0"].endswith("opened: over half the time"), rows["Model_0"]
assert rows["Sequential_0"].endswith("opened: a container") and rows["Block_0"].endswith("layer")
PY
then pass "the tree, indented, with times, shares and the chosen level"; else fail "--list-modules" "$(head -5 "$TMP/stdout")"; fi
expect_code "--list-modules marks a depth" 0 "$STAGEPART" import kineto "$T/rank0.json" --list-modules --layers 3
expect_stdout_contains "depth 3 marked" "*       Linear_0"
expect_code "--list-modules takes no pattern" 2 "$STAGEPART" import kineto "$T/rank0.json" --list-modules --layers 'Block'
expect_code "--layers and --layer-pattern" 2 "$STAGEPART" import kineto "$T/rank0.json" --layers auto --layer-pattern 'x'
expect_stderr_contains "says give one" "give one"
expect_code "a depth with no module" 2 "$STAGEPART" import kineto "$T/rank0.json" --layers 9
expect_stderr_contains "depth named" "--layers 9: no module at that depth"
# A real trace (samples/torch/train.py on an H200, the helper's '<layer>/fwd|bwd' ranges, no
# module ranges): the backward found by the fwdbwd links from the forward ranges alone is the
# backward the helper's ranges measured, layer by layer
R=tests/data/gpu/h200-torch-sample.kineto.json.gz
expect_code "real trace, helper's ranges" 0 "$STAGEPART" import kineto "$R" --warmup-steps 1 -o "$T/real-ranges.json"
expect_code "real trace, forward ranges and links" 0 "$STAGEPART" import kineto "$R" --warmup-steps 1 --layer-pattern '^(.+)/fwd$' -o "$T/real-links.json"
if python3 - "$T/real-ranges.json" "$T/real-links.json" <<'PY'
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
assert len(a["layers"]) == 10 and [l["name"] for l in a["layers"]] == [l["name"] for l in b["layers"]]
for x, y in zip(a["layers"], b["layers"]):
    assert x["bwd_ms"] > 0 and abs(x["bwd_ms"] - y["bwd_ms"]) <= 1e-9 * x["bwd_ms"], (x["name"], x["bwd_ms"], y["bwd_ms"])
    assert x["fwd_ms"] == y["fwd_ms"], x["name"]
PY
then pass "real trace: backward by links equals the helper's backward ranges"; else fail "real trace links"; fi
# the convention's trace has no module ranges
python3 tests/tools/make_traces.py "$TMP/tr" >/dev/null || fail "make_traces.py"
expect_code "--layers auto without module ranges" 2 "$STAGEPART" import kineto "$TMP/tr/trace.json" --layers auto
expect_stderr_contains "says what to do" "no module ranges (\"nn.Module: ...\"): record the trace with torch.profiler's with_stack=True"
expect_code "--list-modules without module ranges" 2 "$STAGEPART" import kineto "$TMP/tr/trace.json" --list-modules
# kinds by structure: the blocks renamed GPTNeoXLayer_N (a name no rule knows), their first
# Linear renamed GPTNeoXAttention_N, are transformer blocks; without the attention inside
# (Stage_N holding Dense_N) they get no kind
python3 - "$T/rank0.json" "$TMP/neox.json" "$TMP/noattn.json" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))
for e in t["traceEvents"]:
    n = e.get("name", "")
    if e.get("cat") != "python_function":
        continue
    if n.startswith("nn.Module: Block_"):
        e["name"] = n.replace("Block_", "GPTNeoXLayer_")
    elif n.startswith("nn.Module: Linear_"):
        k = int(n.rsplit("_", 1)[1])
        if k < 8 and k % 2 == 0:
            e["name"] = "nn.Module: GPTNeoXAttention_%d" % (k // 2)
json.dump(t, open(sys.argv[2], "w"))
for e in t["traceEvents"]:
    n = e.get("name", "")
    e["name"] = n.replace("GPTNeoXAttention_", "Dense_").replace("GPTNeoXLayer_", "Stage_")
json.dump(t, open(sys.argv[3], "w"))
PY
expect_code "GPT-NeoX-like blocks" 0 "$STAGEPART" import kineto "$TMP/neox.json" --warmup-steps 1
python3 - "$TMP/stdout" <<'PY' && pass "GPTNeoXLayer_N are transformer blocks by structure" || fail "kinds by structure"
import json, sys
p = json.load(open(sys.argv[1]))
kinds = {l["name"]: l.get("kind") for l in p["layers"]}
assert all(kinds["GPTNeoXLayer_%d" % b] == "transformer" for b in range(4)), kinds
assert kinds["Embedding_0"] == "embedding" and kinds["Linear_8"] == "head", kinds
PY
expect_code "repeated blocks without attention" 0 "$STAGEPART" import kineto "$TMP/noattn.json" \
    --warmup-steps 1
python3 - "$TMP/stdout" <<'PY' && pass "no attention inside: no kind" || fail "kinds without attention"
import json, sys
p = json.load(open(sys.argv[1]))
assert all(l.get("kind") is None for l in p["layers"] if l["name"].startswith("Stage_")), p["layers"]
PY
# blocks with no work of their own (BertLayer: its attention and MLP children do it all) stay
# layers: a stack of repeated blocks is not opened as a container, so no cut falls inside one
python3 - "$T/rank0.json" "$TMP/bert.json" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))
t["traceEvents"] = [e for e in t["traceEvents"]
                    if not (e.get("cat") == "kernel" and str(e.get("name", "")).startswith("gemm_Block_"))]
json.dump(t, open(sys.argv[2], "w"))
PY
expect_code "blocks without own work" 0 "$STAGEPART" import kineto "$TMP/bert.json" --warmup-steps 1
python3 - "$TMP/stdout" <<'PY' && pass "Block_0..3 are the layers, not their Linear children" || fail "repeated blocks opened"
import json, sys
p = json.load(open(sys.argv[1]))
names = [l["name"] for l in p["layers"]]
assert names == ["Embedding_0"] + ["Block_%d" % b for b in range(4)] + ["LayerNorm_0", "Linear_8"], names
PY
# a module called inside several modules (an attention helper every layer's attention calls,
# torch's Func_0): the second Linear of every block renamed Func_0 is no layer and nests in none;
# its work is each caller's, so the blocks' times are those of the unchanged trace
python3 - "$T/rank0.json" "$TMP/shared.json" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))
for e in t["traceEvents"]:
    n = e.get("name", "")
    if e.get("cat") == "python_function" and n.startswith("nn.Module: Linear_"):
        k = int(n.rsplit("_", 1)[1])
        if k < 8 and k % 2 == 1:
            e["name"] = "nn.Module: Func_0"
json.dump(t, open(sys.argv[2], "w"))
PY
expect_code "a module called inside every block" 0 "$STAGEPART" import kineto "$TMP/shared.json" --warmup-steps 1 -o "$TMP/shared-auto.json"
expect_stdout_contains "says so" "Func_0 called inside several modules, part of each caller"
expect_code "unchanged trace" 0 "$STAGEPART" import kineto "$T/rank0.json" --warmup-steps 1 -o "$TMP/plain-auto.json"
expect_code "a depth under the blocks" 0 "$STAGEPART" import kineto "$TMP/shared.json" --warmup-steps 1 --layers 3 -o "$TMP/shared-d3.json"
python3 - "$TMP/shared-auto.json" "$TMP/plain-auto.json" "$TMP/shared-d3.json" <<'PY' && pass "Func_0 is part of each block, never a layer" || fail "a shared module"
import json, sys
a, b, d = (json.load(open(f)) for f in sys.argv[1:4])
assert [l["name"] for l in a["layers"]] == [l["name"] for l in b["layers"]]
for x, y in zip(a["layers"], b["layers"]):
    assert (x["fwd_ms"], x["bwd_ms"]) == (y["fwd_ms"], y["bwd_ms"]), (x, y)
names = [l["name"] for l in d["layers"]]
assert names == ["Embedding_0", "Linear_0", "Linear_2", "Linear_4", "Linear_6", "LayerNorm_0", "Linear_8"], names
PY
# modules that hold no parameters (dropout, rotary embeddings, activations) are no layers: their
# work joins the next layer (the previous, after the last); the embedding renamed a rotary
# embedding joins Block_0, the final norm renamed Dropout_0 joins the head
python3 - "$T/rank0.json" "$TMP/fold.json" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))
for e in t["traceEvents"]:
    if e.get("cat") == "python_function":
        e["name"] = e["name"].replace("Embedding_0", "Qwen2RotaryEmbedding_0").replace("LayerNorm_0", "Dropout_0")
json.dump(t, open(sys.argv[2], "w"))
PY
expect_code "parameter-free modules" 0 "$STAGEPART" import kineto "$TMP/fold.json" --warmup-steps 1 -o "$TMP/fold-auto.json"
expect_stdout_contains "says which and why" "layers: 5 modules (chosen automatically; opened Model_0, Sequential_0; no parameters: Qwen2RotaryEmbedding_0 into Block_0, Dropout_0 into Linear_8)"
python3 - "$TMP/fold-auto.json" "$TMP/plain-auto.json" <<'PY' && pass "their work is the neighbour's, exactly" || fail "folding"
import json, sys
f, p = (json.load(open(x)) for x in sys.argv[1:3])
got = {l["name"]: l for l in f["layers"]}
want = {l["name"]: l for l in p["layers"]}
assert list(got) == ["Block_%d" % b for b in range(4)] + ["Linear_8"], list(got)
for name, extra in (("Block_0", "Embedding_0"), ("Linear_8", "LayerNorm_0")):
    for k in ("fwd_ms", "bwd_ms"):
        assert abs(got[name][k] - want[name][k] - want[extra][k]) < 1e-9, (name, k, got[name][k])
PY
expect_code "--list-modules says why" 0 "$STAGEPART" import kineto "$TMP/fold.json" --warmup-steps 1 --list-modules
expect_stdout_contains "a folded module" "no parameters: part of Block_0"
# a module map (stagepart_torch.describe's): layers named by their paths, which torch resolves,
# with parameter and output bytes and a kind from each class; without one, the exports that
# find modules by path refuse the profiler's instance names
cat >"$TMP/map.json" <<'JSON'
{"format": "stagepart-modules", "version": 1, "modules": [
 {"path": "model", "instance": "Model_0", "class": "Model", "param_bytes": 1000},
 {"path": "embed", "instance": "Embedding_0", "class": "Embedding", "param_bytes": 100, "activation_bytes": 64},
 {"path": "layers.0", "instance": "Block_0", "class": "Block", "param_bytes": 200, "activation_bytes": 64},
 {"path": "layers.1", "instance": "Block_1", "class": "Block", "param_bytes": 200, "activation_bytes": 64},
 {"path": "layers.2", "instance": "Block_2", "class": "Block", "param_bytes": 200, "activation_bytes": 64},
 {"path": "layers.3", "instance": "Block_3", "class": "Block", "param_bytes": 200, "activation_bytes": 64},
 {"path": "norm", "instance": "LayerNorm_0", "class": "LayerNorm", "param_bytes": 8, "activation_bytes": 64},
 {"path": "head", "instance": "Linear_8", "class": "Linear", "param_bytes": 90, "activation_bytes": 640}]}
JSON
expect_code "import with a module map" 0 "$STAGEPART" import kineto "$T/rank0.json" --warmup-steps 1 --modules "$TMP/map.json" -o "$TMP/mapped.json"
python3 - "$TMP/mapped.json" "$TMP/plain-auto.json" <<'PY' && pass "paths, bytes and kinds from the map; times unchanged" || fail "module map"
import json, sys
p, q = (json.load(open(f)) for f in sys.argv[1:3])
L = p["layers"]
assert [l["name"] for l in L] == ["embed", "layers.0", "layers.1", "layers.2", "layers.3", "norm", "head"], L
assert [l["param_bytes"] for l in L] == [100, 200, 200, 200, 200, 8, 90]
assert L[-1]["activation_bytes"] == 640 and L[-1]["kind"] == "head" and L[1]["kind"] == "transformer"
assert [l["fwd_ms"] for l in L] == [l["fwd_ms"] for l in q["layers"]]
assert p["measurement"]["module_map"].endswith("map.json")
PY
expect_code "partition the mapped profile" 0 "$STAGEPART" partition "$TMP/mapped.json" -s 2 -o "$TMP/mapped-plan.json"
expect_code "pippy from paths" 0 "$STAGEPART" export "$TMP/mapped-plan.json" --to pippy
expect_stdout_contains "split points are paths" '"layers.'
expect_code "partition the unmapped profile" 0 "$STAGEPART" partition "$TMP/plain-auto.json" -s 2 -o "$TMP/plain-plan.json"
expect_code "pippy from instance names" 2 "$STAGEPART" export "$TMP/plain-plan.json" --to pippy
expect_stderr_contains "says why and what to run" "is named as torch.profiler names a module instance (its class and a count), not by its path in the model, which torch needs to find it: import the trace again with --modules FILE"
expect_code "torch-stages from instance names" 2 "$STAGEPART" export "$TMP/plain-plan.json" --to torch-stages
expect_code "torch-stages from paths" 0 "$STAGEPART" export "$TMP/mapped-plan.json" --to torch-stages
expect_code "megatron needs no paths" 0 "$STAGEPART" export "$TMP/plain-plan.json" --to megatron
python3 - "$TMP/map.json" "$TMP/map-short.json" "$TMP/map-dup.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
short = dict(m, modules=[e for e in m["modules"] if e["path"] != "layers.2"])
json.dump(short, open(sys.argv[2], "w"))
m["modules"][3]["path"] = "layers.0"
json.dump(m, open(sys.argv[3], "w"))
PY
expect_code "a layer the map lacks" 2 "$STAGEPART" import kineto "$T/rank0.json" --warmup-steps 1 --modules "$TMP/map-short.json"
expect_stderr_contains "names the layer" "layer 3 (Block_2) is not in the module map"
expect_code "a map with a path twice" 2 "$STAGEPART" import kineto "$T/rank0.json" --modules "$TMP/map-dup.json"
expect_stderr_contains "names the JSON path" 'modules[3].path: duplicate module path "layers.0" (first used by modules[2])'
expect_code "-o onto the map" 2 "$STAGEPART" import kineto "$T/rank0.json" --modules "$TMP/map.json" -o "$TMP/map.json"
# no step ranges and no optimizer steps: iterations from the model's top-level calls (Model_0,
# each from its forward's start to the next one's), the same medians as the step ranges give
python3 - "$T/rank0.json" "$TMP/nosteps.json" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))
t["traceEvents"] = [e for e in t["traceEvents"] if not str(e.get("name", "")).startswith("ProfilerStep#")]
for e in t["traceEvents"]:
    if str(e.get("name", "")).startswith("Optimizer."):
        e["name"] = "sgd_update"
json.dump(t, open(sys.argv[2], "w"))
PY
expect_code "iterations from the top-level calls" 0 "$STAGEPART" import kineto "$TMP/nosteps.json" --warmup-steps 1 -o "$TMP/nosteps-auto.json"
expect_stdout_contains "says how they were found" "median of 3 steps found by the model's top-level calls (1 warm-up skipped)"
python3 - "$TMP/nosteps-auto.json" "$TMP/plain-auto.json" <<'PY' && pass "the same layer times as with step ranges" || fail "steps from forwards"
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
assert a["measurement"]["steps_from"].startswith("the model's top-level calls"), a["measurement"]["steps_from"]
for x, y in zip(a["layers"], b["layers"]):
    assert (x["name"], x["fwd_ms"], x["bwd_ms"]) == (y["name"], y["fwd_ms"], y["bwd_ms"]), (x, y)
PY
# traces merge only as ranks of one job: two models (every module renamed: their first modules
# differ) and two traces sharing modules in another order are refused, naming the difference
python3 - "$T/rank0.json" "$TMP/other-model.json" "$TMP/reordered.json" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))
for e in t["traceEvents"]:
    if e.get("cat") == "python_function":
        e["name"] = e["name"].replace("nn.Module: ", "nn.Module: Vit")
    e["pid"] = 300
json.dump(t, open(sys.argv[2], "w"))
t = json.load(open(sys.argv[1]))
swap = {"nn.Module: Block_1": "nn.Module: Block_2", "nn.Module: Block_2": "nn.Module: Block_1"}
for e in t["traceEvents"]:
    e["name"] = swap.get(e.get("name"), e.get("name"))
    e["pid"] = 301
json.dump(t, open(sys.argv[3], "w"))
PY
expect_code "two models" 2 "$STAGEPART" import kineto "$T/rank0.json" "$TMP/other-model.json"
expect_stderr_contains "says two models" "other-model.json are traces of two models (their first modules are 'Model_0' and 'VitModel_0'): import each on its own"
expect_code "the same modules in another order" 2 "$STAGEPART" import kineto "$T/rank0.json" "$TMP/reordered.json"
expect_stderr_contains "names the first difference" "reordered.json share layers but not their order: layer 6 is 'Block_1' in the first, 'Block_2' in the second"
# a small module with no work of its own around distinct modules (BERT's MLM head: dense, an
# activation, a norm, the decoder) is one layer, not opened: a cut inside it would leave the
# work between its children in no stage's modules. LayerNorm_0 and Linear_8 wrapped in Head_0:
python3 - "$T/rank0.json" "$TMP/head.json" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))
ev = t["traceEvents"]
ln = [e for e in ev if e.get("name") == "nn.Module: LayerNorm_0"]
head = [e for e in ev if e.get("name") == "nn.Module: Linear_8"]
for a in ln:
    b = min((h for h in head if h["tid"] == a["tid"] and h["ts"] >= a["ts"]), key=lambda h: h["ts"])
    ev.append({"ph": "X", "cat": "python_function", "name": "nn.Module: Head_0", "pid": a["pid"],
               "tid": a["tid"], "ts": a["ts"], "dur": b["ts"] + b["dur"] - a["ts"], "args": {}})
json.dump(t, open(sys.argv[2], "w"))
PY
expect_code "a head of distinct modules" 0 "$STAGEPART" import kineto "$TMP/head.json" --warmup-steps 1 -o "$TMP/head-auto.json"
python3 - "$TMP/head-auto.json" "$TMP/plain-auto.json" <<'PY' && pass "Head_0 is one layer, its children's time" || fail "a head opened"
import json, sys
h, p = (json.load(open(f)) for f in sys.argv[1:3])
names = [l["name"] for l in h["layers"]]
assert names == ["Embedding_0"] + ["Block_%d" % b for b in range(4)] + ["Head_0"], names
want = {l["name"]: l for l in p["layers"]}
for k in ("fwd_ms", "bwd_ms"):
    assert abs(h["layers"][-1][k] - want["LayerNorm_0"][k] - want["Linear_8"][k]) < 1e-9, k
PY
test_done

#!/bin/sh
# t2400-ilp: --solver ilp on the samples: the DP's optimum proven, interleaved chunks balanced
# exactly, the other objectives, the time limit, and the refusals.
. "$(dirname "$0")/lib.sh"
P=samples/profiles
case "$("$STAGEPART" --version)" in *glpk*) ;; *) echo "no GLPK in this build"; test_done; exit 0 ;; esac
for f in gpt3-2.7b llama3-8b resnet50; do
    dp=$("$STAGEPART" partition $P/$f.json -s 4 --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["bottleneck_ms"])')
    ilp=$("$STAGEPART" partition $P/$f.json -s 4 --solver ilp --json | python3 -c 'import json,sys; p=json.load(sys.stdin); print(p["bottleneck_ms"] if p["optimal"] and p["ilp"]["status"]=="optimal" else "not proven")')
    if [ "$dp" = "$ilp" ]; then pass "$f: ilp proves the dp's bottleneck ($dp ms)"; else fail "$f: ilp = dp" "$dp vs $ilp"; fi
done
expect_code "interleaved chunks, exact" 0 "$STAGEPART" partition $P/gpt3-2.7b.json -s 2 --chunks 2 --solver ilp
expect_stdout_contains "balanced device loads" "(solver ilp, objective bottleneck, optimal"
expect_code "range" 0 "$STAGEPART" partition $P/gpt3-2.7b.json -s 4 --solver ilp --objective range --json
if python3 -c 'import json,sys; p=json.load(open(sys.argv[1])); assert p["objective"]=="range" and p["optimal"] and p["ilp"]["objective_ms"] >= 0' "$TMP/stdout"; then pass "range objective recorded"; else fail "range objective recorded"; fi
expect_code "a tiny time limit keeps the best plan" 0 "$STAGEPART" partition $P/llama3-8b.json -s 4 --chunks 2 --solver ilp --time-limit 0.01
expect_stderr_contains "warning with the gap" "warning: the ilp solver stopped at the time limit (0.01 s)"
expect_code "variance is refused" 2 "$STAGEPART" partition $P/llama3-8b.json --solver ilp --objective variance
expect_code "range needs ilp" 2 "$STAGEPART" partition $P/llama3-8b.json --objective range
expect_code "infeasible memory" 3 "$STAGEPART" partition $P/llama3-8b.json -s 4 --solver ilp --memory-limit 5GB
expect_stderr_contains "memory reason named" "layer 'embedding' alone needs"
expect_code "more stages than cuts" 3 "$STAGEPART" partition $P/resnet50.json -s 20 --solver ilp
expect_code "devices fewer than stages" 3 "$STAGEPART" partition $P/llama3-8b.json -s 16 --solver ilp --devices samples/devices/two-speeds-8.json
expect_code "chunks under a memory limit" 0 "$STAGEPART" partition $P/gpt3-2.7b.json -s 4 --chunks 2 --solver ilp --memory-limit 18GB --json
if python3 -c 'import json,sys; p=json.load(open(sys.argv[1])); d=[0]*4
for s in p["stages"]: d[s["device"]]+=s["memory_bytes"]
assert p["optimal"] and max(d) <= 18e9, d' "$TMP/stdout"; then pass "every device within 18 GB, proven"; else fail "chunk memory"; fi
expect_code "chunks: no split fits" 3 "$STAGEPART" partition $P/gpt3-2.7b.json -s 4 --chunks 2 --solver ilp --memory-limit 14GB --time-limit 5
expect_stderr_contains "chunk memory reason" "no split into 4 x 2 interleaved chunks fits the memory limit"
expect_code "chunks: recomputation makes it fit" 0 "$STAGEPART" partition $P/gpt3-2.7b.json -s 4 --chunks 2 --solver ilp --memory-limit 14GB --recompute auto --time-limit 5 --json
if python3 -c 'import json,sys; p=json.load(open(sys.argv[1])); d=[0]*4
for s in p["stages"]: d[s["device"]]+=s["memory_bytes"]
assert p["recomputed_layers"] and max(d) <= 14e9, d' "$TMP/stdout"; then pass "recomputed layers listed, every device within 14 GB"; else fail "chunk recomputation"; fi
expect_code "recomputation reaches the unlimited bottleneck" 0 "$STAGEPART" partition $P/gpt3-2.7b.json -s 8 --memory-limit 9GB --solver ilp --recompute auto --time-limit 120 --json
if python3 -c 'import json,sys; p=json.load(open(sys.argv[1])); assert p["recomputed_layers"] and abs(p["bottleneck_ms"]-12.884895)<1e-6 and max(s["memory_bytes"] for s in p["stages"]) <= 9e9' "$TMP/stdout"; then pass "recomputed layers listed, memory within the limit"; else fail "recomputation plan"; fi
expect_code "without recomputation it does not fit" 3 "$STAGEPART" partition $P/gpt3-2.7b.json -s 8 --memory-limit 9GB
expect_code "recompute needs ilp" 2 "$STAGEPART" partition $P/gpt3-2.7b.json --recompute auto
expect_code "bad time limit" 2 "$STAGEPART" partition $P/llama3-8b.json --solver ilp --time-limit 0
D=samples/devices/two-speeds-8.json
L=samples/links/two-nodes-8.json
expect_code "placement search" 0 "$STAGEPART" partition $P/gpt3-2.7b.json -s 8 --solver ilp --devices $D --links $L --placement search --memory-limit 12GB --json
if python3 - "$TMP/stdout" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
devs = json.load(open("samples/devices/two-speeds-8.json"))["devices"]
assert p["placement"] == "search" and p["optimal"], p.get("ilp")
assert sorted(s["device"] for s in p["stages"]) == list(range(8))
for s in p["stages"]:
    d = devs[s["device"]]
    assert s["device_name"] == d["name"] and s["memory_bytes"] <= min(d["memory_bytes"], 12e9)
# two nodes of four: the chain crosses between them once
nodes = [s["device_name"].split(".")[0] for s in p["stages"]]
assert sum(a != b for a, b in zip(nodes, nodes[1:])) == 1, nodes
PY
then pass "each stage on its own device, within its memory, one node crossing"; else fail "placement plan"; fi
placed=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["bottleneck_ms"])' "$TMP/stdout")
ordered=$("$STAGEPART" partition $P/gpt3-2.7b.json -s 8 --devices $D --links $L --memory-limit 12GB --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["bottleneck_ms"])')
if python3 -c "import sys; sys.exit(0 if $placed < $ordered else 1)"; then pass "placement beats stage s on device s ($placed < $ordered ms)"; else fail "placement gain" "$placed vs $ordered"; fi
"$STAGEPART" partition $P/gpt3-2.7b.json -s 8 --solver ilp --devices $D --links $L --placement search -o "$TMP/placed.json" >/dev/null
expect_code "a placed plan reads back" 0 "$STAGEPART" simulate "$TMP/placed.json"
expect_code "placement table" 0 "$STAGEPART" partition $P/gpt3-2.7b.json -s 4 --solver ilp --devices $D --placement search
expect_stdout_contains "devices named" "0 -> node0.gpu0"
expect_code "placement needs ilp" 2 "$STAGEPART" partition $P/gpt3-2.7b.json -s 4 --devices $D --placement search
expect_code "placement needs devices" 2 "$STAGEPART" partition $P/gpt3-2.7b.json -s 4 --solver ilp --placement search
expect_code "placement with chunks" 0 "$STAGEPART" partition $P/gpt3-2.7b.json -s 4 --chunks 2 --solver ilp --devices $D --links $L --placement search --memory-limit 20GB --time-limit 5 -o "$TMP/pc.json"
if python3 -c 'import json,sys; p=json.load(open(sys.argv[1])); s=p["stages"]
assert p["placement"]=="search" and all(s[k]["device"]==s[k%4]["device"] for k in range(8)) and len({x["device"] for x in s[:4]})==4' "$TMP/pc.json"; then pass "chunk k on the device of stage k mod P"; else fail "placed chunks"; fi
expect_code "a placed chunked plan reads back" 0 "$STAGEPART" simulate "$TMP/pc.json"
expect_code "placement, devices fewer than stages" 3 "$STAGEPART" partition $P/gpt3-2.7b.json -s 9 --solver ilp --devices $D --placement search
expect_code "placement, no device fits" 3 "$STAGEPART" partition $P/gpt3-2.7b.json -s 8 --solver ilp --devices $D --placement search --memory-limit 8GB
expect_stderr_contains "placement reason" "no placement of 8 stages on the 8 devices fits"
expect_code "bad placement value" 2 "$STAGEPART" partition $P/gpt3-2.7b.json --placement best
# an even split that does not fit the limit is said to be none, not compared as if it ran
expect_code "recomputation under 9 GB" 0 "$STAGEPART" partition $P/gpt3-2.7b.json -s 8 --memory-limit 9GB \
    --solver ilp --recompute auto -o "$TMP/rc9.json"
expect_stdout_contains "the even split is no alternative" "but it does not fit the memory limits: no alternative"
grep -q '"even_split_over_memory":[[:space:]]*true' "$TMP/rc9.json" && pass "the plan records it" || fail "the plan records it"
expect_code "without a limit it is compared" 0 "$STAGEPART" partition $P/gpt3-2.7b.json -s 8 -o "$TMP/free.json"
expect_stdout_contains "compared" "lower than an even split of layers"
grep -q even_split_over_memory "$TMP/free.json" && fail "no flag without a limit" || pass "no flag without a limit"
test_done

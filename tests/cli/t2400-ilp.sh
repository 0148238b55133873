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
expect_code "chunks with a memory limit" 4 "$STAGEPART" partition $P/llama3-8b.json -s 4 --chunks 2 --solver ilp --memory-limit 80GB
expect_code "recomputation reaches the unlimited bottleneck" 0 "$STAGEPART" partition $P/gpt3-2.7b.json -s 8 --memory-limit 9GB --solver ilp --recompute auto --json
if python3 -c 'import json,sys; p=json.load(open(sys.argv[1])); assert p["recomputed_layers"] and abs(p["bottleneck_ms"]-12.884895)<1e-6 and max(s["memory_bytes"] for s in p["stages"]) <= 9e9' "$TMP/stdout"; then pass "recomputed layers listed, memory within the limit"; else fail "recomputation plan"; fi
expect_code "without recomputation it does not fit" 3 "$STAGEPART" partition $P/gpt3-2.7b.json -s 8 --memory-limit 9GB
expect_code "recompute needs ilp" 2 "$STAGEPART" partition $P/gpt3-2.7b.json --recompute auto
expect_code "bad time limit" 2 "$STAGEPART" partition $P/llama3-8b.json --solver ilp --time-limit 0
test_done

#!/bin/sh
# t2300-chunks: interleaved plans (--chunks V): made exactly by the default solver (the
# interleaved search) or by the uniform solver, simulated with Megatron's interleaved order;
# memory agrees with the simulator.
. "$(dirname "$0")/lib.sh"
P=samples/profiles
expect_code "chunks with the default solver: the exact interleaved search" 0 "$STAGEPART" partition $P/llama3-8b.json -s 4 --chunks 2 --json -o "$TMP/dp-chunks.json"
got=$(python3 -c 'import json,sys; p=json.load(open(sys.argv[1])); print(p["solver"], p["optimal"], p["search"]["status"], round(p["bottleneck_ms"], 3))' "$TMP/dp-chunks.json")
# 35 layers: embedding, 32 blocks of 33.08 ms, head + loss; 4 devices of 2 chunks
if [ "$got" = "dp True optimal 278.314" ]; then pass "the plan says dp, proven optimal, 278.314 ms"; else fail "the exact plan" "$got"; fi
expect_code "uniform chunks" 0 "$STAGEPART" partition $P/llama3-8b.json -s 4 --chunks 2 --solver uniform -o "$TMP/il.json"
expect_stdout_contains "interleaved is simulated" "schedule    interleaved, 16 micro-batches"
expect_stdout_contains "the bottleneck is a device" "(device 3)"
shape=$(python3 -c 'import json,sys; p=json.load(open(sys.argv[1])); print(p["stage_count"], p["chunks"], len(p["stages"]), [s["device"] for s in p["stages"]], [s["chunk"] for s in p["stages"]])' "$TMP/il.json")
if [ "$shape" = "4 2 8 [0, 1, 2, 3, 0, 1, 2, 3] [0, 0, 0, 0, 1, 1, 1, 1]" ]; then pass "8 chunks, chunk k on device k mod 4"; else fail "chunk layout" "$shape"; fi
expect_code "simulate the interleaved plan" 0 "$STAGEPART" simulate "$TMP/il.json" --json
cp "$TMP/stdout" "$TMP/sim.json"
agree=$(python3 - "$TMP/il.json" "$TMP/sim.json" <<'PY'
import json, sys
plan, sim = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
P = plan["stage_count"]
ok = []
for d, dev in enumerate(sim["stages"]):
    mem = sum(s["memory_bytes"] for s in plan["stages"] if s["device"] == d)
    held = sum(s["inflight_micro_batches"] for s in plan["stages"] if s["device"] == d)
    ok.append(mem == dev["peak_memory_bytes"] and held == dev["peak_inflight"])
print(all(ok), sim["stages"][0]["peak_inflight"])
PY
)
if [ "$agree" = "True 11" ]; then pass "plan memory equals the simulated peak (device 0 holds 2(P-1)+(V-1)P+1 = 11)"; else fail "plan memory vs simulation" "$agree"; fi
expect_code "M need not be a multiple of P (torch's rounds: max(1, 6/4) = 1)" 0 "$STAGEPART" partition $P/equal-64.json -s 4 --chunks 2 --solver uniform -m 6
expect_code "M must be a multiple of the rounds" 2 "$STAGEPART" partition $P/equal-64.json -s 4 --chunks 2 --solver uniform -m 9
expect_stderr_contains "both numbers named" "max(1, M / P) = 2: M = 9, P = 4"
expect_code "interleaved needs chunks" 2 "$STAGEPART" partition $P/equal-64.json -s 4 --schedule interleaved
expect_code "auto M in multiples of P" 0 "$STAGEPART" partition $P/equal-64.json -s 4 --chunks 2 --solver uniform -m auto
expect_stdout_contains "searched multiples of 4" "M=4 72.7%, M=8 84.2%, M=12 88.9%, M=16 91.4%"
expect_code "chunked memory limit" 3 "$STAGEPART" partition $P/llama3-8b.json -s 4 --chunks 2 --solver uniform --memory-limit 60GB
expect_stderr_contains "device named" "the uniform split does not fit the memory limit: device 0 needs"
# the exact interleaved plan exports to Megatron's layout with uneven virtual stages, and a
# hand-written interleaved layout is compared with it
expect_code "exact interleaved plan" 0 "$STAGEPART" partition $P/gpt3-2.7b.json -s 4 --chunks 2 -o "$TMP/g4x2.json"
expect_code "exported to Megatron" 0 "$STAGEPART" export "$TMP/g4x2.json" --to megatron
expect_stdout_contains "uneven virtual stages" '--pipeline-model-parallel-layout "Et*4|(t*4|)*4,t*5|t*4|tttL"'
expect_code "and to torch's schedule CSV" 0 "$STAGEPART" export "$TMP/g4x2.json" --to torch-schedule-csv
expect_code "Megatron's equal layout evaluated" 0 "$STAGEPART" evaluate $P/gpt3-2.7b.json \
    --megatron-layout 'Et*4|t*4|t*4|t*4|t*4|t*4|t*4|t*4L' -s 4 --json
got=$(python3 -c 'import json,sys; e=json.load(sys.stdin); print(e["optimal"]["solver"], round(e["yours"]["iteration_ms"], 1), round(e["optimal"]["iteration_ms"], 1))' <"$TMP/stdout")
[ "$got" = "dp 432.0 393.3" ] && pass "against the exact plan: 432.0 ms against 393.3 ms" || fail "evaluate interleaved" "$got"
# an interleaved plan that simulates slower than plain 1F1B's own plan says so, in one line
# (12 layers, heavy at both ends: each chunk of 3 layers on 4 devices is worse than 1F1B's 3)
python3 - "$TMP/ends12.json" <<'PY'
import json, sys
ts = [5] + [1] * 10 + [5]
layers = [{"name": f"l{i}", "kind": "transformer", "fwd_ms": t / 3, "bwd_ms": 2 * t / 3,
           "activation_bytes": 1 << 20, "saved_bytes": 1 << 20, "param_bytes": 1 << 20}
          for i, t in enumerate(ts)]
json.dump({"format": "stagepart-profile", "version": 1, "model": "ends12", "micro_batch_size": 1,
           "layers": layers}, open(sys.argv[1], "w"))
PY
expect_code "interleaved slower than 1F1B" 0 "$STAGEPART" partition "$TMP/ends12.json" -s 4 --chunks 2 --schedule interleaved
expect_stdout_contains "says which and by how much" "advice      plain 1f1b's own plan on the same 4 devices simulates 1.31x faster: 95.000 ms against 124.000 ms per iteration (M = 16"
expect_code "interleaved faster than 1F1B" 0 "$STAGEPART" partition $P/gpt3-2.7b.json -s 4 --chunks 2 --schedule interleaved
if grep -q '^advice' "$TMP/stdout"; then fail "no advice when it is faster"; else pass "no advice when it is faster"; fi

# Large chains: 1,250 layers at -s 8 --chunks 4 has C(1249, 3) = 324 million ways to place the
# round boundaries; with every chunk within the least largest chunk, each boundary lies in a
# window of a few dozen places (how far the chunks before it reach, and those after it), and the
# search proves its plan. Where even the windows hold too many (1,250 equal layers at 16 x 8),
# it tries those nearest the chain DP's plan and says the plan is not proven.
python3 - "$TMP/r1250.json" "$TMP/eq1250.json" <<'PY'
import json, random, sys
random.seed(3)
def write(path, layers):
    json.dump({"format": "stagepart-profile", "version": 1, "model": "chain1250",
               "layers": layers}, open(path, "w"))
write(sys.argv[1], [{"name": "l%d" % i, "fwd_ms": round(random.uniform(0.5, 2), 3),
                     "bwd_ms": round(random.uniform(1, 4), 3)} for i in range(1250)])
write(sys.argv[2], [{"name": "l%d" % i, "fwd_ms": 1.0, "bwd_ms": 2.0} for i in range(1250)])
PY
expect_code "1,250 layers in 8 x 4 chunks" 0 "$STAGEPART" partition "$TMP/r1250.json" -s 8 \
    --chunks 4 --schedule interleaved --json
python3 - "$TMP/stdout" <<'PY' && pass "proven optimal, no gap" || fail "the 1,250-layer search"
import json, sys
p = json.load(open(sys.argv[1]))
assert p["optimal"] and p["search"]["status"] == "optimal" and p["search"]["gap"] == 0, p["search"]
PY
expect_code "1,250 equal layers in 16 x 8 chunks: a plan" 0 "$STAGEPART" partition \
    "$TMP/eq1250.json" -s 16 --chunks 8 --schedule interleaved --time-limit 2 --json
expect_stderr_contains "says the search was not complete" "tries only the round boundaries nearest"
python3 - "$TMP/stdout" <<'PY' && pass "search limit: not optimal, its bound below its value" || fail "the partial search"
import json, sys
p = json.load(open(sys.argv[1]))
s = p["search"]
assert not p["optimal"] and s["status"] == "search limit", s
assert s["best_bound_ms"] < s["objective_ms"] and s["gap"] > 0, s
PY
test_done

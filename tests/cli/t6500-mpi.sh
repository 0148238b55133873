#!/bin/sh
# t6500-mpi: `stagepart run --transport mpi` under mpirun, 2 to 4 ranks on this machine: the
# same training as the threads transport (equal losses), the report on rank 0; a wrong rank
# count, a failing stage and a killed rank stop the whole job with a message, and no report.
# Exit 77 (skipped) only when this stagepart was built without Open MPI; .ci/run's bootstrap
# installs it, so CI always runs this.
. "$(dirname "$0")/lib.sh"
if ! "$STAGEPART" --version | grep -q ' mpi'; then
    echo "stagepart built without MPI: skipped"
    exit 77
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 # CI runs as root
export OMPI_MCA_btl_vader_single_copy_mechanism=none              # containers without CMA
# Under ASan (the .ci/run suite), Open MPI's own allocations left at MPI_Finalize are suppressed
# by where they were made (tests/lsan/openmpi.supp); full unwinding keeps the MPI call on the stack.
export LSAN_OPTIONS="suppressions=$SRC/tests/lsan/openmpi.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}fast_unwind_on_malloc=0"
MPIRUN="mpirun --oversubscribe"
MODEL=tests/data/tiny-gpt-model.json
"$STAGEPART" profile $MODEL --iters 3 -o "$TMP/profile.json" >/dev/null || fail "profile"
for P in 2 3 4; do
    "$STAGEPART" partition "$TMP/profile.json" -s $P -m 8 -o "$TMP/plan$P.json" >/dev/null
done
expect_code "2 ranks" 0 $MPIRUN -np 2 "$STAGEPART" run "$TMP/plan2.json" --model $MODEL \
    --transport mpi --steps 2 -o "$TMP/mpi2.json" --svg "$TMP/mpi2.svg"
expect_stdout_contains "one table, from rank 0" "one MPI rank per stage"
n=$(grep -c "^iteration" "$TMP/stdout")
if [ "$n" = 1 ]; then pass "printed once"; else fail "printed once" "$n tables"; fi
expect_code "the same on threads" 0 "$STAGEPART" run "$TMP/plan2.json" --model $MODEL --steps 2 \
    -o "$TMP/threads2.json"
python3 - "$TMP/mpi2.json" "$TMP/threads2.json" <<'PY' && pass "MPI ranks train exactly as threads do (equal losses)" || fail "equal losses"
import json, sys
a, b = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert a["transport"] == "mpi" and b["transport"] == "threads", (a["transport"], b["transport"])
assert a["loss"] == b["loss"], (a["loss"], b["loss"])
assert len(a["measured"]["stages"]) == 2 and all(s["busy_ms"] > 0 for s in a["measured"]["stages"])
PY
expect_code "3 ranks, gpipe" 0 $MPIRUN -np 3 "$STAGEPART" run "$TMP/plan3.json" --model $MODEL \
    --transport mpi --schedule gpipe --steps 1 -o "$TMP/mpi3.json"
expect_code "4 ranks" 0 $MPIRUN -np 4 "$STAGEPART" run "$TMP/plan4.json" --model $MODEL \
    --transport mpi --steps 1 --warmup-steps 0 -o "$TMP/mpi4.json"
python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); assert d["stages"] == 4 and len(d["measured"]["stages"]) == 4' \
    "$TMP/mpi4.json" && pass "4 ranks: every stage's figures on rank 0" || fail "4 ranks report"
expect_code "ranks != stages: exit 2" 2 $MPIRUN -np 3 "$STAGEPART" run "$TMP/plan2.json" \
    --model $MODEL --transport mpi
expect_stderr_contains "says why" "the plan has 2 stages and the MPI job 3 ranks: start it with mpirun -np 2"
expect_code "ranks given different options: exit 2" 2 $MPIRUN \
    -np 1 "$STAGEPART" run "$TMP/plan2.json" --model $MODEL --transport mpi --seed 1 : \
    -np 1 "$STAGEPART" run "$TMP/plan2.json" --model $MODEL --transport mpi --seed 2
expect_stderr_contains "says why" "the MPI ranks were started with different plans, models, sizes or options"
expect_code "a failing stage: exit 4" 4 $MPIRUN -np 3 "$STAGEPART" run "$TMP/plan3.json" \
    --model $MODEL --transport mpi --inject-fault 1:0:2:fail -o "$TMP/failed.json"
expect_stderr_contains "rank 0 names it" "stage 1 failed at step 0, micro-batch 2 (forward)"
if [ ! -e "$TMP/failed.json" ]; then pass "no report after a failure"; else fail "no report after a failure"; fi
# GPU ranks (--backend cuda) where there is no GPU or no GPU executor: every rank stops, exit 4,
# the rank named (the path itself runs on stand-in GPUs: tests/cuda/test_run_cuda_fake_mpi.c)
expect_code "GPU ranks without a GPU: exit 4" 4 $MPIRUN -np 2 "$STAGEPART" run "$TMP/plan2.json" \
    --model $MODEL --transport mpi --backend cuda
expect_stderr_contains "the rank named" "(stage "
# Replicated stages (partition --gpus): a plan made from fixed stage times (1 + 2 ms a layer) and
# 0.1 GB/s links, so the same split everywhere: 3 stages on 4 ranks, the last one replicated.
# Its replicas take every other micro-batch and sum their gradients: the losses are the threads
# run's above (the same model, data and M) up to float rounding.
python3 - "$TMP/profile.json" "$TMP/fixed.json" "$TMP/links4.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
for l in p["layers"]:
    l["fwd_ms"], l["bwd_ms"] = 1.0, 2.0
    l.pop("wgrad_ms", None)
json.dump(p, open(sys.argv[2], "w"))
n = 4
bw = [[0 if a == b else 0.1 for b in range(n)] for a in range(n)]
lat = [[0 if a == b else 5.0 for b in range(n)] for a in range(n)]
json.dump({"format": "stagepart-links", "version": 1, "devices": [f"cpu{i}" for i in range(n)],
           "bandwidth_GBps": bw, "latency_us": lat}, open(sys.argv[3], "w"))
PY
"$STAGEPART" partition "$TMP/fixed.json" --gpus 4 --links "$TMP/links4.json" -m 8 \
    -o "$TMP/replicated.json" >/dev/null || fail "replicated plan"
python3 -c 'import json, sys; p = json.load(open(sys.argv[1])); r = [s["replicas"] for s in p["stages"]]; assert p["gpus"] == 4 and len(r) > 1 and max(r) > 1, r' \
    "$TMP/replicated.json" && pass "a plan with replicas differing per stage" || fail "replicas"
expect_code "replicas as ranks" 0 $MPIRUN -np 4 "$STAGEPART" run "$TMP/replicated.json" \
    --model $MODEL --transport mpi --steps 2 -o "$TMP/mpi-replicated.json"
expect_stdout_contains "says so" "one MPI rank per replica (4 ranks)"
python3 - "$TMP/mpi-replicated.json" "$TMP/threads2.json" <<'PY' && pass "replicas train as one worker a stage does (losses within 1e-4)" || fail "replicated losses"
import json, sys
a, b = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert len(a["loss"]) == len(b["loss"]) == 3, (a["loss"], b["loss"])
assert all(abs(x - y) <= 1e-4 for x, y in zip(a["loss"], b["loss"])), (a["loss"], b["loss"])
assert all(s["busy_ms"] > 0 for s in a["measured"]["stages"])
assert max(s.get("replicas", 1) for s in a["measured"]["stages"]) == 2, a["measured"]["stages"]
PY
expect_code "the replicated report matches its schema" 0 python3 "$SRC/tests/tools/schema_check.py" \
    "$SRC/docs/schema/run-report.schema.json" "$TMP/mpi-replicated.json"
expect_code "replicas: ranks != replicas, exit 2" 2 $MPIRUN -np 3 "$STAGEPART" run \
    "$TMP/replicated.json" --model $MODEL --transport mpi
expect_stderr_contains "says why" "the plan has 4 replicas of its stages and the MPI job 3 ranks"
expect_code "replicas on threads: exit 4" 4 "$STAGEPART" run "$TMP/replicated.json" --model $MODEL
expect_stderr_contains "says why" "its replicas run as MPI ranks (--transport mpi, mpirun -np 4), not on threads"
# a rank killed: the job ends, in bounded time, with no report
$MPIRUN -np 2 "$STAGEPART" run "$TMP/plan2.json" --model $MODEL --transport mpi --steps 100000 \
    --timeout 5 -o "$TMP/killed.json" >"$TMP/stdout" 2>"$TMP/stderr" &
job=$!
sleep 2
victim=$(pgrep -n -f "stagepart run $TMP/plan2.json")
[ -n "$victim" ] && kill -9 "$victim"
start=$(date +%s)
wait $job
rc=$?
if [ "$rc" != 0 ]; then pass "a killed rank: the job fails (exit $rc)"; else fail "a killed rank: the job fails"; fi
if [ $(( $(date +%s) - start )) -le 30 ]; then pass "a killed rank: stopped within 30 s"; else fail "a killed rank: stopped within 30 s"; fi
if [ ! -e "$TMP/killed.json" ]; then pass "a killed rank: no report"; else fail "a killed rank: no report"; fi
test_done

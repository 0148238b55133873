#!/bin/sh
# bench/runtime.sh: does a plan's balance hold when it runs? For each sample model: profile it
# on the CPU, partition it into 2 stages with the exact dp solver and with the baselines users
# have today (uniform: equal block counts; parameters: DeepSpeed's parameter balancing), run
# each plan with `stagepart run` (one pinned thread per stage) and print, as a markdown table,
# the planned and measured stage times, the simulated and measured iteration, and the measured
# speed-up of the dp plan over each baseline. Same profile, same machine, same run. With MPI in
# the build, the dp plans run again as 2 MPI ranks, beside the threads' figures.
#   usage: bench/runtime.sh [BUILD_DIR] [MODEL...]   (default: build; gpt2-small bert-base resnet18)
set -eu
BUILD=${1:-build}
shift 2>/dev/null || true
MODELS=${*:-gpt2-small bert-base resnet18}
STAGEPART=$BUILD/cli/stagepart
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

echo "## CPU profiles of the sample models (stagepart profile MODEL: 5 iterations after 1 warm-up, one pinned core)"
echo
echo "| model | layers | parameters | micro-batch x positions | iteration ms | per-layer cv: median | largest (layer) | command wall s |"
echo "|---|---|---|---|---|---|---|---|"
for m in $MODELS; do
    s=$(date +%s%N)
    "$STAGEPART" profile "samples/models/$m.json" --quiet -o "$TMP/$m.json" >/dev/null
    e=$(date +%s%N)
    python3 - "$TMP/$m.json" "$m" $(( (e - s) / 1000000 )) <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); me = d["measurement"]
params = sum(l["param_bytes"] for l in d["layers"]) / 4e6
shape = f'{d["micro_batch_size"]} x {me["seq_len"]}' if me["seq_len"] else f'{d["micro_batch_size"]} images'
print(f'| {sys.argv[2]} | {len(d["layers"])} | {params:.1f}M | {shape} | {me["iteration_ms"]:.1f} | '
      f'{100 * me["median_cv"]:.1f}% | {100 * me["max_cv"]:.1f}% ({me["max_cv_layer"]}) | {int(sys.argv[3]) / 1000:.1f} |')
PY
done
echo
echo "## Measured runs of 2-stage plans (stagepart run, threads, 1f1b, 8 micro-batches; medians of 3 steps after 1 warm-up)"
echo
echo "| model | solver | planned stage ms (per micro-batch) | measured stage ms | largest stage error | simulated iteration ms | measured iteration ms | iteration error | measured speed-up of dp |"
echo "|---|---|---|---|---|---|---|---|---|"
for m in $MODELS; do
    model=samples/models/$m.json
    dp_ms=""
    for solver in dp uniform parameters; do
        "$STAGEPART" partition "$TMP/$m.json" -s 2 -m 8 --solver $solver -o "$TMP/$m-$solver.plan" >/dev/null
        "$STAGEPART" run "$TMP/$m-$solver.plan" --model "$model" --steps 3 --warmup-steps 1 \
            -o "$TMP/$m-$solver.report" >/dev/null
        row=$(python3 - "$TMP/$m-$solver.plan" "$TMP/$m-$solver.report" "$dp_ms" <<'PY'
import json, sys
plan, rep = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
M = rep["micro_batches"]
planned = " / ".join(f'{s["time_ms"]:.1f}' for s in rep["predicted"]["stages"])
measured = " / ".join(f'{s["busy_ms"] / M:.1f}' for s in rep["measured"]["stages"])
err = rep["relative_error"]
it, sim = rep["measured"]["iteration_ms"], rep["predicted"]["iteration_ms"]
dp = float(sys.argv[3]) if sys.argv[3] else it
speed = f"{it / dp:.2f}x" if sys.argv[3] else "1.00x (itself)"
print(f'{planned} | {measured} | {100 * err["max_stage_busy"]:.1f}% | {sim:.1f} | {it:.1f} | {100 * err["iteration_ms"]:+.1f}% | {speed} |{it}')
PY
)
        it=${row##*|}
        [ "$solver" = dp ] && dp_ms=$it
        echo "| $m | $solver | ${row%|*}|"
    done
done

# The same dp plan over MPI ranks (one process per stage), when this stagepart has MPI.
if "$STAGEPART" --version | grep -q ' mpi'; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    echo
    echo "## The dp plans over MPI ranks (mpirun -np 2 stagepart run ... --transport mpi)"
    echo
    echo "| model | transport | measured stage ms | largest stage error | simulated iteration ms | measured iteration ms | iteration error |"
    echo "|---|---|---|---|---|---|---|"
    for m in $MODELS; do
        mpirun --oversubscribe -np 2 "$STAGEPART" run "$TMP/$m-dp.plan" --model "samples/models/$m.json" \
            --transport mpi --steps 3 --warmup-steps 1 -o "$TMP/$m-mpi.report" >/dev/null
        for t in dp mpi; do
            python3 - "$TMP/$m-$t.report" "$m" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); M = r["micro_batches"]; e = r["relative_error"]
stages = " / ".join(f'{s["busy_ms"] / M:.1f}' for s in r["measured"]["stages"])
print(f'| {sys.argv[2]} | {r["transport"]} | {stages} | {100 * e["max_stage_busy"]:.1f}% | '
      f'{r["predicted"]["iteration_ms"]:.1f} | {r["measured"]["iteration_ms"]:.1f} | {100 * e["iteration_ms"]:+.1f}% |')
PY
        done
    done
fi

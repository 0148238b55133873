#!/usr/bin/env bash
# scripts/gpu-check.sh OUTDIR: the checks that need a GPU, in one run of a few minutes on one
# device (an H200 when the workplace lends one). Everything it measures goes under OUTDIR:
#   summary.md                the figures and PASS/FAIL lines
#   build.log, ctest-cuda.txt the CUDA build and its collector tests
#   gpu_layers.*              the collector on tests/cuda/gpu_layers (cuBLAS layers, NVTX ranges):
#                             profile, attributed share of GPU time (target >= 95%), per-layer
#                             times against CUDA events, and the overhead: median step time
#                             untraced, injected but idle, and tracing (target <= 2%)
#   torch.*                   the same flow on samples/torch/train.py through the PyTorch helper,
#                             when torch with CUDA is installed (said so when it is not)
#   hf-gpt2.*, hf-overhead.*  Hugging Face GPT-2 (samples/torch/train_hf_gpt2.py, torch and
#                             transformers): the helper's profile under the collector, a PyTorch
#                             profiler trace of the same program imported, their per-layer
#                             agreement, partition and export; traced vs untraced step time at
#                             8 x 1024 and 2 x 256 (targets 3% and 20%)
#   robust.*                  the injection library inside programs that use threads, fork, two
#                             driver contexts, exit(), _exit() and a signal (tests/cuda/gpu_robust):
#                             each must end under the collector exactly as alone, within 60 s,
#                             and its logs must import (a hard check)
#   models.*                  the built-in models on the GPU (models/cuda/): every tensor against
#                             the CPU executor (stagepart-model-cuda --compare-cpu, a hard check),
#                             GPT-2 small profiled with --backend cuda (bf16) at the CPU profile's
#                             size and at a full size, attributed share (>= 95%, hard) and the
#                             per-layer ranking against the CPU profile's (Spearman)
#   run.*, run-split.*        GPT-2 small's CUDA profile partitioned into 2 stages and run with
#                             stagepart run --backend cuda, as two streams and with --gpu-split
#                             (green contexts): measured against predicted balance; run-matched.*:
#                             the same split with a plan from `profile --sms` on the partition's
#                             SMs (run.split_matched_max_stage_error, target 10%)
#   links.*                   stagepart bandwidth --backend cuda, 4 KiB to 1 GiB: every device
#                             pair (peer copies, NCCL), host copies and copies within a device,
#                             CUPTI-timed with CUDA events beside (test_bandwidth_cuda checks
#                             they agree)
#   summary.json              the figures above, machine-readable (null: not measured here)
# scripts/gpu-check.sh --prebuilt BUNDLE OUTDIR: the same from a bundle scripts/gpu-bundle.sh
# made on a machine with the project's libraries (a GPU machine without them, no packages):
# unpacked at its prefix, run from there, nothing configured or built.
# Exit status: 0 when every hard check passed (attribution >= 95%), 1 otherwise, 77 without a GPU.
set -uo pipefail
if [ "${1:-}" = --prebuilt ]; then
    BUNDLE=${2:?usage: scripts/gpu-check.sh --prebuilt BUNDLE OUTDIR}
    DEST=${3:?usage: scripts/gpu-check.sh --prebuilt BUNDLE OUTDIR}
    case "$DEST" in /*) ;; *) DEST="$PWD/$DEST" ;; esac
    rm -rf /tmp/stagepart-gpu && tar -C / -xJf "$BUNDLE" || { echo "cannot unpack $BUNDLE" >&2; exit 1; }
    [ -d /usr/local/nvidia/lib64 ] && export LD_LIBRARY_PATH=/usr/local/nvidia/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    PREBUILT=1 BUILD_DIR=/tmp/stagepart-gpu/src/build-gpu \
        exec /tmp/stagepart-gpu/src/scripts/gpu-check.sh "$DEST"
fi
OUT=${1:?usage: scripts/gpu-check.sh OUTDIR}
cd "$(dirname "$0")/.."
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
B=${BUILD_DIR:-build-gpu}
S="$OUT/summary.md"
failed=0
say() { echo "$*" | tee -a "$S"; }
: >"$S"
say "# GPU check $(date -u +%Y-%m-%dT%H:%M:%SZ), $(head -c 12 .bundle-commit 2>/dev/null || git rev-parse --short HEAD 2>/dev/null || echo '?')"
if ! command -v nvidia-smi >/dev/null || ! nvidia-smi -L >"$OUT/device.txt" 2>&1; then
    say "no GPU (nvidia-smi -L failed): nothing checked"
    exit 77
fi
say ""
say "device: $(head -1 "$OUT/device.txt")"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv \
    >>"$OUT/device.txt" 2>&1

say ""
say "## build"
if [ "${PREBUILT:-0}" = 1 ] && [ -x "$B/cli/stagepart" ]; then
    say "PASS prebuilt bundle (scripts/gpu-bundle.sh) of $(cat .bundle-commit 2>/dev/null)"
elif cmake -S . -B "$B" -DSTAGEPART_CUDA=ON -DCMAKE_BUILD_TYPE=Release >"$OUT/build.log" 2>&1 &&
    cmake --build "$B" -j"$(nproc)" >>"$OUT/build.log" 2>&1; then
    say "PASS build with CUDA ($(grep -m1 -o 'CUDA [0-9.]*' "$OUT/build.log" || echo toolkit))"
else
    say "FAIL build (build.log)"
    exit 1
fi
SP="$B/cli/stagepart"
if ctest --test-dir "$B" -L cuda --output-on-failure >"$OUT/ctest-cuda.txt" 2>&1; then
    say "PASS collector tests (ctest -L cuda)"
else
    say "FAIL collector tests (ctest-cuda.txt)"
    failed=1
fi

# coverage PROFILE NAME: attributed share of GPU time, a hard check (>= 95%)
coverage() {
    python3 - "$1" "$2" <<'PY' | tee -a "$S"
import json, sys
m = json.load(open(sys.argv[1]))["measurement"]
share = 1 - m["unattributed_share"] if m["gpu_ms"] > 0 else 0
ok = share >= 0.95
print(f"{'PASS' if ok else 'FAIL'} {sys.argv[2]}: {100 * share:.2f}% of {m['gpu_ms']:.3f} ms GPU "
      f"time attributed ({m['activities']} activities, {m['dropped_records']} records dropped, "
      f"steps {m['steps_used']}/{m['steps_total']}; versions: {m['versions']})")
sys.exit(0 if ok else 1)
PY
}

say ""
say "## collector on gpu_layers (8 cuBLAS layers, 4096 rows)"
G="$B/tests/gpu_layers"
if "$SP" profile --attach --warmup-steps 2 --events-dir "$OUT/gpu_layers.events" \
    -o "$OUT/gpu_layers.profile.json" -- "$G" 12 >"$OUT/gpu_layers.profile.txt" 2>&1; then
    coverage "$OUT/gpu_layers.profile.json" "gpu_layers" || failed=1
else
    say "FAIL profile --attach on gpu_layers (gpu_layers.profile.txt)"
    failed=1
fi
if "$G" 12 --events "$OUT/gpu_layers.events.json" >/dev/null 2>&1 &&
    [ -f "$OUT/gpu_layers.profile.json" ]; then
    python3 - "$OUT/gpu_layers.profile.json" "$OUT/gpu_layers.events.json" <<'PY' | tee -a "$S"
import json, sys
p = {l["name"]: l for l in json.load(open(sys.argv[1]))["layers"]}
e = json.load(open(sys.argv[2]))
print("\n| layer | fwd collector ms | fwd CUDA events ms | bwd collector ms | bwd CUDA events ms |")
print("|---|---|---|---|---|")
worst = 0
for name, ev in e.items():
    c = p.get(name, {})
    for k in ("fwd_ms", "bwd_ms"):
        if ev[k] > 0 and k in c:
            worst = max(worst, abs(c[k] - ev[k]) / ev[k])
    print(f"| {name} | {c.get('fwd_ms', float('nan')):.4f} | {ev['fwd_ms']:.4f} | "
          f"{c.get('bwd_ms', float('nan')):.4f} | {ev['bwd_ms']:.4f} |")
print(f"\nlargest relative difference, collector vs CUDA events: {100 * worst:.1f}% "
      "(events include launch gaps inside a layer; the collector counts GPU busy time)")
PY
fi

say ""
say "## overhead (median step time of gpu_layers, 40 steps, 3 runs per mode, interleaved)"
IDLE_DIR=$(mktemp -d)
LIB=$(ls "$B"/profiler/cuda/libstagepart-inject.so)
for run in 1 2 3; do
    "$G" 40 | sed 's/^/untraced /' >>"$OUT/overhead.txt"
    CUDA_INJECTION64_PATH=$LIB NVTX_INJECTION64_PATH=$LIB STAGEPART_INJECT_DIR=$IDLE_DIR \
        STAGEPART_INJECT_MODE=idle "$G" 40 | sed 's/^/idle /' >>"$OUT/overhead.txt"
    "$SP" profile --attach -o "$OUT/overhead.profile.json" -- "$G" 40 |
        grep '^median step' | sed 's/^/tracing /' >>"$OUT/overhead.txt"
    # every runtime and driver call's API record, as before the selection (what it saves)
    STAGEPART_INJECT_API=all "$SP" profile --attach -o "$OUT/overhead-all.profile.json" -- \
        "$G" 40 | grep '^median step' | sed 's/^/tracing-all-apis /' >>"$OUT/overhead.txt"
    # recording stopped after 2 steps: the other 38 run after CUPTI detached
    "$SP" profile --attach --steps 2 -o "$OUT/overhead-stop.profile.json" -- "$G" 40 |
        grep '^median step' | sed 's/^/after-stop /' >>"$OUT/overhead.txt"
done
rm -rf "$IDLE_DIR"
python3 - "$OUT/overhead.txt" <<'PY' | tee -a "$S"
import statistics, sys
t = {}
for line in open(sys.argv[1]):
    mode, _, _, ms = line.split()[:4]
    t.setdefault(mode, []).append(float(ms))
base = statistics.median(t["untraced"])
for mode in ("untraced", "idle", "tracing", "tracing-all-apis", "after-stop"):
    if mode not in t:
        continue
    m = statistics.median(t[mode])
    print(f"{mode:9s} {m:9.4f} ms  ({100 * (m / base - 1):+.2f}% vs untraced; runs {t[mode]})")
over = statistics.median(t["tracing"]) / base - 1
print(f"{'PASS' if over <= 0.02 else 'MISS'} tracing overhead {100 * over:+.2f}% (target <= 2%)")
PY

say ""
say "## the injection library in hostile programs (tests/cuda/gpu_robust)"
R="$B/tests/gpu_robust"
for mode in threads fork contexts exit _exit signal; do
    alone=0
    timeout 60 "$R" "$mode" >/dev/null 2>"$OUT/robust.$mode.alone.txt" || alone=$?
    traced=0
    rm -rf "$OUT/robust.$mode.events"
    mkdir -p "$OUT/robust.$mode.events"
    timeout 60 env CUDA_INJECTION64_PATH="$LIB" NVTX_INJECTION64_PATH="$LIB" \
        STAGEPART_INJECT_DIR="$OUT/robust.$mode.events" "$R" "$mode" >/dev/null \
        2>"$OUT/robust.$mode.traced.txt" || traced=$?
    imported=no
    if ls "$OUT/robust.$mode.events"/*.splog >/dev/null 2>&1 &&
        "$SP" import events "$OUT/robust.$mode.events"/*.splog -o "$OUT/robust.$mode.json" \
            >>"$OUT/robust.$mode.traced.txt" 2>&1; then
        imported=yes
    fi
    if [ "$alone" = "$traced" ] && [ "$traced" != 124 ] && [ "$imported" = yes ]; then
        say "PASS $mode: ends with status $traced alone and under the collector; its logs import"
    else
        say "FAIL $mode: status $alone alone, $traced under the collector (124: hung), logs import: $imported (robust.$mode.*)"
        failed=1
    fi
done

say ""
say "## built-in models on the GPU (models/cuda/)"
MC="$B/cli/stagepart-model-cuda"
for m in tests/data/every-op-tokens-model.json tests/data/every-op-images-model.json \
    samples/models/gpt2-small.json; do
    name=$(basename "$m" .json)
    if "$MC" "$m" --compare-cpu >"$OUT/models.$name.compare.txt" 2>&1; then
        say "PASS $name on the GPU equals the CPU executor: $(tail -1 "$OUT/models.$name.compare.txt")"
    else
        say "FAIL $name against the CPU executor (models.$name.compare.txt): $(tail -1 "$OUT/models.$name.compare.txt")"
        failed=1
    fi
done
if "$MC" tests/data/tiny-gpt-model.json --steps 40 --lr 0.1 >"$OUT/models.train.txt" 2>&1; then
    say "trains on the GPU: $(sed -n '1p;$p' "$OUT/models.train.txt" | tr '\n' ' ')"
else
    say "FAIL training on the GPU (models.train.txt)"
    failed=1
fi
G2=samples/models/gpt2-small.json
"$SP" profile "$G2" -o "$OUT/models.gpt2.cpu.json" >"$OUT/models.gpt2.cpu.txt" 2>&1
for size in default full; do
    args=()
    [ $size = full ] && args=(--micro-batch-size 8 --seq-len 1024)
    if "$SP" profile "$G2" --backend cuda "${args[@]}" --warmup 3 --iters 10 \
        -o "$OUT/models.gpt2.cuda-$size.json" >"$OUT/models.gpt2.cuda-$size.txt" 2>&1; then
        coverage "$OUT/models.gpt2.cuda-$size.json" "GPT-2 small on CUDA (bf16, $size size)" ||
            failed=1
    else
        say "FAIL profile --backend cuda, $size size (models.gpt2.cuda-$size.txt)"
        failed=1
    fi
done
if [ -f "$OUT/models.gpt2.cpu.json" ] && [ -f "$OUT/models.gpt2.cuda-default.json" ]; then
    python3 - "$OUT/models.gpt2.cpu.json" "$OUT/models.gpt2.cuda-default.json" \
        "$OUT/models.gpt2.cuda-full.json" <<'PY' | tee -a "$S"
import json, os, sys
def load(p):
    return {l["name"]: l for l in json.load(open(p))["layers"]} if os.path.exists(p) else {}
cpu, gpu, full = (load(p) for p in sys.argv[1:4])
names = [n for n in cpu if n in gpu]
def ranks(d):
    order = sorted(names, key=lambda n: d[n]["fwd_ms"] + d[n]["bwd_ms"])
    return {n: i for i, n in enumerate(order)}
rc, rg = ranks(cpu), ranks(gpu)
k = len(names)
rho = 1 - 6 * sum((rc[n] - rg[n]) ** 2 for n in names) / (k * (k * k - 1)) if k > 1 else 0
print("\n| layer | CPU fwd+bwd ms | CUDA fwd+bwd ms (same size) | CUDA fwd+bwd ms (8 x 1024) |")
print("|---|---|---|---|")
for n in names:
    t = lambda d: d[n]["fwd_ms"] + d[n]["bwd_ms"] if n in d else float("nan")
    print(f"| {n} | {t(cpu):.3f} | {t(gpu):.4f} | {t(full):.4f} |")
print(f"\nper-layer ranking, CPU vs CUDA at the same size: Spearman {rho:.3f} over {k} layers")
PY
fi

say ""
say "## a plan run on the GPU (stagepart run --backend cuda, 2 stages)"
if [ -f "$OUT/models.gpt2.cuda-full.json" ] &&
    "$SP" partition "$OUT/models.gpt2.cuda-full.json" --stages 2 -m 8 \
        -o "$OUT/run.plan.json" >"$OUT/run.txt" 2>&1 &&
    "$SP" run "$OUT/run.plan.json" --model "$G2" --backend cuda --micro-batch-size 8 \
        --seq-len 1024 --steps 5 -o "$OUT/run.report.json" --svg "$OUT/run.svg" \
        >>"$OUT/run.txt" 2>&1; then
    say "PASS run --backend cuda (stages share the GPU when there is one: two streams)"
    sed 's/^/    /' "$OUT/run.txt" | tail -14 >>"$S"
else
    say "FAIL run --backend cuda (run.txt)"
    failed=1
fi
if [ -f "$OUT/run.plan.json" ] &&
    "$SP" run "$OUT/run.plan.json" --model "$G2" --backend cuda --gpu-split --micro-batch-size 8 \
        --seq-len 1024 --steps 5 -o "$OUT/run-split.report.json" --svg "$OUT/run-split.svg" \
        >"$OUT/run-split.txt" 2>&1; then
    say "PASS run --backend cuda --gpu-split (each stage on an SM partition, green contexts)"
    sed 's/^/    /' "$OUT/run-split.txt" | tail -16 >>"$S"
else
    say "FAIL run --backend cuda --gpu-split (run-split.txt)"
    failed=1
fi
if [ -f "$OUT/run.plan.json" ] &&
    "$SP" run "$OUT/run.plan.json" --model "$G2" --backend cuda --isolate --micro-batch-size 8 \
        --seq-len 1024 --steps 5 -o "$OUT/run-isolate.report.json" >"$OUT/run-isolate.txt" 2>&1; then
    say "PASS run --backend cuda --isolate (every op alone on the GPU; target: each stage within 5%)"
    sed 's/^/    /' "$OUT/run-isolate.txt" | tail -10 >>"$S"
else
    say "FAIL run --backend cuda --isolate (run-isolate.txt)"
    failed=1
fi
# GPU stages as MPI ranks: 2 ranks on this machine's GPUs (sharing it when there is one)
if "$SP" --version | grep -q ' mpi' && command -v mpirun >/dev/null && [ -f "$OUT/run.plan.json" ]; then
    if OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun --oversubscribe -np 2 \
        "$SP" run "$OUT/run.plan.json" --model "$G2" --backend cuda --transport mpi \
        --micro-batch-size 8 --seq-len 1024 --steps 5 -o "$OUT/run-mpi.report.json" \
        >"$OUT/run-mpi.txt" 2>&1; then
        say "PASS run --backend cuda --transport mpi (2 ranks, host buffers between them)"
        sed 's/^/    /' "$OUT/run-mpi.txt" | tail -12 >>"$S"
    else
        say "FAIL run --backend cuda --transport mpi (run-mpi.txt)"
        failed=1
    fi
else
    say "GPU stages as MPI ranks not run: this build has no Open MPI or this machine no mpirun"
fi
# the matched split: the plan made from a profile on the partition each stage gets (--sms)
SMS=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["measured"]["stages"][0]["sms"])' \
    "$OUT/run-split.report.json" 2>/dev/null || echo 0)
if [ "${SMS:-0}" -gt 0 ] &&
    "$SP" profile "$G2" --backend cuda --sms "$SMS" --micro-batch-size 8 --seq-len 1024 \
        --warmup 3 --iters 10 -o "$OUT/models.gpt2.cuda-sms.json" >"$OUT/run-matched.txt" 2>&1 &&
    "$SP" partition "$OUT/models.gpt2.cuda-sms.json" --stages 2 -m 8 \
        -o "$OUT/run-matched.plan.json" >>"$OUT/run-matched.txt" 2>&1 &&
    "$SP" run "$OUT/run-matched.plan.json" --model "$G2" --backend cuda --gpu-split \
        --micro-batch-size 8 --seq-len 1024 --steps 5 -o "$OUT/run-matched.report.json" \
        >>"$OUT/run-matched.txt" 2>&1; then
    say "PASS run --gpu-split with a plan from profile --sms $SMS (target: each stage within 10%)"
    sed 's/^/    /' "$OUT/run-matched.txt" | tail -16 >>"$S"
else
    say "FAIL the matched split: profile --sms, partition, run --gpu-split (run-matched.txt)"
    failed=1
fi

say ""
say "## links (stagepart bandwidth --backend cuda)"
if "$SP" bandwidth --backend cuda -o "$OUT/links.json" >"$OUT/links.txt" 2>&1; then
    say "PASS bandwidth --backend cuda"
    sed 's/^/    /' "$OUT/links.txt" >>"$S"
else
    say "FAIL bandwidth --backend cuda (links.txt)"
    failed=1
fi

say ""
say "## PyTorch helper (samples/torch/train.py)"
if python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
    if "$SP" profile --attach --warmup-steps 2 -o "$OUT/torch.profile.json" -- \
        python3 samples/torch/train.py --steps 8 >"$OUT/torch.profile.txt" 2>&1; then
        coverage "$OUT/torch.profile.json" "torch sample" || failed=1
        python3 - "$OUT/torch.profile.json" <<'PY' | tee -a "$S"
import json, sys
layers = json.load(open(sys.argv[1]))["layers"]
bytes_ok = all(l.get("activation_bytes", 0) > 0 for l in layers)
bwd_ok = all(l["bwd_ms"] > 0 for l in layers)
print(f"{len(layers)} layers; output bytes from the helper on every layer: {bytes_ok}; "
      f"backward hooks fired on every layer (embedding and head included): {bwd_ok}")
PY
    else
        say "FAIL profile --attach on the torch sample (torch.profile.txt)"
        failed=1
    fi
else
    say "torch with CUDA is not installed here: the PyTorch flow was not run"
fi
say ""
say "## Hugging Face GPT-2 (samples/torch/train_hf_gpt2.py): collector, PyTorch profiler, overhead"
HF=samples/torch/train_hf_gpt2.py
if python3 -c 'import sys, torch, transformers; sys.exit(0 if torch.cuda.is_available() else 1)' \
    2>/dev/null; then
    if "$SP" profile --attach --warmup-steps 3 -o "$OUT/hf-gpt2.profile.json" -- \
        python3 "$HF" --steps 10 >"$OUT/hf-gpt2.profile.txt" 2>&1; then
        coverage "$OUT/hf-gpt2.profile.json" "Hugging Face GPT-2 8 x 1024 (the helper)" ||
            failed=1
    else
        say "FAIL profile --attach on Hugging Face GPT-2 (hf-gpt2.profile.txt)"
        failed=1
    fi
    # the same program under the PyTorch profiler: per layer, the two must agree
    if python3 "$HF" --steps 10 --kineto "$OUT/hf-gpt2.kineto.json" >"$OUT/hf-gpt2.kineto.txt" 2>&1 &&
        "$SP" import kineto "$OUT/hf-gpt2.kineto.json" --warmup-steps 3 \
            -o "$OUT/hf-gpt2.kineto.profile.json" >>"$OUT/hf-gpt2.kineto.txt" 2>&1; then
        python3 - "$OUT/hf-gpt2.profile.json" "$OUT/hf-gpt2.kineto.profile.json" \
            "$OUT/hf-gpt2.compare.json" <<'PY' | tee -a "$S"
import json, sys
a, b = ({l["name"]: l["fwd_ms"] + l["bwd_ms"] for l in json.load(open(f))["layers"]}
        for f in sys.argv[1:3])
both = [n for n in a if n in b and max(a[n], b[n]) > 0]
diff = max((abs(a[n] - b[n]) / max(a[n], b[n]) for n in both), default=None)
json.dump({"layers": len(both), "max_layer_diff": diff}, open(sys.argv[3], "w"))
print(f"collector vs PyTorch profiler: {len(both)} layers, largest difference "
      f"{'n/a' if diff is None else f'{100 * diff:.2f}%'} (fwd + bwd per layer)")
PY
    else
        say "FAIL the PyTorch profiler trace of Hugging Face GPT-2 or its import (hf-gpt2.kineto.txt)"
        failed=1
    fi
    if [ -f "$OUT/hf-gpt2.profile.json" ] &&
        "$SP" partition "$OUT/hf-gpt2.profile.json" -s 4 -o "$OUT/hf-gpt2.plan.json" \
            >"$OUT/hf-gpt2.plan.txt" 2>&1 &&
        "$SP" export "$OUT/hf-gpt2.plan.json" --to pippy >"$OUT/hf-gpt2.pippy.txt" 2>&1; then
        say "PASS the collector's profile partitioned (4 stages) and exported --to pippy"
    else
        say "FAIL partition or export of the Hugging Face GPT-2 profile (hf-gpt2.plan.txt)"
        failed=1
    fi
    # overhead: the median step untraced and traced, 3 interleaved rounds, two sizes
    for run in 1 2 3; do
        for size in 8x1024 2x256; do
            b=${size%x*} q=${size#*x}
            python3 "$HF" --steps 20 --batch "$b" --seq "$q" | grep '^median step' |
                sed "s/^/untraced-$size /" >>"$OUT/hf-overhead.txt"
            "$SP" profile --attach -o "$OUT/hf-overhead.profile.json" -- python3 "$HF" --steps 20 \
                --batch "$b" --seq "$q" | grep '^median step' |
                sed "s/^/traced-$size /" >>"$OUT/hf-overhead.txt"
        done
    done
    python3 - "$OUT/hf-overhead.txt" "$OUT/hf-overhead.json" <<'PY' | tee -a "$S"
import json, statistics, sys
t = {}
for line in open(sys.argv[1]):
    f = line.split()
    t.setdefault(f[0], []).append(float(f[3]))
out = {}
for size, target in (("8x1024", 0.03), ("2x256", 0.20)):
    u, r = t.get("untraced-" + size), t.get("traced-" + size)
    if not u or not r:
        continue
    over = statistics.median(r) / statistics.median(u) - 1
    out[size] = over
    print(f"{'PASS' if over <= target else 'MISS'} Hugging Face GPT-2 {size}: traced "
          f"{statistics.median(r):.2f} ms vs {statistics.median(u):.2f} ms untraced, "
          f"{100 * over:+.1f}% (target <= {100 * target:.0f}%; runs {r} / {u})")
json.dump(out, open(sys.argv[2], "w"))
PY
else
    say "torch with CUDA or transformers is not installed here: the Hugging Face flow was not run"
fi

# summary.json: the figures above, machine-readable; null where this run did not measure one
python3 - "$OUT" "$(cat .bundle-commit 2>/dev/null || git rev-parse HEAD 2>/dev/null || echo unknown)" <<'PY'
import json, os, sys
out, commit = sys.argv[1], sys.argv[2]
def load(name):
    try:
        return json.load(open(os.path.join(out, name)))
    except (OSError, ValueError):
        return None
def share(name):
    p = load(name)
    if not p:
        return None
    m = p["measurement"]
    return 1 - m["unattributed_share"] if m["gpu_ms"] > 0 else None
def stage_error(name):
    r = load(name)
    return r["relative_error"]["max_stage_busy"] if r else None
overhead = after_stop = None
try:  # overhead.txt: "<mode> median step <ms> ..." lines, modes untraced, idle, tracing
    import statistics
    t = {}
    for line in open(os.path.join(out, "overhead.txt")):
        f = line.split()
        if len(f) >= 4:
            t.setdefault(f[0], []).append(float(f[3]))
    if t.get("untraced") and t.get("tracing"):
        overhead = statistics.median(t["tracing"]) / statistics.median(t["untraced"]) - 1
    if t.get("untraced") and t.get("after-stop"):
        after_stop = statistics.median(t["after-stop"]) / statistics.median(t["untraced"]) - 1
except (OSError, ValueError):
    pass
torch = load("torch.profile.json")
hf_over = load("hf-overhead.json") or {}
hf_cmp = load("hf-gpt2.compare.json") or {}
device = open(os.path.join(out, "device.txt")).readline().strip() if os.path.exists(os.path.join(out, "device.txt")) else None
doc = {"commit": commit, "device": device,
       "every_layer_backward": all(l["bwd_ms"] > 0 for l in torch["layers"]) if torch else None,
       "attributed_share": {"gpu_layers": share("gpu_layers.profile.json"),
                            "builtin_gpt2_default": share("models.gpt2.cuda-default.json"),
                            "torch_sample": share("torch.profile.json"),
                            "hf_gpt2": share("hf-gpt2.profile.json")},
       "overhead": {"gpu_layers": overhead, "hf_gpt2_8x1024": hf_over.get("8x1024"),
                    "hf_gpt2_2x256": hf_over.get("2x256"), "after_recording_stops": after_stop},
       "collector_vs_kineto_max_layer_diff": hf_cmp.get("max_layer_diff"),
       "run": {"streams_max_stage_error": stage_error("run.report.json"),
               "split_max_stage_error": stage_error("run-split.report.json"),
               "isolate_max_stage_error": stage_error("run-isolate.report.json"),
               "split_matched_max_stage_error": stage_error("run-matched.report.json"), "mpi_ranks_max_stage_error": stage_error("run-mpi.report.json")}}
json.dump(doc, open(os.path.join(out, "summary.json"), "w"), indent=1)
PY
say ""
say "overall: $([ $failed = 0 ] && echo PASS || echo FAIL)"
exit $failed

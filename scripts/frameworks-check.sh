#!/usr/bin/env bash
# scripts/frameworks-check.sh [PYTHON]: every export read by the framework that consumes it, on
# the CPU (tests/frameworks/check_*.py; docs/export.md says what each checks). PYTHON is the
# frameworks' environment (default: what scripts/frameworks-setup.sh prints, setting it up when
# needed); STAGEPART the CLI (default build/cli/stagepart). Ends with "N passed, N failed";
# exits 1 when a check failed, when a check script died without reporting, or when one exited
# without a single PASS line (a script that checks nothing is a failure, not a pass).
set -uo pipefail
cd "$(dirname "$0")/.."
py=${1:-$(scripts/frameworks-setup.sh | tail -n 1)} || exit 1
export STAGEPART=${STAGEPART:-$PWD/build/cli/stagepart}
[ -x "$STAGEPART" ] || { echo "frameworks-check: no $STAGEPART (build first)" >&2; exit 2; }
export FRAMEWORKS_OUT=${FRAMEWORKS_OUT:-$(mktemp -d)}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1} PYTHONWARNINGS=ignore TORCH_CPP_LOG_LEVEL=ERROR
"$py" - <<'PY'
import torch, transformers, megatron.core, torchtitan, deepspeed
print("frameworks:", ", ".join(f"{m.__name__.split('.')[0] if m.__name__ != 'megatron.core' else 'megatron-core'} {m.__version__}"
      for m in (torch, transformers, megatron.core, torchtitan, deepspeed)))
PY
passed=0 failed=0
for check in tests/frameworks/check_*.py; do
    name=${check##*/}
    log="$FRAMEWORKS_OUT/${name%.py}.log"
    start=$SECONDS
    (cd tests/frameworks && "$py" "${check##*/}") >"$log" 2>&1
    rc=$?
    p=$(grep -c '^PASS ' "$log") f=$(grep -c '^FAIL ' "$log")
    grep -E '^(PASS|FAIL|  )' "$log"
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then # died before reporting a failure
        echo "FAIL $name: exit $rc; its log ends:"
        tail -n 20 "$log"
        f=1
    elif [ "$p" -eq 0 ] && [ "$f" -eq 0 ]; then # ran nothing it could report: checked nothing
        echo "FAIL $name: exit $rc with no PASS line; its log ends:"
        tail -n 20 "$log"
        f=1
    elif [ "$f" -gt 0 ]; then
        tail -n 40 "$log" | sed 's/^/    /'
    fi
    echo "  ($name: $((SECONDS - start)) s)"
    passed=$((passed + p)) failed=$((failed + f))
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]

#!/usr/bin/env bash
# scripts/frameworks-setup.sh: a virtual environment with the frameworks that read stagepart's
# exports (scripts/frameworks-requirements.txt: torch, transformers, megatron-core, torchtitan,
# deepspeed), for scripts/frameworks-check.sh. The C tool and library never need it.
#
# The environment lives outside the tree, at $STAGEPART_FRAMEWORKS_VENV (default
# ~/.cache/stagepart/frameworks-venv), and is reused when it already holds the pinned versions
# and they import. PyPI's torch for x86_64 is a CUDA build (about 3 GB) that runs on the CPU.
# Prints the path of the environment's python on its last line.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${STAGEPART_FRAMEWORKS_VENV:-${HOME:-/root}/.cache/stagepart/frameworks-venv}
req=scripts/frameworks-requirements.txt
stamp="$venv/stagepart-requirements.txt"
py="$venv/bin/python"

imports_ok() {
    "$py" - <<'PY' >/dev/null 2>&1
import torch, transformers, megatron.core, torchtitan, deepspeed
PY
}

if [ -x "$py" ] && cmp -s "$req" "$stamp" && imports_ok; then
    echo "frameworks-setup: $venv holds the pinned versions" >&2
    echo "$py"
    exit 0
fi
python3 -m venv --help >/dev/null 2>&1 || {
    echo "frameworks-setup: python3 -m venv is missing (Debian: apt-get install python3-venv)" >&2
    exit 4
}
[ -x "$py" ] || python3 -m venv "$venv"
rm -f "$stamp"
pins=$(grep -vE '^\s*(#|$)' "$req")
torch_pin=$(echo "$pins" | grep '^torch==')
# shellcheck disable=SC2086
"$py" -m pip install -q --disable-pip-version-check $torch_pin >&2
# DeepSpeed's setup imports torch: build it against the one installed, with no ops compiled
# shellcheck disable=SC2046
DS_BUILD_OPS=0 "$py" -m pip install -q --disable-pip-version-check --no-build-isolation \
    $(echo "$pins" | grep -v '^torch==') >&2
imports_ok || { echo "frameworks-setup: the frameworks do not import in $venv" >&2; exit 1; }
cp "$req" "$stamp"
"$py" -m pip list --disable-pip-version-check 2>/dev/null |
    grep -iE '^(torch|transformers|megatron-core|torchtitan|deepspeed) ' >&2 || true
echo "$py"

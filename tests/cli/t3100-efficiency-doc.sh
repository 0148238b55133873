#!/bin/sh
# t3100-efficiency-doc: docs/efficiency.md is a test: every row's command runs, and every
# backticked figure in its "stagepart computes" column appears in the output.
. "$(dirname "$0")/lib.sh"
python3 - "$STAGEPART" docs/efficiency.md <<'PY' >"$TMP/rows" || exit 1
import re, sys
binary, doc = sys.argv[1], sys.argv[2]
for line in open(doc):
    cells = [c.strip() for c in line.strip().strip("|").split("|")]
    if len(cells) < 4 or not cells[2].startswith("`stagepart "):
        continue
    cmd = cells[2].strip("`").replace("stagepart ", binary + " ", 1)
    for want in re.findall(r"`([^`]+)`", cells[3]):
        print(f"{cells[0]}\t{cmd}\t{want}")
PY
rows=$(wc -l <"$TMP/rows")
[ "$rows" -ge 10 ] && pass "docs/efficiency.md has $rows checked figures" || fail "docs/efficiency.md rows" "only $rows"
while IFS="$(printf '\t')" read -r id cmd want; do
    # shellcheck disable=SC2086
    out=$($cmd 2>&1)
    case "$out" in
    *"$want"*) pass "row $id: $want" ;;
    *) fail "row $id: $want" "command: $cmd" "output: $(echo "$out" | grep schedule)" ;;
    esac
done <"$TMP/rows"
test_done

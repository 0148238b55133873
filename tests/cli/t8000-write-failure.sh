#!/bin/sh
# t8000-write-failure: every file a command writes, written while the disk is "full" (the file
# size limit, `ulimit -f`, makes write() fail with EFBIG; SIGXFSZ is ignored so the command sees
# the error): the command fails with a message naming the file, the file that was there is left
# as it was, and no temporary file is left beside it.
. "$(dirname "$0")/lib.sh"
P=samples/profiles/llama3-8b.json
"$STAGEPART" partition "$P" -s 4 -o "$TMP/plan.json" >/dev/null || fail "a plan to start from"
python3 tests/tools/make_traces.py "$TMP/tr" >/dev/null || fail "traces to start from"
mkdir "$TMP/out"
# full NAME FILE CMD...: FILE (under $TMP/out) holds KEEP before; CMD runs with writes failing
full() {
    name=$1 file=$TMP/out/$2
    shift 2
    echo KEEP >"$file"
    (trap '' XFSZ; ulimit -f 1; "$@") >"$TMP/stdout" 2>"$TMP/stderr"
    rc=$?
    left=$(ls -A "$TMP/out" | grep -v -x "$(basename "$file")")
    if [ "$rc" = 0 ]; then
        fail "$name" "exit 0 with the disk full"
    elif [ "$(cat "$file")" != KEEP ]; then
        fail "$name" "the existing file changed: $(head -c 80 "$file")"
    elif [ -n "$left" ]; then
        fail "$name" "left behind: $left"
    elif ! grep -qF "$(basename "$file")" "$TMP/stderr"; then
        fail "$name" "the message does not name the file"
    else
        pass "$name"
    fi
    rm -f "$file"
}
full "partition -o" plan.json "$STAGEPART" partition "$P" -s 4 -o "$TMP/out/plan.json"
full "simulate --trace" trace.json "$STAGEPART" simulate "$TMP/plan.json" --trace \
    "$TMP/out/trace.json"
full "simulate --svg" t.svg "$STAGEPART" simulate "$TMP/plan.json" --svg "$TMP/out/t.svg"
full "export -o" parts.py "$STAGEPART" export "$TMP/plan.json" --to deepspeed -o \
    "$TMP/out/parts.py"
full "import-plan -o" cur.json "$STAGEPART" import-plan "$P" --balance 9,9,9,7 -o \
    "$TMP/out/cur.json"
full "check --junit" check.xml "$STAGEPART" check --plan "$TMP/plan.json" --profile "$P" \
    --junit "$TMP/out/check.xml"
full "import -o" prof.json "$STAGEPART" import kineto "$TMP/tr/trace.json" -o "$TMP/out/prof.json"
full "bandwidth -o" links.json bandwidth_probe --sizes 4KiB,1MiB,16MiB --trials 5 -o \
    "$TMP/out/links.json"
test_done

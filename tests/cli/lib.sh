# tests/cli/lib.sh: helpers for the command-line tests (git t/ style).
#   STAGEPART  the binary under test       SRC  the source tree (tests run there)
#   JSON_DIFF  tests/tools/json_diff       TMP  a scratch folder, removed at the end
# Each test_* prints "ok N - name" or "not ok N - name" with the reason; test_done prints the
# totals and exits non-zero when anything failed.
set -u
: "${STAGEPART:?}" "${SRC:?}" "${JSON_DIFF:?}"
TMP=$(mktemp -d "${TMPDIR:-/tmp}/stagepart-cli.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
cd "$SRC" || exit 1
n_tests=0
n_failed=0

pass() { n_tests=$((n_tests + 1)); echo "ok $n_tests - $1"; }
fail() {
    n_tests=$((n_tests + 1)); n_failed=$((n_failed + 1))
    echo "not ok $n_tests - $1"
    shift
    for line in "$@"; do echo "#   $line"; done
    if [ -s "$TMP/stderr" ]; then sed 's/^/#   stderr: /' "$TMP/stderr" | head -20; fi
}

# run CMD...: runs it, stdout in $TMP/stdout, stderr in $TMP/stderr, exit code in $rc
run() { "$@" >"$TMP/stdout" 2>"$TMP/stderr"; rc=$?; }

# expect_code NAME CODE CMD...
expect_code() {
    name=$1 code=$2; shift 2
    run "$@"
    if [ "$rc" = "$code" ]; then pass "$name"; else fail "$name" "exit code $rc, expected $code"; fi
}

# expect_stdout_contains / expect_stderr_contains NAME TEXT (after a run)
expect_stdout_contains() {
    if grep -qF -- "$2" "$TMP/stdout"; then pass "$1"; else fail "$1" "stdout lacks: $2" "stdout: $(head -c 400 "$TMP/stdout")"; fi
}
expect_stderr_contains() {
    if grep -qF -- "$2" "$TMP/stderr"; then pass "$1"; else fail "$1" "stderr lacks: $2"; fi
}
expect_stderr_lines() {
    n=$(wc -l <"$TMP/stderr")
    if [ "$n" = "$2" ]; then pass "$1"; else fail "$1" "stderr has $n lines, expected $2"; fi
}
expect_empty_stdout() {
    if [ ! -s "$TMP/stdout" ]; then pass "$1"; else fail "$1" "stdout not empty: $(head -c 200 "$TMP/stdout")"; fi
}

# bandwidth_probe ARGS...: `stagepart bandwidth ARGS`, tried again (three times in all) when the
# link fit refused copies too noisy to fit, as on a busy machine: refusing is right there, and
# these tests check the rest (the file, the table, the writers). Output as one run's.
bandwidth_probe() {
    for try in 1 2 3; do
        "$STAGEPART" bandwidth "$@" 2>"$TMP/probe.err"
        probe_rc=$?
        if [ "$probe_rc" != 2 ] || ! grep -q 'link fit:' "$TMP/probe.err" || [ "$try" = 3 ]; then
            cat "$TMP/probe.err" >&2
            return "$probe_rc"
        fi
    done
}

# a script that ran no check has not tested anything: that fails too
test_done() {
    echo "$((n_tests - n_failed)) passed, $n_failed failed"
    [ "$n_tests" -gt 0 ] || echo "not ok - no check ran"
    [ "$n_failed" = 0 ] && [ "$n_tests" -gt 0 ]
}

# expect_interrupted NAME CMD...: Ctrl-C (SIGINT) one second into CMD stops it with exit 130
expect_interrupted() {
    name=$1; shift
    "$@" >"$TMP/stdout" 2>"$TMP/stderr" &
    pid=$!
    sleep 1
    kill -INT $pid
    wait $pid
    rc=$?
    if [ "$rc" = 130 ]; then pass "$name: exit 130"; else fail "$name: exit 130" "exit $rc"; fi
}

#!/bin/sh
# tests/tools/expect_output.sh CODE REGEX CMD...: run CMD, show what it printed, and pass only
# when it exited with CODE and printed a line matching REGEX (grep -E). CTest's
# PASS_REGULAR_EXPRESSION alone ignores the exit status: a command that printed the line and
# then crashed would pass.
code=$1 regex=$2
shift 2
out=$("$@" 2>&1)
rc=$?
printf '%s\n' "$out"
if [ "$rc" != "$code" ]; then
    echo "expect_output: exit $rc, expected $code"
    exit 1
fi
if ! printf '%s\n' "$out" | grep -qE -- "$regex"; then
    echo "expect_output: no line matches: $regex"
    exit 1
fi
echo "expect_output: exit $code and the expected line"

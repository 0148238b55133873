#!/bin/sh
# t0010-harness: the test harness cannot pass a test that checked nothing or crashed. A C test
# binary with no check fails (sp_test_finish); a shell test with no check fails (test_done); a
# command that printed the expected line and then crashed, or exited with another code, fails
# tests/tools/expect_output.sh (CTest's PASS_REGULAR_EXPRESSION alone ignored the exit code).
. "$(dirname "$0")/lib.sh"
expect_code "a C test with no check fails" 1 "$TEST_NO_CHECKS"
expect_stdout_contains "and says why" "test_no_checks: no check ran"
printf '. %s/tests/cli/lib.sh\ntest_done\n' "$SRC" >"$TMP/empty.sh"
expect_code "a shell test with no check fails" 1 sh "$TMP/empty.sh"
expect_stdout_contains "and says why" "not ok - no check ran"
E="sh tests/tools/expect_output.sh"
expect_code "the line and the exit code: passes" 0 $E 0 "^done$" sh -c 'echo done'
expect_code "the line, then a crash: fails" 1 $E 0 "^done$" sh -c 'echo done; kill -ABRT $$'
expect_code "the line, another exit code: fails" 1 $E 3 "^done$" sh -c 'echo done; exit 2'
expect_code "the exit code, no line: fails" 1 $E 0 "^done$" sh -c 'echo nothing'
test_done

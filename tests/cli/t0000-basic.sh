#!/bin/sh
# t0000-basic: help, version, usage errors and exit codes.
. "$(dirname "$0")/lib.sh"

expect_code "no arguments is a usage error" 2 "$STAGEPART"
expect_stderr_contains "no arguments prints the usage" "usage: stagepart"
expect_code "help" 0 "$STAGEPART" help
expect_stdout_contains "help lists partition" "partition    Cut a profile"
expect_stdout_contains "help lists exit codes" "3  infeasible"
cp "$TMP/stdout" "$TMP/help1"
expect_code "--help" 0 "$STAGEPART" --help
if cmp -s "$TMP/stdout" "$TMP/help1"; then pass "--help equals help"; else fail "--help equals help"; fi
expect_code "help partition" 0 "$STAGEPART" help partition
cp "$TMP/stdout" "$TMP/help2"
expect_code "partition --help" 0 "$STAGEPART" partition --help
if cmp -s "$TMP/stdout" "$TMP/help2"; then pass "partition --help equals help partition"; else fail "partition --help equals help partition"; fi
expect_empty_stderr() { if [ ! -s "$TMP/stderr" ]; then pass "$1"; else fail "$1" "stderr not empty"; fi; }
expect_empty_stderr "help writes nothing to stderr"
expect_code "partition -h" 0 "$STAGEPART" partition -h
expect_code "version" 0 "$STAGEPART" --version
expect_stdout_contains "version names the release" "stagepart 0.1.0"
expect_stdout_contains "version lists features" "features:"
expect_code "version command" 0 "$STAGEPART" version

expect_code "unknown command" 2 "$STAGEPART" frobnicate
expect_stderr_contains "unknown command is named" "stagepart: error: no command named 'frobnicate'"
expect_stderr_lines "usage error is one line and a hint" 2
expect_code "help for an unknown command" 2 "$STAGEPART" help frobnicate
expect_code "unknown option" 2 "$STAGEPART" partition --bogus x.json
expect_stderr_contains "unknown option is named" "unknown option '--bogus'"
expect_stderr_contains "usage error hints at help" "hint: try 'stagepart partition --help'"
expect_stderr_lines "unknown option: one line and a hint" 2
# a misspelling gets the closest name, as git and curl say it
expect_code "misspelled command" 2 "$STAGEPART" partiton x.json
expect_stderr_contains "did you mean the command" "no command named 'partiton' (did you mean 'partition'?)"
expect_stderr_lines "misspelled command: one line and a hint" 2
expect_code "misspelled option" 2 "$STAGEPART" partition --stage 4 x.json
expect_stderr_contains "did you mean the option" "unknown option '--stage' (did you mean --stages?)"
expect_code "an option's beginning" 2 "$STAGEPART" partition --memory 4 x.json
expect_stderr_contains "the one option it begins" "(did you mean --memory-limit?)"
expect_code "nothing close" 2 "$STAGEPART" partition --zzzzzz x.json
if grep -q "did you mean" "$TMP/stderr"; then fail "nothing close: no guess" "$(cat "$TMP/stderr")"; else pass "nothing close: no guess"; fi
# help for a command's kind
expect_code "help import kineto" 0 "$STAGEPART" help import kineto
expect_stdout_contains "import's help" "usage: stagepart import kineto TRACE"
expect_code "help import: unknown kind" 2 "$STAGEPART" help import bogus
expect_stderr_contains "the kind is named" "'import' has no kind named 'bogus'"
expect_code "help partition: no kinds" 2 "$STAGEPART" help partition x
# import plan: import-plan spelled as import's other kinds are
expect_code "help import plan" 0 "$STAGEPART" help import plan
expect_stdout_contains "import plan's own help" "usage: stagepart import-plan PROFILE"
expect_code "import plan" 0 "$STAGEPART" import plan samples/profiles/llama3-8b.json --megatron-layout "Et*8|t*8|t*8|t*8L" -o "$TMP/ip1.json"
expect_code "import-plan" 0 "$STAGEPART" import-plan samples/profiles/llama3-8b.json --megatron-layout "Et*8|t*8|t*8|t*8L" -o "$TMP/ip2.json"
if "$JSON_DIFF" "$TMP/ip1.json" "$TMP/ip2.json" >/dev/null; then pass "import plan is import-plan"; else fail "import plan is import-plan"; fi
# the commands in the order of the work, names in one column
"$STAGEPART" help >"$TMP/stdout"
order=$(awk '/^Commands:/{on=1; next} on && /^$/{exit} on {print $1}' "$TMP/stdout" | tr '\n' ' ')
if [ "$order" = "profile bandwidth import partition simulate run check export evaluate import-plan help version " ]; then pass "commands in the order of the work"; else fail "commands in the order of the work" "got: $order"; fi
cols=$(awk '/^Commands:/{on=1; next} on && /^$/{exit} on {print index($0, $2)}' "$TMP/stdout" | sort -u | wc -l)
if [ "$cols" = 1 ]; then pass "summaries aligned in one column"; else fail "summaries aligned in one column" "$cols columns"; fi
expect_code "missing profile" 2 "$STAGEPART" partition
expect_stderr_contains "missing profile is named" "missing PROFILE"
expect_code "two profiles" 2 "$STAGEPART" partition a.json b.json
expect_code "stages 0" 2 "$STAGEPART" partition samples/profiles/llama3-8b.json --stages 0
expect_stderr_contains "stages range is named" "--stages expects an integer in [1, 65536], got '0'"
expect_code "stages not a number" 2 "$STAGEPART" partition samples/profiles/llama3-8b.json -s 4x
expect_code "stages missing value" 2 "$STAGEPART" partition samples/profiles/llama3-8b.json --stages
expect_stderr_contains "missing value is named" "option '--stages' needs a value <P>"
expect_code "json takes no value" 2 "$STAGEPART" partition samples/profiles/llama3-8b.json --json=yes
expect_code "unknown objective" 2 "$STAGEPART" partition samples/profiles/llama3-8b.json --objective speed
expect_stderr_contains "objective choices are named" "--objective expects bottleneck, variance, iteration, range or deviation, got 'speed'"
expect_code "unknown solver" 2 "$STAGEPART" partition samples/profiles/llama3-8b.json --solver greedy
expect_code "bad memory limit" 2 "$STAGEPART" partition samples/profiles/llama3-8b.json --memory-limit 80XB
expect_stderr_contains "bad memory limit is explained" "--memory-limit: expected a byte count like 80GB, 80GiB or 4096, got '80XB'"
expect_code "zero memory limit" 2 "$STAGEPART" partition samples/profiles/llama3-8b.json --memory-limit 0
expect_code "-s4 and --stages=4 forms" 0 "$STAGEPART" partition -s4 --stages=4 samples/profiles/llama3-8b.json

# a failed write to stdout is an error, not a silent success
if [ -w /dev/full ]; then
    "$STAGEPART" help >/dev/full 2>"$TMP/stderr"; rc=$?
    if [ "$rc" = 5 ]; then pass "write error on stdout exits 5"; else fail "write error on stdout exits 5" "exit $rc"; fi
    expect_stderr_contains "write error is reported" "cannot write to standard output"
fi
test_done

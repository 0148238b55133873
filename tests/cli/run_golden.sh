#!/bin/sh
# tests/cli/run_golden.sh: golden tests. Each folder tests/golden/<command>/<case>/ holds
#   args             the arguments, one line (run from the source tree)
#   expected.code    the exit code
#   expected.stdout  stdout, with the "solved in" time masked; or, when args has --json,
#   expected.json    stdout compared with json_diff (numeric tolerance, provenance ignored)
#   expected.stderr  stderr
# STAGEPART_UPDATE_GOLDEN=1 rewrites the expected files from the current output.
. "$(dirname "$0")/lib.sh"
mask() { sed -e 's/^solved in   .*/solved in   <time>/'; }
for dir in tests/golden/*/*/; do
    case=${dir%/}
    args=$(cat "$case/args")
    # shellcheck disable=SC2086
    "$STAGEPART" $args >"$TMP/stdout" 2>"$TMP/stderr"; rc=$?
    mask <"$TMP/stdout" >"$TMP/stdout.masked"
    if [ "${STAGEPART_UPDATE_GOLDEN:-0}" = 1 ]; then
        echo "$rc" >"$case/expected.code"
        cp "$TMP/stderr" "$case/expected.stderr"
        case " $args " in
        *" --json "*)
            # keep the file when only provenance or solve time changed
            if ! [ -f "$case/expected.json" ] || ! "$JSON_DIFF" "$case/expected.json" "$TMP/stdout" >/dev/null; then
                cp "$TMP/stdout" "$case/expected.json"
            fi
            rm -f "$case/expected.stdout" ;;
        *) cp "$TMP/stdout.masked" "$case/expected.stdout"; rm -f "$case/expected.json" ;;
        esac
        pass "$case (updated)"
        continue
    fi
    why=""
    [ "$rc" = "$(cat "$case/expected.code")" ] || why="exit code $rc, expected $(cat "$case/expected.code")"
    if [ -f "$case/expected.json" ]; then
        "$JSON_DIFF" "$case/expected.json" "$TMP/stdout" >"$TMP/diff" || why="$why stdout: $(head -5 "$TMP/diff" | tr '\n' ';')"
    elif ! cmp -s "$case/expected.stdout" "$TMP/stdout.masked"; then
        why="$why stdout differs: $(diff "$case/expected.stdout" "$TMP/stdout.masked" | head -6 | tr '\n' ';')"
    fi
    cmp -s "$case/expected.stderr" "$TMP/stderr" || why="$why stderr differs: $(diff "$case/expected.stderr" "$TMP/stderr" | head -4 | tr '\n' ';')"
    if [ -z "$why" ]; then pass "$case"; else fail "$case" "$why"; fi
done
test_done

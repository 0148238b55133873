#!/bin/sh
# t8100-output-paths: every command's output written to what the path is (docs/security.md):
# a character device and a FIFO are written in place and survive as what they were (the FIFO's
# reader gets the whole document); a symbolic link is followed and stays a link, its target
# replaced; "-" is standard output; a directory, a missing folder or one that cannot be written
# exits 2 with the reason. Everything happens under $TMP: the real /dev is never touched.
. "$(dirname "$0")/lib.sh"
P=samples/profiles/llama3-8b.json
MODEL=tests/data/tiny-gpt-model.json
"$STAGEPART" partition "$P" -s 4 -o "$TMP/plan.json" >/dev/null || fail "a plan to start from"
python3 tests/tools/make_traces.py "$TMP/tr" >/dev/null || fail "traces to start from"
"$STAGEPART" profile $MODEL --iters 1 --warmup 0 -o "$TMP/tiny.json" -q >/dev/null &&
    "$STAGEPART" partition "$TMP/tiny.json" -s 2 -o "$TMP/tiny-plan.json" >/dev/null ||
    fail "a tiny model's plan to run"

# writer NAME OUT: the command that writes its output to OUT, and what its document starts with
writer() {
    case $1 in
    partition) "$STAGEPART" partition "$P" -s 4 -o "$2" ;;
    simulate-trace) "$STAGEPART" simulate "$TMP/plan.json" --trace "$2" ;;
    simulate-svg) "$STAGEPART" simulate "$TMP/plan.json" --svg "$2" ;;
    export) "$STAGEPART" export "$TMP/plan.json" --to deepspeed -o "$2" ;;
    import-plan) "$STAGEPART" import-plan "$P" --balance 9,9,9,7 -o "$2" ;;
    check-junit) "$STAGEPART" check --plan "$TMP/plan.json" --profile "$P" --junit "$2" ;;
    import) "$STAGEPART" import kineto "$TMP/tr/trace.json" -o "$2" ;;
    profile) "$STAGEPART" profile $MODEL --iters 1 --warmup 0 -q -o "$2" ;;
    bandwidth) bandwidth_probe --sizes 4KiB,1MiB,16MiB --trials 3 -o "$2" ;;
    run) "$STAGEPART" run "$TMP/tiny-plan.json" --model $MODEL --steps 1 --warmup-steps 0 -o "$2" ;;
    esac
}
starts() {
    case $1 in
    simulate-svg) echo "<svg" ;; check-junit) echo "<?xml" ;; export) echo "#" ;; *) echo "{" ;;
    esac
}
WRITERS="partition simulate-trace simulate-svg export import-plan check-junit import profile bandwidth run"
ROOT=$([ "$(id -u)" = 0 ] && echo yes || echo no)

for w in $WRITERS; do
    D=$TMP/$w
    mkdir "$D"
    # a regular file first: what every other kind must receive
    writer "$w" "$D/file" >"$TMP/stdout" 2>"$TMP/stderr" || fail "$w: a regular file"
    head=$(starts "$w")
    # a character device (the numbers of /dev/null, made here): written in place, kept
    if [ "$ROOT" = yes ] && mknod "$D/dev" c 1 3; then
        run writer "$w" "$D/dev"
        if [ "$rc" = 0 ] && [ -c "$D/dev" ] && [ ! -L "$D/dev" ] &&
            [ "$(stat -c %t:%T "$D/dev")" = 1:3 ] && [ -z "$(ls "$D" | grep "\.tmp\.")" ]; then
            pass "$w: a character device stays one"
        else
            fail "$w: a character device stays one" "exit $rc; now: $(ls -l "$D/dev")"
        fi
        # a link to it: followed, both kept
        ln -s dev "$D/devlink"
        run writer "$w" "$D/devlink"
        if [ "$rc" = 0 ] && [ -L "$D/devlink" ] && [ -c "$D/dev" ]; then
            pass "$w: a link to a device: both kept"
        else
            fail "$w: a link to a device: both kept" "exit $rc; $(ls -l "$D")"
        fi
    elif [ "$ROOT" = yes ]; then
        fail "$w: mknod failed as root"
    fi
    # a FIFO with a reader: the reader gets the whole document, the FIFO stays a FIFO
    mkfifo "$D/fifo"
    cat "$D/fifo" >"$D/fifo.read" &
    reader=$!
    run writer "$w" "$D/fifo"
    sleep 0.2
    kill $reader 2>/dev/null # a writer that never opened it leaves the reader waiting
    wait $reader
    if [ "$rc" = 0 ] && [ -p "$D/fifo" ] && [ "$(head -c ${#head} "$D/fifo.read")" = "$head" ] &&
        [ "$(wc -c <"$D/fifo.read")" -gt 100 ]; then
        pass "$w: a FIFO is written in place, its reader gets the document"
    else
        fail "$w: a FIFO is written in place" "exit $rc; read $(wc -c <"$D/fifo.read") bytes"
    fi
    # a link to a file in another folder: the link stays, the file it names is replaced there
    mkdir "$D/real"
    echo OLD >"$D/real/target"
    chmod 640 "$D/real/target"
    ln -s real/target "$D/link"
    run writer "$w" "$D/link"
    if [ "$rc" = 0 ] && [ -L "$D/link" ] && [ "$(readlink "$D/link")" = real/target ] &&
        [ "$(head -c ${#head} "$D/real/target")" = "$head" ] &&
        [ "$(stat -c %a "$D/real/target")" = 640 ] && [ -z "$(ls "$D" "$D/real" | grep "\.tmp\.")" ]; then
        pass "$w: a link is followed, its target replaced where it lives, its mode kept"
    else
        fail "$w: a link is followed" "exit $rc; $(ls -l "$D/link" "$D/real")"
    fi
    # a dangling link: the file it names is made
    ln -s real/new "$D/dangling"
    run writer "$w" "$D/dangling"
    if [ "$rc" = 0 ] && [ -L "$D/dangling" ] && [ -f "$D/real/new" ]; then
        pass "$w: a dangling link makes the file it names"
    else
        fail "$w: a dangling link" "exit $rc; $(ls -l "$D/dangling" "$D/real")"
    fi
    # "-": the document alone on standard output
    run writer "$w" -
    if [ "$rc" = 0 ] && [ "$(head -c ${#head} "$TMP/stdout")" = "$head" ] &&
        [ ! -e ./- ] && [ "$(wc -c <"$TMP/stdout")" -gt 100 ]; then
        pass "$w: '-' is standard output, the document alone"
    else
        fail "$w: '-' is standard output" "exit $rc; stdout: $(head -c 80 "$TMP/stdout")"
    fi
    # refused with exit 2 and the reason
    run writer "$w" "$D"
    if [ "$rc" = 2 ] && grep -q "is a directory" "$TMP/stderr"; then
        pass "$w: a directory: exit 2"
    else
        fail "$w: a directory: exit 2" "exit $rc"
    fi
    run writer "$w" "$D/missing/out"
    if [ "$rc" = 2 ] && grep -q "missing.*No such file or directory" "$TMP/stderr"; then
        pass "$w: a missing folder: exit 2"
    else
        fail "$w: a missing folder: exit 2" "exit $rc"
    fi
done

# a folder that cannot be written (as nobody when root: root may write anywhere)
mkdir "$TMP/locked" && chmod 755 "$TMP" && chmod 555 "$TMP/locked"
if [ "$ROOT" = yes ]; then
    as_nobody="setpriv --reuid=65534 --regid=65534 --clear-groups"
    cp "$P" "$TMP/locked-profile.json" && chmod 644 "$TMP/locked-profile.json"
    run $as_nobody "$STAGEPART" partition "$TMP/locked-profile.json" -s 4 -o "$TMP/locked/plan.json"
else
    run "$STAGEPART" partition "$P" -s 4 -o "$TMP/locked/plan.json"
fi
if [ "$rc" = 2 ] && grep -q "Permission denied" "$TMP/stderr" && [ -z "$(ls "$TMP/locked")" ]; then
    pass "a folder that cannot be written: exit 2, nothing left"
else
    fail "a folder that cannot be written: exit 2" "exit $rc"
fi
chmod 755 "$TMP/locked"

# two outputs on standard output, or one with --json: refused
expect_code "two outputs on stdout: exit 2" 2 "$STAGEPART" simulate "$TMP/plan.json" --trace - --svg -
expect_code "-o - with --json: exit 2" 2 "$STAGEPART" partition "$P" -s 4 -o - --json
test_done

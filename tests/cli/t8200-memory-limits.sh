#!/bin/sh
# t8200-memory-limits: under an address-space (ulimit -v) or data (ulimit -d) limit from 64 MB
# up, every command succeeds or exits 2 naming the memory it could not get, within seconds; none
# hangs (docs/security.md). OpenBLAS once looped for ever when it could not map its buffer, and
# its thread pool's threads did the same at start-up: `stagepart version` hung under ulimit -d.
. "$(dirname "$0")/lib.sh"
if "$STAGEPART" version | grep -q sanitize; then
    echo "sanitizer build: its shadow memory needs terabytes of address space, so ulimit -v"
    echo "cannot be tested here; the plain build runs this test"
    exit 77
fi
P=samples/profiles/llama3-8b.json
MODEL=tests/data/tiny-gpt-model.json
"$STAGEPART" partition "$P" -s 4 -o "$TMP/plan.json" >/dev/null || fail "a plan to start from"
"$STAGEPART" profile $MODEL --iters 1 --warmup 0 -q -o "$TMP/tiny.json" >/dev/null &&
    "$STAGEPART" partition "$TMP/tiny.json" -s 2 -o "$TMP/tiny-plan.json" >/dev/null ||
    fail "a tiny model's plan to run"
python3 tests/tools/make_traces.py "$TMP/tr" >/dev/null || fail "traces to start from"

# cmdline_of NAME: the command line NAME stands for (outputs under $TMP/out)
cmdline_of() {
    case $1 in
    version) echo version ;;
    help) echo help partition ;;
    partition) echo partition $P -s 8 -o $TMP/out/plan.json ;;
    partition-ilp) echo partition $P -s 4 --solver ilp ;;
    simulate) echo simulate $TMP/plan.json --svg $TMP/out/t.svg ;;
    check) echo check --plan $TMP/plan.json --profile $P ;;
    export) echo export $TMP/plan.json --to megatron ;;
    evaluate) echo evaluate $P --balance 9,9,9,7 ;;
    import) echo import kineto $TMP/tr/trace.json -o $TMP/out/p.json ;;
    profile) echo profile $MODEL --iters 1 --warmup 0 -q -o $TMP/out/m.json ;;
    run) echo run $TMP/tiny-plan.json --model $MODEL --steps 1 --warmup-steps 0 ;;
    bandwidth) echo bandwidth --sizes 4KiB,1MiB,16MiB --trials 5 ;;
    esac
}
mkdir "$TMP/out"
for kind in v d; do
    for mb in 64 96 128 160 192 256 512; do
        for name in version help partition partition-ilp simulate check export evaluate import \
            profile run bandwidth; do
            # shellcheck disable=SC2046
            (ulimit -$kind $((mb * 1024)) && exec timeout -s KILL 30 "$STAGEPART" $(cmdline_of $name)) \
                >"$TMP/stdout" 2>"$TMP/stderr"
            rc=$?
            what="$name under ulimit -$kind $mb MB"
            if [ "$rc" = 0 ]; then
                pass "$what: ok"
            elif [ "$rc" = 2 ] && grep -qiE "memory|stacks" "$TMP/stderr"; then
                pass "$what: exit 2, the memory named"
            elif [ "$name" = bandwidth ] && [ "$rc" = 2 ] && grep -q "link fit" "$TMP/stderr"; then
                pass "$what: exit 2, the probe's copies too noisy to fit (a busy machine)"
            elif [ "$rc" = 137 ]; then
                fail "$what: hung (killed after 30 s)"
            else
                fail "$what: exit $rc" "$(head -c 300 "$TMP/stderr")"
            fi
        done
    done
done
test_done

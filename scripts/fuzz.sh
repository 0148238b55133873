#!/usr/bin/env bash
# scripts/fuzz.sh: build the libFuzzer targets (clang, ASan + UBSan) and run each for a bounded
# time on its seed corpus. Any crash, sanitizer report, leak or timeout fails the script; the
# input that caused it is left in the build folder (crash-*, leak-*, timeout-*) and printed.
#   usage: scripts/fuzz.sh [SECONDS_PER_TARGET]   (default 30)
#   env:   BUILD_DIR (default build-fuzz)
# Targets and their seed folders: tests/fuzz/targets.txt (plus tests/fuzz/regressions/<target>/).
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_PER_TARGET=${1:-30}
BUILD=${BUILD_DIR:-build-fuzz}
ROOT=$PWD

command -v clang >/dev/null || {
    echo "scripts/fuzz.sh: needs clang and the libFuzzer runtime (apt-get install clang libclang-rt-14-dev)" >&2
    exit 4
}
CC=clang cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSTAGEPART_FUZZ=ON \
    -DSTAGEPART_SANITIZE=ON -DSTAGEPART_CUDA=OFF -DSTAGEPART_TESTS=OFF -DSTAGEPART_BENCH=OFF >/dev/null
cmake --build "$BUILD" -j "$(nproc)" >/dev/null

export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
printf '| target | seconds | executions | corpus inputs |\n|---|---|---|---|\n'
grep '^[a-z]' tests/fuzz/targets.txt | while read -r target seeds; do
    [ -d "tests/fuzz/regressions/$target" ] && seeds="$seeds tests/fuzz/regressions/$target"
    corpus="$BUILD/corpus/$target"
    mkdir -p "$corpus"
    log="$BUILD/fuzz_$target.log"
    # shellcheck disable=SC2046,SC2086
    if ! (cd "$BUILD" && "./tests/fuzz/fuzz_$target" -max_total_time="$SECONDS_PER_TARGET" \
        -max_len=65536 -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
        "corpus/$target" $(for d in $seeds; do echo "$ROOT/$d"; done)) >"$log" 2>&1; then
        tail -40 "$log"
        echo "fuzz_$target failed: see $log and the crash-* input in $BUILD" >&2
        exit 1
    fi
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
    inputs=$(find "$corpus" -type f | wc -l)
    printf '| fuzz_%s | %s | %s | %s |\n' "$target" "$SECONDS_PER_TARGET" "$runs" "$inputs"
done

#!/bin/sh
# tests/install/check-install.sh BUILD_DIR: cmake --install into a fresh prefix, then build a
# user's program against it four ways (pkg-config shared and static, find_package shared and
# static) and check that each prints the plan the installed stagepart command makes, the shared
# one loading the installed libstagepart.so, which exports the public API alone.
set -eu
build=${1:?usage: tests/install/check-install.sh BUILD_DIR}
src=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
cmake --install "$build" --prefix "$prefix" >/dev/null
fail() { echo "check-install: $*" >&2; exit 1; }
for f in bin/stagepart bin/stagepart-compute include/stagepart/stagepart.h; do
    [ -e "$prefix/$f" ] || fail "$f not installed"
done
pc=$(find "$prefix" -name stagepart.pc | head -1)
cfg=$(find "$prefix" -name stagepartConfig.cmake | head -1)
lib=$(dirname "$(find "$prefix" -name 'libstagepart.a' | head -1)")
[ -n "$pc" ] && [ -n "$cfg" ] && [ -f "$lib/libstagepart.a" ] && [ -e "$lib/libstagepart.so" ] ||
    fail "pkg-config file, CMake package or a library missing under $prefix"
profile=$src/samples/profiles/llama3-8b.json
# what the installed command says of the plan (run from elsewhere: nothing of the build tree)
want=$(cd "$tmp" && "$prefix/bin/stagepart" partition "$profile" -s 4 --json |
    python3 -c 'import json,sys; p=json.load(sys.stdin); print("%u stages, bottleneck %.3f ms, %s" % (p["stage_count"], p["bottleneck_ms"], p["guarantee"]))')
"$prefix/bin/stagepart" version >/dev/null || fail "the installed stagepart does not run"
expect() { # name, program
    got=$(LD_LIBRARY_PATH="$lib" "$2" "$profile" 4 | sed 's/^stagepart [^:]*: //')
    [ "$got" = "$want" ] || fail "$1: got '$got', expected '$want'"
    echo "check-install: $1: $got"
}
export PKG_CONFIG_PATH="$(dirname "$pc")"
# shellcheck disable=SC2046
cc -std=c11 -o "$tmp/pc_shared" "$src/tests/install/plan_main.c" $(pkg-config --cflags --libs stagepart)
expect "pkg-config, shared" "$tmp/pc_shared"
LD_LIBRARY_PATH="$lib" ldd "$tmp/pc_shared" | grep -q "$lib/libstagepart.so" || fail "pkg-config, shared: not linked to $lib/libstagepart.so"
# shellcheck disable=SC2046
cc -std=c11 -o "$tmp/pc_static" "$src/tests/install/plan_main.c" $(pkg-config --cflags stagepart) \
    "$lib/libstagepart.a" $(pkg-config --static --libs-only-other --libs-only-l stagepart | sed 's/-lstagepart//')
expect "pkg-config, static" "$tmp/pc_static"
! ldd "$tmp/pc_static" | grep -q libstagepart || fail "pkg-config, static: linked to libstagepart.so"
cmake -S "$src/tests/install" -B "$tmp/user" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$tmp/user" >/dev/null
expect "find_package, static" "$tmp/user/plan_static"
expect "find_package, shared" "$tmp/user/plan_shared"
# the shared library exports the API and nothing of its insides
exported=$(nm -D --defined-only "$lib/libstagepart.so" | awk '$2 == "T" {print $3}')
echo "$exported" | grep -qx sp_partition || fail "libstagepart.so does not export sp_partition"
if echo "$exported" | grep -qx sp_chain_init; then fail "libstagepart.so exports sp_chain_init, an internal"; fi
api=$(cat "$src"/include/stagepart/*.h | grep -o 'SP_API[^;(]*[ *]sp_[a-z0-9_]*(' |
    grep -o 'sp_[a-z0-9_]*($' | tr -d '(' | sort -u)
missing=$(echo "$exported" | sort -u | comm -13 - "$(printf '%s\n' "$api" >"$tmp/api"; echo "$tmp/api")")
extra=$(echo "$exported" | sort -u | comm -23 - "$tmp/api")
[ -z "$missing" ] || fail "libstagepart.so lacks what the headers declare: $missing"
[ -z "$extra" ] || fail "libstagepart.so exports what no public header declares: $extra"
echo "check-install: libstagepart.so exports the $(wc -l <"$tmp/api") functions the public headers declare, and nothing else"

#!/bin/sh
# scripts/bootstrap.sh: install what the build needs (Debian packages, as root), configure and
# build. Safe to run again: it installs only what is missing and rebuilds incrementally.
#
# Environment:
#   BUILD_DIR          build folder (default: build)
#   CC                 C compiler (default: cc)
#   STAGEPART_SANITIZE ON for an ASan + UBSan build (default: OFF)
#   STAGEPART_CUDA     AUTO, ON or OFF (default: AUTO: on when the CUDA toolkit is found)
#   CMAKE_BUILD_TYPE   default: RelWithDebInfo
set -eu
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}

# Debian packages: the compiler and build tools, cJSON, GLPK (--solver ilp), OpenSSL's libcrypto (SHA-256 of
# profiles), Python 3 (sample generator, benchmarks, test tools), librsvg2-bin (rsvg-convert:
# the tests render the SVG timelines), OpenBLAS (the built-in models' matrix products), Open MPI
# (stagepart run --transport mpi).
packages="build-essential cmake pkg-config libcjson-dev libssl-dev libglpk-dev libsqlite3-dev zlib1g-dev libopenblas-dev libopenmpi-dev openmpi-bin python3 librsvg2-bin"
case "${CC:-cc}" in clang*) packages="$packages clang libclang-rt-14-dev" ;; esac
missing=""
for p in $packages; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
    if [ "$(id -u)" != 0 ]; then
        echo "bootstrap: missing Debian packages:$missing (run as root, or install them)" >&2
        exit 1
    fi
    echo "bootstrap: installing$missing" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >&2
    # shellcheck disable=SC2086
    apt-get install -y -qq --no-install-recommends $missing >&2
fi

cmake -S . -B "$BUILD_DIR" \
    -DCMAKE_BUILD_TYPE="${CMAKE_BUILD_TYPE:-RelWithDebInfo}" \
    -DSTAGEPART_SANITIZE="${STAGEPART_SANITIZE:-OFF}" \
    -DSTAGEPART_CUDA="${STAGEPART_CUDA:-AUTO}" >&2
cmake --build "$BUILD_DIR" -j "$(nproc)" >&2

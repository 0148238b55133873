#!/usr/bin/env bash
# scripts/gpu-bundle.sh OUT.tar.xz: the CUDA build of stagepart packed to run on a GPU machine
# that has the CUDA toolkit but none of the project's Debian libraries (cJSON, GLPK, OpenBLAS,
# SQLite; ../shared/gpu/README.md, "The GPU test machine"), with no package access.
#
# Built on this (Debian) machine with the same CUDA toolkit, at a fixed prefix,
# /tmp/stagepart-gpu (writable everywhere; the build's absolute paths stay right when it is
# unpacked there): the sources the checks run from (src/), the Release build in src/build-gpu
# (object files left out), and in lib/ every shared library its programs need that is neither
# the C runtime's nor the GPU driver's or toolkit's. The programs find lib/ through their RPATH
# (DT_RPATH, so the libraries' own dependencies are found there too), so nothing else that runs
# beside them (Python, torch) sees these copies. Built without MPI (Open MPI's libraries and
# plugins are many). The bundle must stay under 40 MB.
#
# On the GPU machine: scripts/gpu-check.sh --prebuilt OUT.tar.xz OUTDIR (unpacks it and runs
# every check without configuring anything). docs/gpu.md says the same for users whose GPU
# nodes have no internet.
set -euo pipefail
OUT=${1:?usage: scripts/gpu-bundle.sh OUT.tar.xz}
case "$OUT" in /*) ;; *) OUT="$PWD/$OUT" ;; esac
cd "$(dirname "$0")/.."
PREFIX=/tmp/stagepart-gpu
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
[ -x "$NVCC" ] || { echo "gpu-bundle: no nvcc at $NVCC (set NVCC)" >&2; exit 4; }
rm -rf "$PREFIX"
mkdir -p "$PREFIX/src" "$PREFIX/lib"
# the working tree's files (tracked, and untracked ones git does not ignore)
git ls-files -z --cached --others --exclude-standard | xargs -0 -I{} cp --parents {} "$PREFIX/src/" 2>/dev/null ||
    { echo "gpu-bundle: copying the sources failed" >&2; exit 1; }
git rev-parse HEAD >"$PREFIX/src/.bundle-commit" 2>/dev/null || echo unknown >"$PREFIX/src/.bundle-commit"
B="$PREFIX/src/build-gpu"
cmake -S "$PREFIX/src" -B "$B" -DSTAGEPART_CUDA=ON -DCMAKE_BUILD_TYPE=Release \
    -DCUDAToolkit_ROOT="$(dirname "$(dirname "$NVCC")")" -DSTAGEPART_MPI=OFF -DSTAGEPART_BENCH=OFF \
    -DCMAKE_BUILD_RPATH="$PREFIX/lib" \
    -DCMAKE_EXE_LINKER_FLAGS="-Wl,--disable-new-dtags" \
    -DCMAKE_SHARED_LINKER_FLAGS="-Wl,--disable-new-dtags" >"$PREFIX/bundle-build.log"
cmake --build "$B" -j"$(nproc)" >>"$PREFIX/bundle-build.log"
# the libraries the programs need, less the C runtime's and the GPU's (present there)
system='^(linux-vdso|ld-linux|libc|libm|libdl|librt|libpthread|libstdc\+\+|libgcc_s|libutil|libresolv|libnsl|libanl|libcuda|libcudart|libcublas|libcublasLt|libcupti|libnvToolsExt|libnvrtc|libnccl)\.'
find "$B" -type f \( -perm -u+x -o -name '*.so*' \) -exec sh -c 'head -c 4 "$1" | grep -q ELF' _ {} \; -print |
    while read -r f; do ldd "$f" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}'; done |
    sort -u | while read -r name path; do
        if ! echo "$name" | grep -Eq "$system" && [ ! -e "$PREFIX/lib/$name" ]; then
            cp -L "$path" "$PREFIX/lib/$name"
        fi
    done
# OpenBLAS is loaded at run time (models/blas.c: dlopen, found through the programs' RPATH), so
# no ldd above names it: it and what it needs are copied by name
blas=$(ldconfig -p | awk '$1 == "libopenblas.so.0" {print $NF; exit}')
[ -n "$blas" ] || { echo "gpu-bundle: libopenblas.so.0 not found (libopenblas-dev)" >&2; exit 1; }
{ echo "libopenblas.so.0 $blas"; ldd "$blas" | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}'; } |
    while read -r name path; do
        if ! echo "$name" | grep -Eq "$system" && [ ! -e "$PREFIX/lib/$name" ]; then
            cp -L "$path" "$PREFIX/lib/$name"
        fi
    done
find "$B" \( -name '*.o' -o -name '*.a' -o -name '*.d' \) -delete
tar -C / -cJf "$OUT" "${PREFIX#/}"
size=$(stat -c %s "$OUT")
echo "wrote $OUT ($((size / 1000000)) MB; libraries: $(ls "$PREFIX/lib" | tr '\n' ' '))"
if [ "$size" -gt 40000000 ]; then
    echo "gpu-bundle: the bundle is over 40 MB" >&2
    exit 1
fi

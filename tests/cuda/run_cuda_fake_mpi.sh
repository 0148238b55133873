#!/bin/sh
# tests/cuda/run_cuda_fake_mpi.sh PROGRAM: test_run_cuda_fake_mpi under mpirun: 2 ranks sharing
# one stand-in GPU and 3 ranks on two (host buffers), 2 ranks on two and 3 on three (NCCL), and
# 2 on two with STAGEPART_NCCL=0 (host buffers); every rank must pass.
set -u
prog=$1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 # CI runs as root
export OMPI_MCA_btl_vader_single_copy_mechanism=none              # containers without CMA
export LSAN_OPTIONS="suppressions=$(dirname "$0")/../lsan/openmpi.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}fast_unwind_on_malloc=0"
command -v mpirun >/dev/null || { echo "no mpirun: skipped"; exit 77; }
failed=0
for job in "2 1 1" "2 2 1" "3 2 1" "3 3 1" "2 2 0"; do
    set -- $job
    echo "== $1 ranks, $2 stand-in GPUs, STAGEPART_NCCL=$3"
    STAGEPART_NCCL=$3 timeout 120 mpirun --oversubscribe -x STAGEPART_NCCL -np "$1" "$prog" "$2" ||
        failed=1
done
exit $failed

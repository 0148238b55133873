#!/bin/sh
# tests/cuda/model_cuda_trains.sh PROGRAM MODEL [OPTIONS]: 40 SGD steps of a built-in model with
# stagepart-model-cuda (on the GPU, or with --backend cpu on the CPU executor: the same steps and
# ranges) lower its loss by at least a tenth; 77 (skipped) when there is no device.
set -u
prog=$1 model=$2
shift 2
out=$("$prog" "$model" --steps 40 --lr 0.1 "$@")
rc=$?
[ $rc -eq 77 ] && exit 77
[ $rc -ne 0 ] && { echo "stagepart-model-cuda exited $rc"; exit 1; }
echo "$out" | awk '
    NR == 1 { first = $4 }
    { last = $4; n++ }
    END {
        printf "%d steps: loss %.4f -> %.4f\n", n, first, last
        if (n != 40 || !(last < 0.9 * first)) { print "FAIL: the loss did not fall by a tenth"; exit 1 }
    }'

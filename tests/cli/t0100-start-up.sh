#!/bin/sh
# t0100-start-up: the commands that read and write documents start without BLAS, MPI, CUDA or
# NCCL (docs/architecture.md: they live in stagepart-compute), and OpenBLAS is loaded only when
# a model computes, with its thread pool off (one thread per process it would have started).
. "$(dirname "$0")/lib.sh"
P=samples/profiles/llama3-8b.json
heavy='libopenblas|libblas|libmpi|libcudart|libcuda\.|libcupti|libnccl|libcublas'
needed=$(readelf -d "$STAGEPART" | grep NEEDED)
if echo "$needed" | grep -qE "$heavy"; then
    fail "stagepart links none of BLAS, MPI, CUDA, NCCL" "$needed"
else
    pass "stagepart links none of BLAS, MPI, CUDA, NCCL"
fi
"$STAGEPART" partition "$P" -s 4 -o "$TMP/plan.json" >/dev/null
# loaded(CMD...): the shared objects the dynamic loader opened for CMD
loaded() { LD_DEBUG=files "$@" 2>&1 >/dev/null | grep -oE 'file=[^ ]+' | sort -u; }
# (version counts the CUDA devices where CUDA is linked: in CUDA builds it is stagepart-compute's)
version=version
"$STAGEPART" version | grep -q '^features:.*cuda' && version=""
for cmd in "partition $P -s 4" "simulate $TMP/plan.json" "check --plan $TMP/plan.json --profile $P" \
    "export $TMP/plan.json --to megatron" "evaluate $P --balance 9,9,9,7" $version "help run"; do
    libs=$(loaded "$STAGEPART" $cmd)
    if echo "$libs" | grep -qE "$heavy"; then
        fail "${cmd%% *} loads none of them" "$libs"
    else
        pass "${cmd%% *} loads none of them"
    fi
done
# a command that computes gets OpenBLAS, without the pool's threads (only the measuring one)
MODEL=tests/data/tiny-gpt-model.json
libs=$(loaded "$STAGEPART" profile $MODEL --iters 1 --warmup 0 -q -o "$TMP/m.json")
if echo "$libs" | grep -q libopenblas; then pass "profile MODEL loads OpenBLAS"; else fail "profile MODEL loads OpenBLAS" "$libs"; fi
# OpenBLAS's pool threads would show as more than the main and measuring threads; the threads
# are counted in /proc while the run is in its timed iterations
"$STAGEPART" profile $MODEL --iters 400 --warmup 0 -q -o "$TMP/m2.json" >/dev/null 2>&1 &
pid=$!
sleep 1
threads=$(ls /proc/$pid/task 2>/dev/null | wc -l)
wait $pid
if [ "$threads" -ge 1 ] && [ "$threads" -le 2 ]; then
    pass "no OpenBLAS thread pool ($threads threads)"
else
    fail "no OpenBLAS thread pool" "$threads threads in the running profile"
fi
test_done

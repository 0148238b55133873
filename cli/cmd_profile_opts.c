/* cli/cmd_profile_opts.c: the options and help of `stagepart profile`. They are apart from the
 * command (cmd_profile.c) so that the stagepart command can print them without linking what the
 * command runs on (docs/architecture.md: the commands that compute run in stagepart-compute). */
#include "cmd_profile_opts.h"
#include "attach.h"
#include "attribution.h"
#include "profile_model.h"

const struct cli_opt cmd_profile_opts[] = {
    {OPT_BACKEND, "backend", 0, "<cpu|cuda>",
     "where MODEL runs: cpu (one pinned thread, OpenBLAS; default), or cuda (one GPU: cuBLAS, "
     "timed by the live collector; a stagepart built with nvcc; exit 4 without a GPU)",
     "Built-in models"},
    {OPT_SMS, "sms", 0, "<N>",
     "with --backend cuda: run MODEL on a partition of N of the GPU's SMs (a green context, "
     "as each stage of `run --gpu-split` gets), for plans of stages that share a GPU; the "
     "profile records it",
     "Built-in models"},
    {OPT_SEQ_LEN, "seq-len", 0, "<S>",
     "positions per sample for token models (default: the model file's seq_len)",
     "Built-in models"},
    {OPT_WARMUP, "warmup", 0, "<N>", "untimed iterations first (default: 1)", "Built-in models"},
    {OPT_ITERS, "iters", 0, "<K>", "timed iterations; the profile holds their medians (default: 5)",
     "Built-in models"},
    {OPT_CORE, "core", 0, "<C>",
     "pin the measuring thread to core C (default: the last core this process may use)",
     "Built-in models"},
    {OPT_QUIET, "quiet", 'q', NULL, "no progress bar (there is none when stderr is no terminal)",
     "Built-in models"},
    {OPT_ATTACH, "attach", 0, NULL,
     "run CMD ARGS (after --) with the CUPTI + NVTX collector injected", "Collection"},
    {OPT_STEPS, "steps", 0, "<K>",
     "stop recording after K step ranges past the warm-up (default: record until exit)",
     "Collection"},
    {OPT_EVENTS_DIR, "events-dir", 0, "<dir>",
     "keep the event logs (one per process) in <dir>, for `stagepart import events`; with "
     "--attach or MODEL --backend cuda (default: a temporary folder, removed)",
     "Collection"},
    CLI_ATTRIBUTION_OPTS,
    CLI_PROFILE_OUTPUT_OPT(OPT_OUTPUT),
    {0, NULL, 0, NULL, NULL, NULL},
};

const struct cli_command_help cmd_profile_help = {
    "profile",
    "MODEL [--backend cpu|cuda] [--micro-batch-size B] [--seq-len S] [--iters K] [-o PROFILE]\n"
    "       stagepart profile --attach [-o PROFILE] [--steps K --warmup-steps N] [options] -- "
    "CMD ARGS...",
    "Measure a built-in model on the CPU or a GPU, or a running CUDA program's per-layer GPU "
    "time.",
    "MODEL is a stagepart-model file (samples/models/, docs/models.md): stagepart runs it forward\n"
    "  and backward on one thread pinned to one core (OpenBLAS sgemm, fp32), timing every layer,\n"
    "  and writes a profile with the medians, the weight-gradient part of each backward, the\n"
    "  exact activation, saved and parameter bytes, and each layer's spread ('measured'). It\n"
    "  prints the repeatability (coefficient of variation per layer) and warns above 5%.\n"
    "  Ctrl-C stops it and writes nothing (exit 130).\n"
    "With --backend cuda it runs MODEL on the GPU instead (stagepart-model-cuda: cuBLAS products,\n"
    "  fp32, or bf16 tensor-core math for a bf16 model) inside NVTX ranges '<layer>/fwd' and\n"
    "  '<layer>/bwd', under the collector of --attach: the profile holds each layer's GPU busy\n"
    "  time (median of the --iters steps after --warmup) and the model's exact bytes.\n"
    "With --attach it runs CMD unchanged, with libstagepart-inject.so loaded by the CUDA driver\n"
    "  and by NVTX: the program names its layers with NVTX ranges '<layer>/fwd' and '<layer>/bwd' "
    "(the\n"
    "  PyTorch helper profiler/python/stagepart_torch.py adds them by module hooks) and its\n"
    "  steps 'stagepart/step'. CUPTI's activity API records every kernel, copy and memset;\n"
    "  each goes to the range open on the thread that launched it (CUPTI external\n"
    "  correlation), then to its layer, as in `stagepart import`. Kernels of CUDA graph\n"
    "  launches count for the range around the launch. The collector never stops the program:\n"
    "  a CUPTI failure is reported once and recording turns off. Needs a stagepart built with\n"
    "  CUDA (or STAGEPART_INJECT_LIB naming the library). Exit 1 when the program fails (no\n"
    "  profile is written), 4 when no GPU work was recorded. docs/profiling.md.",
    "  stagepart profile samples/models/gpt2-small.json -o gpt2.json\n"
    "  stagepart profile samples/models/resnet18.json --micro-batch-size 32 --iters 9 -o r.json\n"
    "  stagepart profile samples/models/gpt2-small.json --backend cuda --micro-batch-size 8 "
    "-o g.json\n"
    "  stagepart profile samples/models/gpt2-small.json --backend cuda --sms 64 -o g64.json\n"
    "  stagepart profile --attach -o profile.json --warmup-steps 2 --steps 5 -- python train.py\n"
    "  stagepart profile --attach --events-dir run/ -o profile.json -- ./my_cuda_app\n",
    .exits = CLI_EXITS_CHECK_FAILED | CLI_EXITS_UNAVAILABLE | CLI_EXITS_INTERRUPTED,
};

/* cli/cmd_run_opts.c: the options and help of `stagepart run`. They are apart from the command
 * (cmd_run.c) so that the stagepart command can print them without linking what the command
 * runs on (docs/architecture.md: the commands that compute run in stagepart-compute). */
#include "cmd_run_opts.h"
#include "cli.h"

const struct cli_opt cmd_run_opts[] = {
    {OPT_MODEL, "model", 0, "<file>", "the stagepart-model the plan's profile was made from",
     "Run"},
    {OPT_BACKEND, "backend", 0, "<cpu|cuda>",
     "cpu (default): each stage on its own pinned thread; cuda: stage s on GPU s mod the GPUs "
     "there are (cuBLAS), outputs copied peer to peer; with --transport mpi each rank on its "
     "local rank's GPU, tensors by NCCL (host buffers where ranks share a GPU) (a build with "
     "nvcc; exit 4 without a GPU)",
     "Run"},
    {OPT_TRANSPORT, "transport", 0, "<threads|mpi>",
     "threads (default): bounded queues in one process; mpi: rank s runs stage s (start "
     "with mpirun -np P; exit 4 when not built with Open MPI)",
     "Run"},
    {OPT_SCHEDULE, "schedule", 0, "<gpipe|1f1b>", "the op order (default: the plan's, else 1f1b)",
     "Run"},
    {OPT_MICRO_BATCHES, "micro-batches", 'm', "<M>", "micro-batches per step (default: the plan's)",
     "Run"},
    {OPT_MBS, "micro-batch-size", 0, "<B>",
     "samples per micro-batch (default: the model file's; give the size the plan's profile was "
     "measured at)",
     "Run"},
    {OPT_SEQ_LEN, "seq-len", 0, "<S>",
     "positions per sample for token models (default: the model file's)", "Run"},
    {OPT_STEPS, "steps", 0, "<K>", "measured steps; figures are their medians (default: 3)", "Run"},
    {OPT_WARMUP_STEPS, "warmup-steps", 0, "<N>", "steps run first and not measured (default: 1)",
     "Run"},
    {OPT_LR, "lr", 0, "<x>", "SGD learning rate (default: 0.01)", "Run"},
    {OPT_SEED, "seed", 0, "<n>", "weights and data (default: 1)", "Run"},
    {OPT_TIMEOUT, "timeout", 0, "<s>",
     "the longest a stage waits for a neighbour before the run stops (default: 60)", "Run"},
    {OPT_NO_PIN, "no-pin", 0, NULL, "do not pin stage threads to cores", "Run"},
    {OPT_GPU_SPLIT, "gpu-split", 0, NULL,
     "with --backend cuda: stages that share a GPU each get an equal SM partition of it (green "
     "contexts; memory bandwidth and L2 stay shared) instead of competing as streams",
     "Run"},
    {OPT_ISOLATE, "isolate", 0, NULL,
     "run every op alone, one at a time in the simulator's order, so each stage's busy time is "
     "what it costs on a machine of its own; the pipelined iteration is replayed from the "
     "measured op times (for many stages on one GPU, or one core)",
     "Run"},
    {OPT_FAULT, "inject-fault", 0, "<s:step:mb:fail|hang>",
     "testing: stage s fails, or stops answering, at that micro-batch's forward", "Testing"},
    {OPT_OUTPUT, "output", 'o', "<file>", "write the run report (stagepart-run-report) atomically",
     "Output"},
    {OPT_JSON, "json", 0, NULL, "print the run report on stdout instead of the table", "Output"},
    {OPT_TRACE, "trace", 0, "<file>",
     "write the last step's measured timeline as Chrome trace JSON (the simulator's format)",
     "Output"},
    {OPT_SVG, "svg", 0, "<file>", "write the last step's measured timeline as SVG", "Output"},
    {0, NULL, 0, NULL, NULL, NULL},
};

const struct cli_command_help cmd_run_help = {
    "run",
    "PLAN --model MODEL [--schedule gpipe|1f1b] [--micro-batches M] [--steps K] [-o REPORT]",
    "Train a built-in model pipelined as the plan splits it, and measure its balance.",
    "Each stage runs its layers of MODEL on its own thread, pinned to its own core; activations\n"
    "go forward and gradients back through bounded queues, in the op order the simulator uses;\n"
    "each step ends with an SGD update. Per stage it measures the busy time (forward and\n"
    "backward compute), the time blocked on each neighbour, the copies and the peak memory; per\n"
    "run the iteration time, bubble fraction and imbalance, set against the plan's stage times\n"
    "and its simulated iteration. The last line says whether the balance held: every stage's\n"
    "share of the busy time within 10% of its planned share and the iteration within 15% of\n"
    "the simulation, both with the host's overall speed taken out (the line before says it:\n"
    "\"every stage 2.00x slower than profiled on the whole\" is the host, not the balance). A\n"
    "stage that fails, or a neighbour silent for --timeout seconds, stops every stage: exit 4\n"
    "naming the stage, step and micro-batch (3 when a stage cannot allocate its layers). Ctrl-C\n"
    "stops the run and writes nothing (exit 130). --isolate runs one op at a time (stages on\n"
    "  one GPU or one core): busy times compare with the plan, and the iteration is replayed\n"
    "  through the simulator from the measured op times. A plan with replicated stages\n"
    "  (partition --gpus N) runs with --transport mpi, one rank per replica (mpirun -np N):\n"
    "  replicas take every r-th micro-batch and sum their gradients before each update.\n"
    "  docs/runtime.md.",
    "  stagepart profile samples/models/gpt2-small.json -o gpt2.json\n"
    "  stagepart partition gpt2.json --stages 2 -o plan.json\n"
    "  stagepart run plan.json --model samples/models/gpt2-small.json -o report.json --svg "
    "run.svg\n"
    "  stagepart check --plan plan.json --profile gpt2.json --report report.json\n",
    .exits = CLI_EXITS_INFEASIBLE | CLI_EXITS_UNAVAILABLE | CLI_EXITS_INTERRUPTED,
};

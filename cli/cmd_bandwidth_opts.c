/* cli/cmd_bandwidth_opts.c: the options and help of `stagepart bandwidth`. They are apart from the
 * command (cmd_bandwidth.c) so that the stagepart command can print them without linking what the
 * command runs on (docs/architecture.md: the commands that compute run in stagepart-compute). */
#include "cmd_bandwidth_opts.h"
#include "cli.h"

const struct cli_opt cmd_bandwidth_opts[] = {
    {OPT_BACKEND, "backend", 0, "<cpu|cuda>",
     "what to measure: cpu, copies between worker threads pinned to cores; cuda, copies between "
     "every pair of CUDA devices (and host, within each device, NCCL) (default: cpu)",
     "Measurement"},
    {OPT_WORKERS, "workers", 'w', "<N>",
     "cpu: worker threads; every ordered pair is measured (default: 2)", "Measurement"},
    {OPT_SIZES, "sizes", 0, "<list>",
     "message sizes, comma-separated, with KiB/MiB/GiB suffixes (default: 4KiB,16KiB,...,64MiB "
     "on cpu, ...,1GiB on cuda)",
     "Measurement"},
    {OPT_TRIALS, "trials", 0, "<N>", "timed rounds per size; the median is fitted (default: 7)",
     "Measurement"},
    {OPT_WARMUP, "warmup", 0, "<N>", "untimed rounds per size (default: 2)", "Measurement"},
    {OPT_OUTPUT, "output", 'o', "<file>",
     "write the links file to <file> (atomically) and print the table; default: the links file "
     "on stdout",
     "Output"},
    {0, NULL, 0, NULL, NULL, NULL},
};

const struct cli_command_help cmd_bandwidth_help = {
    "bandwidth",
    "[--backend cpu|cuda] [--workers N] [--sizes LIST] [--trials N] [-o LINKS]",
    "Measure the links between workers and write a links file for partition --links.",
    "cpu: for every ordered pair of worker threads (each pinned to its own core when there are\n"
    "  enough), the sender fills a buffer and raises a flag, the receiver copies it into its\n"
    "  own; the time runs from the flag to the end of the copy, which is what the CPU pipeline\n"
    "  pays at a stage boundary. The median per size is fitted to t = latency + bytes /\n"
    "  bandwidth (least squares on the relative error); the file holds every sample and fit\n"
    "  under \"measurement\".\n"
    "cuda: for every ordered pair of devices, cudaMemcpyPeerAsync on the sender's stream, each\n"
    "  copy timed by CUPTI's memcpy records (CUDA events beside, as a cross-check); per device\n"
    "  also host-to-device, device-to-host and within the device, and NCCL send/recv per pair\n"
    "  when built with NCCL (those in \"measurement\" only). With one GPU there is no link\n"
    "  between devices: it says so and measures what one GPU allows. Exit 4 without a device\n"
    "  or in a build without CUDA. docs/profiling.md.",
    "  stagepart bandwidth -o links.json\n"
    "  stagepart bandwidth --workers 4 --sizes 64KiB,1MiB,16MiB --trials 11 -o links.json\n"
    "  stagepart partition profile.json -s 2 --links links.json\n",
    .exits = CLI_EXITS_UNAVAILABLE,
};

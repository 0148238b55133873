/* cli/cmd_import.c: `stagepart import kineto|nsys TRACE`: a profile from a profiler's trace. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

enum {
    OPT_OUTPUT = 1,
    OPT_LAYER,
    OPT_PHASE,
    OPT_STEP,
    OPT_WARMUP,
    OPT_MODEL,
    OPT_MBS,
};

const struct sp_opt cmd_import_opts[] = {
    {OPT_LAYER, "layer-pattern", 0, "<regex>",
     "ranges that are layers (POSIX extended regex; group 1 is the layer's name; default: "
     "'^(.+)/(fwd|bwd|recompute)$')",
     "Attribution"},
    {OPT_PHASE, "phase-pattern", 0, "<regex>",
     "group 1 is a range's phase: fwd, forward, bwd, backward, recompute, optimizer (default: "
     "'/(fwd|bwd|recompute|optimizer)$'; unmarked layer ranges are forward)",
     "Attribution"},
    {OPT_STEP, "step-pattern", 0, "<regex>",
     "training-step ranges (default: '^(stagepart/step|ProfilerStep#[0-9]+)')", "Attribution"},
    {OPT_WARMUP, "warmup-steps", 0, "<N>", "skip the first N steps (default: 0)", "Attribution"},
    {OPT_MODEL, "model", 0, "<name>", "the profile's model name (default: the file's name)",
     "Profile"},
    {OPT_MBS, "micro-batch-size", 0, "<B>",
     "samples per step the trace was recorded at (default: 1)", "Profile"},
    {OPT_OUTPUT, "output", 'o', "<file>",
     "write the profile to <file> (atomically) and print a summary; default: the profile on "
     "stdout",
     "Output"},
    {0, NULL, 0, NULL, NULL, NULL},
};

const struct sp_command_help cmd_import_help = {
    "import",
    "kineto|nsys TRACE [-o PROFILE] [options]",
    "Make a profile from a PyTorch profiler trace or an Nsight Systems SQLite export.",
    "kineto: the Chrome trace torch.profiler writes (export_chrome_trace or\n"
    "  tensorboard_trace_handler), plain or .gz. nsys: `nsys export --type sqlite` of a report\n"
    "  recorded with -t cuda,nvtx. Each GPU kernel, copy and memset goes to the host range that\n"
    "  launched it (correlation ids, the launching thread, the innermost enclosing range), and\n"
    "  from there to the nearest layer range. Layers are ranges named '<layer>/fwd' and\n"
    "  '<layer>/bwd' (a forward inside a backward is recomputation); steps are ranges named\n"
    "  'stagepart/step' or 'ProfilerStep#N'. fwd_ms and bwd_ms are the median over the steps of\n"
    "  each layer's merged GPU busy time; NCCL kernels and copies are reported apart. The\n"
    "  summary says how much GPU time no layer got. docs/profiling.md.",
    "  stagepart import kineto trace.json.gz -o profile.json --warmup-steps 2\n"
    "  stagepart import nsys report.sqlite -o profile.json\n"
    "  stagepart import kineto trace.json --layer-pattern '^nn\\.Module: (.*)$' -o profile.json\n",
};

static void print_summary(const sp_trace_summary *s, const char *written) {
    printf("%zu layers", s->layers);
    if (s->steps_total)
        printf(", median of %u steps (%u warm-up skipped)", s->steps_used,
               s->steps_total - s->steps_used);
    else
        printf(", one pass (no step ranges)");
    printf("\n\nGPU time     %10.3f ms in %llu activities\n", s->gpu_ms,
           (unsigned long long)s->activities);
    printf("  layers     %10.3f ms (%.1f%%)\n", s->layer_ms,
           s->gpu_ms > 0 ? 100 * s->layer_ms / s->gpu_ms : 0);
    printf("  optimizer  %10.3f ms\n", s->optimizer_ms);
    printf("  other      %10.3f ms (under ranges that are no layer)\n", s->other_ms);
    printf("  none       %10.3f ms (%.1f%%: launched outside every range, or %llu without a "
           "launch record)\n",
           s->unattributed_ms, 100 * s->unattributed_share, (unsigned long long)s->unmatched);
    if (s->outside_steps_ms > 0)
        printf("layer work in warm-up steps or outside steps: %.3f ms (not measured)\n",
               s->outside_steps_ms);
    if (s->dropped_records)
        printf("the collector dropped %llu records\n", (unsigned long long)s->dropped_records);
    if (written)
        printf("wrote        %s\n", written);
}

int cmd_import(int argc, char **argv) {
    sp_trace_profile_opts opts;
    sp_trace_profile_opts_init(&opts);
    const char *output = NULL;
    uint64_t v = 0;
    struct sp_opt_parser p;
    sp_opt_parser_init(&p, "import", cmd_import_opts, argc, argv);
    for (int id; (id = sp_opt_next(&p)) != SP_OPT_DONE;) {
        switch (id) {
        case SP_OPT_ERROR:
            return SP_EXIT_USAGE;
        case SP_OPT_HELP:
            sp_print_command_help(stdout, &cmd_import_help, cmd_import_opts);
            return SP_EXIT_OK;
        case OPT_OUTPUT:
            output = p.value;
            break;
        case OPT_LAYER:
            opts.layer_pattern = p.value;
            break;
        case OPT_PHASE:
            opts.phase_pattern = p.value;
            break;
        case OPT_STEP:
            opts.step_pattern = p.value;
            break;
        case OPT_WARMUP:
            if (!sp_opt_uint(&p, 0, 1000000, &v))
                return SP_EXIT_USAGE;
            opts.warmup_steps = (uint32_t)v;
            break;
        case OPT_MODEL:
            opts.model = p.value;
            break;
        case OPT_MBS:
            if (!sp_opt_uint(&p, 1, 1u << 30, &v))
                return SP_EXIT_USAGE;
            opts.micro_batch_size = v;
            break;
        }
    }
    if (p.n_positional != 2)
        return sp_usage_error("import", "expected kineto|nsys and one TRACE, got %d arguments",
                              p.n_positional);
    const char *kind = p.positional[0], *path = p.positional[1];
    bool kineto = strcmp(kind, "kineto") == 0;
    if (!kineto && strcmp(kind, "nsys") != 0)
        return sp_usage_error("import", "the trace kind is kineto or nsys, got '%s'", kind);
    const char *inputs[] = {path};
    int clash = sp_check_output_not_input("import", "--output", output, inputs, 1);
    if (clash)
        return clash;
    sp_ctx *ctx = NULL;
    if (sp_ctx_create(&ctx) != SP_OK)
        return SP_EXIT_INTERNAL;
    sp_trace *trace = NULL;
    char *json = NULL;
    sp_trace_summary sum;
    int code = SP_EXIT_OK;
    sp_status st =
        kineto ? sp_trace_load_kineto(ctx, path, &trace) : sp_trace_load_nsys(ctx, path, &trace);
    if (st == SP_OK)
        st = sp_trace_to_profile(ctx, trace, &opts, &json, &sum);
    if (st == SP_OK && output)
        st = sp_write_file_atomic(ctx, output, json, strlen(json));
    if (st != SP_OK) {
        code = sp_report(ctx, st, false);
    } else if (output) {
        print_summary(&sum, output);
    } else {
        fputs(json, stdout);
    }
    if (st == SP_OK && sum.unattributed_share > 0.02)
        fprintf(stderr,
                "stagepart: warning: %.1f%% of GPU time is in no range: kernels launched "
                "outside the layer ranges (or a trace without launch records)\n",
                100 * sum.unattributed_share);
    sp_free(json);
    sp_trace_destroy(trace);
    sp_ctx_destroy(ctx);
    return code;
}

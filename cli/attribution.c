/* cli/attribution.c: the attribution options and the profile written from a trace (attribution.h).
 */
#include <stdlib.h>
#include <string.h>

#include "attribution.h"

bool cli_attribution_opt(const struct cli_opt_parser *p, int id, sp_trace_profile_opts *opts,
                         bool *taken) {
    uint64_t v = 0;
    *taken = true;
    switch (id) {
    case CLI_ATTR_OPT_LAYER:
        opts->layer_pattern = p->value;
        return true;
    case CLI_ATTR_OPT_LAYERS:
        opts->layers = p->value;
        return true;
    case CLI_ATTR_OPT_PHASE:
        opts->phase_pattern = p->value;
        return true;
    case CLI_ATTR_OPT_STEP:
        opts->step_pattern = p->value;
        return true;
    case CLI_ATTR_OPT_WARMUP:
        if (!cli_opt_uint(p, 0, 1000000, &v))
            return false;
        opts->warmup_steps = (uint32_t)v;
        return true;
    case CLI_ATTR_OPT_MIN_SHARE: {
        char *end = NULL;
        double x = strtod(p->value, &end);
        if (!end || *end || !(x >= 0 && x <= 1)) {
            cli_usage_error(p->command, "--min-layer-share expects a share in [0, 1], got '%s'",
                            p->value);
            return false;
        }
        opts->min_layer_share = x;
        return true;
    }
    case CLI_ATTR_OPT_MODEL_AS_NAME:
        fprintf(stderr,
                "stagepart: warning: --model %s names the profile's model: that is "
                "--name %s now (--model names a stagepart-model file, as in run)\n",
                p->value, p->value);
        /* fall through */
    case CLI_ATTR_OPT_NAME:
        opts->model = p->value;
        return true;
    case CLI_ATTR_OPT_MBS:
        if (!cli_opt_uint(p, 1, 1u << 30, &v))
            return false;
        opts->micro_batch_size = v;
        return true;
    default:
        *taken = false;
        return true;
    }
}

static void print_summary(const sp_trace_summary *s, const char *written) {
    printf("%zu %s", s->layers, cli_noun(s->layers, "layer", "layers"));
    if (s->steps_total)
        printf(", median of %u %s%s (%u warm-up skipped)", s->steps_used,
               cli_noun(s->steps_used, "step", "steps"),
               s->steps_from_optimizer ? " found by the optimizer's steps"
               : s->steps_from_forward ? " found by the model's top-level calls"
                                       : "",
               s->steps_total - s->steps_used);
    else
        printf(", one pass (no step ranges)");
    printf("\nlayers: %s", s->layers_chosen);
    if (s->cpu_time)
        printf("\n\nno GPU activity in the trace: times are its CPU operators' own time (each "
               "op's span less its child ops'),\nattributed as a kernel it launched would be\n"
               "CPU time     %10.3f ms in %llu pieces of operators\n",
               s->gpu_ms, (unsigned long long)s->activities);
    else
        printf("\n\nGPU time     %10.3f ms in %llu activities\n", s->gpu_ms,
               (unsigned long long)s->activities);
    printf("  layers     %10.3f ms (%.1f%%)\n", s->layer_ms,
           s->gpu_ms > 0 ? 100 * s->layer_ms / s->gpu_ms : 0);
    printf("  optimizer  %10.3f ms\n", s->optimizer_ms);
    printf("  other      %10.3f ms (under ranges that are no layer)\n", s->other_ms);
    printf("  none       %10.3f ms (%.1f%%: launched outside every range, or %llu without a "
           "launch record)\n",
           s->unattributed_ms, 100 * s->unattributed_share, (unsigned long long)s->unmatched);
    if (s->n_outside)
        printf("\nin no layer, largest first (where it was launched):\n");
    for (size_t i = 0; i < s->n_outside; i++)
        printf("  %10.3f ms %6llux  %-48.48s  %s\n", s->outside[i].ms,
               (unsigned long long)s->outside[i].count, s->outside[i].name, s->outside[i].range);
    if (s->outside_steps_ms > 0)
        printf("layer work in warm-up steps or outside steps: %.3f ms (not measured)\n",
               s->outside_steps_ms);
    if (s->dropped_records)
        printf("the collector dropped %llu records\n", (unsigned long long)s->dropped_records);
    if (written)
        printf("wrote        %s\n", written);
}

int cli_attribution_finish(sp_ctx *ctx, const sp_trace *trace, const sp_trace_profile_opts *opts,
                           const char *output, bool no_gpu_work_is_error) {
    char *json = NULL;
    sp_trace_summary sum;
    sp_status st = sp_trace_to_profile(ctx, trace, opts, &json, &sum);
    if (st == SP_OK && no_gpu_work_is_error && sum.activities == 0) {
        sp_free(json);
        cli_print_warnings(ctx);
        fprintf(stderr,
                "stagepart: error: the program ran no GPU work the collector saw (%zu layers "
                "found in its ranges): no CUDA device here, or CUDA never initialized; no "
                "profile written\n",
                sum.layers);
        return CLI_EXIT_UNAVAILABLE;
    }
    if (st == SP_OK) /* before the write, which begins the context anew */
        cli_print_warnings(ctx);
    if (st == SP_OK && output)
        st = sp_write_file_atomic(ctx, output, json, strlen(json));
    if (st != SP_OK) {
        sp_free(json);
        return cli_report(ctx, st, false);
    }
    if (cli_is_stdout(output)) {
        fprintf(stderr, "stagepart: layers: %s\n", sum.layers_chosen);
    } else if (output) {
        print_summary(&sum, output);
    } else {
        fputs(json, stdout);
        fprintf(stderr, "stagepart: layers: %s\n", sum.layers_chosen);
    }
    if (sum.unattributed_share > 0.02)
        fprintf(stderr,
                "stagepart: warning: %.1f%% of %s time is in no range: work launched "
                "outside the layer ranges (or a trace without launch records)\n",
                100 * sum.unattributed_share, sum.cpu_time ? "CPU" : "GPU");
    sp_free(json);
    return CLI_EXIT_OK;
}

/* cli/profile_model.c: `stagepart profile MODEL [--backend cpu]`: run a built-in model forward
 * and backward and write its profile; a progress bar on a terminal; Ctrl-C writes nothing. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "profile_model.h"

static void progress(void *arg, uint32_t done, uint32_t total) {
    const char *name = arg;
    int width = 30, filled = (int)((uint64_t)width * done / total);
    fprintf(stderr, "\r%s [%.*s%*s] %u/%u iterations", name, filled,
            "##############################", width - filled, "", done, total);
    if (done == total)
        fputs("\n", stderr);
    fflush(stderr);
}

/* the per-layer table from the profile just written */
static void print_table(const char *json, const sp_model_profile_summary *s, const char *output,
                        const sp_model_info *info) {
    cJSON *root = cJSON_Parse(json);
    const cJSON *layers = cJSON_GetObjectItem(root, "layers");
    printf("%s: %zu layers, micro-batch %u", info->name, info->layers, info->micro_batch_size);
    if (info->seq_len)
        printf(" x %u positions", info->seq_len);
    printf(", %.1fM parameters, fp32 on core %d\n\n", (double)info->param_count / 1e6, s->core);
    printf("%-14s %-12s %10s %10s %10s %6s %10s %10s\n", "layer", "kind", "fwd ms", "bwd ms",
           "wgrad ms", "cv", "saved", "params");
    const cJSON *l;
    cJSON_ArrayForEach(l, layers) {
        char saved[16], params[16];
        const cJSON *m = cJSON_GetObjectItem(l, "measured");
        printf("%-14.14s %-12.12s %10.3f %10.3f %10.3f %5.1f%% %10s %10s\n",
               cJSON_GetObjectItem(l, "name")->valuestring,
               cJSON_GetObjectItem(l, "kind")->valuestring,
               cJSON_GetObjectItem(l, "fwd_ms")->valuedouble,
               cJSON_GetObjectItem(l, "bwd_ms")->valuedouble,
               cJSON_GetObjectItem(l, "wgrad_ms")->valuedouble,
               100 * cJSON_GetObjectItem(m, "cv")->valuedouble,
               sp_format_bytes((uint64_t)cJSON_GetObjectItem(l, "saved_bytes")->valuedouble, saved,
                               sizeof saved),
               sp_format_bytes((uint64_t)cJSON_GetObjectItem(l, "param_bytes")->valuedouble, params,
                               sizeof params));
    }
    cJSON_Delete(root);
    printf("\niteration %.3f ms (forward + backward, median)\n", s->iteration_ms);
    printf("repeatability: coefficient of variation median %.1f%%, largest %.1f%% (%s), over "
           "layers taking 1%% of the iteration or more\n",
           100 * s->median_cv, 100 * s->max_cv, s->max_cv_layer);
    printf("profile written to %s\n", output);
}

int sp_profile_model_run(const struct sp_profile_model_args *a) {
    if (a->backend && strcmp(a->backend, "cpu") != 0) {
        if (strcmp(a->backend, "cuda") == 0) {
            fprintf(stderr, "stagepart: error: --backend cuda: the built-in models run on the CPU "
                            "only in this version (the cuBLAS executor is not built); profile "
                            "on the CPU, or profile a CUDA program with --attach\n");
            return SP_EXIT_UNAVAILABLE;
        }
        return sp_usage_error("profile", "--backend: expected cpu or cuda, got '%s'", a->backend);
    }
    sp_ctx *ctx = NULL;
    if (sp_ctx_create(&ctx) != SP_OK)
        return SP_EXIT_INTERNAL;
    sp_model *model = NULL;
    char *json = NULL;
    sp_model_info info;
    sp_model_profile_summary summary;
    sp_status st = sp_model_load(ctx, a->model_path, &model);
    if (st == SP_OK && (a->micro_batch_size || a->seq_len)) {
        st = sp_model_set_shape(ctx, model, a->micro_batch_size, a->seq_len);
        if (st == SP_OK)
            sp_print_warnings(ctx);
    }
    int code = SP_EXIT_OK;
    if (st == SP_OK) {
        sp_model_get_info(model, &info);
        sp_model_profile_opts opts = a->opts;
        opts.cancel = &sp_cli_interrupted;
        opts.model_name = a->name; /* --model */
        if (!a->quiet && isatty(STDERR_FILENO)) {
            opts.progress = progress;
            opts.progress_arg = (void *)info.name;
        }
        struct sp_cli_signals *signals = sp_cli_catch_interrupts();
        st = sp_model_profile_cpu(ctx, model, &opts, &json, &summary);
        sp_cli_restore_signals(signals);
        if (st == SP_ERR_INTERRUPTED && opts.progress)
            fputs("\n", stderr);
    }
    if (st == SP_OK && a->output)
        st = sp_write_file_atomic(ctx, a->output, json, strlen(json));
    if (st == SP_ERR_INTERRUPTED) {
        fprintf(stderr, "stagepart: interrupted: %s; no profile written\n", sp_ctx_errmsg(ctx));
        code = SP_EXIT_INTERRUPTED;
    } else if (st != SP_OK) {
        code = sp_report(ctx, st, false);
    } else {
        if (a->output)
            print_table(json, &summary, a->output, &info);
        else
            fputs(json, stdout);
        if (summary.max_cv > 0.05)
            fprintf(stderr,
                    "stagepart: warning: layer %s varies by %.1f%% between iterations (more than "
                    "5%%): the machine is busy or its clock changes; use more --iters or a quiet "
                    "core (--core)\n",
                    summary.max_cv_layer, 100 * summary.max_cv);
    }
    sp_free(json);
    sp_model_destroy(model);
    sp_ctx_destroy(ctx);
    return code;
}

/* cli/profile_model.c: `stagepart profile MODEL [--backend cpu|cuda]`: run a built-in model
 * forward and backward and write its profile; on the CPU with a progress bar on a terminal, on a
 * GPU through the live collector (attach.c); Ctrl-C writes nothing. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attach.h"
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

/* the per-layer table: the model's layers with the figures just measured */
static void print_table(const sp_model *model, const sp_model_layer_timing *t,
                        const sp_model_profile_summary *s, const char *output,
                        const sp_model_info *info) {
    printf("%s: %zu %s, micro-batch %u", info->name, info->layers,
           cli_noun(info->layers, "layer", "layers"), info->micro_batch_size);
    if (info->seq_len)
        printf(" x %u positions", info->seq_len);
    printf(", %.1fM parameters, fp32 on core %d\n\n", (double)info->param_count / 1e6, s->core);
    printf("%-14s %-12s %10s %10s %10s %6s %10s %10s\n", "layer", "kind", "fwd ms", "bwd ms",
           "wgrad ms", "cv", "saved", "params");
    sp_model_layer_info L;
    for (size_t i = 0; sp_model_get_layer(model, i, &L); i++) {
        char saved[16], params[16];
        printf("%-14.14s %-12.12s %10.3f %10.3f %10.3f %5.1f%% %10s %10s\n", L.name, L.kind,
               t[i].fwd_ms, t[i].bwd_ms, t[i].wgrad_ms, 100 * t[i].cv,
               sp_format_bytes(L.saved_bytes, saved, sizeof saved),
               sp_format_bytes(L.param_bytes, params, sizeof params));
    }
    printf("\niteration %.3f ms (forward + backward, median)\n", s->iteration_ms);
    printf("repeatability: coefficient of variation median %.1f%%, largest %.1f%% (%s), over "
           "layers taking 1%% of the iteration or more\n",
           100 * s->median_cv, 100 * s->max_cv, s->max_cv_layer);
    printf("profile written to %s\n", output);
}

/* --backend cuda: stagepart-model-cuda runs the model on the GPU inside stagepart's NVTX ranges,
 * under the live collector (profile --attach); the attribution gets the model itself for the
 * layers' kinds and exact byte counts. */
static int profile_on_gpu(const struct cli_profile_model_args *a, const sp_model *model,
                          const sp_model_info *info) {
    char prog[4096];
    if (!cli_find_model_cuda(prog, sizeof prog)) {
        if (getenv("STAGEPART_MODEL_CUDA"))
            fprintf(stderr,
                    "stagepart: error: --backend cuda: STAGEPART_MODEL_CUDA names no readable "
                    "file (%s)\n",
                    prog);
        else
            fprintf(stderr, "stagepart: error: --backend cuda: this stagepart was built without "
                            "the GPU executor stagepart-model-cuda (it needs the CUDA toolkit's "
                            "nvcc and cuBLAS); profile on the CPU, or a CUDA program with "
                            "--attach\n");
        return CLI_EXIT_UNAVAILABLE;
    }
    char mbs[24], seq[24], total[24], iters[24], seed[24], sms[24];
    snprintf(sms, sizeof sms, "%u", a->sms);
    snprintf(mbs, sizeof mbs, "%u", info->micro_batch_size);
    snprintf(seq, sizeof seq, "%u", info->seq_len);
    snprintf(total, sizeof total, "%u", a->opts.warmup + a->opts.iters);
    snprintf(iters, sizeof iters, "%u", a->opts.iters);
    snprintf(seed, sizeof seed, "%llu", (unsigned long long)a->opts.seed);
    char *cmd[16];
    size_t c = 0;
    cmd[c++] = prog;
    cmd[c++] = (char *)a->model_path;
    cmd[c++] = "--micro-batch-size";
    cmd[c++] = mbs;
    cmd[c++] = "--steps";
    cmd[c++] = total;
    cmd[c++] = "--seed";
    cmd[c++] = seed;
    if (info->seq_len) {
        cmd[c++] = "--seq-len";
        cmd[c++] = seq;
    }
    if (a->sms) {
        cmd[c++] = "--sms";
        cmd[c++] = sms;
    }
    cmd[c] = NULL;
    struct cli_attach_args at = {cmd, a->events_dir, iters, a->output, {0}, 77};
    sp_trace_profile_opts_init(&at.opts);
    at.opts.warmup_steps = a->opts.warmup;
    at.opts.model = a->name ? a->name : info->name;
    at.opts.micro_batch_size = info->micro_batch_size;
    at.opts.built_in = model;
    at.opts.sms = a->sms;
    return cli_attach_profile(&at);
}

int cli_profile_model_run(const struct cli_profile_model_args *a) {
    bool gpu = a->backend && strcmp(a->backend, "cuda") == 0;
    if (a->backend && !gpu && strcmp(a->backend, "cpu") != 0)
        return cli_usage_error("profile", "--backend: expected cpu or cuda, got '%s'", a->backend);
    if (gpu && a->opts.core >= 0)
        return cli_usage_error("profile", "--core pins the CPU backend's thread: not with "
                                          "--backend cuda");
    if (!gpu && a->sms)
        return cli_usage_error("profile", "--sms runs MODEL on a partition of a GPU's SMs: with "
                                          "--backend cuda, not on the CPU");
    if (!gpu && a->events_dir)
        return cli_usage_error("profile", "--events-dir keeps the GPU collector's event logs: "
                                          "with --backend cuda or --attach, not on the CPU");
    sp_ctx *ctx = NULL;
    if (sp_ctx_create(&ctx) != SP_OK)
        return CLI_EXIT_INTERNAL;
    sp_model *model = NULL;
    char *json = NULL;
    sp_model_layer_timing *timings = NULL;
    sp_model_info info;
    sp_model_profile_summary summary;
    sp_status st = sp_model_load(ctx, a->model_path, &model);
    if (st == SP_OK && (a->micro_batch_size || a->seq_len)) {
        st = sp_model_set_shape(ctx, model, a->micro_batch_size, a->seq_len);
        if (st == SP_OK)
            cli_print_warnings(ctx);
    }
    int code = CLI_EXIT_OK;
    if (st == SP_OK && gpu) {
        sp_model_get_info(model, &info);
        code = profile_on_gpu(a, model, &info);
        sp_model_destroy(model);
        sp_ctx_destroy(ctx);
        return code;
    }
    if (st == SP_OK) {
        sp_model_get_info(model, &info);
        sp_model_profile_opts opts = a->opts;
        opts.cancel = &cli_interrupted;
        opts.model_name = a->name; /* --name */
        if (!a->quiet && isatty(STDERR_FILENO)) {
            opts.progress = progress;
            opts.progress_arg = (void *)info.name;
        }
        timings = calloc(info.layers ? info.layers : 1, sizeof *timings);
        struct cli_signals *signals = cli_catch_interrupts();
        st = timings ? sp_model_profile_cpu(ctx, model, &opts, &json, &summary, timings)
                     : SP_ERR_NOMEM;
        cli_restore_signals(signals);
        if (st == SP_ERR_INTERRUPTED && opts.progress)
            fputs("\n", stderr);
    }
    if (st == SP_OK && a->output)
        st = sp_write_file_atomic(ctx, a->output, json, strlen(json));
    if (st == SP_ERR_INTERRUPTED) {
        fprintf(stderr, "stagepart: interrupted: %s; no profile written\n", sp_ctx_get_errmsg(ctx));
        code = CLI_EXIT_INTERRUPTED;
    } else if (st != SP_OK) {
        code = cli_report(ctx, st, false);
    } else {
        if (a->output && !cli_is_stdout(a->output))
            print_table(model, timings, &summary, a->output, &info);
        else if (a->output)
            ; /* the profile is on stdout */
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
    free(timings);
    sp_model_destroy(model);
    sp_ctx_destroy(ctx);
    return code;
}

/* cli/cmd_bandwidth.c: `stagepart bandwidth`: measure the links between workers and write the
 * links file the partitioner reads (--links). */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cmd_bandwidth_opts.h"

static bool parse_sizes(const char *text, uint64_t *sizes, size_t cap, size_t *n) {
    sp_ctx *ctx = NULL;
    if (sp_ctx_create(&ctx) != SP_OK)
        return false;
    char *copy = strdup(text), *save = NULL;
    bool ok = copy != NULL;
    *n = 0;
    for (char *tok = copy ? strtok_r(copy, ",", &save) : NULL; ok && tok;
         tok = strtok_r(NULL, ",", &save)) {
        if (*n == cap) {
            cli_usage_error("bandwidth", "--sizes: at most %zu sizes", cap);
            ok = false;
        } else if (sp_parse_bytes(ctx, tok, &sizes[*n]) != SP_OK) {
            cli_usage_error("bandwidth", "--sizes: %s", sp_ctx_get_errmsg(ctx));
            ok = false;
        } else {
            (*n)++;
        }
    }
    free(copy);
    sp_ctx_destroy(ctx);
    return ok;
}

static void print_table(const sp_bandwidth_result *r, const char *written) {
    printf("%-24s %12s %14s %10s %12s\n", "link", "latency_us", "bandwidth_GBps", "r2",
           "peak_GBps");
    for (size_t i = 0; i < sp_bandwidth_result_get_link_count(r); i++) {
        const sp_link_result *l = sp_bandwidth_result_get_link(r, i);
        printf("%-24s %12.3f %14.3f %10.4f %12.3f\n", l->label, l->fit.latency_us,
               l->fit.bandwidth_GBps, l->fit.r2, l->fit.peak_GBps);
    }
    if (*sp_bandwidth_result_get_timing(r))
        printf("timing: %s\n", sp_bandwidth_result_get_timing(r));
    if (*sp_bandwidth_result_get_note(r))
        printf("note: %s\n", sp_bandwidth_result_get_note(r));
    if (written)
        printf("wrote %s\n", written);
}

/* A straight line through caches and memory is a compromise: say when it is a poor one. */
static void warn_poor_fits(const sp_bandwidth_result *r) {
    size_t poor = 0, n = sp_bandwidth_result_get_link_count(r);
    double worst_r2 = 1;
    for (size_t i = 0; i < n; i++) {
        const sp_link_fit *f = &sp_bandwidth_result_get_link(r, i)->fit;
        double ratio = f->bandwidth_GBps / f->peak_GBps;
        if (f->r2 < 0.9 || ratio < 0.5 || ratio > 2) {
            poor++;
            worst_r2 = f->r2 < worst_r2 ? f->r2 : worst_r2;
        }
    }
    if (poor)
        fprintf(stderr,
                "stagepart: warning: %zu of %zu links fit latency + bytes / bandwidth poorly (r2 "
                "down to %.2f, or the fitted bandwidth more than 2x from the large messages'): "
                "copies that stay in cache are faster than those that reach memory; measure the "
                "sizes your model's stage boundaries carry (--sizes)\n",
                poor, n, worst_r2);
}

int cmd_bandwidth(int argc, char **argv) {
    sp_bandwidth_opts opts;
    sp_bandwidth_opts_init(&opts);
    uint64_t sizes[32], v = 0;
    const char *output = NULL;
    bool cuda = false, workers_set = false;
    const struct cli_bind binds[] = {
        CLI_STRING(OPT_OUTPUT, &output),
        CLI_U32(OPT_TRIALS, &opts.trials, 1, 101),
        CLI_U32(OPT_WARMUP, &opts.warmup, 0, 100),
        CLI_BIND_END,
    };
    struct cli_opt_parser p;
    cli_opt_parser_init(&p, "bandwidth", cmd_bandwidth_opts, argc, argv);
    for (int id; (id = cli_opt_parse(&p, &cmd_bandwidth_help, binds)) > 0;) {
        switch (id) {
        case OPT_BACKEND:
            if (strcmp(p.value, "cpu") != 0 && strcmp(p.value, "cuda") != 0)
                return cli_usage_error("bandwidth", "--backend: cpu or cuda, got '%s'", p.value);
            cuda = strcmp(p.value, "cuda") == 0;
            break;
        case OPT_WORKERS:
            if (!cli_opt_uint(&p, 2, 64, &v))
                return CLI_EXIT_USAGE;
            opts.workers = (unsigned)v;
            workers_set = true;
            break;
        case OPT_SIZES:
            if (!parse_sizes(p.value, sizes, sizeof sizes / sizeof *sizes, &opts.n_sizes))
                return CLI_EXIT_USAGE;
            opts.sizes = sizes;
            break;
        }
    }
    if (cli_opt_exit(&p) >= 0)
        return cli_opt_exit(&p);
    if (p.n_positional)
        return cli_usage_error("bandwidth", "unexpected argument '%s'", p.positional[0]);
    if (cuda && workers_set)
        return cli_usage_error("bandwidth",
                               "--workers is for --backend cpu; cuda measures every device");
    sp_ctx *ctx = NULL;
    if (sp_ctx_create(&ctx) != SP_OK)
        return CLI_EXIT_INTERNAL;
    sp_bandwidth_result *r = NULL;
    sp_status st =
        cuda ? sp_bandwidth_measure_cuda(ctx, &opts, &r) : sp_bandwidth_measure_cpu(ctx, &opts, &r);
    const char *json = sp_bandwidth_result_get_json(r);
    if (st == SP_OK && output)
        st = sp_write_file_atomic(ctx, output, json, strlen(json));
    int code = CLI_EXIT_OK;
    if (st != SP_OK)
        code = cli_report(ctx, st, false);
    else if (cli_is_stdout(output))
        ; /* the links file is on stdout */
    else if (output)
        print_table(r, output);
    else
        fputs(json, stdout);
    if (st == SP_OK)
        warn_poor_fits(r);
    sp_bandwidth_result_destroy(r);
    sp_ctx_destroy(ctx);
    return code;
}

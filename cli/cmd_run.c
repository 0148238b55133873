/* cli/cmd_run.c: `stagepart run PLAN --model MODEL`: train the model pipelined as the plan
 * splits it, one pinned thread per stage, and report how the measured balance compares with the
 * plan's prediction. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cmd_run_opts.h"

static void print_table(const sp_run *run, const sp_plan *plan) {
    const sp_run_summary *S = sp_run_get_summary(run);
    printf("%s: %u %s, %s, %u %s of %u, %u %s after %u warm-up, ", sp_plan_get_model(plan),
           S->stages, cli_noun(S->stages, "stage", "stages"), sp_schedule_name(S->schedule),
           S->micro_batches, cli_noun(S->micro_batches, "micro-batch", "micro-batches"),
           S->micro_batch_size, S->steps, cli_noun(S->steps, "step", "steps"), S->warmup_steps);
    if (S->transport == SP_TRANSPORT_MPI && S->backend == SP_RUN_BACKEND_CUDA)
        printf("one MPI rank per stage, each on its local rank's GPU (%s between them)\n\n",
               S->nccl ? "NCCL" : "host buffers");
    else if (S->transport == SP_TRANSPORT_MPI && sp_plan_get_summary(plan)->gpus)
        printf("one MPI rank per replica (%u ranks): a stage's figures are its replicas' mean, "
               "each running every r-th micro-batch, their gradients summed by an all-reduce "
               "before each update\n\n",
               sp_plan_get_summary(plan)->gpus);
    else if (S->transport == SP_TRANSPORT_MPI)
        printf("one MPI rank per stage\n\n");
    else if (S->backend == SP_RUN_BACKEND_CUDA)
        printf("a GPU per stage (the device column)\n\n");
    else
        printf("threads on %u cores\n\n", S->cores);
    bool gpu = S->backend == SP_RUN_BACKEND_CUDA;
    printf("stage  %-24s %4s %11s %11s %7s %10s %10s %9s %10s %10s\n", "layers",
           gpu ? "gpu" : "core", "busy ms", "planned ms", "error", "wait prev", "wait next",
           "copies", "memory", "planned");
    for (uint32_t s = 0; s < S->stages; s++) {
        const sp_run_stage *r = sp_run_get_stage(run, s);
        const sp_stage *p = sp_plan_get_stage(plan, s);
        char layers[512], fit[32], mem[16], planned[16];
        snprintf(layers, sizeof layers, "%s .. %s", p->first_name, p->last_name);
        printf("%5u  %-24s %4d %11.3f %11.3f %+6.1f%% %10.3f %10.3f %9.3f %10s %10s\n", s,
               cli_fit(fit, sizeof fit, layers, 24), gpu ? r->device : r->core, r->busy_ms,
               r->predicted_busy_ms, cli_shown(100 * r->busy_error, 1), r->wait_prev_ms,
               r->wait_next_ms, r->transfer_ms,
               sp_format_bytes(r->peak_memory_bytes, mem, sizeof mem),
               sp_format_bytes(r->predicted_memory_bytes, planned, sizeof planned));
    }
    if (gpu && sp_run_get_stage(run, 0)->sms) {
        printf("SM partitions (--gpu-split):");
        for (uint32_t s = 0; s < S->stages; s++)
            printf("%s stage %u %u SMs", s ? "," : "", s, sp_run_get_stage(run, s)->sms);
        printf("\n");
    }
    if (S->isolated)
        printf("\nisolated: every op ran alone (%.3f ms in a row); the pipelined iteration is "
               "replayed from the measured op times\n"
               "iteration   replayed %.3f ms   simulated %.3f ms   error %+.1f%%\n",
               S->iteration_ms, S->replayed_iteration_ms, S->predicted_iteration_ms,
               cli_shown(100 * S->iteration_error, 1));
    else
        printf("\niteration   measured %.3f ms   simulated %.3f ms   error %+.1f%%\n",
               S->iteration_ms, S->predicted_iteration_ms, cli_shown(100 * S->iteration_error, 1));
    printf("imbalance   measured %.3f      planned %.3f (largest / mean stage busy time)\n",
           S->imbalance, S->predicted_imbalance);
    printf("bubble      measured %.1f%%      simulated %.1f%%\n", 100 * S->bubble_fraction,
           100 * S->predicted_bubble_fraction);
    printf("loss        %.4f (first step) -> %.4f (last step)\n", S->first_loss, S->last_loss);
    /* the host's overall speed, apart from the balance (judged on the stages' shares) */
    if (isfinite(S->slowdown) && fabs(S->slowdown - 1) > 0.10)
        printf("speed       every stage %.2fx %s than profiled on the whole (the host's speed, "
               "not the balance)\n",
               S->slowdown > 1 ? S->slowdown : 1 / S->slowdown,
               S->slowdown > 1 ? "slower" : "faster");
    else if (isfinite(S->slowdown))
        printf("speed       as profiled (stages %.2fx their planned busy time on the whole)\n",
               S->slowdown);
    if (S->shared_hardware && !S->balance_held)
        printf("balance not judged: the stages shared %s, so their busy times hold the "
               "contention and the plan's stage times (a device each) do not apply; run with "
               "--isolate to confirm the balance one op at a time\n",
               S->backend == SP_RUN_BACKEND_CUDA ? "a GPU as streams" : "cores");
    else if (S->unmatched_sms && !S->balance_held && S->planned_sms)
        printf("balance not judged: the plan's stage times were measured on %u SMs (profile "
               "--sms), and its stages ran on other SMs, so they do not apply\n",
               S->planned_sms);
    else if (S->unmatched_sms && !S->balance_held)
        printf("balance not judged: the plan's stage times were measured on a whole GPU and its "
               "stages ran on SM partitions, so they do not apply; plan from `stagepart profile "
               "MODEL --backend cuda --sms N` with N the partition's SMs\n");
    else if (S->balance_held)
        printf("balance held: every stage's share within 10%% of the plan's (largest error "
               "%.1f%%), iteration within 15%% of the simulation at this speed\n",
               100 * S->max_share_error);
    else
        printf("balance NOT held: largest stage share error %.1f%% (limit 10%%), iteration error "
               "%+.1f%% at this speed (limit 15%%)\n",
               100 * S->max_share_error, cli_shown(100 * S->scaled_iteration_error, 1));
}

static bool parse_fault(const char *text, sp_run_opts *o) {
    unsigned s, step, mb;
    char kind[8];
    if (sscanf(text, "%u:%u:%u:%7s", &s, &step, &mb, kind) != 4)
        return false;
    o->fault_stage = s, o->fault_step = step, o->fault_micro_batch = mb;
    return sp_run_fault_from_name(kind, &o->fault) == SP_OK && o->fault != SP_RUN_FAULT_NONE;
}

/* what the command line asks for */
struct run_args {
    sp_run_opts opts;
    const char *plan_path, *model_path, *output, *trace, *svg;
    bool json, schedule_given;
    uint32_t mbs, seq_len;
};

/* the options whose value is a name or more than a number; false after a usage error */
static bool parse_named(struct cli_opt_parser *p, int id, struct run_args *a) {
    sp_run_opts *o = &a->opts;
    const char *v = p->value;
    uint64_t seed = 0;
    switch (id) {
    case OPT_BACKEND:
        return sp_run_backend_from_name(v, &o->backend) == SP_OK ||
               !cli_usage_error("run", "--backend: expected cpu or cuda, got '%s'", v);
    case OPT_TRANSPORT:
        return sp_transport_from_name(v, &o->transport) == SP_OK ||
               !cli_usage_error("run", "--transport: expected threads or mpi, got '%s'", v);
    case OPT_SCHEDULE:
        a->schedule_given = true;
        return (sp_schedule_from_name(v, &o->schedule) == SP_OK &&
                (o->schedule == SP_SCHEDULE_GPIPE || o->schedule == SP_SCHEDULE_1F1B)) ||
               !cli_usage_error("run", "--schedule: expected gpipe or 1f1b, got '%s'", v);
    case OPT_SEED:
        if (!cli_opt_uint(p, 0, UINT32_MAX, &seed))
            return false;
        o->seed = seed;
        return true;
    case OPT_NO_PIN:
        o->pin = false;
        return true;
    case OPT_FAULT:
        return parse_fault(v, o) ||
               !cli_usage_error("run", "--inject-fault: expected STAGE:STEP:MB:fail|hang, got '%s'",
                                v);
    }
    return true;
}

/* the options, bound or named, and the outputs checked; -1 to go on, else the exit code */
static int parse_args(int argc, char **argv, struct run_args *a) {
    sp_run_opts *o = &a->opts;
    sp_run_opts_init(o);
    double lr = (double)NAN, timeout_s = (double)NAN; /* NAN: not given */
    const struct cli_bind binds[] = {
        CLI_STRING(OPT_MODEL, &a->model_path),
        CLI_U32(OPT_MICRO_BATCHES, &o->micro_batches, 1, 1000000),
        CLI_U32(OPT_MBS, &a->mbs, 1, 65536),
        CLI_U32(OPT_SEQ_LEN, &a->seq_len, 1, 1u << 24),
        CLI_U32(OPT_STEPS, &o->steps, 1, 100000),
        CLI_U32(OPT_WARMUP_STEPS, &o->warmup_steps, 0, 100000),
        CLI_DOUBLE(OPT_LR, &lr, 0, 1e6, "a number >= 0"),
        CLI_DOUBLE(OPT_TIMEOUT, &timeout_s, DBL_MIN, 1e6, "a number of seconds > 0"),
        CLI_FLAG(OPT_GPU_SPLIT, &o->gpu_split),
        CLI_FLAG(OPT_ISOLATE, &o->isolate),
        CLI_STRING(OPT_OUTPUT, &a->output),
        CLI_FLAG(OPT_JSON, &a->json),
        CLI_STRING(OPT_TRACE, &a->trace),
        CLI_STRING(OPT_SVG, &a->svg),
        CLI_BIND_END,
    };
    struct cli_opt_parser p;
    cli_opt_parser_init(&p, "run", cmd_run_opts, argc, argv);
    for (int id; (id = cli_opt_parse(&p, &cmd_run_help, binds)) > 0;)
        if (!parse_named(&p, id, a))
            return CLI_EXIT_USAGE;
    if (cli_opt_exit(&p) >= 0)
        return cli_opt_exit(&p);
    if (!isnan(lr))
        o->learning_rate = (float)lr;
    if (!isnan(timeout_s))
        o->timeout_ms = 1000.0 * timeout_s;
    if (p.n_positional == 0)
        return cli_usage_error("run", "no plan given");
    if (p.n_positional > 1)
        return cli_usage_error("run", "one plan, got %d arguments", p.n_positional);
    if (!a->model_path)
        return cli_usage_error("run", "--model MODEL is required: the built-in model the plan's "
                                      "profile was made from");
    a->plan_path = p.positional[0];
    const char *inputs[] = {a->plan_path, a->model_path};
    const char *outputs[][2] = {{"--output", a->output}, {"--trace", a->trace}, {"--svg", a->svg}};
    for (size_t k = 0; k < 3; k++)
        if (outputs[k][1]) {
            int rc = cli_check_output_not_input("run", outputs[k][0], outputs[k][1], inputs, 2);
            if (rc)
                return rc;
        }
    const char *written[] = {a->output, a->trace, a->svg};
    int to_stdout = cli_one_stdout("run", written, 3, a->json);
    if (to_stdout)
        return to_stdout;
    if (o->gpu_split && o->backend != SP_RUN_BACKEND_CUDA)
        return cli_usage_error("run", "--gpu-split splits GPUs: give --backend cuda");
    if (o->gpu_split && o->transport == SP_TRANSPORT_MPI) /* before MPI starts */
        return cli_usage_error("run", "--gpu-split partitions the GPUs of one process's stages: "
                                      "with the threads transport, not MPI ranks");
    return -1;
}

/* the schedule the plan was made for, when the command line names none: -1 to go on, else
 * CLI_EXIT_UNAVAILABLE for a schedule without flushes, which run does not execute */
static int plan_schedule(const sp_plan *plan, struct run_args *a) {
    const sp_plan_summary *ps = sp_plan_get_summary(plan);
    if (a->schedule_given)
        return -1;
    if (ps->schedule.present && (ps->schedule.schedule == SP_SCHEDULE_PIPEDREAM ||
                                 ps->schedule.schedule == SP_SCHEDULE_2BW)) {
        fprintf(stderr,
                "stagepart: error: the plan was made for %s, which runs without flushes; "
                "stagepart run executes flushing schedules: give --schedule 1f1b to measure "
                "its split under 1F1B\n",
                sp_schedule_name(ps->schedule.schedule));
        return CLI_EXIT_UNAVAILABLE;
    }
    a->opts.schedule = ps->schedule.present && ps->schedule.schedule == SP_SCHEDULE_GPIPE
                           ? SP_SCHEDULE_GPIPE
                           : SP_SCHEDULE_1F1B;
    return -1;
}

/* the report, trace and timeline written (rank 0 of MPI: every rank holds the whole run) */
static sp_status write_outputs(sp_ctx *ctx, const struct run_args *a, const sp_run *run,
                               const char *report) {
    sp_status st = SP_OK;
    if (a->output)
        st = sp_write_file_atomic(ctx, a->output, report, strlen(report));
    if (st == SP_OK && a->trace)
        st = sp_sim_write_trace(ctx, sp_run_get_timeline(run), a->trace);
    if (st == SP_OK && a->svg)
        st = sp_sim_write_svg(ctx, sp_run_get_timeline(run), NULL, a->svg);
    return st;
}

/* what the reporting rank shows; its exit code */
static int show(sp_ctx *ctx, const struct run_args *a, sp_status st, const sp_run *run,
                const sp_plan *plan, const char *report) {
    if (st == SP_ERR_INTERRUPTED) {
        fprintf(stderr, "stagepart: interrupted: every stage stopped; nothing written\n");
        return CLI_EXIT_INTERRUPTED;
    }
    if (st != SP_OK)
        return cli_report(ctx, st, a->json);
    if (a->json) {
        fputs(report, stdout);
    } else if (!cli_is_stdout(a->output) && !cli_is_stdout(a->trace) && !cli_is_stdout(a->svg)) {
        print_table(run, plan);
        const char *written[] = {a->output, a->trace, a->svg};
        for (size_t k = 0; k < 3; k++)
            if (written[k])
                printf("wrote       %s\n", written[k]);
    }
    return CLI_EXIT_OK;
}

int cmd_run(int argc, char **argv) {
    struct run_args a = {0};
    int code = parse_args(argc, argv, &a);
    if (code >= 0)
        return code;
    sp_ctx *ctx = NULL;
    if (sp_ctx_create(&ctx) != SP_OK)
        return CLI_EXIT_INTERNAL;
    bool mpi = a.opts.transport == SP_TRANSPORT_MPI;
    int rank = 0, ranks = 1;
    sp_status st = mpi ? sp_mpi_start(ctx, &rank, &ranks) : SP_OK;
    if (st != SP_OK) {
        code = cli_report(ctx, st, a.json);
        sp_ctx_destroy(ctx);
        return code;
    }
    sp_plan *plan = NULL;
    sp_model *model = NULL;
    sp_run *run = NULL;
    char *report = NULL;
    st = sp_plan_load(ctx, a.plan_path, &plan);
    if (st == SP_OK)
        st = sp_model_load(ctx, a.model_path, &model);
    if (st == SP_OK && (a.mbs || a.seq_len))
        st = sp_model_set_shape(ctx, model, a.mbs, a.seq_len);
    code = st == SP_OK ? plan_schedule(plan, &a) : -1;
    if (st == SP_OK && code < 0) {
        struct cli_signals *signals = cli_catch_interrupts();
        a.opts.cancel = &cli_interrupted;
        st = sp_run_plan(ctx, plan, model, &a.opts, &run);
        cli_restore_signals(signals);
        if (st == SP_OK)
            cli_print_warnings(ctx);
        if (st == SP_OK)
            st = sp_run_to_json(ctx, run, &report);
        if (st == SP_OK && rank == 0)
            st = write_outputs(ctx, &a, run, report);
    }
    if (code < 0 && rank != 0) /* the reporting rank speaks for all */
        code = st == SP_OK                ? CLI_EXIT_OK
               : st == SP_ERR_INTERRUPTED ? CLI_EXIT_INTERRUPTED
                                          : cli_exit_code(st);
    else if (code < 0)
        code = show(ctx, &a, st, run, plan, report);
    sp_free(report);
    sp_run_destroy(run);
    sp_model_destroy(model);
    sp_plan_destroy(plan);
    sp_ctx_destroy(ctx);
    if (mpi)
        sp_mpi_stop(code); /* a failed run ends every rank with the code */
    return code;
}

/* runtime/run.c: sp_run_plan: check the plan against the model, build the schedule's op lists
 * (simulate/schedule.c, the simulator's), hand them to the transport, then set what was measured
 * against the prediction (run_report.c). */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "run_devices.h"
#include "worker.h"

void sp_run_opts_init(sp_run_opts *o) {
    memset(o, 0, sizeof *o);
    o->schedule = SP_SCHEDULE_1F1B;
    o->transport = SP_TRANSPORT_THREADS;
    o->steps = 3;
    o->warmup_steps = 1;
    o->learning_rate = 0.01f;
    o->seed = 1;
    o->pin = true;
    o->timeout_ms = 60000.0;
}

/* every stage's backend: the CPU's, or a GPU each (run_devices.h) */
static sp_status open_backends(sp_ctx *ctx, const struct sp_model *m, const sp_plan *plan,
                               const sp_run_opts *o, uint32_t P, struct sp_run *run,
                               struct sp_run_devices **devices,
                               const struct sp_exec_backend ***be) {
    if (o->backend == SP_RUN_BACKEND_CUDA) {
        int *device = sp_calloc(P, sizeof *device);
        unsigned *sms = sp_calloc(P, sizeof *sms);
        sp_status st = device && sms ? sp_run_devices_open(ctx, m, P, o->gpu_split, 0, devices, be,
                                                           device, sms)
                                     : sp_oom(ctx, "the run");
        uint32_t shared = 0; /* stages on a GPU another stage has, and how many GPUs there are */
        int gpus = 0;
        for (uint32_t s = 0; st == SP_OK && s < P; s++) {
            run->stages[s].device = device[s];
            run->stages[s].sms = sms[s];
            gpus = device[s] + 1 > gpus ? device[s] + 1 : gpus;
            shared += s > 0 && device[s] <= device[s - 1];
        }
        run->summary.shared_hardware = shared && !o->gpu_split && !o->isolate;
        /* the SMs each stage had against those its planned times were measured on: a stage
         * alone on its GPU (or isolated) had all of them, 0 as in the plan; streams sharing one
         * are contention, said below */
        uint32_t planned = sp_plan_get_summary(plan)->profile_sms, differs = 0;
        unsigned part = 0; /* a partition's size that differs */
        for (uint32_t s = 0; st == SP_OK && s < P && !run->summary.shared_hardware; s++) {
            unsigned had = o->isolate ? 0 : sms[s];
            if (had != planned) {
                differs++;
                part = had ? had : part;
            }
        }
        run->summary.planned_sms = planned;
        run->summary.unmatched_sms = differs > 0;
        if (differs && part)
            sp_warn(ctx,
                    "%u stage%s ran on SM partitions of %u SMs and the plan's stage times were "
                    "measured on %s: they do not apply, so the balance is not judged; a plan "
                    "from `profile MODEL --backend cuda --sms %u` does",
                    differs, differs == 1 ? "" : "s", part,
                    planned ? "another partition" : "a whole GPU", part);
        else if (differs)
            sp_warn(ctx,
                    "the plan's stage times were measured on %u SMs (profile --sms) and %u "
                    "stage%s ran on a whole GPU: they do not apply, so the balance is not "
                    "judged; run its stages on partitions of %u SMs (--gpu-split), or plan from "
                    "a whole-GPU profile",
                    planned, differs, differs == 1 ? "" : "s", planned);
        if (st == SP_OK && shared && !o->gpu_split && !o->isolate)
            sp_warn(ctx,
                    "%u stages on %d GPU%s: stages that share a GPU run as streams competing for "
                    "all its SMs, so their busy times hold that contention and the plan's stage "
                    "times (each stage on a GPU of its own) do not apply to them; --isolate "
                    "confirms the balance one op at a time (--gpu-split gives each an SM "
                    "partition)",
                    P, gpus, gpus == 1 ? "" : "s");
        sp_free(device);
        sp_free(sms);
        return st;
    }
    *be = sp_calloc(P, sizeof **be);
    if (!*be)
        return sp_oom(ctx, "the run");
    for (uint32_t s = 0; s < P; s++)
        (*be)[s] = &sp_exec_backend_cpu;
    return SP_OK;
}

/* ---- --isolate: one global order of every stage's ops, the simulator's start order (ties: the
 * earlier end, then forwards down the pipeline and backwards up it, so a producer comes before
 * what it feeds even when ops take no time) */

struct op_key {
    double start, end;
    uint32_t stage, k;
    char kind;
};

static int cmp_op_key(const void *a, const void *b) {
    const struct op_key *x = a, *y = b;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    if (x->end != y->end)
        return x->end < y->end ? -1 : 1;
    if (x->stage != y->stage) /* F: the earlier stage first; B: the later */
        return (x->kind == 'F') == (x->stage < y->stage) ? -1 : 1;
    return (x->k > y->k) - (x->k < y->k);
}

static sp_status isolate_order(sp_ctx *ctx, const sp_plan *plan, sp_schedule schedule, uint32_t M,
                               const struct sp_sched_op *ops, const size_t *offset, uint32_t P,
                               uint32_t **turn_out) {
    sp_sim_opts so;
    sp_sim_opts_init(&so);
    so.schedule = schedule;
    so.micro_batches = M;
    so.keep_ops = true;
    sp_sim *sim = NULL;
    sp_status st = sp_simulate_plan(ctx, plan, &so, &sim);
    if (st != SP_OK)
        return st;
    size_t n = offset[P], pm = (size_t)P * M;
    double *start = sp_mallocarray(2 * pm, sizeof *start),
           *end = sp_mallocarray(2 * pm, sizeof *end);
    struct op_key *keys = sp_mallocarray(n ? n : 1, sizeof *keys);
    uint32_t *turn = sp_mallocarray(n ? n : 1, sizeof *turn);
    if (!start || !end || !keys || !turn) {
        st = sp_oom(ctx, "the run's op order");
    } else {
        for (size_t i = 0; i < sim->n_ops; i++) { /* (kind, stage, micro-batch) -> its times */
            const sp_sim_op *o = &sim->ops[i];
            size_t at = (o->kind == 'F' ? 0 : pm) + (size_t)o->stage * M + o->micro_batch;
            if (o->stage < P && o->micro_batch < M)
                start[at] = o->start_ms, end[at] = o->end_ms;
        }
        for (uint32_t s = 0; s < P; s++)
            for (size_t k = offset[s]; k < offset[s + 1]; k++) {
                size_t at = (ops[k].kind == 'F' ? 0 : pm) + (size_t)s * M + ops[k].mb;
                keys[k] =
                    (struct op_key){start[at], end[at], s, (uint32_t)(k - offset[s]), ops[k].kind};
            }
        qsort(keys, n, sizeof *keys, cmp_op_key);
        for (size_t r = 0; r < n; r++)
            turn[offset[keys[r].stage] + keys[r].k] = (uint32_t)r;
    }
    sp_sim_destroy(sim);
    sp_free(start);
    sp_free(end);
    sp_free(keys);
    if (st != SP_OK) {
        sp_free(turn);
        return st;
    }
    *turn_out = turn;
    return SP_OK;
}

/* the cores this process may use (stage s goes on the s-th); one "-1" (any) when none is said;
 * NULL when out of memory */
static int *usable_cores(unsigned *n_cores) {
    int *cores = sp_mallocarray(CPU_SETSIZE, sizeof *cores);
    cpu_set_t set;
    *n_cores = 0;
    if (cores && sched_getaffinity(0, sizeof set, &set) == 0)
        for (int c = 0; c < CPU_SETSIZE; c++)
            if (CPU_ISSET(c, &set))
                cores[(*n_cores)++] = c;
    if (cores && !*n_cores)
        cores[(*n_cores)++] = -1;
    return cores;
}

sp_status sp_run_plan(sp_ctx *ctx, const sp_plan *plan, sp_model *m, const sp_run_opts *opts,
                      sp_run **out) {
    if (!ctx || !plan || !m || !out)
        return ctx ? sp_fail(ctx, SP_ERR_INVALID_ARG, "sp_run_plan: NULL argument")
                   : SP_ERR_INVALID_ARG;
    sp_ctx_begin(ctx);
    *out = NULL;
    sp_run_opts dflt;
    if (!opts) {
        sp_run_opts_init(&dflt);
        opts = &dflt;
    }
    uint32_t M = 0;
    sp_status st = sp_run_validate(ctx, plan, m, opts, &M);
    if (st != SP_OK)
        return st;
    uint32_t P = (uint32_t)sp_plan_get_stage_count(plan), total = opts->warmup_steps + opts->steps;
    uint32_t D = P; /* devices: the stages, or their replicas */
    struct sp_sched_op *ops = NULL;
    size_t *offset = NULL;
    if (sp_plan_get_summary(plan)->gpus) { /* each replica's order, as the simulator plays it */
        st = sp_plan_device_ops(ctx, plan, opts->schedule, M, &ops, &offset, &D);
    } else {
        struct sp_pipeline pl;
        memset(&pl, 0, sizeof pl);
        pl.P = P, pl.V = 1, pl.M = M, pl.schedule = opts->schedule;
        st = sp_schedule_build(ctx, &pl, &ops, &offset);
    }
    if (st != SP_OK)
        return st;
    struct sp_run *run = sp_calloc(1, sizeof *run);
    if (run && opts->isolate)
        st = isolate_order(ctx, plan, opts->schedule, M, ops, offset, P, &run->turn);
    if (st == SP_OK && (!run || !(run->stats = sp_calloc((size_t)total * P, sizeof *run->stats)) ||
                        !(run->stages = sp_calloc(P, sizeof *run->stages)) ||
                        !(run->timeline = sp_calloc(1, sizeof *run->timeline)) ||
                        !(run->timeline->ops = sp_calloc(offset[D], sizeof *run->timeline->ops)) ||
                        !(run->timeline->devices = sp_calloc(D, sizeof *run->timeline->devices)) ||
                        (D != P && !(run->replica_stats = sp_calloc(
                                         (size_t)total * D, sizeof *run->replica_stats))))) {
        st = sp_oom(ctx, "the run");
    }
    struct sp_run_devices *devices = NULL;
    const struct sp_exec_backend **be = NULL;
    unsigned n_cores = 0;
    int *cores = usable_cores(&n_cores);
    if (!cores && st == SP_OK)
        st = sp_oom(ctx, "the run");
    if (st == SP_OK) {
        run->summary.cores = n_cores;
        run->summary.backend = opts->backend;
        for (uint32_t s = 0; s < P; s++)
            run->stages[s].device = -1;
        run->transport = opts->transport;
        run->summary.transport = opts->transport;
        if (opts->transport == SP_TRANSPORT_MPI) {
            st = sp_run_mpi(ctx, plan, m, opts, M, ops, offset, cores, n_cores, run);
        } else {
            st = open_backends(ctx, m, plan, opts, P, run, &devices, &be);
        }
        if (st == SP_OK && opts->transport != SP_TRANSPORT_MPI) {
            bool cpu = opts->backend == SP_RUN_BACKEND_CPU;
            run->summary.shared_hardware |= cpu && P > n_cores && !opts->isolate;
            if (cpu && P > n_cores && !opts->isolate) /* isolated ops never share a core */
                sp_warn(ctx,
                        "%u stages on %u cores: stages share cores, so their times include "
                        "waiting for the CPU (compare busy_ms with cpu_ms in the report)",
                        P, n_cores);
            st = sp_run_threads(ctx, plan, m, opts, M, ops, offset, cores, n_cores, be, run);
            char host[64] = "";
            if (gethostname(host, sizeof host - 1) != 0)
                snprintf(host, sizeof host, "?");
            for (uint32_t s = 0; st == SP_OK && s < P; s++) /* one process, one machine */
                memcpy(run->stages[s].host, host, sizeof host);
        }
    }
    if (devices)
        sp_run_devices_close(devices);
    else
        sp_free(be);
    if (st == SP_OK) {
        run->timeline->n_ops = offset[D];
        st = sp_run_finish(ctx, run, plan, m, opts);
    }
    sp_free(ops);
    sp_free(offset);
    sp_free(cores);
    if (st != SP_OK) {
        sp_run_destroy(run);
        return st;
    }
    *out = run;
    return SP_OK;
}

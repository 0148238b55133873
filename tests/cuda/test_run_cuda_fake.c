/* tests/cuda/test_run_cuda_fake.c: `run --backend cuda` without a GPU: the runtime with every
 * stage on a stand-in GPU (tests/cuda/fake_cuda.c: host memory, a reference GEMM, the kernels
 * as loops; FAKE_CUDA_DEVICES of them), so the GPU path of the runtime (device buffers, uploads
 * of each micro-batch, peer copies between stages, the loss read back, device errors) is
 * checked in CI.
 *
 * 1. 2 and 3 stages on 2 devices, GPipe and 1F1B: every step's loss equals the CPU run's (the
 *    same math; only the GEMM's summation order differs), stage s is on device s mod 2, and the
 *    same bytes move.
 * 2. Two stages on one GPU: as two streams (warned), or each on an SM partition of 64 of its 132
 *    SMs (--gpu-split, green contexts through the driver's entry points); too few SMs, and (run
 *    with FAKE_CUDA_NO_GREEN and the argument no-green) a driver without green contexts, are
 *    refused saying so.
 * 3. The balance judged only where the plan's profile was measured on the stage's SMs
 *    (profile_sms against each stage's partition or whole GPU).
 * 4. A stage whose device runs out of memory is named (SP_ERR_INFEASIBLE); an injected failure
 *    stops every stage naming it; --gpu-split with MPI ranks and keep_state are refused. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../run_fixture.h"
#include "../test.h"

static sp_run *run_on(sp_ctx *ctx, const sp_plan *plan, sp_model *m, sp_run_backend backend,
                      sp_schedule schedule, bool gpu_split) {
    return run_plan_as(ctx, plan, m, backend, SP_TRANSPORT_THREADS, schedule, gpu_split);
}

static void same_as_cpu(sp_ctx *ctx, sp_model *m) {
    static const size_t split2[] = {0, 3}, split3[] = {0, 2, 5};
    const size_t *splits[] = {split2, split3};
    for (int k = 0; k < 2; k++)
        for (int sched = 0; sched < 2; sched++) {
            uint32_t P = (uint32_t)k + 2;
            sp_schedule schedule = sched ? SP_SCHEDULE_1F1B : SP_SCHEDULE_GPIPE;
            sp_plan *plan = make_plan(ctx, m, splits[k], P, 4);
            sp_run *cpu = run_on(ctx, plan, m, SP_RUN_BACKEND_CPU, schedule, false);
            sp_run *gpu = run_on(ctx, plan, m, SP_RUN_BACKEND_CUDA, schedule, false);
            if (cpu && gpu) {
                for (size_t i = 0; i < 3; i++) {
                    double a = sp_run_get_step_loss(cpu, i), b = sp_run_get_step_loss(gpu, i);
                    SP_CHECK_MSG(fabs(a - b) <= 1e-4 * fabs(a),
                                 "P %u %s step %zu: loss %.7f on "
                                 "CPU, %.7f on GPUs",
                                 P, sp_schedule_name(schedule), i, a, b);
                }
                SP_CHECK(sp_run_get_summary(gpu)->backend == SP_RUN_BACKEND_CUDA);
                for (uint32_t s = 0; s < P; s++) {
                    const sp_run_stage *g = sp_run_get_stage(gpu, s), *c = sp_run_get_stage(cpu, s);
                    SP_CHECK_EQ_INT(g->device, (int)(s % 2));
                    SP_CHECK_EQ_INT(c->device, -1);
                    SP_CHECK_EQ_INT(g->transfer_bytes, c->transfer_bytes);
                    SP_CHECK(g->busy_ms > 0);
                }
                char *json = NULL;
                SP_CHECK_STATUS(sp_run_to_json(ctx, gpu, &json), SP_OK);
                SP_CHECK_CONTAINS(json, "\"backend\":\t\"cuda\"");
                SP_CHECK(json && strstr(strstr(json, "\"backend\"") + 1, "\"backend\"") == NULL);
                SP_CHECK_CONTAINS(json, "\"device\":\t1");
                sp_free(json);
            }
            sp_run_destroy(cpu);
            sp_run_destroy(gpu);
            sp_plan_destroy(plan);
        }
}

static void failures(sp_ctx *ctx, sp_model *m) {
    static const size_t split[] = {0, 2, 4};
    sp_plan *plan = make_plan(ctx, m, split, 3, 6);
    sp_run_opts o;
    sp_run_opts_init(&o);
    o.steps = 2;
    o.warmup_steps = 0;
    o.backend = SP_RUN_BACKEND_CUDA;
    o.fault = SP_RUN_FAULT_FAIL;
    o.fault_stage = 1, o.fault_step = 1, o.fault_micro_batch = 3;
    sp_run *run = NULL;
    SP_CHECK_STATUS(sp_run_plan(ctx, plan, m, &o, &run), SP_ERR_NO_DEVICE);
    SP_CHECK(run == NULL);
    SP_CHECK_CONTAINS(sp_ctx_get_errmsg(ctx), "stage 1 failed at step 1, micro-batch 3 (forward)");
    o.fault = SP_RUN_FAULT_NONE;
    setenv("FAKE_CUDA_MEMORY", "20000", 1); /* the devices fill up while the stages are made */
    SP_CHECK_STATUS(sp_run_plan(ctx, plan, m, &o, &run), SP_ERR_INFEASIBLE);
    SP_CHECK_CONTAINS(sp_ctx_get_errmsg(ctx),
                      "stage 0 (layers embedding..layers.0): out of memory");
    unsetenv("FAKE_CUDA_MEMORY");
    o.transport = SP_TRANSPORT_MPI; /* GPU ranks run (test_run_cuda_fake_mpi); split GPUs not */
    o.gpu_split = true;
    SP_CHECK_STATUS(sp_run_plan(ctx, plan, m, &o, &run), SP_ERR_INVALID_ARG);
    SP_CHECK_CONTAINS(sp_ctx_get_errmsg(ctx), "--gpu-split partitions the GPUs of one process");
    o.gpu_split = false;
    o.transport = SP_TRANSPORT_THREADS;
    o.keep_state = true;
    SP_CHECK_STATUS(sp_run_plan(ctx, plan, m, &o, &run), SP_ERR_UNSUPPORTED);
    setenv("FAKE_CUDA_DEVICES", "0", 1);
    o.keep_state = false;
    SP_CHECK_STATUS(sp_run_plan(ctx, plan, m, &o, &run), SP_ERR_NO_DEVICE);
    SP_CHECK_CONTAINS(sp_ctx_get_errmsg(ctx), "no CUDA device");
    setenv("FAKE_CUDA_DEVICES", "2", 1);
    sp_plan_destroy(plan);
}

/* stages sharing one GPU: as streams (warned), or on SM partitions (green contexts) */
static void one_gpu(sp_ctx *ctx, sp_model *m) {
    static const size_t split[] = {0, 3};
    sp_plan *plan = make_plan(ctx, m, split, 2, 4);
    setenv("FAKE_CUDA_DEVICES", "1", 1);
    sp_run *cpu = run_on(ctx, plan, m, SP_RUN_BACKEND_CPU, SP_SCHEDULE_1F1B, false);
    sp_run *shared = run_on(ctx, plan, m, SP_RUN_BACKEND_CUDA, SP_SCHEDULE_1F1B, false);
    SP_CHECK_CONTAINS(sp_ctx_get_warnings(ctx), "2 stages on 1 GPU: stages that share a GPU run as "
                                                "streams");
    SP_CHECK(shared && sp_run_get_summary(shared)->shared_hardware);
    /* --isolate: one op at a time on the shared GPU, the same training, nothing overlapping */
    sp_run_opts io;
    sp_run_opts_init(&io);
    io.steps = 3, io.warmup_steps = 0, io.learning_rate = 0.5f;
    io.backend = SP_RUN_BACKEND_CUDA;
    io.isolate = true;
    sp_run *iso = NULL;
    SP_CHECK_STATUS(sp_run_plan(ctx, plan, m, &io, &iso), SP_OK);
    if (iso && cpu) {
        const sp_run_summary *S = sp_run_get_summary(iso);
        SP_CHECK(S->isolated && !S->shared_hardware && S->replayed_iteration_ms > 0);
        for (size_t i = 0; i < 3; i++)
            SP_CHECK(fabs(sp_run_get_step_loss(iso, i) - sp_run_get_step_loss(cpu, i)) <=
                     1e-4 * fabs(sp_run_get_step_loss(cpu, i)));
        const sp_sim *t = sp_run_get_timeline(iso);
        size_t n = sp_sim_get_op_count(t);
        for (size_t a = 0; a < n; a++)
            for (size_t b = 0; b < n; b++) {
                const sp_sim_op *x = sp_sim_get_op(t, a), *y = sp_sim_get_op(t, b);
                SP_CHECK(a == b || x->end_ms <= y->start_ms + 1e-6 ||
                         y->end_ms <= x->start_ms + 1e-6);
            }
    }
    sp_run_destroy(iso);
    sp_run *split_run = run_on(ctx, plan, m, SP_RUN_BACKEND_CUDA, SP_SCHEDULE_1F1B, true);
    SP_CHECK_CONTAINS(sp_ctx_get_warnings(ctx),
                      "GPU 0 runs 2 stages on SM partitions of 64 SMs each");
    if (cpu && shared && split_run) {
        for (size_t i = 0; i < 3; i++)
            SP_CHECK(fabs(sp_run_get_step_loss(split_run, i) - sp_run_get_step_loss(cpu, i)) <=
                     1e-4 * fabs(sp_run_get_step_loss(cpu, i)));
        for (uint32_t s = 0; s < 2; s++) {
            SP_CHECK_EQ_INT(sp_run_get_stage(split_run, s)->device, 0);
            SP_CHECK_EQ_INT(sp_run_get_stage(split_run, s)->sms, 64); /* 132 / 2, in 8s */
            SP_CHECK_EQ_INT(sp_run_get_stage(shared, s)->sms, 0);
        }
        char *json = NULL;
        SP_CHECK_STATUS(sp_run_to_json(ctx, split_run, &json), SP_OK);
        SP_CHECK_CONTAINS(json, "\"sms\":\t64");
        sp_free(json);
    }
    sp_run_destroy(cpu);
    sp_run_destroy(shared);
    sp_run_destroy(split_run);
    /* too few SMs for the partitions, a driver without green contexts, a CPU run */
    sp_run_opts o;
    sp_run_opts_init(&o);
    o.backend = SP_RUN_BACKEND_CUDA;
    o.gpu_split = true;
    sp_run *run = NULL;
    setenv("FAKE_CUDA_SMS", "12", 1);
    SP_CHECK_STATUS(sp_run_plan(ctx, plan, m, &o, &run), SP_ERR_NO_DEVICE);
    SP_CHECK_CONTAINS(sp_ctx_get_errmsg(ctx),
                      "GPU 0 has 12 SMs: 2 partitions would get 0 each, under its "
                      "smallest partition of 8");
    unsetenv("FAKE_CUDA_SMS");
    o.backend = SP_RUN_BACKEND_CPU;
    SP_CHECK_STATUS(sp_run_plan(ctx, plan, m, &o, &run), SP_ERR_INVALID_ARG);
    setenv("FAKE_CUDA_DEVICES", "2", 1);
    sp_plan_destroy(plan);
}

/* The balance is judged only against times measured on the SMs each stage had: a whole-GPU
 * plan on SM partitions, a partition plan of another size, and a partition plan on whole GPUs are
 * "not judged" (unmatched_sms); a plan from a profile of 64 SMs on partitions of 64 is judged. */
static void matched_partitions(sp_ctx *ctx, sp_model *m) {
    static const size_t split[] = {0, 3};
    struct {
        unsigned profile_sms, devices;
        bool split, unmatched;
        const char *warning;
    } cases[] = {
        {0, 1, true, true,
         "2 stages ran on SM partitions of 64 SMs and the plan's stage times "
         "were measured on a whole GPU"},
        {32, 1, true, true, "measured on another partition"},
        {64, 1, true, false, NULL},
        {64, 2, false, true, "measured on 64 SMs (profile --sms) and 2 stages ran on a whole GPU"},
        {0, 2, false, false, NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        sp_plan *plan = make_plan_sms(ctx, m, split, 2, 4, cases[i].profile_sms);
        SP_CHECK(plan && sp_plan_get_summary(plan)->profile_sms == cases[i].profile_sms);
        char devices[8];
        snprintf(devices, sizeof devices, "%u", cases[i].devices);
        setenv("FAKE_CUDA_DEVICES", devices, 1);
        sp_run *run = run_on(ctx, plan, m, SP_RUN_BACKEND_CUDA, SP_SCHEDULE_1F1B, cases[i].split);
        if (run) {
            const sp_run_summary *S = sp_run_get_summary(run);
            SP_CHECK_MSG(S->unmatched_sms == cases[i].unmatched && !S->shared_hardware &&
                             S->planned_sms == cases[i].profile_sms,
                         "case %zu: unmatched %d", i, S->unmatched_sms);
            if (cases[i].warning)
                SP_CHECK_CONTAINS(sp_ctx_get_warnings(ctx), cases[i].warning);
            char *json = NULL;
            SP_CHECK_STATUS(sp_run_to_json(ctx, run, &json), SP_OK);
            SP_CHECK_CONTAINS(json, cases[i].unmatched ? "\"unmatched_sms\":\ttrue"
                                                       : "\"unmatched_sms\":\tfalse");
            sp_free(json);
        }
        sp_run_destroy(run);
        sp_plan_destroy(plan);
    }
    setenv("FAKE_CUDA_DEVICES", "2", 1);
}

/* run with FAKE_CUDA_NO_GREEN set (the driver's entry points are looked up once a process) */
static void no_green_contexts(sp_ctx *ctx, sp_model *m) {
    static const size_t split[] = {0, 3};
    sp_plan *plan = make_plan(ctx, m, split, 2, 4);
    setenv("FAKE_CUDA_DEVICES", "1", 1);
    sp_run_opts o;
    sp_run_opts_init(&o);
    o.backend = SP_RUN_BACKEND_CUDA;
    o.gpu_split = true;
    sp_run *run = NULL;
    SP_CHECK_STATUS(sp_run_plan(ctx, plan, m, &o, &run), SP_ERR_NO_DEVICE);
    SP_CHECK_CONTAINS(sp_ctx_get_errmsg(ctx), "the CUDA driver has no green contexts");
    o.gpu_split = false; /* without the split, green contexts are not needed */
    SP_CHECK_STATUS(sp_run_plan(ctx, plan, m, &o, &run), SP_OK);
    sp_run_destroy(run);
    sp_plan_destroy(plan);
}

int main(int argc, char **argv) {
    setenv("FAKE_CUDA_DEVICES", "2", 1);
    sp_ctx *ctx = NULL;
    sp_ctx_create(&ctx);
    sp_model *m = NULL;
    SP_CHECK_STATUS(sp_model_parse(ctx, "tiny", tiny, strlen(tiny), &m), SP_OK);
    if (m && argc > 1 && strcmp(argv[1], "no-green") == 0) {
        no_green_contexts(ctx, m);
    } else if (m) {
        same_as_cpu(ctx, m);
        one_gpu(ctx, m);
        matched_partitions(ctx, m);
        failures(ctx, m);
    }
    sp_model_destroy(m);
    sp_ctx_destroy(ctx);
    return sp_test_finish("test_run_cuda_fake");
}

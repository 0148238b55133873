/* tests/cuda/test_run_cuda_fake_mpi.c: `run --backend cuda --transport mpi` without a GPU: each
 * MPI rank runs its stage on a stand-in GPU (tests/cuda/fake_cuda.c). Ranks on GPUs of their own
 * send by NCCL (the stand-in, tests/cuda/fake_nccl.c, is MPI underneath), ranks that share one,
 * or with STAGEPART_NCCL=0, through page-locked host buffers. Started by
 * tests/cuda/run_cuda_fake_mpi.sh under mpirun with 2 and 3 ranks (argument: the stand-in GPUs
 * each rank sees, FAKE_CUDA_DEVICES):
 *  - the way chosen: NCCL exactly when every rank has a GPU of its own and NCCL is not off;
 *  - every step's loss equals a CPU run of the same plan on threads (the same math; the GEMM's
 *    summation order differs), under GPipe and 1F1B;
 *  - each stage names its host and its GPU, the local rank's mod the GPUs there are; ranks that
 *    share one are shared_hardware (their balance not judged);
 *  - replicated stages (a plan from sp_plan_from_replicated_split) train to the same losses,
 *    their gradients summed through host memory;
 *  - a stage that fails stops every rank with its message. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../run_fixture.h"
#include "../test.h"

int main(int argc, char **argv) {
    const char *devices = argc > 1 ? argv[1] : "1";
    setenv("FAKE_CUDA_DEVICES", devices, 1);
    int n_devices = atoi(devices);
    sp_ctx *ctx = NULL;
    sp_ctx_create(&ctx);
    int rank = 0, size = 0;
    SP_CHECK_STATUS(sp_mpi_start(ctx, &rank, &size), SP_OK);
    sp_model *m = NULL;
    SP_CHECK_STATUS(sp_model_parse(ctx, "tiny", tiny, strlen(tiny), &m), SP_OK);
    static const size_t split2[] = {0, 3}, split3[] = {0, 2, 4};
    const size_t *split = size == 2 ? split2 : split3;
    SP_CHECK(size == 2 || size == 3);
    char host[64] = "";
    gethostname(host, sizeof host - 1);
    for (int sched = 0; m && (size == 2 || size == 3) && sched < 2; sched++) {
        sp_schedule schedule = sched ? SP_SCHEDULE_1F1B : SP_SCHEDULE_GPIPE;
        sp_plan *plan = make_plan(ctx, m, split, (uint32_t)size, 6);
        sp_run *cpu =
            run_plan_as(ctx, plan, m, SP_RUN_BACKEND_CPU, SP_TRANSPORT_THREADS, schedule, false);
        sp_run *gpu =
            run_plan_as(ctx, plan, m, SP_RUN_BACKEND_CUDA, SP_TRANSPORT_MPI, schedule, false);
        if (cpu && gpu) {
            for (size_t i = 0; i < 3; i++) {
                double a = sp_run_get_step_loss(cpu, i), b = sp_run_get_step_loss(gpu, i);
                SP_CHECK_MSG(fabs(a - b) <= 1e-4 * fabs(a),
                             "rank %d, %d ranks, %s, step %zu: loss %.7f on CPU threads, %.7f on "
                             "GPU ranks",
                             rank, size, sp_schedule_name(schedule), i, a, b);
            }
            const sp_run_summary *S = sp_run_get_summary(gpu);
            SP_CHECK(S->backend == SP_RUN_BACKEND_CUDA && S->transport == SP_TRANSPORT_MPI);
            SP_CHECK_EQ_INT(S->shared_hardware, size > n_devices);
#ifdef SP_TEST_NCCL
            const char *off = getenv("STAGEPART_NCCL");
            bool nccl = size <= n_devices && !(off && strcmp(off, "0") == 0);
#else
            bool nccl = false;
#endif
            SP_CHECK_MSG(S->nccl == nccl, "rank %d: %s, expected %s", rank,
                         S->nccl ? "NCCL" : "host buffers", nccl ? "NCCL" : "host buffers");
            for (int s = 0; s < size; s++) {
                const sp_run_stage *g = sp_run_get_stage(gpu, (size_t)s);
                SP_CHECK_EQ_INT(g->device, s % n_devices); /* local rank = rank here */
                SP_CHECK_MSG(strcmp(g->host, host) == 0, "stage %d host '%s'", s, g->host);
                SP_CHECK(g->busy_ms > 0 && g->transfer_bytes > 0);
            }
            char *json = NULL;
            SP_CHECK_STATUS(sp_run_to_json(ctx, gpu, &json), SP_OK);
            SP_CHECK_CONTAINS(json, "\"transport\":\t\"mpi\"");
            SP_CHECK_CONTAINS(json, "\"host\":\t\"");
            sp_free(json);
        }
        sp_run_destroy(cpu);
        sp_run_destroy(gpu);
        sp_plan_destroy(plan);
    }
    /* replicated stages on GPU ranks (tensors by NCCL as above, their gradients summed by MPI
     * through host memory): one stage on both ranks, or a stage then two replicas of the next;
     * the losses of the CPU threads run of an unreplicated plan (the same data and updates) */
    static const size_t first2[] = {0}, first3[] = {0, 2};
    static const uint32_t reps2[] = {2}, reps3[] = {1, 2};
    for (int sched = 0; m && (size == 2 || size == 3) && sched < 2; sched++) {
        sp_schedule schedule = sched ? SP_SCHEDULE_1F1B : SP_SCHEDULE_GPIPE;
        sp_plan *plan = make_plan(ctx, m, split, (uint32_t)size, 6);
        sp_plan *rplan = size == 2 ? make_replicated_plan(ctx, m, first2, reps2, 1, 6)
                                   : make_replicated_plan(ctx, m, first3, reps3, 2, 6);
        sp_run *cpu =
            run_plan_as(ctx, plan, m, SP_RUN_BACKEND_CPU, SP_TRANSPORT_THREADS, schedule, false);
        sp_run *gpu = rplan ? run_plan_as(ctx, rplan, m, SP_RUN_BACKEND_CUDA, SP_TRANSPORT_MPI,
                                          schedule, false)
                            : NULL;
        for (size_t i = 0; cpu && gpu && i < 3; i++) {
            double a = sp_run_get_step_loss(cpu, i), b = sp_run_get_step_loss(gpu, i);
            SP_CHECK_MSG(fabs(a - b) <= 1e-4 * fabs(a),
                         "rank %d, %d replicas, %s, step %zu: loss %.7f on CPU threads, %.7f on "
                         "replicated GPU ranks",
                         rank, size, sp_schedule_name(schedule), i, a, b);
        }
#ifdef SP_TEST_NCCL /* NCCL between replicas too, when each has a GPU of its own */
        const char *off = getenv("STAGEPART_NCCL");
        bool nccl = size <= n_devices && !(off && strcmp(off, "0") == 0);
#else
        bool nccl = false;
#endif
        SP_CHECK_MSG(!gpu || sp_run_get_summary(gpu)->nccl == nccl, "rank %d: replicas by %s", rank,
                     gpu && sp_run_get_summary(gpu)->nccl ? "NCCL" : "host buffers");
        sp_run_destroy(cpu);
        sp_run_destroy(gpu);
        sp_plan_destroy(plan);
        sp_plan_destroy(rplan);
    }
    /* a failing stage: every rank stops with its message (exit code and MPI_Abort are the
     * command's; here each rank checks what it was told) */
    if (m && (size == 2 || size == 3)) {
        sp_plan *plan = make_plan(ctx, m, split, (uint32_t)size, 6);
        sp_run_opts o;
        sp_run_opts_init(&o);
        o.steps = 2, o.warmup_steps = 0, o.pin = false, o.timeout_ms = 20000.0;
        o.backend = SP_RUN_BACKEND_CUDA;
        o.transport = SP_TRANSPORT_MPI;
        o.fault = SP_RUN_FAULT_FAIL;
        o.fault_stage = 1, o.fault_step = 1, o.fault_micro_batch = 2;
        sp_run *run = NULL;
        SP_CHECK_STATUS(sp_run_plan(ctx, plan, m, &o, &run), SP_ERR_NO_DEVICE);
        SP_CHECK_CONTAINS(sp_ctx_get_errmsg(ctx), "stage 1 failed at step 1, micro-batch 2");
        sp_run_destroy(run);
        sp_plan_destroy(plan);
    }
    sp_model_destroy(m);
    sp_ctx_destroy(ctx);
    int code = sp_test_finish("test_run_cuda_fake_mpi");
    sp_mpi_stop(0);
    return code;
}

/* runtime/run_impl.h: what a pipelined run keeps, shared by the workers (run_threads.c) and the
 * report (run_report.c). */
#ifndef SP_RUNTIME_RUN_IMPL_H
#define SP_RUNTIME_RUN_IMPL_H

#include "sim_impl.h"
#include "stage_exec.h"

/* What one stage did in one step (milliseconds; bytes received). */
struct sp_step_stats {
    double busy_ms, fwd_ms, bwd_ms, cpu_ms; /* cpu_ms: the thread's CPU clock over busy_ms */
    double wait_prev_ms, wait_next_ms, send_wait_ms, transfer_ms;
    double end_ms;       /* last backward's end, from the step's start */
    double optimizer_ms; /* the SGD update after it */
    uint64_t transfer_bytes;
    double loss; /* last stage: mean loss of the step's micro-batches */
};

struct sp_run {
    sp_run_summary summary;
    sp_run_stage *stages;        /* [P] */
    struct sp_step_stats *stats; /* [(warmup + steps) * P]: step-major; replicated stages: the
                                  * mean over the stage's replicas (loss: their sum) */
    struct sp_step_stats *replica_stats; /* replicated: [(warmup + steps) * gpus], step-major,
                                          * each replica's own; NULL otherwise */
    double *step_loss;                   /* [warmup + steps] */
    double *step_ms;     /* [warmup + steps]: iteration (pipeline) time of each step */
    double optimizer_ms; /* median over measured steps, the slowest stage's */
    sp_sim *timeline;    /* the last step, measured */
    char *model_name, *cpu;
    double *predicted_time_ms;   /* [P]: the plan's stage times (one micro-batch fwd + bwd) */
    struct sp_stage_exec **kept; /* [P], with keep_state */
    sp_transport transport;
    int rank;       /* MPI: this process's rank (its stage); 0 with threads */
    uint32_t *turn; /* isolate: each op's place in a step's global order (aligned with the op
                     * lists), then each stage's SGD at n_ops + s; NULL: stages run at once */
};

#endif

/* stagepart/run.h: a plan trained pipelined and measured against its prediction, and the run
 * report it writes (runtime/, formats/). */
#ifndef STAGEPART_RUN_H
#define STAGEPART_RUN_H

#include "stagepart/models.h"
#include "stagepart/simulate.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------------------------
 * Running a plan (`stagepart run`, docs/runtime.md)
 *
 * Each stage of the plan runs its layers of a built-in model on its own worker (a thread pinned
 * to its own core); activations go forward and gradients back through bounded queues, in the
 * op order of the simulator's schedule (simulate/schedule.c); every step ends with an SGD update.
 * What each stage did is measured with the monotonic clock and compared with the plan's
 * prediction.
 * ------------------------------------------------------------------------------------------- */
typedef struct sp_run sp_run;

/* For testing the failure paths: make one stage fail, or stop answering, at one op. */
typedef enum sp_run_fault {
    SP_RUN_FAULT_NONE = 0,
    SP_RUN_FAULT_FAIL = 1, /* the stage reports an error at that micro-batch's forward */
    SP_RUN_FAULT_HANG = 2  /* the stage stops there and never sends again (its neighbours must
                            * give up after timeout_ms) */
} sp_run_fault;
SP_API const char *sp_run_fault_name(sp_run_fault fault); /* "none", "fail", "hang" */
SP_API sp_status sp_run_fault_from_name(const char *name, sp_run_fault *out);

/* What carries activations and gradients between stages. */
typedef enum sp_transport {
    SP_TRANSPORT_THREADS = 0, /* every stage a thread of this process, bounded queues */
    SP_TRANSPORT_MPI = 1      /* every stage an MPI rank (rank s runs stage s), started with
                               * `mpirun -np P`; builds with Open MPI only (SP_ERR_UNSUPPORTED) */
} sp_transport;
SP_API const char *sp_transport_name(sp_transport transport); /* "threads", "mpi" */
SP_API sp_status sp_transport_from_name(const char *name, sp_transport *out);

/* Where the stages compute. */
typedef enum sp_run_backend {
    SP_RUN_BACKEND_CPU = 0, /* a thread per stage pinned to a core, OpenBLAS */
    SP_RUN_BACKEND_CUDA = 1 /* stage s on GPU s mod the GPUs there are (cuBLAS), its outputs
                             * copied peer to peer; threads transport only; builds with the GPU
                             * executor only (SP_ERR_NO_DEVICE otherwise, or without a GPU) */
} sp_run_backend;
SP_API const char *sp_run_backend_name(sp_run_backend backend); /* "cpu", "cuda" */
SP_API sp_status sp_run_backend_from_name(const char *name, sp_run_backend *out);

typedef struct sp_run_opts {
    sp_schedule schedule;   /* SP_SCHEDULE_GPIPE or SP_SCHEDULE_1F1B (default 1F1B) */
    sp_transport transport; /* default SP_TRANSPORT_THREADS */
    uint32_t micro_batches; /* M per step; 0: the plan's (default 0) */
    uint32_t steps;         /* measured steps (default 3) */
    uint32_t warmup_steps;  /* steps run first and not measured (default 1) */
    float learning_rate;    /* SGD (default 0.01) */
    uint64_t seed;          /* weights and data, as sp_model_profile_cpu's (default 1) */
    bool pin;               /* pin stage s to the s-th core this process may use (default true) */
    double timeout_ms;      /* the longest any stage waits for a neighbour (default 60000) */
    const volatile int *cancel; /* nonzero: every stage stops, SP_ERR_INTERRUPTED (may be NULL);
                                 * read by an atomic load, so set it by an atomic store (a signal
                                 * handler's __atomic_store_n or C11 atomic_store on an int) */
    sp_run_fault fault;         /* testing (default SP_RUN_FAULT_NONE) */
    uint32_t fault_stage, fault_step, fault_micro_batch; /* where (step counts warm-up steps) */
    bool keep_state; /* keep every stage's weights after the run (sp_run_get_stage_params; tests;
                      * threads and CPU only) */
    sp_run_backend backend; /* default SP_RUN_BACKEND_CPU */
    bool gpu_split; /* CUDA: stages that share a GPU get disjoint, equal SM partitions (green
                     * contexts) instead of sharing it as streams (default false) */
    bool isolate;   /* every op of every stage runs alone, one at a time, in the simulator's
                     * start order (threads transport): each stage's busy time is then what it
                     * costs on a machine of its own, and the summary's replayed_iteration_ms
                     * is the pipelined iteration those op times give on P such machines
                     * (default false) */
} sp_run_opts;
SP_API void sp_run_opts_init(sp_run_opts *opts);

/* sp_mpi_start: join the MPI job this process was started in (MPI_Init_thread once, funneled),
 * for SP_TRANSPORT_MPI; *rank and *size get this process's rank and the job's size (1 when not
 * started by mpirun). SP_ERR_UNSUPPORTED without Open MPI in the build, SP_ERR_NO_DEVICE when MPI
 * fails to start. sp_mpi_stop: leave it: exit_code 0 finalizes MPI; any other code ends every
 * rank of the job with it (MPI_Abort), since a rank still waiting on a failed one could keep
 * MPI_Finalize from returning. Call it last; a no-op when MPI was not started. */
SP_API sp_status sp_mpi_start(sp_ctx *ctx, int *rank, int *size);
SP_API void sp_mpi_stop(int exit_code);

/* sp_run_plan: train the model pipelined as the plan splits it, warmup_steps + steps steps.
 * The plan's layers must be the model's (by name and count). Returns SP_ERR_INVALID_ARG (the
 * plan and the model differ: the message names the first layer that does; a schedule the
 * runtime does not run), SP_ERR_UNSUPPORTED (an interleaved plan), SP_ERR_INFEASIBLE (a stage
 * cannot allocate its layers: the message names the stage and the bytes), SP_ERR_NO_DEVICE (a
 * stage failed or a neighbour stopped answering within timeout_ms: the message names the stage,
 * the step and the micro-batch), SP_ERR_INTERRUPTED, SP_ERR_NOMEM. No thread is left running. */
SP_API sp_status sp_run_plan(sp_ctx *ctx, const sp_plan *plan, sp_model *model,
                             const sp_run_opts *opts, sp_run **out);
/* With SP_TRANSPORT_MPI every rank calls sp_run_plan with the same plan, model and options
 * (after sp_mpi_start; the job must have as many ranks as the plan has stages) and runs its own
 * stage; at the end every rank holds the whole run (each stage's figures are exchanged), so any
 * rank can report it; stagepart's command reports on rank 0. A rank that fails sends its message
 * to the others, which stop and return the same status and message; a rank that dies is noticed
 * by its neighbours' bounded waits (timeout_ms). */
SP_API void sp_run_destroy(sp_run *run);

/* Per stage, medians over the measured steps. */
typedef struct sp_run_stage {
    uint32_t stage;
    int core;                   /* -1: not pinned */
    int device;                 /* the stage's GPU (SP_RUN_BACKEND_CUDA); -1 on the CPU */
    char host[64];              /* the machine it ran on (MPI ranks may be on several) */
    unsigned sms;               /* gpu_split: the SMs of the stage's partition; 0: the whole GPU */
    double busy_ms;             /* forward + backward compute in one step */
    double fwd_ms, bwd_ms;      /* the two parts of busy_ms */
    double wait_prev_ms;        /* blocked on the previous stage's activations */
    double wait_next_ms;        /* blocked on the next stage's gradients */
    double send_wait_ms;        /* blocked on a full queue */
    double transfer_ms;         /* copying what arrived into the stage's own buffers */
    uint64_t transfer_bytes;    /* received per step, both directions */
    uint64_t peak_memory_bytes; /* weights, gradients, the saved tensors of the most micro-batches
                                 * in flight, scratch and queue buffers */
    uint32_t peak_inflight;
    double predicted_busy_ms;        /* M x the plan's stage time (/ replicas) */
    uint64_t predicted_memory_bytes; /* the plan's memory model under the run's schedule and M:
                                      * resident + in flight x saved bytes (no scratch or queue
                                      * buffers, which peak_memory_bytes also counts) */
    double busy_error;               /* busy_ms / predicted_busy_ms - 1 */
    double share_error;              /* the stage's share of the busy time against its planned
                                      * share - 1: busy_error with the run's overall slowdown
                                      * taken out (what the balance is judged on) */
    uint32_t replicas; /* a replicated plan's: its replicas' ranks, the figures above their mean
                        * (each ran every replicas-th micro-batch; predicted_busy_ms is then
                        * M / replicas x the stage time); 1 otherwise */
} sp_run_stage;

typedef struct sp_run_summary {
    uint32_t stages, micro_batches, steps, warmup_steps, micro_batch_size;
    sp_schedule schedule;
    double iteration_ms, imbalance, bubble_fraction;                               /* measured */
    double predicted_iteration_ms, predicted_imbalance, predicted_bubble_fraction; /* simulated */
    double iteration_error;        /* measured / predicted - 1 (isolated: replayed / predicted) */
    bool isolated;                 /* run with isolate: iteration_ms is every op's time in a row */
    bool shared_hardware;          /* stages competed for one GPU (as streams) or one core: their
                                    * busy times hold the contention, so the plan's stage times
                                    * do not apply (balance_held false; isolate confirms it) */
    bool nccl;                     /* GPU stages as MPI ranks: tensors went GPU to GPU by NCCL;
                                    * false: through host buffers (or no MPI, or the CPU) */
    bool unmatched_sms;            /* on GPUs: a stage ran on other SMs than the plan's profile was
                                    * measured on (a whole GPU against a --sms profile, or an SM
                                    * partition of another size): the plan's stage times do not
                                    * apply (balance_held false, not judged) */
    uint32_t planned_sms;          /* the plan's profile_sms: 0, a whole GPU */
    double replayed_iteration_ms;  /* isolated: the schedule simulated with the measured per-stage
                                    * op times (no transfer delays); NaN otherwise */
    double max_stage_error;        /* the largest |busy_error| */
    double slowdown;               /* every stage's busy time over the plan's, summed: 2.0 when
                                    * the host ran twice as slow as when profiled (NaN: none) */
    double max_share_error;        /* the largest |share_error| */
    double scaled_iteration_error; /* measured (or replayed) / (predicted x slowdown) - 1 */
    bool balance_held;             /* every |share_error| <= 10% and |scaled_iteration_error| <=
                                    * 15%: the stages kept the plan's shares, whatever the host's
                                    * overall speed (slowdown says that) */
    double first_loss, last_loss;  /* mean loss of the first and last step */
    unsigned cores;                /* cores this process may use */
    sp_transport transport;
    sp_run_backend backend;
} sp_run_summary;
SP_API const sp_run_summary *sp_run_get_summary(const sp_run *run);
SP_API const sp_run_stage *sp_run_get_stage(const sp_run *run, size_t i);
/* sp_run_get_step_loss: the mean loss of step i (warm-up steps first), NaN when out of range */
SP_API double sp_run_get_step_loss(const sp_run *run, size_t i);
/* sp_run_get_timeline: the last measured step as a simulation object (ops with their measured
 * start and end, relative to the step's start), for sp_sim_write_trace / sp_sim_write_svg: the
 * same formats as the simulator's, so predicted and measured lie side by side. Borrowed. */
SP_API const sp_sim *sp_run_get_timeline(const sp_run *run);
/* sp_run_to_json: the "stagepart-run-report" document (docs/formats.md#run-report); sp_free. */
SP_API sp_status sp_run_to_json(sp_ctx *ctx, const sp_run *run, char **out);
/* sp_run_get_stage_params: with keep_state, stage s's weights after the run, layer by layer in
 * order (*count floats); NULL otherwise. Borrowed. */
SP_API const float *sp_run_get_stage_params(const sp_run *run, size_t stage, size_t layer,
                                            size_t *count);

/* ---- the run report, read back (formats/) */
/* What `check --report` reads from a run report ("stagepart-run-report", version 1, written by
 * `stagepart run`): measured.iteration_ms, measured.imbalance, predicted.iteration_ms,
 * predicted.imbalance. Other fields are ignored. */
typedef struct sp_run_report_summary {
    double measured_iteration_ms, measured_imbalance;
    double predicted_iteration_ms, predicted_imbalance;
} sp_run_report_summary;
SP_API sp_status sp_run_report_load(sp_ctx *ctx, const char *path, sp_run_report_summary *out);

#ifdef __cplusplus
}
#endif
#endif

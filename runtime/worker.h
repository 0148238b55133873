/* runtime/worker.h: one pipeline stage's worker, whatever carries its tensors.
 *
 * A worker runs its stage's op list (from the simulator's schedule code) for every step: a
 * forward receives the previous stage's activation into the micro-batch's slot of saved
 * tensors and computes into a buffer the transport sends on; a backward does the same with the
 * next stage's gradient; each step ends with SGD. A GPU stage computes on its device and copies
 * each output into the receiving stage's memory (a peer copy). What moves the tensors and how the
 * stages stop
 * together is the transport's (threads: bounded queues in one process, transport_threads.c;
 * MPI ranks: mpi/transport_mpi.c), behind the table below. */
#ifndef SP_RUNTIME_WORKER_H
#define SP_RUNTIME_WORKER_H

#include "run_impl.h"
#include "turns.h"

enum sp_dir {
    SP_DIR_ACT = 0, /* an activation, from stage s - 1 to s */
    SP_DIR_GRAD = 1 /* a gradient, from stage s + 1 to s */
};

struct sp_transport_ops {
    /* Wait until every stage reaches step `step`; *t0_ms gets the step's start on this stage's
     * clock. false at the timeout or when the run stops. */
    bool (*step_gate)(void *t, uint32_t s, uint32_t step, double *t0_ms);
    /* Receive micro-batch mb's tensor from stage `peer` into dst[elems]. *waited_ms gains the
     * time blocked, *copy_ms the time copying. false at the deadline or when the run stops. */
    bool (*recv)(void *t, uint32_t s, uint32_t peer, enum sp_dir dir, uint32_t mb, float *dst,
                 size_t elems, double deadline_ms, double *waited_ms, double *copy_ms);
    /* A buffer of the tensor's size to compute what goes to `peer` into (NULL at the deadline
     * or when the run stops), then send it as micro-batch mb. */
    float *(*send_buffer)(void *t, uint32_t s, uint32_t peer, enum sp_dir dir, double deadline_ms,
                          double *waited_ms);
    void (*send)(void *t, uint32_t s, uint32_t peer, enum sp_dir dir, uint32_t mb);
    /* Record the first failure (later ones are dropped) and make every stage stop. */
    void (*fail)(void *t, sp_status status, const char *message);
    bool (*stopping)(void *t);
    /* What stage s is doing (waiting_on: the peer it waits for, or -1), for naming the stage
     * that stopped when a wait runs out: explain_timeout writes that into msg. */
    void (*set_state)(void *t, uint32_t s, uint32_t step, uint32_t mb, char kind, int waiting_on);
    void (*explain_timeout)(void *t, uint32_t s, uint32_t peer, char *msg, size_t cap);
    /* Replicated stages: sum the stage's gradients over its replicas in place (an all-reduce),
     * before the update; false at the timeout or when the run stops. NULL: one worker a stage. */
    bool (*sum_gradients)(void *t, uint32_t s, struct sp_stage_exec *se);
};

struct sp_stage_worker {
    const struct sp_transport_ops *ops;
    void *t;
    const struct sp_model *m;
    const sp_run_opts *o;
    uint32_t s, P, M, steps_total;
    const struct sp_sched_op *list; /* this stage's ops, in order */
    size_t n_ops;
    int core; /* -1: not pinned */
    /* where the stage computes: the CPU (NULL means it too) or a GPU; prev_device, next_device:
     * the neighbours' backend devices, which the stage copies its outputs to */
    const struct sp_exec_backend *be;
    void *prev_device, *next_device;
    struct sp_stage_exec *se;
    uint32_t slots;
    struct sp_batch *batch;     /* [slots], on the host: a slot is taken while its labels are */
    struct sp_batch *dev_batch; /* [slots], on a GPU: the same data, uploaded */
    float *staging;             /* on a GPU: the output (or input gradient) before it is sent */
    uint32_t *slot_of;          /* [M] */
    float *dy, *loss;
    sp_ctx *ctx;                 /* the worker's own (contexts are single-threaded) */
    uint64_t extra_bytes;        /* dy, loss and the send buffers */
    struct sp_step_stats *stats; /* [steps_total], strided */
    size_t stats_stride;
    sp_sim_op *rec; /* [n_ops]: the last step's ops */
    /* isolate: the global turn order (turns.h) and this stage's ops' places in it (NULL: the
     * stages run at once) */
    struct sp_turns *turns;
    const uint32_t *turn;
    uint32_t sgd_turn;
};

/* sp_run_validate: the options, the plan and the model fit together (the plan's layers are
 * the model's, by name and count); *micro_batches gets M. */
sp_status sp_run_validate(sp_ctx *ctx, const sp_plan *plan, const struct sp_model *m,
                          const sp_run_opts *o, uint32_t *micro_batches);
/* sp_stage_worker_setup: stage s's layers (weights from the seed), slots for its peak in
 * flight, buffers. send_buffers_bytes: what the transport holds for this stage's sends.
 * SP_ERR_INFEASIBLE naming the stage and the bytes when memory runs out. */
sp_status sp_stage_worker_setup(sp_ctx *ctx, struct sp_stage_worker *w, const sp_plan *plan,
                                uint64_t send_buffers_bytes);
void sp_stage_worker_release(struct sp_stage_worker *w);
/* pin the calling thread to w->core (w->core becomes -1 when that fails) */
void sp_stage_worker_pin(struct sp_stage_worker *w);
/* every step of the stage; a failure goes through ops->fail */
void sp_stage_worker_run(struct sp_stage_worker *w);

/* The transports (run.c calls one): every stage of the run, its op lists ops[offset[s] ..
 * offset[s + 1]) from sp_schedule_build, the cores this process may use (threads: and each
 * stage's backend, be[P]); each fills run->stats
 * (step-major, P per step), run->timeline->ops and run->stages' core, slots and memory. */
sp_status sp_run_threads(sp_ctx *ctx, const sp_plan *plan, const struct sp_model *m,
                         const sp_run_opts *o, uint32_t M, const struct sp_sched_op *ops,
                         const size_t *offset, const int *cores, unsigned n_cores,
                         const struct sp_exec_backend *const *be, struct sp_run *run);
/* runtime/mpi/transport_mpi.c, or runtime/mpi_stub.c without Open MPI */
sp_status sp_run_mpi(sp_ctx *ctx, const sp_plan *plan, const struct sp_model *m,
                     const sp_run_opts *o, uint32_t M, const struct sp_sched_op *ops,
                     const size_t *offset, const int *cores, unsigned n_cores, struct sp_run *run);

/* sp_run_judge_balance (run_report.c): from S->slowdown, S->iteration_error and each stage's
 * busy_error, each stage's share_error, S->max_share_error, S->scaled_iteration_error and
 * S->balance_held: the balance judged on the stages' shares, the host's speed apart */
void sp_run_judge_balance(sp_run_summary *S, sp_run_stage *stages);
/* sp_run_finish (run_report.c): the medians, the prediction and the timeline, once every
 * stage's stats are in run->stats (step-major, P per step) and run->timeline->ops */
sp_status sp_run_finish(sp_ctx *ctx, struct sp_run *run, const sp_plan *plan,
                        const struct sp_model *m, const sp_run_opts *o);

#endif

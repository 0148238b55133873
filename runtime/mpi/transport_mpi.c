/* runtime/mpi/transport_mpi.c: `--transport mpi`: rank s runs stage s; activations and
 * gradients are MPI messages (Open MPI).
 *
 * On GPUs (--backend cuda) rank s runs its stage on its local rank's GPU (local rank mod the
 * GPUs it sees). When every rank has a GPU of its own and NCCL, tensors go GPU to GPU by NCCL
 * point-to-point (runtime/gpu_links.h), polled like everything else here; otherwise (ranks that
 * share a GPU, which NCCL refuses; a build without NCCL; STAGEPART_NCCL=0) through page-locked
 * host buffers: a stage's output is copied from the GPU into the send buffer, what arrives lands
 * in a host buffer and is copied up. The ranks choose together, after every stage is set up.
 *
 * Tensors go with MPI_Isend from a ring of buffers (a send waits only when the ring is full) and
 * arrive with MPI_Irecv straight into the stage's own buffer. Every wait polls its request with
 * MPI_Test every 0.2 ms up to its deadline, so nothing waits unbounded. Stopping together: a
 * rank that fails sends its message to every other rank on a tag of its own; every rank keeps an
 * MPI_Irecv posted for it and looks at it in every wait. A rank that dies sends nothing: its
 * neighbours' waits run out (timeout_ms) and they stop and tell the rest. After the last step
 * the ranks agree that all succeeded (a non-blocking all-reduce, bounded too) before they
 * exchange their figures, so no rank waits in a collective on a dead one. */
#define _GNU_SOURCE
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <unistd.h>

#include "mpi_ranks.h"
#include "run_devices.h"
#include "transport_mpi_impl.h"

static int data_tag(uint32_t mb, enum sp_dir dir) {
    return TAG_DATA + (int)(mb % TAG_MB_RANGE) * 2 + (int)dir;
}

void sp_mpi_nap(void) {
    struct timespec ts = {0, 200000L}; /* 0.2 ms between polls */
    nanosleep(&ts, NULL);
}

static void record(struct mpi_t *t, sp_status st, const char *message) {
    if (t->status == SP_OK)
        t->status = sp_fail(t->ctx, st, "%s", message);
    t->stop = true;
}

bool sp_mpi_stopping(void *p) {
    struct mpi_t *t = p;
    if (t->stop)
        return true;
    int done = 0;
    MPI_Test(&t->abort_req, &done, MPI_STATUS_IGNORE);
    if (done) { /* another rank failed: take its status and message as ours */
        int32_t code;
        memcpy(&code, t->abort_msg, sizeof code);
        t->abort_msg[sizeof t->abort_msg - 1] = '\0';
        record(t, (sp_status)code, t->abort_msg + sizeof code);
    }
    return t->stop;
}

/* poll req until it completes (true), the deadline passes or the run stops (false; a point-to-
 * point request is cancelled; a collective one cannot be, and is left to MPI_Abort, which every
 * failed run ends in: sp_mpi_stop) */
static bool wait_req(struct mpi_t *t, MPI_Request *req, double deadline_ms, double *waited_ms,
                     bool collective) {
    double t0 = sp_now_ms();
    int done = 0;
    for (;;) {
        MPI_Test(req, &done, MPI_STATUS_IGNORE);
        if (done || sp_mpi_stopping(t) || sp_now_ms() >= deadline_ms)
            break;
        sp_mpi_nap();
    }
    if (!done && !collective && *req != MPI_REQUEST_NULL) {
        MPI_Cancel(req);
        MPI_Request_free(req);
    }
    if (waited_ms)
        *waited_ms += sp_now_ms() - t0;
    return done != 0;
}

void sp_mpi_fail(void *p, sp_status st, const char *message) {
    struct mpi_t *t = p;
    if (t->stop && t->status != SP_OK)
        return;
    record(t, st, message);
    /* tell every other rank, with the message, so all stop and say the same */
    char buf[sizeof t->abort_msg];
    int32_t code = (int32_t)st;
    memcpy(buf, &code, sizeof code);
    snprintf(buf + sizeof code, sizeof buf - sizeof code, "%s", message);
    for (uint32_t r = 0; r < t->ranks; r++)
        if (r != t->rank) {
            MPI_Request req;
            MPI_Isend(buf, (int)sizeof buf, MPI_CHAR, (int)r, TAG_ABORT, MPI_COMM_WORLD, &req);
            double deadline = sp_now_ms() + 100.0; /* a dead rank cannot take it: do not wait */
            int done = 0;
            while (!done && sp_now_ms() < deadline) {
                MPI_Test(&req, &done, MPI_STATUS_IGNORE);
                if (!done)
                    sp_mpi_nap();
            }
            if (!done)
                MPI_Request_free(&req);
        }
}

bool sp_mpi_gate(void *p, uint32_t s, uint32_t step, double *t0_ms) {
    (void)s, (void)step;
    struct mpi_t *t = p;
    MPI_Request req;
    MPI_Ibarrier(MPI_COMM_WORLD, &req);
    bool ok = wait_req(t, &req, sp_now_ms() + t->timeout_ms, NULL, true);
    *t0_ms = sp_now_ms();
    return ok;
}

static bool mpi_recv(void *p, uint32_t s, uint32_t peer, enum sp_dir dir, uint32_t mb, float *dst,
                     size_t elems, double deadline_ms, double *waited_ms, double *copy_ms) {
    struct mpi_t *t = p;
    MPI_Request req; /* on the CPU MPI writes straight into dst: the copy is inside the wait */
    MPI_Irecv(t->arrived ? t->arrived : dst, (int)elems, MPI_FLOAT, sp_mpi_rank_of(t, peer, mb),
              data_tag(mb, dir), MPI_COMM_WORLD, &req);
    if (!wait_req(t, &req, deadline_ms, waited_ms, false))
        return false;
    if (!t->arrived)
        return true;
    double c0 = sp_now_ms();
    bool ok = t->be->upload(t->be->device, dst, t->arrived, elems * sizeof(float));
    *copy_ms += sp_now_ms() - c0;
    if (!ok) {
        char msg[160];
        snprintf(msg, sizeof msg, "stage %u: copying micro-batch %u from rank %u to its GPU failed",
                 s, mb, peer);
        sp_mpi_fail(t, SP_ERR_NO_DEVICE, msg);
    }
    return ok;
}

static float *mpi_send_buffer(void *p, uint32_t s, uint32_t peer, enum sp_dir dir,
                              double deadline_ms, double *waited_ms) {
    (void)s, (void)peer;
    struct mpi_t *t = p;
    struct ring *r = &t->ring[dir];
    MPI_Request *req = &r->req[r->next];
    if (*req != MPI_REQUEST_NULL && !wait_req(t, req, deadline_ms, waited_ms, false))
        return NULL;
    return r->buf[r->next];
}

static void mpi_send(void *p, uint32_t s, uint32_t peer, enum sp_dir dir, uint32_t mb) {
    (void)s;
    struct mpi_t *t = p;
    struct ring *r = &t->ring[dir];
    MPI_Isend(r->buf[r->next], (int)r->elems, MPI_FLOAT, sp_mpi_rank_of(t, peer, mb),
              data_tag(mb, dir), MPI_COMM_WORLD, &r->req[r->next]);
    r->next = (r->next + 1) % r->cap;
}

void sp_mpi_set_state(void *p, uint32_t s, uint32_t step, uint32_t mb, char kind, int waiting_on) {
    (void)p, (void)s, (void)step, (void)mb, (void)kind, (void)waiting_on;
}

void sp_mpi_explain_timeout(void *p, uint32_t s, uint32_t peer, char *msg, size_t cap) {
    (void)s;
    const struct mpi_t *t = p;
    snprintf(msg, cap,
             "%s %u sent nothing in that time (it died, hangs, or waits in turn on another "
             "stage)",
             t->base ? "the replica of stage" : "rank", peer);
}

/* a stage's replicas sum their gradients, layer by layer (bounded like every wait here); on a
 * GPU through page-locked host memory, as its tensors go */
bool sp_mpi_sum_gradients(void *p, uint32_t s, struct sp_stage_exec *se) {
    struct mpi_t *t = p;
    bool gpu = t->be != &sp_exec_backend_cpu;
    for (size_t k = 0; k <= se->last - se->first; k++) {
        size_t np = se->m->layers[se->first + k].param_elems, bytes = np * sizeof(float);
        if (!np)
            continue;
        float *g = gpu ? t->grad_host : se->dparams[k];
        if (gpu && !t->be->download(t->be->device, g, se->dparams[k], bytes)) {
            char msg[128];
            snprintf(msg, sizeof msg, "stage %u: reading its gradients from its GPU failed", s);
            sp_mpi_fail(t, SP_ERR_NO_DEVICE, msg);
            return false;
        }
        MPI_Request req;
        MPI_Iallreduce(MPI_IN_PLACE, g, (int)np, MPI_FLOAT, MPI_SUM, t->stage_comm, &req);
        if (!wait_req(t, &req, sp_now_ms() + t->timeout_ms, NULL, true))
            return false;
        if (gpu && !t->be->upload(t->be->device, se->dparams[k], g, bytes)) {
            char msg[128];
            snprintf(msg, sizeof msg, "stage %u: writing its summed gradients to its GPU failed",
                     s);
            sp_mpi_fail(t, SP_ERR_NO_DEVICE, msg);
            return false;
        }
    }
    return true;
}

static const struct sp_transport_ops mpi_ops = {
    .step_gate = sp_mpi_gate,
    .recv = mpi_recv,
    .send_buffer = mpi_send_buffer,
    .send = mpi_send,
    .fail = sp_mpi_fail,
    .stopping = sp_mpi_stopping,
    .set_state = sp_mpi_set_state,
    .explain_timeout = sp_mpi_explain_timeout,
};

static bool ring_init(struct mpi_t *t, struct ring *r, uint32_t cap, size_t elems) {
    r->cap = cap, r->next = 0, r->elems = elems;
    r->buf = sp_calloc(cap, sizeof *r->buf);
    r->req = sp_calloc(cap, sizeof *r->req);
    if (!r->buf || !r->req)
        return false;
    for (uint32_t k = 0; k < cap; k++) {
        r->req[k] = MPI_REQUEST_NULL;
        if (!(r->buf[k] = t->be->alloc_host(t->be->device, (elems ? elems : 1) * sizeof(float))))
            return false;
    }
    return true;
}

static void ring_release(struct mpi_t *t, struct ring *r) {
    for (uint32_t k = 0; r->req && k < r->cap; k++)
        if (r->req[k] != MPI_REQUEST_NULL &&
            !wait_req(t, &r->req[k], sp_now_ms() + 100.0, NULL, false))
            r->req[k] = MPI_REQUEST_NULL;
    for (uint32_t k = 0; r->buf && k < r->cap; k++)
        if (r->buf[k])
            t->be->release_host(t->be->device, r->buf[k]);
    sp_free(r->buf);
    sp_free(r->req);
}

/* a non-blocking collective, bounded by the timeout (left to MPI_Abort when it runs out) */
static bool bounded(struct mpi_t *t, MPI_Request *req) {
    double deadline = sp_now_ms() + t->timeout_ms;
    int done = 0;
    while (!done && sp_now_ms() < deadline) {
        MPI_Test(req, &done, MPI_STATUS_IGNORE);
        if (!done)
            sp_mpi_nap();
    }
    return done != 0;
}

/* What every rank says before the tensors' way is chosen. */
struct placement {
    int32_t device; /* -1: the CPU */
    int32_t ready;  /* set up */
    int32_t nccl;   /* NCCL here (rank 0: and it made the communicators' ids) */
    char host[64];
};

/* Every rank, set up or not (the collectives need all): NCCL when every stage is on a GPU of its
 * own and every rank has NCCL, else host buffers; then this rank's links. */
static sp_status choose_links(sp_ctx *ctx, struct mpi_t *t, struct sp_stage_worker *w, sp_status st,
                              int device, uint32_t cap, const size_t send_elems[2], size_t arrive,
                              struct sp_run *run) {
    struct placement mine = {device, st == SP_OK, 0, ""};
    if (gethostname(mine.host, sizeof mine.host - 1) != 0)
        snprintf(mine.host, sizeof mine.host, "?");
    const char *why = NULL, *off = getenv("STAGEPART_NCCL");
    mine.nccl = device >= 0 && sp_nccl_available(&why) && !(off && strcmp(off, "0") == 0);
    unsigned char ids[2][SP_NCCL_ID_BYTES];
    memset(ids, 0, sizeof ids);
    if (t->rank == 0 && mine.nccl) { /* a failure here only means host buffers */
        sp_ctx *scratch = NULL;
        mine.nccl = sp_ctx_create(&scratch) == SP_OK && sp_nccl_make_ids(scratch, ids) == SP_OK;
        sp_ctx_destroy(scratch);
    }
    struct placement *all = sp_calloc(t->ranks, sizeof *all);
    if (!all)
        return st == SP_OK ? sp_oom(ctx, "the run") : st;
    MPI_Request req;
    MPI_Iallgather(&mine, (int)sizeof mine, MPI_BYTE, all, (int)sizeof mine, MPI_BYTE,
                   MPI_COMM_WORLD, &req);
    bool heard = bounded(t, &req), use = heard && t->ranks > 1;
    for (uint32_t a = 0; use && a < t->ranks; a++) {
        use = all[a].ready && all[a].nccl;
        for (uint32_t b = 0; use && b < a; b++) /* NCCL refuses two ranks on one GPU */
            use = !(all[a].device == all[b].device &&
                    strncmp(all[a].host, all[b].host, sizeof all[a].host) == 0);
    }
    sp_free(all);
    if (use) {
        MPI_Ibcast(ids, (int)sizeof ids, MPI_BYTE, 0, MPI_COMM_WORLD, &req);
        heard = bounded(t, &req);
    }
    if (st != SP_OK)
        return st; /* this rank already told the others */
    if (!heard)
        return sp_fail(ctx, SP_ERR_NO_DEVICE,
                       "stage %u: the other ranks did not answer within %.0f ms before the run",
                       t->s, t->timeout_ms);
    run->summary.nccl = use;
    if (use) { /* collective: every rank is here, set up */
        st = sp_nccl_open(ctx, t->be, (int)t->rank, (int)t->ranks, ids, cap, send_elems, &t->nccl);
        if (st == SP_OK) {
            t->ops = sp_mpi_nccl_ops; /* the output goes into a send buffer on its GPU */
            t->ops.sum_gradients = t->base ? sp_mpi_sum_gradients : NULL;
            w->ops = &t->ops;
            w->prev_device = w->next_device = t->be->device;
        }
        return st;
    }
    if (w->be && !(t->arrived = t->be->alloc_host(t->be->device, arrive * sizeof(float))))
        return sp_fail(ctx, SP_ERR_INFEASIBLE, "stage %u: out of host memory for what arrives",
                       t->s);
    if (!(ring_init(t, &t->ring[SP_DIR_ACT], cap, send_elems[SP_DIR_ACT]) &&
          ring_init(t, &t->ring[SP_DIR_GRAD], cap, send_elems[SP_DIR_GRAD])))
        return sp_fail(ctx, SP_ERR_INFEASIBLE, "stage %u: out of memory for its send buffers",
                       t->s);
    return SP_OK;
}

/* One rank's run: what sp_run_mpi was given, and what this rank sets up for it. */
struct mpi_run {
    sp_ctx *ctx;
    const sp_plan *plan;
    const struct sp_model *m;
    const sp_run_opts *o;
    uint32_t M, total; /* micro-batches; steps with the warm-up */
    struct sp_run *run;
    struct mpi_t t;
    struct sp_stage_worker w;
    struct sp_step_stats *stats;
    uint32_t *base;
    struct sp_run_devices *devices;
    int device;
    uint32_t cap;         /* micro-batches in flight a send ring holds */
    size_t arrive;        /* the largest tensor that arrives, in elements */
    size_t send_elems[2]; /* [SP_DIR_ACT], [SP_DIR_GRAD] */
    const size_t *offset; /* each rank's ops in the timeline */
};

/* This rank's place: its stage (replicas in stage order: base[k] is stage k's first rank), the
 * stage's communicator, and the same run on every rank (min and max of the fingerprints agree);
 * then the listener for another rank's abort. */
static sp_status join(struct mpi_run *r, int rank, int size) {
    sp_ctx *ctx = r->ctx;
    uint32_t P = (uint32_t)sp_plan_get_stage_count(r->plan);
    uint32_t gpus = sp_plan_get_summary(r->plan)->gpus, ranks = gpus ? gpus : P;
    if ((uint32_t)size != ranks)
        return sp_fail(ctx, SP_ERR_INVALID_ARG,
                       "the plan has %u %s and the MPI job %d ranks: start it with mpirun -np %u",
                       ranks, gpus ? "replicas of its stages" : "stages", size, ranks);
    if (r->o->keep_state)
        return sp_fail(ctx, SP_ERR_INVALID_ARG, "keep_state is for the threads transport");
    uint32_t s = (uint32_t)rank;
    if (gpus && !(r->base = sp_mallocarray((size_t)P + 1, sizeof *r->base)))
        return sp_oom(ctx, "the run");
    for (uint32_t k = 0; r->base && k <= P; k++)
        r->base[k] = k ? r->base[k - 1] + sp_plan_get_stage(r->plan, k - 1)->replicas : 0;
    for (uint32_t k = 0; r->base && k < P; k++)
        if ((uint32_t)rank >= r->base[k])
            s = k;
    struct mpi_t *t = &r->t;
    t->s = s, t->P = P, t->timeout_ms = r->o->timeout_ms, t->ctx = ctx;
    t->rank = (uint32_t)rank, t->ranks = ranks, t->base = r->base;
    /* collective: every rank splits, each into its stage's replicas */
    if (r->base && MPI_Comm_split(MPI_COMM_WORLD, (int)s, rank, &t->stage_comm) != MPI_SUCCESS)
        return sp_fail(ctx, SP_ERR_NO_DEVICE, "rank %d: MPI_Comm_split failed", rank);
    uint64_t fp = sp_mpi_fingerprint(r->plan, r->m, r->o, r->M), lo = 0, hi = 0;
    MPI_Request agree[2];
    MPI_Iallreduce(&fp, &lo, 1, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD, &agree[0]);
    MPI_Iallreduce(&fp, &hi, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD, &agree[1]);
    if (!bounded(t, &agree[0]) || !bounded(t, &agree[1]))
        return sp_fail(ctx, SP_ERR_NO_DEVICE,
                       "stage %u: the other ranks did not answer within %.0f ms at the start", s,
                       r->o->timeout_ms);
    if (lo != hi)
        return sp_fail(ctx, SP_ERR_INVALID_ARG,
                       "the MPI ranks were started with different plans, models, sizes or "
                       "options (rank %u's differ from another's): give every rank the same "
                       "command line",
                       s);
    MPI_Irecv(t->abort_msg, (int)sizeof t->abort_msg, MPI_CHAR, MPI_ANY_SOURCE, TAG_ABORT,
              MPI_COMM_WORLD, &t->abort_req);
    return SP_OK;
}

/* the stage's worker: its ops, its core, its GPU (its local rank's: ranks of one machine share
 * GPUs round robin), its send buffers and, replicated on a GPU, host room for its gradients */
static sp_status setup_worker(struct mpi_run *r, const struct sp_sched_op *ops,
                              const size_t *offset, const int *cores, unsigned n_cores) {
    sp_ctx *ctx = r->ctx;
    struct mpi_t *t = &r->t;
    struct sp_stage_worker *w = &r->w;
    uint32_t s = t->s, P = t->P, rank = t->rank;
    t->ops = mpi_ops; /* replicated stages: and the replicas' gradients summed */
    t->ops.sum_gradients = r->base ? sp_mpi_sum_gradients : NULL;
    w->ops = &t->ops, w->t = t, w->m = r->m, w->o = r->o;
    w->s = s, w->P = P, w->M = r->M, w->steps_total = r->total;
    w->list = ops + offset[rank], w->n_ops = offset[rank + 1] - offset[rank];
    /* the local rank's core among those this process may use (mpirun may have bound it) */
    const char *local = getenv("OMPI_COMM_WORLD_LOCAL_RANK");
    unsigned lr = local ? (unsigned)strtoul(local, NULL, 10) : rank;
    w->core = r->o->pin ? cores[lr % n_cores] : -1;
    w->stats = r->stats, w->stats_stride = 1;
    w->rec = r->run->timeline->ops + offset[rank];
    const sp_stage *stage = sp_plan_get_stage(r->plan, s);
    size_t out_elems = r->m->layers[stage->last_layer].out_elems;
    size_t in_elems = r->m->layers[stage->first_layer].in_elems;
    r->cap = r->M < TAG_MB_RANGE ? r->M : TAG_MB_RANGE;
    r->send_elems[SP_DIR_ACT] = s + 1 < P ? out_elems : 0;
    r->send_elems[SP_DIR_GRAD] = s > 0 ? in_elems : 0;
    uint64_t sends = (uint64_t)r->cap * (r->send_elems[0] + r->send_elems[1]);
    r->arrive = in_elems > out_elems ? in_elems : out_elems;
    const struct sp_exec_backend **be = NULL;
    unsigned sms = 0;
    t->be = &sp_exec_backend_cpu;
    sp_status st = SP_OK;
    if (r->o->backend == SP_RUN_BACKEND_CUDA) {
        st = sp_run_devices_open(ctx, r->m, 1, false, lr, &r->devices, &be, &r->device, &sms);
        if (st == SP_OK) {
            w->be = t->be = be[0];
        } else { /* the message says stage 0: this rank's one stage is s */
            char why[1024];
            snprintf(why, sizeof why, "%s", sp_ctx_get_errmsg(ctx));
            st = sp_fail(ctx, st, "rank %u (stage %u): %s", s, s, why);
        }
    }
    if (st == SP_OK) /* the send buffers counted, on the host or on the GPU */
        st = sp_stage_worker_setup(ctx, w, r->plan,
                                   (sends + (w->be ? r->arrive : 0)) * sizeof(float));
    size_t most = 0; /* replicas on GPUs: room for a layer's gradients in host memory */
    for (size_t l = stage->first_layer; r->base && w->be && l <= stage->last_layer; l++)
        most = r->m->layers[l].param_elems > most ? r->m->layers[l].param_elems : most;
    if (st == SP_OK && most && !(t->grad_host = t->be->alloc_host(t->be->device, most * 4)))
        st = sp_fail(ctx, SP_ERR_INFEASIBLE, "stage %u: no host memory for its gradients", s);
    return st;
}

/* this rank's failure told to the others, who would wait for it */
static void tell_others(struct mpi_run *r, sp_status st) {
    char why[1024];
    snprintf(why, sizeof why, "%s", sp_ctx_get_errmsg(r->ctx));
    sp_mpi_fail(&r->t, st, why);
}

/* did every rank succeed (bounded: a dead rank never answers)? then every rank gets every
 * stage's figures */
static sp_status finish(struct mpi_run *r, sp_status st) {
    sp_ctx *ctx = r->ctx;
    struct mpi_t *t = &r->t;
    int mine = st == SP_OK, all = 0;
    MPI_Request req;
    MPI_Iallreduce(&mine, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD, &req);
    if (!bounded(t, &req)) {
        if (st == SP_OK)
            st = sp_fail(ctx, SP_ERR_NO_DEVICE,
                         "stage %u finished, but another rank did not answer within %.0f ms at "
                         "the end of the run (it died)",
                         t->s, r->o->timeout_ms);
    } else if (!all && st == SP_OK) {
        /* another rank failed after this one finished: its message is on the way */
        double deadline = sp_now_ms() + 1000.0;
        while (!sp_mpi_stopping(t) && sp_now_ms() < deadline)
            sp_mpi_nap();
        st =
            t->status != SP_OK ? t->status : sp_fail(ctx, SP_ERR_NO_DEVICE, "another stage failed");
    }
    if (st != SP_OK)
        return st;
    struct sp_mpi_stage_info info = {r->w.core, r->device, r->w.slots,
                                     r->w.se->bytes + r->w.extra_bytes, ""};
    if (gethostname(info.host, sizeof info.host - 1) != 0)
        snprintf(info.host, sizeof info.host, "?");
    return sp_mpi_share_figures(ctx, r->run, t->P, r->base, t->ranks, r->total, r->offset, r->stats,
                                &info, r->o->timeout_ms);
}

static void release(struct mpi_run *r, sp_status st) {
    struct mpi_t *t = &r->t;
    ring_release(t, &t->ring[SP_DIR_ACT]);
    ring_release(t, &t->ring[SP_DIR_GRAD]);
    if (t->abort_req != MPI_REQUEST_NULL) {
        int done = 0;
        MPI_Test(&t->abort_req, &done, MPI_STATUS_IGNORE);
        if (!done) {
            MPI_Cancel(&t->abort_req);
            MPI_Request_free(&t->abort_req);
        }
    }
    if (t->nccl && st != SP_OK)
        sp_nccl_abort(t->nccl); /* nothing may wait for a peer that stopped */
    sp_nccl_close(t->nccl);
    sp_stage_worker_release(&r->w);
    if (t->arrived)
        t->be->release_host(t->be->device, t->arrived);
    if (t->grad_host)
        t->be->release_host(t->be->device, t->grad_host);
    sp_run_devices_close(r->devices); /* after the stage's memory on it is released */
    sp_free(r->stats);
    if (t->stage_comm != MPI_COMM_NULL)
        MPI_Comm_free(&t->stage_comm);
    sp_free(r->base);
}

sp_status sp_run_mpi(sp_ctx *ctx, const sp_plan *plan, const struct sp_model *m,
                     const sp_run_opts *o, uint32_t M, const struct sp_sched_op *ops,
                     const size_t *offset, const int *cores, unsigned n_cores, struct sp_run *run) {
    int initialized = 0, rank = 0, size = 0;
    MPI_Initialized(&initialized);
    if (!initialized)
        return sp_fail(ctx, SP_ERR_INVALID_ARG,
                       "the MPI transport needs MPI started first (sp_mpi_start)");
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    struct mpi_run r;
    memset(&r, 0, sizeof r);
    r.ctx = ctx, r.plan = plan, r.m = m, r.o = o, r.M = M, r.run = run, r.offset = offset;
    r.total = o->warmup_steps + o->steps;
    r.device = -1;
    r.t.stage_comm = MPI_COMM_NULL;
    r.t.abort_req = MPI_REQUEST_NULL;
    run->rank = rank;
    sp_status st = join(&r, rank, size);
    if (st != SP_OK) { /* before the run's collectives: nothing to tell */
        release(&r, st);
        return st;
    }
    r.stats = sp_calloc(r.total, sizeof *r.stats);
    st = r.stats ? setup_worker(&r, ops, offset, cores, n_cores) : sp_oom(ctx, "the run");
    if (st != SP_OK) /* before the collectives of choose_links: the others must not wait */
        tell_others(&r, st);
    sp_status failed_before = st;
    st = choose_links(ctx, &r.t, &r.w, st, r.device, r.cap, r.send_elems, r.arrive, run);
    if (st != SP_OK && failed_before == SP_OK)
        tell_others(&r, st);
    if (st == SP_OK) {
        sp_stage_worker_pin(&r.w);
        sp_stage_worker_run(&r.w);
        st = r.t.status;
    }
    st = finish(&r, st);
    release(&r, st);
    return st;
}

/* runtime/mpi/mpi_ranks.c: what the MPI transport checks and shares across its ranks
 * (mpi_ranks.h), and MPI's start and stop around a run (run.h). */
#include <mpi.h>
#include <string.h>
#include <time.h>

#include "mpi_ranks.h"

/* A fingerprint of what this rank was asked to run: every rank must run the same plan, model
 * shape and options, or the tensors they exchange would not match in size (MPI would then end
 * the job with a truncation error and no word on why). */
static uint64_t mix(uint64_t h, uint64_t v) {
    return (h ^ v) * 0x100000001b3ull; /* FNV-1a over 64-bit words */
}

uint64_t sp_mpi_fingerprint(const sp_plan *plan, const struct sp_model *m, const sp_run_opts *o,
                            uint32_t M) {
    uint64_t h = 0xcbf29ce484222325ull;
    h = mix(h, M);
    h = mix(h, (uint64_t)o->schedule);
    h = mix(h, o->steps);
    h = mix(h, o->warmup_steps);
    h = mix(h, o->seed);
    h = mix(h, m->bound_batch);
    h = mix(h, m->bound_seq);
    h = mix(h, m->n_layers);
    for (size_t k = 0; k < sp_plan_get_stage_count(plan); k++) {
        const sp_stage *st = sp_plan_get_stage(plan, k);
        h = mix(h, st->first_layer);
        h = mix(h, st->last_layer);
        h = mix(h, st->replicas);
    }
    for (size_t l = 0; l < m->n_layers; l++) {
        h = mix(h, m->layers[l].in_elems);
        h = mix(h, m->layers[l].out_elems);
        h = mix(h, m->layers[l].param_elems);
    }
    return h;
}

/* Ranks whose GPU another rank of the same machine runs on compete for it as two streams do:
 * their busy times hold the contention and the plan does not apply to them. */
void sp_mpi_shared_gpus(sp_ctx *ctx, struct sp_run *run, const struct sp_mpi_stage_info *infos,
                        uint32_t P) {
    uint32_t shared = 0;
    for (uint32_t a = 0; a < P; a++)
        for (uint32_t b = 0; b < a; b++)
            if (infos[a].device >= 0 && infos[a].device == infos[b].device &&
                strncmp(infos[a].host, infos[b].host, sizeof infos[a].host) == 0) {
                shared++;
                break;
            }
    if (!shared)
        return;
    run->summary.shared_hardware = true;
    sp_warn(ctx,
            "%u MPI rank%s share a GPU with another rank on the same machine: they run as "
            "streams competing for all its SMs, so the plan's stage times do not apply to them",
            shared, shared == 1 ? "" : "s");
}

/* the requests done within timeout_ms (polled every 0.2 ms) */
static bool all_done(MPI_Request *req, int n, double timeout_ms) {
    double deadline = sp_now_ms() + timeout_ms;
    int done = 0;
    while (!done && sp_now_ms() < deadline) {
        MPI_Testall(n, req, &done, MPI_STATUSES_IGNORE);
        if (!done)
            nanosleep(&(struct timespec){0, 200000L}, NULL);
    }
    return done != 0;
}

/* stage s's figures at step k from its replicas' (r of them from rank b) */
static void stage_figures(const struct sp_step_stats *every, uint32_t total, uint32_t k, uint32_t b,
                          uint32_t r, struct sp_step_stats *out) {
    memset(out, 0, sizeof *out);
    for (uint32_t j = 0; j < r; j++) {
        const struct sp_step_stats *x = &every[(size_t)(b + j) * total + k];
        out->busy_ms += x->busy_ms / r;
        out->fwd_ms += x->fwd_ms / r;
        out->bwd_ms += x->bwd_ms / r;
        out->cpu_ms += x->cpu_ms / r;
        out->wait_prev_ms += x->wait_prev_ms / r;
        out->wait_next_ms += x->wait_next_ms / r;
        out->send_wait_ms += x->send_wait_ms / r;
        out->transfer_ms += x->transfer_ms / r;
        out->transfer_bytes += x->transfer_bytes;
        out->end_ms = x->end_ms > out->end_ms ? x->end_ms : out->end_ms;
        out->optimizer_ms =
            x->optimizer_ms > out->optimizer_ms ? x->optimizer_ms : out->optimizer_ms;
        out->loss += x->loss; /* each replica's share of the step's mean */
    }
}

sp_status sp_mpi_share_figures(sp_ctx *ctx, struct sp_run *run, uint32_t P, const uint32_t *base,
                               uint32_t ranks, uint32_t total, const size_t *offset,
                               const struct sp_step_stats *stats,
                               const struct sp_mpi_stage_info *mine, double timeout_ms) {
    struct sp_step_stats *every = sp_calloc((size_t)total * ranks, sizeof *every);
    struct sp_mpi_stage_info *infos = sp_calloc(ranks, sizeof *infos);
    int *counts = sp_calloc(ranks, sizeof *counts), *displs = sp_calloc(ranks, sizeof *displs);
    sp_status st = every && infos && counts && displs ? SP_OK : sp_oom(ctx, "the run's figures");
    if (st == SP_OK) {
        for (uint32_t r = 0; r < ranks; r++) {
            counts[r] = (int)((offset[r + 1] - offset[r]) * sizeof(sp_sim_op));
            displs[r] = (int)(offset[r] * sizeof(sp_sim_op));
        }
        MPI_Request reqs[3];
        MPI_Iallgather(stats, (int)(total * sizeof *stats), MPI_BYTE, every,
                       (int)(total * sizeof *stats), MPI_BYTE, MPI_COMM_WORLD, &reqs[0]);
        MPI_Iallgather(mine, (int)sizeof *mine, MPI_BYTE, infos, (int)sizeof *mine, MPI_BYTE,
                       MPI_COMM_WORLD, &reqs[1]);
        MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_BYTE, run->timeline->ops, counts, displs, MPI_BYTE,
                        MPI_COMM_WORLD, &reqs[2]);
        if (!all_done(reqs, 3, timeout_ms))
            st = sp_fail(ctx, SP_ERR_NO_DEVICE,
                         "the ranks did not exchange their figures within %.0f ms", timeout_ms);
    }
    for (uint32_t s = 0; st == SP_OK && s < P; s++) {
        uint32_t b = base ? base[s] : s, r = base ? base[s + 1] - base[s] : 1;
        for (uint32_t k = 0; k < total; k++)
            stage_figures(every, total, k, b, r, &run->stats[(size_t)k * P + s]);
        run->stages[s].core = infos[b].core; /* the first replica's */
        run->stages[s].device = infos[b].device;
        memcpy(run->stages[s].host, infos[b].host, sizeof run->stages[s].host);
        run->stages[s].host[sizeof run->stages[s].host - 1] = '\0';
        run->stages[s].peak_inflight = infos[b].slots;
        run->stages[s].peak_memory_bytes = infos[b].bytes;
    }
    for (uint32_t d = 0; st == SP_OK && run->replica_stats && d < ranks; d++) {
        for (uint32_t k = 0; k < total; k++)
            run->replica_stats[(size_t)k * ranks + d] = every[(size_t)d * total + k];
        for (size_t i = offset[d]; i < offset[d + 1]; i++) /* a worker names its stage */
            run->timeline->ops[i].device = d;
    }
    if (st == SP_OK)
        sp_mpi_shared_gpus(ctx, run, infos, ranks);
    sp_free(every);
    sp_free(infos);
    sp_free(counts);
    sp_free(displs);
    return st;
}

sp_status sp_mpi_start(sp_ctx *ctx, int *rank, int *size) {
    int initialized = 0, provided = 0;
    MPI_Initialized(&initialized);
    if (!initialized && MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS)
        return sp_fail(ctx, SP_ERR_NO_DEVICE, "MPI did not start (MPI_Init_thread failed)");
    MPI_Comm_rank(MPI_COMM_WORLD, rank);
    MPI_Comm_size(MPI_COMM_WORLD, size);
    return SP_OK;
}

void sp_mpi_stop(int exit_code) {
    int initialized = 0, finalized = 0;
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    if (!initialized || finalized)
        return;
    int size = 1, rank = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (exit_code != 0 && size > 1) { /* alone, nobody can be left waiting */
        /* A failure every rank sees at once (a plan for another number of ranks) is reported by
         * rank 0: another rank's abort would kill it before it says why, so the others give it a
         * moment first. A rank whose neighbours wait on it still stops the job within 0.5 s. */
        if (rank != 0)
            nanosleep(&(struct timespec){0, 500 * 1000 * 1000}, NULL);
        MPI_Abort(MPI_COMM_WORLD, exit_code);
    } else {
        MPI_Finalize();
    }
}

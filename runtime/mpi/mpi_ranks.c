/* runtime/mpi/mpi_ranks.c: what the MPI transport checks across its ranks (mpi_ranks.h). */
#include <string.h>

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

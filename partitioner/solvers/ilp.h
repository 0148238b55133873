/* partitioner/solvers/ilp.h: the mixed-integer formulation on GLPK (partitioner/solvers/ilp_glpk.c
 * holds every glp_* call; partitioner/solvers/ilp_stub.c stands in when the build has no GLPK). */
#ifndef SP_PARTITIONER_ILP_H
#define SP_PARTITIONER_ILP_H

#include <string.h>

#include "chain.h"

/* Placement search (one chunk per device): stage k takes a device of class c, binary z[k][c];
 * a class is a set of interchangeable devices (same speed, memory and links). */
struct sp_ilp_placement {
    uint32_t classes;          /* C */
    const double *speed;       /* [C] relative speed of the class's devices */
    const uint64_t *memory;    /* [C] memory of each of its devices; 0: not limited */
    const uint32_t *size;      /* [C] devices in the class */
    const double *latency_ms;  /* [C x C] from a device of class c to one of e (c == e: two
                                * devices of the same class); NULL: no links */
    const double *ms_per_byte; /* [C x C] 1 / bandwidth */
    const double *cut_bytes;   /* [B] bytes sent when a stage ends after block b */
    const uint32_t *incumbent; /* [K] the incumbent's class of each stage (with in->incumbent) */
};

/* Memory with interleaved chunks: device d holds, at its in-flight state i, held[..][c]
 * micro-batches of its chunk c (sp_interleaved_states); each state must fit the device's cap. */
struct sp_ilp_chunk_memory {
    const uint32_t *held; /* chunk c of device d's state i: held[(offset[d] + i) * V + c] */
    const size_t *offset; /* [P + 1] */
    const uint64_t *cap;  /* [P] bytes; 0: not limited */
};

struct sp_ilp_input {
    const struct sp_chain *c; /* K = c->p virtual stages (speeds and caps per virtual stage) */
    uint32_t devices;         /* P: virtual stage k runs on device k mod P */
    uint32_t micro_batches;   /* for the iteration objective */
    sp_objective objective;   /* bottleneck, iteration, range or deviation */
    double time_limit_s;
    const size_t *incumbent;   /* a feasible plan's position bounds [K+1], or NULL */
    bool incumbent_recomputes; /* the incumbent recomputes every block that can */
    const int64_t *recompute;  /* recompute[B]: ticks to recompute block b's forward, -1 when it
                                * cannot be recomputed; NULL: no recomputation choices */
    double t_lower_ms;         /* a proven lower bound of the bottleneck (the exact DP's optimum,
                                * with one chunk per device), or 0 */
    double optimum_ms;         /* > 0: the incumbent's bottleneck, proven optimal outside the
                                * program (placed_search.c); the program only breaks ties */
    const struct sp_ilp_placement *place; /* NULL: stage k on device k mod P (c's speeds) */
    const struct sp_ilp_chunk_memory *chunk_memory; /* with chunks and a memory cap, or NULL */
};

struct sp_ilp_result {
    bool found, optimal;
    size_t *bounds;      /* [K+1] positions, when found (caller frees with sp_free) */
    double mip_gap;      /* relative gap of the objective when the search stopped */
    double best_bound;   /* proven lower bound of the objective, in ms */
    double objective_ms; /* the plan's objective value, in ms */
    const char *status;  /* "optimal", "time limit", ...; the interleaved search's "search
                          * limit": it tried only the round boundaries near its start */
    bool stopped;        /* the time limit ended the search */
    long long nodes;     /* branch-and-bound nodes */
    double solve_ms;
    size_t free_binaries;  /* after window fixing */
    bool *recompute;       /* [B] blocks recomputed, when in->recompute (the caller frees it) */
    uint32_t *stage_class; /* [K] the class each stage runs on, with in->place (caller frees) */
};

/* The incumbent (bounds[K+1], stage_class[K] or NULL) as a result whose bottleneck was proven
 * optimal outside the program (in->optimum_ms): copied into out's arrays, which must hold them. */
static inline void sp_ilp_result_take_optimum(struct sp_ilp_result *out, uint32_t K,
                                              const size_t *bounds, const uint32_t *stage_class,
                                              double optimum_ms) {
    memcpy(out->bounds, bounds, ((size_t)K + 1) * sizeof *out->bounds);
    if (stage_class)
        memcpy(out->stage_class, stage_class, K * sizeof *out->stage_class);
    out->found = out->optimal = true;
    out->status = "optimal";
    out->objective_ms = out->best_bound = optimum_ms;
    out->mip_gap = 0;
}

/* Returns SP_ERR_UNSUPPORTED when the build has no GLPK, SP_ERR_INFEASIBLE when no plan
 * exists (or none was found within the time limit), SP_ERR_SOLVER when GLPK fails, SP_ERR_LIMIT
 * when the model would be too large. */
sp_status sp_ilp_solve(sp_ctx *ctx, const struct sp_ilp_input *in, struct sp_ilp_result *out);

#endif

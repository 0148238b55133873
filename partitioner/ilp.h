/* partitioner/ilp.h: the mixed-integer formulation on GLPK (partitioner/ilp_glpk.c holds every
 * glp_* call; partitioner/ilp_stub.c stands in when the build has no GLPK). */
#ifndef SP_PARTITIONER_ILP_H
#define SP_PARTITIONER_ILP_H

#include "chain.h"

struct sp_ilp_input {
    const struct sp_chain *c; /* K = c->p virtual stages (speeds and caps per virtual stage) */
    uint32_t devices;         /* P: virtual stage k runs on device k mod P */
    uint32_t micro_batches;   /* for the iteration objective */
    sp_objective objective;   /* bottleneck, iteration, range or deviation */
    double time_limit_s;
    const size_t *incumbent;  /* a feasible plan's position bounds [K+1], or NULL */
    const int64_t *recompute; /* recompute[B]: ticks to recompute block b's forward, -1 when it
                               * cannot be recomputed; NULL: no recomputation choices */
    double t_lower_ms;        /* a proven lower bound of the bottleneck (the exact DP's optimum,
                               * with one chunk per device), or 0 */
};

struct sp_ilp_result {
    bool found, optimal;
    size_t *bounds;      /* [K+1] positions, when found (caller frees with sp_free) */
    double mip_gap;      /* relative gap of the objective when the search stopped */
    double best_bound;   /* proven lower bound of the objective, in ms */
    double objective_ms; /* the plan's objective value, in ms */
    const char *status;  /* "optimal", "time limit", ... */
    long long nodes;     /* branch-and-bound nodes */
    double solve_ms;
    size_t free_binaries; /* after window fixing */
    bool *recompute;      /* [B] blocks recomputed, when in->recompute (the caller frees it) */
};

/* Returns SP_ERR_UNSUPPORTED when the build has no GLPK, SP_ERR_INFEASIBLE when no plan
 * exists (or none was found within the time limit), SP_ERR_SOLVER when GLPK fails, SP_ERR_LIMIT
 * when the model would be too large. */
sp_status sp_ilp_solve(sp_ctx *ctx, const struct sp_ilp_input *in, struct sp_ilp_result *out);

#endif

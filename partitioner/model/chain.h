/* partitioner/model/chain.h: the cost model every exact solver works on.
 *
 * A profile's layers become a chain of candidate boundary positions: position k is the layer
 * index pos[k] before which a stage may start. pos[0] = 0 and pos[n_pos-1] = n; a layer with
 * cut_after == false (or a loss after it: sp_cut_allowed) removes the position after it, so
 * joined layers move together. Stage s
 * covering positions [a, b) has
 *     time(s, a, b)   = w[b] - w[a]                                  (integer ticks, exact)
 *     memory(s, a, b) = (mem[b] - mem[a]) + inflight[s] * (saved[b] - saved[a])
 * and is admissible under a time cap T when time <= T and memory <= memory cap (if any).
 * Admissibility shrinks monotonically: a sub-range of an admissible stage is admissible, and for
 * fixed a the admissible b form a prefix (a, R_s(a)] with R_s non-decreasing in a. Every solver
 * relies only on this property, so per-stage speeds or per-device caps can replace the formulas
 * here without touching them.
 *
 * Weights are generic: stage time (fwd + bwd ticks) for the dp solver, param_bytes for the
 * parameters baseline. */
#ifndef SP_PARTITIONER_CHAIN_H
#define SP_PARTITIONER_CHAIN_H

#include "internal.h"

enum sp_chain_weight { SP_WEIGHT_TIME, SP_WEIGHT_PARAMS };

/* Whether a stage may end after layer l (l + 1 < layers): the layer's cut_after, and never right
 * before a layer of kind "loss": the loss is no module in any framework (DeepSpeed's loss_fn,
 * the criterion outside torchgpipe's Sequential, Megatron's L with the output layer), so a
 * stage holding only the loss runs nowhere. */
bool sp_cut_allowed(const sp_profile *profile, size_t l);

#define SP_NO_CAP INT64_MAX

/* What the profile alone decides, built once per sp_partition (sp_chain_init) and shared by every
 * chain restaged from it: the candidate positions and the prefix sums over them. Three weights
 * are kept (time; time with every block that can recompute recomputed, whose saved bytes are
 * then not kept; param_bytes) so that any stage model reads them without a second pass. */
struct sp_chain_sums {
    size_t n_pos;
    size_t *pos;        /* [n_pos] layer index of each position */
    int64_t *w_time;    /* [n_pos] fwd + bwd ticks */
    int64_t *wf;        /* [n_pos] forward ticks */
    int64_t *w_rc;      /* [n_pos] time, recomputable blocks recomputed in the backward */
    int64_t *w_params;  /* [n_pos] param_bytes */
    uint64_t *mem;      /* [n_pos] memory_bytes */
    uint64_t *saved;    /* [n_pos] saved_bytes */
    uint64_t *saved_rc; /* [n_pos] saved_bytes of the blocks that cannot recompute */
    uint64_t *act;      /* [n_pos] activation_bytes of the layer before position k */
};

/* A stage model over the sums. The arrays up to `act` point into `sums` (owned by the chain
 * sp_chain_init built, borrowed by one sp_chain_restage made); the rest is the chain's own. */
struct sp_chain {
    size_t n_pos;          /* candidate positions, >= 2 */
    const size_t *pos;     /* pos[n_pos]: layer index of each position */
    const int64_t *w;      /* w[n_pos]: prefix sums of the weight */
    const int64_t *wf;     /* wf[n_pos]: prefix sums of the forward part (time weight only) */
    const uint64_t *mem;   /* mem[n_pos]: prefix sums of memory_bytes */
    const uint64_t *saved; /* saved[n_pos]: prefix sums of saved_bytes */
    const uint64_t *act;   /* act[n_pos] with blocking transfers, else NULL */
    struct sp_chain_sums *sums;
    bool owns_sums;
    uint32_t p;         /* stages */
    uint32_t *inflight; /* inflight[p]: micro-batches held by stage s */
    uint64_t *cap;      /* cap[p]: memory cap of stage s; 0: none */
    uint32_t *stash;    /* stash[p]: weight versions stage s keeps besides its own (schedules
                         * without flushes: sp_stage_weight_versions - 1); NULL: none */
    bool any_cap;
    double *speed; /* speed[p]: relative speed of stage s's device; NULL: all equal */
    /* blocking transfers: boundary s -> s+1 at position k costs link_ticks(s, act[k]) on both
     * neighbours, twice per micro-batch (activation forward, gradient back) */
    bool blocking;
    const sp_links *links;
    /* transfer ticks cached per distinct link (most clusters have two or three kinds):
     * link_ticks[link_of[s] * n_pos + k]; NULL when too large to cache */
    uint32_t *link_of; /* link_of[p] */
    int64_t *link_ticks;
    /* recomputation chosen per stage (model.recompute_choice): a stage's time adds the least
     * recomputation that fits it under its cap (recompute_cover.c); NULL: none */
    struct sp_recompute_cover *cover;
};

/* What the chain models besides the profile: stage count, micro-batches (for in-flight
 * counts), a memory cap for every stage, and per-device speeds and memory (either may be NULL). */
struct sp_chain_model {
    enum sp_chain_weight weight;
    uint32_t stages, micro_batches;
    sp_schedule schedule;       /* the in-flight counts' (sp_stage_inflight), one chunk each */
    uint64_t mem_cap;           /* 0: none */
    const double *speed;        /* [stages] or NULL */
    const uint64_t *device_mem; /* [stages] or NULL; 0 entries: not limited */
    const sp_links *links;      /* with blocking: the link after stage s is links[s][s+1] */
    bool blocking;
    bool recompute_all;    /* every block whose layers all have recompute_ms recomputes them: their
                            * time joins the backward, their saved bytes are not kept */
    bool recompute_choice; /* each stage recomputes the cheapest set of layers with recompute_ms
                            * that fits its memory cap (equal speeds, overlapped transfers);
                            * needs `profile` */
    const sp_profile *profile;
};

/* ---- recomputation chosen per stage (partitioner/model/recompute_cover.c) */
#define SP_RECOMPUTE_NEVER (INT64_MAX / 4) /* no recomputation fits the stage */
struct sp_recompute_cover;
sp_status sp_recompute_cover_create(sp_ctx *ctx, const sp_profile *profile,
                                    const struct sp_chain_sums *m, struct sp_recompute_cover **out);
void sp_recompute_cover_destroy(struct sp_recompute_cover *rc);
/* prefix sums over the positions of the saved bytes no recomputation frees */
const uint64_t *sp_recompute_cover_kept(const struct sp_recompute_cover *rc);
/* every layer that can recompute recomputing: its ticks */
int64_t sp_recompute_cover_all_ticks(const struct sp_recompute_cover *rc);
/* The least recomputation ticks that fit stage s over [a, b) under its cap, chosen per layer: 0
 * when it fits as it is, a value > budget when none within budget does (SP_RECOMPUTE_NEVER when
 * none at all). `chosen` (optional, [layers]) gets the recomputed layers set to true. */
int64_t sp_recompute_cover_ticks(const struct sp_chain *c, uint32_t s, size_t a, size_t b,
                                 int64_t budget, bool *chosen);
/* whether a search stopped at its node limit: its answers since may be above the least */
bool sp_recompute_cover_overflowed(const struct sp_recompute_cover *rc);

/* One transfer over the link after stage s of the activation at position k, in ticks. */
static inline int64_t sp_chain_link_ticks(const struct sp_chain *c, uint32_t s, size_t k) {
    if (c->link_ticks)
        return c->link_ticks[(size_t)c->link_of[s] * c->n_pos + k];
    return sp_ms_to_ticks(sp_links_transfer_ms(c->links, s, s + 1, c->act[k]));
}

/* Time a stage spends on blocking transfers: in and out, forward and backward. */
static inline int64_t sp_chain_comm(const struct sp_chain *c, uint32_t s, size_t a, size_t b) {
    if (!c->blocking)
        return 0;
    int64_t t = 0;
    if (s > 0)
        t += 2 * sp_chain_link_ticks(c, s - 1, a);
    if (s + 1 < c->p)
        t += 2 * sp_chain_link_ticks(c, s, b);
    return t;
}

/* the first position at or after layer index `layer` */
size_t sp_chain_position_of(const struct sp_chain *c, size_t layer);

/* The profile's chain (its sums built here) under a stage model. */
sp_status sp_chain_init(sp_ctx *ctx, struct sp_chain *c, const sp_profile *profile,
                        const struct sp_chain_model *model);
/* The same positions and sums as `base` (borrowed: base must outlive c) under another stage
 * model: O(stages) work, plus the link cache with blocking transfers. */
sp_status sp_chain_restage(sp_ctx *ctx, struct sp_chain *c, const struct sp_chain *base,
                           const struct sp_chain_model *model);
void sp_chain_release(struct sp_chain *c);

/* The weight versions stage s over [a, b) stashes beyond its own: param_bytes each (schedules
 * without flushes; 0 otherwise). */
static inline sp_u128 sp_chain_stash_bytes(const struct sp_chain *c, uint32_t s, size_t a,
                                           size_t b) {
    if (!c->stash)
        return 0;
    return (sp_u128)c->stash[s] * (sp_u128)(c->sums->w_params[b] - c->sums->w_params[a]);
}

/* Whether stage s over [a, b) fits its memory cap; with recomputation chosen, whether it fits
 * with every recomputable block recomputed. */
static inline bool sp_chain_mem_ok(const struct sp_chain *c, uint32_t s, size_t a, size_t b) {
    if (!c->any_cap || !c->cap[s])
        return true;
    const uint64_t *saved = c->cover ? sp_recompute_cover_kept(c->cover) : c->saved;
    sp_u128 need =
        (sp_u128)(c->mem[b] - c->mem[a]) + (sp_u128)c->inflight[s] * (sp_u128)(saved[b] - saved[a]);
    need += sp_chain_stash_bytes(c, s, a, b);
    return need <= c->cap[s];
}

/* Stage s's time over [a, b): the weight, or with device speeds its forward and backward parts
 * each divided by the speed and rounded to a tick (so the plan's fwd + bwd equal its time). */
static inline int64_t sp_chain_compute(const struct sp_chain *c, uint32_t s, size_t a, size_t b) {
    int64_t w = c->w[b] - c->w[a];
    if (!c->speed)
        return w;
    int64_t f = c->wf[b] - c->wf[a];
    return sp_speed_scale(f, c->speed[s]) + sp_speed_scale(w - f, c->speed[s]);
}

/* Stage s's time over [a, b): compute, blocking transfers, and the recomputation it needs. */
static inline int64_t sp_chain_time(const struct sp_chain *c, uint32_t s, size_t a, size_t b) {
    int64_t t = sp_chain_compute(c, s, a, b) + sp_chain_comm(c, s, a, b);
    if (c->cover)
        t += sp_recompute_cover_ticks(c, s, a, b, SP_RECOMPUTE_NEVER, NULL);
    return t;
}

static inline bool sp_chain_admissible(const struct sp_chain *c, uint32_t s, size_t a, size_t b,
                                       int64_t cap) {
    if (!c->cover)
        return sp_chain_time(c, s, a, b) <= cap && sp_chain_mem_ok(c, s, a, b);
    if (!sp_chain_mem_ok(c, s, a, b))
        return false;
    int64_t t = sp_chain_compute(c, s, a, b) + sp_chain_comm(c, s, a, b);
    return t <= cap && t + sp_recompute_cover_ticks(c, s, a, b, cap - t, NULL) <= cap;
}

/* Furthest b > a with [a, b) admissible for stage s, or a when even one block does not fit. */
size_t sp_chain_reach_forward(const struct sp_chain *c, uint32_t s, size_t a, int64_t cap);
/* Smallest a < b with [a, b) admissible for stage s, or b when none. */
size_t sp_chain_reach_backward(const struct sp_chain *c, uint32_t s, size_t b, int64_t cap);

/* Greedy furthest reach: can the chain be covered by p admissible stages, some possibly empty
 * (stage s taking inflight[s])? Exact for that relaxation by the exchange argument; `end_out`
 * (optional) gets the position reached. */
bool sp_chain_greedy_covers(const struct sp_chain *c, int64_t cap, size_t *end_out);

/* Stage windows for cap T: every partition into exactly p admissible stages ends stage s at a
 * position in [lo[s], hi[s]] (from a forward and a backward greedy pass). False when some
 * window is empty, which proves that no such partition exists. */
bool sp_chain_windows(const struct sp_chain *c, int64_t cap, size_t *lo, size_t *hi);

/* Exact: is there a partition into exactly p admissible stages under cap T? */
sp_status sp_chain_feasible(sp_ctx *ctx, const struct sp_chain *c, int64_t cap, bool *out);

/* The smallest integer cap T (the optimal bottleneck) for which a partition into exactly p
 * admissible stages exists. SP_ERR_INFEASIBLE when none exists at any T. */
sp_status sp_chain_min_bottleneck(sp_ctx *ctx, const struct sp_chain *c, int64_t *out_cap);

/* Among partitions into exactly p admissible stages under cap T, the one minimizing the sum of
 * squared stage weights, ties broken by the lexicographically smallest boundaries.
 * bounds_out[p+1] receives position indices (not layer indices). SP_ERR_INFEASIBLE when no
 * partition exists; SP_ERR_LIMIT when its tables would not fit in memory. */
sp_status sp_chain_min_sum_squares(sp_ctx *ctx, const struct sp_chain *c, int64_t cap,
                                   size_t *bounds_out);

/* The exact DP's plan for the monotone model: the smallest bottleneck, then among the partitions
 * reaching it the least sum of squares (sp_chain_min_bottleneck, then sp_chain_min_sum_squares).
 * bounds_out[p+1] gets positions; *cap_out (may be NULL) the bottleneck. */
sp_status sp_chain_best_bounds(sp_ctx *ctx, const struct sp_chain *c, size_t *bounds_out,
                               int64_t *cap_out);

/* ---- the general engine (partitioner/solvers/dp_general.c) for models where a stage's time is not
 * monotone in its end (blocking transfers): exact forward and backward reachability at a cap,
 * and a sum DP over the exact sets of possible stage ends. */

enum sp_sum_kind { SP_SUM_SQUARES, SP_SUM_LINEAR };

/* The smallest cap T with a partition into exactly p admissible stages. */
sp_status sp_general_min_bottleneck(sp_ctx *ctx, const struct sp_chain *c, int64_t *out_cap);
/* Among partitions with every stage admissible under cap, the minimum of sum g(t_s) (g = t^2
 * or t), leftmost boundaries on ties; *out_sum gets the minimum. SP_ERR_INFEASIBLE if none. */
sp_status sp_general_min_sum(sp_ctx *ctx, const struct sp_chain *c, int64_t cap,
                             enum sp_sum_kind kind, size_t *bounds_out, sp_i128 *out_sum);

/* Distinct stage times t with lo < t <= hi over every stage that some partition admissible
 * under cap hi can contain, increasing (the iteration objective's candidate bottlenecks). */
#define SP_GENERAL_MAX_TIMES 4000000u
sp_status sp_general_stage_times(sp_ctx *ctx, const struct sp_chain *c, int64_t lo, int64_t hi,
                                 int64_t **out, size_t *n_out);

#endif

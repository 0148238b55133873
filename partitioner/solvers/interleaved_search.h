/* partitioner/solvers/interleaved_search.h: the exact search over loop-placed chunks that
 * interleaved.c drives (interleaved_search.c): a state is (device d, where device d's
 * chunk starts in each round); from it, the best of the devices still to place under a cap T on
 * every device's load, cached per state (interleaved_memo.h), over every tuple of round boundaries.
 */
#ifndef SP_PARTITIONER_INTERLEAVED_SEARCH_H
#define SP_PARTITIONER_INTERLEAVED_SEARCH_H

#include "chain.h"
#include "chunk_memory.h"
#include "interleaved_memo.h"

#define SP_IL_FAIL ((sp_i128)-1)

/* what a state's value is, over the devices still to place under the cap: 0 when a plan exists
 * (the first found), the least sum of squared chunk times, or the least sum of loads. Every
 * state also gets the least largest load of its plans. */
enum sp_il_goal { SP_IL_FEASIBLE, SP_IL_BEST, SP_IL_SUM };

struct sp_il {
    const struct sp_chain *c;         /* K = P x V virtual stages, each with its device's speed */
    const struct sp_chunk_memory *cm; /* NULL: no memory limit */
    uint32_t P, V;
    size_t n;           /* blocks: positions 0 .. n */
    uint32_t min_chunk; /* 1, or 0 with --allow-empty-stages */
    enum sp_il_goal goal;
    int64_t T;
    int64_t chunk_cap;  /* every chunk's time at most this (SP_NO_CAP: no cap) */
    int64_t *work_rest; /* [P + 1]: the most work (ticks at speed 1) devices d .. P-1 carry */
    uint32_t *b;        /* [V + 1] round boundaries */
    uint32_t *key;      /* [(P + 1) x (V + 1)] per depth: (d, t) */
    uint32_t *e;        /* [P x V] per depth: the successor being built */
    uint32_t *best_e;   /* [P x V] per depth: the best successor so far */
    uint32_t *trace;    /* [2 x V] */
    struct sp_tuple_memo memo;
    double deadline_ms;
    uint64_t nodes, node_limit; /* node_limit: where a probe gives up (over_budget) */
    uint64_t steps;             /* chunk ends tried: the clock is read every IL_CLOCK_EVERY */
    bool stopped, over_budget;
};

/* every tuple of round boundaries b_0 = 0 <= b_1 <= ... <= b_V = n, each round at least
 * `least` blocks, nearest to hint (V + 1 entries) first */
struct sp_il_rounds {
    uint32_t *b; /* [count x (V + 1)] */
    size_t count;
    bool partial; /* only those near the hint: too many to try them all */
};

/* Every tuple of round boundaries b_1 .. b_{V-1} with b_r in [lo_r, hi_r] and each round at
 * least `least` positions, nearest to hint first; when they are too many to try, only those
 * within some distance of the hint, R->partial set (a plan found is then not proven optimal). */
sp_status sp_il_rounds_init(sp_ctx *ctx, struct sp_il_rounds *R, uint32_t V, size_t least, size_t n,
                            const uint32_t *lo, const uint32_t *hi, const uint32_t *hint);

/* Where each round boundary can lie when every chunk is within s->chunk_cap: b_r is at most how
 * far the first rP chunks reach greedily and at least how far back the last (V - r) P chunks
 * reach; lo, hi [V + 1]. Every plan the search may return has its boundaries there, so the
 * enumeration skips nothing (the whole range without a chunk cap). */
void sp_il_round_windows(const struct sp_il *s, uint32_t *lo, uint32_t *hi);

/* chunk ticks of device d's chunk in round r over positions [a, e), at its speed */
static inline int64_t sp_il_chunk_ticks(const struct sp_il *s, uint32_t d, uint32_t r, size_t a,
                                        size_t e) {
    return sp_chain_compute(s->c, r * s->P + d, a, e);
}

/* does device d fit its memory with chunks [t_r, e_r)? */
bool sp_il_device_fits(const struct sp_il *s, uint32_t d, const uint32_t *t, const uint32_t *e);

/* the cap and goal of the next searches (and the work the devices can carry under it) */
void sp_il_set_cap(struct sp_il *s, int64_t T, enum sp_il_goal goal);

/* The best plan under cap T for the goal over every round tuple, its chunk bounds [K + 1]
 * (positions) into bounds; SP_IL_FAIL when none or when stopped (s->stopped). SP_IL_FEASIBLE stops
 * at the first plan; SP_IL_BEST lowers the cap to the least largest load as it goes (s->T ends
 * there) and returns the least sum of squared chunk times among the plans reaching it. */
sp_i128 sp_il_solve_cap(struct sp_il *s, const struct sp_il_rounds *R, int64_t T,
                        enum sp_il_goal goal, size_t *bounds);

#endif

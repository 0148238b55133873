/* partitioner/solvers/baselines.c: the splits users have today, for comparison.
 *
 * uniform:    equal layer counts (Megatron-LM's default; DeepSpeed partition_method="uniform").
 *             What is counted is the repeated block: when layers carry a `kind`, only the layers
 *             of the most frequent kind (transformer, conv...) are counted, and the others ride
 *             along, as Megatron-LM puts the embedding on the first stage and the LM head and
 *             loss on the last: leading ones join stage 0, the rest join the stage of the block
 *             before them. Without kinds (or with fewer blocks than stages) every layer counts.
 *             The first (count mod P) stages get one block more. A boundary that would follow a
 *             layer with cut_after == false moves to the nearest allowed position (the earlier
 *             one on a tie) that keeps every stage non-empty.
 * parameters: minimum possible largest per-stage param_bytes, ties broken by the smallest sum
 *             of squares (DeepSpeed partition_method="parameters" balances parameter counts).
 * Neither looks at times or memory; the caller checks the memory limit afterwards. */
#include "baselines.h"

#include <string.h>

#include "chain.h"
#include "partition_impl.h"

/* nearest candidate position index to layer index `target` within [k_min, k_max] */
static size_t nearest_position(const struct sp_chain *c, size_t target, size_t k_min,
                               size_t k_max) {
    size_t lo = k_min, hi = k_max;
    while (lo < hi) { /* first k with pos[k] >= target */
        size_t mid = lo + (hi - lo) / 2;
        if (c->pos[mid] >= target)
            hi = mid;
        else
            lo = mid + 1;
    }
    if (c->pos[lo] < target)
        return lo;
    if (lo > k_min && c->pos[lo] != target && target - c->pos[lo - 1] <= c->pos[lo] - target)
        return lo - 1;
    return lo;
}

/* The layer indices of the repeated block kind (see the file comment), or *out = NULL and
 * *count = n when every layer counts. */
static sp_status block_layers(sp_ctx *ctx, const sp_profile *profile, uint32_t stages, size_t **out,
                              size_t *count) {
    size_t n = sp_profile_get_layer_count(profile);
    *out = NULL;
    *count = n;
    /* most frequent non-empty kind: kinds repeat in runs, so count by first occurrence */
    const char *best = NULL;
    size_t best_count = 0;
    for (size_t i = 0; i < n; i++) {
        const char *kind = sp_profile_get_layer(profile, i)->kind;
        if (!*kind || (best && sp_str_eq(kind, best)))
            continue;
        bool seen = false;
        for (size_t j = 0; j < i && !seen; j++)
            seen = sp_str_eq(sp_profile_get_layer(profile, j)->kind, kind);
        if (seen)
            continue;
        size_t k = 0;
        for (size_t j = i; j < n; j++)
            k += sp_str_eq(sp_profile_get_layer(profile, j)->kind, kind);
        if (k > best_count) {
            best = kind;
            best_count = k;
        }
        if (best_count > n / 2)
            break; /* a majority kind cannot be beaten */
    }
    if (!best || best_count < stages || best_count == n)
        return SP_OK;
    size_t *idx = sp_mallocarray(best_count, sizeof *idx);
    if (!idx)
        return sp_oom(ctx, "making the uniform split");
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (sp_str_eq(sp_profile_get_layer(profile, i)->kind, best))
            idx[k++] = i;
    *out = idx;
    *count = best_count;
    return SP_OK;
}

sp_status sp_uniform_bounds(sp_ctx *ctx, const sp_profile *profile, const struct sp_chain *c,
                            uint32_t stages, size_t *bounds) {
    size_t n = sp_profile_get_layer_count(profile), last = c->n_pos - 1;
    if (last < stages)
        return SP_ERR_INFEASIBLE;
    size_t *blocks = NULL, n_blocks = 0;
    sp_status st = block_layers(ctx, profile, stages, &blocks, &n_blocks);
    if (st != SP_OK)
        return st;
    size_t base = n_blocks / stages, extra = n_blocks % stages, k = 0;
    bounds[0] = 0;
    for (uint32_t s = 1; s < stages; s++) {
        size_t first_block = s * base + (s < extra ? s : extra);
        size_t target = blocks ? blocks[first_block] : first_block;
        k = nearest_position(c, target, k + 1, last - (stages - s));
        bounds[s] = c->pos[k];
    }
    sp_free(blocks);
    bounds[stages] = n;
    return SP_OK;
}

sp_status sp_parameters_bounds(sp_ctx *ctx, const struct sp_chain *chain, uint32_t stages,
                               size_t *bounds) {
    struct sp_chain c;
    struct sp_chain_model model = {.weight = SP_WEIGHT_PARAMS,
                                   .stages = stages,
                                   .micro_batches = 1,
                                   .schedule = SP_SCHEDULE_1F1B};
    sp_status st = sp_chain_restage(ctx, &c, chain, &model);
    if (st != SP_OK)
        return st;
    st = sp_chain_best_bounds(ctx, &c, bounds, NULL);
    if (st == SP_OK)
        for (uint32_t s = 0; s <= stages; s++)
            bounds[s] = c.pos[bounds[s]];
    sp_chain_release(&c);
    return st;
}

sp_status sp_solve_uniform(sp_ctx *ctx, const struct sp_problem *pb, struct sp_solution *sol) {
    return sp_uniform_bounds(ctx, pb->profile, pb->chain, pb->o->stages * pb->o->chunks,
                             sol->bounds);
}

sp_status sp_solve_parameters(sp_ctx *ctx, const struct sp_problem *pb, struct sp_solution *sol) {
    return sp_parameters_bounds(ctx, pb->chain, pb->o->stages, sol->bounds);
}

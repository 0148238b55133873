/* partitioner/solvers/replicated_transfers.c: replicated stages with PipeDream's activation term
 * (`--activation-ratio R` with `--replica-cost pipedream`, docs/partitioning.md#replicated-stages).
 *
 * PipeDream's planner, given --activation_compression_ratio R, bounds each stage's time below by
 * its activation transfers over the r replicas: 2 x bytes / (bandwidth x r) / R for the input of
 * every stage but the first and for the output of every stage but the first and the last (the
 * first stage's output is charged only as the second's input, as its recurrence does). The term
 * is not monotone in a stage's end and depends on the replicas on both sides of a cut, so the
 * furthest-position table of replicated_search.c does not hold; this search is exhaustive
 * instead, as PipeDream's recurrence is: over chain positions j and devices passed m, the least
 * bottleneck of the stages covering [0, j) within devices [0, m) (a device possibly idle), then,
 * under that bottleneck, the fewest stages and the fewest devices spanned. O(n^2 N^2): sizes are
 * limited, and memory limits are not taken (a replica's memory depends on the stages after it,
 * which a prefix does not know). tests/oracle/test_replicated.c checks it against enumeration. */
#include <math.h>
#include <string.h>

#include "devices_impl.h"
#include "replicated.h"

#define TRANSFER_MAX_WORK 2e9 /* positions^2 x GPUs^2 */

double sp_replica_least_bandwidth(const struct sp_replica_model *m) {
    double bw = (double)INFINITY;
    size_t n = m->links->n;
    for (uint32_t i = 0; i < m->gpus; i++)
        for (uint32_t j = 0; j < m->gpus; j++)
            if (i != j)
                bw = fmin(bw, m->links->bw_GBps[i * n + j]);
    return bw < (double)INFINITY ? bw : 0;
}

static int64_t transfer_ticks(const struct sp_replica_model *m, uint64_t bytes, uint32_t r) {
    double bw = m->transfer_bw_GBps;
    if (!(bw > 0))
        return 0;
    return sp_ms_to_ticks(2.0 * (double)bytes / (bw * 1e6 * r) / m->activation_ratio);
}

int64_t sp_replica_stage_ticks(const struct sp_replica_model *m, size_t a, size_t b, uint32_t g,
                               uint32_t r) {
    int64_t t = sp_replica_share_ticks(m, a, b, g, r);
    if (!(m->activation_ratio > 0) || a == 0) /* the first stage: no transfer charged */
        return t;
    const uint64_t *act = m->chain->sums->act;
    int64_t in = transfer_ticks(m, act[a], r);
    int64_t out = b + 1 < m->chain->n_pos ? transfer_ticks(m, act[b], r) : 0;
    t = in > t ? in : t;
    return out > t ? out : t;
}

struct cell {
    int64_t worst;     /* the least bottleneck (first pass) */
    uint32_t stages;   /* the fewest stages under the bottleneck (second pass) */
    uint32_t from_pos; /* the last stage: [from_pos, j) on devices from_dev .. m - 1 */
    uint32_t from_dev;
};

#define NONE INT64_MAX

/* first pass: best[j * (N + 1) + m] = the least bottleneck over [0, j) within devices [0, m) */
static void least_bottleneck(const struct sp_replica_model *m, struct cell *c, size_t n_pos) {
    uint32_t N = m->gpus;
    for (size_t j = 0; j < n_pos; j++)
        for (uint32_t d = 0; d <= N; d++) {
            struct cell *x = &c[j * (N + 1) + d];
            x->worst = j == 0 ? 0 : NONE;
            if (j == 0 || d == 0)
                continue;
            if (c[j * (N + 1) + d - 1].worst < x->worst) /* device d - 1 idle */
                x->worst = c[j * (N + 1) + d - 1].worst;
            for (size_t a = 0; a < j; a++)
                for (uint32_t r = 1; r <= d; r++) {
                    int64_t before = c[a * (N + 1) + d - r].worst;
                    if (before == NONE || before >= x->worst)
                        continue;
                    int64_t t = sp_replica_stage_ticks(m, a, j, d - r, r);
                    t = t > before ? t : before;
                    x->worst = t < x->worst ? t : x->worst;
                }
        }
}

/* second pass, under cap T: the fewest stages over [0, j) whose last stage ends at device d - 1
 * (UINT32_MAX: none), with the stage that does it */
static void fewest_stages(const struct sp_replica_model *m, struct cell *c, size_t n_pos, int64_t T,
                          uint32_t *prefix_min) {
    uint32_t N = m->gpus;
    /* prefix_min[a * (N + 1) + d]: the least stages over [0, a) ending at a device before d, and
     * (packed in the high bits) none needed for a = 0 */
    for (size_t j = 0; j < n_pos; j++) {
        for (uint32_t d = 0; d <= N; d++) {
            struct cell *x = &c[j * (N + 1) + d];
            x->stages = j == 0 ? 0 : UINT32_MAX;
            for (size_t a = 0; j > 0 && d > 0 && a < j; a++)
                for (uint32_t r = 1; r <= d; r++) {
                    uint32_t before = prefix_min[a * (N + 1) + d - r];
                    if (before == UINT32_MAX || before + 1 >= x->stages)
                        continue;
                    if (sp_replica_stage_ticks(m, a, j, d - r, r) > T)
                        continue;
                    x->stages = before + 1;
                    x->from_pos = (uint32_t)a;
                    x->from_dev = d - r;
                }
        }
        for (uint32_t d = 0; d <= N; d++) { /* ending at d - 1 or before */
            uint32_t v = c[j * (N + 1) + d].stages;
            uint32_t p = d ? prefix_min[j * (N + 1) + d - 1] : UINT32_MAX;
            prefix_min[j * (N + 1) + d] = v < p ? v : p;
        }
    }
}

sp_status sp_replica_search_transfers(sp_ctx *ctx, const struct sp_replica_model *m,
                                      struct sp_replica_plan *out) {
    memset(out, 0, sizeof *out);
    uint32_t N = m->gpus;
    size_t n_pos = m->chain->n_pos, end = n_pos - 1;
    if ((double)n_pos * n_pos * N * N > TRANSFER_MAX_WORK)
        return sp_fail(ctx, SP_ERR_LIMIT,
                       "--activation-ratio searches every split exhaustively (places to cut^2 x "
                       "GPUs^2): %zu places and %u GPUs are too many; without it the search "
                       "takes any size",
                       end, N);
    size_t cells = n_pos * (N + 1);
    struct cell *c = sp_calloc(cells, sizeof *c);
    uint32_t *prefix_min = sp_mallocarray(cells, sizeof *prefix_min);
    if (!c || !prefix_min) {
        sp_free(c);
        sp_free(prefix_min);
        return sp_oom(ctx, "planning replicated stages");
    }
    least_bottleneck(m, c, n_pos);
    int64_t T = c[end * (N + 1) + N].worst;
    fewest_stages(m, c, n_pos, T, prefix_min);
    uint32_t P = UINT32_MAX, span = 0; /* the fewest stages, then the fewest devices spanned */
    for (uint32_t d = 1; d <= N; d++)
        if (c[end * (N + 1) + d].stages < P) {
            P = c[end * (N + 1) + d].stages;
            span = d;
        }
    sp_status st = SP_OK;
    if (T == NONE || P == UINT32_MAX)
        st = sp_fail(ctx, SP_ERR_INTERNAL, "replicated search: no plan covers the chain");
    if (st == SP_OK) {
        out->stages = P;
        out->bottleneck_ticks = T;
        out->bounds = sp_mallocarray((size_t)P + 1, sizeof *out->bounds);
        out->replicas = sp_mallocarray(P, sizeof *out->replicas);
        out->first_device = sp_mallocarray(P, sizeof *out->first_device);
        if (!out->bounds || !out->replicas || !out->first_device)
            st = sp_oom(ctx, "planning replicated stages");
    }
    for (size_t j = end, s = P, d = span; st == SP_OK && s-- > 0;) {
        while (c[j * (N + 1) + d].stages != s + 1) /* the stage ended at an earlier device */
            d--;
        const struct cell *x = &c[j * (N + 1) + d];
        out->bounds[s + 1] = j;
        out->first_device[s] = x->from_dev;
        out->replicas[s] = (uint32_t)d - x->from_dev;
        out->gpus_used += out->replicas[s];
        j = x->from_pos;
        d = x->from_dev;
    }
    if (st == SP_OK)
        out->bounds[0] = 0;
    sp_free(c);
    sp_free(prefix_min);
    if (st != SP_OK)
        sp_replica_plan_release(out);
    return st;
}

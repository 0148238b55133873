/* tests/unit/test_data_parallel.c: the ring all-reduce against its closed form, and the
 * pipeline x data parallel table (sp_partition_data_parallel) against its definition: every
 * divisor of the GPU count, each split's plan equal to sp_partition's for its P and M, the step
 * its iteration plus the slowest device group's all-reduce, the best the most samples/s. */
#include <math.h>
#include <stagepart/stagepart.h>
#include <stdio.h>
#include <string.h>

#include "../links_fixture.h"
#include "../test.h"

static sp_ctx *ctx;

static sp_links *links_of(int n, int per_node, double in_GBps, double out_GBps, double lat_us) {
    return test_links(ctx, n, per_node, in_GBps, out_GBps, lat_us);
}

static void test_ring_closed_form(void) {
    sp_links *l = links_of(8, 8, 100, 100, 10);
    size_t ranks[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    uint64_t bytes = 4000000000ull;
    for (size_t r = 2; r <= 8; r++) {
        double want = 2.0 * (double)(r - 1) / (double)r * (double)bytes / 100e9 * 1e3 +
                      2.0 * (double)(r - 1) * 10e-3;
        double got = sp_ring_allreduce_ms(l, ranks, r, bytes);
        SP_CHECK_MSG(fabs(got - want) < 1e-6 * want, "r = %zu: %.9f ms, closed form %.9f", r, got,
                     want);
    }
    SP_CHECK(sp_ring_allreduce_ms(l, ranks, 1, bytes) == 0);
    SP_CHECK(sp_ring_allreduce_ms(NULL, ranks, 4, bytes) == 0);
    sp_links_destroy(l);
    /* two nodes: a ring that crosses runs at the slower link's pace */
    l = links_of(8, 4, 300, 25, 5);
    size_t inside[4] = {0, 1, 2, 3}, across[4] = {2, 3, 4, 5};
    double in_ms = sp_ring_allreduce_ms(l, inside, 4, bytes);
    double out_ms = sp_ring_allreduce_ms(l, across, 4, bytes);
    SP_CHECK(fabs(in_ms - (1.5 * 4e9 / 300e9 * 1e3 + 6 * 5e-3)) < 1e-6);
    SP_CHECK(fabs(out_ms - (1.5 * 4e9 / 25e9 * 1e3 + 6 * 5e-3)) < 1e-6);
    sp_links_destroy(l);
}

static sp_profile *profile_of(int n) {
    char buf[16384];
    size_t len =
        (size_t)snprintf(buf, sizeof buf,
                         "{\"format\":\"stagepart-profile\",\"version\":1,\"model\":\"dp\","
                         "\"micro_batch_size\":2,\"layers\":[");
    for (int i = 0; i < n; i++)
        len += (size_t)snprintf(buf + len, sizeof buf - len,
                                "%s{\"name\":\"l%d\",\"fwd_ms\":%d,\"bwd_ms\":%d,"
                                "\"param_bytes\":%d000000000,\"saved_bytes\":1000,"
                                "\"activation_bytes\":1000000}",
                                i ? "," : "", i, 1 + i % 3, 2 + 2 * (i % 3), 1 + i % 2);
    snprintf(buf + len, sizeof buf - len, "]}");
    sp_profile *p = NULL;
    SP_CHECK_STATUS(sp_profile_parse(ctx, "dp.json", buf, strlen(buf), &p), SP_OK);
    return p;
}

static void test_table(void) {
    sp_profile *p = profile_of(12);
    sp_links *l = links_of(8, 4, 300, 25, 5);
    sp_partition_opts o;
    sp_partition_opts_init(&o);
    o.links = l;
    sp_dp_table *t = NULL;
    SP_CHECK_STATUS(sp_partition_data_parallel(ctx, p, &o, 8, 96, &t), SP_OK);
    SP_CHECK_EQ_INT(t->count, 4); /* 1, 2, 4, 8 stages */
    SP_CHECK_EQ_INT(t->micro_batch_size, 2);
    double best = 0;
    for (size_t i = 0; i < t->count; i++) {
        const sp_dp_candidate *c = &t->candidates[i];
        SP_CHECK_EQ_INT(c->pipeline * c->data_parallel, 8);
        SP_CHECK_EQ_INT(c->micro_batches, 96 / (c->data_parallel * 2));
        SP_CHECK_MSG(c->plan != NULL, "%u x %u: %s", c->pipeline, c->data_parallel, c->reason);
        if (!c->plan)
            continue;
        /* the same bottleneck sp_partition reaches for this P and M (transfers overlap, so the
         * links do not change it) */
        sp_partition_opts q = o;
        q.stages = c->pipeline;
        q.micro_batches = c->micro_batches;
        q.links = NULL;
        sp_plan *alone = NULL;
        SP_CHECK_STATUS(sp_partition(ctx, p, &q, &alone), SP_OK);
        SP_CHECK(fabs(sp_plan_get_summary(alone)->bottleneck_ms -
                      sp_plan_get_summary(c->plan)->bottleneck_ms) < 1e-9);
        sp_plan_destroy(alone);
        /* the all-reduce: the slowest device group's, of that device's parameters */
        double worst = 0;
        for (uint32_t s = 0; s < c->pipeline; s++) {
            size_t ranks[8];
            for (uint32_t d = 0; d < c->data_parallel; d++)
                ranks[d] = (size_t)s * c->data_parallel + d;
            double ms = sp_ring_allreduce_ms(l, ranks, c->data_parallel,
                                             sp_plan_get_stage(c->plan, s)->param_bytes);
            worst = ms > worst ? ms : worst;
        }
        SP_CHECK(fabs(c->allreduce_ms - worst) < 1e-9);
        SP_CHECK(c->data_parallel > 1 ? c->allreduce_ms > 0 : c->allreduce_ms == 0);
        SP_CHECK(fabs(c->step_ms - (c->iteration_ms + c->allreduce_ms)) < 1e-9);
        SP_CHECK(fabs(c->samples_per_s - 96 * 1000.0 / c->step_ms) < 1e-9);
        best = c->samples_per_s > best ? c->samples_per_s : best;
    }
    SP_CHECK(t->best < t->count && t->candidates[t->best].samples_per_s == best);
    sp_dp_table_destroy(t);

    /* a batch that does not divide: that split keeps its reason, the others their plans */
    SP_CHECK_STATUS(sp_partition_data_parallel(ctx, p, &o, 8, 8, &t), SP_OK);
    SP_CHECK(t->candidates[0].plan == NULL); /* 8 replicas x 2 samples > 8 */
    SP_CHECK_CONTAINS(t->candidates[0].reason, "global batch 8");
    SP_CHECK(t->candidates[3].plan != NULL && t->candidates[3].micro_batches == 4);
    sp_dp_table_destroy(t);

    /* no links, too few of them, nothing feasible */
    sp_partition_opts bare;
    sp_partition_opts_init(&bare);
    SP_CHECK_STATUS(sp_partition_data_parallel(ctx, p, &bare, 8, 96, &t), SP_ERR_INVALID_ARG);
    SP_CHECK_CONTAINS(sp_ctx_get_errmsg(ctx), "--links");
    SP_CHECK(t == NULL);
    SP_CHECK_STATUS(sp_partition_data_parallel(ctx, p, &o, 16, 96, &t), SP_ERR_INVALID_ARG);
    o.memory_limit_bytes = 1000;
    SP_CHECK_STATUS(sp_partition_data_parallel(ctx, p, &o, 8, 96, &t), SP_ERR_INFEASIBLE);
    SP_CHECK(t != NULL && t->best == SIZE_MAX);
    sp_dp_table_destroy(t);
    sp_links_destroy(l);
    sp_profile_destroy(p);
}

int main(void) {
    sp_ctx_create(&ctx);
    test_ring_closed_form();
    test_table();
    sp_ctx_destroy(ctx);
    return sp_test_finish("test_data_parallel");
}

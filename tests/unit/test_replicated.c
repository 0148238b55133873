/* tests/unit/test_replicated.c: replicated stages beyond the oracle: the simulated schedule of
 * a replicated plan against closed forms, the plan document's round trip, and the options
 * sp_partition_replicated refuses. */
#include <math.h>
#include <stagepart/stagepart.h>

#include "../links_fixture.h"
#include "../test.h"

static sp_ctx *ctx;

/* n equal layers of f + b ms, p bytes of parameters each */
static sp_profile *equal_profile(int n, int f, int b, unsigned long long params) {
    char buf[8192];
    size_t len = (size_t)snprintf(buf, sizeof buf,
                                  "{\"format\":\"stagepart-profile\",\"version\":1,\"model\":\"e\","
                                  "\"micro_batch_size\":1,\"layers\":[");
    for (int i = 0; i < n; i++)
        len += (size_t)snprintf(buf + len, sizeof buf - len,
                                "%s{\"name\":\"l%d\",\"fwd_ms\":%d,\"bwd_ms\":%d,\"param_bytes\":"
                                "%llu,\"activation_bytes\":0}",
                                i ? "," : "", i, f, b, params);
    snprintf(buf + len, sizeof buf - len, "]}");
    sp_profile *p = NULL;
    SP_CHECK_STATUS(sp_profile_parse(ctx, "equal.json", buf, strlen(buf), &p), SP_OK);
    return p;
}

/* n devices, every link bw GB/s and lat us */
static sp_links *flat_links(int n, double bw, double lat) {
    return test_links(ctx, n, n, bw, bw, lat);
}

/* Parameters free to all-reduce: every GPU replicates one stage holding everything (fewest
 * stages at the least bottleneck), and GPipe then runs ceil(M / r) micro-batches per replica
 * back to back: (M / r) (f + b), exactly. */
static void test_one_stage_all_replicas(void) {
    sp_profile *p = equal_profile(6, 1, 2, 0);
    sp_links *l = flat_links(4, 100, 0);
    sp_partition_opts o;
    sp_partition_opts_init(&o);
    o.schedule = SP_SCHEDULE_GPIPE;
    o.micro_batches = 8;
    o.links = l;
    sp_plan *plan = NULL;
    SP_CHECK_STATUS(sp_partition_replicated(ctx, p, &o, 4, &plan), SP_OK);
    const sp_plan_summary *m = sp_plan_get_summary(plan);
    SP_CHECK_EQ_INT(m->stages, 1);
    SP_CHECK_EQ_INT(m->gpus, 4);
    SP_CHECK(fabs(m->bottleneck_ms - 18.0 / 4) < 1e-9);
    SP_CHECK(m->schedule.present && fabs(m->schedule.iteration_ms - 2 * 18.0) < 1e-9);
    SP_CHECK(fabs(m->schedule.efficiency - 1.0) < 1e-12);
    sp_plan_destroy(plan);
    sp_links_destroy(l);
    sp_profile_destroy(p);
}

/* The all-reduce after the flush: 2 replicas of one stage with P bytes over 1 GB/s take
 * 2 (r - 1) / r x P / bw; the iteration adds it once (flushing schedules) and the share
 * charges it / M; without flushes it is charged per micro-batch: (time + all-reduce) / r, or with
 * PipeDream's accounting 4 (r - 1) / r x bytes / bandwidth. */
static void test_allreduce_charges(void) {
    /* 1 layer, 10 ms of work, 20 MB of parameters: a 2-ring all-reduce takes 20 ms at 1 GB/s */
    sp_profile *p = equal_profile(1, 4, 6, 20000000ull);
    sp_links *l = flat_links(2, 1, 0);
    sp_partition_opts o;
    sp_partition_opts_init(&o);
    o.schedule = SP_SCHEDULE_1F1B;
    o.micro_batches = 40;
    o.links = l;
    sp_plan *plan = NULL;
    SP_CHECK_STATUS(sp_partition_replicated(ctx, p, &o, 2, &plan), SP_OK);
    const sp_stage *st = sp_plan_get_stage(plan, 0);
    SP_CHECK_EQ_INT(st->replicas, 2);
    SP_CHECK(fabs(st->allreduce_ms - 20.0) < 1e-9);
    SP_CHECK(fabs(st->share_ms - (10.0 / 2 + 20.0 / 40)) < 1e-9);
    /* 20 micro-batches per replica, one stage: 200 ms, then the all-reduce */
    SP_CHECK(fabs(sp_plan_get_summary(plan)->schedule.iteration_ms - 220.0) < 1e-9);
    sp_plan_destroy(plan);
    /* without flushes each replica's turn is its compute, then the all-reduce of its gradients:
     * two replicas take (10 + 20) / 2 = 15 ms a micro-batch, one alone 10 ms, which wins (under
     * the overlapped charge once documented, max(10, 20) / 2 = 10, they tied) */
    o.schedule = SP_SCHEDULE_PIPEDREAM;
    SP_CHECK_STATUS(sp_partition_replicated(ctx, p, &o, 2, &plan), SP_OK);
    SP_CHECK_EQ_INT(sp_plan_get_summary(plan)->gpus, 1);
    SP_CHECK(fabs(sp_plan_get_summary(plan)->bottleneck_ms - 10.0) < 1e-9);
    sp_plan_destroy(plan);
    /* 2 ms of all-reduce under the ring (2 MB): two replicas, (10 + 2) / 2 = 6 ms; PipeDream's
     * accounting charges twice the ring's traffic, 4 ms: (10 + 4) / 2 = 7 ms, still two */
    sp_profile *q = equal_profile(1, 4, 6, 2000000ull);
    SP_CHECK_STATUS(sp_partition_replicated(ctx, q, &o, 2, &plan), SP_OK);
    SP_CHECK_EQ_INT(sp_plan_get_summary(plan)->gpus, 2);
    SP_CHECK(fabs(sp_plan_get_stage(plan, 0)->allreduce_ms - 2.0) < 1e-9);
    SP_CHECK(fabs(sp_plan_get_summary(plan)->bottleneck_ms - 6.0) < 1e-9);
    sp_plan_destroy(plan);
    o.replica_cost = SP_REPLICA_COST_PIPEDREAM;
    SP_CHECK_STATUS(sp_partition_replicated(ctx, q, &o, 2, &plan), SP_OK);
    SP_CHECK_EQ_INT(sp_plan_get_summary(plan)->gpus, 2);
    SP_CHECK(fabs(sp_plan_get_stage(plan, 0)->allreduce_ms - 4.0) < 1e-9);
    SP_CHECK(fabs(sp_plan_get_summary(plan)->bottleneck_ms - 7.0) < 1e-9);
    SP_CHECK(sp_plan_get_summary(plan)->replica_cost == SP_REPLICA_COST_PIPEDREAM);
    sp_plan_destroy(plan);
    /* PipeDream's accounting assumes its schedule: a flushing one is refused, naming why */
    o.schedule = SP_SCHEDULE_1F1B;
    SP_CHECK_STATUS(sp_partition_replicated(ctx, q, &o, 2, &plan), SP_ERR_INVALID_ARG);
    SP_CHECK(strstr(sp_ctx_get_errmsg(ctx), "--schedule pipedream or 2bw") != NULL);
    sp_profile_destroy(q);
    sp_links_destroy(l);
    sp_profile_destroy(p);
}

/* written and read back: replicas, all-reduce, share, gpus and the bottleneck from the shares */
static void test_round_trip(void) {
    sp_profile *p = equal_profile(8, 1, 2, 1000000ull);
    sp_links *l = flat_links(6, 10, 5);
    sp_partition_opts o;
    sp_partition_opts_init(&o);
    o.links = l;
    o.micro_batches = 12;
    sp_plan *plan = NULL, *back = NULL;
    char *text = NULL;
    SP_CHECK_STATUS(sp_partition_replicated(ctx, p, &o, 6, &plan), SP_OK);
    SP_CHECK_STATUS(sp_plan_to_json(ctx, plan, &text), SP_OK);
    SP_CHECK_STATUS(sp_plan_parse(ctx, "r.json", text, strlen(text), &back), SP_OK);
    const sp_plan_summary *a = sp_plan_get_summary(plan), *b = sp_plan_get_summary(back);
    SP_CHECK_EQ_INT(a->gpus, b->gpus);
    SP_CHECK(fabs(a->bottleneck_ms - b->bottleneck_ms) < 1e-9);
    for (size_t s = 0; s < sp_plan_get_stage_count(plan); s++) {
        const sp_stage *x = sp_plan_get_stage(plan, s), *y = sp_plan_get_stage(back, s);
        SP_CHECK_EQ_INT(x->replicas, y->replicas);
        SP_CHECK_EQ_INT(x->device, y->device);
        SP_CHECK(fabs(x->allreduce_ms - y->allreduce_ms) < 1e-9);
        SP_CHECK(fabs(x->share_ms - y->share_ms) < 1e-9);
    }
    /* simulated again from the document: the same iteration */
    sp_sim_opts so;
    sp_sim_opts_init(&so);
    sp_sim *sim = NULL;
    SP_CHECK_STATUS(sp_simulate(ctx, back, &so, &sim), SP_OK);
    SP_CHECK(fabs(sp_sim_get_summary(sim)->iteration_ms - a->schedule.iteration_ms) < 1e-9);
    SP_CHECK_EQ_INT(sp_sim_get_summary(sim)->devices, a->gpus);
    sp_sim_destroy(sim);
    /* replicas that do not add up to the GPUs the plan says it uses */
    char *bad = strstr(text, "\"replicas\":\t");
    SP_CHECK(bad != NULL);
    if (bad) {
        char *digit = bad + strlen("\"replicas\":\t");
        *digit = *digit == '1' ? '2' : '1';
        sp_plan *broken = NULL;
        SP_CHECK_STATUS(sp_plan_parse(ctx, "r.json", text, strlen(text), &broken), SP_ERR_SCHEMA);
        SP_CHECK_CONTAINS(sp_ctx_get_errmsg(ctx), "replicas to add up to gpus");
    }
    sp_free(text);
    sp_plan_destroy(plan);
    sp_plan_destroy(back);
    sp_links_destroy(l);
    sp_profile_destroy(p);
}

/* A plan read from its document: 2 stages of 2 replicas, equal times f + b = 3 ms, no
 * transfers. Replica j of both stages takes the same micro-batches, so the replicas pair up
 * into two unreplicated 2-stage pipelines of M / 2 micro-batches each: 1F1B's closed form
 * (M / 2 + P - 1)(f + b), and a flushing schedule then waits for the slower stage's
 * all-reduce after its last backward (stage 0's, the last to finish under 1F1B). */
#define PAIR_FMT                                                                                   \
    "{\"format\":\"stagepart-plan\",\"version\":1,\"model\":\"e\",\"stage_count\":2,"              \
    "\"micro_batches\":8,\"gpus\":4,\"stages\":["                                                  \
    "{\"index\":0,\"device\":0,\"first_layer\":0,\"last_layer\":0,\"fwd_ms\":1,"                   \
    "\"bwd_ms\":2,\"replicas\":2,\"allreduce_ms\":%g,\"share_ms\":1.5},"                           \
    "{\"index\":1,\"device\":2,\"first_layer\":1,\"last_layer\":1,\"fwd_ms\":1,"                   \
    "\"bwd_ms\":2,\"replicas\":2,\"allreduce_ms\":0,\"share_ms\":1.5}]}"

static void test_paired_replicas(void) {
    const double allreduce[] = {0, 7};
    for (int i = 0; i < 2; i++) {
        char text[1024];
        snprintf(text, sizeof text, PAIR_FMT, allreduce[i]);
        sp_plan *plan = NULL;
        SP_CHECK_STATUS(sp_plan_parse(ctx, "pair.json", text, strlen(text), &plan), SP_OK);
        if (!plan)
            continue;
        SP_CHECK(fabs(sp_plan_get_summary(plan)->bottleneck_ms - 1.5) < 1e-12);
        sp_sim_opts so;
        sp_sim_opts_init(&so);
        sp_sim *sim = NULL;
        SP_CHECK_STATUS(sp_simulate(ctx, plan, &so, &sim), SP_OK);
        double want = (8.0 / 2 + 2 - 1) * 3 + allreduce[i];
        SP_CHECK_MSG(sim && fabs(sp_sim_get_summary(sim)->iteration_ms - want) < 1e-9,
                     "1f1b: %g ms, closed form %g",
                     sim ? sp_sim_get_summary(sim)->iteration_ms : -1, want);
        sp_sim_destroy(sim);
        so.schedule = SP_SCHEDULE_GPIPE; /* the same for all forwards first */
        SP_CHECK_STATUS(sp_simulate(ctx, plan, &so, &sim), SP_OK);
        SP_CHECK(sim && fabs(sp_sim_get_summary(sim)->iteration_ms - want) < 1e-9);
        sp_sim_destroy(sim);
        sp_plan_destroy(plan);
        /* the second stage on a device of the first: refused */
        char *dev = strstr(text, "\"device\":2");
        SP_CHECK(dev != NULL);
        if (dev) {
            dev[9] = '1';
            SP_CHECK_STATUS(sp_plan_parse(ctx, "pair.json", text, strlen(text), &plan),
                            SP_ERR_SCHEMA);
            SP_CHECK_CONTAINS(sp_ctx_get_errmsg(ctx), "after the devices of the stage before");
        }
    }
}

static void test_refusals(void) {
    sp_profile *p = equal_profile(4, 1, 2, 1000ull);
    sp_links *l = flat_links(2, 10, 5);
    sp_partition_opts o;
    sp_partition_opts_init(&o);
    sp_plan *plan = NULL;
    SP_CHECK_STATUS(sp_partition_replicated(ctx, p, &o, 2, &plan), SP_ERR_INVALID_ARG);
    SP_CHECK_CONTAINS(sp_ctx_get_errmsg(ctx), "--links");
    o.links = l;
    SP_CHECK_STATUS(sp_partition_replicated(ctx, p, &o, 4, &plan), SP_ERR_INVALID_ARG);
    o.schedule = SP_SCHEDULE_ZB_H1;
    SP_CHECK_STATUS(sp_partition_replicated(ctx, p, &o, 2, &plan), SP_ERR_UNSUPPORTED);
    o.schedule = SP_SCHEDULE_1F1B;
    o.chunks = 2;
    SP_CHECK_STATUS(sp_partition_replicated(ctx, p, &o, 2, &plan), SP_ERR_UNSUPPORTED);
    o.chunks = 1;
    /* a given split with its replicas: not one when it does not start at 0 or go up */
    size_t first[2] = {0, 2}, backwards[2] = {0, 0};
    uint32_t reps[2] = {1, 1};
    SP_CHECK_STATUS(sp_plan_from_replicated_split(ctx, p, &o, first, reps, 2, &plan), SP_OK);
    SP_CHECK(plan && sp_plan_get_summary(plan)->solver == SP_SOLVER_GIVEN &&
             sp_plan_get_summary(plan)->gpus == 2);
    sp_plan_destroy(plan);
    plan = NULL;
    SP_CHECK_STATUS(sp_plan_from_replicated_split(ctx, p, &o, backwards, reps, 2, &plan),
                    SP_ERR_INVALID_ARG);
    SP_CHECK_CONTAINS(sp_ctx_get_errmsg(ctx), "stage 1 starts at layer 0");
    reps[1] = 2; /* 3 GPUs: more than the links describe */
    SP_CHECK_STATUS(sp_plan_from_replicated_split(ctx, p, &o, first, reps, 2, &plan),
                    SP_ERR_INVALID_ARG);
    o.memory_limit_bytes = 1;
    SP_CHECK_STATUS(sp_partition_replicated(ctx, p, &o, 2, &plan), SP_ERR_INFEASIBLE);
    SP_CHECK(plan == NULL);
    sp_links_destroy(l);
    sp_profile_destroy(p);
}

int main(void) {
    SP_CHECK_STATUS(sp_ctx_create(&ctx), SP_OK);
    test_one_stage_all_replicas();
    test_allreduce_charges();
    test_round_trip();
    test_paired_replicas();
    test_refusals();
    sp_ctx_destroy(ctx);
    return sp_test_finish("test_replicated_unit");
}

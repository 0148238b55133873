/* tests/unit/test_partition.c: the partitioner through the public API on hand-worked cases
 * (docs/partitioning.md), the baselines, option checks and infeasibility messages. */
#include <math.h>
#include <stagepart/stagepart.h>

#include "../test.h"

static sp_ctx *ctx;

/* A profile from a weight list (fwd = w, bwd = 0); kinds and flags optional. */
static sp_profile *make(const double *w, size_t n, const char *const *kinds, const int *no_cut,
                        const unsigned *mem, const unsigned *saved, const unsigned *params) {
    char *buf = malloc(256 + n * 200);
    size_t len = (size_t)sprintf(buf, "{\"format\":\"stagepart-profile\",\"version\":1,"
                                      "\"model\":\"t\",\"micro_batch_size\":1,\"layers\":[");
    for (size_t i = 0; i < n; i++) {
        len += (size_t)sprintf(buf + len, "%s{\"name\":\"L%zu\",\"fwd_ms\":%.6f,\"bwd_ms\":0",
                               i ? "," : "", i, w[i]);
        if (kinds)
            len += (size_t)sprintf(buf + len, ",\"kind\":\"%s\"", kinds[i]);
        if (no_cut && no_cut[i])
            len += (size_t)sprintf(buf + len, ",\"cut_after\":false");
        if (mem)
            len += (size_t)sprintf(buf + len, ",\"memory_bytes\":%u", mem[i]);
        if (saved)
            len += (size_t)sprintf(buf + len, ",\"saved_bytes\":%u", saved[i]);
        if (params)
            len += (size_t)sprintf(buf + len, ",\"param_bytes\":%u", params[i]);
        len += (size_t)sprintf(buf + len, "}");
    }
    len += (size_t)sprintf(buf + len, "]}");
    sp_profile *p = NULL;
    sp_status st = sp_profile_parse(ctx, "t.json", buf, len, &p);
    if (st != SP_OK)
        fprintf(stderr, "bad test profile: %s\n", sp_ctx_get_errmsg(ctx));
    free(buf);
    return p;
}

static sp_status run(const sp_profile *p, uint32_t stages, sp_objective obj, sp_solver solver,
                     uint64_t mem_limit, uint32_t m, sp_plan **plan) {
    sp_partition_opts o;
    sp_partition_opts_init(&o);
    o.stages = stages;
    o.objective = obj;
    o.solver = solver;
    o.memory_limit_bytes = mem_limit;
    o.micro_batches = m;
    return sp_partition(ctx, p, &o, plan);
}

static void check_loads(const sp_plan *plan, const double *expected, size_t p) {
    SP_CHECK_EQ_INT(sp_plan_get_stage_count(plan), p);
    for (size_t s = 0; s < p && s < sp_plan_get_stage_count(plan); s++)
        SP_CHECK_MSG(fabs(sp_plan_get_stage(plan, s)->time_ms - expected[s]) < 1e-9,
                     "stage %zu: %g, expected %g", s, sp_plan_get_stage(plan, s)->time_ms,
                     expected[s]);
}

static void test_objectives(void) {
    /* docs/partitioning.md: min-max [9,11,4]; min-variance [6,6,12] loses throughput */
    const double w[] = {6, 2, 1, 3, 8, 4};
    sp_profile *p = make(w, 6, NULL, NULL, NULL, NULL, NULL);
    sp_plan *plan = NULL;
    SP_CHECK_STATUS(run(p, 3, SP_OBJECTIVE_BOTTLENECK, SP_SOLVER_DP, 0, 0, &plan), SP_OK);
    check_loads(plan, (const double[]){9, 11, 4}, 3);
    const sp_plan_summary *m = sp_plan_get_summary(plan);
    SP_CHECK(m->optimal && m->bottleneck_ms == 11 && m->bottleneck_stage == 1);
    SP_CHECK(fabs(m->lower_bound_ms - 8) < 1e-12); /* max(8, 24/3) */
    SP_CHECK(fabs(m->mean_ms - 8) < 1e-12 && fabs(m->imbalance - 11.0 / 8) < 1e-12);
    SP_CHECK_EQ_INT(m->micro_batches, 12); /* default 4P */
    sp_plan_destroy(plan);
    SP_CHECK_STATUS(run(p, 3, SP_OBJECTIVE_VARIANCE, SP_SOLVER_DP, 0, 0, &plan), SP_OK);
    check_loads(plan, (const double[]){6, 6, 12}, 3);
    sp_plan_destroy(plan);
    sp_profile_destroy(p);

    /* ties: [1,1,1,1,1] into 4 stages, no empty stage (DeepSpeed <= 0.12.4 made one) */
    const double ones[] = {1, 1, 1, 1, 1};
    p = make(ones, 5, NULL, NULL, NULL, NULL, NULL);
    SP_CHECK_STATUS(run(p, 4, SP_OBJECTIVE_BOTTLENECK, SP_SOLVER_DP, 0, 0, &plan), SP_OK);
    check_loads(plan, (const double[]){1, 1, 1, 2}, 4); /* lexicographically smallest */
    sp_plan_destroy(plan);
    SP_CHECK_STATUS(run(p, 5, SP_OBJECTIVE_BOTTLENECK, SP_SOLVER_DP, 0, 0, &plan), SP_OK);
    sp_plan_destroy(plan);
    SP_CHECK_STATUS(run(p, 6, SP_OBJECTIVE_BOTTLENECK, SP_SOLVER_DP, 0, 0, &plan),
                    SP_ERR_INFEASIBLE);
    SP_CHECK_CONTAINS(sp_ctx_get_errmsg(ctx), "cannot cut 5 layers into 6 non-empty stages");
    SP_CHECK(plan == NULL);
    SP_CHECK_STATUS(run(p, 1, SP_OBJECTIVE_BOTTLENECK, SP_SOLVER_DP, 0, 0, &plan), SP_OK);
    check_loads(plan, (const double[]){5}, 1);
    sp_plan_destroy(plan);
    sp_profile_destroy(p);
}

static void test_gpt_like(void) {
    /* [embed 0.3, 8 x 1.0, head 2.5] into 4: the optimum is 3.0 (torchgpipe finds 4.5) */
    double w[10] = {0.3, 1, 1, 1, 1, 1, 1, 1, 1, 2.5};
    const char *kinds[10] = {"embedding",   "transformer", "transformer", "transformer",
                             "transformer", "transformer", "transformer", "transformer",
                             "transformer", "head"};
    sp_profile *p = make(w, 10, kinds, NULL, NULL, NULL, NULL);
    sp_plan *plan = NULL;
    SP_CHECK_STATUS(run(p, 4, SP_OBJECTIVE_BOTTLENECK, SP_SOLVER_DP, 0, 0, &plan), SP_OK);
    const sp_plan_summary *m = sp_plan_get_summary(plan);
    SP_CHECK(fabs(m->bottleneck_ms - 3.0) < 1e-9);
    /* even split counts transformer blocks: 2 each, embedding first, head last: 3.3 .. 4.5 */
    SP_CHECK(fabs(m->even_split_bottleneck_ms - 4.5) < 1e-9);
    sp_plan_destroy(plan);
    SP_CHECK_STATUS(run(p, 4, SP_OBJECTIVE_BOTTLENECK, SP_SOLVER_UNIFORM, 0, 0, &plan), SP_OK);
    check_loads(plan, (const double[]){2.3, 2, 2, 4.5}, 4);
    SP_CHECK(!sp_plan_get_summary(plan)->optimal);
    SP_CHECK(strcmp(sp_plan_get_stage(plan, 3)->last_name, "L9") == 0);
    sp_plan_destroy(plan);
    sp_profile_destroy(p);
}

static void test_forbidden_cuts(void) {
    const double w[] = {1, 1, 1, 1, 1, 1};
    const int no_cut[] = {1, 0, 1, 0, 1, 0}; /* pairs (0,1) (2,3) (4,5) */
    sp_profile *p = make(w, 6, NULL, no_cut, NULL, NULL, NULL);
    sp_plan *plan = NULL;
    SP_CHECK_STATUS(run(p, 3, SP_OBJECTIVE_BOTTLENECK, SP_SOLVER_DP, 0, 0, &plan), SP_OK);
    check_loads(plan, (const double[]){2, 2, 2}, 3);
    sp_plan_destroy(plan);
    SP_CHECK_STATUS(run(p, 4, SP_OBJECTIVE_BOTTLENECK, SP_SOLVER_DP, 0, 0, &plan),
                    SP_ERR_INFEASIBLE);
    SP_CHECK_CONTAINS(sp_ctx_get_errmsg(ctx), "4 stages exceed the allowed cuts: only 2 stage "
                                              "boundaries are allowed (3 layers have cut_after: "
                                              "false or come right before the loss), so at most "
                                              "3 stages");
    /* the uniform split moves boundaries to allowed positions */
    SP_CHECK_STATUS(run(p, 2, SP_OBJECTIVE_BOTTLENECK, SP_SOLVER_UNIFORM, 0, 0, &plan), SP_OK);
    check_loads(plan, (const double[]){2, 4}, 2);
    sp_plan_destroy(plan);
    sp_profile_destroy(p);
}

static void test_memory(void) {
    /* 4 layers of 1 ms, memory 10 each, saved 5 each; P = 2, M = 8: stage 0 holds 2, stage 1
     * holds 1 micro-batch. Even split: stage 0 = 20 + 2*10 = 40, stage 1 = 20 + 10 = 30. */
    const double w[] = {1, 1, 1, 1};
    const unsigned mem[] = {10, 10, 10, 10}, saved[] = {5, 5, 5, 5};
    sp_profile *p = make(w, 4, NULL, NULL, mem, saved, NULL);
    sp_plan *plan = NULL;
    SP_CHECK_STATUS(run(p, 2, SP_OBJECTIVE_BOTTLENECK, SP_SOLVER_DP, 40, 8, &plan), SP_OK);
    check_loads(plan, (const double[]){2, 2}, 2);
    SP_CHECK_EQ_INT(sp_plan_get_stage(plan, 0)->memory_bytes, 40);
    SP_CHECK_EQ_INT(sp_plan_get_stage(plan, 0)->inflight, 2);
    SP_CHECK_EQ_INT(sp_plan_get_stage(plan, 1)->memory_bytes, 30);
    sp_plan_destroy(plan);
    /* limit 39: stage 0 can take one layer (20), stage 1 three (30 + 15 = 45 > 39): infeasible */
    SP_CHECK_STATUS(run(p, 2, SP_OBJECTIVE_BOTTLENECK, SP_SOLVER_DP, 39, 8, &plan),
                    SP_ERR_INFEASIBLE);
    SP_CHECK_CONTAINS(sp_ctx_get_errmsg(ctx),
                      "no split into 2 stages fits the memory limit of 39 B");
    /* P = 3 on [1,1,3,3]: unconstrained optimum [1,1][3][3] (3 ms). Limit 30 with M = 8: stage 0
     * (3 in flight) fits one layer (25), stage 1 (2 in flight) one (20), so [1][1][3,3] (6 ms) */
    const double w2[] = {1, 1, 3, 3};
    sp_profile *r = make(w2, 4, NULL, NULL, mem, saved, NULL);
    SP_CHECK_STATUS(run(r, 3, SP_OBJECTIVE_BOTTLENECK, SP_SOLVER_DP, 0, 8, &plan), SP_OK);
    check_loads(plan, (const double[]){2, 3, 3}, 3);
    sp_plan_destroy(plan);
    SP_CHECK_STATUS(run(r, 3, SP_OBJECTIVE_BOTTLENECK, SP_SOLVER_DP, 30, 8, &plan), SP_OK);
    check_loads(plan, (const double[]){1, 1, 6}, 3);
    SP_CHECK_EQ_INT(sp_plan_get_stage(plan, 2)->memory_bytes, 30);
    sp_plan_destroy(plan);
    sp_profile_destroy(r);
    SP_CHECK_STATUS(run(p, 2, SP_OBJECTIVE_BOTTLENECK, SP_SOLVER_DP, 35, 1, &plan), SP_OK);
    sp_plan_destroy(plan);
    /* one layer that fits nowhere */
    const unsigned big[] = {10, 100, 10, 10};
    sp_profile *q = make(w, 4, NULL, NULL, big, saved, NULL);
    SP_CHECK_STATUS(run(q, 2, SP_OBJECTIVE_BOTTLENECK, SP_SOLVER_DP, 80, 8, &plan),
                    SP_ERR_INFEASIBLE);
    SP_CHECK_CONTAINS(sp_ctx_get_errmsg(ctx),
                      "layer 'L1' alone needs 105 B (memory_bytes 100 + 1 x "
                      "saved_bytes 5), more than the memory limit of 80 B");
    /* a baseline whose split does not fit is refused */
    SP_CHECK_STATUS(run(p, 2, SP_OBJECTIVE_BOTTLENECK, SP_SOLVER_UNIFORM, 35, 8, &plan),
                    SP_ERR_INFEASIBLE);
    SP_CHECK_CONTAINS(sp_ctx_get_errmsg(ctx), "the uniform split does not fit the memory limit: "
                                              "stage 0 needs 40 B");
    sp_profile_destroy(q);
    sp_profile_destroy(p);
}

static void test_parameters_baseline(void) {
    const double w[] = {1, 1, 1, 1};
    const unsigned params[] = {300, 100, 100, 100};
    sp_profile *p = make(w, 4, NULL, NULL, NULL, NULL, params);
    sp_plan *plan = NULL;
    SP_CHECK_STATUS(run(p, 2, SP_OBJECTIVE_BOTTLENECK, SP_SOLVER_PARAMETERS, 0, 0, &plan), SP_OK);
    check_loads(plan, (const double[]){1, 3}, 2);
    SP_CHECK_EQ_INT(sp_plan_get_stage(plan, 0)->param_bytes, 300);
    sp_plan_destroy(plan);
    /* an ignored objective is a warning */
    SP_CHECK_STATUS(run(p, 2, SP_OBJECTIVE_VARIANCE, SP_SOLVER_PARAMETERS, 0, 0, &plan), SP_OK);
    SP_CHECK_CONTAINS(sp_ctx_get_warnings(ctx), "--objective variance is ignored");
    sp_plan_destroy(plan);
    sp_profile_destroy(p);
}

static void test_iteration_objective(void) {
    /* docs/partitioning.md: speeds (1, 1, 0.5, 0.5), w = [8,1,7,5,4,8,4,3], M = 4: the min-max
     * plan [9,16,16,14] has J = 3 x 16 + 55 = 103, the J-optimal [16,17,8,6] J = 98 */
    const char *json =
        "{\"format\":\"stagepart-profile\",\"version\":1,\"model\":\"alpa\",\"micro_batch_size\":1,"
        "\"devices\":[{\"name\":\"a\"},{\"name\":\"b\"},{\"name\":\"c\",\"speed\":0.5},"
        "{\"name\":\"d\",\"speed\":0.5}],\"layers\":["
        "{\"name\":\"0\",\"fwd_ms\":8,\"bwd_ms\":0},{\"name\":\"1\",\"fwd_ms\":1,\"bwd_ms\":0},"
        "{\"name\":\"2\",\"fwd_ms\":7,\"bwd_ms\":0},{\"name\":\"3\",\"fwd_ms\":5,\"bwd_ms\":0},"
        "{\"name\":\"4\",\"fwd_ms\":4,\"bwd_ms\":0},{\"name\":\"5\",\"fwd_ms\":8,\"bwd_ms\":0},"
        "{\"name\":\"6\",\"fwd_ms\":4,\"bwd_ms\":0},{\"name\":\"7\",\"fwd_ms\":3,\"bwd_ms\":0}]}";
    sp_profile *p = NULL;
    SP_CHECK_STATUS(sp_profile_parse(ctx, "alpa.json", json, strlen(json), &p), SP_OK);
    sp_plan *plan = NULL;
    SP_CHECK_STATUS(run(p, 4, SP_OBJECTIVE_BOTTLENECK, SP_SOLVER_DP, 0, 4, &plan), SP_OK);
    check_loads(plan, (const double[]){9, 16, 16, 14}, 4);
    sp_plan_destroy(plan);
    SP_CHECK_STATUS(run(p, 4, SP_OBJECTIVE_ITERATION, SP_SOLVER_DP, 0, 4, &plan), SP_OK);
    check_loads(plan, (const double[]){16, 17, 8, 6}, 4);
    sp_plan_destroy(plan);
    /* variance is refused with speeds */
    SP_CHECK_STATUS(run(p, 4, SP_OBJECTIVE_VARIANCE, SP_SOLVER_DP, 0, 4, &plan),
                    SP_ERR_INVALID_ARG);
    SP_CHECK_CONTAINS(sp_ctx_get_errmsg(ctx), "needs devices of equal speed");
    sp_profile_destroy(p);
}

static void test_options(void) {
    const double w[] = {1, 2};
    sp_profile *p = make(w, 2, NULL, NULL, NULL, NULL, NULL);
    sp_plan *plan = NULL;
    SP_CHECK_STATUS(run(p, 0, SP_OBJECTIVE_BOTTLENECK, SP_SOLVER_DP, 0, 0, &plan),
                    SP_ERR_INVALID_ARG);
    SP_CHECK_CONTAINS(sp_ctx_get_errmsg(ctx), "stages must be in [1, 65536], got 0");
    SP_CHECK_STATUS(run(p, 1, (sp_objective)7, SP_SOLVER_DP, 0, 0, &plan), SP_ERR_INVALID_ARG);
    SP_CHECK_STATUS(sp_partition(ctx, NULL, NULL, &plan), SP_ERR_INVALID_ARG);
    sp_objective o;
    sp_solver s;
    SP_CHECK(sp_objective_from_name("variance", &o) == SP_OK && o == SP_OBJECTIVE_VARIANCE);
    SP_CHECK(sp_objective_from_name("Variance", &o) == SP_ERR_INVALID_ARG);
    SP_CHECK(sp_solver_from_name("parameters", &s) == SP_OK && s == SP_SOLVER_PARAMETERS);
    SP_CHECK(sp_solver_name((sp_solver)9) == NULL);
    sp_profile_destroy(p);
}

int main(void) {
    sp_ctx_create(&ctx);
    test_objectives();
    test_gpt_like();
    test_forbidden_cuts();
    test_memory();
    test_parameters_baseline();
    test_iteration_objective();
    test_options();
    sp_ctx_destroy(ctx);
    return sp_test_finish("test_partition");
}

/* tests/unit/test_check.c: sp_check, the CI gate as a library call: a plan passes on its own
 * profile; a slower layer fails the regression by the right amount; changed layers fail "layers
 * match" by name; a plan for named devices is refused without them; the JSON document and the
 * JUnit file read back. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stagepart/stagepart.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../test.h"

static sp_ctx *ctx;

static const sp_check_criterion *find(const sp_check_result *r, const char *name) {
    for (size_t i = 0; i < sp_check_get_criterion_count(r); i++)
        if (strcmp(sp_check_get_criterion(r, i)->name, name) == 0)
            return sp_check_get_criterion(r, i);
    return NULL;
}

/* a profile of n layers, layer `slow` taking `factor` times the others, one renamed to `rename`
 * (or none) */
static sp_profile *profile_of(size_t n, size_t slow, double factor, const char *rename) {
    char json[8192];
    size_t len = (size_t)snprintf(json, sizeof json,
                                  "{\"format\": \"stagepart-profile\", \"version\": 1, \"model\": "
                                  "\"m\", \"micro_batch_size\": 1, \"layers\": [");
    for (size_t i = 0; i < n; i++) {
        char name[64];
        snprintf(name, sizeof name, "l%zu", i);
        double f = i == slow ? factor : 1.0;
        len += (size_t)snprintf(
            json + len, sizeof json - len,
            "%s{\"name\": \"%s\", \"kind\": \"block\", \"fwd_ms\": %g, \"bwd_ms\": %g, "
            "\"output_bytes\": 1000, \"param_bytes\": 1000, \"saved_bytes\": 1000}",
            i ? ", " : "", rename && i == 3 ? rename : name, 1.0 * f, 2.0 * f);
    }
    snprintf(json + len, sizeof json - len, "]}");
    sp_profile *p = NULL;
    SP_CHECK_STATUS(sp_profile_parse(ctx, "test", json, strlen(json), &p), SP_OK);
    return p;
}

static void test_pass_and_regression(void) {
    sp_profile *p = profile_of(16, 99, 1, NULL);
    sp_partition_opts po;
    sp_partition_opts_init(&po);
    po.stages = 4;
    sp_plan *plan = NULL;
    SP_CHECK_STATUS(sp_partition(ctx, p, &po, &plan), SP_OK);
    sp_check_opts o;
    sp_check_opts_init(&o);
    sp_check_result *r = NULL;
    SP_CHECK_STATUS(sp_check(ctx, plan, p, &o, &r), SP_OK);
    SP_CHECK(sp_check_get_criterion_count(r) == 4);
    SP_CHECK(sp_check_get_failed_count(r) == 0);
    SP_CHECK(find(r, "layers match") && find(r, "layers match")->passed);
    SP_CHECK(find(r, "imbalance") && find(r, "imbalance")->value == 1.0);
    char *json = NULL;
    SP_CHECK_STATUS(sp_check_to_json(ctx, r, &json), SP_OK);
    cJSON *doc = json ? cJSON_Parse(json) : NULL;
    SP_CHECK(doc && cJSON_IsTrue(cJSON_GetObjectItem(doc, "passed")) &&
             cJSON_GetArraySize(cJSON_GetObjectItem(doc, "criteria")) == 4);
    cJSON_Delete(doc);
    sp_free(json);
    sp_check_destroy(r);

    /* layer 5 twice as slow: its stage's time grows from 12 ms to 15 ms, the iteration with it */
    sp_profile *slower = profile_of(16, 5, 2, NULL);
    r = NULL;
    SP_CHECK_STATUS(sp_check(ctx, plan, slower, &o, &r), SP_OK);
    const sp_check_criterion *reg = r ? find(r, "regression") : NULL;
    SP_CHECK(reg && !reg->passed && reg->value > 0.1 && reg->limit == 0.05);
    SP_CHECK(sp_check_get_failed_count(r) >= 1);
    sp_check_destroy(r);

    /* a renamed layer: "layers match" fails and names both sides; nothing else is judged */
    sp_profile *renamed = profile_of(16, 99, 1, "l3\tnew");
    r = NULL;
    SP_CHECK_STATUS(sp_check(ctx, plan, renamed, &o, &r), SP_OK);
    SP_CHECK(r && sp_check_get_criterion_count(r) == 1 && !find(r, "layers match")->passed);
    SP_CHECK_CONTAINS(r ? find(r, "layers match")->message : "", "'l3'");
    json = NULL;
    SP_CHECK_STATUS(sp_check_to_json(ctx, r, &json), SP_OK);
    doc = json ? cJSON_Parse(json) : NULL;
    SP_CHECK_MSG(doc != NULL, "the JSON with a tab in a name does not parse: %s", json);
    cJSON_Delete(doc);
    sp_free(json);
    char path[] = "/tmp/stagepart-test-check-XXXXXX";
    int fd = mkstemp(path);
    SP_CHECK(fd >= 0);
    if (fd >= 0)
        close(fd);
    SP_CHECK_STATUS(sp_check_write_junit(ctx, r, path), SP_OK);
    FILE *f = fopen(path, "r");
    char xml[4096] = "";
    size_t got = f ? fread(xml, 1, sizeof xml - 1, f) : 0;
    xml[got] = '\0';
    if (f)
        fclose(f);
    remove(path);
    SP_CHECK_CONTAINS(xml, "tests=\"1\" failures=\"1\" skipped=\"0\"");
    SP_CHECK_CONTAINS(xml, "l3&#9;new");
    sp_check_destroy(r);

    SP_CHECK_STATUS(sp_check(ctx, NULL, p, &o, &r), SP_ERR_INVALID_ARG);
    sp_plan_destroy(plan);
    sp_profile_destroy(p);
    sp_profile_destroy(slower);
    sp_profile_destroy(renamed);
}

/* a balance, parts and the optimal plan beside them */
static void test_evaluate(void) {
    sp_profile *p = profile_of(12, 0, 4, NULL); /* layer 0: 12 ms, the others 3 ms */
    size_t counts[] = {3, 3, 3, 3}, parts[] = {0, 3, 6, 9, 12}, *first = NULL, *first2 = NULL, n;
    SP_CHECK_STATUS(sp_split_from_counts(ctx, p, counts, 4, &first), SP_OK);
    SP_CHECK_STATUS(sp_split_from_parts(ctx, p, parts, 5, &first2, &n), SP_OK);
    SP_CHECK(first && first2 && n == 4);
    for (size_t s = 0; first && first2 && s < 4; s++)
        SP_CHECK(first[s] == 3 * s && first2[s] == first[s]);
    size_t bad[] = {3, 3, 3}, huge[] = {3, SIZE_MAX, 3}, *none = NULL;
    SP_CHECK_STATUS(sp_split_from_counts(ctx, p, bad, 3, &none), SP_ERR_INVALID_ARG);
    SP_CHECK_CONTAINS(sp_ctx_get_errmsg(ctx), "adds up to 9 modules; the profile has 12");
    SP_CHECK_STATUS(sp_split_from_counts(ctx, p, huge, 3, &none), SP_ERR_INVALID_ARG);
    SP_CHECK_CONTAINS(sp_ctx_get_errmsg(ctx), "more than 12 modules");
    size_t flat[] = {0, 3, 3, 12};
    SP_CHECK_STATUS(sp_split_from_parts(ctx, p, flat, 4, &none, &n), SP_ERR_INVALID_ARG);
    SP_CHECK(none == NULL);

    sp_partition_opts o;
    sp_partition_opts_init(&o);
    sp_evaluation *e = NULL;
    SP_CHECK_STATUS(sp_evaluate(ctx, p, &o, first, 4, &e), SP_OK);
    /* yours: stage 0 = 12 + 2 x 3 = 18 ms; the optimal: layer 0 alone, 12 ms */
    SP_CHECK(e && fabs(sp_plan_get_summary(sp_evaluation_get_yours(e))->bottleneck_ms - 18) < 1e-9);
    SP_CHECK(e &&
             fabs(sp_plan_get_summary(sp_evaluation_get_optimal(e))->bottleneck_ms - 12) < 1e-9);
    SP_CHECK(e && sp_evaluation_get_gain(e) > 0.2);
    char *json = NULL;
    SP_CHECK_STATUS(sp_evaluation_to_json(ctx, e, &json), SP_OK);
    cJSON *doc = json ? cJSON_Parse(json) : NULL;
    SP_CHECK(
        doc && cJSON_GetObjectItem(doc, "throughput_gain") &&
        cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "optimal"), "bottleneck_ms")->valuedouble ==
            12);
    cJSON_Delete(doc);
    sp_free(json);
    sp_evaluation_destroy(e);
    o.stages = 3; /* four segments are not three stages */
    SP_CHECK_STATUS(sp_evaluate(ctx, p, &o, first, 4, &e), SP_ERR_INVALID_ARG);
    sp_free(first);
    sp_free(first2);
    sp_profile_destroy(p);
}

int main(void) {
    SP_CHECK(sp_ctx_create(&ctx) == SP_OK);
    test_pass_and_regression();
    test_evaluate();
    sp_ctx_destroy(ctx);
    return sp_test_finish("test_check");
}

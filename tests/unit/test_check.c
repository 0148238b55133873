/* tests/unit/test_check.c: sp_check, the CI gate as a library call: a plan passes on its own
 * profile; a slower layer fails the regression by the right amount; changed layers fail "layers
 * match" by name; a plan for named devices is refused without them; the JSON document and the
 * JUnit file read back. */
#include <cjson/cJSON.h>
#include <stagepart/stagepart.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../test.h"

static sp_ctx *ctx;

static const sp_check_criterion *find(const sp_check_result *r, const char *name) {
    for (size_t i = 0; i < sp_check_criterion_count(r); i++)
        if (strcmp(sp_check_criterion_get(r, i)->name, name) == 0)
            return sp_check_criterion_get(r, i);
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
    SP_CHECK(sp_check_criterion_count(r) == 4);
    SP_CHECK(sp_check_failed_count(r) == 0);
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
    SP_CHECK(sp_check_failed_count(r) >= 1);
    sp_check_destroy(r);

    /* a renamed layer: "layers match" fails and names both sides; nothing else is judged */
    sp_profile *renamed = profile_of(16, 99, 1, "l3\tnew");
    r = NULL;
    SP_CHECK_STATUS(sp_check(ctx, plan, renamed, &o, &r), SP_OK);
    SP_CHECK(r && sp_check_criterion_count(r) == 1 && !find(r, "layers match")->passed);
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

int main(void) {
    SP_CHECK(sp_ctx_create(&ctx) == SP_OK);
    test_pass_and_regression();
    sp_ctx_destroy(ctx);
    return sp_test_finish("test_check");
}

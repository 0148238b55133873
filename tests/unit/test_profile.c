/* tests/unit/test_profile.c: reading and validating profiles, including every kind of bad
 * input the format rules name (docs/formats.md). */
#include <stagepart/stagepart.h>

#include "../test.h"

#define HEAD                                                                                       \
    "{\"format\":\"stagepart-profile\",\"version\":1,\"model\":\"m\",\"micro_batch_size\":2,"

static sp_ctx *ctx;

static sp_status parse(const char *json, sp_profile **out) {
    return sp_profile_parse(ctx, "model.json", json, strlen(json), out);
}

static void expect_error(const char *json, sp_status expected, const char *needle) {
    sp_profile *p = (sp_profile *)1;
    sp_status st = parse(json, &p);
    SP_CHECK_STATUS(st, expected);
    SP_CHECK(p == NULL);
    SP_CHECK_CONTAINS(sp_ctx_get_errmsg(ctx), needle);
    if (st == SP_OK)
        sp_profile_destroy(p);
}

static void test_valid(void) {
    sp_profile *p = NULL;
    const char *json = HEAD "\"source\":\"hand\",\"unknown_field\":[1,2],\"layers\":["
                            "{\"name\":\"embed\",\"kind\":\"embedding\",\"fwd_ms\":0.5,"
                            "\"bwd_ms\":1,\"param_bytes\":100,\"saved_bytes\":7,\"x\":{}},"
                            "{\"name\":\"t0\",\"fwd_ms\":2,\"bwd_ms\":4,\"wgrad_ms\":2,"
                            "\"memory_bytes\":900,\"cut_after\":false},"
                            "{\"name\":\"head\",\"fwd_ms\":0,\"bwd_ms\":0}]}";
    SP_CHECK_STATUS(parse(json, &p), SP_OK);
    SP_CHECK_EQ_INT(sp_profile_get_layer_count(p), 3);
    SP_CHECK(strcmp(sp_profile_get_model(p), "m") == 0);
    SP_CHECK(strcmp(sp_profile_get_source(p), "hand") == 0);
    SP_CHECK_EQ_INT(sp_profile_get_micro_batch_size(p), 2);
    const sp_layer *e = sp_profile_get_layer(p, 0), *t = sp_profile_get_layer(p, 1);
    SP_CHECK(strcmp(e->kind, "embedding") == 0 && strcmp(t->kind, "") == 0);
    SP_CHECK_EQ_INT(e->memory_bytes, 100); /* defaults to param_bytes */
    SP_CHECK_EQ_INT(t->memory_bytes, 900);
    SP_CHECK(e->cut_after && !t->cut_after);
    SP_CHECK(e->wgrad_ms == -1 && t->wgrad_ms == 2 && t->recompute_ms == -1);
    SP_CHECK(sp_profile_get_layer(p, 3) == NULL);
    SP_CHECK_EQ_INT(strlen(sp_profile_get_sha256(p)), 64);
    sp_profile_destroy(p);
    sp_profile_destroy(NULL);
}

/* micro_batch_size is optional (published profiles often lack it): absent or null is 0,
 * "unknown"; 0 itself is no batch size; a profile that lacks it writes it back as null */
static void test_micro_batch_size_unknown(void) {
    const char *tail = "\"layers\":[{\"name\":\"a\",\"fwd_ms\":1,\"bwd_ms\":2}]}";
    char json[512];
    const char *heads[] = {"{\"format\":\"stagepart-profile\",\"version\":1,\"model\":\"m\",",
                           "{\"format\":\"stagepart-profile\",\"version\":1,\"model\":\"m\","
                           "\"micro_batch_size\":null,"};
    for (size_t i = 0; i < 2; i++) {
        snprintf(json, sizeof json, "%s%s", heads[i], tail);
        sp_profile *p = NULL;
        SP_CHECK_STATUS(parse(json, &p), SP_OK);
        SP_CHECK_EQ_INT(sp_profile_get_micro_batch_size(p), 0);
        sp_profile_destroy(p);
    }
    snprintf(json, sizeof json, "%s\"micro_batch_size\":0,%s", heads[0], tail);
    expect_error(json, SP_ERR_SCHEMA, "micro_batch_size: expected an integer >= 1, got 0");
}

static void test_bad_inputs(void) {
    expect_error("", SP_ERR_PARSE, "model.json: empty file");
    expect_error(HEAD "\"layers\":[{\"name\":\"a\",\"fwd_ms\":1", SP_ERR_PARSE, "model.json:1:");
    expect_error("{\n  \"format\": \"stagepart-profile\",\n  oops\n}", SP_ERR_PARSE,
                 "model.json:3:3: malformed JSON near 'oops'");
    expect_error("{} trailing", SP_ERR_PARSE, "malformed JSON");
    expect_error("[1,2]", SP_ERR_SCHEMA, "model.json: expected a JSON object at the top level");
    expect_error("{\"format\":\"stagepart-plan\",\"version\":1}", SP_ERR_SCHEMA,
                 "model.json: format: expected \"stagepart-profile\", got \"stagepart-plan\"");
    expect_error("{\"format\":\"stagepart-profile\",\"version\":2}", SP_ERR_SCHEMA,
                 "version: version 2 is newer than this build reads (1)");
    expect_error(HEAD "\"layers\":[]}", SP_ERR_SCHEMA,
                 "layers: expected at least one layer, got an empty array");
    expect_error(HEAD "\"layers\":{}}", SP_ERR_SCHEMA,
                 "layers: expected an array of layer objects, got an object");
    expect_error(HEAD "\"layers\":[{\"name\":\"a\",\"fwd_ms\":1,\"bwd_ms\":1},"
                      "{\"name\":\"b\",\"fwd_ms\":\"abc\",\"bwd_ms\":1}]}",
                 SP_ERR_SCHEMA,
                 "model.json: layers[1].fwd_ms: expected a finite number >= 0, got \"abc\"");
    expect_error(HEAD "\"layers\":[{\"name\":\"a\",\"fwd_ms\":-1,\"bwd_ms\":1}]}", SP_ERR_SCHEMA,
                 "layers[0].fwd_ms: expected a finite number >= 0, got -1");
    expect_error(HEAD "\"layers\":[{\"name\":\"a\",\"fwd_ms\":NaN,\"bwd_ms\":1}]}", SP_ERR_PARSE,
                 "malformed JSON near 'NaN");
    expect_error(HEAD "\"layers\":[{\"name\":\"a\",\"fwd_ms\":1e999,\"bwd_ms\":1}]}", SP_ERR_SCHEMA,
                 "layers[0].fwd_ms: expected a finite number >= 0, got a number too large");
    expect_error(HEAD "\"layers\":[{\"name\":\"a\",\"fwd_ms\":1e10,\"bwd_ms\":1}]}", SP_ERR_SCHEMA,
                 "layers[0].fwd_ms: 10000000000 is above the limit of 1e+09");
    expect_error(HEAD "\"layers\":[{\"name\":\"a\",\"fwd_ms\":1,\"bwd_ms\":1,"
                      "\"param_bytes\":9007199254740993000}]}",
                 SP_ERR_SCHEMA, "layers[0].param_bytes: integer 9007199254740993");
    expect_error(HEAD
                 "\"layers\":[{\"name\":\"a\",\"fwd_ms\":1,\"bwd_ms\":1,\"saved_bytes\":1.5}]}",
                 SP_ERR_SCHEMA, "layers[0].saved_bytes: expected an integer >= 0, got 1.5");
    expect_error(HEAD "\"layers\":[{\"name\":\"a\",\"fwd_ms\":1,\"bwd_ms\":1,\"cut_after\":1}]}",
                 SP_ERR_SCHEMA, "layers[0].cut_after: expected true or false, got 1");
    expect_error(HEAD "\"layers\":[{\"name\":\"a\",\"fwd_ms\":1,\"bwd_ms\":1,\"wgrad_ms\":2}]}",
                 SP_ERR_SCHEMA, "layers[0].wgrad_ms: expected at most bwd_ms (1)");
    expect_error(HEAD "\"layers\":[{\"name\":\"a\",\"fwd_ms\":1,\"bwd_ms\":1},"
                      "{\"name\":\"b\",\"fwd_ms\":1,\"bwd_ms\":1},"
                      "{\"name\":\"a\",\"fwd_ms\":1,\"bwd_ms\":1}]}",
                 SP_ERR_SCHEMA,
                 "layers[2].name: duplicate layer name \"a\" (first used by layers[0])");
    expect_error(HEAD "\"layers\":[{\"fwd_ms\":1,\"bwd_ms\":1}]}", SP_ERR_SCHEMA,
                 "layers[0].name: missing, expected a string");
    expect_error(HEAD "\"layers\":[{\"name\":\"\",\"fwd_ms\":1,\"bwd_ms\":1}]}", SP_ERR_SCHEMA,
                 "layers[0].name: expected a non-empty string");
    expect_error(HEAD "\"layers\":[7]}", SP_ERR_SCHEMA, "layers[0]: expected an object, got 7");
    expect_error("{\"format\":\"stagepart-profile\",\"version\":1,\"layers\":[{\"name\":\"a\","
                 "\"fwd_ms\":1,\"bwd_ms\":1}]}",
                 SP_ERR_SCHEMA, "model: missing, expected a string");
    /* NUL inside the text */
    sp_profile *p = NULL;
    const char nul[] = "{\"a\":\0 1}";
    SP_CHECK_STATUS(sp_profile_parse(ctx, "nul.json", nul, sizeof nul - 1, &p), SP_ERR_PARSE);
    SP_CHECK_CONTAINS(sp_ctx_get_errmsg(ctx), "NUL byte");
}

static void test_every_problem_reported(void) {
    sp_profile *p = NULL;
    const char *json = HEAD "\"layers\":[{\"name\":\"a\",\"fwd_ms\":-1,\"bwd_ms\":\"x\"},"
                            "{\"name\":3,\"fwd_ms\":1,\"bwd_ms\":1,\"memory_bytes\":-5}]}";
    SP_CHECK_STATUS(parse(json, &p), SP_ERR_SCHEMA);
    const char *m = sp_ctx_get_errmsg(ctx);
    SP_CHECK_CONTAINS(m, "layers[0].fwd_ms");
    SP_CHECK_CONTAINS(m, "layers[0].bwd_ms");
    SP_CHECK_CONTAINS(m, "layers[1].name: expected a string, got 3");
    SP_CHECK_CONTAINS(m, "layers[1].memory_bytes");
    /* more than 50 problems: the rest are counted */
    struct {
        char *buf;
        size_t len;
    } b = {malloc(200000), 0};
    b.len = (size_t)sprintf(b.buf, HEAD "\"layers\":[");
    for (int i = 0; i < 80; i++)
        b.len += (size_t)sprintf(b.buf + b.len, "%s{\"name\":\"l%d\",\"fwd_ms\":-1,\"bwd_ms\":0}",
                                 i ? "," : "", i);
    b.len += (size_t)sprintf(b.buf + b.len, "]}");
    SP_CHECK_STATUS(sp_profile_parse(ctx, "many.json", b.buf, b.len, &p), SP_ERR_SCHEMA);
    SP_CHECK_CONTAINS(sp_ctx_get_errmsg(ctx), "... and 30 more problems");
    free(b.buf);
}

static void test_million_layers(void) {
    size_t n = 1000000, cap = n * 64 + 256, len = 0;
    char *buf = malloc(cap);
    len = (size_t)snprintf(buf, cap, HEAD "\"layers\":[");
    for (size_t i = 0; i < n; i++)
        len += (size_t)snprintf(buf + len, cap - len,
                                "%s{\"name\":\"l%zu\",\"fwd_ms\":%zu,\"bwd_ms\":1}", i ? "," : "",
                                i, i % 7);
    len += (size_t)snprintf(buf + len, cap - len, "]}");
    sp_profile *p = NULL;
    SP_CHECK_STATUS(sp_profile_parse(ctx, "big.json", buf, len, &p), SP_OK);
    SP_CHECK_EQ_INT(sp_profile_get_layer_count(p), n);
    if (p) {
        sp_partition_opts o;
        sp_partition_opts_init(&o);
        o.stages = 64;
        sp_plan *plan = NULL;
        SP_CHECK_STATUS(sp_partition(ctx, p, &o, &plan), SP_OK);
        SP_CHECK_EQ_INT(sp_plan_get_stage_count(plan), 64);
        sp_plan_destroy(plan);
    }
    sp_profile_destroy(p);
    free(buf);
}

static void test_load_errors(void) {
    sp_profile *p = NULL;
    SP_CHECK_STATUS(sp_profile_load(ctx, "/nonexistent/x.json", &p), SP_ERR_IO);
    SP_CHECK_CONTAINS(sp_ctx_get_errmsg(ctx), "cannot open '/nonexistent/x.json'");
    SP_CHECK_STATUS(sp_profile_load(ctx, "/", &p), SP_ERR_IO);
    SP_CHECK_STATUS(sp_profile_load(NULL, "x", &p), SP_ERR_INVALID_ARG);
}

int main(void) {
    sp_ctx_create(&ctx);
    test_valid();
    test_bad_inputs();
    test_micro_batch_size_unknown();
    test_every_problem_reported();
    test_load_errors();
    test_million_layers();
    sp_ctx_destroy(ctx);
    return sp_test_finish("test_profile");
}

/* tests/unit/test_link_fit.c: the alpha-beta fit recovers exact lines, weights relative error
 * (a 4 KiB point off by 50% moves latency, not bandwidth), clamps a negative latency, refuses
 * what cannot be fitted; and a real CPU measurement is a links file sp_links_parse reads. */
#include <math.h>
#include <stagepart/stagepart.h>

#include "../test.h"
#include "links_json.h"

static sp_ctx *ctx;

static void test_exact(void) {
    uint64_t b[8];
    double ms[8];
    for (int i = 0; i < 8; i++) {
        b[i] = (uint64_t)4096 << (2 * i);
        ms[i] = 0.005 + (double)b[i] / 25e6; /* 5 us, 25 GB/s */
    }
    sp_link_fit f;
    SP_CHECK_STATUS(sp_fit_alpha_beta(ctx, b, ms, 8, &f), SP_OK);
    SP_CHECK_MSG(fabs(f.latency_us - 5) < 1e-6, "latency %.9f", f.latency_us);
    SP_CHECK_MSG(fabs(f.bandwidth_GBps - 25) < 1e-6, "bandwidth %.9f", f.bandwidth_GBps);
    SP_CHECK(fabs(f.r2 - 1) < 1e-12 && f.max_rel_residual < 1e-9);
    SP_CHECK(fabs(f.peak_GBps - 25) < 0.1); /* the largest size: latency is 0.2% of it */

    /* through the origin: a line with latency 0 stays at 0, a negative one is clamped */
    for (int i = 0; i < 8; i++) /* 10 GB/s and a latency of -10 ns: every time stays > 0 */
        ms[i] = (double)b[i] / 10e6 - 0.00001;
    SP_CHECK_STATUS(sp_fit_alpha_beta(ctx, b, ms, 8, &f), SP_OK);
    SP_CHECK_MSG(f.latency_us == 0 && f.bandwidth_GBps > 10 && f.bandwidth_GBps < 10.5,
                 "latency %.6f us, %.6f GB/s", f.latency_us, f.bandwidth_GBps);
}

static void test_relative_weights(void) {
    uint64_t b[] = {4096, 4096, 1 << 26, 1 << 26};
    double ms[] = {0.010, 0.010 * 1.5, 0.010 + (double)(1 << 26) / 50e6,
                   0.010 + (double)(1 << 26) / 50e6};
    sp_link_fit f;
    SP_CHECK_STATUS(sp_fit_alpha_beta(ctx, b, ms, 4, &f), SP_OK);
    /* the noisy small points decide the latency (between 10 and 15 us), the bandwidth holds */
    SP_CHECK_MSG(f.latency_us > 10 && f.latency_us < 15, "latency %.3f", f.latency_us);
    SP_CHECK_MSG(fabs(f.bandwidth_GBps - 50) < 0.5, "bandwidth %.3f", f.bandwidth_GBps);
}

static void test_refusals(void) {
    uint64_t b[] = {4096, 4096, 8192};
    double ms[] = {0.01, 0.02, 0.0};
    sp_link_fit f;
    SP_CHECK_STATUS(sp_fit_alpha_beta(ctx, b, ms, 3, &f), SP_ERR_INVALID_ARG); /* t = 0 */
    SP_CHECK_CONTAINS(sp_ctx_get_errmsg(ctx), "times must be > 0");
    SP_CHECK_STATUS(sp_fit_alpha_beta(ctx, b, ms, 2, &f), SP_ERR_INVALID_ARG); /* one size */
    SP_CHECK_CONTAINS(sp_ctx_get_errmsg(ctx), "two different sizes");
    double down[] = {0.03, 0.02, 0.01};
    SP_CHECK_STATUS(sp_fit_alpha_beta(ctx, b, down, 3, &f), SP_ERR_INVALID_ARG);
    SP_CHECK_CONTAINS(sp_ctx_get_errmsg(ctx), "do not grow");
}

static void test_cpu_probe(void) {
    sp_bandwidth_opts o;
    sp_bandwidth_opts_init(&o);
    /* sizes 16x apart and five trials: under a loaded CI machine (the ASan suite runs -j2 beside
     * MPI jobs) three trials of 1 and 4 MiB once gave times that did not grow with the size */
    uint64_t sizes[] = {64 << 10, 1 << 20, 16 << 20};
    o.sizes = sizes;
    o.n_sizes = 3;
    o.trials = 5;
    o.warmup = 1;
    sp_bandwidth_result *r = NULL;
    sp_status st = sp_bandwidth_measure_cpu(ctx, &o, &r);
    SP_CHECK_MSG(st == SP_OK, "%s", sp_ctx_get_errmsg(ctx));
    const char *json = r ? sp_bandwidth_result_get_json(r) : NULL;
    /* the typed result: both directions between the two workers, each with its fit */
    SP_CHECK(sp_bandwidth_result_get_link_count(r) == 2);
    const sp_link_result *first = sp_bandwidth_result_get_link(r, 0);
    SP_CHECK(first && strcmp(first->label, "cpu0->cpu1") == 0 && first->fit.bandwidth_GBps > 0);
    SP_CHECK(sp_bandwidth_result_get_link(r, 2) == NULL);
    sp_links *l = NULL;
    SP_CHECK_STATUS(sp_links_parse(ctx, "probe", json ? json : "", json ? strlen(json) : 0, &l),
                    SP_OK);
    SP_CHECK(l && sp_links_get_count(l) == 2);
    if (l) {
        /* 4 MiB between two threads of one machine: more than 10 us, less than a second */
        double t = sp_links_transfer_ms(l, 0, 1, 4 << 20);
        SP_CHECK_MSG(t > 0.01 && t < 1000, "4 MiB in %.3f ms", t);
    }
    SP_CHECK_CONTAINS(json ? json : "", "\"median_ms\"");
    sp_links_destroy(l);
    sp_bandwidth_result_destroy(r);
    o.workers = 1;
    SP_CHECK_STATUS(sp_bandwidth_measure_cpu(ctx, &o, &r), SP_ERR_INVALID_ARG);
    SP_CHECK(r == NULL);
    o.workers = 2;
    o.n_sizes = 1;
    SP_CHECK_STATUS(sp_bandwidth_measure_cpu(ctx, &o, &r), SP_ERR_INVALID_ARG);
}

/* the links document both probes write: a series between two devices fills the matrices, one
 * outside them (host copies, within a device) is kept in measurement only, with its cross-check */
static void test_links_doc(void) {
    sp_ctx *c = NULL;
    SP_CHECK_STATUS(sp_ctx_create(&c), SP_OK);
    struct sp_links_doc *d = NULL;
    SP_CHECK_STATUS(sp_links_doc_begin(c, 2, &d), SP_OK);
    const uint64_t sizes[] = {1000, 1000000};
    /* 2 us + bytes / 10 GB/s, three trials a size (out of order: sorted in place) */
    double ms[] = {0.0023, 0.0021, 0.0022, 0.1022, 0.1020, 0.1021};
    double check[] = {0.003, 0.103};
    struct sp_link_series link = {"gpu0->gpu1", 0, 1, sizes, 2, ms, 3, "cuda_events_median_ms",
                                  check};
    sp_link_fit fit;
    SP_CHECK_STATUS(sp_links_doc_add(d, &link, &fit), SP_OK);
    SP_CHECK_MSG(fabs(fit.bandwidth_GBps - 10.0) < 0.1, "%g", fit.bandwidth_GBps);
    double back_ms[] = {0.0022, 0.0022, 0.0022, 0.1022, 0.1022, 0.1022};
    struct sp_link_series back = {"gpu1->gpu0", 1, 0, sizes, 2, back_ms, 3, NULL, NULL};
    SP_CHECK_STATUS(sp_links_doc_add(d, &back, NULL), SP_OK);
    double host_ms[] = {0.005, 0.005, 0.005, 0.055, 0.055, 0.055};
    struct sp_link_series host = {"host->gpu0", -1, -1, sizes, 2, host_ms, 3, NULL, NULL};
    SP_CHECK_STATUS(sp_links_doc_add(d, &host, NULL), SP_OK);
    /* a fit a links file cannot hold (1 MB in 2 s: 0.5 MB/s) is refused, not written */
    struct sp_links_doc *d2 = NULL;
    SP_CHECK_STATUS(sp_links_doc_begin(c, 2, &d2), SP_OK);
    double slow_ms[] = {2.0, 2.0, 2.0, 2000.0, 2000.0, 2000.0};
    struct sp_link_series slow = {"cpu0->cpu1", 0, 1, sizes, 2, slow_ms, 3, NULL, NULL};
    SP_CHECK_STATUS(sp_links_doc_add(d2, &slow, NULL), SP_ERR_LIMIT);
    SP_CHECK_MSG(strstr(sp_ctx_get_errmsg(c), "cpu0->cpu1: the fitted link (0.0005 GB/s") != NULL,
                 "%s", sp_ctx_get_errmsg(c));
    sp_links_doc_abort(d2);
    cJSON_AddStringToObject(sp_links_doc_measurement(d), "collector", "unit");
    SP_CHECK_STATUS(sp_links_doc_say(d, "timing", "unit clock"), SP_OK);
    const char *names[] = {"gpu0", "gpu1"};
    sp_bandwidth_result *r = NULL;
    SP_CHECK_STATUS(sp_links_doc_finish(d, names, &r), SP_OK);
    const char *json = sp_bandwidth_result_get_json(r);
    /* the typed result: every series in order, with its fit; the timing said */
    SP_CHECK_EQ_INT(sp_bandwidth_result_get_link_count(r), 3);
    SP_CHECK(strcmp(sp_bandwidth_result_get_link(r, 2)->label, "host->gpu0") == 0);
    SP_CHECK(fabs(sp_bandwidth_result_get_link(r, 0)->fit.bandwidth_GBps - fit.bandwidth_GBps) ==
             0);
    SP_CHECK(strcmp(sp_bandwidth_result_get_timing(r), "unit clock") == 0);
    SP_CHECK(strcmp(sp_bandwidth_result_get_note(r), "") == 0);
    sp_links *links = NULL;
    SP_CHECK_STATUS(sp_links_parse(c, "doc", json, strlen(json), &links), SP_OK);
    if (links) { /* the partitioner reads it: 1 MB takes 2 us + 100 us one way, nothing back */
        SP_CHECK_MSG(fabs(sp_links_transfer_ms(links, 0, 1, 1000000) - 0.102) < 0.001, "%g",
                     sp_links_transfer_ms(links, 0, 1, 1000000));
        SP_CHECK_EQ_INT(sp_links_get_count(links), 2);
    }
    cJSON *root = json ? cJSON_Parse(json) : NULL;
    cJSON *pairs = cJSON_GetObjectItem(cJSON_GetObjectItem(root, "measurement"), "pairs");
    SP_CHECK_EQ_INT(cJSON_GetArraySize(pairs), 3);
    cJSON *p0 = cJSON_GetArrayItem(pairs, 0), *p1 = cJSON_GetArrayItem(pairs, 2);
    SP_CHECK(cJSON_GetObjectItem(p1, "from") == NULL); /* outside the matrix */
    cJSON *s0 = cJSON_GetArrayItem(cJSON_GetObjectItem(p0, "samples"), 0);
    SP_CHECK(fabs(cJSON_GetObjectItem(s0, "median_ms")->valuedouble - 0.0022) < 1e-12);
    SP_CHECK(fabs(cJSON_GetObjectItem(s0, "cuda_events_median_ms")->valuedouble - 0.003) < 1e-12);
    cJSON *bw = cJSON_GetObjectItem(root, "bandwidth_GBps");
    SP_CHECK(cJSON_GetArrayItem(cJSON_GetArrayItem(bw, 0), 0)->valuedouble == 0); /* diagonal */
    cJSON_Delete(root);
    sp_links_destroy(links);
    sp_bandwidth_result_destroy(r);
    sp_ctx_destroy(c);
}

int main(void) {
    test_links_doc();
    if (sp_ctx_create(&ctx) != SP_OK)
        return 1;
    test_exact();
    test_relative_weights();
    test_refusals();
    test_cpu_probe();
    sp_ctx_destroy(ctx);
    printf("%d checks, %d failures\n", sp_test_checks, sp_test_failures);
    return sp_test_failures ? 1 : 0;
}

/* tests/cuda/test_bandwidth_cuda.c: the CUDA link probe on a real device (exit 77 without one).
 * The document must name every device, time the copies by CUPTI's records with the events'
 * medians beside and agreeing, and give plausible bandwidths: host copies above 1 GB/s, copies
 * within a device above 50 GB/s (an H200: about 50 and 2,000). */
#include <cjson/cJSON.h>
#include <stagepart/stagepart.h>
#include <stdio.h>
#include <string.h>

#include "../test.h"

int main(void) {
    sp_ctx *ctx = NULL;
    sp_ctx_create(&ctx);
    sp_bandwidth_opts o;
    sp_bandwidth_opts_init(&o);
    const uint64_t sizes[] = {64u << 10, 1u << 20, 16u << 20, 64u << 20};
    o.sizes = sizes;
    o.n_sizes = 4;
    o.trials = 5;
    sp_bandwidth_result *r = NULL;
    sp_status st = sp_bandwidth_measure_cuda(ctx, &o, &r);
    const char *json = r ? sp_bandwidth_result_get_json(r) : NULL;
    if (st == SP_ERR_NO_DEVICE || st == SP_ERR_UNSUPPORTED) {
        printf("skipped: %s\n", sp_ctx_get_errmsg(ctx));
        sp_ctx_destroy(ctx);
        return 77;
    }
    SP_CHECK_STATUS(st, SP_OK);
    cJSON *root = json ? cJSON_Parse(json) : NULL;
    SP_CHECK(root != NULL);
    cJSON *m = cJSON_GetObjectItem(root, "measurement");
    const cJSON *timing = cJSON_GetObjectItem(m, "timing");
    SP_CHECK_MSG(cJSON_IsString(timing) && strncmp(timing->valuestring, "CUPTI memcpy", 12) == 0,
                 "timing: %s", cJSON_IsString(timing) ? timing->valuestring : "?");
    int n = cJSON_GetArraySize(cJSON_GetObjectItem(root, "devices")), series = 0;
    SP_CHECK(n >= 1);
    const cJSON *p;
    cJSON_ArrayForEach(p, cJSON_GetObjectItem(m, "pairs")) {
        const char *label = cJSON_GetObjectItem(p, "label")->valuestring;
        double bw =
            cJSON_GetObjectItem(cJSON_GetObjectItem(p, "fit"), "bandwidth_GBps")->valuedouble;
        printf("%-24s %10.1f GB/s\n", label, bw);
        if (strstr(label, "host"))
            SP_CHECK_MSG(bw > 1, "%s: %g GB/s", label, bw);
        if (strstr(label, "within"))
            SP_CHECK_MSG(bw > 50, "%s: %g GB/s", label, bw);
        const cJSON *s;
        cJSON_ArrayForEach(s, cJSON_GetObjectItem(p, "samples")) {
            double cupti = cJSON_GetObjectItem(s, "median_ms")->valuedouble;
            const cJSON *ev = cJSON_GetObjectItem(s, "cuda_events_median_ms");
            if (!ev || cJSON_GetObjectItem(s, "bytes")->valuedouble < (1 << 20))
                continue; /* NCCL series have no events; small copies are all overhead */
            SP_CHECK_MSG(ev->valuedouble >= 0.8 * cupti && ev->valuedouble <= 2 * cupti + 0.05,
                         "%s: events %g ms against CUPTI %g ms", label, ev->valuedouble, cupti);
        }
        series++;
    }
    SP_CHECK_MSG(series >= 3 * n + n * (n - 1), "%d series for %d devices", series, n);
    cJSON_Delete(root);
    sp_bandwidth_result_destroy(r);
    sp_ctx_destroy(ctx);
    return sp_test_finish("test_bandwidth_cuda");
}

/* bench/llm_like.c: the synthetic LLM-like chains the benchmarks partition (bench/llm_like.h). */
#include "llm_like.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng = 42;
double unit(void) { /* splitmix64 -> [0, 1) */
    uint64_t z = (rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return (double)((z ^ (z >> 31)) >> 11) / 9007199254740992.0;
}

/* LLM-like chain: light embedding, blocks +-10 %, heavy head (head_factor x a block), loss;
 * parameters: embedding and head vocab-sized, blocks equal. */
sp_profile *llm_like(sp_ctx *ctx, size_t n, double head_factor, double emb_factor) {
    size_t cap = 256 + n * 220, len = 0;
    char *buf = malloc(cap);
    len +=
        (size_t)snprintf(buf + len, cap - len,
                         "{\"format\":\"stagepart-profile\",\"version\":1,\"model\":\"llm-like\","
                         "\"micro_batch_size\":1,\"layers\":[");
    for (size_t i = 0; i < n; i++) {
        double t = 0.9 + 0.2 * unit();
        const char *kind = "transformer";
        double params = 2e8, saved = 3e6;
        if (i == 0) {
            t = 0.05;
            kind = "embedding";
            params = 2e8 * emb_factor;
            saved = 1e4;
        } else if (i == n - 1) {
            t = head_factor;
            kind = "head";
            params = 2e8 * emb_factor;
            saved = 5e6;
        }
        len += (size_t)snprintf(
            buf + len, cap - len,
            "%s{\"name\":\"l%zu\",\"kind\":\"%s\",\"fwd_ms\":%.6f,\"bwd_ms\":%.6f,"
            "\"param_bytes\":%.0f,\"memory_bytes\":%.0f,\"saved_bytes\":%.0f}",
            i ? "," : "", i, kind, t / 3, 2 * t / 3, 2 * params, 16 * params, saved);
    }
    snprintf(buf + len, cap - len, "]}");
    sp_profile *p = NULL;
    if (sp_profile_parse(ctx, "llm-like", buf, strlen(buf), &p) != SP_OK)
        fprintf(stderr, "bench: %s\n", sp_ctx_get_errmsg(ctx));
    free(buf);
    return p;
}

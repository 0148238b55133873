/* bench/llm_like.h: synthetic LLM-like chains for the benchmarks, from a fixed seed. */
#ifndef SP_BENCH_LLM_LIKE_H
#define SP_BENCH_LLM_LIKE_H

#include <stagepart/stagepart.h>

/* the next number of the benchmarks' fixed sequence, in [0, 1) (splitmix64) */
double unit(void);

/* n layers: a light embedding (emb_factor x a block's parameters), blocks +-10 %, an LM head
 * head_factor x a block, vocab-sized parameters at both ends; NULL (said on stderr) on error */
sp_profile *llm_like(sp_ctx *ctx, size_t n, double head_factor, double emb_factor);

#endif

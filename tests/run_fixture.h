/* tests/run_fixture.h: a tiny GPT and plans of it, for the runtime's tests (unit/test_runtime.c
 * on CPU threads, cuda/test_run_cuda_fake.c on stand-in GPUs); every function is static. */
#ifndef SP_TESTS_RUN_FIXTURE_H
#define SP_TESTS_RUN_FIXTURE_H

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "links_fixture.h"
#include "stagepart/stagepart.h"
#include "test.h"

static const char *tiny =
    "{\"format\": \"stagepart-model\", \"version\": 1, \"name\": \"tiny\", \"seq_len\": 6,"
    " \"micro_batch_size\": 2, \"preset\": {\"kind\": \"gpt\", \"layers\": 4, \"hidden\": 16,"
    " \"heads\": 2, \"vocab\": 13, \"max_seq_len\": 8}}";

/* the CPU profile of m; with sms > 0 the profile says its times were measured on that many GPU
 * SMs (measurement.sms, as `profile --sms` writes) */
static sp_profile *make_profile_sms(sp_ctx *ctx, sp_model *m, unsigned sms) {
    sp_model_profile_opts po;
    sp_model_profile_opts_init(&po);
    po.iters = 1;
    po.warmup = 0;
    char *json = NULL;
    sp_profile *profile = NULL;
    sp_model_info info;
    sp_model_get_info(m, &info);
    sp_model_layer_timing *t = calloc(info.layers, sizeof *t);
    SP_CHECK_STATUS(sp_model_profile_cpu(ctx, m, &po, &json, NULL, t), SP_OK);
    char *meas = json ? strstr(json, "\"measurement\"") : NULL;
    char *open = meas ? strchr(meas, '{') : NULL;
    SP_CHECK(open != NULL);
    char *grown = NULL; /* the profile with "measurement": {"sms": N, ... */
    const char *doc = json;
    if (sms && open && (grown = malloc(strlen(json) + 32))) {
        size_t len = strlen(json), at = (size_t)(open + 1 - json);
        memcpy(grown, json, at);
        int w = snprintf(grown + at, 32, "\"sms\": %u, ", sms);
        memcpy(grown + at + w, json + at, len - at + 1);
        doc = grown;
    }
    SP_CHECK_STATUS(sp_profile_parse(ctx, "tiny", doc, strlen(doc), &profile), SP_OK);
    free(grown);
    /* the typed figures are the profile's own (cJSON prints 15 digits when they read back within
     * an ulp) */
    for (size_t i = 0; t && profile && i < info.layers; i++) {
        const sp_layer *L = sp_profile_get_layer(profile, i);
        SP_CHECK(fabs(t[i].fwd_ms - L->fwd_ms) <= 1e-12 * L->fwd_ms &&
                 fabs(t[i].bwd_ms - L->bwd_ms) <= 1e-12 * L->bwd_ms && t[i].cv >= 0);
    }
    free(t);
    sp_free(json);
    return profile;
}

/* a plan of the CPU profile of m, split at first[P] (each stage's first layer), M micro-batches;
 * sms as for make_profile_sms, so the plan has profile_sms */
static sp_plan *make_plan_sms(sp_ctx *ctx, sp_model *m, const size_t *first, uint32_t P, uint32_t M,
                              unsigned sms) {
    sp_profile *profile = make_profile_sms(ctx, m, sms);
    sp_plan *plan = NULL;
    sp_partition_opts o;
    sp_partition_opts_init(&o);
    o.stages = P;
    o.micro_batches = M;
    sp_status st = profile ? sp_plan_from_split(ctx, profile, &o, first, P, &plan) : SP_ERR_NOMEM;
    SP_CHECK_MSG(st == SP_OK, "%s", sp_ctx_get_errmsg(ctx));
    sp_profile_destroy(profile);
    return plan;
}

/* a plan with replicated stages: stage s from first[s] on replicas[s] devices (count stages), M
 * micro-batches, over flat links (10 GB/s, 5 us) between the replicas summed */
static inline sp_plan *make_replicated_plan(sp_ctx *ctx, sp_model *m, const size_t *first,
                                            const uint32_t *replicas, size_t count, uint32_t M) {
    uint32_t n = 0;
    for (size_t s = 0; s < count; s++)
        n += replicas[s];
    sp_links *l = test_links(ctx, (int)n, (int)n, 10, 10, 5);
    sp_profile *profile = make_profile_sms(ctx, m, 0);
    sp_plan *plan = NULL;
    sp_partition_opts o;
    sp_partition_opts_init(&o);
    o.micro_batches = M;
    o.links = l;
    sp_status st = profile && l ? sp_plan_from_replicated_split(ctx, profile, &o, first, replicas,
                                                                count, &plan)
                                : SP_ERR_NOMEM;
    SP_CHECK_MSG(st == SP_OK, "%s", sp_ctx_get_errmsg(ctx));
    sp_profile_destroy(profile);
    sp_links_destroy(l);
    return plan;
}

static sp_plan *make_plan(sp_ctx *ctx, sp_model *m, const size_t *first, uint32_t P, uint32_t M) {
    return make_plan_sms(ctx, m, first, P, M, 0);
}

/* the plan trained 3 steps (no warm-up, learning rate 0.5) as asked; the run, or NULL after a
 * failed check that it ran */
static inline sp_run *run_plan_as(sp_ctx *ctx, const sp_plan *plan, sp_model *m,
                                  sp_run_backend backend, sp_transport transport,
                                  sp_schedule schedule, bool gpu_split) {
    sp_run_opts o;
    sp_run_opts_init(&o);
    o.steps = 3;
    o.warmup_steps = 0;
    o.learning_rate = 0.5f;
    o.schedule = schedule;
    o.backend = backend;
    o.transport = transport;
    o.gpu_split = gpu_split;
    o.pin = transport != SP_TRANSPORT_MPI; /* several ranks on a machine of 2 cores */
    o.timeout_ms = 20000.0;
    sp_run *run = NULL;
    sp_status st = sp_run_plan(ctx, plan, m, &o, &run);
    SP_CHECK_MSG(st == SP_OK, "%s", sp_ctx_get_errmsg(ctx));
    return run;
}

#endif

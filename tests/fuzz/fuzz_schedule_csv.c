/* fuzz_schedule_csv: `simulate --order` on any bytes. The first byte picks one of a few plans
 * (1F1B on 3 stages, interleaved zero bubble 2 x 2 chunks, ZBV and DualPipeV on 2 devices); the
 * rest is read as torch's schedule CSV and simulated with that plan's times. An order that reads
 * must simulate to a finite, non-negative iteration; a refusal carries a message. */
#include "fuzz_util.h"

#include <math.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char profile_json[] =
    "{\"format\": \"stagepart-profile\", \"version\": 1, \"model\": \"m\", \"micro_batch_size\": 1,"
    " \"layers\": ["
    "{\"name\": \"a\", \"fwd_ms\": 1, \"bwd_ms\": 2, \"wgrad_ms\": 1},"
    "{\"name\": \"b\", \"fwd_ms\": 2, \"bwd_ms\": 3, \"wgrad_ms\": 1},"
    "{\"name\": \"c\", \"fwd_ms\": 1, \"bwd_ms\": 2, \"wgrad_ms\": 0.5},"
    "{\"name\": \"d\", \"fwd_ms\": 1.5, \"bwd_ms\": 2, \"wgrad_ms\": 1},"
    "{\"name\": \"e\", \"fwd_ms\": 1, \"bwd_ms\": 1, \"wgrad_ms\": 0.5},"
    "{\"name\": \"f\", \"fwd_ms\": 1, \"bwd_ms\": 2, \"wgrad_ms\": 1}]}";

#define N_PLANS 4
static sp_plan *plans[N_PLANS];

static sp_plan *make_plan(sp_ctx *ctx, const sp_profile *profile, sp_schedule schedule,
                          uint32_t stages, uint32_t chunks, uint32_t micro_batches) {
    sp_partition_opts o;
    sp_partition_opts_init(&o);
    o.schedule = schedule;
    o.stages = stages;
    o.chunks = chunks;
    o.micro_batches = micro_batches;
    o.solver =
        chunks > 1 && schedule == SP_SCHEDULE_INTERLEAVED_ZB ? SP_SOLVER_UNIFORM : SP_SOLVER_DP;
    sp_plan *plan = NULL;
    if (sp_partition(ctx, profile, &o, &plan) != SP_OK)
        __builtin_trap(); /* the fixed plans always exist */
    return plan;
}

static void init_plans(sp_ctx *ctx) {
    sp_profile *profile = NULL;
    if (sp_profile_parse(ctx, "profile", profile_json, sizeof profile_json - 1, &profile) != SP_OK)
        __builtin_trap();
    plans[0] = make_plan(ctx, profile, SP_SCHEDULE_1F1B, 3, 1, 4);
    plans[1] = make_plan(ctx, profile, SP_SCHEDULE_INTERLEAVED_ZB, 2, 2, 4);
    plans[2] = make_plan(ctx, profile, SP_SCHEDULE_ZBV, 2, 2, 3);
    plans[3] = make_plan(ctx, profile, SP_SCHEDULE_DUALPIPEV, 2, 2, 4);
    sp_profile_destroy(profile);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1)
        return 0;
    sp_ctx *ctx = NULL;
    if (sp_ctx_create(&ctx) != SP_OK)
        return 0;
    if (!plans[0]) /* made once; the process keeps them */
        init_plans(ctx);
    const sp_plan *plan = plans[data[0] % N_PLANS];
    const char *path = fuzz_temp_file(data + 1, size - 1);
    if (path) {
        sp_sim_opts so;
        sp_sim_opts_init(&so);
        so.schedule = sp_plan_get_summary(plan)->schedule.schedule;
        so.order_path = path;
        so.keep_ops = (data[0] / N_PLANS) & 1;
        sp_sim *sim = NULL;
        sp_status st = sp_simulate(ctx, plan, &so, &sim);
        fuzz_require_message(ctx, st);
        if (st == SP_OK) {
            double it = sp_sim_get_summary(sim)->iteration_ms;
            if (!(it >= 0) || !isfinite(it))
                __builtin_trap();
        }
        sp_sim_destroy(sim);
    }
    sp_ctx_destroy(ctx);
    return 0;
}

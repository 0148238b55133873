/* tests/install/plan_main.c: a program built against an installed stagepart (pkg-config or
 * find_package, static or shared): partition a profile and print the plan's bottleneck, what
 * the stagepart command prints for the same plan. Usage: plan_main PROFILE STAGES */
#include <stagepart/stagepart.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: plan_main PROFILE STAGES\n");
        return 2;
    }
    sp_ctx *ctx = NULL;
    sp_profile *profile = NULL;
    sp_plan *plan = NULL;
    if (sp_ctx_create(&ctx) != SP_OK)
        return 5;
    sp_partition_opts opts;
    sp_partition_opts_init(&opts);
    opts.stages = (uint32_t)atoi(argv[2]);
    sp_status st = sp_profile_load(ctx, argv[1], &profile);
    if (st == SP_OK)
        st = sp_partition(ctx, profile, &opts, &plan);
    if (st == SP_OK)
        printf("stagepart %s: %u stages, bottleneck %.3f ms, %s\n", sp_version(),
               sp_plan_get_summary(plan)->stages, sp_plan_get_summary(plan)->bottleneck_ms,
               sp_guarantee_name(sp_plan_get_summary(plan)->guarantee));
    else
        fprintf(stderr, "error: %s\n", sp_ctx_get_errmsg(ctx));
    sp_plan_destroy(plan);
    sp_profile_destroy(profile);
    sp_ctx_destroy(ctx);
    return st == SP_OK ? 0 : 1;
}

/* export/export_parallel.c: a plan's parallelism in the frameworks' terms. They run flushing
 * schedules, so a plan made for pipedream or 2bw is refused. Megatron-LM, DeepSpeed,
 * torch.distributed.pipelining and torchtitan replicate the whole pipeline: one data-parallel
 * size for every stage. A plan with the same replica count on every stage is that, and exports
 * with its data-parallel size; one with counts differing per stage (PipeDream's) is refused. */
#include "export_parallel.h"
#include "plan_impl.h"

sp_status sp_export_parallelism(sp_ctx *ctx, const sp_plan *plan, sp_export_format format,
                                uint32_t *replicas) {
    *replicas = 1;
    sp_schedule run_as = plan->summary.schedule.schedule;
    if (plan->summary.schedule.present &&
        (run_as == SP_SCHEDULE_PIPEDREAM || run_as == SP_SCHEDULE_2BW))
        return sp_fail(ctx, SP_ERR_INVALID_ARG,
                       "the plan was made for %s, which runs without flushes and keeps stashed "
                       "weight versions; Megatron-LM, DeepSpeed, torch.distributed.pipelining "
                       "and torchtitan run flushing schedules, whose memory and iteration this "
                       "plan does not describe: partition again with --schedule 1f1b to export",
                       sp_schedule_name(run_as));
    for (size_t k = 0; plan->summary.gpus && k < plan->n_stages; k++) {
        const sp_stage *st = &plan->stages[k];
        if (k && st->replicas != *replicas)
            return sp_fail(ctx, SP_ERR_UNSUPPORTED,
                           "stage %zu has %u replicas and stage 0 %u: Megatron-LM, DeepSpeed, "
                           "torch.distributed.pipelining and torchtitan replicate the whole "
                           "pipeline, the same data-parallel size for every stage, and cannot "
                           "express replicas per stage; partition with --gpus N --global-batch B "
                           "for their pipeline x data-parallel splits",
                           k, st->replicas, *replicas);
        *replicas = st->replicas;
    }
    if (*replicas > 1 && format == SP_EXPORT_TORCH_SCHEDULE_CSV)
        return sp_fail(ctx, SP_ERR_UNSUPPORTED,
                       "torch's schedule CSV holds one pipeline's ranks; this plan runs %u "
                       "replicas of it: export the schedule of the unreplicated plan",
                       *replicas);
    return SP_OK;
}

void sp_export_parallel_note(const sp_plan *plan, uint32_t replicas, struct sp_strbuf *text) {
    sp_strbuf_printf(text,
                     "# data parallel: %u replicas of the whole pipeline (%u stages x %u = %u "
                     "GPUs): the framework's data-parallel size is %u (Megatron-LM: world size / "
                     "(pipeline x tensor parallel sizes))\n",
                     replicas, plan->summary.stages, replicas, plan->summary.gpus, replicas);
}

const char *sp_export_placement(const sp_plan *plan) {
    if (plan->summary.chunks == 1)
        return NULL;
    return plan->summary.chunk_layout == SP_CHUNKS_V
               ? "V-shape: stage k on rank k for k < P, else 2P-1-k"
               : "looped: stage k on rank k % P";
}

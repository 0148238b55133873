/* profiler/kineto_content.c: whether a Kineto trace holds what a profile needs, and when it
 * does not, what the user did and should do instead (import_kineto.c). */
#include "trace.h"

sp_status sp_kineto_check_content(sp_ctx *ctx, const char *name, size_t n_gpu, size_t n_legacy,
                                  size_t n_ops, size_t n_ranges) {
    if (n_gpu == 0 && n_legacy > 0)
        return sp_fail(
            ctx, SP_ERR_SCHEMA,
            "%s: the 2021 Kineto trace format (%zu events of cat Kernel, Runtime, Memcpy "
            "or Memset, the names before Kineto renamed them kernel, cuda_runtime, "
            "gpu_memcpy and gpu_memset): not read; record the trace again with a current "
            "PyTorch",
            name, n_legacy);
    if (n_gpu == 0 && n_ops == 0)
        return sp_fail(
            ctx, SP_ERR_SCHEMA,
            "%s: no GPU events (cat kernel, gpu_memcpy or "
            "gpu_memset) and no CPU operators (cat cpu_op)%s",
            name,
            n_ranges ? ", only Python calls: exported while no step was recorded (under a "
                       "profiler schedule, export in on_trace_ready, e.g. tensorboard_trace_"
                       "handler; after the `with` block the trace holds the profiler's exit)"
                     : ": record the trace with ProfilerActivity.CPU, and ProfilerActivity.CUDA "
                       "on a GPU");
    if (n_ranges == 0)
        return sp_fail(ctx, SP_ERR_SCHEMA,
                       "%s: no host ranges (cat user_annotation or python_function): record with "
                       "torch.profiler's with_stack=True (module ranges), wrap layers in "
                       "record_function, or annotate the model (docs/profiling.md)",
                       name);
    return SP_OK;
}

/* cli/attach.c: `profile --attach -- CMD` and `profile MODEL --backend cuda` (which attaches to
 * stagepart-model-cuda): the collector and the model program found where this stagepart was
 * built or installed, the program run under the collector (sp_attach_run, profiler/attach.c),
 * its trace attributed and written. */
#define _XOPEN_SOURCE 700
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attach.h"
#include "attribution.h"

/* A file stagepart ships beside its executable: $env when set, <exe>/<relative> (an installed
 * stagepart), or the build tree's (build_path). false when none is readable (out then holds what
 * $env named, if set). */
static bool find_helper(const char *env_name, const char *build_path, const char *relative,
                        char *out, size_t cap) {
    const char *env = getenv(env_name);
    if (env && *env)
        return realpath(env, out) != NULL || (snprintf(out, cap, "%s", env), false);
    /* where an installed stagepart keeps it, beside its own bin/ (as stagepart-compute is found
     * first beside the command); else the build's own */
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash) {
            *slash = '\0';
            char candidate[4200];
            snprintf(candidate, sizeof candidate, "%s/%s", exe, relative);
            if (access(candidate, R_OK) == 0 && realpath(candidate, out))
                return true;
        }
    }
    return build_path && access(build_path, R_OK) == 0 && realpath(build_path, out);
}

#ifndef SP_INJECT_BUILD_PATH
#define SP_INJECT_BUILD_PATH NULL
#endif
#ifndef SP_MODEL_CUDA_BUILD_PATH
#define SP_MODEL_CUDA_BUILD_PATH NULL
#endif

/* The collector: STAGEPART_INJECT_LIB, the build tree's, or <exe>/../lib's. */
static bool find_inject_lib(char *out, size_t cap) {
    return find_helper("STAGEPART_INJECT_LIB", SP_INJECT_BUILD_PATH,
                       "../lib/libstagepart-inject.so", out, cap);
}

bool cli_find_model_cuda(char *out, size_t cap) {
    return find_helper("STAGEPART_MODEL_CUDA", SP_MODEL_CUDA_BUILD_PATH, "stagepart-model-cuda",
                       out, cap);
}

int cli_attach_profile(const struct cli_attach_args *a) {
    const sp_trace_profile_opts *o = &a->opts;
    char lib[4096];
    if (!find_inject_lib(lib, sizeof lib)) {
        fprintf(stderr,
                "stagepart: error: libstagepart-inject.so %s%s: this stagepart was built without "
                "CUDA (STAGEPART_CUDA=OFF or no toolkit); build with the CUDA toolkit, or set "
                "STAGEPART_INJECT_LIB to the library\n",
                getenv("STAGEPART_INJECT_LIB") ? "not readable at " : "not found",
                getenv("STAGEPART_INJECT_LIB") ? lib : "");
        return CLI_EXIT_UNAVAILABLE;
    }
    sp_ctx *ctx = NULL;
    if (sp_ctx_create(&ctx) != SP_OK)
        return CLI_EXIT_INTERNAL;
    sp_attach_opts ao = {.cmd = a->cmd,
                         .inject_lib = lib,
                         .events_dir = a->events_dir,
                         .steps = a->steps,
                         .warmup_steps = o->warmup_steps,
                         .step_pattern = o->step_pattern,
                         .no_device_status = a->no_device_status};
    sp_trace *trace = NULL;
    sp_status st = sp_attach_run(ctx, &ao, &trace);
    int code;
    if (st != SP_OK) {
        code = cli_report(ctx, st, false);
    } else {
        cli_print_warnings(ctx);
        code = cli_attribution_finish(ctx, trace, o, a->output, true);
    }
    sp_trace_destroy(trace);
    sp_ctx_destroy(ctx);
    return code;
}

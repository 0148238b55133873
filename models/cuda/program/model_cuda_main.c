/* models/cuda/program/model_cuda_main.c: stagepart-model-cuda, a built-in model trained on one GPU.
 *
 *   stagepart-model-cuda MODEL [--micro-batch-size B] [--seq-len S] [--steps N] [--seed X]
 *                        [--lr LR] [--fp32] [--compare-cpu] [--backend cuda|cpu] [--sms N]
 *
 * Each step runs every layer's forward then every layer's backward, then SGD, inside NVTX ranges
 * named by stagepart's convention: "stagepart/step", "<layer>/fwd" (its output bytes as the u64
 * payload), "<layer>/bwd", "stagepart/optimizer"; the weights and data made before the first step
 * under "stagepart/setup", so that no GPU work is launched outside every range. So `stagepart
 * profile MODEL --backend cuda` runs this program under the live collector (profile --attach) and
 * attributes its kernels with the same engine as a user's program; under Nsight Systems it is a
 * known workload too. It prints each step's loss (the mean over the micro-batch) on stdout.
 *
 * --compare-cpu runs one forward and backward on the GPU and on the CPU executor (OpenBLAS) from
 * the same weights and data, and compares the loss, every layer's output and every parameter
 * gradient (relative error in the max norm, fp32 products unless the model is bf16 and --fp32 is
 * not given). Exit 0 when all agree, 1 when one does not, 2 on bad arguments or input, 77 when
 * there is no CUDA device (the test suite's "skipped").
 *
 * --sms N runs the model on a partition of N of GPU 0's SMs (a green context, as a stage of
 * `stagepart run --gpu-split` gets one): `stagepart profile MODEL --backend cuda --sms N` measures
 * the times a plan for stages sharing a GPU needs. A count the GPU cannot give exits 2.
 *
 * --backend cpu runs the same steps, ranges and output on the CPU executor: the program's own
 * logic is tested that way where there is no GPU (tests/cuda/model_cuda_trains.sh). */
#include <math.h>
#include <nvtx3/nvToolsExt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver.h"
#include "sm_partition.h"
#include "stage_cuda.h"

#define EXIT_SKIP 77

struct args {
    const char *model;
    unsigned long batch, seq, steps, seed, sms;
    float lr;
    bool fp32, compare, cpu;
};

static int usage(const char *why) {
    fprintf(stderr,
            "stagepart-model-cuda: %s\nusage: stagepart-model-cuda MODEL [--micro-batch-size B] "
            "[--seq-len S] [--steps N] [--seed X] [--lr LR] [--fp32] [--compare-cpu] "
            "[--backend cuda|cpu] [--sms N]\n",
            why);
    return 2;
}

static bool number(const char *s, unsigned long lo, unsigned long hi, unsigned long *out) {
    char *end = NULL;
    unsigned long v = strtoul(s, &end, 10);
    if (!*s || *end || v < lo || v > hi)
        return false;
    *out = v;
    return true;
}

static int parse_args(int argc, char **argv, struct args *a) {
    memset(a, 0, sizeof *a);
    a->steps = 5, a->seed = 1, a->lr = 0.05f;
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        bool ok = true;
        if (strcmp(o, "--fp32") == 0) {
            a->fp32 = true;
            continue;
        } else if (strcmp(o, "--compare-cpu") == 0) {
            a->compare = true;
            continue;
        } else if (o[0] != '-') {
            if (a->model)
                return usage("more than one model given");
            a->model = o;
            continue;
        } else if (!v) {
            return usage("an option lacks its value");
        } else if (strcmp(o, "--backend") == 0) {
            ok = strcmp(v, "cuda") == 0 || strcmp(v, "cpu") == 0;
            a->cpu = strcmp(v, "cpu") == 0;
        } else if (strcmp(o, "--micro-batch-size") == 0) {
            ok = number(v, 1, 1u << 20, &a->batch);
        } else if (strcmp(o, "--seq-len") == 0) {
            ok = number(v, 1, 1u << 24, &a->seq);
        } else if (strcmp(o, "--steps") == 0) {
            ok = number(v, 1, 1000000, &a->steps);
        } else if (strcmp(o, "--sms") == 0) {
            ok = number(v, 1, 1u << 16, &a->sms);
        } else if (strcmp(o, "--seed") == 0) {
            ok = number(v, 0, ~0ul, &a->seed);
        } else if (strcmp(o, "--lr") == 0) {
            char *end = NULL;
            a->lr = strtof(v, &end);
            ok = *v && !*end && a->lr >= 0.0f && a->lr < 100.0f;
        } else {
            return usage("unknown option");
        }
        if (!ok) {
            fprintf(stderr, "stagepart-model-cuda: %s: bad value '%s'\n", o, v);
            return 2;
        }
        i++;
    }
    if (a->cpu && a->compare)
        return usage("--compare-cpu compares the GPU with the CPU: not with --backend cpu");
    if (a->cpu && a->sms)
        return usage("--sms runs the model on a partition of a GPU's SMs: not with --backend cpu");
    return a->model ? 0 : usage("no model given");
}

/* The NVTX ranges open: every push and pop goes through push() and pop(), so that the stand-in
 * runtime (tests/cuda/fake_cuda.c) can require every launch, copy and memset inside one. */
unsigned sp_model_range_depth;

static void pop(void) {
    nvtxRangePop();
    sp_model_range_depth--;
}

static void push_named(const char *name) {
    nvtxRangePushA(name);
    sp_model_range_depth++;
}

static void push(const char *layer, const char *phase, uint64_t payload) {
    char name[320];
    snprintf(name, sizeof name, "%s/%s", layer, phase);
    nvtxEventAttributes_t at;
    memset(&at, 0, sizeof at);
    at.version = NVTX_VERSION;
    at.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    at.messageType = NVTX_MESSAGE_TYPE_ASCII;
    at.message.ascii = name;
    if (payload) {
        at.payloadType = NVTX_PAYLOAD_TYPE_UNSIGNED_INT64;
        at.payload.ullValue = payload;
    }
    nvtxRangePushEx(&at);
    sp_model_range_depth++;
}

/* One training step: every layer forward, every layer backward, SGD; the loss of the micro-batch
 * back on the host (which waits for the device). */
static bool train_step(struct sp_stage_exec *se, const struct sp_batch *b, float *loss_stage,
                       float *loss_host, float lr) {
    const struct sp_model *m = se->m;
    const struct sp_exec_backend *be = se->be;
    size_t n = m->n_layers;
    push_named("stagepart/step");
    for (size_t k = 0; k < n; k++) {
        const struct sp_model_layer *L = &m->layers[k];
        float *out = k + 1 < n ? se->saved[k + 1] : loss_stage;
        push(L->name, "fwd", (uint64_t)L->out_elems * sizeof(float));
        sp_layer_forward_on(be->ops, be->device, m, k, b, se->params[k], se->saved[k], out,
                            se->work);
        pop();
    }
    const float *d = NULL;
    for (size_t k = n; k-- > 0;) {
        float *dout = k > 0 ? se->grad[k % 2] : NULL;
        push(m->layers[k].name, "bwd", 0);
        sp_layer_backward_on(be->ops, be->device, m, k, b, se->params[k], se->saved[k], d, dout,
                             se->dparams[k], se->work, NULL);
        pop();
        d = dout;
    }
    push_named("stagepart/optimizer");
    sp_stage_exec_sgd(se, lr);
    pop();
    bool ok = be->download(be->device, loss_host, loss_stage, m->bound_batch * sizeof *loss_host);
    pop();
    return ok;
}

/* the GPU's first failure, if any (the CPU executor cannot fail part-way) */
static bool stage_failed(const struct sp_stage_exec *se, char *msg, size_t cap) {
    if (se->be->ops != &sp_op_runner_cuda)
        return false;
    return sp_cuda_device_failed(se->be->device, msg, cap);
}

/* max |a - b| / max(max |b|, 1e-6) */
static double rel_error(const float *a, const float *b, size_t n) {
    double diff = 0.0, scale = 1e-6;
    for (size_t k = 0; k < n; k++) {
        double d = fabs((double)a[k] - (double)b[k]), s = fabs((double)b[k]);
        diff = d > diff ? d : diff;
        scale = s > scale ? s : scale;
    }
    return diff / scale;
}

/* One forward and backward on both; each layer's output and gradients compared. */
static int compare_cpu(sp_ctx *ctx, const struct sp_model *m, struct sp_stage_exec *gpu,
                       struct sp_cuda_device *dev, const struct sp_batch *host_batch,
                       const struct sp_batch *dev_batch, unsigned long seed, bool bf16) {
    size_t n = m->n_layers, B = m->bound_batch;
    struct sp_stage_exec *cpu = NULL;
    if (sp_stage_exec_create(ctx, m, 0, n - 1, 1, seed, &cpu) != SP_OK) {
        fprintf(stderr, "stagepart-model-cuda: %s\n", sp_ctx_get_errmsg(ctx));
        return 2;
    }
    float *loss_cpu = calloc(B, sizeof *loss_cpu), *loss_gpu = calloc(B, sizeof *loss_gpu);
    float *loss_dev = NULL;
    size_t biggest = 1;
    for (size_t k = 0; k < n; k++) {
        const struct sp_model_layer *L = &m->layers[k];
        biggest = L->param_elems > biggest ? L->param_elems : biggest;
        biggest = L->saved_elems > biggest ? L->saved_elems : biggest;
    }
    float *host = malloc(biggest * sizeof *host);
    int code = 0;
    if (!loss_cpu || !loss_gpu || !host || cudaMalloc((void **)&loss_dev, B * sizeof *loss_dev)) {
        fprintf(stderr, "stagepart-model-cuda: out of memory for the comparison\n");
        code = 2;
    }
    char why[256] = "copying the loss back";
    if (code == 0) {
        sp_stage_exec_forward(cpu, 0, host_batch, loss_cpu, NULL);
        sp_stage_exec_backward(cpu, 0, host_batch, NULL, NULL, NULL, NULL);
        sp_stage_exec_forward(gpu, 0, dev_batch, loss_dev, NULL);
        sp_stage_exec_backward(gpu, 0, dev_batch, NULL, NULL, NULL, NULL);
        if (!gpu->be->synchronize(dev, why, sizeof why) ||
            !gpu->be->download(dev, loss_gpu, loss_dev, B * sizeof *loss_gpu)) {
            fprintf(stderr, "stagepart-model-cuda: the GPU step failed: %s\n", why);
            code = 1;
        }
    }
    /* fp32 products agree to rounding; bf16 inputs carry 8 bits of mantissa */
    double tol = bf16 ? 5e-2 : 2e-3;
    double worst = 0.0;
    if (code == 0) {
        double e = rel_error(loss_gpu, loss_cpu, B);
        printf("%-16s %-12s rel. error %.2e\n", "loss", "", e);
        worst = e;
    }
    for (size_t k = 0; code == 0 && k < n; k++) {
        const struct sp_model_layer *L = &m->layers[k];
        /* the saved area: the layer's input and every inner tensor of the forward */
        if (!gpu->be->download(dev, host, gpu->saved[k], L->saved_elems * sizeof *host)) {
            code = 1;
            break;
        }
        double es = rel_error(host, cpu->saved[k], L->saved_elems);
        if (!gpu->be->download(dev, host, gpu->dparams[k], L->param_elems * sizeof *host)) {
            code = 1;
            break;
        }
        double eg = L->param_elems ? rel_error(host, cpu->dparams[k], L->param_elems) : 0.0;
        printf("%-16.16s %-12.12s saved rel. error %.2e, gradients %.2e\n", L->name, L->kind, es,
               eg);
        worst = es > worst ? es : worst;
        worst = eg > worst ? eg : worst;
    }
    if (code == 0 && worst > tol) {
        printf("FAIL: largest relative error %.2e exceeds %.0e\n", worst, tol);
        code = 1;
    } else if (code == 0) {
        printf("ok: GPU and CPU agree (largest relative error %.2e, tolerance %.0e)\n", worst, tol);
    }
    cudaFree(loss_dev);
    free(loss_cpu);
    free(loss_gpu);
    free(host);
    sp_stage_exec_destroy(cpu);
    return code;
}

static int train(const struct args *a, struct sp_stage_exec *se, const struct sp_batch *b) {
    const struct sp_model *m = se->m;
    const struct sp_exec_backend *be = se->be;
    push_named("stagepart/setup");
    float *loss_stage = be->alloc_zeroed(be->device, m->bound_batch * sizeof(float));
    pop();
    float *loss = calloc(m->bound_batch, sizeof *loss);
    int code = 0;
    char msg[256];
    if (!loss || !loss_stage) {
        fprintf(stderr, "stagepart-model-cuda: out of memory for the loss\n");
        code = 4;
    }
    for (unsigned long s = 0; code == 0 && s < a->steps; s++) {
        bool ok = train_step(se, b, loss_stage, loss, a->lr);
        if (!ok || stage_failed(se, msg, sizeof msg)) {
            fprintf(stderr, "stagepart-model-cuda: step %lu failed: %s\n", s,
                    ok ? msg : "copying the loss back");
            code = 1;
            break;
        }
        double mean = 0.0;
        for (uint32_t k = 0; k < m->bound_batch; k++)
            mean += (double)loss[k];
        printf("step %lu loss %.6f\n", s, mean / m->bound_batch);
        fflush(stdout);
    }
    if (loss_stage)
        be->release(be->device, loss_stage);
    free(loss);
    return code;
}

int main(int argc, char **argv) {
    struct args a;
    int code = parse_args(argc, argv, &a);
    if (code)
        return code;
    int devices = 0;
    if (!a.cpu && (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0)) {
        fprintf(stderr, "stagepart-model-cuda: no CUDA device\n");
        return EXIT_SKIP;
    }
    sp_ctx *ctx = NULL;
    sp_model *model = NULL;
    if (sp_ctx_create(&ctx) != SP_OK)
        return 2;
    if (sp_model_load(ctx, a.model, &model) != SP_OK ||
        ((a.batch || a.seq) &&
         sp_model_set_shape(ctx, model, (uint32_t)a.batch, (uint32_t)a.seq) != SP_OK)) {
        fprintf(stderr, "stagepart-model-cuda: %s\n", sp_ctx_get_errmsg(ctx));
        sp_model_destroy(model);
        sp_ctx_destroy(ctx);
        return 2;
    }
    struct sp_model *m = (struct sp_model *)model;
    bool bf16 = !a.fp32 && strcmp(m->dtype, "bf16") == 0;
    struct sp_cuda_device dev;
    memset(&dev, 0, sizeof dev);
    struct sp_exec_backend be = sp_exec_backend_cpu;
    struct sp_stage_exec *se = NULL;
    struct sp_batch host_batch, dev_batch;
    memset(&dev_batch, 0, sizeof dev_batch);
    const char *why = "";
    CUgreenCtx green = NULL; /* --sms: the partition the model runs on */
    if (a.sms) {
        unsigned got = 0;
        sp_status st = sp_cuda_sm_partitions(ctx, 0, 1, (unsigned)a.sms, &green, &got);
        if (st != SP_OK) {
            fprintf(stderr, "stagepart-model-cuda: --sms %lu: %s\n", a.sms, sp_ctx_get_errmsg(ctx));
            sp_model_destroy(model);
            sp_ctx_destroy(ctx);
            return st == SP_ERR_INVALID_ARG ? 2 : 4;
        }
        fprintf(stderr, "stagepart-model-cuda: on %u SMs of GPU 0 (a green context)\n", got);
    }
    if (!a.cpu) {
        if (!sp_cuda_device_open(&dev, 0, green, bf16 ? "bf16" : "fp32",
                                 sp_cuda_extra_elems(m, 0, m->n_layers - 1), &why)) {
            fprintf(stderr, "stagepart-model-cuda: %s\n", why);
            if (green)
                sp_cu_driver()->GreenCtxDestroy(green);
            sp_model_destroy(model);
            sp_ctx_destroy(ctx);
            return 4;
        }
        sp_cuda_backend_init(&be, &dev);
    }
    code = 0;
    /* the weights made and uploaded, the micro-batch uploaded: GPU work outside every step,
     * named so that a profile says where it went (not "launched outside every range") */
    push_named("stagepart/setup");
    if (sp_batch_make(ctx, m, a.seed, &host_batch) != SP_OK) {
        fprintf(stderr, "stagepart-model-cuda: %s\n", sp_ctx_get_errmsg(ctx));
        code = 2;
    } else if (!a.cpu && (!sp_batch_alloc_on(&be, m, &dev_batch) ||
                          !sp_batch_upload(&be, m, &host_batch, &dev_batch))) {
        fprintf(stderr, "stagepart-model-cuda: out of device memory for a micro-batch\n");
        code = 4;
    } else if (sp_stage_exec_create_on(ctx, &be, m, 0, m->n_layers - 1, 1, a.seed, &se) != SP_OK) {
        fprintf(stderr, "stagepart-model-cuda: %s\n", sp_ctx_get_errmsg(ctx));
        code = 4;
    }
    pop();
    if (code == 0 && a.compare)
        code = compare_cpu(ctx, m, se, &dev, &host_batch, &dev_batch, a.seed, bf16);
    else if (code == 0)
        code = train(&a, se, a.cpu ? &host_batch : &dev_batch);
    sp_stage_exec_destroy(se);
    if (!a.cpu) {
        sp_batch_release_on(&be, &dev_batch);
        sp_cuda_device_close(&dev);
    }
    if (green)
        sp_cu_driver()->GreenCtxDestroy(green);
    sp_batch_release(&host_batch);
    sp_model_destroy(model);
    sp_ctx_destroy(ctx);
    return code;
}

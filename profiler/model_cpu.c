/* profiler/model_cpu.c: `stagepart profile MODEL --backend cpu`: a built-in model run forward
 * and backward on one pinned thread, every layer timed with the monotonic clock.
 *
 * One thread, pinned to one core, OpenBLAS on one thread: a pipeline stage on the CPU runs the
 * same way (runtime/), so these are the times a CPU pipeline sees. Each iteration runs the whole
 * chain forward then backward on the same micro-batch; the profile holds the medians over the
 * timed iterations, and each layer's spread under "measured" so a user can judge them. */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "blas.h"
#include "json_util.h"
#include "profile_doc.h"
#include "stage_exec.h"

void sp_model_profile_opts_init(sp_model_profile_opts *o) {
    memset(o, 0, sizeof *o);
    o->warmup = 1;
    o->iters = 5;
    o->core = -1;
    o->seed = 1;
}

struct profile_run {
    sp_ctx *ctx;
    const sp_model *m;
    const sp_model_profile_opts *o;
    double *fwd, *bwd, *wgrad; /* [iter * n + layer] */
    sp_status status;
    int core;
};

static int pick_core(int wanted) {
    if (wanted >= 0)
        return wanted;
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) != 0)
        return -1;
    for (int c = CPU_SETSIZE - 1; c >= 0; c--)
        if (CPU_ISSET(c, &set))
            return c;
    return -1;
}

static void *measure(void *p) {
    struct profile_run *r = p;
    const sp_model *m = r->m;
    size_t n = m->n_layers;
    if (r->core >= 0) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(r->core, &set);
        if (pthread_setaffinity_np(pthread_self(), sizeof set, &set) != 0)
            r->core = -1;
    }
    struct sp_stage_exec *se = NULL;
    struct sp_batch batch;
    float *loss = sp_calloc(m->bound_batch, sizeof *loss);
    double *w = sp_calloc(n, sizeof *w);
    r->status = loss && w ? sp_batch_make(r->ctx, m, r->o->seed, &batch)
                          : sp_oom(r->ctx, "the profile's timers");
    if (r->status == SP_OK) {
        r->status = sp_stage_exec_create(r->ctx, m, 0, n - 1, 1, r->o->seed, &se);
        if (r->status != SP_OK)
            sp_batch_release(&batch);
    }
    uint32_t total = r->o->warmup + r->o->iters;
    for (uint32_t it = 0; r->status == SP_OK && it < total; it++) {
        if (r->o->cancel && sp_cancel_requested(r->o->cancel)) {
            r->status = sp_fail(r->ctx, SP_ERR_INTERRUPTED,
                                "%s: profiling interrupted after %u "
                                "of %u iterations",
                                m->name, it, total);
            break;
        }
        bool timed = it >= r->o->warmup;
        size_t row = timed ? (size_t)(it - r->o->warmup) * n : 0;
        double *fwd = timed ? r->fwd + row : w, *bwd = timed ? r->bwd + row : w;
        sp_stage_exec_forward(se, 0, &batch, loss, fwd);
        sp_stage_exec_backward(se, 0, &batch, NULL, NULL, bwd, timed ? r->wgrad + row : w);
        sp_stage_exec_sgd(se, 0.0f); /* zero the gradients: every iteration does the same work */
        if (r->o->progress)
            r->o->progress(r->o->progress_arg, it + 1, total);
    }
    if (se) {
        sp_stage_exec_destroy(se);
        sp_batch_release(&batch);
    }
    sp_free(loss);
    sp_free(w);
    return NULL;
}

/* median and population stddev of v[k * stride], k < count; tmp[count] scratch */
static void stats(const double *v, size_t stride, size_t count, double *tmp, double *median,
                  double *stddev) {
    double mean = 0.0;
    for (size_t k = 0; k < count; k++)
        mean += (tmp[k] = v[k * stride]);
    mean /= (double)count;
    *median = sp_median(tmp, count);
    double sq = 0.0;
    for (size_t k = 0; k < count; k++)
        sq += (tmp[k] - mean) * (tmp[k] - mean);
    *stddev = sqrt(sq / (double)count);
}

static void cpu_name(char *out, size_t cap) {
    snprintf(out, cap, "cpu");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return;
    char line[512];
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "model name", 10) == 0) {
            const char *c = strchr(line, ':');
            if (c) {
                c += 1 + (c[1] == ' ');
                snprintf(out, cap, "%s", c);
                out[strcspn(out, "\n")] = '\0';
            }
            break;
        }
    fclose(f);
}

static bool num(cJSON *o, const char *k, double v) {
    return cJSON_AddNumberToObject(o, k, v) != NULL;
}

static bool phase(cJSON *meas, const char *key, double median, double stddev) {
    cJSON *o = cJSON_AddObjectToObject(meas, key);
    return o && num(o, "median_ms", median) && num(o, "stddev_ms", stddev);
}

/* the measurements, on a thread of their own pinned to the run's core, with one BLAS thread: the
 * measuring thread does all the work, as a pipeline stage does */
static sp_status measure_on_thread(struct profile_run *run) {
    int blas_threads = sp_blas_threads();
    sp_blas_set_threads(1);
    pthread_t thread;
    int why = pthread_create(&thread, NULL, measure, run);
    if (why != 0) /* only out of resources: its stack, under a memory limit */
        run->status = sp_fail(run->ctx, sp_thread_start_status(why),
                              "cannot start the measuring thread: %s%s", strerror(why),
                              sp_thread_start_hint(why));
    else
        pthread_join(thread, NULL);
    sp_blas_set_threads(blas_threads);
    return run->status;
}

/* the median iteration: every layer's fwd + bwd summed per iteration */
static sp_status iteration_median(struct profile_run *run, double *tmp, double *out) {
    size_t n = run->m->n_layers;
    uint32_t iters = run->o->iters;
    double *it_ms = sp_mallocarray(iters, sizeof(double)), sd;
    if (!it_ms)
        return sp_oom(run->ctx, "the profile");
    for (uint32_t it = 0; it < iters; it++) {
        it_ms[it] = 0.0;
        for (size_t l = 0; l < n; l++)
            it_ms[it] += run->fwd[it * n + l] + run->bwd[it * n + l];
    }
    stats(it_ms, 1, iters, tmp, out, &sd);
    sp_free(it_ms);
    return SP_OK;
}

static bool add_meta(cJSON *meas, const struct profile_run *run, const char *cpu,
                     double iteration) {
    const sp_model *m = run->m;
    char when[32] = "";
    time_t now = time(NULL);
    struct tm tm;
    if (gmtime_r(&now, &tm))
        strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return meas && cJSON_AddStringToObject(meas, "backend", "cpu") &&
           cJSON_AddStringToObject(meas, "collector", "host monotonic clock per layer") &&
           cJSON_AddStringToObject(meas, "created", when) &&
           cJSON_AddStringToObject(meas, "cpu", cpu) && num(meas, "core", run->core) &&
           num(meas, "blas_threads", 1) &&
           cJSON_AddStringToObject(meas, "blas", sp_blas_config()) &&
           cJSON_AddStringToObject(meas, "dtype", "fp32") &&
           cJSON_AddStringToObject(meas, "model_dtype", m->dtype) &&
           num(meas, "seq_len", m->tokens ? m->bound_seq : 0) &&
           num(meas, "iterations", run->o->iters) && num(meas, "warmup", run->o->warmup) &&
           num(meas, "iteration_ms", iteration);
}

/* the spread of the layers' fwd + bwd: the coefficient of variation, over layers that take at
 * least 1% of the iteration (tiny layers' relative noise says little) */
struct cv_figures {
    double *cv; /* [n], those layers' */
    size_t n_cv, max_cv_layer;
    double max_cv;
};

/* each layer's medians and spreads into the document (and `layers`, when asked) */
static bool fill_layers(struct sp_profile_doc *doc, struct profile_run *run, double *tmp,
                        double iteration, sp_model_layer_timing *layers, struct cv_figures *f) {
    const sp_model *m = run->m;
    size_t n = m->n_layers;
    uint32_t iters = run->o->iters;
    bool ok = true;
    for (size_t l = 0; ok && l < n; l++) {
        const struct sp_model_layer *L = &m->layers[l];
        double fm, fs, bm, bs, wm, ws, tm_, ts;
        stats(run->fwd + l, n, iters, tmp, &fm, &fs);
        stats(run->bwd + l, n, iters, tmp, &bm, &bs);
        stats(run->wgrad + l, n, iters, tmp, &wm, &ws);
        for (uint32_t it = 0; it < iters; it++) /* fwd + bwd per iteration */
            run->wgrad[it * n + l] = run->fwd[it * n + l] + run->bwd[it * n + l];
        stats(run->wgrad + l, n, iters, tmp, &tm_, &ts);
        double c = tm_ > 0.0 ? ts / tm_ : 0.0;
        if (tm_ >= 0.01 * iteration) {
            f->cv[f->n_cv++] = c;
            if (c > f->max_cv)
                f->max_cv = c, f->max_cv_layer = l;
        }
        uint64_t param = (uint64_t)L->param_elems * 4;
        cJSON *ms = cJSON_CreateObject();
        doc->layers[l] =
            (struct sp_profile_doc_layer){.name = L->name,
                                          .kind = L->kind,
                                          .fwd_ms = fm,
                                          .bwd_ms = bm,
                                          .wgrad_ms = wm < bm ? wm : bm,
                                          .has_activation_bytes = true,
                                          .activation_bytes = (uint64_t)L->out_elems * 4,
                                          .has_model_bytes = true,
                                          .saved_bytes = (uint64_t)L->saved_elems * 4,
                                          .param_bytes = param,
                                          .memory_bytes = 2 * param,
                                          .measured = ms};
        if (layers)
            layers[l] = (sp_model_layer_timing){fm, bm, wm < bm ? wm : bm, c};
        ok = ms && num(ms, "samples", iters) && phase(ms, "fwd", fm, fs) &&
             phase(ms, "bwd", bm, bs) && phase(ms, "wgrad", wm, ws) && num(ms, "cv", c) &&
             num(ms, "fwd_flops", (double)L->fwd_flops);
    }
    return ok;
}

/* the profile document of the measurements, as JSON */
static sp_status write_profile(struct profile_run *run, double *tmp, double *cv, double iteration,
                               char **json, sp_model_profile_summary *summary,
                               sp_model_layer_timing *layers) {
    const sp_model *m = run->m;
    char cpu[256], source[768];
    cpu_name(cpu, sizeof cpu);
    snprintf(source, sizeof source,
             "stagepart profile (CPU backend): %s, fp32 on one thread pinned to core %d "
             "(OpenBLAS sgemm), medians of %u iterations after %u warm-up",
             cpu, run->core, run->o->iters, run->o->warmup);
    struct sp_profile_doc doc = {.model = run->o->model_name ? run->o->model_name : m->name,
                                 .source = source,
                                 .device = cpu,
                                 .micro_batch_size = m->bound_batch,
                                 .measurement = cJSON_CreateObject(),
                                 .layers = sp_calloc(m->n_layers, sizeof *doc.layers),
                                 .n_layers = m->n_layers};
    cJSON *meas = doc.measurement;
    struct cv_figures f = {.cv = cv};
    bool ok = doc.layers && add_meta(meas, run, cpu, iteration) &&
              fill_layers(&doc, run, tmp, iteration, layers, &f);
    double median_cv = sp_median(cv, f.n_cv);
    ok = ok && num(meas, "max_cv", f.max_cv) &&
         cJSON_AddStringToObject(meas, "max_cv_layer", m->layers[f.max_cv_layer].name) &&
         num(meas, "median_cv", median_cv) &&
         cJSON_AddStringToObject(meas, "cv_over", "layers taking at least 1% of the iteration") &&
         cJSON_AddStringToObject(meas, "memory_bytes", "weights + gradients (SGD)");
    sp_status st;
    if (ok) {
        st = sp_profile_doc_to_json(run->ctx, &doc, json);
    } else {
        sp_profile_doc_release(&doc);
        st = sp_oom(run->ctx, "the profile");
    }
    sp_free(doc.layers);
    if (st == SP_OK && summary) {
        summary->iteration_ms = iteration;
        summary->max_cv = f.max_cv;
        summary->max_cv_layer = m->layers[f.max_cv_layer].name;
        summary->median_cv = median_cv;
        summary->threads = 1;
        summary->core = run->core;
    }
    return st;
}

sp_status sp_model_profile_cpu(sp_ctx *ctx, const sp_model *m, const sp_model_profile_opts *opts,
                               char **json, sp_model_profile_summary *summary,
                               sp_model_layer_timing *layers) {
    if (!ctx || !m || !json)
        return ctx ? sp_fail(ctx, SP_ERR_INVALID_ARG, "sp_model_profile_cpu: NULL argument")
                   : SP_ERR_INVALID_ARG;
    sp_ctx_begin(ctx);
    *json = NULL;
    sp_model_profile_opts dflt;
    if (!opts) {
        sp_model_profile_opts_init(&dflt);
        opts = &dflt;
    }
    if (opts->iters < 1 || opts->iters > 100000 || opts->warmup > 100000)
        return sp_fail(ctx, SP_ERR_INVALID_ARG,
                       "iterations must be in [1, 100000] and warm-up at most 100000 (got %u, %u)",
                       opts->iters, opts->warmup);
    size_t n = m->n_layers, samples = (size_t)opts->iters * n;
    struct profile_run run = {ctx, m, opts, NULL, NULL, NULL, SP_OK, pick_core(opts->core)};
    run.fwd = sp_mallocarray(samples, sizeof(double));
    run.bwd = sp_mallocarray(samples, sizeof(double));
    run.wgrad = sp_mallocarray(samples, sizeof(double));
    double *tmp = sp_mallocarray(opts->iters + 1, sizeof(double));
    double *cv = sp_mallocarray(n, sizeof(double));
    double iteration = 0.0;
    sp_status st =
        run.fwd && run.bwd && run.wgrad && tmp && cv ? SP_OK : sp_oom(ctx, "the profile's timers");
    if (st == SP_OK)
        st = measure_on_thread(&run);
    if (st == SP_OK)
        st = iteration_median(&run, tmp, &iteration);
    if (st == SP_OK)
        st = write_profile(&run, tmp, cv, iteration, json, summary, layers);
    sp_free(run.fwd);
    sp_free(run.bwd);
    sp_free(run.wgrad);
    sp_free(tmp);
    sp_free(cv);
    return st;
}

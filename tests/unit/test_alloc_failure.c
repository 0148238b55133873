/* tests/unit/test_alloc_failure.c: every public call under allocation failure. For each
 * scenario (a whole operation, from reading the input to freeing the results) the allocator
 * fails every allocation from the N-th on, for N = 0, 1, 2, ... until the scenario succeeds;
 * each failing run must return an error with a message and give back every byte it took (the
 * wrapper counts live blocks). Large scenarios are sampled with a stride so the test stays
 * under a few seconds. SQLite (import nsys) and GLPK allocate with their own allocators and are
 * not covered here.
 *   test_alloc_failure SRC_DIR */
#include <pthread.h>
#include <stagepart/stagepart.h>
#include <stdint.h>
#include <string.h>

#include "../test.h"

static long budget = -1; /* allocations left before failing; -1: never fail */
static long live, made;
/* the profiler and the runtime allocate from their worker threads */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

static void *t_malloc_locked(size_t n);
static void *t_malloc(size_t n) {
    pthread_mutex_lock(&mu);
    void *p = t_malloc_locked(n);
    pthread_mutex_unlock(&mu);
    return p;
}
static void *t_malloc_locked(size_t n) {
    if (budget == 0)
        return NULL;
    if (budget > 0)
        budget--;
    size_t *p = malloc(n + 16);
    if (!p)
        return NULL;
    *p = n;
    live++;
    made++;
    return (char *)p + 16;
}
static void t_free(void *ptr) {
    if (!ptr)
        return;
    pthread_mutex_lock(&mu);
    live--;
    pthread_mutex_unlock(&mu);
    free((char *)ptr - 16);
}
static void *t_realloc_locked(void *ptr, size_t n);
static void *t_realloc(void *ptr, size_t n) {
    pthread_mutex_lock(&mu);
    void *p = t_realloc_locked(ptr, n);
    pthread_mutex_unlock(&mu);
    return p;
}
static void *t_realloc_locked(void *ptr, size_t n) {
    if (!ptr)
        return t_malloc_locked(n);
    if (budget == 0)
        return NULL; /* the old block stays the caller's */
    if (budget > 0)
        budget--;
    size_t *p = realloc((char *)ptr - 16, n + 16);
    if (!p)
        return NULL;
    *p = n;
    made++;
    return (char *)p + 16;
}

static const char *src;
static char path_buf[4][512];
static const char *at(int slot, const char *rel) {
    snprintf(path_buf[slot], sizeof path_buf[slot], "%s/%s", src, rel);
    return path_buf[slot];
}

/* ---- scenarios: each returns the first failing status (SP_OK when all went through) */
static sp_status profile_partition_simulate(sp_ctx *ctx) {
    sp_profile *p = NULL;
    sp_plan *plan = NULL;
    sp_sim *sim = NULL;
    char *json = NULL, *text = NULL, *code = NULL, *value = NULL;
    sp_status st = sp_profile_load(ctx, at(0, "samples/profiles/bert-large.json"), &p);
    sp_partition_opts o;
    sp_partition_opts_init(&o);
    o.stages = 4;
    if (st == SP_OK)
        st = sp_partition(ctx, p, &o, &plan);
    sp_sim_opts so;
    sp_sim_opts_init(&so);
    if (st == SP_OK)
        st = sp_simulate(ctx, plan, &so, &sim);
    if (st == SP_OK)
        st = sp_sim_to_json(ctx, sim, &json);
    if (st == SP_OK)
        st = sp_plan_to_json(ctx, plan, &text);
    if (st == SP_OK)
        st = sp_plan_export(ctx, plan, SP_EXPORT_PIPPY, NULL, &code, &value);
    sp_free(json);
    sp_free(text);
    sp_free(code);
    sp_free(value);
    sp_sim_destroy(sim);
    sp_plan_destroy(plan);
    sp_profile_destroy(p);
    return st;
}

static sp_status plan_links_devices(sp_ctx *ctx) {
    sp_plan *plan = NULL;
    sp_links *l = NULL;
    sp_devices *d = NULL;
    sp_run_report_summary r;
    sp_status st = sp_plan_load(ctx, at(0, "tests/data/llama3-8b-4-plan.json"), &plan);
    if (st == SP_OK)
        st = sp_links_load(ctx, at(1, "samples/links/two-nodes-8.json"), &l);
    if (st == SP_OK)
        st = sp_devices_load(ctx, at(2, "samples/devices/two-speeds-8.json"), &d);
    if (st == SP_OK)
        st = sp_run_report_load(ctx, at(3, "tests/data/run-report.json"), &r);
    sp_devices_destroy(d);
    sp_links_destroy(l);
    sp_plan_destroy(plan);
    return st;
}

static sp_status trace_to_profile(sp_ctx *ctx, sp_trace *t) {
    sp_trace_profile_opts o;
    sp_trace_profile_opts_init(&o);
    char *json = NULL;
    sp_status st = sp_trace_to_profile(ctx, t, &o, &json, NULL);
    sp_free(json);
    return st;
}

static sp_status kineto(sp_ctx *ctx) {
    sp_trace *t = NULL;
    sp_status st = sp_trace_load_kineto(ctx, at(0, "tests/fuzz/seeds/kineto/small.json"), &t);
    if (st == SP_OK)
        st = trace_to_profile(ctx, t);
    sp_trace_destroy(t);
    return st;
}

static sp_status events(sp_ctx *ctx) {
    sp_trace *t = NULL;
    const char *paths[] = {at(0, "tests/fuzz/seeds/events/two-steps.splog")};
    sp_status st = sp_trace_load_events(ctx, paths, 1, &t);
    if (st == SP_OK)
        st = trace_to_profile(ctx, t);
    sp_trace_destroy(t);
    return st;
}

/* a built-in model: read, profiled on the CPU, planned from its profile, run on 2 threads */
static sp_status model_profile_run(sp_ctx *ctx) {
    sp_model *m = NULL;
    sp_profile *p = NULL;
    sp_plan *plan = NULL;
    sp_run *run = NULL;
    char *json = NULL, *report = NULL;
    sp_status st = sp_model_load(ctx, at(0, "tests/fuzz/seeds/model/tiny_tokens.json"), &m);
    sp_model_profile_opts po;
    sp_model_profile_opts_init(&po);
    po.warmup = 0;
    po.iters = 1;
    if (st == SP_OK)
        st = sp_model_profile_cpu(ctx, m, &po, &json, NULL, NULL);
    if (st == SP_OK)
        st = sp_profile_parse(ctx, "profile", json, strlen(json), &p);
    sp_partition_opts o;
    sp_partition_opts_init(&o);
    o.stages = 2;
    o.micro_batches = 2;
    static const size_t split[] = {0, 4};
    if (st == SP_OK)
        st = sp_plan_from_split(ctx, p, &o, split, 2, &plan);
    sp_run_opts ro;
    sp_run_opts_init(&ro);
    ro.steps = 1;
    ro.warmup_steps = 0;
    if (st == SP_OK)
        st = sp_run_plan(ctx, plan, m, &ro, &run);
    if (st == SP_OK)
        st = sp_run_to_json(ctx, run, &report);
    sp_free(report);
    sp_free(json);
    sp_run_destroy(run);
    sp_plan_destroy(plan);
    sp_profile_destroy(p);
    sp_model_destroy(m);
    return st;
}

static char last_msg[512]; /* the last run's error message */

/* One run with a fresh context (made before the budget starts): its status, and whether every
 * block it took came back once the context is gone. */
static sp_status run_once(sp_status (*scenario)(sp_ctx *), long fail_at, bool *has_msg,
                          long *leaked) {
    long before = live;
    sp_ctx *ctx = NULL;
    if (sp_ctx_create(&ctx) != SP_OK)
        return SP_ERR_NOMEM;
    budget = fail_at;
    sp_status st = scenario(ctx);
    budget = -1;
    const char *msg = sp_ctx_get_errmsg(ctx);
    *has_msg = msg && *msg;
    snprintf(last_msg, sizeof last_msg, "%s", msg ? msg : "");
    sp_ctx_destroy(ctx);
    *leaked = live - before;
    return st;
}

/* also_ok: a status besides SP_ERR_NOMEM that a failing allocation may be reported as
 * (SP_ERR_INFEASIBLE: a pipeline stage that cannot allocate its layers means the plan does not
 * fit, exit 3), or SP_OK for none */
static void run(const char *name, sp_status (*scenario)(sp_ctx *), sp_status also_ok) {
    bool has_msg;
    long leaked;
    made = 0;
    sp_status st = run_once(scenario, -1, &has_msg, &leaked);
    SP_CHECK_MSG(st == SP_OK, "%s: the clean run failed: %s", name, sp_status_name(st));
    SP_CHECK_MSG(leaked == 0, "%s: the clean run leaked %ld blocks", name, leaked);
    long total = made, stride = total > 3000 ? total / 3000 : 1, failures = 0, nomem = 0;
    for (long n = 0; n < total; n += stride) {
        st = run_once(scenario, n, &has_msg, &leaked);
        if (st == SP_OK)
            continue; /* a later allocation was optional (a growth that was not needed) */
        failures++;
        nomem += st == SP_ERR_NOMEM;
        SP_CHECK_MSG(has_msg, "%s: failing allocation %ld: %s without a message", name, n,
                     sp_status_name(st));
        SP_CHECK_MSG(st == SP_ERR_NOMEM || (also_ok != SP_OK && st == also_ok),
                     "%s: failing allocation %ld reported as %s: %s", name, n, sp_status_name(st),
                     last_msg);
        SP_CHECK_MSG(leaked == 0, "%s: failing allocation %ld: %s, %ld blocks leaked", name, n,
                     sp_status_name(st), leaked);
        if (leaked)
            break; /* one report per scenario is enough */
    }
    printf("%-28s %6ld allocations, %5ld failing runs checked (%ld SP_ERR_NOMEM)\n", name, total,
           failures, nomem);
}

int main(int argc, char **argv) {
    src = argc > 1 ? argv[1] : ".";
    SP_CHECK_STATUS(sp_set_allocator(t_malloc, t_realloc, t_free), SP_OK);
    run("profile/partition/simulate", profile_partition_simulate, SP_OK);
    run("plan/links/devices/report", plan_links_devices, SP_OK);
    run("import kineto", kineto, SP_OK);
    run("import events", events, SP_OK);
    run("model/profile/run", model_profile_run, SP_ERR_INFEASIBLE);
    sp_set_allocator(NULL, NULL, NULL);
    printf("%d checks, %d failures\n", sp_test_checks, sp_test_failures);
    return sp_test_failures ? 1 : 0;
}

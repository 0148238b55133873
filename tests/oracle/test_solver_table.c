/* tests/oracle/test_solver_table.c: every solver of the table (sp_solver_at) that claims an
 * optimum against brute force.
 *
 * For each solver whose guarantee is exact or proven, and each objective it takes, random small
 * profiles are partitioned with options that select it (its --solver, a chunk layout it makes,
 * --placement search when it places), and the plan's objective is compared by value with the
 * least over every split the layers allow (every ordered choice of devices too, for a solver that
 * places), each split made a plan by sp_plan_from_split, so that the brute force measures with
 * the library's own cost model, not with the solver's code. The plan must also say the guarantee
 * the table claims. A solver or objective this file has no measure for fails the test: a new
 * exact solver comes with its oracle.
 *
 * And docs/partitioning.md's table of solvers says what the table says.
 *
 * Usage: test_solver_table [instances per solver and objective] [seed] [source dir]  (defaults
 * 60 and 1; without the source folder the docs are not read). */
#include <inttypes.h>
#include <math.h>
#include <stagepart/stagepart.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../test.h"

#define MAXN 10
#define MAXD 4

static sp_ctx *ctx;
static uint64_t rng_state;

static int rnd_int(int lo, int hi) {
    return lo + (int)(sp_test_random(&rng_state) % (uint64_t)(hi - lo + 1));
}

struct inst {
    int n, P, V, devices; /* devices: 0 for none (identical), else the list to place on */
    int fwd[MAXN], bwd[MAXN];
    double speed[MAXD];
};

/* the profile, its device list in the order `order` (NULL: as drawn) */
static sp_profile *profile_of(const struct inst *in, const int *order) {
    char buf[8192];
    size_t len = (size_t)snprintf(buf, sizeof buf,
                                  "{\"format\":\"stagepart-profile\",\"version\":1,\"model\":\"t\","
                                  "\"micro_batch_size\":1,\"layers\":[");
    for (int i = 0; i < in->n; i++)
        len += (size_t)snprintf(buf + len, sizeof buf - len,
                                "%s{\"name\":\"l%d\",\"fwd_ms\":%d,\"bwd_ms\":%d,\"wgrad_ms\":%g}",
                                i ? "," : "", i, in->fwd[i], in->bwd[i], in->bwd[i] / 2.0);
    len += (size_t)snprintf(buf + len, sizeof buf - len, "]");
    if (in->devices) {
        len += (size_t)snprintf(buf + len, sizeof buf - len, ",\"devices\":[");
        int count = order ? in->P : in->devices;
        for (int k = 0; k < count; k++) {
            int d = order ? order[k] : k;
            len +=
                (size_t)snprintf(buf + len, sizeof buf - len, "%s{\"name\":\"d%d\",\"speed\":%g}",
                                 k ? "," : "", d, in->speed[d]);
        }
        len += (size_t)snprintf(buf + len, sizeof buf - len, "]");
    }
    snprintf(buf + len, sizeof buf - len, "}");
    sp_profile *p = NULL;
    SP_CHECK_STATUS(sp_profile_parse(ctx, "table.json", buf, strlen(buf), &p), SP_OK);
    return p;
}

/* ---- the objective each solver minimizes, measured on a plan: a key compared in order */
struct key {
    double v[2];
};

static void device_loads(const sp_plan *plan, double *load, uint32_t P) {
    for (uint32_t d = 0; d < P; d++)
        load[d] = 0;
    /* by position in the pipeline (a placed stage's device is its index in the whole list) */
    bool v = sp_plan_get_summary(plan)->chunk_layout == SP_CHUNKS_V;
    for (uint32_t k = 0; k < sp_plan_get_stage_count(plan); k++)
        load[v && k >= P ? 2 * P - 1 - k : k % P] += sp_plan_get_stage(plan, k)->time_ms;
}

static double largest_chunk(const sp_plan *plan) {
    double m = 0;
    for (size_t k = 0; k < sp_plan_get_stage_count(plan); k++)
        m = fmax(m, sp_plan_get_stage(plan, k)->time_ms);
    return m;
}

/* false when this file has no measure for the solver's objective */
static bool measure(const char *solver, sp_objective objective, const sp_plan *plan,
                    struct key *out) {
    const sp_plan_summary *m = sp_plan_get_summary(plan);
    double load[MAXD];
    device_loads(plan, load, m->stages);
    double lo = (double)INFINITY, hi = 0, sum = 0, dev = 0;
    for (uint32_t d = 0; d < m->stages; d++) {
        lo = fmin(lo, load[d]);
        hi = fmax(hi, load[d]);
        sum += load[d];
    }
    for (uint32_t d = 0; d < m->stages; d++)
        dev += fabs(load[d] - sum / m->stages);
    out->v[1] = 0;
    /* the interleaved search: the least largest chunk, then the least largest device load
     * (docs/partitioning.md#interleaved-chunks---chunks-v); equal speeds make iteration the
     * same order */
    if (strcmp(solver, "interleaved") == 0 &&
        (objective == SP_OBJECTIVE_BOTTLENECK || objective == SP_OBJECTIVE_ITERATION)) {
        out->v[0] = largest_chunk(plan);
        out->v[1] = m->bottleneck_ms;
        return true;
    }
    bool chain = strcmp(solver, "dp") == 0 || strcmp(solver, "vshape") == 0;
    bool program = strcmp(solver, "ilp") == 0 || strcmp(solver, "placed") == 0;
    if (!chain && !program)
        return false;
    switch (objective) {
    case SP_OBJECTIVE_BOTTLENECK:
        out->v[0] = m->bottleneck_ms;
        return true;
    case SP_OBJECTIVE_VARIANCE: /* equal speeds: the total is every plan's */
        out->v[0] = m->stddev_ms;
        return chain;
    case SP_OBJECTIVE_ITERATION:
        out->v[0] = m->formula_iteration_ms;
        return strcmp(solver, "vshape") != 0;
    case SP_OBJECTIVE_RANGE:
        out->v[0] = hi - lo;
        return program;
    case SP_OBJECTIVE_DEVIATION:
        out->v[0] = dev;
        return program;
    }
    return false;
}

static int key_cmp(const struct key *a, const struct key *b) {
    for (int i = 0; i < 2; i++) {
        if (a->v[i] < b->v[i] - 1e-9)
            return -1;
        if (a->v[i] > b->v[i] + 1e-9)
            return 1;
    }
    return 0;
}

/* ---- brute force: every split into K non-empty chunks (and every device order) */
struct brute {
    const struct inst *in;
    const sp_solver_info *solver;
    sp_partition_opts opts; /* the options with solver "given" taken by sp_plan_from_split */
    sp_profile *profile;
    bool found;
    struct key best;
};

static void try_split(struct brute *b, size_t *first, size_t k, size_t K) {
    size_t n = (size_t)b->in->n;
    if (k == K) {
        sp_plan *plan = NULL;
        SP_CHECK_STATUS(sp_plan_from_split(ctx, b->profile, &b->opts, first, K, &plan), SP_OK);
        struct key key;
        SP_CHECK(measure(b->solver->name, b->opts.objective, plan, &key));
        if (!b->found || key_cmp(&key, &b->best) < 0)
            b->best = key;
        b->found = true;
        sp_plan_destroy(plan);
        return;
    }
    for (size_t f = first[k - 1] + 1; f + (K - k) <= n; f++) {
        first[k] = f;
        try_split(b, first, k + 1, K);
    }
}

static void try_orders(struct brute *b, int *order, int used, int k) {
    const struct inst *in = b->in;
    if (k == in->P) {
        b->profile = profile_of(in, order);
        size_t first[MAXN] = {0};
        try_split(b, first, 1, (size_t)in->P * in->V);
        sp_profile_destroy(b->profile);
        return;
    }
    for (int d = 0; d < in->devices; d++)
        if (!(used & (1 << d))) {
            order[k] = d;
            try_orders(b, order, used | (1 << d), k + 1);
        }
}

/* options that select `s` for this instance */
static void options_for(const sp_solver_info *s, sp_objective objective, const struct inst *in,
                        sp_partition_opts *o) {
    sp_partition_opts_init(o);
    o->stages = (uint32_t)in->P;
    o->solver = s->solver;
    o->objective = objective;
    o->chunks = (uint32_t)in->V;
    o->micro_batches = (uint32_t)(2 * in->P);
    o->time_limit_s = 60;
    if (s->layouts & SP_SOLVER_V_CHUNKS && in->V == 2 && !(s->layouts & SP_SOLVER_LOOP_CHUNKS))
        o->schedule = SP_SCHEDULE_ZBV;
    else if (in->V > 1)
        o->schedule = SP_SCHEDULE_INTERLEAVED;
    if (s->takes & SP_SOLVER_TAKES_PLACEMENT)
        o->placement = SP_PLACEMENT_SEARCH;
}

static void draw(const sp_solver_info *s, struct inst *in) {
    memset(in, 0, sizeof *in);
    in->P = rnd_int(2, 3);
    in->V = (s->layouts & SP_SOLVER_ONE_CHUNK) ? 1 : 2;
    if ((s->layouts & SP_SOLVER_LOOP_CHUNKS) && rnd_int(0, 1))
        in->V = 2;
    if (in->V == 2)
        in->P = 2;
    in->n = rnd_int(in->P * in->V, in->V == 2 ? 9 : 8);
    for (int i = 0; i < in->n; i++) {
        in->fwd[i] = rnd_int(0, 4);
        in->bwd[i] = rnd_int(0, 6);
    }
    if (s->takes & SP_SOLVER_TAKES_PLACEMENT) {
        in->devices = in->P + rnd_int(0, 1);
        in->n = in->n > 7 ? 7 : in->n;
        for (int d = 0; d < in->devices; d++)
            in->speed[d] = rnd_int(0, 1) ? 1.0 : 0.5;
    }
}

static int check_one(const sp_solver_info *s, sp_objective objective, int instances) {
    for (int it = 0; it < instances; it++) {
        struct inst in;
        draw(s, &in);
        sp_partition_opts o;
        options_for(s, objective, &in, &o);
        sp_profile *profile = profile_of(&in, NULL);
        sp_plan *plan = NULL;
        sp_status st = sp_partition(ctx, profile, &o, &plan);
        SP_CHECK_MSG(st == SP_OK, "%s, --objective %s: %s", s->name, sp_objective_name(objective),
                     sp_ctx_get_errmsg(ctx));
        if (st != SP_OK) {
            sp_profile_destroy(profile);
            return 1;
        }
        const sp_plan_summary *m = sp_plan_get_summary(plan);
        SP_CHECK_MSG(m->guarantee == s->guarantee, "%s says %s, the table %s", s->name,
                     sp_guarantee_name(m->guarantee), sp_guarantee_name(s->guarantee));
        SP_CHECK(m->optimal);
        struct key got;
        if (!measure(s->name, objective, plan, &got)) {
            SP_CHECK_MSG(false, "no brute force for solver %s, --objective %s: add one", s->name,
                         sp_objective_name(objective));
            sp_plan_destroy(plan);
            sp_profile_destroy(profile);
            return 1;
        }
        struct brute b = {.in = &in, .solver = s, .opts = o, .profile = profile};
        b.opts.solver = SP_SOLVER_GIVEN;
        b.opts.placement = SP_PLACEMENT_ORDER;
        if (in.devices) {
            int order[MAXD];
            try_orders(&b, order, 0, 0);
        } else {
            size_t first[MAXN] = {0};
            try_split(&b, first, 1, (size_t)in.P * in.V);
        }
        SP_CHECK_MSG(b.found && key_cmp(&got, &b.best) == 0,
                     "%s, --objective %s, n %d, P %d, V %d: the plan's %.6f/%.6f, brute force "
                     "%.6f/%.6f",
                     s->name, sp_objective_name(objective), in.n, in.P, in.V, got.v[0], got.v[1],
                     b.best.v[0], b.best.v[1]);
        sp_plan_destroy(plan);
        sp_profile_destroy(profile);
    }
    return 0;
}

/* docs/partitioning.md's table of solvers has a row for every solver of the table, with its
 * --solver and its guarantee */
static void check_docs(const char *src) {
    char path[4096];
    snprintf(path, sizeof path, "%s/docs/partitioning.md", src);
    FILE *f = fopen(path, "rb");
    SP_CHECK_MSG(f != NULL, "cannot open %s", path);
    if (!f)
        return;
    static char doc[1 << 20];
    size_t n = fread(doc, 1, sizeof doc - 1, f);
    doc[n] = '\0';
    fclose(f);
    for (size_t i = 0; i < sp_solver_count(); i++) {
        const sp_solver_info *s = sp_solver_at(i);
        char row[256];
        snprintf(row, sizeof row, "| `%s` | `%s`", s->name, sp_solver_name(s->solver));
        const char *at = strstr(doc, row);
        SP_CHECK_MSG(at != NULL, "docs/partitioning.md has no row '%s'", row);
        const char *end = at ? strchr(at, '\n') : NULL;
        char line[1024] = "";
        if (at && end)
            snprintf(line, sizeof line, "%.*s", (int)(end - at), at);
        const char *last = strrchr(line, '|') ? strrchr(line, '|') : line;
        while (last > line && last[-1] != '|')
            last--; /* the last cell: the guarantee */
        SP_CHECK_MSG(strstr(last, sp_guarantee_name(s->guarantee)) != NULL,
                     "docs/partitioning.md: row '%s' does not say its guarantee, %s", row,
                     sp_guarantee_name(s->guarantee));
    }
}

int main(int argc, char **argv) {
    int instances = argc > 1 ? atoi(argv[1]) : 60;
    rng_state = argc > 2 ? strtoull(argv[2], NULL, 10) : 1;
    sp_ctx_create(&ctx);
    int walked = 0;
    for (size_t i = 0; i < sp_solver_count(); i++) {
        const sp_solver_info *s = sp_solver_at(i);
        if (s->guarantee != SP_GUARANTEE_EXACT && s->guarantee != SP_GUARANTEE_PROVEN)
            continue;
        if (s->solver == SP_SOLVER_ILP && !strstr(sp_features(), "glpk")) {
            printf("test_solver_table: %s not walked: this build has no GLPK\n", s->name);
            continue;
        }
        for (int obj = 0; obj < 32; obj++)
            if (s->objectives & (1u << obj)) {
                check_one(s, (sp_objective)obj, instances);
                walked++;
            }
    }
    SP_CHECK(sp_solver_at(sp_solver_count()) == NULL);
    if (argc > 3)
        check_docs(argv[3]);
    printf("test_solver_table: %d solver-objective pairs against brute force\n", walked);
    sp_ctx_destroy(ctx);
    return sp_test_finish("test_solver_table");
}

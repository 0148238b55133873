/* partitioner/solver_table.c: the table of solvers, the one place that says which solver partitions
 * which options and what it proves, as curl describes its protocols by handlers; and the pick
 * that walks it. A solver's own refusals live in its check; what its flags say (layouts,
 * objectives, transfers, recomputation, placement) is checked here, once, with a message that
 * names the option and the solvers that do take it. Each solver writes what it proved into its
 * solution (sp_solution.guarantee); plan_finish.c records it, never the options asked for. */
#include <stdio.h>
#include <string.h>

#include "solver_table.h"

#define OBJ(o) (1u << (o))
#define OBJ_CHAIN                                                                                  \
    (OBJ(SP_OBJECTIVE_BOTTLENECK) | OBJ(SP_OBJECTIVE_VARIANCE) | OBJ(SP_OBJECTIVE_ITERATION))
#define OBJ_LINEAR                                                                                 \
    (OBJ(SP_OBJECTIVE_BOTTLENECK) | OBJ(SP_OBJECTIVE_ITERATION) | OBJ(SP_OBJECTIVE_RANGE) |        \
     OBJ(SP_OBJECTIVE_DEVIATION))

/* the DP minimizes a sum of squares at the least bottleneck: the least variance only when every
 * plan's total time is the same */
static sp_status dp_check(sp_ctx *ctx, const sp_partition_opts *o,
                          const struct sp_stage_devices *d) {
    if (o->objective == SP_OBJECTIVE_VARIANCE &&
        (d->speed || (o->links && o->comm == SP_COMM_BLOCKING)))
        return sp_fail(ctx, SP_ERR_INVALID_ARG,
                       "--objective variance needs devices of equal speed and overlapped "
                       "transfers: otherwise the total time differs between plans, so minimum "
                       "variance is not the minimum sum of squares this solver finds; use "
                       "--objective bottleneck or iteration");
    return SP_OK;
}

static sp_status placed_check(sp_ctx *ctx, const sp_partition_opts *o,
                              const struct sp_stage_devices *d) {
    (void)o;
    if (!d->list)
        return sp_fail(ctx, SP_ERR_INVALID_ARG,
                       "--placement search needs devices to choose from: --devices FILE, or a "
                       "profile with \"devices\"");
    return SP_OK;
}

static const char variance_linear[] =
    "the ilp solver is linear: variance is quadratic; use --objective deviation (the sum of "
    "|load - mean|), range or bottleneck";

static const struct sp_solver_desc solvers[] = {
    {.info = {"placed",
              "the GLPK program choosing every stage's device, the least bottleneck "
              "found exactly first",
              SP_SOLVER_ILP, SP_SOLVER_ONE_CHUNK | SP_SOLVER_LOOP_CHUNKS, OBJ_LINEAR,
              SP_SOLVER_TAKES_MEMORY | SP_SOLVER_TAKES_SPEEDS | SP_SOLVER_TAKES_LINKS |
                  SP_SOLVER_TAKES_RECOMPUTE | SP_SOLVER_TAKES_PLACEMENT,
              SP_GUARANTEE_PROVEN},
     .check = placed_check,
     .objective_refusal = variance_linear,
     .solve = sp_solve_placed},
    {.info = {"dp",
              "bisection and dynamic programming over the chain: the least bottleneck, "
              "then the least sum of squares",
              SP_SOLVER_DP, SP_SOLVER_ONE_CHUNK, OBJ_CHAIN,
              SP_SOLVER_TAKES_MEMORY | SP_SOLVER_TAKES_SPEEDS | SP_SOLVER_TAKES_LINKS |
                  SP_SOLVER_TAKES_BLOCKING,
              SP_GUARANTEE_EXACT},
     .check = dp_check,
     .solve = sp_solve_dp},
    {.info = {"vshape", "the V-shape DP: device d runs chunks d and 2P-1-d", SP_SOLVER_DP,
              SP_SOLVER_V_CHUNKS, OBJ(SP_OBJECTIVE_BOTTLENECK) | OBJ(SP_OBJECTIVE_VARIANCE),
              SP_SOLVER_TAKES_MEMORY | SP_SOLVER_TAKES_LINKS, SP_GUARANTEE_EXACT},
     .solve = sp_solve_vshape},
    {.info = {"vshape-iteration",
              "the least simulated iteration among the V-shape plans "
              "balanced under 17 device-load caps",
              SP_SOLVER_DP, SP_SOLVER_V_CHUNKS, OBJ(SP_OBJECTIVE_ITERATION),
              SP_SOLVER_TAKES_MEMORY | SP_SOLVER_TAKES_LINKS, SP_GUARANTEE_SEARCH},
     .solve = sp_solve_vshape_iteration},
    {.info = {"interleaved", "branch and bound over round boundaries, each cap proven",
              SP_SOLVER_DP, SP_SOLVER_LOOP_CHUNKS,
              OBJ(SP_OBJECTIVE_BOTTLENECK) | OBJ(SP_OBJECTIVE_ITERATION),
              SP_SOLVER_TAKES_MEMORY | SP_SOLVER_TAKES_SPEEDS | SP_SOLVER_TAKES_LINKS,
              SP_GUARANTEE_PROVEN},
     .objective_refusal =
         "the interleaved search minimizes the bottleneck and then balances the devices (the "
         "least sum of squared loads at that bottleneck); --objective variance has no cap to "
         "search under: use --objective bottleneck, or --solver ilp --objective deviation",
     .solve = sp_solve_interleaved},
    {.info = {"ilp", "a mixed-integer program on GLPK, started from the DP's plan", SP_SOLVER_ILP,
              SP_SOLVER_ONE_CHUNK | SP_SOLVER_LOOP_CHUNKS, OBJ_LINEAR,
              SP_SOLVER_TAKES_MEMORY | SP_SOLVER_TAKES_SPEEDS | SP_SOLVER_TAKES_LINKS |
                  SP_SOLVER_TAKES_RECOMPUTE,
              SP_GUARANTEE_PROVEN},
     .objective_refusal = variance_linear,
     .solve = sp_solve_ilp},
    {.info = {"uniform", "equal layer counts (Megatron-LM's default)", SP_SOLVER_UNIFORM,
              SP_SOLVER_ONE_CHUNK | SP_SOLVER_LOOP_CHUNKS | SP_SOLVER_V_CHUNKS, 0,
              SP_SOLVER_TAKES_SPEEDS | SP_SOLVER_TAKES_LINKS | SP_SOLVER_TAKES_BLOCKING,
              SP_GUARANTEE_NONE},
     .solve = sp_solve_uniform},
    {.info = {"parameters", "balanced param_bytes (DeepSpeed's partition_method=\"parameters\")",
              SP_SOLVER_PARAMETERS, SP_SOLVER_ONE_CHUNK, 0,
              SP_SOLVER_TAKES_SPEEDS | SP_SOLVER_TAKES_LINKS | SP_SOLVER_TAKES_BLOCKING,
              SP_GUARANTEE_NONE},
     .solve = sp_solve_parameters},
};

size_t sp_solver_count(void) {
    return SP_COUNT_OF(solvers);
}

const sp_solver_info *sp_solver_at(size_t index) {
    return index < SP_COUNT_OF(solvers) ? &solvers[index].info : NULL;
}

/* the options' chunk layout as an SP_SOLVER_*_CHUNKS bit (resolved options) */
static unsigned options_layout(const sp_partition_opts *o) {
    if (sp_schedule_chunk_layout(o->schedule) == SP_CHUNKS_V)
        return SP_SOLVER_V_CHUNKS;
    return o->chunks > 1 ? SP_SOLVER_LOOP_CHUNKS : SP_SOLVER_ONE_CHUNK;
}

/* what the options ask of a solver, one question per field */
struct wanted {
    sp_solver solver;
    unsigned layout;
    bool placement;
    sp_objective objective;
};

static bool takes_objective(const sp_solver_info *s, sp_objective objective) {
    return !s->objectives || (s->objectives & OBJ(objective));
}

/* "dp, ilp or uniform": the solvers asked for by --solver among the descriptors that `fits` */
static void solver_list(char *buf, size_t size, const struct wanted *w,
                        bool (*fits)(const sp_solver_info *, const struct wanted *)) {
    const char *names[SP_COUNT_OF(solvers)];
    size_t n = 0;
    for (size_t i = 0; i < SP_COUNT_OF(solvers); i++) {
        const sp_solver_info *s = &solvers[i].info;
        bool seen = false;
        for (size_t k = 0; k < n; k++)
            seen |= strcmp(names[k], sp_solver_name(s->solver)) == 0;
        if (fits(s, w) && !seen)
            names[n++] = sp_solver_name(s->solver);
    }
    buf[0] = '\0';
    for (size_t k = 0, len = 0; k < n && len < size; k++, len = strlen(buf))
        snprintf(buf + len, size - len, "%s%s", k == 0 ? "" : k + 1 == n ? " or " : ", ", names[k]);
}

static bool fits_placement(const sp_solver_info *s, const struct wanted *w) {
    return (s->layouts & w->layout) && !!(s->takes & SP_SOLVER_TAKES_PLACEMENT) == w->placement;
}
static bool fits_objective(const sp_solver_info *s, const struct wanted *w) {
    return fits_placement(s, w) && s->objectives && takes_objective(s, w->objective);
}

static const char *layout_words(unsigned layout) {
    return layout == SP_SOLVER_V_CHUNKS      ? "V-shape plans (2 chunks per device)"
           : layout == SP_SOLVER_LOOP_CHUNKS ? "chunks placed in a loop (--chunks V)"
                                             : "one chunk per device";
}

/* no descriptor answers every question: say which one has no answer */
static sp_status refuse(sp_ctx *ctx, const sp_partition_opts *o, const struct wanted *w) {
    const char *asked = sp_solver_name(o->solver);
    char list[128];
    bool by_solver_layout = false;
    for (size_t i = 0; i < SP_COUNT_OF(solvers); i++) {
        const sp_solver_info *s = &solvers[i].info;
        if (s->solver != w->solver || !fits_placement(s, w))
            continue;
        by_solver_layout = true;
        if (solvers[i].objective_refusal)
            return sp_fail(ctx, SP_ERR_INVALID_ARG, "--objective %s with --solver %s: %s",
                           sp_objective_name(w->objective), asked, solvers[i].objective_refusal);
    }
    const char *what = by_solver_layout ? sp_objective_name(w->objective)
                       : w->placement   ? "search"
                                        : NULL;
    const char *option = by_solver_layout ? "--objective" : "--placement";
    solver_list(list, sizeof list, w, by_solver_layout ? fits_objective : fits_placement);
    if (what && *list)
        return sp_fail(ctx, SP_ERR_INVALID_ARG, "%s %s needs --solver %s (for %s)", option, what,
                       list, layout_words(w->layout));
    if (what)
        return sp_fail(ctx, SP_ERR_UNSUPPORTED, "no solver takes %s %s for %s", option, what,
                       layout_words(w->layout));
    return sp_fail(ctx, SP_ERR_UNSUPPORTED,
                   "--solver %s does not make %s%s%s: --solver %s does (the solvers: "
                   "docs/partitioning.md#solvers)",
                   asked, layout_words(w->layout),
                   w->layout == SP_SOLVER_ONE_CHUNK ? "" : ", --schedule ",
                   w->layout == SP_SOLVER_ONE_CHUNK ? "" : sp_schedule_name(o->schedule), list);
}

/* what the flags say a solver cannot take */
static bool fits_recompute(const sp_solver_info *s, const struct wanted *w) {
    return fits_placement(s, w) && (s->takes & SP_SOLVER_TAKES_RECOMPUTE);
}

static sp_status check_flags(sp_ctx *ctx, const sp_partition_opts *o,
                             const struct sp_stage_devices *d, const struct sp_solver_desc *desc,
                             const struct wanted *w) {
    const sp_solver_info *s = &desc->info;
    char list[128];
    if (o->recompute && !(s->takes & SP_SOLVER_TAKES_RECOMPUTE)) {
        solver_list(list, sizeof list, w, fits_recompute);
        return sp_fail(ctx, *list ? SP_ERR_INVALID_ARG : SP_ERR_UNSUPPORTED,
                       "--recompute auto needs %s%s: the %s solver (%s) does not choose layers "
                       "to recompute",
                       *list ? "--solver " : "a solver that chooses them, and none does for ",
                       *list ? list : layout_words(w->layout), s->name, s->summary);
    }
    if (d->speed && !(s->takes & SP_SOLVER_TAKES_SPEEDS))
        return sp_fail(ctx, SP_ERR_UNSUPPORTED,
                       "the %s solver (%s) assumes devices of equal speed; this profile or "
                       "--devices gives speeds",
                       s->name, s->summary);
    if (o->links && o->comm == SP_COMM_BLOCKING && !(s->takes & SP_SOLVER_TAKES_BLOCKING))
        return sp_fail(ctx, SP_ERR_UNSUPPORTED,
                       "--comm blocking: the %s solver (%s) models overlapped transfers only; "
                       "blocking transfers are balanced by --solver dp with one chunk per device",
                       s->name, s->summary);
    if (!s->objectives && o->objective != SP_OBJECTIVE_BOTTLENECK)
        sp_warn(ctx, "the %s solver has no objective; --objective %s is ignored",
                sp_solver_name(o->solver), sp_objective_name(o->objective));
    return SP_OK;
}

sp_status sp_solver_pick(sp_ctx *ctx, const sp_partition_opts *o, const struct sp_stage_devices *d,
                         const struct sp_solver_desc **out) {
    *out = NULL;
    struct wanted w = {.solver = o->solver,
                       .layout = options_layout(o),
                       .placement = o->placement == SP_PLACEMENT_SEARCH,
                       .objective = o->objective};
    const struct sp_solver_desc *desc = NULL;
    for (size_t i = 0; i < SP_COUNT_OF(solvers) && !desc; i++) {
        const sp_solver_info *s = &solvers[i].info;
        if (s->solver == w.solver && fits_placement(s, &w) && takes_objective(s, w.objective))
            desc = &solvers[i];
    }
    if (!desc)
        return refuse(ctx, o, &w);
    sp_status st = check_flags(ctx, o, d, desc, &w);
    if (st == SP_OK && desc->check)
        st = desc->check(ctx, o, d);
    if (st == SP_OK)
        *out = desc;
    return st;
}

/* partitioner/solvers/ilp_glpk.c: solving the GLPK program that ilp_model.c sets up: the phases
 * (the objective, then its tie-breaks), the incumbent injected at the first heuristic callback, the
 * result read back. GLPK's terminal output is off, its fatal errors are caught with an error hook
 * and longjmp (they would abort the process), and every return code and status is checked: a
 * return of 0 does not mean optimal. */
#include <math.h>
#include <setjmp.h>
#include <string.h>

#include "ilp_model.h"

struct guard {
    jmp_buf jb;
};

static void on_glpk_error(void *info) {
    longjmp(((struct guard *)info)->jb, 1);
}

static void callback(glp_tree *tree, void *info) {
    struct sp_ilp_model *m = info;
    int a_cnt = 0, n_cnt = 0, t_cnt = 0;
    glp_ios_tree_size(tree, &a_cnt, &n_cnt, &t_cnt);
    m->nodes = t_cnt;
    int best = glp_ios_best_node(tree);
    if (best)
        m->bound = glp_ios_node_bound(tree, best);
    m->gap = glp_ios_mip_gap(tree);
    if (glp_ios_reason(tree) == GLP_IHEUR && m->x_inc && !m->injected) {
        m->injected = true;
        glp_ios_heur_sol(tree, m->x_inc);
    }
}

static const char *status_name(int st) {
    switch (st) {
    case GLP_OPT:
        return "optimal";
    case GLP_FEAS:
        return "feasible";
    case GLP_NOFEAS:
        return "infeasible";
    default:
        return "undefined";
    }
}

/* Free the solve's buffers; on failure also the result's arrays, so a failed solve owns nothing. */
static void release_solve(struct sp_ilp_rowbuf *r, double *x, struct sp_ilp_result *out,
                          bool failed) {
    sp_free(r->ind);
    sp_free(r->val);
    sp_free(r->slot);
    sp_free(r->mind);
    sp_free(r->mval);
    sp_free(x);
    if (failed) {
        sp_free(out->bounds);
        sp_free(out->recompute);
        sp_free(out->stage_class);
        out->recompute = NULL;
        out->bounds = NULL;
        out->stage_class = NULL;
        out->found = false;
    }
}

/* The phases of the search: the objective, then its tie-breaks with the earlier ones fixed. */
enum phase { PHASE_OBJECTIVE, PHASE_LATENCY, PHASE_SPREAD };

static const char *const phase_failed[] = {NULL, "optimal objective; the latency tie-break failed",
                                           "optimal objective; the spread tie-break failed"};
static const char *const phase_stopped[] = {
    NULL, "optimal objective; latency tie-break stopped by the time limit",
    "optimal objective; spread tie-break stopped by the time limit"};

/* Recomputation is extra work: where a phase could gain from it (spreading loads by adding time
 * to light stages), charge it three times its time, more than it can ever save there, so blocks
 * are recomputed only where memory needs it. */
static void charge_recompute(glp_prob *lp, const struct sp_ilp_model *m) {
    for (size_t b = 0; m->in->recompute && b < m->B; b++)
        for (uint32_t k = 0; m->in->recompute[b] >= 0 && k < m->K; k++)
            glp_set_obj_coef(lp, col_y(m, b, k), 3 * (double)m->in->recompute[b] / SP_TICKS_PER_MS);
}

static void set_phase_objective(glp_prob *lp, const struct sp_ilp_model *m, enum phase ph) {
    for (int j = 1; j <= m->n_cols; j++)
        glp_set_obj_coef(lp, j, 0);
    if (ph == PHASE_LATENCY) { /* one micro-batch through every stage and link, and back */
        for (uint32_t d = 0; d < m->P; d++)
            glp_set_obj_coef(lp, m->col_load + (int)d, 1);
        for (uint32_t k = 0; m->pl->latency_ms && k + 1 < m->K; k++)
            glp_set_obj_coef(lp, m->col_comm + (int)k, 2);
        return;
    }
    if (ph == PHASE_SPREAD) {
        for (uint32_t d = 0; d < m->P; d++)
            glp_set_obj_coef(lp, m->col_dev + (int)d, 1);
        charge_recompute(lp, m);
        return;
    }
    switch (m->in->objective) {
    case SP_OBJECTIVE_ITERATION:
        glp_set_obj_coef(lp, m->col_T, m->in->micro_batches > 0 ? m->in->micro_batches - 1 : 0);
        for (uint32_t d = 0; d < m->P; d++)
            glp_set_obj_coef(lp, m->col_load + (int)d, 1);
        break;
    case SP_OBJECTIVE_RANGE:
        glp_set_obj_coef(lp, m->col_T, 1);
        glp_set_obj_coef(lp, m->col_L, -1);
        charge_recompute(lp, m);
        break;
    case SP_OBJECTIVE_DEVIATION:
        for (uint32_t d = 0; d < m->P; d++)
            glp_set_obj_coef(lp, m->col_dev + (int)d, 1);
        charge_recompute(lp, m);
        break;
    default:
        glp_set_obj_coef(lp, m->col_T, 1);
        break;
    }
}

/* Keeps the phase just solved at its optimum for the phases after it: objective <= value. */
static void fix_phase_objective(glp_prob *lp, const struct sp_ilp_model *m, struct sp_ilp_rowbuf *r,
                                double value) {
    for (int j = 1; j <= m->n_cols; j++) {
        double coef = glp_get_obj_coef(lp, j);
        if (coef != 0)
            sp_ilp_row_add(r, j, coef);
    }
    sp_ilp_add_row(lp, r, GLP_UP, 0, value + fabs(value) * 1e-9 + 1e-6);
}

/* The solution's stage ends, recomputed blocks and stage classes. */
static void read_solution(glp_prob *lp, const struct sp_ilp_model *m, struct sp_ilp_result *out) {
    for (uint32_t k = 0; k + 1 < m->K; k++) {
        size_t end = 0;
        for (size_t blk = 0; blk < m->B; blk++)
            end += glp_mip_col_val(lp, col_u(m, blk, k)) > 0.5;
        out->bounds[k + 1] = end;
    }
    out->bounds[0] = 0;
    out->bounds[m->K] = m->B;
    for (size_t blk = 0; m->in->recompute && out->recompute && blk < m->B; blk++)
        out->recompute[blk] = glp_mip_col_val(lp, m->col_r + (int)blk) > 0.5;
    for (uint32_t d = 0; m->pl && d < m->P; d++)
        for (uint32_t cls = 0; cls < m->C; cls++)
            if (glp_mip_col_val(lp, col_z(m, d, cls)) > 0.5)
                out->stage_class[d] = cls;
}

/* The incumbent as the first phase's plan, its bottleneck proven optimal outside the program
 * (in->optimum_ms), and fixed for the tie-breaks. */
static void take_optimum(glp_prob *lp, const struct sp_ilp_model *m, struct sp_ilp_rowbuf *r,
                         struct sp_ilp_result *out) {
    const struct sp_ilp_input *in = m->in;
    sp_ilp_result_take_optimum(out, m->K, in->incumbent, m->pl ? m->pl->incumbent : NULL,
                               in->optimum_ms);
    set_phase_objective(lp, m, PHASE_OBJECTIVE);
    fix_phase_objective(lp, m, r, m->x_inc[m->col_T]); /* the program's own figure of it */
}

/* the phases to run: the objective; with placement the latency when it can differ; with the
 * bottleneck objective the spread */
static int phase_list(const struct sp_ilp_model *m, enum phase phases[3]) {
    int n = 0;
    phases[n++] = PHASE_OBJECTIVE;
    bool speeds_differ = false;
    for (uint32_t cls = 1; m->pl && cls < m->C; cls++)
        speeds_differ |= m->pl->speed[cls] != m->pl->speed[0];
    if (m->pl && (m->pl->latency_ms || speeds_differ))
        phases[n++] = PHASE_LATENCY;
    if (m->in->objective == SP_OBJECTIVE_BOTTLENECK)
        phases[n++] = PHASE_SPREAD;
    return n;
}

/* GLPK quiet, presolve off (the injected incumbent relies on the column numbers), every cut and
 * the feasibility pump on, our callback to inject and to watch the bound */
static void solver_params(struct sp_ilp_model *m, glp_smcp *smcp, glp_iocp *iocp) {
    glp_init_smcp(smcp);
    smcp->msg_lev = GLP_MSG_OFF;
    glp_init_iocp(iocp);
    iocp->msg_lev = GLP_MSG_OFF;
    iocp->presolve = GLP_OFF;
    iocp->mir_cuts = GLP_ON;
    iocp->gmi_cuts = GLP_ON;
    iocp->cov_cuts = GLP_ON;
    iocp->clq_cuts = GLP_ON;
    iocp->fp_heur = GLP_ON;
    iocp->cb_func = callback;
    iocp->cb_info = m;
}

/* the objective phase's figures: proven, or the best found with its gap and bound */
static void record_objective(glp_prob *lp, const struct sp_ilp_model *m, bool proven, bool stopped,
                             int mip, struct sp_ilp_result *out) {
    out->found = true;
    out->optimal = proven;
    out->status = stopped ? "time limit" : status_name(mip);
    out->objective_ms = glp_mip_obj_val(lp);
    out->mip_gap = proven ? 0 : m->gap;
    out->best_bound = proven ? glp_mip_obj_val(lp) : m->bound;
}

/* The phases on the built program: the objective, then each tie-break with the earlier ones fixed
 * and starting from their solution (x, columns 1..n_cols, is scratch for it); out gets the plan. */
static sp_status run_phases(sp_ctx *ctx, glp_prob *lp, struct sp_ilp_model *m,
                            struct sp_ilp_rowbuf *r, double *x, struct sp_ilp_result *out,
                            double t0) {
    const struct sp_ilp_input *in = m->in;
    enum phase phases[3];
    int n_phases = phase_list(m, phases);
    glp_scale_prob(lp, GLP_SF_AUTO);
    glp_smcp smcp;
    glp_iocp iocp;
    solver_params(m, &smcp, &iocp);
    double limit_ms = in->time_limit_s * 1e3;
    int mip = GLP_UNDEF;
    double phase1_ms = 0;
    sp_status st = SP_OK;
    int first = 0;
    if (in->optimum_ms > 0 && m->x_inc) { /* the objective is proven: only its ties are left */
        take_optimum(lp, m, r, out);
        first = 1;
    }
    for (int i = first; i < n_phases && st == SP_OK; i++) {
        enum phase ph = phases[i];
        set_phase_objective(lp, m, ph);
        m->injected = false;
        m->bound = -(double)INFINITY;
        double left_lp = limit_ms - (sp_now_ms() - t0);
        if (i > 0) /* a tie-break gets twice the objective's time (at least 1 s) */
            left_lp = fmin(left_lp, fmax(1000.0, 2 * phase1_ms));
        smcp.tm_lim = left_lp > 1 ? (int)fmin(left_lp, 2e9) : 1;
        int ret = glp_simplex(lp, &smcp);
        int lps = glp_get_status(lp);
        if (i > 0 && (ret != 0 || lps != GLP_OPT)) {
            out->status = ret == GLP_ETMLIM ? phase_stopped[ph] : phase_failed[ph];
            break; /* the earlier phase's plan stands */
        }
        if (ret == GLP_ETMLIM) {
            out->status = "time limit, no plan found";
            st = sp_fail(ctx, SP_ERR_INFEASIBLE,
                         "the ilp solver's relaxation did not finish within the time limit of %g s",
                         in->time_limit_s);
            break;
        }
        if (ret != 0 || (lps != GLP_OPT && lps != GLP_NOFEAS)) {
            st = sp_fail(ctx, SP_ERR_SOLVER, "GLPK's simplex failed (code %d, status %s)", ret,
                         status_name(lps));
            break;
        }
        if (lps == GLP_NOFEAS) {
            st = SP_ERR_INFEASIBLE;
            break;
        }
        double left = limit_ms - (sp_now_ms() - t0);
        if (i > 0) /* a tie-break gets twice the objective's time (at least 1 s) */
            left = fmin(left, fmax(1000.0, 2 * phase1_ms));
        iocp.tm_lim = left > 1 ? (int)fmin(left, 2e9) : 1;
        ret = glp_intopt(lp, &iocp);
        mip = glp_mip_status(lp);
        if (i > 0 && ((ret != 0 && ret != GLP_ETMLIM) || (mip != GLP_OPT && mip != GLP_FEAS))) {
            out->status = phase_failed[ph];
            break; /* out->bounds still hold the earlier phase's plan */
        }
        if (ret != 0 && ret != GLP_ETMLIM && ret != GLP_EMIPGAP) {
            st = sp_fail(ctx, SP_ERR_SOLVER, "GLPK's branch and cut failed (code %d)", ret);
            break;
        }
        if (mip == GLP_NOFEAS || (mip == GLP_UNDEF && ret == 0)) {
            st = SP_ERR_INFEASIBLE;
            break;
        }
        if (mip == GLP_UNDEF) { /* the time ran out before any integer solution */
            out->status = "time limit, no plan found";
            st = sp_fail(ctx, SP_ERR_INFEASIBLE,
                         "the ilp solver found no plan within the time limit of %g s",
                         in->time_limit_s);
            break;
        }
        bool proven = mip == GLP_OPT && ret == 0;
        read_solution(lp, m, out);
        if (i > 0) { /* a tie-break: the objective's figures stay those of the first phase */
            if (!proven) {
                out->status = phase_stopped[ph];
                break;
            }
        } else {
            record_objective(lp, m, proven, ret == GLP_ETMLIM, mip, out);
            phase1_ms = sp_now_ms() - t0;
            if (!proven)
                break; /* no time left for the tie-breaks: keep the objective's plan */
        }
        if (i + 1 < n_phases) {
            /* the next phase: this one fixed at its optimum, starting from its solution (GLPK
             * does not check injected solutions, so it must be exactly feasible: every column) */
            fix_phase_objective(lp, m, r, glp_mip_obj_val(lp));
            for (int j = 1; j <= m->n_cols; j++)
                x[j] = glp_mip_col_val(lp, j);
            m->x_inc = x;
        }
    }
    return st;
}

/* The time ran out before GLPK had any plan: the incumbent is still a valid plan. Returns st,
 * or SP_OK when the incumbent is kept. */
static sp_status keep_incumbent(sp_ctx *ctx, const struct sp_ilp_model *m,
                                struct sp_ilp_result *out, double lb, sp_status st) {
    const struct sp_ilp_input *in = m->in;
    if (!out->found && in->incumbent && m->x_inc && out->status &&
        strncmp(out->status, "time limit", 10) == 0) {
        sp_ctx_begin(ctx);
        st = SP_OK;
        memcpy(out->bounds, in->incumbent, ((size_t)m->K + 1) * sizeof *out->bounds);
        if (m->pl)
            memcpy(out->stage_class, m->pl->incumbent, m->K * sizeof *out->stage_class);
        out->found = true;
        out->optimal = false;
        out->status = "time limit: the incumbent is kept";
        double value = m->x_inc[m->col_T];
        if (in->objective == SP_OBJECTIVE_ITERATION) {
            value *= in->micro_batches > 0 ? in->micro_batches - 1 : 0;
            for (uint32_t d = 0; d < m->P; d++)
                value += m->x_inc[m->col_load + (int)d];
        } else if (in->objective == SP_OBJECTIVE_RANGE) {
            value -= m->x_inc[m->col_L];
        } else if (in->objective == SP_OBJECTIVE_DEVIATION) {
            value = 0;
            for (uint32_t d = 0; d < m->P; d++)
                value += m->x_inc[m->col_dev + (int)d];
        }
        out->objective_ms = value;
        out->best_bound = in->objective == SP_OBJECTIVE_BOTTLENECK ? lb : 0;
        out->mip_gap = value > 0 ? (value - out->best_bound) / value : 0;
    }
    return st;
}

sp_status sp_ilp_solve(sp_ctx *ctx, const struct sp_ilp_input *in, struct sp_ilp_result *out) {
    memset(out, 0, sizeof *out);
    struct sp_ilp_model m;
    sp_status init = sp_ilp_model_init(ctx, in, &m);
    if (init != SP_OK)
        return init;
    /* the longest row before merging: a device's memory state over its chunks (u twice and y
     * per block and chunk), or every column (a phase's objective fixed) */
    size_t row_cap = 3 * (size_t)m.n_cols + 4 * m.B + 16;
    struct sp_ilp_rowbuf r = {sp_mallocarray(row_cap + 1, sizeof(int)),
                              sp_mallocarray(row_cap + 1, sizeof(double)),
                              0,
                              sp_calloc((size_t)m.n_cols + 1, sizeof(int)),
                              sp_mallocarray((size_t)m.n_cols + 1, sizeof(int)),
                              sp_mallocarray((size_t)m.n_cols + 1, sizeof(double))};
    double *x = sp_calloc((size_t)m.n_cols + 1, sizeof *x);
    out->bounds = sp_mallocarray((size_t)m.K + 1, sizeof *out->bounds);
    out->recompute = in->recompute ? sp_calloc(m.B, sizeof *out->recompute) : NULL;
    out->stage_class = m.pl ? sp_calloc(m.K, sizeof *out->stage_class) : NULL;
    if (!r.ind || !r.val || !r.slot || !r.mind || !r.mval || !x || !out->bounds ||
        (in->recompute && !out->recompute) || (m.pl && !out->stage_class)) {
        release_solve(&r, x, out, true);
        return sp_oom(ctx, "building the integer program");
    }
    if (in->incumbent && (!m.pl || m.pl->incumbent)) {
        sp_ilp_fill_incumbent(&m, in->incumbent, x);
        m.x_inc = x;
    }
    double t0 = sp_now_ms();
    struct guard guard;
    volatile sp_status st = SP_OK;
    glp_prob *volatile lp = NULL;
    int term = glp_term_out(GLP_OFF); /* a JSON stdout must never see GLPK's text */
    glp_error_hook(on_glpk_error, &guard);
    if (setjmp(guard.jb)) {
        glp_error_hook(NULL, NULL);
        glp_free_env(); /* frees lp too */
        glp_term_out(term);
        release_solve(&r, x, out, true);
        return sp_fail(ctx, SP_ERR_SOLVER, "GLPK stopped with an internal error");
    }
    lp = glp_create_prob();
    glp_set_obj_dir(lp, GLP_MIN);
    double lb = 0;
    sp_ilp_add_rows(lp, &m, &r, &lb, &out->free_binaries);
    st = run_phases(ctx, lp, &m, &r, x, out, t0);
    st = keep_incumbent(ctx, &m, out, lb, st);
    out->nodes = m.nodes;
    out->solve_ms = sp_now_ms() - t0;
    glp_delete_prob(lp);
    glp_error_hook(NULL, NULL);
    glp_term_out(term);
    release_solve(&r, x, out, st != SP_OK);
    return st;
}

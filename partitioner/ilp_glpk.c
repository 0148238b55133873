/* partitioner/ilp_glpk.c: the mixed-integer program on GLPK, and every glp_* call.
 *
 * Staircase formulation (the design notes' partitioning.md §4): over the chain's blocks b (the
 * units between candidate cut positions) and virtual stages k = 0..K-1, binary u[b][k] = 1 iff
 * block b lies in a stage <= k (u[b][K-1] = 1). Block b is in stage k iff
 * u[b][k] - u[b][k-1] = 1. Rows: u decreasing in b and increasing in k (contiguity), every stage
 * non-empty, device loads L_d = sum over the stages k = d (mod P) of their block times, memory
 * caps per stage (one chunk per device only), and the objective's rows:
 *   bottleneck  min T with L_d <= T; then, T fixed, min sum |L_d - mean| (the spread tie-break,
 *               given twice the first phase's time, at least 1 s)
 *   iteration   min (M-1) T + sum L_d
 *   range       min T - L with L <= L_d <= T
 *   deviation   min sum |L_d - mean|
 * Placement search (in->place): stage k also picks a class c of interchangeable devices, binary
 * z[k][c] (one per stage, at most the class's size per class). Its work is split over the
 * classes, w[k][c] <= z[k][c] x (the most work a stage on c can carry under the incumbent's
 * bottleneck), L_k = sum_c w[k][c] / speed_c, and sum_k w[k][c] <= size_c x speed_c x T: exact
 * once z is integral and much tighter than big-M rows on L_k. Memory must fit the chosen class
 * (big-M on z), and the transfer after stage k, comm_k >= latency + bytes at its cut x ms per
 * byte of the link between the two stages' classes, is forced by both stages' z (big-M). The phases
 * then run: the objective; with it fixed, the latency of one micro-batch through the pipeline and
 * back (sum L_k + 2 sum comm_k, what the fill and drain of a schedule cost); for the bottleneck,
 * with both fixed, the spread. Each later phase fixes the one before with a row and starts from its
 * solution. Window fixing: with an incumbent's T_UB, stage k must end where the stages up to k can
 * carry the layers before and the later stages the layers after; u outside that window is fixed,
 * which leaves a few free binaries per boundary. The incumbent (the DP's plan, or the uniform
 * chunk split) is injected at the first heuristic callback. With one chunk per device the DP's
 * optimum is exact, so it also bounds T from below (the design notes' §4.5): the program then
 * proves the bottleneck at the root and spends its time on the tie-break. Chunks, range and
 * deviation have no such bound and are proved by branch and cut alone. GLPK's terminal output is
 * off, its fatal errors are caught with an error hook and longjmp (they would abort the process),
 * and every return code and status is checked: a return of 0 does not mean optimal.
 *
 * Units: milliseconds (nanosecond coefficients make GLPK's simplex stall on badly scaled rows;
 * the problem is also scaled with glp_scale_prob). With device speeds the program divides each
 * block's time by the speed (linear); the plan then rounds each stage's sums to nanoseconds, so
 * its figures can differ from the program's by a nanosecond per layer. */
#include <glpk.h>
#include <math.h>
#include <setjmp.h>
#include <string.h>

#include "ilp.h"

#define SP_ILP_MAX_COLUMNS 2000000

struct model {
    const struct sp_ilp_input *in;
    const struct sp_chain *c;
    const struct sp_ilp_placement *pl; /* placement search, or NULL */
    uint32_t K, P, C;
    size_t B;                            /* blocks */
    int n_u;                             /* u columns: B x (K-1) */
    int col_T, col_L, col_load, col_dev; /* first column of each group (1-based) */
    int col_r, col_y;                    /* recomputation: r[b], y[b][k] = r[b] x[b][k] */
    int col_z, col_w, col_comm;          /* placement: z[k][c], w[k][c], comm[k] (k < K-1) */
    int n_cols;
    double speed_max; /* the fastest device a stage can get (1 without speeds) */
    double *x_inc;    /* the incumbent, columns 1..n_cols, or NULL */
    bool injected;
    double gap, bound;
    long long nodes;
};

struct guard {
    jmp_buf jb;
};

static void on_glpk_error(void *info) {
    longjmp(((struct guard *)info)->jb, 1);
}

static int col_u(const struct model *m, size_t b, uint32_t k) {
    return 1 + (int)(b * (m->K - 1) + k);
}
static int col_z(const struct model *m, uint32_t k, uint32_t cls) {
    return m->col_z + (int)(k * m->C + cls);
}
static int col_w(const struct model *m, uint32_t k, uint32_t cls) {
    return m->col_w + (int)(k * m->C + cls);
}
static int col_y(const struct model *m, size_t b, uint32_t k) {
    return m->col_y + (int)(b * m->K + k);
}

/* work of block b (ms at speed 1) */
static double block_work(const struct model *m, size_t b) {
    return (double)(m->c->w[b + 1] - m->c->w[b]) / SP_TICKS_PER_MS;
}

/* time of block b on virtual stage k (its device's speed), ms */
static double block_time(const struct model *m, size_t b, uint32_t k) {
    double w = block_work(m, b);
    return m->c->speed ? w / m->c->speed[k] : w;
}

static void callback(glp_tree *tree, void *info) {
    struct model *m = info;
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

struct rowbuf {
    int *ind;
    double *val;
    int len;
    int *slot; /* [n_cols + 1], zero between rows: where a column sits in the merged row */
    int *mind; /* the merged row */
    double *mval;
};

static void row_add(struct rowbuf *r, int col, double v) {
    r->ind[++r->len] = col;
    r->val[r->len] = v;
}

/* Adds the row and keeps its terms: a column named twice is counted once with its coefficients
 * summed (GLPK refuses repeated columns; the chunks of one device share u columns when P = 1). */
static int emit_row(glp_prob *lp, struct rowbuf *r, int type, double lb, double ub) {
    int len = 0;
    for (int j = 1; j <= r->len; j++) {
        int col = r->ind[j];
        if (r->slot[col]) {
            r->mval[r->slot[col]] += r->val[j];
            continue;
        }
        r->slot[col] = ++len;
        r->mind[len] = col;
        r->mval[len] = r->val[j];
    }
    for (int j = 1; j <= len; j++)
        r->slot[r->mind[j]] = 0;
    int i = glp_add_rows(lp, 1);
    glp_set_mat_row(lp, i, len, r->mind, r->mval);
    glp_set_row_bnds(lp, i, type, lb, ub);
    return i;
}

/* Adds the row and starts the next. */
static int add_row(glp_prob *lp, struct rowbuf *r, int type, double lb, double ub) {
    int i = emit_row(lp, r, type, lb, ub);
    r->len = 0;
    return i;
}

/* Adds scale x "block b is in stage k" (x = u[b][k] - u[b][k-1], u[b][K-1] = 1, u[b][-1] = 0)
 * for every block, weighted by value[b]; returns the constant part (the u[b][K-1] terms). */
static double add_stage_sum(const struct model *m, struct rowbuf *r, uint32_t k, double scale,
                            double (*value)(const struct model *, size_t, uint32_t)) {
    double cst = 0;
    for (size_t b = 0; b < m->B; b++) {
        double v = scale * value(m, b, k);
        if (v == 0)
            continue;
        if (k + 1 < m->K)
            row_add(r, col_u(m, b, k), v);
        else
            cst += v;
        if (k > 0)
            row_add(r, col_u(m, b, k - 1), -v);
    }
    return cst;
}

static double work_of(const struct model *m, size_t b, uint32_t k) {
    (void)k;
    return block_work(m, b);
}

/* memory block b needs on stage k: resident bytes and k's in-flight copies of its saved bytes */
static double need_of(const struct model *m, size_t b, uint32_t k) {
    const struct sp_chain *c = m->c;
    return (double)(c->mem[b + 1] - c->mem[b]) +
           (double)c->inflight[k] * (double)(c->saved[b + 1] - c->saved[b]);
}

static double spared_of(const struct model *m, size_t b, uint32_t k) {
    return (double)m->c->inflight[k] * (double)(m->c->saved[b + 1] - m->c->saved[b]);
}

/* stage k's work at speed 1 (ms) times scale, recomputation included; returns the constant */
static double add_stage_work(const struct model *m, struct rowbuf *r, uint32_t k, double scale) {
    double cst = add_stage_sum(m, r, k, scale, work_of);
    for (size_t b = 0; m->in->recompute && b < m->B; b++)
        if (m->in->recompute[b] >= 0)
            row_add(r, col_y(m, b, k), scale * (double)m->in->recompute[b] / SP_TICKS_PER_MS);
    return cst;
}

/* stage k's memory (bytes) times scale, less what recomputation spares; returns the constant */
static double add_stage_memory(const struct model *m, struct rowbuf *r, uint32_t k, double scale) {
    double cst = add_stage_sum(m, r, k, scale, need_of);
    for (size_t b = 0; m->in->recompute && b < m->B; b++) {
        double spared = spared_of(m, b, k);
        if (m->in->recompute[b] >= 0 && spared != 0)
            row_add(r, col_y(m, b, k), -scale * spared);
    }
    return cst;
}

/* window of stage k's end (a position) for a cap T_UB on every stage: the stages up to k must
 * carry the blocks before it, the later stages those after */
static void window(const struct model *m, double t_ub_ms, uint32_t k, size_t *lo, size_t *hi) {
    const struct sp_chain *c = m->c;
    double before = 0, after = 0, t_ub = t_ub_ms * SP_TICKS_PER_MS; /* in ticks, like w */
    for (uint32_t j = 0; j < m->K; j++) {
        double cap = t_ub * (c->speed ? c->speed[j] : m->speed_max); /* work a stage can take */
        if (j <= k)
            before += cap;
        else
            after += cap;
    }
    double total = (double)c->w[m->B];
    *lo = (size_t)k + 1;
    *hi = m->B - (m->K - 1 - k);
    while (*lo < *hi && total - (double)c->w[*lo] > after * (1 + 1e-12))
        (*lo)++;
    while (*hi > *lo && (double)c->w[*hi] > before * (1 + 1e-12))
        (*hi)--;
}

/* the block's recomputation in the incumbent (ms at speed 1), 0 when it keeps its bytes */
static double incumbent_recompute_ms(const struct model *m, size_t b) {
    const struct sp_ilp_input *in = m->in;
    return in->recompute && in->incumbent_recomputes && in->recompute[b] >= 0
               ? (double)in->recompute[b] / SP_TICKS_PER_MS
               : 0;
}

static double load_of(const struct model *m, const size_t *bounds, uint32_t d) {
    double t = 0;
    for (uint32_t k = d; k < m->K; k += m->P)
        for (size_t b = bounds[k]; b < bounds[k + 1]; b++) {
            double rc = incumbent_recompute_ms(m, b);
            t += block_time(m, b, k) + (m->c->speed ? rc / m->c->speed[k] : rc);
        }
    if (m->pl) /* one stage per device: its class's speed */
        t /= m->pl->speed[m->pl->incumbent[d]];
    return t;
}

/* the transfer after stage k ending after block `last`, from class c to class e */
static double transfer_ms(const struct model *m, uint32_t c, uint32_t e, size_t last) {
    size_t i = (size_t)c * m->C + e;
    return m->pl->latency_ms[i] + m->pl->cut_bytes[last] * m->pl->ms_per_byte[i];
}

static void fill_incumbent(struct model *m, const size_t *bounds, double *x) {
    for (size_t b = 0; b < m->B; b++)
        for (uint32_t k = 0; k + 1 < m->K; k++)
            x[col_u(m, b, k)] = b < bounds[k + 1] ? 1 : 0;
    double mx = 0, mn = (double)INFINITY, sum = 0;
    for (uint32_t d = 0; d < m->P; d++) {
        double l = load_of(m, bounds, d);
        x[m->col_load + (int)d] = l;
        mx = fmax(mx, l);
        mn = fmin(mn, l);
        sum += l;
    }
    x[m->col_T] = mx;
    x[m->col_L] = mn;
    for (uint32_t d = 0; d < m->P; d++)
        x[m->col_dev + (int)d] = fabs(x[m->col_load + (int)d] - sum / m->P);
    for (uint32_t k = 0; k < m->K; k++) /* recomputation: r[b] and y[b][k] = r[b] x[b][k] */
        for (size_t b = bounds[k]; b < bounds[k + 1]; b++)
            if (incumbent_recompute_ms(m, b) > 0 ||
                (m->in->recompute && m->in->incumbent_recomputes && m->in->recompute[b] >= 0)) {
                x[m->col_r + (int)b] = 1;
                x[col_y(m, b, k)] = 1;
            }
    const uint32_t *inc = m->pl ? m->pl->incumbent : NULL; /* the class of each device */
    for (uint32_t d = 0; inc && d < m->P; d++) {
        x[col_z(m, d, inc[d])] = 1;
        x[col_w(m, d, inc[d])] = x[m->col_load + (int)d] * m->pl->speed[inc[d]];
    }
    for (uint32_t k = 0; inc && m->pl->latency_ms && m->P > 1 && k + 1 < m->K; k++)
        x[m->col_comm + (int)k] =
            transfer_ms(m, inc[k % m->P], inc[(k + 1) % m->P], bounds[k + 1] - 1);
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
static void release_solve(struct rowbuf *r, double *x, struct sp_ilp_result *out, bool failed) {
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
static void charge_recompute(glp_prob *lp, const struct model *m) {
    for (size_t b = 0; m->in->recompute && b < m->B; b++)
        for (uint32_t k = 0; m->in->recompute[b] >= 0 && k < m->K; k++)
            glp_set_obj_coef(lp, col_y(m, b, k), 3 * (double)m->in->recompute[b] / SP_TICKS_PER_MS);
}

static void set_phase_objective(glp_prob *lp, const struct model *m, enum phase ph) {
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
static void fix_phase_objective(glp_prob *lp, const struct model *m, struct rowbuf *r,
                                double value) {
    for (int j = 1; j <= m->n_cols; j++) {
        double coef = glp_get_obj_coef(lp, j);
        if (coef != 0)
            row_add(r, j, coef);
    }
    add_row(lp, r, GLP_UP, 0, value + fabs(value) * 1e-9 + 1e-6);
}

/* The solution's stage ends, recomputed blocks and stage classes. */
static void read_solution(glp_prob *lp, const struct model *m, struct sp_ilp_result *out) {
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

/* Interleaved memory: for every device and in-flight state, the sum over its chunks of their
 * resident bytes and held x saved bytes (less what recomputation spares) fits the cap. The
 * chunks of one device share u columns when P = 1 (add_row sums them). */
static void add_chunk_memory_rows(glp_prob *lp, const struct model *m, struct rowbuf *r) {
    const struct sp_ilp_chunk_memory *cm = m->in->chunk_memory;
    const struct sp_chain *c = m->c;
    const struct sp_ilp_placement *pl = m->pl;
    uint32_t V = m->K / m->P;
    for (uint32_t d = 0; d < m->P; d++)
        for (size_t i = cm->offset[d]; i < cm->offset[d + 1]; i++) {
            /* the state's memory: sum over the chunks of memory_bytes + held x saved_bytes */
            double cst = 0, most = 0;
            for (uint32_t ch = 0; ch < V; ch++) {
                uint32_t k = ch * m->P + d;
                double held = cm->held[i * V + ch];
                for (size_t b = 0; b < m->B; b++) {
                    double saved = (double)(c->saved[b + 1] - c->saved[b]);
                    double need = (double)(c->mem[b + 1] - c->mem[b]) + held * saved;
                    if (need != 0) { /* x[b][k] = u[b][k] - u[b][k-1], u[b][K-1] = 1 */
                        if (k + 1 < m->K)
                            row_add(r, col_u(m, b, k), need);
                        else
                            cst += need;
                        if (k > 0)
                            row_add(r, col_u(m, b, k - 1), -need);
                    }
                    if (m->in->recompute && m->in->recompute[b] >= 0 && held * saved != 0)
                        row_add(r, col_y(m, b, k), -held * saved);
                }
            }
            double held_max = 0; /* the state's memory is at most every block at this count */
            for (uint32_t ch = 0; ch < V; ch++)
                held_max = fmax(held_max, cm->held[i * V + ch]);
            most = (double)c->mem[m->B] + held_max * (double)c->saved[m->B];
            /* the row once per cap that applies: the limit, and with placement each class's
             * memory when z[d][c] = 1 (big-M) */
            for (int cls = -1; cls < (pl ? (int)m->C : 0); cls++) {
                double cap = cls < 0 ? (double)cm->cap[d] : (double)pl->memory[cls];
                if (cap == 0 || (cls >= 0 && cm->cap[d] && (double)cm->cap[d] <= cap))
                    continue;
                if (cls < 0) {
                    emit_row(lp, r, GLP_UP, 0, cap - cst);
                    continue;
                }
                row_add(r, col_z(m, d, (uint32_t)cls), most);
                emit_row(lp, r, GLP_UP, 0, cap - cst + most);
                r->len--; /* the next class's z in its place */
            }
            r->len = 0;
        }
}

/* Placement rows: one class per device (which runs its V chunks), class sizes, loads and memory
 * on the chosen class, and the transfer between consecutive stages' classes. */
static void add_placement_rows(glp_prob *lp, const struct model *m, struct rowbuf *r, double t_ub) {
    const struct sp_ilp_placement *pl = m->pl;
    double work = 0, need = 0, bytes_max = 0;
    for (size_t b = 0; b < m->B; b++) {
        work += block_work(m, b) + (m->in->recompute && m->in->recompute[b] >= 0
                                        ? (double)m->in->recompute[b] / SP_TICKS_PER_MS
                                        : 0);
        need += need_of(m, b, 0); /* stage 0 holds the most in flight */
        bytes_max = fmax(bytes_max, pl->cut_bytes[b]);
    }
    for (uint32_t d = 0; d < m->P; d++)
        for (uint32_t cls = 0; cls < m->C; cls++)
            glp_set_col_kind(lp, col_z(m, d, cls), GLP_BV);
    for (uint32_t d = 0; d < m->P; d++) {
        for (uint32_t cls = 0; cls < m->C; cls++)
            row_add(r, col_z(m, d, cls), 1);
        add_row(lp, r, GLP_FX, 1, 1);
    }
    for (uint32_t cls = 0; cls < m->C; cls++) {
        for (uint32_t d = 0; d < m->P; d++)
            row_add(r, col_z(m, d, cls), 1);
        add_row(lp, r, GLP_UP, 0, pl->size[cls]);
    }
    for (uint32_t d = 0; d < m->P; d++) {
        /* device d's work (its chunks') split over the classes, w[d][c] <= (the most a device
         * of c can take) x z[d][c]: exactly its work on its class once z is integral, and a far
         * tighter relaxation than big-M rows on the load */
        double cst = 0;
        for (uint32_t cls = 0; cls < m->C; cls++)
            row_add(r, col_w(m, d, cls), 1);
        for (uint32_t k = d; k < m->K; k += m->P)
            cst += add_stage_work(m, r, k, -1);
        add_row(lp, r, GLP_FX, -cst, -cst);
        row_add(r, m->col_load + (int)d, 1);
        for (uint32_t cls = 0; cls < m->C; cls++)
            row_add(r, col_w(m, d, cls), -1 / pl->speed[cls]);
        add_row(lp, r, GLP_FX, 0, 0);
        for (uint32_t cls = 0; cls < m->C; cls++) {
            double most = isfinite(t_ub) ? fmin(work, t_ub * pl->speed[cls]) : work;
            glp_set_col_bnds(lp, col_w(m, d, cls), GLP_LO, 0, 0);
            row_add(r, col_w(m, d, cls), 1);
            row_add(r, col_z(m, d, cls), -most);
            add_row(lp, r, GLP_UP, 0, 0);
        }
    }
    for (uint32_t cls = 0; cls < m->C; cls++) {
        /* the class's devices together: at most size x T x speed of work */
        for (uint32_t d = 0; d < m->P; d++)
            row_add(r, col_w(m, d, cls), 1);
        row_add(r, m->col_T, -(double)pl->size[cls] * pl->speed[cls]);
        add_row(lp, r, GLP_UP, 0, 0);
    }
    for (uint32_t k = 0; m->K == m->P && k < m->K; k++) /* with chunks: add_chunk_memory_rows */
        for (uint32_t cls = 0; cls < m->C; cls++) {
            /* z[k][c] = 1  =>  memory_k <= the class's memory */
            uint64_t cap = pl->memory[cls];
            if (!cap || (m->c->cap[k] && m->c->cap[k] <= cap))
                continue; /* the global limit is as tight */
            double cst = add_stage_memory(m, r, k, 1);
            row_add(r, col_z(m, k, cls), need);
            add_row(lp, r, GLP_UP, 0, (double)cap + need - cst);
        }
    for (uint32_t k = 0; pl->latency_ms && m->P > 1 && k + 1 < m->K; k++) {
        uint32_t d = k % m->P, next = (k + 1) % m->P;
        glp_set_col_bnds(lp, m->col_comm + (int)k, GLP_LO, 0, 0);
        for (uint32_t cls = 0; cls < m->C; cls++)
            for (uint32_t e = 0; e < m->C; e++) {
                if (cls == e && pl->size[cls] < 2)
                    continue;
                size_t i = (size_t)cls * m->C + e;
                double alpha = pl->latency_ms[i], inv_bw = pl->ms_per_byte[i];
                double big = alpha + bytes_max * inv_bw;
                /* comm_k >= alpha + inv_bw x (bytes at k's cut) - big (2 - z[d][c] - z[d+1][e]);
                 * the bytes at the cut: sum_b bytes_b (u[b][k] - u[b+1][k]) */
                row_add(r, m->col_comm + (int)k, 1);
                for (size_t b = 0; b < m->B; b++) {
                    double coef = pl->cut_bytes[b] - (b > 0 ? pl->cut_bytes[b - 1] : 0);
                    if (coef != 0)
                        row_add(r, col_u(m, b, k), -inv_bw * coef);
                }
                row_add(r, col_z(m, d, cls), -big);
                row_add(r, col_z(m, next, e), -big);
                add_row(lp, r, GLP_LO, alpha - 2 * big, 0);
            }
    }
}

sp_status sp_ilp_solve(sp_ctx *ctx, const struct sp_ilp_input *in, struct sp_ilp_result *out) {
    memset(out, 0, sizeof *out);
    const struct sp_chain *c = in->c;
    struct model m = {.in = in,
                      .c = c,
                      .pl = in->place,
                      .K = c->p,
                      .P = in->devices,
                      .B = c->n_pos - 1,
                      .speed_max = 1};
    if (m.B < m.K)
        return SP_ERR_INFEASIBLE;
    if ((double)m.B * (m.K > 1 ? m.K - 1 : 1) > SP_ILP_MAX_COLUMNS)
        return sp_fail(ctx, SP_ERR_LIMIT,
                       "the program would have %.0f binaries, more than %d: use the dp solver or "
                       "fewer layers",
                       (double)m.B * (m.K - 1), SP_ILP_MAX_COLUMNS);
    m.n_u = (int)(m.B * (m.K - 1));
    m.col_T = m.n_u + 1;
    m.col_L = m.n_u + 2;
    m.col_load = m.n_u + 3;
    m.col_dev = m.col_load + (int)m.P;
    m.n_cols = m.col_dev + (int)m.P - 1;
    if (in->recompute) {
        m.col_r = m.n_cols + 1;
        m.col_y = m.col_r + (int)m.B;
        m.n_cols = m.col_y + (int)(m.B * m.K) - 1;
    }
    if (m.pl) {
        m.C = m.pl->classes;
        m.col_z = m.n_cols + 1;
        m.n_cols += (int)(m.P * m.C);
        m.col_w = m.n_cols + 1;
        m.n_cols += (int)(m.P * m.C);
        m.col_comm = m.n_cols + 1;
        if (m.pl->latency_ms)
            m.n_cols += (int)m.K - 1;
        m.speed_max = 0;
        for (uint32_t cls = 0; cls < m.C; cls++)
            m.speed_max = fmax(m.speed_max, m.pl->speed[cls]);
    }
    /* the longest row before merging: a device's memory state over its chunks (u twice and y
     * per block and chunk), or every column (a phase's objective fixed) */
    size_t row_cap = 3 * (size_t)m.n_cols + 4 * m.B + 16;
    struct rowbuf r = {sp_mallocarray(row_cap + 1, sizeof(int)),
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
        fill_incumbent(&m, in->incumbent, x);
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
    glp_add_cols(lp, m.n_cols);
    /* T bounds: the incumbent's value for the bottleneck; valid lower bounds otherwise */
    double t_ub = m.x_inc ? x[m.col_T] : (double)INFINITY;
    if (in->objective == SP_OBJECTIVE_ITERATION && m.x_inc && in->micro_batches > 1) {
        double sum = 0, fastest = m.speed_max;
        for (uint32_t d = 0; d < m.P; d++)
            sum += x[m.col_load + (int)d];
        for (uint32_t k = 0; c->speed && k < m.K; k++)
            fastest = fmax(fastest, c->speed[k]);
        double j_inc = (in->micro_batches - 1) * x[m.col_T] + sum;
        t_ub = (j_inc - (double)c->w[m.B] / SP_TICKS_PER_MS / fastest) / (in->micro_batches - 1) +
               1e-6;
    } else if (in->objective != SP_OBJECTIVE_BOTTLENECK) {
        t_ub = (double)INFINITY; /* range and deviation may trade a larger bottleneck for balance */
    }
    size_t fixed = 0;
    for (uint32_t k = 0; k + 1 < m.K; k++) {
        size_t lo = k + 1, hi = m.B - (m.K - 1 - k);
        if (isfinite(t_ub))
            window(&m, t_ub * (1 + 1e-9) + 1e-6, k, &lo, &hi);
        for (size_t b = 0; b < m.B; b++) {
            int j = col_u(&m, b, k);
            glp_set_col_kind(lp, j, GLP_BV);
            if (b < lo || b == 0) { /* stage <= k ends at or after lo */
                glp_set_col_bnds(lp, j, GLP_FX, 1, 1);
                fixed++;
            } else if (b >= hi) {
                glp_set_col_bnds(lp, j, GLP_FX, 0, 0);
                fixed++;
            }
        }
    }
    out->free_binaries = (size_t)m.n_u - fixed;
    double lb = 0;
    for (size_t b = 0; b < m.B; b++) { /* the heaviest block on the fastest stage */
        double best = (double)INFINITY;
        for (uint32_t k = 0; k < m.K; k++)
            best = fmin(best, block_time(&m, b, k) / (m.pl ? m.speed_max : 1));
        lb = fmax(lb, best);
    }
    if (in->objective == SP_OBJECTIVE_BOTTLENECK && in->t_lower_ms > lb)
        lb = in->t_lower_ms * (1 - 1e-12); /* the DP's optimum: exact, so a valid bound */
    if (isfinite(t_ub) && t_ub > lb)
        glp_set_col_bnds(lp, m.col_T, GLP_DB, lb, t_ub * (1 + 1e-9) + 1e-6);
    else
        glp_set_col_bnds(lp, m.col_T, GLP_LO, lb, 0);
    glp_set_col_bnds(lp, m.col_L, GLP_LO, 0, 0);
    for (uint32_t d = 0; d < m.P; d++) {
        glp_set_col_bnds(lp, m.col_load + (int)d, GLP_LO, 0, 0);
        glp_set_col_bnds(lp, m.col_dev + (int)d, GLP_LO, 0, 0);
    }
    /* contiguity */
    for (uint32_t k = 0; k + 1 < m.K; k++)
        for (size_t b = 0; b + 1 < m.B; b++) {
            row_add(&r, col_u(&m, b, k), 1);
            row_add(&r, col_u(&m, b + 1, k), -1);
            add_row(lp, &r, GLP_LO, 0, 0);
            if (k + 2 < m.K) {
                row_add(&r, col_u(&m, b, k), 1);
                row_add(&r, col_u(&m, b, k + 1), -1);
                add_row(lp, &r, GLP_UP, 0, 0);
            }
        }
    if (m.K > 2) /* the last block's ordering across k, which the loop above skips */
        for (uint32_t k = 0; k + 2 < m.K; k++) {
            row_add(&r, col_u(&m, m.B - 1, k), 1);
            row_add(&r, col_u(&m, m.B - 1, k + 1), -1);
            add_row(lp, &r, GLP_UP, 0, 0);
        }
    /* non-empty stages: sum_b u[b][k] - sum_b u[b][k-1] >= 1 */
    for (uint32_t k = 0; k < m.K; k++) {
        double rhs = 1;
        for (size_t b = 0; b < m.B; b++) {
            if (k + 1 < m.K)
                row_add(&r, col_u(&m, b, k), 1);
            else
                rhs -= 1; /* u[b][K-1] = 1 */
            if (k > 0)
                row_add(&r, col_u(&m, b, k - 1), -1);
        }
        add_row(lp, &r, GLP_LO, rhs, 0);
    }
    for (uint32_t d = 0; d < m.P; d++) {
        /* device loads: L_d = sum over its stages k = d mod P of their work / speed, with
         * recomputation (with placement, the rows of add_placement_rows instead) */
        if (!m.pl) {
            double cst = 0;
            row_add(&r, m.col_load + (int)d, 1);
            for (uint32_t k = d; k < m.K; k += m.P)
                cst += add_stage_work(&m, &r, k, c->speed ? -1 / c->speed[k] : -1);
            add_row(lp, &r, GLP_FX, -cst, -cst);
        }
        row_add(&r, m.col_load + (int)d, 1);
        row_add(&r, m.col_T, -1);
        add_row(lp, &r, GLP_UP, 0, 0);
        row_add(&r, m.col_load + (int)d, 1);
        row_add(&r, m.col_L, -1);
        add_row(lp, &r, GLP_LO, 0, 0);
        /* dev_d >= +-(L_d - mean), mean = sum L / P */
        for (int sign = -1; sign <= 1; sign += 2) {
            row_add(&r, m.col_dev + (int)d, 1);
            for (uint32_t e = 0; e < m.P; e++)
                row_add(&r, m.col_load + (int)e, sign * ((e == d ? 1.0 : 0.0) - 1.0 / m.P));
            add_row(lp, &r, GLP_LO, 0, 0);
        }
    }
    /* recomputation: y[b][k] = r[b] AND "block b in stage k" (x = u[b][k] - u[b][k-1]):
     * y <= r, y <= x, y >= r + x - 1; y costs the block's recompute time in stage k and spares
     * k's in-flight copies of its saved bytes */
    if (in->recompute) {
        for (size_t b = 0; b < m.B; b++) {
            int jr = m.col_r + (int)b;
            glp_set_col_kind(lp, jr, GLP_BV);
            if (in->recompute[b] < 0)
                glp_set_col_bnds(lp, jr, GLP_FX, 0, 0);
            for (uint32_t k = 0; k < m.K; k++) {
                int jy = col_y(&m, b, k);
                if (in->recompute[b] < 0) {
                    glp_set_col_bnds(lp, jy, GLP_FX, 0, 0);
                    continue;
                }
                glp_set_col_bnds(lp, jy, GLP_DB, 0, 1);
                /* x[b][k] = u[b][k] - u[b][k-1], with u[b][K-1] = 1 and u[b][-1] = 0 */
                double cx = k + 1 < m.K ? 0 : 1; /* the constant part of x */
                row_add(&r, jy, 1);
                row_add(&r, jr, -1);
                add_row(lp, &r, GLP_UP, 0, 0);
                row_add(&r, jy, 1);
                if (k + 1 < m.K)
                    row_add(&r, col_u(&m, b, k), -1);
                if (k > 0)
                    row_add(&r, col_u(&m, b, k - 1), 1);
                add_row(lp, &r, GLP_UP, 0, cx);
                row_add(&r, jy, 1);
                row_add(&r, jr, -1);
                if (k + 1 < m.K)
                    row_add(&r, col_u(&m, b, k), -1);
                if (k > 0)
                    row_add(&r, col_u(&m, b, k - 1), 1);
                add_row(lp, &r, GLP_LO, cx - 1, 0);
            }
        }
    }
    /* memory caps (one chunk per device): sum_b (mem_b + k_s saved_b) x[b][s] <= cap_s */
    for (uint32_t k = 0; c->any_cap && m.P == m.K && k < m.K; k++) {
        if (!c->cap[k])
            continue;
        double cst = add_stage_memory(&m, &r, k, 1);
        add_row(lp, &r, GLP_UP, 0, (double)c->cap[k] - cst);
    }
    if (m.pl)
        add_placement_rows(lp, &m, &r, t_ub * (1 + 1e-9) + 1e-6);
    if (in->chunk_memory)
        add_chunk_memory_rows(lp, &m, &r);
    enum phase phases[3] = {PHASE_OBJECTIVE};
    int n_phases = 1;
    bool speeds_differ = false;
    for (uint32_t cls = 1; m.pl && cls < m.C; cls++)
        speeds_differ |= m.pl->speed[cls] != m.pl->speed[0];
    if (m.pl && (m.pl->latency_ms || speeds_differ))
        phases[n_phases++] = PHASE_LATENCY;
    if (in->objective == SP_OBJECTIVE_BOTTLENECK)
        phases[n_phases++] = PHASE_SPREAD;
    glp_scale_prob(lp, GLP_SF_AUTO);
    glp_smcp smcp;
    glp_init_smcp(&smcp);
    smcp.msg_lev = GLP_MSG_OFF;
    glp_iocp iocp;
    glp_init_iocp(&iocp);
    iocp.msg_lev = GLP_MSG_OFF;
    iocp.presolve = GLP_OFF; /* keeps column numbers, which the injected incumbent relies on */
    iocp.mir_cuts = GLP_ON;
    iocp.gmi_cuts = GLP_ON;
    iocp.cov_cuts = GLP_ON;
    iocp.clq_cuts = GLP_ON;
    iocp.fp_heur = GLP_ON;
    iocp.cb_func = callback;
    iocp.cb_info = &m;
    double limit_ms = in->time_limit_s * 1e3;
    int mip = GLP_UNDEF;
    double phase1_ms = 0;
    for (int i = 0; i < n_phases && st == SP_OK; i++) {
        enum phase ph = phases[i];
        set_phase_objective(lp, &m, ph);
        m.injected = false;
        m.bound = -(double)INFINITY;
        double left_lp = limit_ms - (sp_now_ms() - t0);
        smcp.tm_lim = left_lp > 1 ? (int)fmin(left_lp, 2e9) : 1;
        int ret = glp_simplex(lp, &smcp);
        int lps = glp_get_status(lp);
        if (i > 0 && (ret != 0 || lps != GLP_OPT)) {
            out->status = phase_failed[ph];
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
        read_solution(lp, &m, out);
        if (i > 0) { /* a tie-break: the objective's figures stay those of the first phase */
            if (!proven) {
                out->status = phase_stopped[ph];
                break;
            }
        } else {
            out->found = true;
            out->optimal = proven;
            out->status = ret == GLP_ETMLIM ? "time limit" : status_name(mip);
            out->objective_ms = glp_mip_obj_val(lp);
            out->mip_gap = proven ? 0 : m.gap;
            out->best_bound = proven ? glp_mip_obj_val(lp) : m.bound;
            phase1_ms = sp_now_ms() - t0;
            if (!proven)
                break; /* no time left for the tie-breaks: keep the objective's plan */
        }
        if (i + 1 < n_phases) {
            /* the next phase: this one fixed at its optimum, starting from its solution (GLPK
             * does not check injected solutions, so it must be exactly feasible: every column) */
            fix_phase_objective(lp, &m, &r, glp_mip_obj_val(lp));
            for (int j = 1; j <= m.n_cols; j++)
                x[j] = glp_mip_col_val(lp, j);
            m.x_inc = x;
        }
    }
    /* The time ran out before GLPK had any plan: the incumbent is still a valid plan. */
    if (!out->found && in->incumbent && m.x_inc && out->status &&
        strncmp(out->status, "time limit", 10) == 0) {
        sp_ctx_begin(ctx);
        st = SP_OK;
        memcpy(out->bounds, in->incumbent, ((size_t)m.K + 1) * sizeof *out->bounds);
        if (m.pl)
            memcpy(out->stage_class, m.pl->incumbent, m.K * sizeof *out->stage_class);
        out->found = true;
        out->optimal = false;
        out->status = "time limit: the incumbent is kept";
        double value = m.x_inc[m.col_T];
        if (in->objective == SP_OBJECTIVE_ITERATION) {
            value *= in->micro_batches > 0 ? in->micro_batches - 1 : 0;
            for (uint32_t d = 0; d < m.P; d++)
                value += m.x_inc[m.col_load + (int)d];
        } else if (in->objective == SP_OBJECTIVE_RANGE) {
            value -= m.x_inc[m.col_L];
        } else if (in->objective == SP_OBJECTIVE_DEVIATION) {
            value = 0;
            for (uint32_t d = 0; d < m.P; d++)
                value += m.x_inc[m.col_dev + (int)d];
        }
        out->objective_ms = value;
        out->best_bound = in->objective == SP_OBJECTIVE_BOTTLENECK ? lb : 0;
        out->mip_gap = value > 0 ? (value - out->best_bound) / value : 0;
    }
    out->nodes = m.nodes;
    out->solve_ms = sp_now_ms() - t0;
    glp_delete_prob(lp);
    glp_error_hook(NULL, NULL);
    glp_term_out(term);
    release_solve(&r, x, out, st != SP_OK);
    return st;
}

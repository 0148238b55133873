/* partitioner/solvers/ilp_model.c: the mixed-integer program on GLPK: its columns and rows (solved
 * in ilp_glpk.c).
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
#include <math.h>
#include <string.h>

#include "ilp_model.h"

void sp_ilp_row_add(struct sp_ilp_rowbuf *r, int col, double v) {
    r->ind[++r->len] = col;
    r->val[r->len] = v;
}

/* Adds the row and keeps its terms: a column named twice is counted once with its coefficients
 * summed (GLPK refuses repeated columns; the chunks of one device share u columns when P = 1). */
static int emit_row(glp_prob *lp, struct sp_ilp_rowbuf *r, int type, double lb, double ub) {
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
int sp_ilp_add_row(glp_prob *lp, struct sp_ilp_rowbuf *r, int type, double lb, double ub) {
    int i = emit_row(lp, r, type, lb, ub);
    r->len = 0;
    return i;
}

/* Adds scale x "block b is in stage k" (x = u[b][k] - u[b][k-1], u[b][K-1] = 1, u[b][-1] = 0)
 * for every block, weighted by value[b]; returns the constant part (the u[b][K-1] terms). */
static double add_stage_sum(const struct sp_ilp_model *m, struct sp_ilp_rowbuf *r, uint32_t k,
                            double scale,
                            double (*value)(const struct sp_ilp_model *, size_t, uint32_t)) {
    double cst = 0;
    for (size_t b = 0; b < m->B; b++) {
        double v = scale * value(m, b, k);
        if (v == 0)
            continue;
        if (k + 1 < m->K)
            sp_ilp_row_add(r, col_u(m, b, k), v);
        else
            cst += v;
        if (k > 0)
            sp_ilp_row_add(r, col_u(m, b, k - 1), -v);
    }
    return cst;
}

static double work_of(const struct sp_ilp_model *m, size_t b, uint32_t k) {
    (void)k;
    return block_work(m, b);
}

/* memory block b needs on stage k: resident bytes, k's in-flight copies of its saved bytes, and
 * the weight versions k stashes beyond its own (schedules without flushes) */
static double need_of(const struct sp_ilp_model *m, size_t b, uint32_t k) {
    const struct sp_chain *c = m->c;
    return (double)(c->mem[b + 1] - c->mem[b]) +
           (double)c->inflight[k] * (double)(c->saved[b + 1] - c->saved[b]) +
           (double)sp_chain_stash_bytes(c, k, b, b + 1);
}

static double spared_of(const struct sp_ilp_model *m, size_t b, uint32_t k) {
    return (double)m->c->inflight[k] * (double)(m->c->saved[b + 1] - m->c->saved[b]);
}

/* stage k's work at speed 1 (ms) times scale, recomputation included; returns the constant */
static double add_stage_work(const struct sp_ilp_model *m, struct sp_ilp_rowbuf *r, uint32_t k,
                             double scale) {
    double cst = add_stage_sum(m, r, k, scale, work_of);
    for (size_t b = 0; m->in->recompute && b < m->B; b++)
        if (m->in->recompute[b] >= 0)
            sp_ilp_row_add(r, col_y(m, b, k),
                           scale * (double)m->in->recompute[b] / SP_TICKS_PER_MS);
    return cst;
}

/* stage k's memory (bytes) times scale, less what recomputation spares; returns the constant */
static double add_stage_memory(const struct sp_ilp_model *m, struct sp_ilp_rowbuf *r, uint32_t k,
                               double scale) {
    double cst = add_stage_sum(m, r, k, scale, need_of);
    for (size_t b = 0; m->in->recompute && b < m->B; b++) {
        double spared = spared_of(m, b, k);
        if (m->in->recompute[b] >= 0 && spared != 0)
            sp_ilp_row_add(r, col_y(m, b, k), -scale * spared);
    }
    return cst;
}

/* window of stage k's end (a position) for a cap T_UB on every stage: the stages up to k must
 * carry the blocks before it, the later stages those after */
static void window(const struct sp_ilp_model *m, double t_ub_ms, uint32_t k, size_t *lo,
                   size_t *hi) {
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
static double incumbent_recompute_ms(const struct sp_ilp_model *m, size_t b) {
    const struct sp_ilp_input *in = m->in;
    return in->recompute && in->incumbent_recomputes && in->recompute[b] >= 0
               ? (double)in->recompute[b] / SP_TICKS_PER_MS
               : 0;
}

static double load_of(const struct sp_ilp_model *m, const size_t *bounds, uint32_t d) {
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
static double transfer_ms(const struct sp_ilp_model *m, uint32_t c, uint32_t e, size_t last) {
    size_t i = (size_t)c * m->C + e;
    return m->pl->latency_ms[i] + m->pl->cut_bytes[last] * m->pl->ms_per_byte[i];
}

void sp_ilp_fill_incumbent(struct sp_ilp_model *m, const size_t *bounds, double *x) {
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

/* Interleaved memory: for every device and in-flight state, the sum over its chunks of their
 * resident bytes and held x saved bytes (less what recomputation spares) fits the cap. The
 * chunks of one device share u columns when P = 1 (sp_ilp_add_row sums them). */
static void add_chunk_memory_rows(glp_prob *lp, const struct sp_ilp_model *m,
                                  struct sp_ilp_rowbuf *r) {
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
                            sp_ilp_row_add(r, col_u(m, b, k), need);
                        else
                            cst += need;
                        if (k > 0)
                            sp_ilp_row_add(r, col_u(m, b, k - 1), -need);
                    }
                    if (m->in->recompute && m->in->recompute[b] >= 0 && held * saved != 0)
                        sp_ilp_row_add(r, col_y(m, b, k), -held * saved);
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
                sp_ilp_row_add(r, col_z(m, d, (uint32_t)cls), most);
                emit_row(lp, r, GLP_UP, 0, cap - cst + most);
                r->len--; /* the next class's z in its place */
            }
            r->len = 0;
        }
}

/* Placement rows: one class per device (which runs its V chunks), class sizes, loads and memory
 * on the chosen class, and the transfer between consecutive stages' classes. */
static void add_placement_rows(glp_prob *lp, const struct sp_ilp_model *m, struct sp_ilp_rowbuf *r,
                               double t_ub) {
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
            sp_ilp_row_add(r, col_z(m, d, cls), 1);
        sp_ilp_add_row(lp, r, GLP_FX, 1, 1);
    }
    for (uint32_t cls = 0; cls < m->C; cls++) {
        for (uint32_t d = 0; d < m->P; d++)
            sp_ilp_row_add(r, col_z(m, d, cls), 1);
        sp_ilp_add_row(lp, r, GLP_UP, 0, pl->size[cls]);
    }
    for (uint32_t d = 0; d < m->P; d++) {
        /* device d's work (its chunks') split over the classes, w[d][c] <= (the most a device
         * of c can take) x z[d][c]: exactly its work on its class once z is integral, and a far
         * tighter relaxation than big-M rows on the load */
        double cst = 0;
        for (uint32_t cls = 0; cls < m->C; cls++)
            sp_ilp_row_add(r, col_w(m, d, cls), 1);
        for (uint32_t k = d; k < m->K; k += m->P)
            cst += add_stage_work(m, r, k, -1);
        sp_ilp_add_row(lp, r, GLP_FX, -cst, -cst);
        sp_ilp_row_add(r, m->col_load + (int)d, 1);
        for (uint32_t cls = 0; cls < m->C; cls++)
            sp_ilp_row_add(r, col_w(m, d, cls), -1 / pl->speed[cls]);
        sp_ilp_add_row(lp, r, GLP_FX, 0, 0);
        for (uint32_t cls = 0; cls < m->C; cls++) {
            double most = isfinite(t_ub) ? fmin(work, t_ub * pl->speed[cls]) : work;
            glp_set_col_bnds(lp, col_w(m, d, cls), GLP_LO, 0, 0);
            sp_ilp_row_add(r, col_w(m, d, cls), 1);
            sp_ilp_row_add(r, col_z(m, d, cls), -most);
            sp_ilp_add_row(lp, r, GLP_UP, 0, 0);
        }
    }
    for (uint32_t cls = 0; cls < m->C; cls++) {
        /* the class's devices together: at most size x T x speed of work */
        for (uint32_t d = 0; d < m->P; d++)
            sp_ilp_row_add(r, col_w(m, d, cls), 1);
        sp_ilp_row_add(r, m->col_T, -(double)pl->size[cls] * pl->speed[cls]);
        sp_ilp_add_row(lp, r, GLP_UP, 0, 0);
    }
    for (uint32_t k = 0; m->K == m->P && k < m->K; k++) /* with chunks: add_chunk_memory_rows */
        for (uint32_t cls = 0; cls < m->C; cls++) {
            /* z[k][c] = 1  =>  memory_k <= the class's memory */
            uint64_t cap = pl->memory[cls];
            if (!cap || (m->c->cap[k] && m->c->cap[k] <= cap))
                continue; /* the global limit is as tight */
            double cst = add_stage_memory(m, r, k, 1);
            sp_ilp_row_add(r, col_z(m, k, cls), need);
            sp_ilp_add_row(lp, r, GLP_UP, 0, (double)cap + need - cst);
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
                sp_ilp_row_add(r, m->col_comm + (int)k, 1);
                for (size_t b = 0; b < m->B; b++) {
                    double coef = pl->cut_bytes[b] - (b > 0 ? pl->cut_bytes[b - 1] : 0);
                    if (coef != 0)
                        sp_ilp_row_add(r, col_u(m, b, k), -inv_bw * coef);
                }
                sp_ilp_row_add(r, col_z(m, d, cls), -big);
                sp_ilp_row_add(r, col_z(m, next, e), -big);
                sp_ilp_add_row(lp, r, GLP_LO, alpha - 2 * big, 0);
            }
    }
}

/* The program's columns for this input (the layout in struct sp_ilp_model), or why there is no
 * program: fewer blocks than stages, or more binaries than SP_ILP_MAX_COLUMNS. */
sp_status sp_ilp_model_init(sp_ctx *ctx, const struct sp_ilp_input *in, struct sp_ilp_model *m) {
    const struct sp_chain *c = in->c;
    *m = (struct sp_ilp_model){.in = in,
                               .c = c,
                               .pl = in->place,
                               .K = c->p,
                               .P = in->devices,
                               .B = c->n_pos - 1,
                               .speed_max = 1};
    if (m->B < m->K)
        return SP_ERR_INFEASIBLE;
    if ((double)m->B * (m->K > 1 ? m->K - 1 : 1) > SP_ILP_MAX_COLUMNS)
        return sp_fail(ctx, SP_ERR_LIMIT,
                       "the program would have %.0f binaries, more than %d: use the dp solver or "
                       "fewer layers",
                       (double)m->B * (m->K - 1), SP_ILP_MAX_COLUMNS);
    m->n_u = (int)(m->B * (m->K - 1));
    m->col_T = m->n_u + 1;
    m->col_L = m->n_u + 2;
    m->col_load = m->n_u + 3;
    m->col_dev = m->col_load + (int)m->P;
    m->n_cols = m->col_dev + (int)m->P - 1;
    if (in->recompute) {
        m->col_r = m->n_cols + 1;
        m->col_y = m->col_r + (int)m->B;
        m->n_cols = m->col_y + (int)(m->B * m->K) - 1;
    }
    if (m->pl) {
        m->C = m->pl->classes;
        m->col_z = m->n_cols + 1;
        m->n_cols += (int)(m->P * m->C);
        m->col_w = m->n_cols + 1;
        m->n_cols += (int)(m->P * m->C);
        m->col_comm = m->n_cols + 1;
        if (m->pl->latency_ms)
            m->n_cols += (int)m->K - 1;
        m->speed_max = 0;
        for (uint32_t cls = 0; cls < m->C; cls++)
            m->speed_max = fmax(m->speed_max, m->pl->speed[cls]);
    }
    return SP_OK;
}

/* Every column's kind and bounds and every row of the program (the formulation above), with u
 * fixed outside each stage's window under the incumbent's bottleneck. *lb gets the lower bound of
 * T, *free_binaries the u left free. */
/* recomputation: y[b][k] = r[b] AND "block b in stage k" (x = u[b][k] - u[b][k-1]):
 * y <= r, y <= x, y >= r + x - 1; y costs the block's recompute time in stage k and spares
 * k's in-flight copies of its saved bytes */
static void add_recompute_rows(glp_prob *lp, const struct sp_ilp_model *m,
                               struct sp_ilp_rowbuf *r) {
    const struct sp_ilp_input *in = m->in;
    for (size_t b = 0; b < m->B; b++) {
        int jr = m->col_r + (int)b;
        glp_set_col_kind(lp, jr, GLP_BV);
        if (in->recompute[b] < 0)
            glp_set_col_bnds(lp, jr, GLP_FX, 0, 0);
        for (uint32_t k = 0; k < m->K; k++) {
            int jy = col_y(m, b, k);
            if (in->recompute[b] < 0) {
                glp_set_col_bnds(lp, jy, GLP_FX, 0, 0);
                continue;
            }
            glp_set_col_bnds(lp, jy, GLP_DB, 0, 1);
            /* m->x_inc[b][k] = u[b][k] - u[b][k-1], with u[b][K-1] = 1 and u[b][-1] = 0 */
            double cx = k + 1 < m->K ? 0 : 1; /* the constant part of x */
            sp_ilp_row_add(r, jy, 1);
            sp_ilp_row_add(r, jr, -1);
            sp_ilp_add_row(lp, r, GLP_UP, 0, 0);
            sp_ilp_row_add(r, jy, 1);
            if (k + 1 < m->K)
                sp_ilp_row_add(r, col_u(m, b, k), -1);
            if (k > 0)
                sp_ilp_row_add(r, col_u(m, b, k - 1), 1);
            sp_ilp_add_row(lp, r, GLP_UP, 0, cx);
            sp_ilp_row_add(r, jy, 1);
            sp_ilp_row_add(r, jr, -1);
            if (k + 1 < m->K)
                sp_ilp_row_add(r, col_u(m, b, k), -1);
            if (k > 0)
                sp_ilp_row_add(r, col_u(m, b, k - 1), 1);
            sp_ilp_add_row(lp, r, GLP_LO, cx - 1, 0);
        }
    }
}

/* T's upper bound: the incumbent's bottleneck; under iteration what (M-1) T can reach below the
 * incumbent's J; none for range and deviation (they may trade a larger bottleneck for balance) */
static double t_upper(const struct sp_ilp_model *m) {
    const struct sp_chain *c = m->c;
    const struct sp_ilp_input *in = m->in;
    if (in->objective == SP_OBJECTIVE_ITERATION && m->x_inc && in->micro_batches > 1) {
        double sum = 0, fastest = m->speed_max;
        for (uint32_t d = 0; d < m->P; d++)
            sum += m->x_inc[m->col_load + (int)d];
        for (uint32_t k = 0; c->speed && k < m->K; k++)
            fastest = fmax(fastest, c->speed[k]);
        double j_inc = (in->micro_batches - 1) * m->x_inc[m->col_T] + sum;
        return (j_inc - (double)c->w[m->B] / SP_TICKS_PER_MS / fastest) / (in->micro_batches - 1) +
               1e-6;
    }
    if (in->objective != SP_OBJECTIVE_BOTTLENECK)
        return (double)INFINITY;
    return m->x_inc ? m->x_inc[m->col_T] : (double)INFINITY;
}

/* the columns: boundary binaries fixed outside their windows under T's bound, T between its
 * lower bound (the heaviest block on the fastest stage, or the DP's optimum) and t_ub; the
 * number of binaries left free; T's lower bound */
static double set_columns(glp_prob *lp, struct sp_ilp_model *m, double t_ub,
                          size_t *free_binaries) {
    const struct sp_ilp_input *in = m->in;
    glp_add_cols(lp, m->n_cols);
    size_t fixed = 0;
    for (uint32_t k = 0; k + 1 < m->K; k++) {
        size_t lo = k + 1, hi = m->B - (m->K - 1 - k);
        if (isfinite(t_ub))
            window(m, t_ub * (1 + 1e-9) + 1e-6, k, &lo, &hi);
        for (size_t b = 0; b < m->B; b++) {
            int j = col_u(m, b, k);
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
    *free_binaries = (size_t)m->n_u - fixed;
    double lb = 0;
    for (size_t b = 0; b < m->B; b++) { /* the heaviest block on the fastest stage */
        double best = (double)INFINITY;
        for (uint32_t k = 0; k < m->K; k++)
            best = fmin(best, block_time(m, b, k) / (m->pl ? m->speed_max : 1));
        lb = fmax(lb, best);
    }
    if (in->objective == SP_OBJECTIVE_BOTTLENECK && in->t_lower_ms > lb)
        lb = in->t_lower_ms * (1 - 1e-12); /* the DP's optimum: exact, so a valid bound */
    if (isfinite(t_ub) && t_ub > lb)
        glp_set_col_bnds(lp, m->col_T, GLP_DB, lb, t_ub * (1 + 1e-9) + 1e-6);
    else
        glp_set_col_bnds(lp, m->col_T, GLP_LO, lb, 0);
    glp_set_col_bnds(lp, m->col_L, GLP_LO, 0, 0);
    for (uint32_t d = 0; d < m->P; d++) {
        glp_set_col_bnds(lp, m->col_load + (int)d, GLP_LO, 0, 0);
        glp_set_col_bnds(lp, m->col_dev + (int)d, GLP_LO, 0, 0);
    }
    return lb;
}

/* the boundaries make a chain: contiguous, every stage non-empty */
static void add_chain_rows(glp_prob *lp, struct sp_ilp_model *m, struct sp_ilp_rowbuf *r) {
    for (uint32_t k = 0; k + 1 < m->K; k++)
        for (size_t b = 0; b + 1 < m->B; b++) {
            sp_ilp_row_add(r, col_u(m, b, k), 1);
            sp_ilp_row_add(r, col_u(m, b + 1, k), -1);
            sp_ilp_add_row(lp, r, GLP_LO, 0, 0);
            if (k + 2 < m->K) {
                sp_ilp_row_add(r, col_u(m, b, k), 1);
                sp_ilp_row_add(r, col_u(m, b, k + 1), -1);
                sp_ilp_add_row(lp, r, GLP_UP, 0, 0);
            }
        }
    if (m->K > 2) /* the last block's ordering across k, which the loop above skips */
        for (uint32_t k = 0; k + 2 < m->K; k++) {
            sp_ilp_row_add(r, col_u(m, m->B - 1, k), 1);
            sp_ilp_row_add(r, col_u(m, m->B - 1, k + 1), -1);
            sp_ilp_add_row(lp, r, GLP_UP, 0, 0);
        }
    /* non-empty stages: sum_b u[b][k] - sum_b u[b][k-1] >= 1 */
    for (uint32_t k = 0; k < m->K; k++) {
        double rhs = 1;
        for (size_t b = 0; b < m->B; b++) {
            if (k + 1 < m->K)
                sp_ilp_row_add(r, col_u(m, b, k), 1);
            else
                rhs -= 1; /* u[b][K-1] = 1 */
            if (k > 0)
                sp_ilp_row_add(r, col_u(m, b, k - 1), -1);
        }
        sp_ilp_add_row(lp, r, GLP_LO, rhs, 0);
    }
}

/* device loads: L_d = sum over its stages k = d mod P of their work / speed, with recomputation
 * (with placement, the rows of add_placement_rows instead); T above them, L below, and each
 * device's distance from the mean */
static void add_load_rows(glp_prob *lp, struct sp_ilp_model *m, struct sp_ilp_rowbuf *r) {
    const struct sp_chain *c = m->c;
    for (uint32_t d = 0; d < m->P; d++) {
        if (!m->pl) {
            double cst = 0;
            sp_ilp_row_add(r, m->col_load + (int)d, 1);
            for (uint32_t k = d; k < m->K; k += m->P)
                cst += add_stage_work(m, r, k, c->speed ? -1 / c->speed[k] : -1);
            sp_ilp_add_row(lp, r, GLP_FX, -cst, -cst);
        }
        sp_ilp_row_add(r, m->col_load + (int)d, 1);
        sp_ilp_row_add(r, m->col_T, -1);
        sp_ilp_add_row(lp, r, GLP_UP, 0, 0);
        sp_ilp_row_add(r, m->col_load + (int)d, 1);
        sp_ilp_row_add(r, m->col_L, -1);
        sp_ilp_add_row(lp, r, GLP_LO, 0, 0);
        /* dev_d >= +-(L_d - mean), mean = sum L / P */
        for (int sign = -1; sign <= 1; sign += 2) {
            sp_ilp_row_add(r, m->col_dev + (int)d, 1);
            for (uint32_t e = 0; e < m->P; e++)
                sp_ilp_row_add(r, m->col_load + (int)e, sign * ((e == d ? 1.0 : 0.0) - 1.0 / m->P));
            sp_ilp_add_row(lp, r, GLP_LO, 0, 0);
        }
    }
}

void sp_ilp_add_rows(glp_prob *lp, struct sp_ilp_model *m, struct sp_ilp_rowbuf *r, double *lb_out,
                     size_t *free_binaries) {
    const struct sp_chain *c = m->c;
    double t_ub = t_upper(m);
    *lb_out = set_columns(lp, m, t_ub, free_binaries);
    add_chain_rows(lp, m, r);
    add_load_rows(lp, m, r);
    if (m->in->recompute)
        add_recompute_rows(lp, m, r);
    /* memory caps (one chunk per device): sum_b (mem_b + k_s saved_b) m->x_inc[b][s] <= cap_s */
    for (uint32_t k = 0; c->any_cap && m->P == m->K && k < m->K; k++) {
        if (!c->cap[k])
            continue;
        double cst = add_stage_memory(m, r, k, 1);
        sp_ilp_add_row(lp, r, GLP_UP, 0, (double)c->cap[k] - cst);
    }
    if (m->pl)
        add_placement_rows(lp, m, r, t_ub * (1 + 1e-9) + 1e-6);
    if (m->in->chunk_memory)
        add_chunk_memory_rows(lp, m, r);
}

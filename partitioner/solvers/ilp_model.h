/* partitioner/solvers/ilp_model.h: the GLPK program's layout, shared by its set-up (ilp_model.c:
 * columns and rows) and its solve (ilp_glpk.c: phases, callbacks, the result). The formulation is
 * described at the top of ilp_model.c. */
#ifndef SP_PARTITIONER_ILP_MODEL_H
#define SP_PARTITIONER_ILP_MODEL_H

#include <glpk.h>

#include "ilp.h"

#define SP_ILP_MAX_COLUMNS 2000000

struct sp_ilp_model {
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

static inline int col_u(const struct sp_ilp_model *m, size_t b, uint32_t k) {
    return 1 + (int)(b * (m->K - 1) + k);
}
static inline int col_z(const struct sp_ilp_model *m, uint32_t k, uint32_t cls) {
    return m->col_z + (int)(k * m->C + cls);
}
static inline int col_w(const struct sp_ilp_model *m, uint32_t k, uint32_t cls) {
    return m->col_w + (int)(k * m->C + cls);
}
static inline int col_y(const struct sp_ilp_model *m, size_t b, uint32_t k) {
    return m->col_y + (int)(b * m->K + k);
}

/* work of block b (ms at speed 1) */
static inline double block_work(const struct sp_ilp_model *m, size_t b) {
    return (double)(m->c->w[b + 1] - m->c->w[b]) / SP_TICKS_PER_MS;
}

/* time of block b on virtual stage k (its device's speed), ms */
static inline double block_time(const struct sp_ilp_model *m, size_t b, uint32_t k) {
    double w = block_work(m, b);
    return m->c->speed ? w / m->c->speed[k] : w;
}

/* One row being built: (ind, val) 1-based as GLPK takes them, merged per column before it is
 * added. */
struct sp_ilp_rowbuf {
    int *ind;
    double *val;
    int len;
    int *slot; /* [n_cols + 1], zero between rows: where a column sits in the merged row */
    int *mind; /* the merged row */
    double *mval;
};

/* add v x column col to the row */
void sp_ilp_row_add(struct sp_ilp_rowbuf *r, int col, double v);
/* add the row (bounds as glp_set_row_bnds takes them) and empty the buffer; returns its index */
int sp_ilp_add_row(glp_prob *lp, struct sp_ilp_rowbuf *r, int type, double lb, double ub);
/* x (columns 1..n_cols) set to the plan of these bounds: a solution GLPK can start from */
void sp_ilp_fill_incumbent(struct sp_ilp_model *m, const size_t *bounds, double *x);
/* the columns (ilp_model.c) */
sp_status sp_ilp_model_init(sp_ctx *ctx, const struct sp_ilp_input *in, struct sp_ilp_model *m);
/* the rows (ilp_model.c) */
void sp_ilp_add_rows(glp_prob *lp, struct sp_ilp_model *m, struct sp_ilp_rowbuf *r, double *lb_out,
                     size_t *free_binaries);

#endif

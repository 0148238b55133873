/* models/op_common.h: the matrix products and normalizations the ops share.
 *
 * Row-major throughout: X[rows][in] holds `rows` vectors of `in` features, W[out][in] is a
 * weight matrix as PyTorch stores nn.Linear's, so y = x W^T + b. Every product goes to OpenBLAS
 * (cblas_sgemm); nothing here re-implements BLAS. */
#ifndef SP_MODELS_OP_COMMON_H
#define SP_MODELS_OP_COMMON_H

#include <stddef.h>

#include "model_impl.h"

/* Y[rows][out] = X[rows][in] W[out][in]^T (+ b[out] when b) */
void sp_mm_forward(size_t rows, size_t in, size_t out, const float *X, const float *W,
                   const float *b, float *Y);
/* dX[rows][in] (= or += when accumulate) dY[rows][out] W[out][in] */
void sp_mm_dx(size_t rows, size_t in, size_t out, const float *dY, const float *W, float *dX,
              int accumulate);
/* dW[out][in] += dY^T X, db[out] += column sums of dY (when db); timed into io->wgrad_ms */
void sp_mm_dw(const struct sp_op_io *io, size_t rows, size_t in, size_t out, const float *dY,
              const float *X, float *dW, float *db);

/* Normalization over the last dimension of rows x n: layernorm y = (x - mean) rstd g + beta, or
 * rmsnorm y = x rstd g (beta NULL). stats[2 * rows] keeps mean and rstd for the backward. */
void sp_norm_forward(enum sp_norm_kind kind, size_t rows, size_t n, const float *x, const float *g,
                     const float *beta, float *y, float *stats);
/* dx[rows][n] += the input gradient; dg, dbeta += (dbeta NULL for rmsnorm) */
void sp_norm_backward(const struct sp_op_io *io, enum sp_norm_kind kind, size_t rows, size_t n,
                      const float *x, const float *stats, const float *g, const float *dy,
                      float *dx, float *dg, float *dbeta);
/* parameters of a norm over n features: g (and beta for layernorm) */
size_t sp_norm_params(enum sp_norm_kind kind, size_t n);

/* row[0..n) becomes softmax(row), stable (the row's maximum subtracted first) */
void sp_softmax_row(float *row, size_t n);

/* the timer around weight-gradient work */
double sp_wgrad_begin(const struct sp_op_io *io);
void sp_wgrad_end(const struct sp_op_io *io, double t0);

#endif

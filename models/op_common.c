/* models/op_common.c: matrix products on OpenBLAS and the two normalizations. */
#include <math.h>
#include <string.h>

#include "blas.h"
#include "op_common.h"

#define NORM_EPS 1e-5f

double sp_wgrad_begin(const struct sp_op_io *io) {
    return io->wgrad_ms ? sp_now_ms() : 0.0;
}

void sp_wgrad_end(const struct sp_op_io *io, double t0) {
    if (io->wgrad_ms)
        *io->wgrad_ms += sp_now_ms() - t0;
}

void sp_mm_forward(size_t rows, size_t in, size_t out, const float *X, const float *W,
                   const float *b, float *Y) {
    sp_sgemm(false, true, (int)rows, (int)out, (int)in, 1.0f, X, (int)in, W, (int)in, 0.0f, Y,
             (int)out);
    if (b)
        for (size_t r = 0; r < rows; r++)
            for (size_t o = 0; o < out; o++)
                Y[r * out + o] += b[o];
}

void sp_mm_dx(size_t rows, size_t in, size_t out, const float *dY, const float *W, float *dX,
              int accumulate) {
    sp_sgemm(false, false, (int)rows, (int)in, (int)out, 1.0f, dY, (int)out, W, (int)in,
             accumulate ? 1.0f : 0.0f, dX, (int)in);
}

void sp_mm_dw(const struct sp_op_io *io, size_t rows, size_t in, size_t out, const float *dY,
              const float *X, float *dW, float *db) {
    double t0 = sp_wgrad_begin(io);
    sp_sgemm(true, false, (int)out, (int)in, (int)rows, 1.0f, dY, (int)out, X, (int)in, 1.0f, dW,
             (int)in);
    if (db)
        for (size_t r = 0; r < rows; r++)
            for (size_t o = 0; o < out; o++)
                db[o] += dY[r * out + o];
    sp_wgrad_end(io, t0);
}

void sp_softmax_row(float *row, size_t n) {
    float mx = row[0];
    for (size_t j = 1; j < n; j++)
        mx = row[j] > mx ? row[j] : mx;
    double sum = 0.0;
    for (size_t j = 0; j < n; j++)
        sum += (double)(row[j] = expf(row[j] - mx));
    float inv = (float)(1.0 / sum);
    for (size_t j = 0; j < n; j++)
        row[j] *= inv;
}

size_t sp_norm_params(enum sp_norm_kind kind, size_t n) {
    return kind == SP_NORM_LAYER ? 2 * n : n;
}

void sp_norm_forward(enum sp_norm_kind kind, size_t rows, size_t n, const float *x, const float *g,
                     const float *beta, float *y, float *stats) {
    for (size_t r = 0; r < rows; r++) {
        const float *xr = x + r * n;
        float *yr = y + r * n;
        double mean = 0.0, sq = 0.0;
        if (kind == SP_NORM_LAYER) {
            for (size_t k = 0; k < n; k++)
                mean += (double)xr[k];
            mean /= (double)n;
        }
        for (size_t k = 0; k < n; k++) {
            double d = (double)xr[k] - mean;
            sq += d * d;
        }
        float rstd = (float)(1.0 / sqrt(sq / (double)n + (double)NORM_EPS));
        float mu = (float)mean;
        for (size_t k = 0; k < n; k++)
            yr[k] = (xr[k] - mu) * rstd * g[k] + (beta ? beta[k] : 0.0f);
        stats[2 * r] = mu;
        stats[2 * r + 1] = rstd;
    }
}

void sp_norm_backward(const struct sp_op_io *io, enum sp_norm_kind kind, size_t rows, size_t n,
                      const float *x, const float *stats, const float *g, const float *dy,
                      float *dx, float *dg, float *dbeta) {
    double t0 = sp_wgrad_begin(io);
    for (size_t r = 0; r < rows; r++) {
        const float *xr = x + r * n, *dyr = dy + r * n;
        float mu = stats[2 * r], rstd = stats[2 * r + 1];
        for (size_t k = 0; k < n; k++) {
            float xhat = (xr[k] - mu) * rstd;
            dg[k] += dyr[k] * xhat;
            if (dbeta)
                dbeta[k] += dyr[k];
        }
    }
    sp_wgrad_end(io, t0);
    if (!dx)
        return;
    for (size_t r = 0; r < rows; r++) {
        const float *xr = x + r * n, *dyr = dy + r * n;
        float *dxr = dx + r * n;
        float mu = stats[2 * r], rstd = stats[2 * r + 1];
        double mean_d = 0.0, mean_dx = 0.0; /* mean(dxhat), mean(dxhat * xhat) */
        for (size_t k = 0; k < n; k++) {
            float xhat = (xr[k] - mu) * rstd, d = dyr[k] * g[k];
            mean_d += (double)d;
            mean_dx += (double)d * (double)xhat;
        }
        mean_d /= (double)n;
        mean_dx /= (double)n;
        if (kind == SP_NORM_RMS)
            mean_d = 0.0; /* no mean was subtracted */
        for (size_t k = 0; k < n; k++) {
            float xhat = (xr[k] - mu) * rstd, d = dyr[k] * g[k];
            dxr[k] += rstd * (d - (float)mean_d - xhat * (float)mean_dx);
        }
    }
}

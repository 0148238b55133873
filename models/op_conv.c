/* models/op_conv.c: the image ops: conv2d (im2col + sgemm), batchnorm (training statistics),
 * relu, and pooling (max k x k, or global average to a feature row). Images are (C, H, W) per
 * sample, row-major. */
#include <math.h>
#include <string.h>

#include "blas.h"
#include "op_class.h"
#include "op_common.h"
#include "op_layout.h"

#define BN_EPS 1e-5f

/* ---- conv2d: y_b[Cout][Ho*Wo] = W[Cout][Cin*k*k] cols_b + bias; cols is the im2col matrix */

static bool conv_bind(struct sp_op *op, struct sp_shape in, uint32_t B, const char **why) {
    (void)B;
    if (in.c != op->in_ch || op->kernel == 0 || op->stride == 0 || op->out_ch == 0) {
        *why = "conv2d's in_channels differ from its input's channels (or a size is 0)";
        return false;
    }
    if (in.h + 2 * op->pad < op->kernel || in.w + 2 * op->pad < op->kernel) {
        *why = "conv2d's kernel is larger than its padded input";
        return false;
    }
    uint32_t ho = (in.h + 2 * op->pad - op->kernel) / op->stride + 1;
    uint32_t wo = (in.w + 2 * op->pad - op->kernel) / op->stride + 1;
    op->out = (struct sp_shape){op->out_ch, ho, wo};
    op->param_elems = (size_t)op->out_ch * sp_conv_k(op) + op->out_ch;
    op->saved_elems = 0;
    op->work_elems = 2 * sp_conv_k(op) * ho * wo;
    return true;
}

/* cols[(c*k + i)*k + j][oy*wo + ox] = x[c][oy*s + i - p][ox*s + j - p] (0 outside) */
static void im2col(const struct sp_op *op, const float *x, float *cols) {
    size_t k = op->kernel, s = op->stride, p = op->pad, H = op->in.h, W = op->in.w;
    size_t ho = op->out.h, wo = op->out.w;
    for (size_t c = 0; c < op->in_ch; c++)
        for (size_t i = 0; i < k; i++)
            for (size_t j = 0; j < k; j++) {
                float *row = cols + ((c * k + i) * k + j) * ho * wo;
                for (size_t oy = 0; oy < ho; oy++) {
                    long y = (long)(oy * s + i) - (long)p;
                    for (size_t ox = 0; ox < wo; ox++) {
                        long xx = (long)(ox * s + j) - (long)p;
                        bool in = y >= 0 && y < (long)H && xx >= 0 && xx < (long)W;
                        row[oy * wo + ox] = in ? x[(c * H + (size_t)y) * W + (size_t)xx] : 0.0f;
                    }
                }
            }
}

/* the adjoint of im2col: dx += the columns' entries at the pixels they came from */
static void col2im(const struct sp_op *op, const float *cols, float *dx) {
    size_t k = op->kernel, s = op->stride, p = op->pad, H = op->in.h, W = op->in.w;
    size_t ho = op->out.h, wo = op->out.w;
    for (size_t c = 0; c < op->in_ch; c++)
        for (size_t i = 0; i < k; i++)
            for (size_t j = 0; j < k; j++) {
                const float *row = cols + ((c * k + i) * k + j) * ho * wo;
                for (size_t oy = 0; oy < ho; oy++) {
                    long y = (long)(oy * s + i) - (long)p;
                    if (y < 0 || y >= (long)H)
                        continue;
                    for (size_t ox = 0; ox < wo; ox++) {
                        long xx = (long)(ox * s + j) - (long)p;
                        if (xx >= 0 && xx < (long)W)
                            dx[(c * H + (size_t)y) * W + (size_t)xx] += row[oy * wo + ox];
                    }
                }
            }
}

static void conv_forward(const struct sp_op *op, const struct sp_op_io *io, const float *x,
                         float *y, float *saved) {
    (void)saved;
    size_t K = sp_conv_k(op), hw = (size_t)op->out.h * op->out.w,
           in_n = (size_t)op->in_ch * op->in.h * op->in.w;
    const float *bias = io->params + op->out_ch * K;
    for (uint32_t b = 0; b < io->B; b++) {
        float *yb = y + b * op->out_ch * hw;
        im2col(op, x + b * in_n, io->work);
        sp_sgemm(false, false, (int)op->out_ch, (int)hw, (int)K, 1.0f, io->params, (int)K, io->work,
                 (int)hw, 0.0f, yb, (int)hw);
        for (size_t c = 0; c < op->out_ch; c++)
            for (size_t q = 0; q < hw; q++)
                yb[c * hw + q] += bias[c];
    }
}

static void conv_backward(const struct sp_op *op, const struct sp_op_io *io, const float *x,
                          const float *saved, const float *dy, float *dx) {
    (void)saved;
    size_t K = sp_conv_k(op), hw = (size_t)op->out.h * op->out.w,
           in_n = (size_t)op->in_ch * op->in.h * op->in.w;
    float *cols = io->work, *dcols = cols + K * hw, *dbias = io->dparams + op->out_ch * K;
    if (dx)
        memset(dx, 0, (size_t)io->B * in_n * sizeof *dx);
    for (uint32_t b = 0; b < io->B; b++) {
        const float *dyb = dy + b * op->out_ch * hw;
        double t0 = sp_wgrad_begin(io);
        im2col(op, x + b * in_n, cols);
        sp_sgemm(false, true, (int)op->out_ch, (int)K, (int)hw, 1.0f, dyb, (int)hw, cols, (int)hw,
                 1.0f, io->dparams, (int)K);
        for (size_t c = 0; c < op->out_ch; c++)
            for (size_t q = 0; q < hw; q++)
                dbias[c] += dyb[c * hw + q];
        sp_wgrad_end(io, t0);
        if (!dx)
            continue;
        sp_sgemm(true, false, (int)K, (int)hw, (int)op->out_ch, 1.0f, io->params, (int)K, dyb,
                 (int)hw, 0.0f, dcols, (int)hw);
        col2im(op, dcols, dx + b * in_n);
    }
}

static uint64_t conv_flops(const struct sp_op *op, uint32_t B) {
    return 2 * (uint64_t)B * op->out_ch * op->out.h * op->out.w * sp_conv_k(op);
}

static void conv_init(const struct sp_op *op, uint64_t *rng, float *params) {
    size_t w = op->out_ch * sp_conv_k(op);
    sp_fill_uniform(rng, params, w, 1.0f / sqrtf((float)sp_conv_k(op)));
    sp_fill_const(params + w, op->out_ch, 0.0f);
}

const struct sp_op_class sp_op_conv2d = {"conv2d",      conv_bind,  conv_forward,
                                         conv_backward, conv_flops, conv_init};

/* ---- batchnorm: per channel over B x H x W; y = g (x - mean) rstd + beta. Saved: mean, rstd */

static bool bn_bind(struct sp_op *op, struct sp_shape in, uint32_t B, const char **why) {
    (void)B;
    if (in.c != op->in_ch) {
        *why = "batchnorm's channels differ from its input's";
        return false;
    }
    op->out = in;
    op->param_elems = 2 * (size_t)in.c;
    op->saved_elems = 2 * (size_t)in.c;
    op->work_elems = 0;
    return true;
}

static void bn_forward(const struct sp_op *op, const struct sp_op_io *io, const float *x, float *y,
                       float *saved) {
    size_t C = op->in.c, hw = (size_t)op->in.h * op->in.w, n = (size_t)io->B * hw;
    for (size_t c = 0; c < C; c++) {
        double sum = 0.0, sq = 0.0;
        for (uint32_t b = 0; b < io->B; b++)
            for (size_t q = 0; q < hw; q++)
                sum += (double)x[(b * C + c) * hw + q];
        double mean = sum / (double)n;
        for (uint32_t b = 0; b < io->B; b++)
            for (size_t q = 0; q < hw; q++) {
                double d = (double)x[(b * C + c) * hw + q] - mean;
                sq += d * d;
            }
        float rstd = (float)(1.0 / sqrt(sq / (double)n + (double)BN_EPS)), mu = (float)mean;
        float g = io->params[c], beta = io->params[C + c];
        for (uint32_t b = 0; b < io->B; b++)
            for (size_t q = 0; q < hw; q++) {
                size_t k = (b * C + c) * hw + q;
                y[k] = (x[k] - mu) * rstd * g + beta;
            }
        saved[2 * c] = mu;
        saved[2 * c + 1] = rstd;
    }
}

static void bn_backward(const struct sp_op *op, const struct sp_op_io *io, const float *x,
                        const float *saved, const float *dy, float *dx) {
    size_t C = op->in.c, hw = (size_t)op->in.h * op->in.w, n = (size_t)io->B * hw;
    for (size_t c = 0; c < C; c++) {
        float mu = saved[2 * c], rstd = saved[2 * c + 1], g = io->params[c];
        double sd = 0.0, sdx = 0.0; /* sums of dy and dy * xhat */
        for (uint32_t b = 0; b < io->B; b++)
            for (size_t q = 0; q < hw; q++) {
                size_t k = (b * C + c) * hw + q;
                sd += (double)dy[k];
                sdx += (double)dy[k] * (double)((x[k] - mu) * rstd);
            }
        double t0 = sp_wgrad_begin(io);
        io->dparams[c] += (float)sdx;
        io->dparams[C + c] += (float)sd;
        sp_wgrad_end(io, t0);
        if (!dx)
            continue;
        float md = (float)(sd / (double)n), mdx = (float)(sdx / (double)n);
        for (uint32_t b = 0; b < io->B; b++)
            for (size_t q = 0; q < hw; q++) {
                size_t k = (b * C + c) * hw + q;
                float xhat = (x[k] - mu) * rstd;
                dx[k] = g * rstd * (dy[k] - md - xhat * mdx);
            }
    }
}

static void bn_init(const struct sp_op *op, uint64_t *rng, float *params) {
    (void)rng;
    sp_fill_const(params, op->in.c, 1.0f);
    sp_fill_const(params + op->in.c, op->in.c, 0.0f);
}

static uint64_t no_flops(const struct sp_op *op, uint32_t B) {
    (void)op, (void)B;
    return 0;
}

const struct sp_op_class sp_op_batchnorm = {"batchnorm", bn_bind,  bn_forward,
                                            bn_backward, no_flops, bn_init};

/* ---- relu */

static bool relu_bind(struct sp_op *op, struct sp_shape in, uint32_t B, const char **why) {
    (void)B, (void)why;
    op->out = in;
    op->param_elems = op->saved_elems = op->work_elems = 0;
    return true;
}

static void relu_forward(const struct sp_op *op, const struct sp_op_io *io, const float *x,
                         float *y, float *saved) {
    (void)saved;
    for (size_t k = 0; k < sp_shape_elems(op->in, io->B); k++)
        y[k] = x[k] > 0.0f ? x[k] : 0.0f;
}

static void relu_backward(const struct sp_op *op, const struct sp_op_io *io, const float *x,
                          const float *saved, const float *dy, float *dx) {
    (void)saved;
    if (dx)
        for (size_t k = 0; k < sp_shape_elems(op->in, io->B); k++)
            dx[k] = x[k] > 0.0f ? dy[k] : 0.0f;
}

static void no_init(const struct sp_op *op, uint64_t *rng, float *params) {
    (void)op, (void)rng, (void)params;
}

const struct sp_op_class sp_op_relu = {"relu",        relu_bind, relu_forward,
                                       relu_backward, no_flops,  no_init};

/* ---- pool: max over k x k windows with stride s (saved: each output's argmax, as a float
 * index < 2^24 within its channel), or the global average of each channel -> (1, 1, C) */

static bool pool_bind(struct sp_op *op, struct sp_shape in, uint32_t B, const char **why) {
    op->param_elems = op->work_elems = op->saved_elems = 0;
    if (op->pool == SP_POOL_AVG_GLOBAL) {
        op->out = (struct sp_shape){1, 1, in.c};
        return true;
    }
    if (op->kernel == 0 || op->stride == 0 || in.h < op->kernel || in.w < op->kernel) {
        *why = "max pool's window is larger than its input (or 0)";
        return false;
    }
    if ((size_t)in.h * in.w >= (1u << 24)) {
        *why = "max pool's input channel exceeds 2^24 pixels";
        return false;
    }
    op->out = (struct sp_shape){in.c, (in.h - op->kernel) / op->stride + 1,
                                (in.w - op->kernel) / op->stride + 1};
    op->saved_elems = sp_shape_elems(op->out, B);
    return true;
}

static void pool_forward(const struct sp_op *op, const struct sp_op_io *io, const float *x,
                         float *y, float *saved) {
    size_t C = op->in.c, H = op->in.h, W = op->in.w, hw = H * W;
    if (op->pool == SP_POOL_AVG_GLOBAL) {
        for (size_t bc = 0; bc < (size_t)io->B * C; bc++) {
            double sum = 0.0;
            for (size_t q = 0; q < hw; q++)
                sum += (double)x[bc * hw + q];
            y[bc] = (float)(sum / (double)hw);
        }
        return;
    }
    size_t ho = op->out.h, wo = op->out.w, k = op->kernel, s = op->stride;
    for (size_t bc = 0; bc < (size_t)io->B * C; bc++)
        for (size_t oy = 0; oy < ho; oy++)
            for (size_t ox = 0; ox < wo; ox++) {
                size_t best = (oy * s) * W + ox * s;
                for (size_t i = 0; i < k; i++)
                    for (size_t j = 0; j < k; j++) {
                        size_t q = (oy * s + i) * W + ox * s + j;
                        if (x[bc * hw + q] > x[bc * hw + best])
                            best = q;
                    }
                size_t o = (bc * ho + oy) * wo + ox;
                y[o] = x[bc * hw + best];
                saved[o] = (float)best;
            }
}

static void pool_backward(const struct sp_op *op, const struct sp_op_io *io, const float *x,
                          const float *saved, const float *dy, float *dx) {
    (void)x;
    if (!dx)
        return;
    size_t C = op->in.c, hw = (size_t)op->in.h * op->in.w, n = (size_t)io->B * C;
    if (op->pool == SP_POOL_AVG_GLOBAL) {
        for (size_t bc = 0; bc < n; bc++)
            for (size_t q = 0; q < hw; q++)
                dx[bc * hw + q] = dy[bc] / (float)hw;
        return;
    }
    size_t ohw = (size_t)op->out.h * op->out.w;
    memset(dx, 0, n * hw * sizeof *dx);
    for (size_t bc = 0; bc < n; bc++)
        for (size_t o = 0; o < ohw; o++)
            dx[bc * hw + (size_t)saved[bc * ohw + o]] += dy[bc * ohw + o];
}

const struct sp_op_class sp_op_pool = {"pool",        pool_bind, pool_forward,
                                       pool_backward, no_flops,  no_init};

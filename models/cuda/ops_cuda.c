/* models/cuda/ops_cuda.c: every op kind's forward and backward on the GPU (ops_cuda.h). Each
 * function follows its CPU twin in models/op_<kind>.c step by step; only the loops became kernels
 * (kernels.h) and the sgemm calls cuBLAS. Row-major products map to column-major cuBLAS by
 * swapping the operands: C = A B row-major is C^T = B^T A^T column-major. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "driver.h"
#include "kernels.h"
#include "op_layout.h"
#include "ops_cuda.h"

static struct sp_cuda_device *dev_of(const struct sp_op_io *io) {
    return io->device;
}

static bool ok(struct sp_cuda_device *d) {
    return d->cuda_error == cudaSuccess && d->blas_error == CUBLAS_STATUS_SUCCESS;
}

static void blas_check(struct sp_cuda_device *d, cublasStatus_t st, const char *call) {
    if (st != CUBLAS_STATUS_SUCCESS && ok(d)) {
        d->blas_error = st;
        d->failed_call = call;
    }
}

static void cuda_check(struct sp_cuda_device *d, cudaError_t e, const char *call) {
    if (e != cudaSuccess && ok(d)) {
        d->cuda_error = e;
        d->failed_call = call;
    }
}

/* Row-major C[M][N] (batch of them, strides in floats) = alpha op(A) op(B) + beta C, op(A) M x K */
static void gemm(struct sp_cuda_device *d, bool ta, bool tb, size_t M, size_t N, size_t K,
                 float alpha, const float *A, size_t lda, long long sA, const float *B, size_t ldb,
                 long long sB, float beta, float *C, size_t ldc, long long sC, int batch) {
    if (!ok(d))
        return;
    blas_check(d,
               d->cb->GemmStridedBatchedEx(
                   d->blas, tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N, (int)N,
                   (int)M, (int)K, &alpha, B, CUDA_R_32F, (int)ldb, sB, A, CUDA_R_32F, (int)lda, sA,
                   &beta, C, CUDA_R_32F, (int)ldc, sC, batch, d->compute, CUBLAS_GEMM_DEFAULT),
               "cublasGemmStridedBatchedEx");
}

/* the three products of a linear map (op_common.h's sp_mm_*) */
static void mm_forward(struct sp_cuda_device *d, size_t rows, size_t in, size_t out, const float *X,
                       const float *W, const float *b, float *Y) {
    gemm(d, false, true, rows, out, in, 1.0f, X, in, 0, W, in, 0, 0.0f, Y, out, 0, 1);
    if (b && ok(d))
        spk_add_bias_rows(d->stream, rows, out, b, Y);
}

static void mm_dx(struct sp_cuda_device *d, size_t rows, size_t in, size_t out, const float *dY,
                  const float *W, float *dX, bool accumulate) {
    gemm(d, false, false, rows, in, out, 1.0f, dY, out, 0, W, in, 0, accumulate ? 1.0f : 0.0f, dX,
         in, 0, 1);
}

static void mm_dw(struct sp_cuda_device *d, size_t rows, size_t in, size_t out, const float *dY,
                  const float *X, float *dW, float *db) {
    gemm(d, true, false, out, in, rows, 1.0f, dY, out, 0, X, in, 0, 1.0f, dW, in, 0, 1);
    if (db && ok(d))
        spk_colsum_acc(d->stream, rows, out, dY, db);
}

static void axpy(struct sp_cuda_device *d, size_t n, float alpha, const float *x, float *y) {
    if (ok(d))
        blas_check(d, d->cb->Saxpy64(d->blas, (int64_t)n, &alpha, x, 1, y, 1), "cublasSaxpy");
}

static void copy(struct sp_cuda_device *d, float *dst, const float *src, size_t n) {
    if (ok(d))
        cuda_check(d,
                   cudaMemcpyAsync(dst, src, n * sizeof *dst, cudaMemcpyDeviceToDevice, d->stream),
                   "cudaMemcpyAsync");
}

static void zero(struct sp_cuda_device *d, float *p, size_t n) {
    if (ok(d))
        cuda_check(d, cudaMemsetAsync(p, 0, n * sizeof *p, d->stream), "cudaMemsetAsync");
}

static void norm_forward(struct sp_cuda_device *d, enum sp_norm_kind kind, size_t rows, size_t n,
                         const float *x, const float *g, const float *beta, float *y,
                         float *stats) {
    if (ok(d))
        spk_norm_forward(d->stream, kind == SP_NORM_RMS, rows, n, x, g, beta, y, stats);
}

/* dx += (when dx), dg and dbeta += */
static void norm_backward(struct sp_cuda_device *d, enum sp_norm_kind kind, size_t rows, size_t n,
                          const float *x, const float *stats, const float *g, const float *dy,
                          float *dx, float *dg, float *dbeta) {
    if (!ok(d))
        return;
    spk_norm_backward_params(d->stream, rows, n, x, stats, dy, dg, dbeta);
    if (dx)
        spk_norm_backward_dx(d->stream, kind == SP_NORM_RMS, rows, n, x, stats, g, dy, dx);
}

/* ---- attention (op_attention.c) */

static void attention_forward(const struct sp_op *op, const struct sp_op_io *io, const float *x,
                              float *y, float *saved) {
    struct sp_cuda_device *d = dev_of(io);
    struct sp_attn_layout L = sp_attn_layout(op, io->B);
    const float *P = io->params;
    size_t H = L.H, S = L.S, dh = L.d, H3 = 3 * H, SS = S * S;
    int heads = (int)op->heads;
    float *h = saved + L.h, *qkv = saved + L.qkv, *o = saved + L.o, *p = saved + L.p;
    norm_forward(d, op->norm, L.rows, H, x, P + L.g, op->norm == SP_NORM_LAYER ? P + L.beta : NULL,
                 h, saved + L.stats);
    mm_forward(d, L.rows, H, H3, h, P + L.wqkv, op->bias ? P + L.bqkv : NULL, qkv);
    float scale = 1.0f / sqrtf((float)dh);
    for (uint32_t b = 0; b < io->B; b++) { /* scores of every head: q k^T scale */
        const float *q = qkv + b * S * H3, *k = q + H;
        gemm(d, false, true, S, S, dh, scale, q, H3, (long long)dh, k, H3, (long long)dh, 0.0f,
             p + (size_t)b * heads * SS, S, (long long)SS, heads);
    }
    if (ok(d))
        spk_softmax_rows(d->stream, (size_t)io->B * heads * S, S, op->causal, p);
    for (uint32_t b = 0; b < io->B; b++) { /* o = P v, head by head into its columns */
        const float *v = qkv + b * S * H3 + 2 * H;
        gemm(d, false, false, S, dh, S, 1.0f, p + (size_t)b * heads * SS, S, (long long)SS, v, H3,
             (long long)dh, 0.0f, o + b * S * H, H, (long long)dh, heads);
    }
    mm_forward(d, L.rows, H, H, o, P + L.wo, op->bias ? P + L.bo : NULL, y);
    axpy(d, L.rows * H, 1.0f, x, y);
}

static void attention_backward(const struct sp_op *op, const struct sp_op_io *io, const float *x,
                               const float *saved, const float *dy, float *dx) {
    struct sp_cuda_device *d = dev_of(io);
    struct sp_attn_layout L = sp_attn_layout(op, io->B);
    const float *P = io->params;
    float *D = io->dparams;
    size_t H = L.H, S = L.S, dh = L.d, H3 = 3 * H, rows = L.rows, SS = S * S;
    int heads = (int)op->heads;
    const float *h = saved + L.h, *qkv = saved + L.qkv, *o = saved + L.o;
    float *d_o = io->work, *dqkv = d_o + rows * H, *dhn = dqkv + rows * H3, *dp = d->extra;
    mm_dw(d, rows, H, H, dy, o, D + L.wo, op->bias ? D + L.bo : NULL);
    mm_dx(d, rows, H, H, dy, P + L.wo, d_o, false);
    float scale = 1.0f / sqrtf((float)dh);
    for (uint32_t b = 0; b < io->B; b++) {
        const float *q = qkv + b * S * H3, *k = q + H, *v = q + 2 * H;
        const float *pb = saved + L.p + (size_t)b * heads * SS, *dob = d_o + b * S * H;
        float *dq = dqkv + b * S * H3, *dk = dq + H, *dv = dq + 2 * H;
        /* dP = do v^T; dv = P^T do */
        gemm(d, false, true, S, S, dh, 1.0f, dob, H, (long long)dh, v, H3, (long long)dh, 0.0f, dp,
             S, (long long)SS, heads);
        gemm(d, true, false, S, dh, S, 1.0f, pb, S, (long long)SS, dob, H, (long long)dh, 0.0f, dv,
             H3, (long long)dh, heads);
        if (ok(d)) /* dS = P (dP - rowsum(P dP)) */
            spk_softmax_backward_rows(d->stream, (size_t)heads * S, S, pb, dp);
        /* dq = dS k scale; dk = dS^T q scale */
        gemm(d, false, false, S, dh, S, scale, dp, S, (long long)SS, k, H3, (long long)dh, 0.0f, dq,
             H3, (long long)dh, heads);
        gemm(d, true, false, S, dh, S, scale, dp, S, (long long)SS, q, H3, (long long)dh, 0.0f, dk,
             H3, (long long)dh, heads);
    }
    mm_dw(d, rows, H, H3, dqkv, h, D + L.wqkv, op->bias ? D + L.bqkv : NULL);
    mm_dx(d, rows, H, H3, dqkv, P + L.wqkv, dhn, false);
    if (dx)
        copy(d, dx, dy, rows * H); /* the residual */
    norm_backward(d, op->norm, rows, H, x, saved + L.stats, P + L.g, dhn, dx, D + L.g,
                  op->norm == SP_NORM_LAYER ? D + L.beta : NULL);
}

size_t sp_op_cuda_extra_elems(const struct sp_op *op, uint32_t B) {
    (void)B;
    return op->kind == SP_OP_ATTENTION ? (size_t)op->heads * op->in.c * op->in.c : 0;
}

/* ---- mlp (op_mlp.c) */

static void mlp_forward(const struct sp_op *op, const struct sp_op_io *io, const float *x, float *y,
                        float *saved) {
    struct sp_cuda_device *d = dev_of(io);
    struct sp_mlp_layout L = sp_mlp_layout(op, io->B);
    const float *P = io->params;
    size_t n = L.rows * L.F;
    float *h = saved + L.h, *a = saved + L.a, *c = saved + L.c, *g = saved + L.act;
    norm_forward(d, op->norm, L.rows, L.H, x, P + L.g,
                 op->norm == SP_NORM_LAYER ? P + L.beta : NULL, h, saved + L.stats);
    mm_forward(d, L.rows, L.H, L.F, h, P + L.w1, op->bias ? P + L.b1 : NULL, a);
    if (op->act == SP_ACT_SWIGLU) {
        mm_forward(d, L.rows, L.H, L.F, h, P + L.w3, NULL, c);
        if (ok(d))
            spk_swiglu_forward(d->stream, n, a, c, g);
    } else if (ok(d)) {
        spk_gelu_forward(d->stream, n, a, g);
    }
    mm_forward(d, L.rows, L.F, L.H, g, P + L.w2, op->bias ? P + L.b2 : NULL, y);
    axpy(d, L.rows * L.H, 1.0f, x, y);
}

static void mlp_backward(const struct sp_op *op, const struct sp_op_io *io, const float *x,
                         const float *saved, const float *dy, float *dx) {
    struct sp_cuda_device *d = dev_of(io);
    struct sp_mlp_layout L = sp_mlp_layout(op, io->B);
    const float *P = io->params;
    float *D = io->dparams;
    size_t n = L.rows * L.F;
    const float *h = saved + L.h, *a = saved + L.a, *c = saved + L.c, *g = saved + L.act;
    float *dg = io->work, *dc = dg + n, *dh = dc + n;
    mm_dw(d, L.rows, L.F, L.H, dy, g, D + L.w2, op->bias ? D + L.b2 : NULL);
    mm_dx(d, L.rows, L.F, L.H, dy, P + L.w2, dg, false);
    if (op->act == SP_ACT_SWIGLU) {
        if (ok(d)) /* dg becomes da */
            spk_swiglu_backward(d->stream, n, a, c, dg, dc);
        mm_dw(d, L.rows, L.H, L.F, dc, h, D + L.w3, NULL);
    } else if (ok(d)) {
        spk_gelu_backward(d->stream, n, a, dg);
    }
    mm_dw(d, L.rows, L.H, L.F, dg, h, D + L.w1, op->bias ? D + L.b1 : NULL);
    mm_dx(d, L.rows, L.H, L.F, dg, P + L.w1, dh, false);
    if (op->act == SP_ACT_SWIGLU)
        mm_dx(d, L.rows, L.H, L.F, dc, P + L.w3, dh, true);
    if (dx)
        copy(d, dx, dy, L.rows * L.H);
    norm_backward(d, op->norm, L.rows, L.H, x, saved + L.stats, P + L.g, dh, dx, D + L.g,
                  op->norm == SP_NORM_LAYER ? D + L.beta : NULL);
}

/* ---- embedding, norm, linear, LM head (op_dense.c) */

static void embedding_forward(const struct sp_op *op, const struct sp_op_io *io, const float *x,
                              float *y, float *saved) {
    (void)x, (void)saved;
    struct sp_cuda_device *d = dev_of(io);
    size_t H = op->hidden, S = op->out.c;
    if (ok(d))
        spk_embedding_forward(d->stream, (size_t)io->B * S, H, S, io->batch->tokens, io->params,
                              io->params + (size_t)op->vocab * H, y);
}

static void embedding_backward(const struct sp_op *op, const struct sp_op_io *io, const float *x,
                               const float *saved, const float *dy, float *dx) {
    (void)x, (void)saved, (void)dx;
    struct sp_cuda_device *d = dev_of(io);
    size_t H = op->hidden, S = op->out.c;
    if (ok(d))
        spk_embedding_backward(d->stream, (size_t)io->B * S, H, S, io->batch->tokens, dy,
                               io->dparams, io->dparams + (size_t)op->vocab * H);
}

static void norm_op_forward(const struct sp_op *op, const struct sp_op_io *io, const float *x,
                            float *y, float *saved) {
    const float *beta = op->norm == SP_NORM_LAYER ? io->params + op->hidden : NULL;
    norm_forward(dev_of(io), op->norm, sp_rows_of(op->in, io->B), op->hidden, x, io->params, beta,
                 y, saved);
}

static void norm_op_backward(const struct sp_op *op, const struct sp_op_io *io, const float *x,
                             const float *saved, const float *dy, float *dx) {
    struct sp_cuda_device *d = dev_of(io);
    size_t rows = sp_rows_of(op->in, io->B);
    if (dx)
        zero(d, dx, rows * op->hidden);
    float *dbeta = op->norm == SP_NORM_LAYER ? io->dparams + op->hidden : NULL;
    norm_backward(d, op->norm, rows, op->hidden, x, saved, io->params, dy, dx, io->dparams, dbeta);
}

static void linear_forward(const struct sp_op *op, const struct sp_op_io *io, const float *x,
                           float *y, float *saved) {
    (void)saved;
    const float *b = op->bias ? io->params + (size_t)op->out_features * op->in_features : NULL;
    mm_forward(dev_of(io), sp_rows_of(op->in, io->B), op->in_features, op->out_features, x,
               io->params, b, y);
}

static void linear_backward(const struct sp_op *op, const struct sp_op_io *io, const float *x,
                            const float *saved, const float *dy, float *dx) {
    (void)saved;
    struct sp_cuda_device *d = dev_of(io);
    size_t rows = sp_rows_of(op->in, io->B);
    float *db = op->bias ? io->dparams + (size_t)op->out_features * op->in_features : NULL;
    mm_dw(d, rows, op->in_features, op->out_features, dy, x, io->dparams, db);
    if (dx)
        mm_dx(d, rows, op->in_features, op->out_features, dy, io->params, dx, false);
}

/* the rows' losses go to the scratch (free in the forward), then one mean per sample */
static void head_forward(const struct sp_op *op, const struct sp_op_io *io, const float *x,
                         float *y, float *saved) {
    struct sp_cuda_device *d = dev_of(io);
    size_t rows = sp_rows_of(op->in, io->B), V = op->vocab;
    mm_forward(d, rows, op->hidden, V, x, io->params, NULL, saved);
    if (!ok(d))
        return;
    spk_softmax_xent_forward(d->stream, rows, V, io->batch->labels, saved, io->work);
    spk_mean_per_sample(d->stream, io->B, rows / io->B, io->work, y);
}

static void head_backward(const struct sp_op *op, const struct sp_op_io *io, const float *x,
                          const float *saved, const float *dy, float *dx) {
    (void)dy;
    struct sp_cuda_device *d = dev_of(io);
    size_t rows = sp_rows_of(op->in, io->B), V = op->vocab;
    if (ok(d))
        spk_softmax_xent_backward(d->stream, rows, V, io->batch->labels, saved, 1.0f / (float)rows,
                                  io->work);
    mm_dw(d, rows, op->hidden, V, io->work, x, io->dparams, NULL);
    if (dx)
        mm_dx(d, rows, op->hidden, V, io->work, io->params, dx, false);
}

/* ---- conv2d, batchnorm, relu, pool (op_conv.c) */

static struct spk_conv_shape conv_shape(const struct sp_op *op) {
    return (struct spk_conv_shape){(int)op->in_ch,  (int)op->in.h, (int)op->in.w,  (int)op->kernel,
                                   (int)op->stride, (int)op->pad,  (int)op->out.h, (int)op->out.w};
}

static void conv_forward(const struct sp_op *op, const struct sp_op_io *io, const float *x,
                         float *y, float *saved) {
    (void)saved;
    struct sp_cuda_device *d = dev_of(io);
    size_t K = sp_conv_k(op), hw = (size_t)op->out.h * op->out.w,
           in_n = (size_t)op->in_ch * op->in.h * op->in.w;
    for (uint32_t b = 0; b < io->B && ok(d); b++) {
        spk_im2col(d->stream, conv_shape(op), x + b * in_n, io->work);
        gemm(d, false, false, op->out_ch, hw, K, 1.0f, io->params, K, 0, io->work, hw, 0, 0.0f,
             y + b * op->out_ch * hw, hw, 0, 1);
    }
    if (ok(d))
        spk_add_bias_channels(d->stream, io->B, op->out_ch, hw, io->params + op->out_ch * K, y);
}

static void conv_backward(const struct sp_op *op, const struct sp_op_io *io, const float *x,
                          const float *saved, const float *dy, float *dx) {
    (void)saved;
    struct sp_cuda_device *d = dev_of(io);
    size_t K = sp_conv_k(op), hw = (size_t)op->out.h * op->out.w,
           in_n = (size_t)op->in_ch * op->in.h * op->in.w;
    float *cols = io->work, *dcols = cols + K * hw;
    if (dx)
        zero(d, dx, (size_t)io->B * in_n);
    if (ok(d))
        spk_channel_sum_acc(d->stream, io->B, op->out_ch, hw, dy, io->dparams + op->out_ch * K);
    for (uint32_t b = 0; b < io->B && ok(d); b++) {
        const float *dyb = dy + b * op->out_ch * hw;
        spk_im2col(d->stream, conv_shape(op), x + b * in_n, cols);
        gemm(d, false, true, op->out_ch, K, hw, 1.0f, dyb, hw, 0, cols, hw, 0, 1.0f, io->dparams, K,
             0, 1);
        if (!dx)
            continue;
        gemm(d, true, false, K, hw, op->out_ch, 1.0f, io->params, K, 0, dyb, hw, 0, 0.0f, dcols, hw,
             0, 1);
        if (ok(d))
            spk_col2im_acc(d->stream, conv_shape(op), dcols, dx + b * in_n);
    }
}

static void bn_forward(const struct sp_op *op, const struct sp_op_io *io, const float *x, float *y,
                       float *saved) {
    struct sp_cuda_device *d = dev_of(io);
    if (ok(d))
        spk_batchnorm_forward(d->stream, io->B, op->in.c, (size_t)op->in.h * op->in.w, x,
                              io->params, y, saved);
}

static void bn_backward(const struct sp_op *op, const struct sp_op_io *io, const float *x,
                        const float *saved, const float *dy, float *dx) {
    struct sp_cuda_device *d = dev_of(io);
    if (ok(d))
        spk_batchnorm_backward(d->stream, io->B, op->in.c, (size_t)op->in.h * op->in.w, x, saved,
                               io->params, dy, dx, io->dparams);
}

static void relu_forward(const struct sp_op *op, const struct sp_op_io *io, const float *x,
                         float *y, float *saved) {
    (void)saved;
    struct sp_cuda_device *d = dev_of(io);
    if (ok(d))
        spk_relu_forward(d->stream, sp_shape_elems(op->in, io->B), x, y);
}

static void relu_backward(const struct sp_op *op, const struct sp_op_io *io, const float *x,
                          const float *saved, const float *dy, float *dx) {
    (void)saved;
    struct sp_cuda_device *d = dev_of(io);
    if (dx && ok(d))
        spk_relu_backward(d->stream, sp_shape_elems(op->in, io->B), x, dy, dx);
}

static void pool_forward(const struct sp_op *op, const struct sp_op_io *io, const float *x,
                         float *y, float *saved) {
    struct sp_cuda_device *d = dev_of(io);
    size_t planes = (size_t)io->B * op->in.c;
    if (!ok(d))
        return;
    if (op->pool == SP_POOL_AVG_GLOBAL)
        spk_avgpool_forward(d->stream, planes, (size_t)op->in.h * op->in.w, x, y);
    else
        spk_maxpool_forward(d->stream, planes, (int)op->in.h, (int)op->in.w, (int)op->kernel,
                            (int)op->stride, (int)op->out.h, (int)op->out.w, x, y, saved);
}

static void pool_backward(const struct sp_op *op, const struct sp_op_io *io, const float *x,
                          const float *saved, const float *dy, float *dx) {
    (void)x;
    struct sp_cuda_device *d = dev_of(io);
    size_t planes = (size_t)io->B * op->in.c;
    if (!dx || !ok(d))
        return;
    if (op->pool == SP_POOL_AVG_GLOBAL)
        spk_avgpool_backward(d->stream, planes, (size_t)op->in.h * op->in.w, dy, dx);
    else
        spk_maxpool_backward(d->stream, planes, (int)op->in.h, (int)op->in.w, (int)op->out.h,
                             (int)op->out.w, saved, dy, dx);
}

/* ---- dispatch */

typedef void (*forward_fn)(const struct sp_op *, const struct sp_op_io *, const float *, float *,
                           float *);
typedef void (*backward_fn)(const struct sp_op *, const struct sp_op_io *, const float *,
                            const float *, const float *, float *);

static const forward_fn forwards[SP_OP_KIND_COUNT] = {
    [SP_OP_EMBEDDING] = embedding_forward, [SP_OP_NORM] = norm_op_forward,
    [SP_OP_ATTENTION] = attention_forward, [SP_OP_MLP] = mlp_forward,
    [SP_OP_LINEAR] = linear_forward,       [SP_OP_LM_HEAD] = head_forward,
    [SP_OP_CONV2D] = conv_forward,         [SP_OP_BATCHNORM] = bn_forward,
    [SP_OP_RELU] = relu_forward,           [SP_OP_POOL] = pool_forward,
};
static const backward_fn backwards[SP_OP_KIND_COUNT] = {
    [SP_OP_EMBEDDING] = embedding_backward, [SP_OP_NORM] = norm_op_backward,
    [SP_OP_ATTENTION] = attention_backward, [SP_OP_MLP] = mlp_backward,
    [SP_OP_LINEAR] = linear_backward,       [SP_OP_LM_HEAD] = head_backward,
    [SP_OP_CONV2D] = conv_backward,         [SP_OP_BATCHNORM] = bn_backward,
    [SP_OP_RELU] = relu_backward,           [SP_OP_POOL] = pool_backward,
};

static void run_forward(const struct sp_op *op, const struct sp_op_io *io, const float *x, float *y,
                        float *saved) {
    forwards[op->kind](op, io, x, y, saved);
}

static void run_backward(const struct sp_op *op, const struct sp_op_io *io, const float *x,
                         const float *saved, const float *dy, float *dx) {
    backwards[op->kind](op, io, x, saved, dy, dx);
}

static void run_copy(void *device, float *dst, const float *src, size_t n) {
    copy(device, dst, src, n);
}

const struct sp_op_runner sp_op_runner_cuda = {run_forward, run_backward, run_copy};

/* ---- the device */

bool sp_cuda_device_bind(const struct sp_cuda_device *dev) {
    if (dev->green) /* opening it found the driver */
        return sp_cu_driver()->CtxSetCurrent(dev->green) == CUDA_SUCCESS;
    return cudaSetDevice(dev->ordinal) == cudaSuccess;
}

bool sp_cuda_device_open(struct sp_cuda_device *dev, int ordinal, CUgreenCtx green,
                         const char *dtype, size_t extra_elems, const char **why) {
    memset(dev, 0, sizeof *dev);
    dev->ordinal = ordinal;
    if (!(dev->cb = sp_cublas(why)))
        return false;
    if (cudaSetDevice(ordinal) != cudaSuccess) {
        *why = "cudaSetDevice failed";
        return false;
    }
    dev->compute =
        dtype && strcmp(dtype, "bf16") == 0 ? CUBLAS_COMPUTE_32F_FAST_16BF : CUBLAS_COMPUTE_32F;
    if (green) { /* current while cuBLAS is made, so the handle belongs to it */
        const struct sp_cu_driver *cu = sp_cu_driver();
        CUstream stream = NULL;
        if (!cu || cu->CtxFromGreenCtx(&dev->green, green) != CUDA_SUCCESS ||
            cu->CtxSetCurrent(dev->green) != CUDA_SUCCESS ||
            cu->GreenCtxStreamCreate(&stream, green, CU_STREAM_NON_BLOCKING, 0) != CUDA_SUCCESS) {
            *why = "a stream in the stage's green context could not be made";
            return false;
        }
        dev->stream = (cudaStream_t)stream;
    } else if (cudaStreamCreateWithFlags(&dev->stream, cudaStreamNonBlocking) != cudaSuccess) {
        *why = "cudaStreamCreate failed";
        return false;
    }
    if (dev->cb->Create(&dev->blas) != CUBLAS_STATUS_SUCCESS ||
        dev->cb->SetStream(dev->blas, dev->stream) != CUBLAS_STATUS_SUCCESS) {
        *why = "cublasCreate failed";
        sp_cuda_device_close(dev);
        return false;
    }
    if (cudaEventCreate(&dev->mark[0]) != cudaSuccess ||
        cudaEventCreate(&dev->mark[1]) != cudaSuccess) {
        *why = "cudaEventCreate failed";
        sp_cuda_device_close(dev);
        return false;
    }
    dev->extra_elems = extra_elems;
    if (extra_elems &&
        cudaMalloc((void **)&dev->extra, extra_elems * sizeof *dev->extra) != cudaSuccess) {
        *why = "cudaMalloc of the attention scratch failed";
        sp_cuda_device_close(dev);
        return false;
    }
    return true;
}

void sp_cuda_device_close(struct sp_cuda_device *dev) {
    for (int k = 0; k < 2; k++)
        if (dev->mark[k])
            cudaEventDestroy(dev->mark[k]);
    if (dev->blas)
        dev->cb->Destroy(dev->blas);
    if (dev->stream)
        cudaStreamDestroy(dev->stream);
    cudaFree(dev->extra);
    memset(dev, 0, sizeof *dev);
}

bool sp_cuda_device_failed(struct sp_cuda_device *dev, char *msg, size_t cap) {
    cuda_check(dev, cudaGetLastError(), "a kernel launch");
    if (ok(dev))
        return false;
    if (dev->cuda_error != cudaSuccess)
        snprintf(msg, cap, "%s: %s", dev->failed_call, cudaGetErrorString(dev->cuda_error));
    else
        snprintf(msg, cap, "%s: %s", dev->failed_call, dev->cb->GetStatusString(dev->blas_error));
    return true;
}

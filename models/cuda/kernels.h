/* models/cuda/kernels.h: the small CUDA kernels of the built-in models' GPU ops, behind a C
 * interface (models/cuda/kernels.cu is the only C++ file). Every matrix product goes to cuBLAS
 * (models/cuda/ops_cuda.c); these are the element-wise maps, row reductions and index moves
 * around them, each the device twin of a loop in models/op_*.c and named after it.
 *
 * All tensors are device pointers, fp32, row-major as in models/model_impl.h; every launch is
 * asynchronous on `stream`. A launch error is left for the caller's next checked CUDA call. */
#ifndef SP_MODELS_CUDA_KERNELS_H
#define SP_MODELS_CUDA_KERNELS_H

#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Y[r][o] += b[o] */
void spk_add_bias_rows(cudaStream_t s, size_t rows, size_t n, const float *b, float *Y);
/* db[o] += sum over r of dY[r][o] */
void spk_colsum_acc(cudaStream_t s, size_t rows, size_t n, const float *dY, float *db);
/* conv2d's bias, per channel: Y[b][c][q] += bias[c]; dbias[c] += sum over b, q of dY[b][c][q] */
void spk_add_bias_channels(cudaStream_t s, size_t B, size_t C, size_t hw, const float *bias,
                           float *Y);
void spk_channel_sum_acc(cudaStream_t s, size_t B, size_t C, size_t hw, const float *dY,
                         float *dbias);

/* layernorm (rms = 0) or rmsnorm (rms = 1) over n features; stats[2 r] mean, [2 r + 1] rstd;
 * beta NULL for rmsnorm */
void spk_norm_forward(cudaStream_t s, int rms, size_t rows, size_t n, const float *x,
                      const float *g, const float *beta, float *y, float *stats);
/* dx += the input gradient (sp_norm_backward's second loop) */
void spk_norm_backward_dx(cudaStream_t s, int rms, size_t rows, size_t n, const float *x,
                          const float *stats, const float *g, const float *dy, float *dx);
/* dg += sum over r of dy xhat, dbeta += sum over r of dy (dbeta NULL for rmsnorm) */
void spk_norm_backward_params(cudaStream_t s, size_t rows, size_t n, const float *x,
                              const float *stats, const float *dy, float *dg, float *dbeta);

/* rows of S probabilities: row i of every S x S block masked after position i when causal */
void spk_softmax_rows(cudaStream_t s, size_t rows, size_t S, int causal, float *p);
/* dp = p (dp - rowsum(p dp)) */
void spk_softmax_backward_rows(cudaStream_t s, size_t rows, size_t S, const float *p, float *dp);

/* g = gelu(a); dg *= gelu'(a) */
void spk_gelu_forward(cudaStream_t s, size_t n, const float *a, float *g);
void spk_gelu_backward(cudaStream_t s, size_t n, const float *a, float *dg);
/* g = silu(a) c; then dc = dg silu(a), dg becomes da */
void spk_swiglu_forward(cudaStream_t s, size_t n, const float *a, const float *c, float *g);
void spk_swiglu_backward(cudaStream_t s, size_t n, const float *a, const float *c, float *dg,
                         float *dc);

/* y[r] = tok[tokens[r]] + pos[r mod S] (H features); the backward adds dy into both tables */
void spk_embedding_forward(cudaStream_t s, size_t rows, size_t H, size_t S, const int32_t *tokens,
                           const float *tok, const float *pos, float *y);
void spk_embedding_backward(cudaStream_t s, size_t rows, size_t H, size_t S, const int32_t *tokens,
                            const float *dy, float *dtok, float *dpos);

/* logits rows x V become probabilities; row_loss[r] = -log p[label r] (floored at 1e-30) */
void spk_softmax_xent_forward(cudaStream_t s, size_t rows, size_t V, const int32_t *labels,
                              float *p, float *row_loss);
/* y[b] = mean of row_loss over sample b's `per` rows */
void spk_mean_per_sample(cudaStream_t s, size_t B, size_t per, const float *row_loss, float *y);
/* dlogits = (p - onehot(label)) * inv */
void spk_softmax_xent_backward(cudaStream_t s, size_t rows, size_t V, const int32_t *labels,
                               const float *p, float inv, float *dlogits);

/* conv2d's column matrix of one image (Cin x H x W), and its adjoint (dx += ) */
struct spk_conv_shape {
    int C, H, W, k, stride, pad, Ho, Wo;
};
void spk_im2col(cudaStream_t s, struct spk_conv_shape c, const float *x, float *cols);
void spk_col2im_acc(cudaStream_t s, struct spk_conv_shape c, const float *cols, float *dx);

/* batchnorm over B x hw per channel: stats[2 c] mean, [2 c + 1] rstd; params [g][beta] */
void spk_batchnorm_forward(cudaStream_t s, size_t B, size_t C, size_t hw, const float *x,
                           const float *params, float *y, float *stats);
/* dparams += [sum dy xhat][sum dy]; dx (when not NULL) = g rstd (dy - mean dy - xhat mean(dy
 * xhat)) */
void spk_batchnorm_backward(cudaStream_t s, size_t B, size_t C, size_t hw, const float *x,
                            const float *stats, const float *params, const float *dy, float *dx,
                            float *dparams);

void spk_relu_forward(cudaStream_t s, size_t n, const float *x, float *y);
void spk_relu_backward(cudaStream_t s, size_t n, const float *x, const float *dy, float *dx);

/* max pool k x k stride st over planes (B C of them) of H x W; argmax[o] the window's best pixel
 * in its plane, as a float (< 2^24). The backward zeroes dx first. */
void spk_maxpool_forward(cudaStream_t s, size_t planes, int H, int W, int k, int st, int Ho, int Wo,
                         const float *x, float *y, float *argmax);
void spk_maxpool_backward(cudaStream_t s, size_t planes, int H, int W, int Ho, int Wo,
                          const float *argmax, const float *dy, float *dx);
/* global average pool: y[p] = mean of plane p; dx[p][q] = dy[p] / hw */
void spk_avgpool_forward(cudaStream_t s, size_t planes, size_t hw, const float *x, float *y);
void spk_avgpool_backward(cudaStream_t s, size_t planes, size_t hw, const float *dy, float *dx);

#ifdef __cplusplus
}
#endif

#endif

// models/cuda/kernels.cu: the element-wise and row-wise kernels of the built-in models on the GPU
// (interface and meaning: kernels.h). Each mirrors a CPU loop in models/op_*.c; the tests compare
// the two (tests/cuda/test_model_cuda.c). Reductions run one block per row (or channel), in fp32
// with a tree in shared memory; the CPU sums in double, so results agree to fp32 tolerance.
#include <math.h>

#include "kernels.h"

#define THREADS 256

static unsigned grid_for(size_t n) {
    size_t g = (n + THREADS - 1) / THREADS;
    return (unsigned)(g == 0 ? 1 : (g > 65535 * 32 ? 65535 * 32 : g));
}

#define GRID_STRIDE(i, n)                                                                          \
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n);                        \
         i += (size_t)gridDim.x * blockDim.x)

// Sum of v over the block; every thread gets the total. Needs THREADS floats of shared memory.
__device__ static float block_sum(float v, float *sh) {
    sh[threadIdx.x] = v;
    __syncthreads();
    for (unsigned w = blockDim.x / 2; w > 0; w /= 2) {
        if (threadIdx.x < w)
            sh[threadIdx.x] += sh[threadIdx.x + w];
        __syncthreads();
    }
    float total = sh[0];
    __syncthreads();
    return total;
}

__device__ static float block_max(float v, float *sh) {
    sh[threadIdx.x] = v;
    __syncthreads();
    for (unsigned w = blockDim.x / 2; w > 0; w /= 2) {
        if (threadIdx.x < w)
            sh[threadIdx.x] = fmaxf(sh[threadIdx.x], sh[threadIdx.x + w]);
        __syncthreads();
    }
    float total = sh[0];
    __syncthreads();
    return total;
}

// ---- biases

__global__ static void k_add_bias_rows(size_t rows, size_t n, const float *b, float *Y) {
    GRID_STRIDE(i, rows * n) { Y[i] += b[i % n]; }
}
extern "C" void spk_add_bias_rows(cudaStream_t s, size_t rows, size_t n, const float *b, float *Y) {
    k_add_bias_rows<<<grid_for(rows * n), THREADS, 0, s>>>(rows, n, b, Y);
}

__global__ static void k_colsum_acc(size_t rows, size_t n, const float *dY, float *db) {
    GRID_STRIDE(o, n) {
        float acc = 0.0f;
        for (size_t r = 0; r < rows; r++)
            acc += dY[r * n + o];
        db[o] += acc;
    }
}
extern "C" void spk_colsum_acc(cudaStream_t s, size_t rows, size_t n, const float *dY, float *db) {
    k_colsum_acc<<<grid_for(n), THREADS, 0, s>>>(rows, n, dY, db);
}

__global__ static void k_add_bias_channels(size_t B, size_t C, size_t hw, const float *bias,
                                           float *Y) {
    GRID_STRIDE(i, B * C * hw) { Y[i] += bias[(i / hw) % C]; }
}
extern "C" void spk_add_bias_channels(cudaStream_t s, size_t B, size_t C, size_t hw,
                                      const float *bias, float *Y) {
    k_add_bias_channels<<<grid_for(B * C * hw), THREADS, 0, s>>>(B, C, hw, bias, Y);
}

// one block per channel
__global__ static void k_channel_sum_acc(size_t B, size_t C, size_t hw, const float *dY,
                                         float *dbias) {
    __shared__ float sh[THREADS];
    size_t c = blockIdx.x;
    float acc = 0.0f;
    for (size_t i = threadIdx.x; i < B * hw; i += blockDim.x)
        acc += dY[((i / hw) * C + c) * hw + i % hw];
    float total = block_sum(acc, sh);
    if (threadIdx.x == 0)
        dbias[c] += total;
}
extern "C" void spk_channel_sum_acc(cudaStream_t s, size_t B, size_t C, size_t hw, const float *dY,
                                    float *dbias) {
    k_channel_sum_acc<<<(unsigned)C, THREADS, 0, s>>>(B, C, hw, dY, dbias);
}

// ---- normalization over the last dimension: one block per row

#define NORM_EPS 1e-5f

__global__ static void k_norm_forward(int rms, size_t n, const float *x, const float *g,
                                      const float *beta, float *y, float *stats) {
    __shared__ float sh[THREADS];
    size_t r = blockIdx.x;
    const float *xr = x + r * n;
    float *yr = y + r * n;
    float mean = 0.0f;
    if (!rms) {
        float acc = 0.0f;
        for (size_t k = threadIdx.x; k < n; k += blockDim.x)
            acc += xr[k];
        mean = block_sum(acc, sh) / (float)n;
    }
    float sq = 0.0f;
    for (size_t k = threadIdx.x; k < n; k += blockDim.x) {
        float d = xr[k] - mean;
        sq += d * d;
    }
    float rstd = rsqrtf(block_sum(sq, sh) / (float)n + NORM_EPS);
    for (size_t k = threadIdx.x; k < n; k += blockDim.x)
        yr[k] = (xr[k] - mean) * rstd * g[k] + (beta ? beta[k] : 0.0f);
    if (threadIdx.x == 0) {
        stats[2 * r] = mean;
        stats[2 * r + 1] = rstd;
    }
}
extern "C" void spk_norm_forward(cudaStream_t s, int rms, size_t rows, size_t n, const float *x,
                                 const float *g, const float *beta, float *y, float *stats) {
    k_norm_forward<<<(unsigned)rows, THREADS, 0, s>>>(rms, n, x, g, beta, y, stats);
}

__global__ static void k_norm_backward_dx(int rms, size_t n, const float *x, const float *stats,
                                          const float *g, const float *dy, float *dx) {
    __shared__ float sh[THREADS];
    size_t r = blockIdx.x;
    const float *xr = x + r * n, *dyr = dy + r * n;
    float *dxr = dx + r * n;
    float mu = stats[2 * r], rstd = stats[2 * r + 1];
    float sd = 0.0f, sdx = 0.0f;
    for (size_t k = threadIdx.x; k < n; k += blockDim.x) {
        float xhat = (xr[k] - mu) * rstd, d = dyr[k] * g[k];
        sd += d;
        sdx += d * xhat;
    }
    float mean_d = rms ? 0.0f : block_sum(sd, sh) / (float)n;
    float mean_dx = block_sum(sdx, sh) / (float)n;
    for (size_t k = threadIdx.x; k < n; k += blockDim.x) {
        float xhat = (xr[k] - mu) * rstd, d = dyr[k] * g[k];
        dxr[k] += rstd * (d - mean_d - xhat * mean_dx);
    }
}
extern "C" void spk_norm_backward_dx(cudaStream_t s, int rms, size_t rows, size_t n,
                                     const float *x, const float *stats, const float *g,
                                     const float *dy, float *dx) {
    k_norm_backward_dx<<<(unsigned)rows, THREADS, 0, s>>>(rms, n, x, stats, g, dy, dx);
}

__global__ static void k_norm_backward_params(size_t rows, size_t n, const float *x,
                                              const float *stats, const float *dy, float *dg,
                                              float *dbeta) {
    GRID_STRIDE(k, n) {
        float sg = 0.0f, sb = 0.0f;
        for (size_t r = 0; r < rows; r++) {
            float xhat = (x[r * n + k] - stats[2 * r]) * stats[2 * r + 1];
            sg += dy[r * n + k] * xhat;
            sb += dy[r * n + k];
        }
        dg[k] += sg;
        if (dbeta)
            dbeta[k] += sb;
    }
}
extern "C" void spk_norm_backward_params(cudaStream_t s, size_t rows, size_t n, const float *x,
                                         const float *stats, const float *dy, float *dg,
                                         float *dbeta) {
    k_norm_backward_params<<<grid_for(n), THREADS, 0, s>>>(rows, n, x, stats, dy, dg, dbeta);
}

// ---- softmax over rows of S (attention); one block per row

// row[0..n) becomes its softmax (the maximum subtracted first), row[n..len) zero; the whole block
__device__ static void block_softmax(float *row, size_t n, size_t len, float *sh) {
    float mx = -INFINITY;
    for (size_t j = threadIdx.x; j < n; j += blockDim.x)
        mx = fmaxf(mx, row[j]);
    mx = block_max(mx, sh);
    float acc = 0.0f;
    for (size_t j = threadIdx.x; j < n; j += blockDim.x)
        acc += (row[j] = expf(row[j] - mx));
    float inv = 1.0f / block_sum(acc, sh);
    for (size_t j = threadIdx.x; j < len; j += blockDim.x)
        row[j] = j < n ? row[j] * inv : 0.0f;
}

__global__ static void k_softmax_rows(size_t S, int causal, float *p) {
    __shared__ float sh[THREADS];
    size_t r = blockIdx.x, i = r % S;
    block_softmax(p + r * S, causal ? i + 1 : S, S, sh);
}
extern "C" void spk_softmax_rows(cudaStream_t s, size_t rows, size_t S, int causal, float *p) {
    k_softmax_rows<<<(unsigned)rows, THREADS, 0, s>>>(S, causal, p);
}

__global__ static void k_softmax_backward_rows(size_t S, const float *p, float *dp) {
    __shared__ float sh[THREADS];
    const float *pr = p + (size_t)blockIdx.x * S;
    float *dr = dp + (size_t)blockIdx.x * S;
    float acc = 0.0f;
    for (size_t j = threadIdx.x; j < S; j += blockDim.x)
        acc += pr[j] * dr[j];
    float dot = block_sum(acc, sh);
    for (size_t j = threadIdx.x; j < S; j += blockDim.x)
        dr[j] = pr[j] * (dr[j] - dot);
}
extern "C" void spk_softmax_backward_rows(cudaStream_t s, size_t rows, size_t S, const float *p,
                                          float *dp) {
    k_softmax_backward_rows<<<(unsigned)rows, THREADS, 0, s>>>(S, p, dp);
}

// ---- activations (GELU: the tanh approximation, as models/op_mlp.c)

#define GELU_K 0.7978845608f

__global__ static void k_gelu_forward(size_t n, const float *a, float *g) {
    GRID_STRIDE(k, n) {
        float v = a[k];
        g[k] = 0.5f * v * (1.0f + tanhf(GELU_K * (v + 0.044715f * v * v * v)));
    }
}
extern "C" void spk_gelu_forward(cudaStream_t s, size_t n, const float *a, float *g) {
    k_gelu_forward<<<grid_for(n), THREADS, 0, s>>>(n, a, g);
}

__global__ static void k_gelu_backward(size_t n, const float *a, float *dg) {
    GRID_STRIDE(k, n) {
        float v = a[k], t = tanhf(GELU_K * (v + 0.044715f * v * v * v));
        dg[k] *= 0.5f * (1.0f + t) +
                 0.5f * v * (1.0f - t * t) * GELU_K * (1.0f + 3.0f * 0.044715f * v * v);
    }
}
extern "C" void spk_gelu_backward(cudaStream_t s, size_t n, const float *a, float *dg) {
    k_gelu_backward<<<grid_for(n), THREADS, 0, s>>>(n, a, dg);
}

__global__ static void k_swiglu_forward(size_t n, const float *a, const float *c, float *g) {
    GRID_STRIDE(k, n) { g[k] = a[k] / (1.0f + expf(-a[k])) * c[k]; }
}
extern "C" void spk_swiglu_forward(cudaStream_t s, size_t n, const float *a, const float *c,
                                   float *g) {
    k_swiglu_forward<<<grid_for(n), THREADS, 0, s>>>(n, a, c, g);
}

__global__ static void k_swiglu_backward(size_t n, const float *a, const float *c, float *dg,
                                         float *dc) {
    GRID_STRIDE(k, n) {
        float sg = 1.0f / (1.0f + expf(-a[k])), silu = a[k] * sg;
        dc[k] = dg[k] * silu;
        dg[k] = dg[k] * c[k] * (sg + silu * (1.0f - sg));
    }
}
extern "C" void spk_swiglu_backward(cudaStream_t s, size_t n, const float *a, const float *c,
                                    float *dg, float *dc) {
    k_swiglu_backward<<<grid_for(n), THREADS, 0, s>>>(n, a, c, dg, dc);
}

// ---- embedding

__global__ static void k_embedding_forward(size_t rows, size_t H, size_t S, const int32_t *tokens,
                                           const float *tok, const float *pos, float *y) {
    GRID_STRIDE(i, rows * H) {
        size_t r = i / H, k = i % H;
        y[i] = tok[(size_t)tokens[r] * H + k] + pos[(r % S) * H + k];
    }
}
extern "C" void spk_embedding_forward(cudaStream_t s, size_t rows, size_t H, size_t S,
                                      const int32_t *tokens, const float *tok, const float *pos,
                                      float *y) {
    k_embedding_forward<<<grid_for(rows * H), THREADS, 0, s>>>(rows, H, S, tokens, tok, pos, y);
}

// rows sharing a token or a position add into the same entries: atomics
__global__ static void k_embedding_backward(size_t rows, size_t H, size_t S, const int32_t *tokens,
                                            const float *dy, float *dtok, float *dpos) {
    GRID_STRIDE(i, rows * H) {
        size_t r = i / H, k = i % H;
        atomicAdd(&dtok[(size_t)tokens[r] * H + k], dy[i]);
        atomicAdd(&dpos[(r % S) * H + k], dy[i]);
    }
}
extern "C" void spk_embedding_backward(cudaStream_t s, size_t rows, size_t H, size_t S,
                                       const int32_t *tokens, const float *dy, float *dtok,
                                       float *dpos) {
    k_embedding_backward<<<grid_for(rows * H), THREADS, 0, s>>>(rows, H, S, tokens, dy, dtok, dpos);
}

// ---- softmax cross-entropy (the LM head): one block per row

__global__ static void k_softmax_xent_forward(size_t V, const int32_t *labels, float *p,
                                              float *row_loss) {
    __shared__ float sh[THREADS];
    size_t r = blockIdx.x;
    float *row = p + r * V;
    block_softmax(row, V, V, sh);
    __syncthreads();
    if (threadIdx.x == 0) {
        float pl = row[labels[r]];
        row_loss[r] = -logf(pl > 1e-30f ? pl : 1e-30f);
    }
}
extern "C" void spk_softmax_xent_forward(cudaStream_t s, size_t rows, size_t V,
                                         const int32_t *labels, float *p, float *row_loss) {
    k_softmax_xent_forward<<<(unsigned)rows, THREADS, 0, s>>>(V, labels, p, row_loss);
}

__global__ static void k_mean_per_sample(size_t B, size_t per, const float *row_loss, float *y) {
    GRID_STRIDE(b, B) {
        float acc = 0.0f;
        for (size_t r = b * per; r < (b + 1) * per; r++)
            acc += row_loss[r];
        y[b] = acc / (float)per;
    }
}
extern "C" void spk_mean_per_sample(cudaStream_t s, size_t B, size_t per, const float *row_loss,
                                    float *y) {
    k_mean_per_sample<<<grid_for(B), THREADS, 0, s>>>(B, per, row_loss, y);
}

__global__ static void k_softmax_xent_backward(size_t rows, size_t V, const int32_t *labels,
                                               const float *p, float inv, float *dlogits) {
    GRID_STRIDE(i, rows * V) {
        size_t r = i / V, k = i % V;
        dlogits[i] = p[i] * inv - ((size_t)labels[r] == k ? inv : 0.0f);
    }
}
extern "C" void spk_softmax_xent_backward(cudaStream_t s, size_t rows, size_t V,
                                          const int32_t *labels, const float *p, float inv,
                                          float *dlogits) {
    k_softmax_xent_backward<<<grid_for(rows * V), THREADS, 0, s>>>(rows, V, labels, p, inv,
                                                                   dlogits);
}

// ---- conv2d's im2col and its adjoint

__global__ static void k_im2col(struct spk_conv_shape c, const float *x, float *cols) {
    size_t hw = (size_t)c.Ho * c.Wo, n = (size_t)c.C * c.k * c.k * hw;
    GRID_STRIDE(i, n) {
        size_t row = i / hw, q = i % hw;
        int ch = (int)(row / ((size_t)c.k * c.k)), ki = (int)(row / c.k % c.k), kj = (int)(row % c.k);
        int oy = (int)(q / c.Wo), ox = (int)(q % c.Wo);
        int y = oy * c.stride + ki - c.pad, xx = ox * c.stride + kj - c.pad;
        bool in = y >= 0 && y < c.H && xx >= 0 && xx < c.W;
        cols[i] = in ? x[((size_t)ch * c.H + y) * c.W + xx] : 0.0f;
    }
}
extern "C" void spk_im2col(cudaStream_t s, struct spk_conv_shape c, const float *x, float *cols) {
    size_t n = (size_t)c.C * c.k * c.k * c.Ho * c.Wo;
    k_im2col<<<grid_for(n), THREADS, 0, s>>>(c, x, cols);
}

__global__ static void k_col2im_acc(struct spk_conv_shape c, const float *cols, float *dx) {
    size_t hw = (size_t)c.Ho * c.Wo, n = (size_t)c.C * c.k * c.k * hw;
    GRID_STRIDE(i, n) {
        size_t row = i / hw, q = i % hw;
        int ch = (int)(row / ((size_t)c.k * c.k)), ki = (int)(row / c.k % c.k), kj = (int)(row % c.k);
        int oy = (int)(q / c.Wo), ox = (int)(q % c.Wo);
        int y = oy * c.stride + ki - c.pad, xx = ox * c.stride + kj - c.pad;
        if (y >= 0 && y < c.H && xx >= 0 && xx < c.W)
            atomicAdd(&dx[((size_t)ch * c.H + y) * c.W + xx], cols[i]);
    }
}
extern "C" void spk_col2im_acc(cudaStream_t s, struct spk_conv_shape c, const float *cols,
                               float *dx) {
    size_t n = (size_t)c.C * c.k * c.k * c.Ho * c.Wo;
    k_col2im_acc<<<grid_for(n), THREADS, 0, s>>>(c, cols, dx);
}

// ---- batchnorm: one block per channel

#define BN_EPS 1e-5f

__global__ static void k_batchnorm_forward(size_t B, size_t C, size_t hw, const float *x,
                                           const float *params, float *y, float *stats) {
    __shared__ float sh[THREADS];
    size_t c = blockIdx.x, n = B * hw;
    float acc = 0.0f;
    for (size_t i = threadIdx.x; i < n; i += blockDim.x)
        acc += x[((i / hw) * C + c) * hw + i % hw];
    float mean = block_sum(acc, sh) / (float)n;
    float sq = 0.0f;
    for (size_t i = threadIdx.x; i < n; i += blockDim.x) {
        float d = x[((i / hw) * C + c) * hw + i % hw] - mean;
        sq += d * d;
    }
    float rstd = rsqrtf(block_sum(sq, sh) / (float)n + BN_EPS);
    float g = params[c], beta = params[C + c];
    for (size_t i = threadIdx.x; i < n; i += blockDim.x) {
        size_t k = ((i / hw) * C + c) * hw + i % hw;
        y[k] = (x[k] - mean) * rstd * g + beta;
    }
    if (threadIdx.x == 0) {
        stats[2 * c] = mean;
        stats[2 * c + 1] = rstd;
    }
}
extern "C" void spk_batchnorm_forward(cudaStream_t s, size_t B, size_t C, size_t hw,
                                      const float *x, const float *params, float *y,
                                      float *stats) {
    k_batchnorm_forward<<<(unsigned)C, THREADS, 0, s>>>(B, C, hw, x, params, y, stats);
}

__global__ static void k_batchnorm_backward(size_t B, size_t C, size_t hw, const float *x,
                                            const float *stats, const float *params,
                                            const float *dy, float *dx, float *dparams) {
    __shared__ float sh[THREADS];
    size_t c = blockIdx.x, n = B * hw;
    float mu = stats[2 * c], rstd = stats[2 * c + 1], g = params[c];
    float sd = 0.0f, sdx = 0.0f;
    for (size_t i = threadIdx.x; i < n; i += blockDim.x) {
        size_t k = ((i / hw) * C + c) * hw + i % hw;
        sd += dy[k];
        sdx += dy[k] * (x[k] - mu) * rstd;
    }
    sd = block_sum(sd, sh);
    sdx = block_sum(sdx, sh);
    if (threadIdx.x == 0) {
        dparams[c] += sdx;
        dparams[C + c] += sd;
    }
    if (!dx)
        return;
    float md = sd / (float)n, mdx = sdx / (float)n;
    for (size_t i = threadIdx.x; i < n; i += blockDim.x) {
        size_t k = ((i / hw) * C + c) * hw + i % hw;
        float xhat = (x[k] - mu) * rstd;
        dx[k] = g * rstd * (dy[k] - md - xhat * mdx);
    }
}
extern "C" void spk_batchnorm_backward(cudaStream_t s, size_t B, size_t C, size_t hw,
                                       const float *x, const float *stats, const float *params,
                                       const float *dy, float *dx, float *dparams) {
    k_batchnorm_backward<<<(unsigned)C, THREADS, 0, s>>>(B, C, hw, x, stats, params, dy, dx,
                                                         dparams);
}

// ---- relu and pooling

__global__ static void k_relu_forward(size_t n, const float *x, float *y) {
    GRID_STRIDE(k, n) { y[k] = x[k] > 0.0f ? x[k] : 0.0f; }
}
extern "C" void spk_relu_forward(cudaStream_t s, size_t n, const float *x, float *y) {
    k_relu_forward<<<grid_for(n), THREADS, 0, s>>>(n, x, y);
}

__global__ static void k_relu_backward(size_t n, const float *x, const float *dy, float *dx) {
    GRID_STRIDE(k, n) { dx[k] = x[k] > 0.0f ? dy[k] : 0.0f; }
}
extern "C" void spk_relu_backward(cudaStream_t s, size_t n, const float *x, const float *dy,
                                  float *dx) {
    k_relu_backward<<<grid_for(n), THREADS, 0, s>>>(n, x, dy, dx);
}

__global__ static void k_maxpool_forward(size_t planes, int H, int W, int k, int st, int Ho,
                                         int Wo, const float *x, float *y, float *argmax) {
    GRID_STRIDE(o, planes * Ho * Wo) {
        size_t p = o / ((size_t)Ho * Wo);
        int oy = (int)(o / Wo % Ho), ox = (int)(o % Wo);
        const float *xp = x + p * (size_t)H * W;
        int best = oy * st * W + ox * st;
        for (int i = 0; i < k; i++)
            for (int j = 0; j < k; j++) {
                int q = (oy * st + i) * W + ox * st + j;
                if (xp[q] > xp[best])
                    best = q;
            }
        y[o] = xp[best];
        argmax[o] = (float)best;
    }
}
extern "C" void spk_maxpool_forward(cudaStream_t s, size_t planes, int H, int W, int k, int st,
                                    int Ho, int Wo, const float *x, float *y, float *argmax) {
    k_maxpool_forward<<<grid_for(planes * Ho * Wo), THREADS, 0, s>>>(planes, H, W, k, st, Ho, Wo,
                                                                     x, y, argmax);
}

__global__ static void k_maxpool_backward(size_t planes, int H, int W, int Ho, int Wo,
                                          const float *argmax, const float *dy, float *dx) {
    GRID_STRIDE(o, planes * Ho * Wo) {
        size_t p = o / ((size_t)Ho * Wo);
        atomicAdd(&dx[p * (size_t)H * W + (size_t)argmax[o]], dy[o]);
    }
}
extern "C" void spk_maxpool_backward(cudaStream_t s, size_t planes, int H, int W, int Ho, int Wo,
                                     const float *argmax, const float *dy, float *dx) {
    cudaMemsetAsync(dx, 0, planes * (size_t)H * W * sizeof *dx, s);
    k_maxpool_backward<<<grid_for(planes * Ho * Wo), THREADS, 0, s>>>(planes, H, W, Ho, Wo, argmax,
                                                                      dy, dx);
}

__global__ static void k_avgpool_forward(size_t hw, const float *x, float *y) {
    __shared__ float sh[THREADS];
    const float *xp = x + (size_t)blockIdx.x * hw;
    float acc = 0.0f;
    for (size_t q = threadIdx.x; q < hw; q += blockDim.x)
        acc += xp[q];
    float total = block_sum(acc, sh);
    if (threadIdx.x == 0)
        y[blockIdx.x] = total / (float)hw;
}
extern "C" void spk_avgpool_forward(cudaStream_t s, size_t planes, size_t hw, const float *x,
                                    float *y) {
    k_avgpool_forward<<<(unsigned)planes, THREADS, 0, s>>>(hw, x, y);
}

__global__ static void k_avgpool_backward(size_t planes, size_t hw, const float *dy, float *dx) {
    GRID_STRIDE(i, planes * hw) { dx[i] = dy[i / hw] / (float)hw; }
}
extern "C" void spk_avgpool_backward(cudaStream_t s, size_t planes, size_t hw, const float *dy,
                                     float *dx) {
    k_avgpool_backward<<<grid_for(planes * hw), THREADS, 0, s>>>(planes, hw, dy, dx);
}

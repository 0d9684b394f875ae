//===- Normalization.cu - BatchNorm, LayerNorm, RMSNorm and their grads --===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// The CUDA versions of Normalization.cpp's training kernels. The arguments
// are checked by the CPU backend's own functions (checkBatchNormTraining,
// ...); the statistics and the reductions of the gradients accumulate in
// f64 as there, in a block tree instead of a sequence, and the elementwise
// results are the CPU's f32 expressions (compiled without FMA contraction).
// BatchNorm: blocks per (channel, run of images), with the partial sums in
// a scratch table; with one element per image and channel (S == 1: [N, C],
// as a channels-last BatchNorm is lowered) blocks per (32 channels, run of
// rows), the threads across the channels. LayerNorm: one block per row, and
// dscale / dbias as column sums over runs of rows, then over the runs.
// RMSNorm runs the LayerNorm kernels with a zero mean and no bias, which are
// the CPU's RMSNorm expressions term for term.
//
//===----------------------------------------------------------------------===//

#include "Common.cuh"
#include "amp/Runtime/Math/Normalization.h"

#include <algorithm>
#include <cmath>

using namespace amprt;
using namespace amprt::cuda;

namespace {

constexpr int kBlock = 256;

__device__ __forceinline__ float ldOr(const void *p, int32_t dt, int64_t i,
                                      float dflt) {
  return p ? loadF(p, dt, i) : dflt;
}

/// A tensor the kernels may read or write, or NULL.
struct Opt {
  void *p = nullptr;
  int32_t dt = 0;
};
Opt opt(T t) {
  Opt o;
  if (t) {
    o.p = t->data;
    o.dt = t->dtype;
  }
  return o;
}

//===----------------------------------------------------------------------===//
// BatchNorm: x as [N, C, S]
//===----------------------------------------------------------------------===//

// Each channel's N images split into `chunks` runs, one block per (channel,
// run): the f64 partial sums go to a scratch table, and every block adds a
// channel's partials in run order, so all of them see the same statistics.

struct BnArgs {
  int64_t N, C, S, chunks;
  float momentum, epsilon;
  Opt x, scale, bias, rm, rv, y, rmo, rvo, sm, sis;
  double *part; // [2][C][chunks]
};

/// The images [n0, n1) of block (c, j).
__device__ __forceinline__ void bnRange(int64_t N, int64_t chunks, int64_t j,
                                        int64_t &n0, int64_t &n1) {
  int64_t len = (N + chunks - 1) / chunks;
  n0 = j * len;
  n1 = n0 + len < N ? n0 + len : N;
}

/// Sum of table t's partials of channel c, in run order.
__device__ __forceinline__ double bnTotal(const double *part, int64_t C,
                                          int64_t chunks, int t, int64_t c) {
  double s = 0;
  for (int64_t j = 0; j < chunks; ++j)
    s += part[(t * C + c) * chunks + j];
  return s;
}

/// pass 0: sum of x; pass 1: sum of (x - mean)^2.
__global__ void bnStatsKernel(BnArgs a, int pass) {
  __shared__ double sh[32];
  int64_t c = blockIdx.x, j = blockIdx.y, n0, n1;
  bnRange(a.N, a.chunks, j, n0, n1);
  double M = double(a.N * a.S);
  double m = 0;
  if (pass == 1) {
    double t = bnTotal(a.part, a.C, a.chunks, 0, c);
    m = M > 0 ? t / M : 0;
  }
  double acc = 0;
  for (int64_t n = n0; n < n1; ++n)
    for (int64_t i = threadIdx.x; i < a.S; i += blockDim.x) {
      double v = loadF(a.x.p, a.x.dt, (n * a.C + c) * a.S + i);
      acc += pass == 0 ? v : (v - m) * (v - m);
    }
  acc = blockSum(acc, sh);
  if (threadIdx.x == 0)
    a.part[(pass * a.C + c) * a.chunks + j] = acc;
}

/// Channel c's saved and running statistics, those asked for, from its
/// batch mean m (mf as float) and variance var.
__device__ __forceinline__ void bnStoreStats(const BnArgs &a, int64_t c,
                                             double m, double var, float mf,
                                             float inv) {
  if (a.sm.p)
    storeF(a.sm.p, a.sm.dt, c, mf);
  if (a.sis.p)
    storeF(a.sis.p, a.sis.dt, c, inv);
  if (a.rmo.p)
    storeF(a.rmo.p, a.rmo.dt, c,
           runningStat(a.momentum, ldOr(a.rm.p, a.rm.dt, c, 0.f), m));
  if (a.rvo.p)
    storeF(a.rvo.p, a.rvo.dt, c,
           runningStat(a.momentum, ldOr(a.rv.p, a.rv.dt, c, 1.f), var));
}

__global__ void bnApplyKernel(BnArgs a) {
  int64_t c = blockIdx.x, j = blockIdx.y, n0, n1;
  bnRange(a.N, a.chunks, j, n0, n1);
  double M = double(a.N * a.S);
  double s = bnTotal(a.part, a.C, a.chunks, 0, c);
  double q = bnTotal(a.part, a.C, a.chunks, 1, c);
  double m = M > 0 ? s / M : 0;
  double var = M > 0 ? q / M : 0;
  float mf = float(m);
  float inv = invStd(var, a.epsilon);
  float al = inv * loadF(a.scale.p, a.scale.dt, c);
  float b = loadF(a.bias.p, a.bias.dt, c);
  for (int64_t n = n0; n < n1; ++n)
    for (int64_t i = threadIdx.x; i < a.S; i += blockDim.x) {
      int64_t o = (n * a.C + c) * a.S + i;
      storeF(a.y.p, a.y.dt, o,
             batchNormApply(loadF(a.x.p, a.x.dt, o), mf, al, b));
    }
  if (j == 0 && threadIdx.x == 0)
    bnStoreStats(a, c, m, var, mf, inv);
}

/// Splits each channel's images into runs (about 2048 blocks, at most one
/// run per image) and gets the partial-sum table; the grid is (C, runs).
template <typename Args>
amprt_status bnPlan(amprt_context *ctx, const char *k, Args &a, Scratch &part,
                    dim3 &grid) {
  a.chunks = std::max<int64_t>(
      1, std::min<int64_t>(
             {a.N, (2048 + a.C - 1) / std::max<int64_t>(a.C, 1), 65535}));
  AMPRT_TRY(part.get(ctx, k, size_t(2 * a.C * a.chunks) * sizeof(double)));
  a.part = static_cast<double *>(part.p);
  grid = dim3(unsigned(a.C), unsigned(a.chunks));
  return AMPRT_OK;
}

// BatchNorm of rows: S == 1, x as [N, C] (BatchNorm1d, and a channels-last
// BatchNorm lowered to [N * spatial, C]). A block per channel would read one
// element per image with one thread; here a block takes 32 adjacent
// channels of a run of rows, its 8 warps on every 8th row of the run (a
// warp reads 32 adjacent elements of a row). The lanes' f64 sums are added
// in lane order into the partial-sum table above, and a thread per channel
// adds the runs in run order (bnTotal) and leaves the channel's floats for
// the elementwise kernel.

constexpr int kCols = 32, kLanes = kBlock / kCols;

/// The rows path's per-channel tables.
struct BnRowTables {
  double *mean; // [C]: the batch mean, pass 1's centre
  /// [3][C]: the floats of the elementwise kernel (training: mean, a =
  /// inv_std * scale, bias; grad: bnGradScales).
  float *coef;
};

/// The thread's channel c (past C in the last block) and its lane's rows
/// of block (x, y)'s run: n, n + kLanes, ... below n1.
__device__ __forceinline__ void
bnRowsLane(int64_t N, int64_t chunks, int64_t &c, int64_t &n, int64_t &n1) {
  c = blockIdx.x * int64_t(kCols) + threadIdx.x % kCols;
  bnRange(N, chunks, blockIdx.y, n, n1);
  n += threadIdx.x / kCols;
}

/// The sum of v over the lanes of the thread's channel, in lane order, to
/// the threads of lane 0 (threadIdx.x < kCols).
__device__ __forceinline__ double laneSum(double v, double (*sh)[kCols]) {
  __syncthreads(); // sh may still be read by a previous call
  sh[threadIdx.x / kCols][threadIdx.x % kCols] = v;
  __syncthreads();
  double s = 0;
  if (threadIdx.x < kCols)
    for (int l = 0; l < kLanes; ++l)
      s += sh[l][threadIdx.x];
  return s;
}

/// Runs of at least 64 rows (about 2048 blocks), the partial-sum table and
/// the per-channel tables in one scratch; the grid is (channel blocks,
/// runs).
template <typename Args>
amprt_status bnRowsPlan(amprt_context *ctx, const char *k, Args &a,
                        BnRowTables &t, Scratch &tmp, dim3 &grid) {
  int64_t colBlocks = (a.C + kCols - 1) / kCols;
  a.chunks = std::max<int64_t>(
      1, std::min<int64_t>(
             {(a.N + 63) / 64, std::max<int64_t>(2048 / colBlocks, 1), 65535}));
  size_t partBytes = size_t(2 * a.C * a.chunks) * sizeof(double);
  size_t meanBytes = size_t(a.C) * sizeof(double);
  AMPRT_TRY(
      tmp.get(ctx, k, partBytes + meanBytes + size_t(3 * a.C) * sizeof(float)));
  char *p = static_cast<char *>(tmp.p);
  a.part = reinterpret_cast<double *>(p);
  t.mean = reinterpret_cast<double *>(p + partBytes);
  t.coef = reinterpret_cast<float *>(p + partBytes + meanBytes);
  grid = dim3(unsigned(colBlocks), unsigned(a.chunks));
  return AMPRT_OK;
}

/// pass 0: sum of x; pass 1: sum of (x - mean)^2, per (channel, run).
__global__ void bnRowsStatsKernel(BnArgs a, BnRowTables t, int pass) {
  __shared__ double sh[kLanes][kCols];
  int64_t c, n, n1;
  bnRowsLane(a.N, a.chunks, c, n, n1);
  bool in = c < a.C;
  double m = pass == 1 && in ? t.mean[c] : 0, acc = 0;
  if (in)
    for (; n < n1; n += kLanes) {
      double v = loadF(a.x.p, a.x.dt, n * a.C + c);
      acc += pass == 0 ? v : (v - m) * (v - m);
    }
  acc = laneSum(acc, sh);
  if (threadIdx.x < kCols && in)
    a.part[(pass * a.C + c) * a.chunks + blockIdx.y] = acc;
}

/// pass 0: each channel's mean; pass 1: its variance, then the saved and
/// running statistics and the floats of bnRowsApplyKernel.
__global__ void bnRowsTotalKernel(BnArgs a, BnRowTables t, int pass) {
  double M = double(a.N);
  for (int64_t c = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; c < a.C;
       c += int64_t(gridDim.x) * blockDim.x) {
    double s = bnTotal(a.part, a.C, a.chunks, pass, c);
    if (pass == 0) {
      t.mean[c] = M > 0 ? s / M : 0;
      continue;
    }
    double m = t.mean[c], var = M > 0 ? s / M : 0;
    float mf = float(m);
    float inv = invStd(var, a.epsilon);
    t.coef[c] = mf;
    t.coef[a.C + c] = inv * loadF(a.scale.p, a.scale.dt, c);
    t.coef[2 * a.C + c] = loadF(a.bias.p, a.bias.dt, c);
    bnStoreStats(a, c, m, var, mf, inv);
  }
}

__global__ void bnRowsApplyKernel(BnArgs a, BnRowTables t) {
  int64_t c, n, n1;
  bnRowsLane(a.N, a.chunks, c, n, n1);
  if (c >= a.C)
    return;
  float mf = t.coef[c], al = t.coef[a.C + c], b = t.coef[2 * a.C + c];
  for (; n < n1; n += kLanes) {
    int64_t o = n * a.C + c;
    storeF(a.y.p, a.y.dt, o,
           batchNormApply(loadF(a.x.p, a.x.dt, o), mf, al, b));
  }
}

/// batch_norm_training of rows (S == 1): for each pass the sums per
/// (channel, run), then per channel; then y.
amprt_status bnRowsTraining(amprt_context *ctx, const char *k, BnArgs &a) {
  Scratch tmp;
  BnRowTables t;
  dim3 grid;
  AMPRT_TRY(bnRowsPlan(ctx, k, a, t, tmp, grid));
  cudaStream_t s = stream(ctx);
  for (int pass = 0; pass < 2; ++pass) {
    bnRowsStatsKernel<<<grid, kBlock, 0, s>>>(a, t, pass);
    AMPRT_CUDA_LAUNCHED(ctx, k);
    bnRowsTotalKernel<<<gridFor(a.C, kBlock), kBlock, 0, s>>>(a, t, pass);
    AMPRT_CUDA_LAUNCHED(ctx, k);
  }
  bnRowsApplyKernel<<<grid, kBlock, 0, s>>>(a, t);
  AMPRT_CUDA_LAUNCHED(ctx, k);
  return AMPRT_OK;
}

amprt_status cudaBatchNormTraining(amprt_context *ctx, T x, T scale, T bias,
                                   T running_mean, T running_var,
                                   float momentum, float epsilon, T y,
                                   T running_mean_out, T running_var_out,
                                   T saved_mean, T saved_inv_std) {
  const char *k = "batch_norm_training";
  return guard(ctx, k, [&]() -> amprt_status {
    BnArgs a;
    if (checkBatchNormTraining(ctx, x, scale, bias, running_mean, running_var,
                               y, running_mean_out, running_var_out, saved_mean,
                               saved_inv_std, a.N, a.C, a.S) ||
        a.C > 65535LL * 32767)
      return onHost(ctx, [&] {
        return amprt_batch_norm_training(
            ctx, x, scale, bias, running_mean, running_var, momentum, epsilon,
            y, running_mean_out, running_var_out, saved_mean, saved_inv_std);
      });
    if (a.C == 0)
      return AMPRT_OK;
    a.momentum = momentum;
    a.epsilon = epsilon;
    a.x = opt(x);
    a.scale = opt(scale);
    a.bias = opt(bias);
    a.rm = opt(running_mean);
    a.rv = opt(running_var);
    a.y = opt(y);
    a.rmo = opt(running_mean_out);
    a.rvo = opt(running_var_out);
    a.sm = opt(saved_mean);
    a.sis = opt(saved_inv_std);
    if (a.S == 1)
      return bnRowsTraining(ctx, k, a);
    Scratch part;
    dim3 grid;
    AMPRT_TRY(bnPlan(ctx, k, a, part, grid));
    cudaStream_t s = stream(ctx);
    for (int pass = 0; pass < 2; ++pass) {
      bnStatsKernel<<<grid, kBlock, 0, s>>>(a, pass);
      AMPRT_CUDA_LAUNCHED(ctx, k);
    }
    bnApplyKernel<<<grid, kBlock, 0, s>>>(a);
    AMPRT_CUDA_LAUNCHED(ctx, k);
    return AMPRT_OK;
  });
}

struct BnGradArgs {
  int64_t N, C, S, chunks;
  Opt dy, x, scale, sm, sis, dx, dscale, dbias;
  double *part; // [2][C][chunks]: sum dy, sum dy * xhat
};

__global__ void bnGradSumsKernel(BnGradArgs a) {
  __shared__ double sh[32];
  int64_t c = blockIdx.x, j = blockIdx.y, n0, n1;
  bnRange(a.N, a.chunks, j, n0, n1);
  float m = loadF(a.sm.p, a.sm.dt, c), inv = loadF(a.sis.p, a.sis.dt, c);
  double sdy = 0, sdyx = 0;
  for (int64_t n = n0; n < n1; ++n)
    for (int64_t i = threadIdx.x; i < a.S; i += blockDim.x) {
      int64_t o = (n * a.C + c) * a.S + i;
      float g = loadF(a.dy.p, a.dy.dt, o);
      sdy += g;
      sdyx += double(g) * double((loadF(a.x.p, a.x.dt, o) - m) * inv);
    }
  sdy = blockSum(sdy, sh);
  sdyx = blockSum(sdyx, sh);
  if (threadIdx.x == 0) {
    a.part[c * a.chunks + j] = sdy;
    a.part[(a.C + c) * a.chunks + j] = sdyx;
  }
}

/// Channel c's dbias and dscale, those asked for, from its sums of dy and
/// dy * xhat.
__device__ __forceinline__ void bnStoreGradSums(const BnGradArgs &a, int64_t c,
                                                double sdy, double sdyx) {
  if (a.dbias.p)
    storeF(a.dbias.p, a.dbias.dt, c, float(sdy));
  if (a.dscale.p)
    storeF(a.dscale.p, a.dscale.dt, c, float(sdyx));
}

/// The floats of channel c's dx: a = scale * inv_std, mean(dy) and mean(dy
/// xhat), from its sums over M elements.
struct BnGradScales {
  float al, mdy, mdyx;
};
__device__ __forceinline__ BnGradScales bnGradScales(const BnGradArgs &a,
                                                     int64_t c, double M,
                                                     double sdy, double sdyx) {
  float inv = loadF(a.sis.p, a.sis.dt, c);
  return {loadF(a.scale.p, a.scale.dt, c) * inv, M > 0 ? float(sdy / M) : 0.f,
          M > 0 ? float(sdyx / M) : 0.f};
}

__global__ void bnGradApplyKernel(BnGradArgs a) {
  int64_t c = blockIdx.x, j = blockIdx.y, n0, n1;
  bnRange(a.N, a.chunks, j, n0, n1);
  double M = double(a.N * a.S);
  double sdy = bnTotal(a.part, a.C, a.chunks, 0, c);
  double sdyx = bnTotal(a.part, a.C, a.chunks, 1, c);
  if (j == 0 && threadIdx.x == 0)
    bnStoreGradSums(a, c, sdy, sdyx);
  if (!a.dx.p)
    return;
  float m = loadF(a.sm.p, a.sm.dt, c), inv = loadF(a.sis.p, a.sis.dt, c);
  BnGradScales g = bnGradScales(a, c, M, sdy, sdyx);
  for (int64_t n = n0; n < n1; ++n)
    for (int64_t i = threadIdx.x; i < a.S; i += blockDim.x) {
      int64_t o = (n * a.C + c) * a.S + i;
      float xh = (loadF(a.x.p, a.x.dt, o) - m) * inv;
      storeF(
          a.dx.p, a.dx.dt, o,
          batchNormGradDx(g.al, loadF(a.dy.p, a.dy.dt, o), g.mdy, xh, g.mdyx));
    }
}

/// Per (channel, run) of rows: the sums of dy and dy * xhat.
__global__ void bnRowsGradSumsKernel(BnGradArgs a) {
  __shared__ double sh[kLanes][kCols];
  int64_t c, n, n1;
  bnRowsLane(a.N, a.chunks, c, n, n1);
  bool in = c < a.C;
  double sdy = 0, sdyx = 0;
  if (in) {
    float m = loadF(a.sm.p, a.sm.dt, c), inv = loadF(a.sis.p, a.sis.dt, c);
    for (; n < n1; n += kLanes) {
      int64_t o = n * a.C + c;
      float g = loadF(a.dy.p, a.dy.dt, o);
      sdy += g;
      sdyx += double(g) * double((loadF(a.x.p, a.x.dt, o) - m) * inv);
    }
  }
  sdy = laneSum(sdy, sh);
  sdyx = laneSum(sdyx, sh);
  if (threadIdx.x < kCols && in) {
    a.part[c * a.chunks + blockIdx.y] = sdy;
    a.part[(a.C + c) * a.chunks + blockIdx.y] = sdyx;
  }
}

/// Per channel: dbias and dscale, and the floats of bnRowsGradApplyKernel.
__global__ void bnRowsGradTotalKernel(BnGradArgs a, BnRowTables t) {
  double M = double(a.N);
  for (int64_t c = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; c < a.C;
       c += int64_t(gridDim.x) * blockDim.x) {
    double sdy = bnTotal(a.part, a.C, a.chunks, 0, c);
    double sdyx = bnTotal(a.part, a.C, a.chunks, 1, c);
    bnStoreGradSums(a, c, sdy, sdyx);
    BnGradScales g = bnGradScales(a, c, M, sdy, sdyx);
    t.coef[c] = g.al;
    t.coef[a.C + c] = g.mdy;
    t.coef[2 * a.C + c] = g.mdyx;
  }
}

__global__ void bnRowsGradApplyKernel(BnGradArgs a, BnRowTables t) {
  int64_t c, n, n1;
  bnRowsLane(a.N, a.chunks, c, n, n1);
  if (c >= a.C)
    return;
  float m = loadF(a.sm.p, a.sm.dt, c), inv = loadF(a.sis.p, a.sis.dt, c);
  float al = t.coef[c], mdy = t.coef[a.C + c], mdyx = t.coef[2 * a.C + c];
  for (; n < n1; n += kLanes) {
    int64_t o = n * a.C + c;
    float xh = (loadF(a.x.p, a.x.dt, o) - m) * inv;
    storeF(a.dx.p, a.dx.dt, o,
           batchNormGradDx(al, loadF(a.dy.p, a.dy.dt, o), mdy, xh, mdyx));
  }
}

/// batch_norm_grad of rows (S == 1): the sums per (channel, run), then per
/// channel; then dx when asked for.
amprt_status bnRowsGrad(amprt_context *ctx, const char *k, BnGradArgs &a) {
  Scratch tmp;
  BnRowTables t;
  dim3 grid;
  AMPRT_TRY(bnRowsPlan(ctx, k, a, t, tmp, grid));
  cudaStream_t s = stream(ctx);
  bnRowsGradSumsKernel<<<grid, kBlock, 0, s>>>(a);
  AMPRT_CUDA_LAUNCHED(ctx, k);
  bnRowsGradTotalKernel<<<gridFor(a.C, kBlock), kBlock, 0, s>>>(a, t);
  AMPRT_CUDA_LAUNCHED(ctx, k);
  if (a.dx.p) {
    bnRowsGradApplyKernel<<<grid, kBlock, 0, s>>>(a, t);
    AMPRT_CUDA_LAUNCHED(ctx, k);
  }
  return AMPRT_OK;
}

amprt_status cudaBatchNormGrad(amprt_context *ctx, T dy, T x, T scale,
                               T saved_mean, T saved_inv_std, T dx, T dscale,
                               T dbias) {
  const char *k = "batch_norm_grad";
  return guard(ctx, k, [&]() -> amprt_status {
    BnGradArgs a;
    if (checkBatchNormGrad(ctx, dy, x, scale, saved_mean, saved_inv_std, dx,
                           dscale, dbias, a.N, a.C, a.S) ||
        a.C > 65535LL * 32767)
      return onHost(ctx, [&] {
        return amprt_batch_norm_grad(ctx, dy, x, scale, saved_mean,
                                     saved_inv_std, dx, dscale, dbias);
      });
    if (a.C == 0)
      return AMPRT_OK;
    a.dy = opt(dy);
    a.x = opt(x);
    a.scale = opt(scale);
    a.sm = opt(saved_mean);
    a.sis = opt(saved_inv_std);
    a.dx = opt(dx);
    a.dscale = opt(dscale);
    a.dbias = opt(dbias);
    if (a.S == 1)
      return bnRowsGrad(ctx, k, a);
    Scratch part;
    dim3 grid;
    AMPRT_TRY(bnPlan(ctx, k, a, part, grid));
    cudaStream_t s = stream(ctx);
    bnGradSumsKernel<<<grid, kBlock, 0, s>>>(a);
    AMPRT_CUDA_LAUNCHED(ctx, k);
    bnGradApplyKernel<<<grid, kBlock, 0, s>>>(a);
    AMPRT_CUDA_LAUNCHED(ctx, k);
    return AMPRT_OK;
  });
}

//===----------------------------------------------------------------------===//
// LayerNorm: x as [outer, inner]
//===----------------------------------------------------------------------===//

struct LnArgs {
  int64_t outer, inner;
  float epsilon;
  /// RMSNorm (SimplifiedLayerNormalization): no mean (0), no bias.
  bool rms = false;
  Opt x, scale, bias, y, mean, inv, dy, dx, dscale, dbias;
};

__global__ void lnKernel(LnArgs a) {
  __shared__ double part[32];
  for (int64_t r = blockIdx.x; r < a.outer; r += gridDim.x) {
    int64_t base = r * a.inner;
    double m = 0;
    if (!a.rms) {
      double s = 0;
      for (int64_t i = threadIdx.x; i < a.inner; i += blockDim.x)
        s += loadF(a.x.p, a.x.dt, base + i);
      s = blockSum(s, part);
      m = a.inner ? s / double(a.inner) : 0;
    }
    double q = 0;
    for (int64_t i = threadIdx.x; i < a.inner; i += blockDim.x) {
      double d = loadF(a.x.p, a.x.dt, base + i) - m;
      q += d * d;
    }
    q = blockSum(q, part);
    double var = a.inner ? q / double(a.inner) : 0;
    float inv = invStd(var, a.epsilon);
    float mf = float(m);
    for (int64_t i = threadIdx.x; i < a.inner; i += blockDim.x) {
      float x = loadF(a.x.p, a.x.dt, base + i);
      float s = loadF(a.scale.p, a.scale.dt, i);
      storeF(a.y.p, a.y.dt, base + i,
             a.rms ? rmsNormApply(x, inv, s)
                   : layerNormApply(x, mf, inv, s,
                                    ldOr(a.bias.p, a.bias.dt, i, 0.f)));
    }
    if (threadIdx.x == 0) {
      if (a.mean.p)
        storeF(a.mean.p, a.mean.dt, r, mf);
      if (a.inv.p)
        storeF(a.inv.p, a.inv.dt, r, inv);
    }
  }
}

amprt_status launchLn(amprt_context *ctx, const char *k, const LnArgs &a) {
  if (a.outer == 0)
    return AMPRT_OK;
  lnKernel<<<unsigned(std::min<int64_t>(a.outer, 65535LL * 32)), kBlock, 0,
             stream(ctx)>>>(a);
  AMPRT_CUDA_LAUNCHED(ctx, k);
  return AMPRT_OK;
}

amprt_status cudaLayerNorm(amprt_context *ctx, T x, T scale, T bias,
                           int64_t axis, float epsilon, T y, T mean,
                           T inv_std) {
  const char *k = "layer_norm";
  return guard(ctx, k, [&]() -> amprt_status {
    LnArgs a;
    if (checkLayerNorm(ctx, x, scale, bias, axis, y, mean, inv_std, a.outer,
                       a.inner))
      return onHost(ctx, [&] {
        return amprt_layer_norm(ctx, x, scale, bias, axis, epsilon, y, mean,
                                inv_std);
      });
    a.epsilon = epsilon;
    a.x = opt(x);
    a.scale = opt(scale);
    a.bias = opt(bias);
    a.y = opt(y);
    a.mean = opt(mean);
    a.inv = opt(inv_std);
    return launchLn(ctx, k, a);
  });
}

/// dx of one row per block.
__global__ void lnGradDxKernel(LnArgs a) {
  __shared__ double part[32];
  for (int64_t r = blockIdx.x; r < a.outer; r += gridDim.x) {
    int64_t base = r * a.inner;
    float m = a.rms ? 0.f : loadF(a.mean.p, a.mean.dt, r);
    float inv = loadF(a.inv.p, a.inv.dt, r);
    double sg = 0, sgx = 0;
    for (int64_t i = threadIdx.x; i < a.inner; i += blockDim.x) {
      float xh = (loadF(a.x.p, a.x.dt, base + i) - m) * inv;
      float gs =
          loadF(a.dy.p, a.dy.dt, base + i) * loadF(a.scale.p, a.scale.dt, i);
      sg += gs;
      sgx += double(gs) * xh;
    }
    if (!a.rms) // RMSNorm has no mean term
      sg = blockSum(sg, part);
    sgx = blockSum(sgx, part);
    float mg = a.rms ? 0.f : float(sg / double(a.inner));
    float mgx = float(sgx / double(a.inner));
    for (int64_t i = threadIdx.x; i < a.inner; i += blockDim.x) {
      // RMSNorm's m is 0: xh = (x - 0) inv is the CPU's x inv.
      float xh = (loadF(a.x.p, a.x.dt, base + i) - m) * inv;
      float gs =
          loadF(a.dy.p, a.dy.dt, base + i) * loadF(a.scale.p, a.scale.dt, i);
      storeF(a.dx.p, a.dx.dt, base + i,
             a.rms ? rmsNormGradDx(inv, gs, xh, mgx)
                   : layerNormGradDx(inv, gs, mg, xh, mgx));
    }
  }
}

/// dscale and dbias: column sums down the rows. Block (x, y) sums rows
/// [y * len, (y + 1) * len) of its columns into part[y][i] (ds) and
/// part[chunks + y][i] (db); lnGradColumnsKernel adds the chunks in order.
__global__ void lnGradPartialKernel(LnArgs a, double *part, int64_t chunks) {
  int64_t len = (a.outer + chunks - 1) / chunks;
  int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  for (int64_t c = blockIdx.y; c < chunks; c += gridDim.y) {
    if (i >= a.inner)
      continue;
    double ds = 0, db = 0;
    int64_t hi = (c + 1) * len < a.outer ? (c + 1) * len : a.outer;
    for (int64_t r = c * len; r < hi; ++r) {
      float m = a.rms ? 0.f : loadF(a.mean.p, a.mean.dt, r);
      float inv = loadF(a.inv.p, a.inv.dt, r);
      int64_t o = r * a.inner + i;
      float g = loadF(a.dy.p, a.dy.dt, o);
      float xh = (loadF(a.x.p, a.x.dt, o) - m) * inv;
      ds += double(g) * xh;
      db += g;
    }
    part[c * a.inner + i] = ds;
    part[(chunks + c) * a.inner + i] = db;
  }
}

__global__ void lnGradColumnsKernel(LnArgs a, const double *part,
                                    int64_t chunks) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < a.inner;
       i += int64_t(gridDim.x) * blockDim.x) {
    double ds = 0, db = 0;
    for (int64_t c = 0; c < chunks; ++c) {
      ds += part[c * a.inner + i];
      db += part[(chunks + c) * a.inner + i];
    }
    if (a.dscale.p)
      storeF(a.dscale.p, a.dscale.dt, i, float(ds));
    if (a.dbias.p)
      storeF(a.dbias.p, a.dbias.dt, i, float(db));
  }
}

/// dx (a row per block), then dscale and dbias (column sums), those of the
/// outputs present.
amprt_status launchLnGrad(amprt_context *ctx, const char *k, const LnArgs &a) {
  cudaStream_t s = stream(ctx);
  if (a.dx.p && a.outer > 0 && a.inner > 0) {
    lnGradDxKernel<<<unsigned(std::min<int64_t>(a.outer, 65535LL * 32)), kBlock,
                     0, s>>>(a);
    AMPRT_CUDA_LAUNCHED(ctx, k);
  }
  if ((a.dscale.p || a.dbias.p) && a.inner > 0) {
    // About 1024 blocks of 256 columns, at least 16 rows each.
    int64_t colBlocks = (a.inner + kBlock - 1) / kBlock;
    int64_t chunks = std::max<int64_t>(
        1, std::min<int64_t>({(a.outer + 15) / 16,
                              std::max<int64_t>(1024 / colBlocks, 1), 65535}));
    Scratch part;
    AMPRT_TRY(part.get(ctx, k, size_t(2 * chunks * a.inner) * sizeof(double)));
    auto *pp = static_cast<double *>(part.p);
    lnGradPartialKernel<<<dim3(unsigned(colBlocks), unsigned(chunks)), kBlock,
                          0, s>>>(a, pp, chunks);
    AMPRT_CUDA_LAUNCHED(ctx, k);
    lnGradColumnsKernel<<<gridFor(a.inner, kBlock), kBlock, 0, s>>>(a, pp,
                                                                    chunks);
    AMPRT_CUDA_LAUNCHED(ctx, k);
  }
  return AMPRT_OK;
}

amprt_status cudaLayerNormGrad(amprt_context *ctx, T dy, T x, T scale, T mean,
                               T inv_std, int64_t axis, T dx, T dscale,
                               T dbias) {
  const char *k = "layer_norm_grad";
  return guard(ctx, k, [&]() -> amprt_status {
    LnArgs a;
    if (checkLayerNormGrad(ctx, dy, x, scale, mean, inv_std, axis, dx, dscale,
                           dbias, a.outer, a.inner))
      return onHost(ctx, [&] {
        return amprt_layer_norm_grad(ctx, dy, x, scale, mean, inv_std, axis, dx,
                                     dscale, dbias);
      });
    a.dy = opt(dy);
    a.x = opt(x);
    a.scale = opt(scale);
    a.mean = opt(mean);
    a.inv = opt(inv_std);
    a.dx = opt(dx);
    a.dscale = opt(dscale);
    a.dbias = opt(dbias);
    return launchLnGrad(ctx, k, a);
  });
}

amprt_status cudaRmsNorm(amprt_context *ctx, T x, T scale, int64_t axis,
                         float epsilon, T y, T inv_std) {
  const char *k = "rms_norm";
  return guard(ctx, k, [&]() -> amprt_status {
    LnArgs a;
    if (checkRmsNorm(ctx, x, scale, axis, y, inv_std, a.outer, a.inner))
      return onHost(ctx, [&] {
        return amprt_rms_norm(ctx, x, scale, axis, epsilon, y, inv_std);
      });
    a.rms = true;
    a.epsilon = epsilon;
    a.x = opt(x);
    a.scale = opt(scale);
    a.bias = opt(nullptr);
    a.y = opt(y);
    a.mean = opt(nullptr);
    a.inv = opt(inv_std);
    return launchLn(ctx, k, a);
  });
}

amprt_status cudaRmsNormGrad(amprt_context *ctx, T dy, T x, T scale, T inv_std,
                             int64_t axis, T dx, T dscale) {
  const char *k = "rms_norm_grad";
  return guard(ctx, k, [&]() -> amprt_status {
    LnArgs a;
    if (checkRmsNormGrad(ctx, dy, x, scale, inv_std, axis, dx, dscale, a.outer,
                         a.inner))
      return onHost(ctx, [&] {
        return amprt_rms_norm_grad(ctx, dy, x, scale, inv_std, axis, dx,
                                   dscale);
      });
    a.rms = true;
    a.dy = opt(dy);
    a.x = opt(x);
    a.scale = opt(scale);
    a.mean = opt(nullptr);
    a.inv = opt(inv_std);
    a.dx = opt(dx);
    a.dscale = opt(dscale);
    a.dbias = opt(nullptr);
    return launchLnGrad(ctx, k, a);
  });
}

} // namespace

void amprt::cuda::registerNormalization(KernelTable &t) {
  t.batch_norm_training = cudaBatchNormTraining;
  t.batch_norm_grad = cudaBatchNormGrad;
  t.layer_norm = cudaLayerNorm;
  t.layer_norm_grad = cudaLayerNormGrad;
  t.rms_norm = cudaRmsNorm;
  t.rms_norm_grad = cudaRmsNormGrad;
}

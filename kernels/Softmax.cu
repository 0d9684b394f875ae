//===- Softmax.cu - softmax, cross-entropy loss, reductions ---------------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// softmax / log_softmax / softmax_grad along any axis (one warp per row;
// rows along an inner axis are read with a stride),
// softmax_cross_entropy_loss and its gradient (any [N, C, d...] layout;
// log-sum-exp and the reductions in double as Loss.cpp), reduce_sum/mean over
// any axes (double accumulation as Reduce.cpp) and reduce_max/min (Reduce.cpp's
// walk: the first NaN, else the first of the extreme values, so the CPU's
// bits). The float formulas are the CPU code's; only the order of the sums
// differs (a tree instead of a sequence).
//
// Labels are checked on the device: the first out-of-range one is reported
// through the context's status word, which costs one wait for the stream at
// the end of the call (the loss is read by the host each step anyway).
//
//===----------------------------------------------------------------------===//

#include "Common.cuh"

#include <algorithm>
#include <cmath>
#include <vector>

using namespace amprt;
using namespace amprt::cuda;

namespace {

constexpr int kWarps = 8; // warps per block in the row kernels

__device__ __forceinline__ float warpMax(float v) {
  for (int o = 16; o > 0; o /= 2)
    v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

//===----------------------------------------------------------------------===//
// softmax, log_softmax, softmax_grad (last axis)
//===----------------------------------------------------------------------===//

/// A row of the softmax kernels: x as (outer, len, inner) around the axis,
/// row r = (r / inner, r % inner), its element i at base + i * inner (inner
/// is 1 for the last axis: contiguous rows).
struct Rows {
  int64_t rows = 0, len = 0, inner = 1;
  __device__ int64_t base(int64_t r) const {
    return inner == 1 ? r * len : (r / inner) * len * inner + r % inner;
  }
};

/// x's rows along `axis`; false on a bad axis (the CPU code reports it).
bool rowsAlong(amprt_context *ctx, const char *k, T x, int64_t axis, Rows &rw) {
  int64_t a, outer;
  if (splitAtAxis(ctx, k, x, axis, a, outer, rw.len, rw.inner) != AMPRT_OK)
    return false;
  rw.rows = rw.len ? outer * rw.inner : 0;
  return true;
}

__global__ void softmaxKernel(const void *x, int32_t dx, void *y, int32_t dy,
                              Rows rw, bool logOut) {
  int lane = threadIdx.x % 32;
  int64_t len = rw.len, st = rw.inner;
  for (int64_t r = blockIdx.x * int64_t(kWarps) + threadIdx.x / 32; r < rw.rows;
       r += int64_t(gridDim.x) * kWarps) {
    int64_t base = rw.base(r);
    float mx = -INFINITY;
    for (int64_t i = lane; i < len; i += 32)
      mx = fmaxf(mx, loadF(x, dx, base + i * st));
    mx = warpMax(mx);
    float s = 0.f;
    for (int64_t i = lane; i < len; i += 32)
      s += expf(loadF(x, dx, base + i * st) - mx);
    s = warpSum(s);
    if (logOut) {
      float ls = logf(s);
      for (int64_t i = lane; i < len; i += 32)
        storeF(y, dy, base + i * st, loadF(x, dx, base + i * st) - mx - ls);
    } else {
      float rs = 1.f / s;
      for (int64_t i = lane; i < len; i += 32)
        storeF(y, dy, base + i * st,
               expf(loadF(x, dx, base + i * st) - mx) * rs);
    }
  }
}

__global__ void softmaxGradKernel(const void *g, int32_t dg, const void *y,
                                  int32_t dy, void *out, int32_t dout,
                                  Rows rw) {
  int lane = threadIdx.x % 32;
  int64_t len = rw.len, st = rw.inner;
  for (int64_t r = blockIdx.x * int64_t(kWarps) + threadIdx.x / 32; r < rw.rows;
       r += int64_t(gridDim.x) * kWarps) {
    int64_t base = rw.base(r);
    float s = 0.f;
    for (int64_t i = lane; i < len; i += 32)
      s += loadF(g, dg, base + i * st) * loadF(y, dy, base + i * st);
    s = warpSum(s);
    for (int64_t i = lane; i < len; i += 32)
      storeF(out, dout, base + i * st,
             loadF(y, dy, base + i * st) * (loadF(g, dg, base + i * st) - s));
  }
}

unsigned rowGrid(int64_t rows) { return gridFor(rows, kWarps); }

template <bool Log>
amprt_status cudaSoftmax(amprt_context *ctx, T x, int64_t axis, T y) {
  const char *k = Log ? "log_softmax" : "softmax";
  return guard(ctx, k, [&]() -> amprt_status {
    Rows rw;
    if (checkFloat(ctx, k, "x", x) || checkFloat(ctx, k, "y", y) ||
        checkShape(ctx, k, "y", y, shapeOf(x)) ||
        !rowsAlong(ctx, k, x, axis, rw))
      return onHost(ctx, [&] {
        return Log ? amprt_log_softmax(ctx, x, axis, y)
                   : amprt_softmax(ctx, x, axis, y);
      });
    if (rw.rows == 0)
      return AMPRT_OK;
    softmaxKernel<<<rowGrid(rw.rows), 32 * kWarps, 0, stream(ctx)>>>(
        x->data, x->dtype, y->data, y->dtype, rw, Log);
    AMPRT_CUDA_LAUNCHED(ctx, k);
    return AMPRT_OK;
  });
}

amprt_status cudaSoftmaxGrad(amprt_context *ctx, T dy, T y, int64_t axis,
                             T dx) {
  const char *k = "softmax_grad";
  return guard(ctx, k, [&]() -> amprt_status {
    Rows rw;
    if (checkFloat(ctx, k, "dy", dy) || checkFloat(ctx, k, "y", y) ||
        checkFloat(ctx, k, "dx", dx) ||
        checkShape(ctx, k, "y", y, shapeOf(dy)) ||
        checkShape(ctx, k, "dx", dx, shapeOf(dy)) ||
        !rowsAlong(ctx, k, dy, axis, rw))
      return onHost(ctx,
                    [&] { return amprt_softmax_grad(ctx, dy, y, axis, dx); });
    if (rw.rows == 0)
      return AMPRT_OK;
    softmaxGradKernel<<<rowGrid(rw.rows), 32 * kWarps, 0, stream(ctx)>>>(
        dy->data, dy->dtype, y->data, y->dtype, dx->data, dx->dtype, rw);
    AMPRT_CUDA_LAUNCHED(ctx, k);
    return AMPRT_OK;
  });
}

//===----------------------------------------------------------------------===//
// softmax_cross_entropy_loss (+ grad)
//===----------------------------------------------------------------------===//

struct Sce {
  int64_t N, C, D;
  const void *labels;
  int32_t labelDt;
  const void *weight; // NULL: 1
  int32_t weightDt;
  int32_t hasIgnore;
  int64_t ignore;
};

__device__ __forceinline__ int64_t labelAt(const Sce &s, int64_t i) {
  return s.labelDt == AMPRT_I64 ? static_cast<const int64_t *>(s.labels)[i]
                                : static_cast<const int32_t *>(s.labels)[i];
}

/// Weight of row i's label; false (and the first bad row recorded) for an
/// out-of-range label, false for an ignored one.
__device__ __forceinline__ bool rowWeight(const Sce &s, int64_t i, int64_t &lab,
                                          double &w, int64_t *status) {
  lab = labelAt(s, i);
  if (s.hasIgnore && lab == s.ignore)
    return false;
  if (lab < 0 || lab >= s.C) {
    atomicMin(reinterpret_cast<unsigned long long *>(status),
              (unsigned long long)i);
    return false;
  }
  w = s.weight ? double(loadF(s.weight, s.weightDt, lab)) : 1.0;
  return true;
}

/// One warp per (n, d) row: log-softmax over C (stride D) and the row's
/// loss and weight (0 when ignored).
__global__ void sceRowsKernel(Sce s, const void *scores, int32_t ds,
                              void *logProb, int32_t dlp, double *rowLoss,
                              double *rowW, int64_t *status) {
  int lane = threadIdx.x % 32;
  int64_t rows = s.N * s.D;
  for (int64_t r = blockIdx.x * int64_t(kWarps) + threadIdx.x / 32; r < rows;
       r += int64_t(gridDim.x) * kWarps) {
    int64_t n = r / s.D, d = r % s.D;
    int64_t base = n * s.C * s.D + d;
    float mx = -INFINITY;
    for (int64_t c = lane; c < s.C; c += 32)
      mx = fmaxf(mx, loadF(scores, ds, base + c * s.D));
    mx = warpMax(mx);
    double sum = 0;
    for (int64_t c = lane; c < s.C; c += 32)
      sum += exp(double(loadF(scores, ds, base + c * s.D)) - mx);
    sum = warpSum(sum);
    double ls = log(sum);
    if (logProb)
      for (int64_t c = lane; c < s.C; c += 32)
        storeF(logProb, dlp, base + c * s.D,
               float(double(loadF(scores, ds, base + c * s.D)) - mx - ls));
    if (lane == 0) {
      int64_t lab;
      double w = 0, l = 0;
      if (rowWeight(s, r, lab, w, status)) {
        float lp = float(double(loadF(scores, ds, base + lab * s.D)) - mx - ls);
        l = -w * lp;
      } else {
        w = 0;
      }
      rowLoss[r] = l;
      rowW[r] = w;
    }
  }
}

/// One block: the sums of the rows' losses and weights (double), then the
/// loss as Loss.cpp writes it.
__global__ void sceReduceKernel(const double *rowLoss, const double *rowW,
                                int64_t rows, int32_t reduction, void *loss,
                                int32_t dl) {
  __shared__ double sl[32], sw[32];
  double l = 0, w = 0;
  for (int64_t i = threadIdx.x; i < rows; i += blockDim.x) {
    l += rowLoss[i];
    w += rowW[i];
  }
  l = warpSum(l);
  w = warpSum(w);
  int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) {
    sl[warp] = l;
    sw[warp] = w;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    double total = 0, wsum = 0;
    for (int i = 0; i < int(blockDim.x / 32); ++i) {
      total += sl[i];
      wsum += sw[i];
    }
    if (reduction == 1)
      storeF(loss, dl, 0, float(total));
    else
      storeF(loss, dl, 0, float(wsum != 0 ? total / wsum : 0));
  }
}

__global__ void sceNoneKernel(const double *rowLoss, int64_t rows, void *loss,
                              int32_t dl) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < rows;
       i += int64_t(gridDim.x) * blockDim.x)
    storeF(loss, dl, i, float(rowLoss[i]));
}

/// Loss.cpp's sceCheck; non-OK means "let the CPU report it".
amprt_status sceCheck(amprt_context *ctx, const char *k, T scores, T labels,
                      T weight, int32_t reduction, Sce &s, Shape &lossNone) {
  if (scores->rank < 2)
    return AMPRT_ERR_SHAPE;
  AMPRT_TRY(checkTensor(ctx, k, "labels", labels));
  if (labels->dtype != AMPRT_I64 && labels->dtype != AMPRT_I32)
    return AMPRT_ERR_DTYPE;
  if (reduction < 0 || reduction > 2)
    return AMPRT_ERR_INVALID_ARGUMENT;
  s.N = scores->shape[0];
  s.C = scores->shape[1];
  s.D = 1;
  lossNone = {s.N};
  for (int32_t i = 2; i < scores->rank; ++i) {
    s.D *= scores->shape[i];
    lossNone.push_back(scores->shape[i]);
  }
  AMPRT_TRY(checkShape(ctx, k, "labels", labels, lossNone));
  AMPRT_TRY(checkFloat(ctx, k, "weight", weight, true));
  if (weight)
    AMPRT_TRY(checkShape(ctx, k, "weight", weight, {s.C}));
  s.labels = labels->data;
  s.labelDt = labels->dtype;
  s.weight = weight ? weight->data : nullptr;
  s.weightDt = weight ? weight->dtype : 0;
  return AMPRT_OK;
}

/// Waits for the call's kernels and reports a bad label as Loss.cpp does.
amprt_status labelStatus(amprt_context *ctx, const char *k, T labels,
                         int64_t C) {
  int64_t bad;
  AMPRT_TRY(readStatus(ctx, k, bad));
  if (bad == kNoError)
    return AMPRT_OK;
  // The stream is idle: the host may read the managed labels.
  int64_t lab = labels->dtype == AMPRT_I64
                    ? static_cast<const int64_t *>(labels->data)[bad]
                    : static_cast<const int32_t *>(labels->data)[bad];
  return ctx->fail(AMPRT_ERR_INVALID_ARGUMENT,
                   "%s: label %lld at %lld outside [0, %lld)", k,
                   (long long)lab, (long long)bad, (long long)C);
}

amprt_status cudaSce(amprt_context *ctx, T scores, T labels, T weight,
                     int32_t reduction, int32_t has_ignore_index,
                     int64_t ignore_index, T loss, T log_prob) {
  const char *k = "softmax_cross_entropy_loss";
  return guard(ctx, k, [&]() -> amprt_status {
    Sce s = {};
    Shape lossNone;
    if (checkFloat(ctx, k, "scores", scores) ||
        sceCheck(ctx, k, scores, labels, weight, reduction, s, lossNone) ||
        checkFloat(ctx, k, "loss", loss) ||
        (reduction == 0 ? checkShape(ctx, k, "loss", loss, lossNone)
                        : checkNumel(ctx, k, "loss", loss, 1)) ||
        checkFloat(ctx, k, "log_prob", log_prob, true) ||
        (log_prob && checkShape(ctx, k, "log_prob", log_prob, shapeOf(scores))))
      return onHost(ctx, [&] {
        return amprt_softmax_cross_entropy_loss(ctx, scores, labels, weight,
                                                reduction, has_ignore_index,
                                                ignore_index, loss, log_prob);
      });
    s.hasIgnore = has_ignore_index;
    s.ignore = ignore_index;
    int64_t rows = s.N * s.D;
    Scratch per;
    AMPRT_TRY(per.get(ctx, k, size_t(2 * rows) * sizeof(double)));
    auto *rowLoss = static_cast<double *>(per.p), *rowW = rowLoss + rows;
    AMPRT_TRY(clearStatus(ctx, k));
    if (rows > 0 && s.C > 0) {
      sceRowsKernel<<<rowGrid(rows), 32 * kWarps, 0, stream(ctx)>>>(
          s, scores->data, scores->dtype, log_prob ? log_prob->data : nullptr,
          log_prob ? log_prob->dtype : 0, rowLoss, rowW, state(ctx).devStatus);
      AMPRT_CUDA_LAUNCHED(ctx, k);
    } else if (rows > 0) {
      // C = 0: every label is out of range; let the CPU say so.
      return onHost(ctx, [&] {
        return amprt_softmax_cross_entropy_loss(ctx, scores, labels, weight,
                                                reduction, has_ignore_index,
                                                ignore_index, loss, log_prob);
      });
    }
    if (reduction == 0) {
      if (rows > 0) {
        sceNoneKernel<<<gridFor(rows, 256), 256, 0, stream(ctx)>>>(
            rowLoss, rows, loss->data, loss->dtype);
        AMPRT_CUDA_LAUNCHED(ctx, k);
      }
    } else {
      sceReduceKernel<<<1, 1024, 0, stream(ctx)>>>(
          rowLoss, rowW, rows, reduction, loss->data, loss->dtype);
      AMPRT_CUDA_LAUNCHED(ctx, k);
    }
    return labelStatus(ctx, k, labels, s.C);
  });
}

/// One block: the total weight of the counted labels (for mean).
__global__ void sceWeightKernel(Sce s, double *wsum, int64_t *status) {
  __shared__ double sw[32];
  double w = 0;
  for (int64_t i = threadIdx.x; i < s.N * s.D; i += blockDim.x) {
    int64_t lab;
    double wi;
    if (rowWeight(s, i, lab, wi, status))
      w += wi;
  }
  w = warpSum(w);
  if (threadIdx.x % 32 == 0)
    sw[threadIdx.x / 32] = w;
  __syncthreads();
  if (threadIdx.x == 0) {
    double t = 0;
    for (int i = 0; i < int(blockDim.x / 32); ++i)
      t += sw[i];
    *wsum = t;
  }
}

__global__ void sceGradKernel(Sce s, const void *dloss, int32_t ddl,
                              int32_t reduction, const void *logProb,
                              int32_t dlp, const double *wsumP, void *dx,
                              int32_t ddx) {
  int64_t n = s.N * s.C * s.D;
  double wsum = *wsumP;
  for (int64_t o = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; o < n;
       o += int64_t(gridDim.x) * blockDim.x) {
    int64_t d = o % s.D, c = (o / s.D) % s.C, nn = o / (s.C * s.D);
    int64_t i = nn * s.D + d;
    int64_t lab = labelAt(s, i);
    bool ignored = s.hasIgnore && lab == s.ignore;
    double f = 0;
    if (!ignored && lab >= 0 && lab < s.C) {
      double w = s.weight ? double(loadF(s.weight, s.weightDt, lab)) : 1.0;
      double g = reduction == 0 ? double(loadF(dloss, ddl, i))
                                : double(loadF(dloss, ddl, 0));
      f = reduction == 2 ? (wsum != 0 ? g * w / wsum : 0) : g * w;
    }
    double p = exp(double(loadF(logProb, dlp, o)));
    storeF(dx, ddx, o, float(f * (p - (c == lab ? 1.0 : 0.0))));
  }
}

amprt_status cudaSceGrad(amprt_context *ctx, T dloss, T log_prob, T labels,
                         T weight, int32_t reduction, int32_t has_ignore_index,
                         int64_t ignore_index, T dx) {
  const char *k = "softmax_cross_entropy_loss_grad";
  return guard(ctx, k, [&]() -> amprt_status {
    Sce s = {};
    Shape lossNone;
    if (checkFloat(ctx, k, "log_prob", log_prob) ||
        sceCheck(ctx, k, log_prob, labels, weight, reduction, s, lossNone) ||
        checkFloat(ctx, k, "dloss", dloss) ||
        (reduction == 0 ? checkShape(ctx, k, "dloss", dloss, lossNone)
                        : checkNumel(ctx, k, "dloss", dloss, 1)) ||
        checkFloat(ctx, k, "dx", dx) ||
        checkShape(ctx, k, "dx", dx, shapeOf(log_prob)))
      return onHost(ctx, [&] {
        return amprt_softmax_cross_entropy_loss_grad(
            ctx, dloss, log_prob, labels, weight, reduction, has_ignore_index,
            ignore_index, dx);
      });
    s.hasIgnore = has_ignore_index;
    s.ignore = ignore_index;
    Scratch wsum;
    AMPRT_TRY(wsum.get(ctx, k, sizeof(double)));
    AMPRT_TRY(clearStatus(ctx, k));
    sceWeightKernel<<<1, 1024, 0, stream(ctx)>>>(
        s, static_cast<double *>(wsum.p), state(ctx).devStatus);
    AMPRT_CUDA_LAUNCHED(ctx, k);
    int64_t n = numel(log_prob);
    if (n > 0) {
      sceGradKernel<<<gridFor(n, 256, 4), 256, 0, stream(ctx)>>>(
          s, dloss->data, dloss->dtype, reduction, log_prob->data,
          log_prob->dtype, static_cast<const double *>(wsum.p), dx->data,
          dx->dtype);
      AMPRT_CUDA_LAUNCHED(ctx, k);
    }
    return labelStatus(ctx, k, labels, s.C);
  });
}

//===----------------------------------------------------------------------===//
// reduce_sum
//===----------------------------------------------------------------------===//

/// x's dims split into kept ones (the output's order) and reduced ones,
/// each with its element stride in x.
struct ReduceMap {
  int32_t nk = 0, nr = 0;
  int64_t kd[AMPRT_MAX_RANK], ks[AMPRT_MAX_RANK];
  int64_t rd[AMPRT_MAX_RANK], rs[AMPRT_MAX_RANK];
};

__device__ __forceinline__ int64_t decompose(int64_t i, int32_t n,
                                             const int64_t *dims,
                                             const int64_t *strides) {
  if (n == 1) // i < dims[0] always: no division (the common merged case)
    return i * strides[0];
  int64_t off = 0;
  for (int d = n - 1; d >= 0; --d) {
    off += (i % dims[d]) * strides[d];
    i /= dims[d];
  }
  return off;
}

/// mean: divide by count (0 when count is 0), as Reduce.cpp.
__device__ __forceinline__ float reduceResult(double acc, int64_t count,
                                              bool mean) {
  return float(mean ? (count ? acc / double(count) : 0.0) : acc);
}

/// One thread per output element and run of `count` (short reductions into
/// many outputs, e.g. a bias gradient): blockIdx.y's run of the count;
/// with one run the thread stores the result, else its f64 partial sum goes
/// to partial[y * outs + o] for reducePartsKernel.
__global__ void reduceThreadKernel(ReduceMap m, const void *x, int32_t dx,
                                   void *y, int32_t dy, int64_t outs,
                                   int64_t count, bool mean, int64_t runs,
                                   double *partial) {
  int64_t len = (count + runs - 1) / runs;
  int64_t lo = blockIdx.y * len, hi = lo + len < count ? lo + len : count;
  for (int64_t o = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; o < outs;
       o += int64_t(gridDim.x) * blockDim.x) {
    int64_t base = decompose(o, m.nk, m.kd, m.ks);
    double acc = 0;
    for (int64_t r = lo; r < hi; ++r)
      acc += loadF(x, dx, base + decompose(r, m.nr, m.rd, m.rs));
    if (runs == 1)
      storeF(y, dy, o, reduceResult(acc, count, mean));
    else
      partial[blockIdx.y * outs + o] = acc;
  }
}

/// y[o] = the sum over c < parts of partial[o * so + c * sc], in c order
/// (the second step of the chunked and the run-split reductions).
__global__ void reducePartsKernel(const double *partial, int64_t so, int64_t sc,
                                  int64_t parts, void *y, int32_t dy,
                                  int64_t outs, int64_t count, bool mean) {
  for (int64_t o = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; o < outs;
       o += int64_t(gridDim.x) * blockDim.x) {
    double acc = 0;
    for (int64_t c = 0; c < parts; ++c)
      acc += partial[o * so + c * sc];
    storeF(y, dy, o, reduceResult(acc, count, mean));
  }
}

/// One block per output element (long reductions).
__global__ void reduceBlockKernel(ReduceMap m, const void *x, int32_t dx,
                                  void *y, int32_t dy, int64_t outs,
                                  int64_t count, bool mean) {
  __shared__ double part[32];
  for (int64_t o = blockIdx.x; o < outs; o += gridDim.x) {
    int64_t base = decompose(o, m.nk, m.kd, m.ks);
    double acc = 0;
    for (int64_t r = threadIdx.x; r < count; r += blockDim.x)
      acc += loadF(x, dx, base + decompose(r, m.nr, m.rd, m.rs));
    acc = warpSum(acc);
    if (threadIdx.x % 32 == 0)
      part[threadIdx.x / 32] = acc;
    __syncthreads();
    if (threadIdx.x == 0) {
      double t = 0;
      for (int i = 0; i < int(blockDim.x / 32); ++i)
        t += part[i];
      storeF(y, dy, o, reduceResult(t, count, mean));
    }
    __syncthreads();
  }
}

/// Long reductions into few outputs: output o's count splits into `chunks`
/// equal runs, one block each, whose f64 partial sums go to part[o * chunks
/// + c]; reducePartsKernel adds them in chunk order.
__global__ void reducePartialKernel(ReduceMap m, const void *x, int32_t dx,
                                    double *partial, int64_t outs,
                                    int64_t count, int64_t chunks) {
  __shared__ double part[32];
  int64_t len = (count + chunks - 1) / chunks;
  for (int64_t b = blockIdx.x; b < outs * chunks; b += gridDim.x) {
    int64_t o = b / chunks, c = b % chunks;
    int64_t base = decompose(o, m.nk, m.kd, m.ks);
    int64_t lo = c * len, hi = lo + len < count ? lo + len : count;
    double acc = 0;
    for (int64_t r = lo + threadIdx.x; r < hi; r += blockDim.x)
      acc += loadF(x, dx, base + decompose(r, m.nr, m.rd, m.rs));
    acc = blockSum(acc, part);
    if (threadIdx.x == 0)
      partial[b] = acc;
  }
}

/// Merges neighbouring dims of one list that are contiguous in x (dim i's
/// stride = dim i+1's extent times its stride): fewer divisions per element.
void mergeDims(int32_t &n, int64_t *dims, int64_t *strides) {
  int32_t w = 0;
  for (int32_t i = 0; i < n; ++i) {
    if (w > 0 && strides[w - 1] == dims[i] * strides[i]) {
      dims[w - 1] *= dims[i];
      strides[w - 1] = strides[i];
      continue;
    }
    dims[w] = dims[i];
    strides[w] = strides[i];
    ++w;
  }
  n = w;
}

/// x's dims split by `red` into kept and reduced ones, neighbours that are
/// contiguous merged; count and outs their element counts.
void makeReduceMap(const Shape &sx, const std::vector<bool> &red, ReduceMap &m,
                   int64_t &count, int64_t &outs) {
  count = outs = 1;
  int64_t stride = 1;
  std::vector<int64_t> xs(sx.size());
  for (size_t i = sx.size(); i-- > 0;) {
    xs[i] = stride;
    stride *= sx[i];
  }
  for (size_t i = 0; i < sx.size(); ++i) {
    if (red[i]) {
      m.rd[m.nr] = sx[i];
      m.rs[m.nr++] = xs[i];
      count *= sx[i];
    } else {
      m.kd[m.nk] = sx[i];
      m.ks[m.nk++] = xs[i];
      outs *= sx[i];
    }
  }
  mergeDims(m.nk, m.kd, m.ks);
  mergeDims(m.nr, m.rd, m.rs);
}

/// Reduce.cpp's max / min step: a NaN stays; else v replaces a when
/// strictly larger (smaller), so the first of equal values (+0 and -0
/// included) is kept.
__device__ __forceinline__ bool takes(float a, float v, bool max) {
  return !(a != a) && (v != v || (max ? v > a : v < a));
}

/// One thread per output element, the reduced elements in x's order (as
/// Reduce.cpp): the CPU's result bit for bit.
__global__ void extremeThreadKernel(ReduceMap m, const void *x, int32_t dx,
                                    void *y, int32_t dy, int64_t outs,
                                    int64_t count, bool max) {
  for (int64_t o = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; o < outs;
       o += int64_t(gridDim.x) * blockDim.x) {
    int64_t base = decompose(o, m.nk, m.kd, m.ks);
    float a = max ? -INFINITY : INFINITY;
    for (int64_t r = 0; r < count; ++r) {
      float v = loadF(x, dx, base + decompose(r, m.nr, m.rd, m.rs));
      if (takes(a, v, max))
        a = v;
    }
    storeF(y, dy, o, a);
  }
}

/// One block per output element (long reductions): each thread walks its
/// strided share in order, then (value, first index) pairs combine so that
/// the result is the sequential one: the first NaN, else the first extreme.
__global__ void extremeBlockKernel(ReduceMap m, const void *x, int32_t dx,
                                   void *y, int32_t dy, int64_t outs,
                                   int64_t count, bool max) {
  __shared__ float val[256];
  __shared__ int64_t at[256];
  for (int64_t o = blockIdx.x; o < outs; o += gridDim.x) {
    int64_t base = decompose(o, m.nk, m.kd, m.ks);
    float a = max ? -INFINITY : INFINITY;
    int64_t ia = INT64_MAX;
    for (int64_t r = threadIdx.x; r < count; r += blockDim.x) {
      float v = loadF(x, dx, base + decompose(r, m.nr, m.rd, m.rs));
      if (ia == INT64_MAX || takes(a, v, max)) {
        a = v;
        ia = r;
      }
    }
    val[threadIdx.x] = a;
    at[threadIdx.x] = ia;
    __syncthreads();
    for (int w = blockDim.x / 2; w > 0; w /= 2) {
      if (threadIdx.x < w) {
        float b = val[threadIdx.x + w];
        int64_t ib = at[threadIdx.x + w];
        float c = val[threadIdx.x];
        int64_t ic = at[threadIdx.x];
        // The pair that comes first in the sequential walk's result.
        bool nb = b != b, nc = c != c;
        bool second = ib != INT64_MAX &&
                      (ic == INT64_MAX || (nb || nc ? nb && (!nc || ib < ic)
                                                    : (max ? b > c : b < c) ||
                                                          (b == c && ib < ic)));
        if (second) {
          val[threadIdx.x] = b;
          at[threadIdx.x] = ib;
        }
      }
      __syncthreads();
    }
    if (threadIdx.x == 0)
      storeF(y, dy, o, val[0]);
    __syncthreads();
  }
}

} // namespace

amprt_status amprt::cuda::reduceFloat(amprt_context *ctx, const char *k, T x,
                                      const std::vector<bool> &red, T y,
                                      bool mean) {
  ReduceMap m;
  int64_t count, outs;
  makeReduceMap(shapeOf(x), red, m, count, outs);
  if (outs == 0)
    return AMPRT_OK;
  // When the reduced dims hold x's innermost one, a block reads each
  // output's elements contiguously (few outputs split their count into
  // chunks, one block each). Otherwise neighbouring outputs are
  // neighbours in x (a column sum, e.g. a bias gradient): one thread per
  // output reads coalesced with the others, over runs of the count.
  bool rows = m.nr > 0 && m.rs[m.nr - 1] == 1;
  int64_t chunks = std::min<int64_t>(std::max<int64_t>(1024 / outs, 1),
                                     (count + 4095) / 4096);
  if (rows && chunks > 1) {
    Scratch partial;
    AMPRT_TRY(partial.get(ctx, k, size_t(outs * chunks) * sizeof(double)));
    auto *pp = static_cast<double *>(partial.p);
    reducePartialKernel<<<unsigned(
                              std::min<int64_t>(outs * chunks, 65535LL * 32)),
                          256, 0, stream(ctx)>>>(m, x->data, x->dtype, pp, outs,
                                                 count, chunks);
    AMPRT_CUDA_LAUNCHED(ctx, k);
    reducePartsKernel<<<gridFor(outs, 256), 256, 0, stream(ctx)>>>(
        pp, chunks, 1, chunks, y->data, y->dtype, outs, count, mean);
  } else if (rows && (count >= 1024 || outs < 1024))
    reduceBlockKernel<<<unsigned(std::min<int64_t>(outs, 65535LL * 32)), 256, 0,
                        stream(ctx)>>>(m, x->data, x->dtype, y->data, y->dtype,
                                       outs, count, mean);
  else {
    // About 128K threads: split the count into runs when outs is short.
    int64_t runs = std::max<int64_t>(
        1,
        std::min<int64_t>({(131072 + outs - 1) / outs, (count + 7) / 8, 4096}));
    Scratch partial;
    double *pp = nullptr;
    if (runs > 1) {
      AMPRT_TRY(partial.get(ctx, k, size_t(outs * runs) * sizeof(double)));
      pp = static_cast<double *>(partial.p);
    }
    reduceThreadKernel<<<dim3(unsigned(std::min<int64_t>((outs + 255) / 256,
                                                         65535LL * 32)),
                              unsigned(runs)),
                         256, 0, stream(ctx)>>>(
        m, x->data, x->dtype, y->data, y->dtype, outs, count, mean, runs, pp);
    if (runs > 1) {
      AMPRT_CUDA_LAUNCHED(ctx, k);
      reducePartsKernel<<<gridFor(outs, 256), 256, 0, stream(ctx)>>>(
          pp, 1, outs, runs, y->data, y->dtype, outs, count, mean);
    }
  }
  AMPRT_CUDA_LAUNCHED(ctx, k);
  return AMPRT_OK;
}

namespace {

/// reduce_max (max) or reduce_min of float x over the dims marked in `red`.
amprt_status reduceExtreme(amprt_context *ctx, const char *k, T x,
                           const std::vector<bool> &red, T y, bool max) {
  ReduceMap m;
  int64_t count, outs;
  makeReduceMap(shapeOf(x), red, m, count, outs);
  if (outs == 0)
    return AMPRT_OK;
  if (count >= 1024 && outs < 4096)
    extremeBlockKernel<<<unsigned(std::min<int64_t>(outs, 65535LL * 32)), 256,
                         0, stream(ctx)>>>(m, x->data, x->dtype, y->data,
                                           y->dtype, outs, count, max);
  else
    extremeThreadKernel<<<gridFor(outs, 256), 256, 0, stream(ctx)>>>(
        m, x->data, x->dtype, y->data, y->dtype, outs, count, max);
  AMPRT_CUDA_LAUNCHED(ctx, k);
  return AMPRT_OK;
}

enum class Red { Sum, Mean, Max, Min };

template <Red Op>
amprt_status cudaReduce(amprt_context *ctx, T x, const int64_t *axes,
                        int64_t naxes, int32_t keepdims,
                        int32_t noop_with_empty_axes, T y) {
  static const char *names[] = {"reduce_sum", "reduce_mean", "reduce_max",
                                "reduce_min"};
  const char *k = names[int(Op)];
  return guard(ctx, k, [&]() -> amprt_status {
    auto cpu = [&] {
      auto *f = Op == Red::Sum    ? amprt_reduce_sum
                : Op == Red::Mean ? amprt_reduce_mean
                : Op == Red::Max  ? amprt_reduce_max
                                  : amprt_reduce_min;
      return f(ctx, x, axes, naxes, keepdims, noop_with_empty_axes, y);
    };
    if (checkFloat(ctx, k, "x", x) || checkFloat(ctx, k, "y", y) || naxes < 0 ||
        (naxes > 0 && !axes))
      return onHost(ctx, cpu);
    Shape sx = shapeOf(x);
    std::vector<bool> red(sx.size(), naxes == 0 && !noop_with_empty_axes);
    for (int64_t i = 0; i < naxes; ++i) {
      int64_t a;
      if (normAxis(ctx, k, axes[i], x->rank, a) || red[size_t(a)])
        return onHost(ctx, cpu);
      red[size_t(a)] = true;
    }
    Shape so;
    for (size_t i = 0; i < sx.size(); ++i)
      if (!red[i] || keepdims)
        so.push_back(red[i] ? 1 : sx[i]);
    if (checkShape(ctx, k, "y", y, so))
      return onHost(ctx, cpu);
    if (Op == Red::Max || Op == Red::Min)
      return reduceExtreme(ctx, k, x, red, y, Op == Red::Max);
    return reduceFloat(ctx, k, x, red, y, Op == Red::Mean);
  });
}

} // namespace

void amprt::cuda::registerSoftmax(KernelTable &t) {
  t.softmax = cudaSoftmax<false>;
  t.log_softmax = cudaSoftmax<true>;
  t.softmax_grad = cudaSoftmaxGrad;
  t.softmax_cross_entropy_loss = cudaSce;
  t.softmax_cross_entropy_loss_grad = cudaSceGrad;
  t.reduce_sum = cudaReduce<Red::Sum>;
  t.reduce_mean = cudaReduce<Red::Mean>;
  t.reduce_max = cudaReduce<Red::Max>;
  t.reduce_min = cudaReduce<Red::Min>;
}

//===- Pool.cu - max, average and global average pooling, and grads -----===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// The CUDA versions of Pool.cpp. max_pool and average_pool: one thread per
// output element, the window visited by the CPU's own forEachTap (max_pool
// with its NaN and tie rules), so values and indices are the CPU's bit for
// bit. A channels-last window (x [N, spatial..., C]) is pooled in place,
// the channel innermost among the threads so that a warp reads 32 adjacent
// channels of each tap; its max_pool indices are flat into x as stored,
// those of the CPU's channels-first copy moved there (Layout.cpp).
// max_pool_grad and average_pool_grad: a scatter-add into f32 with
// atomics (overlapping windows sum in another order than the CPU's); a bad
// max_pool index is reported as the CPU reports it, and dx is then left
// untouched (deferred data checks: recorded for the next wait, dx
// undefined). global_average_pool runs reduce_mean's kernels (f64 sums; the
// CPU sums in f32); its gradient is the CPU's expression.
//
//===----------------------------------------------------------------------===//

#include "Common.cuh"

using namespace amprt;
using namespace amprt::cuda;

namespace {

constexpr int kThreads = 256;

/// The window position (od, oh, ow) of output element o, the offset `base`
/// in x of the first element of its (n, c) plane and the distance `step`
/// between the plane's elements: 1 channels first (y [N, C, Do, Ho, Wo]),
/// C channels last (y [N, Do, Ho, Wo, C]). Tap t of forEachTap is x[base +
/// t * step].
__device__ __forceinline__ void outputPosition(const Window &g, int64_t o,
                                               int64_t &od, int64_t &oh,
                                               int64_t &ow, int64_t &base,
                                               int64_t &step) {
  int64_t c = 0;
  if (g.channelsLast) {
    c = o % g.C;
    o /= g.C;
  }
  ow = o % g.Wo;
  int64_t r = o / g.Wo;
  oh = r % g.Ho;
  r /= g.Ho;
  od = r % g.Do;
  r /= g.Do; // n channels last, n * C + c channels first
  step = g.channelsLast ? g.C : 1;
  base = g.channelsLast ? r * g.inPlane() * g.C + c : r * g.inPlane();
}

__global__ void maxPoolKernel(Window g, const void *x, int32_t dx, void *y,
                              int32_t dy, int64_t *indices, int64_t n) {
  for (int64_t o = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; o < n;
       o += int64_t(gridDim.x) * blockDim.x) {
    int64_t od, oh, ow, base, step;
    outputPosition(g, o, od, oh, ow, base, step);
    float best = -INFINITY;
    int64_t arg = -1;
    forEachTap(g, od, oh, ow, [&](int64_t t) {
      float v = loadF(x, dx, base + t * step);
      if (arg < 0 || v > best || (isnan(v) && !isnan(best))) {
        best = v;
        arg = t;
      }
    });
    storeF(y, dy, o, best);
    if (indices)
      indices[o] = arg < 0 ? -1 : base + arg * step;
  }
}

amprt_status cudaMaxPool(amprt_context *ctx, T x, T y, T indices,
                         const amprt_window *win) {
  const char *k = "max_pool";
  return guard(ctx, k, [&]() -> amprt_status {
    Window g;
    Shape so;
    if (checkMaxPool(ctx, x, y, indices, win, g, so))
      return onHost(ctx,
                    [&] { return amprt_max_pool(ctx, x, y, indices, win); });
    int64_t n = numel(so);
    if (n == 0)
      return AMPRT_OK;
    maxPoolKernel<<<gridFor(n, kThreads), kThreads, 0, stream(ctx)>>>(
        g, x->data, x->dtype, y->data, y->dtype,
        indices ? static_cast<int64_t *>(indices->data) : nullptr, n);
    AMPRT_CUDA_LAUNCHED(ctx, k);
    return AMPRT_OK;
  });
}

/// acc[indices[i]] += dy[i]; the smallest i with an index >= nx goes to
/// *status.
__global__ void maxPoolGradKernel(const void *dy, int32_t ddy,
                                  const int64_t *indices, float *acc,
                                  int64_t nx, int64_t n, int64_t *status) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t t = indices[i];
    if (t < 0)
      continue;
    if (t >= nx) {
      atomicMin(reinterpret_cast<unsigned long long *>(status),
                static_cast<unsigned long long>(i));
      continue;
    }
    atomicAdd(acc + t, loadF(dy, ddy, i));
  }
}

/// Pool.cpp's words for the bad index at `bad`.
struct PoolIndexOutside {
  const int64_t *indices;
  int64_t nx;
  __device__ bool operator()(int64_t bad, DeferredCheck &c) const {
    c.message = kPoolIndexOutside;
    c.value = indices[bad];
    c.at = bad;
    c.bound = nx;
    return true;
  }
};

amprt_status cudaMaxPoolGrad(amprt_context *ctx, T dy, T indices, T dx) {
  const char *k = "max_pool_grad";
  return guard(ctx, k, [&]() -> amprt_status {
    auto cpu = [&] { return amprt_max_pool_grad(ctx, dy, indices, dx); };
    if (checkMaxPoolGrad(ctx, dy, indices, dx))
      return onHost(ctx, cpu);
    int64_t n = numel(dy), nx = numel(dx);
    if (nx == 0)
      return onHost(ctx, cpu); // only index errors are left to report
    Scratch tmp;
    AMPRT_TRY(tmp.get(ctx, k, size_t(nx) * sizeof(float)));
    auto *acc = static_cast<float *>(tmp.p);
    cudaStream_t s = stream(ctx);
    AMPRT_CUDA(ctx, k, cudaMemsetAsync(acc, 0, size_t(nx) * sizeof(float), s));
    AMPRT_TRY(clearStatus(ctx, k));
    if (n) {
      maxPoolGradKernel<<<gridFor(n, kThreads, 4), kThreads, 0, s>>>(
          dy->data, dy->dtype, static_cast<const int64_t *>(indices->data), acc,
          nx, n, state(ctx).devStatus);
      AMPRT_CUDA_LAUNCHED(ctx, k);
    }
    int64_t bad;
    AMPRT_TRY(statusOrDefer(
        ctx, k,
        PoolIndexOutside{static_cast<const int64_t *>(indices->data), nx},
        bad));
    if (bad != kNoError)
      return onHost(ctx, cpu); // the CPU code words the error
    return storeFromF32(ctx, k, acc, dx);
  });
}

/// One thread per output element: the window's sum in kernel order, in f32,
/// divided by its count, as Pool.cpp (the same bits).
__global__ void avgPoolKernel(Window g, bool includePad, const void *x,
                              int32_t dx, void *y, int32_t dy, int64_t n) {
  for (int64_t o = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; o < n;
       o += int64_t(gridDim.x) * blockDim.x) {
    int64_t od, oh, ow, base, step;
    outputPosition(g, o, od, oh, ow, base, step);
    float s = 0.f;
    forEachTap(g, od, oh, ow,
               [&](int64_t t) { s += loadF(x, dx, base + t * step); });
    int64_t cnt = avgCount(g, od, oh, ow, includePad);
    storeF(y, dy, o, cnt ? s / float(cnt) : 0.f);
  }
}

/// acc[window of o] += dy[o] / count (f32 atomics: overlapping windows sum
/// in another order than the CPU's).
__global__ void avgPoolGradKernel(Window g, bool includePad, const void *dy,
                                  int32_t ddy, float *acc, int64_t n) {
  for (int64_t o = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; o < n;
       o += int64_t(gridDim.x) * blockDim.x) {
    int64_t od, oh, ow, base, step;
    outputPosition(g, o, od, oh, ow, base, step);
    int64_t cnt = avgCount(g, od, oh, ow, includePad);
    if (!cnt)
      continue;
    float v = loadF(dy, ddy, o) / float(cnt);
    forEachTap(g, od, oh, ow,
               [&](int64_t t) { atomicAdd(acc + base + t * step, v); });
  }
}

amprt_status cudaAveragePool(amprt_context *ctx, T x, T y,
                             const amprt_window *win) {
  const char *k = "average_pool";
  return guard(ctx, k, [&]() -> amprt_status {
    Window g;
    if (checkAveragePool(ctx, false, x, y, win, g))
      return onHost(ctx, [&] { return amprt_average_pool(ctx, x, y, win); });
    int64_t n = numel(y);
    if (n == 0)
      return AMPRT_OK;
    avgPoolKernel<<<gridFor(n, kThreads), kThreads, 0, stream(ctx)>>>(
        g, win->count_include_pad != 0, x->data, x->dtype, y->data, y->dtype,
        n);
    AMPRT_CUDA_LAUNCHED(ctx, k);
    return AMPRT_OK;
  });
}

amprt_status cudaAveragePoolGrad(amprt_context *ctx, T dy, T dx,
                                 const amprt_window *win) {
  const char *k = "average_pool_grad";
  return guard(ctx, k, [&]() -> amprt_status {
    Window g;
    if (checkAveragePool(ctx, true, dx, dy, win, g))
      return onHost(ctx,
                    [&] { return amprt_average_pool_grad(ctx, dy, dx, win); });
    if (numel(dx) == 0)
      return AMPRT_OK;
    F32Accumulator acc;
    AMPRT_TRY(acc.begin(ctx, k, dx));
    int64_t n = numel(dy);
    if (n) {
      avgPoolGradKernel<<<gridFor(n, kThreads), kThreads, 0, stream(ctx)>>>(
          g, win->count_include_pad != 0, dy->data, dy->dtype, acc.p, n);
      AMPRT_CUDA_LAUNCHED(ctx, k);
    }
    return acc.finish(ctx, k, dx);
  });
}

/// The mean over the spatial dims: reduce_mean's kernels (f64 sums, where
/// the CPU sums in f32, so the results may differ in the last bit).
amprt_status cudaGlobalAveragePool(amprt_context *ctx, T x, T y) {
  const char *k = "global_average_pool";
  return guard(ctx, k, [&]() -> amprt_status {
    int64_t NC, S;
    if (checkGlobalPool(ctx, false, x, y, NC, S))
      return onHost(ctx, [&] { return amprt_global_average_pool(ctx, x, y); });
    std::vector<bool> red(size_t(x->rank), true);
    red[0] = red[1] = false;
    return reduceFloat(ctx, k, x, red, y, /*mean=*/true);
  });
}

/// dx[i] = dy[i / S] / S, as Pool.cpp (the same bits).
__global__ void globalAvgPoolGradKernel(const void *dy, int32_t ddy, void *dx,
                                        int32_t ddx, int64_t S, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    storeF(dx, ddx, i, loadF(dy, ddy, i / S) / float(S));
}

amprt_status cudaGlobalAveragePoolGrad(amprt_context *ctx, T dy, T dx) {
  const char *k = "global_average_pool_grad";
  return guard(ctx, k, [&]() -> amprt_status {
    int64_t NC, S;
    if (checkGlobalPool(ctx, true, dx, dy, NC, S))
      return onHost(
          ctx, [&] { return amprt_global_average_pool_grad(ctx, dy, dx); });
    int64_t n = numel(dx);
    if (n == 0)
      return AMPRT_OK;
    globalAvgPoolGradKernel<<<gridFor(n, kThreads, 4), kThreads, 0,
                              stream(ctx)>>>(dy->data, dy->dtype, dx->data,
                                             dx->dtype, S, n);
    AMPRT_CUDA_LAUNCHED(ctx, k);
    return AMPRT_OK;
  });
}

} // namespace

void amprt::cuda::registerPool(KernelTable &t) {
  t.max_pool = cudaMaxPool;
  t.max_pool_grad = cudaMaxPoolGrad;
  t.average_pool = cudaAveragePool;
  t.average_pool_grad = cudaAveragePoolGrad;
  t.global_average_pool = cudaGlobalAveragePool;
  t.global_average_pool_grad = cudaGlobalAveragePoolGrad;
}

//===- Resize.cu - Resize (nearest, n-linear) and its adjoint -------------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// The CUDA versions of Resize.cpp: one thread per output element, the taps
// and weights from forEachResizeTap (amp/Runtime/Math/Geometry.h), shared
// with the CPU code.
// resize sums its taps in the CPU's order (the same bits); resize_grad adds
// into an f32 buffer with atomics (the order of the additions varies).
//
//===----------------------------------------------------------------------===//

#include "Common.cuh"

using namespace amprt;
using namespace amprt::cuda;

namespace {

constexpr int kThreads = 256;

/// x's dims and strides, y's dims.
struct ResizeMap {
  int32_t rank;
  ResizeModes modes;
  int64_t xd[AMPRT_MAX_RANK], xs[AMPRT_MAX_RANK], yd[AMPRT_MAX_RANK];
};

ResizeMap makeMap(T x, T y, const ResizeModes &modes) {
  ResizeMap m = {};
  m.rank = x->rank;
  m.modes = modes;
  int64_t stride = 1;
  for (int d = x->rank - 1; d >= 0; --d) {
    m.xd[d] = x->shape[d];
    m.xs[d] = stride;
    stride *= x->shape[d];
    m.yd[d] = y->shape[d];
  }
  return m;
}

__global__ void resizeKernel(ResizeMap m, const void *x, int32_t dx,
                             const float *scales, void *y, int32_t dy,
                             int64_t n) {
  for (int64_t o = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; o < n;
       o += int64_t(gridDim.x) * blockDim.x) {
    float acc = 0.f;
    forEachResizeTap(
        o, m.rank, m.xd, m.xs, m.yd, scales, m.modes,
        [&](int64_t off, float w) { acc += w * loadF(x, dx, off); });
    storeF(y, dy, o, acc);
  }
}

__global__ void resizeGradKernel(ResizeMap m, const void *g, int32_t dg,
                                 const float *scales, float *acc, int64_t n) {
  for (int64_t o = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; o < n;
       o += int64_t(gridDim.x) * blockDim.x) {
    float v = loadF(g, dg, o);
    forEachResizeTap(
        o, m.rank, m.xd, m.xs, m.yd, scales, m.modes,
        [&](int64_t off, float w) { atomicAdd(acc + off, w * v); });
  }
}

amprt_status cudaResize(amprt_context *ctx, T x, T scales, int32_t mode,
                        int32_t coord_mode, int32_t nearest_mode,
                        float cubic_coeff_a, int32_t exclude_outside, T y) {
  const char *k = "resize";
  ResizeModes modes = {mode, coord_mode, nearest_mode, cubic_coeff_a,
                       exclude_outside};
  return guard(ctx, k, [&]() -> amprt_status {
    if (checkResize(ctx, k, x, scales, modes, y))
      return onHost(ctx, [&] {
        return amprt_resize(ctx, x, scales, mode, coord_mode, nearest_mode,
                            cubic_coeff_a, exclude_outside, y);
      });
    int64_t n = numel(y);
    if (n == 0)
      return AMPRT_OK;
    resizeKernel<<<gridFor(n, kThreads, 4), kThreads, 0, stream(ctx)>>>(
        makeMap(x, y, modes), x->data, x->dtype,
        static_cast<const float *>(scales->data), y->data, y->dtype, n);
    AMPRT_CUDA_LAUNCHED(ctx, k);
    return AMPRT_OK;
  });
}

amprt_status cudaResizeGrad(amprt_context *ctx, T dy, T scales, int32_t mode,
                            int32_t coord_mode, int32_t nearest_mode,
                            float cubic_coeff_a, int32_t exclude_outside,
                            T dx) {
  const char *k = "resize_grad";
  ResizeModes modes = {mode, coord_mode, nearest_mode, cubic_coeff_a,
                       exclude_outside};
  return guard(ctx, k, [&]() -> amprt_status {
    if (checkResize(ctx, k, dx, scales, modes, dy))
      return onHost(ctx, [&] {
        return amprt_resize_grad(ctx, dy, scales, mode, coord_mode,
                                 nearest_mode, cubic_coeff_a, exclude_outside,
                                 dx);
      });
    int64_t nx = numel(dx), n = numel(dy);
    if (nx == 0)
      return AMPRT_OK;
    F32Accumulator acc;
    AMPRT_TRY(acc.begin(ctx, k, dx));
    if (n) {
      resizeGradKernel<<<gridFor(n, kThreads, 4), kThreads, 0, stream(ctx)>>>(
          makeMap(dx, dy, modes), dy->data, dy->dtype,
          static_cast<const float *>(scales->data), acc.p, n);
      AMPRT_CUDA_LAUNCHED(ctx, k);
    }
    return acc.finish(ctx, k, dx);
  });
}

} // namespace

void amprt::cuda::registerResize(KernelTable &t) {
  t.resize = cudaResize;
  t.resize_grad = cudaResizeGrad;
}

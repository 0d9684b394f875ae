//===- Softmax.cu - softmax, log_softmax and their gradient ---------------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// The CUDA versions of Softmax.cpp: softmax / log_softmax / softmax_grad
// along any axis, one warp per row (rows along an inner axis are read with a
// stride). The float formulas are the CPU code's; only the order of the sums
// differs (a tree instead of a sequence).
//
//===----------------------------------------------------------------------===//

#include "Common.cuh"

#include <cmath>

using namespace amprt;
using namespace amprt::cuda;

namespace {

//===----------------------------------------------------------------------===//
// softmax, log_softmax, softmax_grad
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

} // namespace

void amprt::cuda::registerSoftmax(KernelTable &t) {
  t.softmax = cudaSoftmax<false>;
  t.log_softmax = cudaSoftmax<true>;
  t.softmax_grad = cudaSoftmaxGrad;
}

//===- Resize.cpp - Resize (nearest, n-linear) and its adjoint ------------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// Every output element of resize is a weighted sum of at most 4^rank
// elements of x (forEachResizeTap in Math/Geometry.h, which the CUDA kernels
// share): nearest reads one, linear two, cubic four per resized axis.
// resize_grad adds each dy element into the same elements with the same
// weights, so the two are exact adjoints.
//
//===----------------------------------------------------------------------===//

#include "Internal.h"

#include <cinttypes>
#include <cmath>

using namespace amprt;

using T = const amprt_tensor *;

amprt_status amprt::checkResize(amprt_context *ctx, const char *k, T x,
                                T scales, const ResizeModes &m, T y) {
  AMPRT_TRY(checkFloat(ctx, k, "x", x));
  AMPRT_TRY(checkFloat(ctx, k, "y", y));
  AMPRT_TRY(checkDtype(ctx, k, "scales", scales, AMPRT_F32));
  AMPRT_TRY(checkNumel(ctx, k, "scales", scales, x->rank));
  if (m.mode < 0 || m.mode > 2 || m.coordMode < 0 || m.coordMode > 5 ||
      m.nearestMode < 0 || m.nearestMode > 3)
    return ctx->fail(AMPRT_ERR_INVALID_ARGUMENT,
                     "%s: mode %d, coord_mode %d, nearest_mode %d (expected "
                     "0..2, 0..5, 0..3)",
                     k, m.mode, m.coordMode, m.nearestMode);
  if (!std::isfinite(m.cubicA))
    return ctx->fail(AMPRT_ERR_INVALID_ARGUMENT,
                     "%s: cubic_coeff_a %g is not finite", k, double(m.cubicA));
  if (y->rank != x->rank)
    return ctx->fail(AMPRT_ERR_SHAPE, "%s: y has rank %d, x rank %d", k,
                     y->rank, x->rank);
  if (numel(y) > 0 && numel(x) == 0)
    return ctx->fail(AMPRT_ERR_SHAPE, "%s: x %s is empty, y %s is not", k,
                     shapeStr(x).c_str(), shapeStr(y).c_str());
  return AMPRT_OK;
}

extern "C" {

amprt_status amprt_resize(amprt_context *ctx, T x, T scales, int32_t mode,
                          int32_t coord_mode, int32_t nearest_mode,
                          float cubic_coeff_a, int32_t exclude_outside, T y) {
  AMPRT_DISPATCH(resize, ctx, x, scales, mode, coord_mode, nearest_mode,
                 cubic_coeff_a, exclude_outside, y);
  const char *k = "resize";
  ResizeModes m = {mode, coord_mode, nearest_mode, cubic_coeff_a,
                   exclude_outside};
  return guard(ctx, k, [&]() -> amprt_status {
    AMPRT_TRY(checkResize(ctx, k, x, scales, m, y));
    F32In in(x);
    F32Out out(y);
    Shape xs = stridesOf(shapeOf(x));
    auto *sc = static_cast<const float *>(scales->data);
    int64_t n = numel(y);
    for (int64_t o = 0; o < n; ++o) {
      float acc = 0.f;
      forEachResizeTap(o, x->rank, x->shape, xs.data(), y->shape, sc, m,
                       [&](int64_t off, float w) { acc += w * in.p[off]; });
      out.p[o] = acc;
    }
    out.commit();
    return AMPRT_OK;
  });
}

amprt_status amprt_resize_grad(amprt_context *ctx, T dy, T scales, int32_t mode,
                               int32_t coord_mode, int32_t nearest_mode,
                               float cubic_coeff_a, int32_t exclude_outside,
                               T dx) {
  AMPRT_DISPATCH(resize_grad, ctx, dy, scales, mode, coord_mode, nearest_mode,
                 cubic_coeff_a, exclude_outside, dx);
  const char *k = "resize_grad";
  ResizeModes m = {mode, coord_mode, nearest_mode, cubic_coeff_a,
                   exclude_outside};
  return guard(ctx, k, [&]() -> amprt_status {
    AMPRT_TRY(checkResize(ctx, k, dx, scales, m, dy));
    F32In g(dy);
    std::vector<float> acc(size_t(numel(dx)), 0.f);
    Shape xs = stridesOf(shapeOf(dx));
    auto *sc = static_cast<const float *>(scales->data);
    int64_t n = numel(dy);
    for (int64_t o = 0; o < n; ++o)
      forEachResizeTap(o, dx->rank, dx->shape, xs.data(), dy->shape, sc, m,
                       [&](int64_t off, float w) { acc[off] += w * g.p[o]; });
    fromF32(acc.data(), dx->data, dx->dtype, int64_t(acc.size()));
    return AMPRT_OK;
  });
}

} // extern "C"

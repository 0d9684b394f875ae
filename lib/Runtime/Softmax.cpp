//===- Softmax.cpp - Softmax, LogSoftmax, SoftmaxGrad ---------------------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// Along one axis (opset 13); x viewed as [outer, axis, inner]. The maximum
// is subtracted first; sums accumulate in f32.
//
//===----------------------------------------------------------------------===//

#include "Internal.h"

#include <cmath>

using namespace amprt;

namespace {

using T = const amprt_tensor *;

amprt_status split(amprt_context *ctx, const char *k, T x, int64_t axis,
                   int64_t &outer, int64_t &len, int64_t &inner) {
  int64_t a;
  return splitAtAxis(ctx, k, x, axis, a, outer, len, inner);
}

amprt_status softmaxImpl(amprt_context *ctx, const char *k, T x, int64_t axis,
                         T y, bool logOut) {
  AMPRT_TRY(checkFloat(ctx, k, "x", x));
  AMPRT_TRY(checkFloat(ctx, k, "y", y));
  AMPRT_TRY(checkShape(ctx, k, "y", y, shapeOf(x)));
  int64_t outer, len, inner;
  AMPRT_TRY(split(ctx, k, x, axis, outer, len, inner));
  F32In ix(x);
  F32Out out(y);
  // Each (o, in) line is normalized by one thread, in a fixed order.
  parallelFor(outer, double(outer) * len * inner * 20,
              [&](int64_t o0, int64_t o1) {
                for (int64_t o = o0; o < o1; ++o)
                  for (int64_t in = 0; in < inner; ++in) {
                    const float *p = ix.p + o * len * inner + in;
                    float *q = out.p + o * len * inner + in;
                    float mx = -INFINITY;
                    for (int64_t i = 0; i < len; ++i)
                      mx = std::fmax(mx, p[i * inner]);
                    float s = 0.f;
                    for (int64_t i = 0; i < len; ++i)
                      s += std::exp(p[i * inner] - mx);
                    if (logOut) {
                      float ls = std::log(s);
                      for (int64_t i = 0; i < len; ++i)
                        q[i * inner] = p[i * inner] - mx - ls;
                    } else {
                      float r = 1.f / s;
                      for (int64_t i = 0; i < len; ++i)
                        q[i * inner] = std::exp(p[i * inner] - mx) * r;
                    }
                  }
              });
  out.commit();
  return AMPRT_OK;
}

} // namespace

extern "C" {

amprt_status amprt_softmax(amprt_context *ctx, T x, int64_t axis, T y) {
  AMPRT_DISPATCH(softmax, ctx, x, axis, y);
  return guard(ctx, "softmax",
               [&] { return softmaxImpl(ctx, "softmax", x, axis, y, false); });
}

amprt_status amprt_log_softmax(amprt_context *ctx, T x, int64_t axis, T y) {
  AMPRT_DISPATCH(log_softmax, ctx, x, axis, y);
  return guard(ctx, "log_softmax", [&] {
    return softmaxImpl(ctx, "log_softmax", x, axis, y, true);
  });
}

amprt_status amprt_softmax_grad(amprt_context *ctx, T dy, T y, int64_t axis,
                                T dx) {
  AMPRT_DISPATCH(softmax_grad, ctx, dy, y, axis, dx);
  return guard(ctx, "softmax_grad", [&]() -> amprt_status {
    const char *k = "softmax_grad";
    AMPRT_TRY(checkFloat(ctx, k, "dy", dy));
    AMPRT_TRY(checkFloat(ctx, k, "y", y));
    AMPRT_TRY(checkFloat(ctx, k, "dx", dx));
    AMPRT_TRY(checkShape(ctx, k, "y", y, shapeOf(dy)));
    AMPRT_TRY(checkShape(ctx, k, "dx", dx, shapeOf(dy)));
    int64_t outer, len, inner;
    AMPRT_TRY(split(ctx, k, dy, axis, outer, len, inner));
    F32In ig(dy), iy(y);
    F32Out out(dx);
    parallelFor(outer, double(outer) * len * inner * 4,
                [&](int64_t o0, int64_t o1) {
                  for (int64_t o = o0; o < o1; ++o)
                    for (int64_t in = 0; in < inner; ++in) {
                      int64_t base = o * len * inner + in;
                      float s = 0.f;
                      for (int64_t i = 0; i < len; ++i)
                        s += ig.p[base + i * inner] * iy.p[base + i * inner];
                      for (int64_t i = 0; i < len; ++i)
                        out.p[base + i * inner] = iy.p[base + i * inner] *
                                                  (ig.p[base + i * inner] - s);
                    }
                });
    out.commit();
    return AMPRT_OK;
  });
}

} // extern "C"

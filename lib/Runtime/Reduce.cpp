//===- Reduce.cpp - ReduceSum, ReduceMean, ReduceMax, ReduceMin -----------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// Accumulates in f64 (the CPU reference may be more accurate than a device
// tree reduction in f32; both are within the documented tolerances). Max and
// min keep the first NaN they meet, as numpy does.
//
//===----------------------------------------------------------------------===//

#include "Internal.h"

#include <cmath>

using namespace amprt;

namespace {

using T = const amprt_tensor *;

enum class Red { Sum, Mean, Max, Min };

amprt_status reduce(amprt_context *ctx, const char *k, T x,
                    const int64_t *axes, int64_t naxes, int32_t keepdims,
                    int32_t noop, T y, Red op) {
  AMPRT_TRY(checkFloat(ctx, k, "x", x));
  AMPRT_TRY(checkFloat(ctx, k, "y", y));
  if (naxes < 0 || (naxes > 0 && !axes))
    return ctx->fail(AMPRT_ERR_INVALID_ARGUMENT, "%s: bad axes list", k);
  Shape sx = shapeOf(x);
  std::vector<bool> red(sx.size(), naxes == 0 && !noop);
  for (int64_t i = 0; i < naxes; ++i) {
    int64_t a;
    AMPRT_TRY(normAxis(ctx, k, axes[i], x->rank, a));
    if (red[size_t(a)])
      return ctx->fail(AMPRT_ERR_INVALID_ARGUMENT,
                       "%s: axis %lld repeated", k, (long long)axes[i]);
    red[size_t(a)] = true;
  }
  Shape so, keep;
  int64_t count = 1;
  for (size_t i = 0; i < sx.size(); ++i) {
    keep.push_back(red[i] ? 1 : sx[i]);
    if (red[i])
      count *= sx[i];
    if (!red[i] || keepdims)
      so.push_back(red[i] ? 1 : sx[i]);
  }
  AMPRT_TRY(checkShape(ctx, k, "y", y, so));
  F32In ix(x);
  double init = op == Red::Max   ? -INFINITY
                : op == Red::Min ? INFINITY
                                 : 0.0;
  std::vector<double> acc(size_t(numel(keep)), init);
  // Walk x; the output offset of an element uses `keep`'s strides with 0 on
  // reduced dims (broadcastStrides of keep into x's shape).
  Shape st[1] = {broadcastStrides(keep, sx)};
  forEachBroadcast<1>(sx, st, [&](int64_t i, const int64_t *off) {
    double &a = acc[size_t(off[0])], v = ix.p[i];
    if (op == Red::Sum || op == Red::Mean)
      a += v;
    else if (!std::isnan(a) &&
             (std::isnan(v) || (op == Red::Max ? v > a : v < a)))
      a = v;
  });
  std::vector<float> r(acc.size());
  for (size_t i = 0; i < acc.size(); ++i)
    r[i] = float(op == Red::Mean ? (count ? acc[i] / double(count) : 0.0)
                                 : acc[i]);
  fromF32(r.data(), y->data, y->dtype, int64_t(r.size()));
  return AMPRT_OK;
}

} // namespace

extern "C" {

#define AMPRT_REDUCE(name, op)                                                 \
  amprt_status amprt_##name(amprt_context *ctx, T x, const int64_t *axes,      \
                            int64_t naxes, int32_t keepdims,                   \
                            int32_t noop_with_empty_axes, T y) {               \
    AMPRT_DISPATCH(name, ctx, x, axes, naxes, keepdims, noop_with_empty_axes, \
                   y);                                                         \
    return guard(ctx, #name, [&] {                                             \
      return reduce(ctx, #name, x, axes, naxes, keepdims,                      \
                    noop_with_empty_axes, y, op);                              \
    });                                                                        \
  }
AMPRT_REDUCE(reduce_sum, Red::Sum)
AMPRT_REDUCE(reduce_mean, Red::Mean)
AMPRT_REDUCE(reduce_max, Red::Max)
AMPRT_REDUCE(reduce_min, Red::Min)
#undef AMPRT_REDUCE

} // extern "C"

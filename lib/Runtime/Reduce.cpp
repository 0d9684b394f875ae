//===- Reduce.cpp - ReduceSum/Mean/Max/Min and CumSum ---------------------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// Accumulates in f64 (the CPU reference may be more accurate than a device
// tree reduction in f32; both are within the documented tolerances). Max and
// min keep the first NaN they meet, as numpy does. i64 and i32 tensors sum
// (wrapping in 64 bits, stored in their type), and take their max and min,
// exactly (mBART counts its non-pad tokens with a ReduceSum of int64). CumSum
// keeps its running sum in f64 for floats (each output rounded once) and in i64
// for integers (wrapping in the stored type, as ONNX Runtime's does).
//
//===----------------------------------------------------------------------===//

#include "Internal.h"
#include "amp/Runtime/Math/Select.h"

#include <algorithm>
#include <cmath>

using namespace amprt;

namespace {

using T = const amprt_tensor *;

enum class Red { Sum, Mean, Max, Min };

amprt_status reduce(amprt_context *ctx, const char *k, T x, const int64_t *axes,
                    int64_t naxes, int32_t keepdims, int32_t noop, T y,
                    Red op) {
  AMPRT_TRY(checkTensor(ctx, k, "x", x));
  bool integer = x->dtype == AMPRT_I64 || x->dtype == AMPRT_I32;
  if (integer && op == Red::Mean)
    return ctx->fail(AMPRT_ERR_DTYPE,
                     "%s: x is %s; the mean takes f32, f16 "
                     "or bf16",
                     k, amprt_dtype_name(x->dtype));
  if (integer) {
    AMPRT_TRY(checkDtype(ctx, k, "y", y, x->dtype));
  } else {
    AMPRT_TRY(checkFloat(ctx, k, "x", x));
    AMPRT_TRY(checkFloat(ctx, k, "y", y));
  }
  if (naxes < 0 || (naxes > 0 && !axes))
    return ctx->fail(AMPRT_ERR_INVALID_ARGUMENT, "%s: bad axes list", k);
  Shape sx = shapeOf(x);
  std::vector<bool> red(sx.size(), naxes == 0 && !noop);
  for (int64_t i = 0; i < naxes; ++i) {
    int64_t a;
    AMPRT_TRY(normAxis(ctx, k, axes[i], x->rank, a));
    if (red[size_t(a)])
      return ctx->fail(AMPRT_ERR_INVALID_ARGUMENT, "%s: axis %lld repeated", k,
                       (long long)axes[i]);
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
  // Walk x; the output offset of an element uses `keep`'s strides with 0 on
  // reduced dims (broadcastStrides of keep into x's shape).
  Shape st[1] = {broadcastStrides(keep, sx)};
  if (integer) {
    std::vector<int64_t> acc(size_t(numel(keep)), op == Red::Max   ? INT64_MIN
                                                  : op == Red::Min ? INT64_MAX
                                                                   : 0);
    forEachBroadcast<1>(sx, st, [&](int64_t i, const int64_t *off) {
      int64_t &a = acc[size_t(off[0])], v = readI(x->data, x->dtype, i);
      a = op == Red::Sum   ? int64_t(uint64_t(a) + uint64_t(v))
          : op == Red::Max ? std::max(a, v)
                           : std::min(a, v);
    });
    for (size_t i = 0; i < acc.size(); ++i)
      writeI(y->data, y->dtype, int64_t(i), acc[i]);
    return AMPRT_OK;
  }
  F32In ix(x);
  double init = op == Red::Max ? -INFINITY : op == Red::Min ? INFINITY : 0.0;
  std::vector<double> acc(size_t(numel(keep)), init);
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

/// Runs scanLine over every (outer, inner) line.
template <typename Acc, typename Load, typename Store>
void scanLines(int64_t outer, int64_t len, int64_t inner, bool exclusive,
               bool reverse, Load &&load, Store &&store) {
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < inner; ++j)
      scanLine<Acc>(o * len * inner + j, len, inner, exclusive, reverse, load,
                    store);
}

template <typename S>
void scanInt(T x, T y, int64_t outer, int64_t len, int64_t inner,
             bool exclusive, bool reverse) {
  auto *in = static_cast<const S *>(x->data);
  auto *out = static_cast<S *>(y->data);
  // Unsigned arithmetic: the sum wraps, as in the stored type.
  scanLines<uint64_t>(
      outer, len, inner, exclusive, reverse,
      [&](int64_t i) { return uint64_t(int64_t(in[i])); },
      [&](int64_t i, uint64_t v) { out[i] = S(int64_t(v)); });
}

amprt_status cumsum(amprt_context *ctx, const char *k, T x, int64_t axis,
                    int32_t exclusive, int32_t reverse, T y) {
  int64_t outer, len, inner;
  AMPRT_TRY(checkCumSum(ctx, k, x, axis, y, outer, len, inner));
  if (x->dtype == AMPRT_I64) {
    scanInt<int64_t>(x, y, outer, len, inner, exclusive, reverse);
    return AMPRT_OK;
  }
  if (x->dtype == AMPRT_I32) {
    scanInt<int32_t>(x, y, outer, len, inner, exclusive, reverse);
    return AMPRT_OK;
  }
  // Each f64 sum rounded once into y's type.
  F32In in(x);
  scanLines<double>(
      outer, len, inner, exclusive, reverse,
      [&](int64_t i) { return double(in.p[i]); },
      [&](int64_t i, double v) { writeD(y->data, y->dtype, i, v); });
  return AMPRT_OK;
}

} // namespace

amprt_status amprt::checkCumSum(amprt_context *ctx, const char *k, T x,
                                int64_t axis, T y, int64_t &outer, int64_t &len,
                                int64_t &inner) {
  AMPRT_TRY(checkTensor(ctx, k, "x", x));
  if (!isLowOrF32(x->dtype) && x->dtype != AMPRT_I64 && x->dtype != AMPRT_I32)
    return ctx->fail(AMPRT_ERR_DTYPE,
                     "%s: x has dtype %s, expected f32, f16, bf16, i64 or i32",
                     k, amprt_dtype_name(x->dtype));
  AMPRT_TRY(checkDtype(ctx, k, "y", y, x->dtype));
  AMPRT_TRY(checkShape(ctx, k, "y", y, shapeOf(x)));
  int64_t a;
  return splitAtAxis(ctx, k, x, axis, a, outer, len, inner);
}

extern "C" {

#define AMPRT_REDUCE(name, op)                                                 \
  amprt_status amprt_##name(amprt_context *ctx, T x, const int64_t *axes,      \
                            int64_t naxes, int32_t keepdims,                   \
                            int32_t noop_with_empty_axes, T y) {               \
    AMPRT_DISPATCH(name, ctx, x, axes, naxes, keepdims, noop_with_empty_axes,  \
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

amprt_status amprt_cumsum(amprt_context *ctx, T x, int64_t axis,
                          int32_t exclusive, int32_t reverse, T y) {
  AMPRT_DISPATCH(cumsum, ctx, x, axis, exclusive, reverse, y);
  return guard(ctx, "cumsum", [&] {
    return cumsum(ctx, "cumsum", x, axis, exclusive, reverse, y);
  });
}

} // extern "C"

//===- Convert.cpp - element types and the Cast kernel --------------------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// Conversions between all element types. Float narrowing rounds to nearest
// even once: f64 -> f16/bf16 goes through an f32 rounded to odd, which keeps
// the final rounding correct (f32 has more than two extra bits). Float to
// integer truncates toward zero and saturates; NaN gives 0. Anything to bool
// is "!= 0" (NaN is true, as in C).
//
//===----------------------------------------------------------------------===//

#include "Internal.h"

#include <cmath>
#include <limits>

using namespace amprt;

extern "C" size_t amprt_dtype_size(int32_t dt) {
  switch (dt) {
  case AMPRT_F64:
  case AMPRT_I64:
    return 8;
  case AMPRT_F32:
  case AMPRT_I32:
    return 4;
  case AMPRT_F16:
  case AMPRT_BF16:
    return 2;
  case AMPRT_I8:
  case AMPRT_U8:
  case AMPRT_BOOL:
    return 1;
  default:
    return 0;
  }
}

extern "C" const char *amprt_dtype_name(int32_t dt) {
  static const char *names[] = {"f32", "f16", "bf16", "f64", "i64",
                                "i32", "i8",  "u8",   "bool"};
  return dt >= 0 && dt < AMPRT_NUM_DTYPES ? names[dt] : "invalid";
}

/// Runs a conversion loop over [0, n) on the thread pool when source and
/// destination do not overlap (an in-place narrowing must run in order).
template <typename F>
static void convertLoop(const void *src, size_t srcBytes, const void *dst,
                        size_t dstBytes, int64_t n, F &&f) {
  auto s = reinterpret_cast<uintptr_t>(src),
       d = reinterpret_cast<uintptr_t>(dst);
  bool overlap = s < d + dstBytes * size_t(n) && d < s + srcBytes * size_t(n);
  if (overlap)
    f(0, n);
  else
    parallelElements(n, 2, f);
}

void amprt::toF32(const void *src, int32_t dt, float *dst, int64_t n) {
  if (dt == AMPRT_F32) {
    std::memcpy(dst, src, size_t(n) * 4);
    return;
  }
  convertLoop(src, amprt_dtype_size(dt), dst, 4, n,
              [&](int64_t lo, int64_t hi) {
                widenBlock(src, dt, lo, hi - lo, dst + lo);
              });
}

void amprt::fromF32(const float *src, void *dst, int32_t dt, int64_t n) {
  if (dt == AMPRT_F32) {
    std::memmove(dst, src, size_t(n) * 4);
    return;
  }
  convertLoop(src, 4, dst, amprt_dtype_size(dt), n,
              [&](int64_t lo, int64_t hi) {
                narrowBlock(src + lo, dst, dt, lo, hi - lo);
              });
}

namespace {

bool isFloatType(int32_t dt) { return isLowOrF32(dt) || dt == AMPRT_F64; }

} // namespace

extern "C" amprt_status amprt_cast(amprt_context *ctx, const amprt_tensor *x,
                                   const amprt_tensor *y) {
  AMPRT_DISPATCH(cast, ctx, x, y);
  return guard(ctx, "cast", [&]() -> amprt_status {
    AMPRT_TRY(checkTensor(ctx, "cast", "x", x));
    AMPRT_TRY(checkTensor(ctx, "cast", "y", y));
    AMPRT_TRY(checkShape(ctx, "cast", "y", y, shapeOf(x)));
    int64_t n = numel(x);
    int32_t s = x->dtype, d = y->dtype;
    if (s == d) {
      std::memmove(y->data, x->data, size_t(n) * amprt_dtype_size(s));
    } else if (isLowOrF32(s) && isLowOrF32(d)) {
      // f16/bf16 -> f32 is exact, so a pass through f32 rounds once.
      if (s == AMPRT_F32) {
        fromF32(static_cast<const float *>(x->data), y->data, d, n);
      } else if (d == AMPRT_F32) {
        toF32(x->data, s, static_cast<float *>(y->data), n);
      } else {
        for (int64_t i = 0; i < n; ++i)
          storeF(y->data, d, i, loadF(x->data, s, i));
      }
    } else if (isFloatType(s)) {
      for (int64_t i = 0; i < n; ++i)
        writeD(y->data, d, i, readD(x->data, s, i));
    } else if (isFloatType(d)) {
      for (int64_t i = 0; i < n; ++i)
        writeD(y->data, d, i, double(readI(x->data, s, i)));
    } else {
      for (int64_t i = 0; i < n; ++i)
        writeI(y->data, d, i, readI(x->data, s, i));
    }
    return AMPRT_OK;
  });
}

//===- Compare.cpp - a value against its fp32 reference -------------------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// The statistics amp-run --compare-precision keeps per value
// (lib/Driver/PrecisionCompare.cpp), computed where the values are: the
// AMP run's value is read in its own dtype, the fp32 run's reference stays
// in a runtime buffer, and only 11 doubles come back. Blocks of kBlock
// elements on the thread pool, merged in block order (Math/Compare.h).
//
//===----------------------------------------------------------------------===//

#include "amp/Runtime/Math/Compare.h"
#include "Internal.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>

using namespace amprt;

namespace {

using T = const amprt_tensor *;
constexpr int64_t kBlock = 4096;

/// The float elements [lo, lo + len) of x: x's own memory when it is f32,
/// else widened into buf.
const float *floatsOf(T x, int64_t lo, int64_t len, float *buf) {
  if (x->dtype == AMPRT_F32)
    return static_cast<const float *>(x->data) + lo;
  widenBlock(x->data, x->dtype, lo, len, buf);
  return buf;
}

#ifdef AMPRT_COMPARE_VEC
using Floats = CompareFloats;
using Mask = CompareMask;
/// Four doubles: half of a Floats widened.
typedef double Doubles __attribute__((vector_size(32)));
constexpr int kLanes = 8;

/// compareElementsOf's sums over eight elements at a time: the counts as
/// integers per lane (a mask is -1), the sums in f64 (each half of the
/// lanes widened), the largest in f32 (exact: a max of floats).
struct VectorSums {
  Mask *counts;       // [kCompareStats]
  Doubles (*sums)[2]; // [kCompareStats][low, high lanes]
  Floats *largest;

  static Doubles low(Floats v) {
    return __builtin_convertvector(__builtin_shufflevector(v, v, 0, 1, 2, 3),
                                   Doubles);
  }
  static Doubles high(Floats v) {
    return __builtin_convertvector(__builtin_shufflevector(v, v, 4, 5, 6, 7),
                                   Doubles);
  }
  void count(int k, Mask c) const { counts[k] -= c; }
  void square(int k, Floats v) const {
    Doubles l = low(v), h = high(v);
    sums[k][0] += l * l;
    sums[k][1] += h * h;
  }
  void add(int k, Floats v) const {
    sums[k][0] += low(v);
    sums[k][1] += high(v);
  }
  void max(int, Floats v) const { *largest = v > *largest ? v : *largest; }
};
#endif

/// The element statistics of v[0, len) against r[0, len) added to `into`:
/// eight elements at a time as one vector (compareElementsOf on Floats;
/// one chain per statistic would wait a division's latency per element),
/// its lanes then the tail merged in order.
void compareBlock(const float *v, const float *r, int64_t len, float floor,
                  float inv, double *into) {
  int64_t i = 0;
#ifdef AMPRT_COMPARE_VEC
  Mask counts[kCompareStats] = {};
  Doubles sums[kCompareStats][2] = {};
  Floats largest = {};
  VectorSums acc{counts, sums, &largest};
  for (; i + kLanes <= len; i += kLanes) {
    Floats x, y;
    std::memcpy(&x, v + i, sizeof x);
    std::memcpy(&y, r + i, sizeof y);
    compareElementsOf<Floats>(acc, x, y, floor, inv);
  }
  for (int l = 0; l < kLanes; ++l) {
    double lane[kCompareStats] = {};
    for (int k : {kCounted, kNonzero, kUnderflow, kOverflow})
      lane[k] = double(counts[k][l]);
    for (int k : {kSqRef, kSqDiff, kSumRel})
      lane[k] = sums[k][l / 4][l % 4];
    lane[kMaxRel] = double(largest[l]);
    compareMerge(into, lane);
  }
#endif
  double tail[kCompareStats] = {};
  for (; i < len; ++i)
    compareElement(tail, v[i], r[i], floor, inv);
  compareMerge(into, tail);
}

} // namespace

amprt_status amprt::checkAbsMaxFinite(amprt_context *ctx, T x, T y) {
  const char *k = "abs_max_finite";
  AMPRT_TRY(checkFloat(ctx, k, "x", x));
  AMPRT_TRY(checkDtype(ctx, k, "y", y, AMPRT_F32));
  return checkNumel(ctx, k, "y", y, 1);
}

amprt_status amprt::checkCompareStats(amprt_context *ctx, T x, T ref, T ref_max,
                                      float scale, T stats, T factor) {
  const char *k = "compare_stats";
  AMPRT_TRY(checkFloat(ctx, k, "x", x));
  AMPRT_TRY(checkDtype(ctx, k, "ref", ref, AMPRT_F32));
  AMPRT_TRY(checkNumel(ctx, k, "ref", ref, numel(x)));
  AMPRT_TRY(checkDtype(ctx, k, "ref_max", ref_max, AMPRT_F32));
  AMPRT_TRY(checkNumel(ctx, k, "ref_max", ref_max, 1));
  AMPRT_TRY(checkDtype(ctx, k, "stats", stats, AMPRT_F64));
  AMPRT_TRY(checkNumel(ctx, k, "stats", stats, kCompareStats));
  if (factor) {
    AMPRT_TRY(checkDtype(ctx, k, "factor", factor, AMPRT_F32));
    AMPRT_TRY(checkNumel(ctx, k, "factor", factor, 1));
  }
  if (!std::isfinite(scale) || scale == 0.f)
    return ctx->fail(AMPRT_ERR_INVALID_ARGUMENT,
                     "%s: scale %g is not a finite nonzero number", k,
                     double(scale));
  return AMPRT_OK;
}

extern "C" {

amprt_status amprt_abs_max_finite(amprt_context *ctx, T x, T y) {
  AMPRT_DISPATCH(abs_max_finite, ctx, x, y);
  return guard(ctx, "abs_max_finite", [&]() -> amprt_status {
    AMPRT_TRY(checkAbsMaxFinite(ctx, x, y));
    int64_t n = numel(x), blocks = (n + kBlock - 1) / kBlock;
    std::vector<float> part(size_t(blocks), 0.f);
    parallelFor(blocks, double(n), [&](int64_t b0, int64_t b1) {
      float buf[kBlock];
      for (int64_t b = b0; b < b1; ++b) {
        int64_t lo = b * kBlock, len = std::min(kBlock, n - lo);
        const float *v = floatsOf(x, lo, len, buf);
        // A select the simd loop reduces (a NaN or an infinity compares
        // false against the finite bound).
        float m = 0.f;
#pragma omp simd reduction(max : m)
        for (int64_t i = 0; i < len; ++i) {
          float a = std::fabs(v[i]);
          m = a > m && a <= FLT_MAX ? a : m;
        }
        part[size_t(b)] = m;
      }
    });
    float m = 0.f;
    for (float p : part)
      m = std::max(m, p);
    *static_cast<float *>(y->data) = m;
    return AMPRT_OK;
  });
}

amprt_status amprt_compare_stats(amprt_context *ctx, T x, T ref, T ref_max,
                                 float scale, T stats, T factor) {
  AMPRT_DISPATCH(compare_stats, ctx, x, ref, ref_max, scale, stats, factor);
  return guard(ctx, "compare_stats", [&]() -> amprt_status {
    AMPRT_TRY(checkCompareStats(ctx, x, ref, ref_max, scale, stats, factor));
    int64_t n = numel(x), blocks = (n + kBlock - 1) / kBlock;
    const float *r = static_cast<const float *>(ref->data);
    double out[kCompareStats] = {};
    // The sample first: it says which x the errors are of.
    for (int64_t i = 0, stride = compareSampleStride(n); i < n; i += stride)
      compareSample(out, loadF(x->data, x->dtype, i), r[i]);
    bool carries = carriesScale(out[kLogSum], out[kLogCount], scale);
    out[kCarries] = carries;
    if (factor)
      *static_cast<float *>(factor->data) = carries ? scale : 1.f;
    float floor = compareFloor(*static_cast<const float *>(ref_max->data));
    float inv = compareInv(carries, scale);
    std::vector<double> part(size_t(blocks) * kCompareStats, 0.0);
    parallelFor(blocks, 8.0 * double(n), [&](int64_t b0, int64_t b1) {
      float buf[kBlock];
      for (int64_t b = b0; b < b1; ++b) {
        int64_t lo = b * kBlock, len = std::min(kBlock, n - lo);
        compareBlock(floatsOf(x, lo, len, buf), r + lo, len, floor, inv,
                     part.data() + b * kCompareStats);
      }
    });
    for (int64_t b = 0; b < blocks; ++b)
      compareMerge(out, part.data() + b * kCompareStats);
    std::copy(out, out + kCompareStats, static_cast<double *>(stats->data));
    return AMPRT_OK;
  });
}

} // extern "C"

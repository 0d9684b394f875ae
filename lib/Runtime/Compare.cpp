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
// elements on the thread pool, merged in block order (Math/Compare.h);
// a block's lanes sum eight elements at a time in f32 (compareBlock).
//
//===----------------------------------------------------------------------===//

#include "CompareVectors.h"
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
/// compareVectors' vectors on AVX2: eight floats.
struct Avx2 {
  using Floats = CompareFloats;
  using Mask = CompareMask;
  /// Four doubles: half of a Floats widened.
  typedef double Doubles __attribute__((vector_size(32)));
  static constexpr int kLanes = 8;
  /// Lanes 0-3 and 4-7 of v widened (one vcvtps2pd each; GCC's
  /// shufflevector and convertvector of a half go through memory).
  static Doubles lowHalf(Floats v) {
    return (Doubles)_mm256_cvtps_pd(_mm256_castps256_ps128((__m256)v));
  }
  static Doubles highHalf(Floats v) {
    return (Doubles)_mm256_cvtps_pd(_mm256_extractf128_ps((__m256)v, 1));
  }
  static bool none(Mask m) {
    return _mm256_testz_si256((__m256i)m, (__m256i)m);
  }
  /// Whether it widens 16-bit floats itself (F16C for f16).
#ifdef __F16C__
  static constexpr bool kLoads16 = true;
  static Floats loadF16(const uint16_t *p) {
    return (Floats)_mm256_cvtph_ps(
        _mm_loadu_si128(reinterpret_cast<const __m128i *>(p)));
  }
#else
  static constexpr bool kLoads16 = false;
  static Floats loadF16(const uint16_t *) { return Floats{}; }
#endif
  static Floats loadBf16(const uint16_t *p) {
    __m256i w = _mm256_cvtepu16_epi32(
        _mm_loadu_si128(reinterpret_cast<const __m128i *>(p)));
    return (Floats)_mm256_slli_epi32(w, 16);
  }
  /// The larger of a and b per lane (b where either is NaN).
  static Floats max(Floats a, Floats b) {
    return (Floats)_mm256_max_ps((__m256)a, (__m256)b);
  }
  /// s + v * v, rounded once where the CPU has FMA.
  static Floats squareAdd(Floats s, Floats v) {
#ifdef __FMA__
    return (Floats)_mm256_fmadd_ps((__m256)v, (__m256)v, (__m256)s);
#else
    return s + v * v;
#endif
  }
};

#ifdef AMPRT_HAVE_AVX512_COMPARE
/// Whether compareBlock runs sixteen lanes (CompareAvx512.cpp): where the
/// CPU has AVX-512, and not on the reference path (AMPRT_CPU_REFERENCE),
/// whose statistics are the same bits on every x86-64-v3 machine.
bool useAvx512() {
  static const bool has =
      __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
      __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
  return has && !cpuReference();
}
/// CompareAvx512.cpp's lanes.
constexpr int kAvx512Lanes = 16;
#endif
#endif

/// The element statistics of x's elements [lo, lo + len) against r[0, len)
/// added to `into`: as vectors (compareVectors: sixteen lanes where the CPU
/// has AVX-512, else eight; x read in its own dtype, or widened into buf
/// first where they do not read it), then the tail one element at a time,
/// merged in order.
void compareBlock(T x, int64_t lo, int64_t len, const float *r, float floor,
                  float inv, double *into, float *buf) {
  const void *v = x->data;
  int32_t dt = x->dtype;
  int64_t at = lo, i = 0;
#ifdef AMPRT_COMPARE_VEC
  if (!compareReads<Avx2>(dt)) {
    v = floatsOf(x, lo, len, buf);
    dt = AMPRT_F32;
    at = 0;
  }
  auto from = static_cast<const char *>(v) + at * amprt_dtype_size(dt);
  double lanes[kMaxCompareLanes][kCompareStats];
  int n = Avx2::kLanes;
#ifdef AMPRT_HAVE_AVX512_COMPARE
  if (useAvx512()) {
    i = amprt_compare_vectors_avx512(from, dt, r, len, floor, inv, lanes);
    n = kAvx512Lanes;
  } else
#endif
    i = compareVectors<Avx2>(from, dt, r, len, floor, inv, lanes);
  for (int l = 0; l < n; ++l)
    compareMerge(into, lanes[l]);
#endif
  double tail[kCompareStats] = {};
  for (; i < len; ++i)
    compareElement(tail, loadF(v, dt, at + i), r[i], floor, inv);
  compareMerge(into, tail);
}

/// The largest finite |v[i]| over [0, len) (0 when none): four vectors of
/// running maxima (one would wait a max's latency per vector), an
/// infinity or a NaN replaced by 0.
float absMaxFinite(const float *v, int64_t len) {
  int64_t i = 0;
  float m = 0.f;
#ifdef AMPRT_COMPARE_VEC
  using Floats = Avx2::Floats;
  constexpr int kLanes = Avx2::kLanes;
  Floats part[4] = {};
  for (; i + 4 * kLanes <= len; i += 4 * kLanes)
    for (int j = 0; j < 4; ++j) {
      Floats x;
      std::memcpy(&x, v + i + j * kLanes, sizeof x);
      Floats a = compareAbs(x);
      a = a <= Floats{} + FLT_MAX ? a : Floats{};
      part[j] = part[j] > a ? part[j] : a;
    }
  for (const Floats &p : part)
    for (int l = 0; l < kLanes; ++l)
      m = std::max(m, p[l]);
#endif
  for (; i < len; ++i) {
    float a = std::fabs(v[i]);
    m = a > m && a <= FLT_MAX ? a : m;
  }
  return m;
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
        part[size_t(b)] = absMaxFinite(floatsOf(x, lo, len, buf), len);
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
    compareSampleOnHost(x->data, x->dtype, r, n, out);
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
        compareBlock(x, lo, len, r + lo, floor, inv,
                     part.data() + b * kCompareStats, buf);
      }
    });
    for (int64_t b = 0; b < blocks; ++b)
      compareMerge(out, part.data() + b * kCompareStats);
    std::copy(out, out + kCompareStats, static_cast<double *>(stats->data));
    return AMPRT_OK;
  });
}

} // extern "C"

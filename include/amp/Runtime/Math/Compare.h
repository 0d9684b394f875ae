//===- Compare.h - one value against its fp32 reference -----------*- C++
//-*-===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// The element steps of compare_stats (amp-run --compare-precision), one
// definition for the CPU kernel (Compare.cpp) and the CUDA kernel
// (kernels/Compare.cu). First a sample of about 1024 elements says whether
// x carries the loss scale (compareSample, carriesScale); then every
// element adds to the statistics of x, divided by the scale if it carries
// it (compareElement: the element's arithmetic in f32, its sums in f64; the
// CPU kernel's lanes sum eight elements in f32 first, Compare.cpp);
// the callers sum blocks in a fixed order, so a result depends only on the
// blocking (by the element count), not on the threads.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_RUNTIME_MATH_COMPARE_H
#define AMP_RUNTIME_MATH_COMPARE_H

#include "amp/Runtime/Math/ElementAccess.h"
#include "amp/Runtime/Math/HostDevice.h"

#include <cmath>
#include <cstdint>
#include <cstring>

namespace amprt {

/// compare_stats's output, f64 [kCompareStats], in this order.
enum CompareStat : int {
  kSqRef,     ///< sum ref^2 over finite ref where x is finite
  kCounted,   ///< elements in the relative errors (|ref| >= floor, != 0)
  kNonzero,   ///< finite nonzero ref where x is finite
  kUnderflow, ///< ... of which x is 0
  kOverflow,  ///< finite ref where x is not finite
  kLogSum,    ///< sum log|x / ref| over the sample, finite nonzero in both
  kLogCount,  ///< the sample's elements that counted
  kCarries,   ///< 1: x carries the scale (the errors are of x / scale)
  kSqDiff,    ///< sum (x' - ref)^2, x' = x or x / scale
  kSumRel,    ///< sum |x' - ref| / |ref| over the counted elements
  kMaxRel,    ///< the largest of those
  kCompareStats
};

/// Whether v is finite (v - v is NaN for an infinity or a NaN): one
/// spelling for the host and the device.
AMPRT_HD inline bool finiteD(double v) { return v - v == 0.0; }

/// The sample of the scale detection, about 1024 elements: first runs of
/// kCompareSampleRun consecutive elements, every compareSampleStride(n)-th
/// run (a few cache lines); where fewer than kCompareSampleMin of them are
/// finite and nonzero in both x and ref (a sparse value: an embedding's
/// gradient with a few rows set), instead every compareSampleStride(n)-th
/// element, spread over the whole value.
constexpr int64_t kCompareSampleRun = 64;
constexpr double kCompareSampleMin = 256;
AMPRT_HD inline int64_t compareSampleStride(int64_t n) {
  return n / 1024 > 1 ? n / 1024 : 1;
}
/// The index of the sample's element j (j from 0; a sample ends at its
/// first index >= n): in runs (`spread` false) or spread.
AMPRT_HD inline int64_t compareSampleIndex(int64_t j, int64_t stride,
                                           bool spread) {
  return spread ? j * stride
                : j / kCompareSampleRun * stride * kCompareSampleRun +
                      j % kCompareSampleRun;
}

/// Adds sampled element (x, r) to kLogSum and kLogCount when both are
/// finite and nonzero.
AMPRT_HD inline void compareSample(double *acc, float xf, float rf) {
  double x = xf, r = rf;
  if (finiteD(x) && finiteD(r) && x != 0 && r != 0) {
    acc[kLogSum] += log(fabs(x / r));
    acc[kLogCount] += 1;
  }
}

#ifndef __CUDACC__
/// The sample of x (dtype dt, n elements) against ref into kLogSum and
/// kLogCount on the host: compareSample's sum as the log of the product of
/// the ratios, the product kept in [1, 2) by moving its exponent into an
/// integer after each factor (a ratio of finite nonzero floats lies in
/// [2^-277, 2^277]: no step overflows or goes subnormal), so one log per
/// sample instead of one per element. The same sum but for the rounding of
/// the products (about sqrt(count) * 2^-53 of the log sum's terms).
inline void compareSampleOnHost(const void *x, int32_t dt, const float *ref,
                                int64_t n, double *acc, bool spread = false) {
  double product = 1;
  int64_t exponent = 0, count = 0, stride = compareSampleStride(n);
  for (int64_t j = 0, i = 0; (i = compareSampleIndex(j, stride, spread)) < n;
       ++j) {
    double xv = loadF(x, dt, i), rv = ref[i];
    if (!(finiteD(xv) && finiteD(rv) && xv != 0 && rv != 0))
      continue;
    product *= fabs(xv / rv);
    uint64_t bits;
    std::memcpy(&bits, &product, sizeof bits);
    exponent += int64_t((bits >> 52) & 0x7ff) - 1023;
    bits = (bits & ~(uint64_t(0x7ff) << 52)) | (uint64_t(1023) << 52);
    std::memcpy(&product, &bits, sizeof bits);
    ++count;
  }
  if (!spread && double(count) < kCompareSampleMin)
    return compareSampleOnHost(x, dt, ref, n, acc, true);
  acc[kLogSum] += double(exponent) * 0.69314718055994530942 + log(product);
  acc[kLogCount] += double(count);
}
#endif

/// Whether the sample's mean log-ratio is nearer log(scale) than 0: the
/// value is the reference times the loss scale (a gradient before
/// unscaling) rather than the reference itself. Never for scale 1.
AMPRT_HD inline bool carriesScale(double logSum, double logCount,
                                  double scale) {
  if (scale == 1 || logCount == 0)
    return false;
  double mean = logSum / logCount;
  return fabs(mean - log(scale)) < fabs(mean);
}

/// The smallest |r| counted in the relative errors, 1e-3 of the largest
/// finite |ref|, rounded up to a float: for every float r, |r| >= it
/// exactly when |r| >= 1e-3 refMax.
AMPRT_HD inline float compareFloor(float refMax) {
  double bound = 1e-3 * double(refMax);
  float f = float(bound);
  return double(f) < bound ? nextafterf(f, INFINITY) : f;
}

/// What x is multiplied by before it is compared: 1 / scale when it
/// carries the loss scale (exact for a power of two, as the dynamic
/// scaler's are), else 1.
AMPRT_HD inline float compareInv(bool carries, float scale) {
  return carries ? float(1.0 / double(scale)) : 1.f;
}

/// |v| of a float, for compareElementsOf's F = float.
AMPRT_HD inline float compareAbs(float v) { return fabsf(v); }

#if defined(__GNUC__) && defined(__AVX__) && !defined(__CUDACC__)
#define AMPRT_COMPARE_VEC 1
/// The CPU kernel's F (Compare.cpp): eight floats in one AVX register
/// (GCC's and Clang's vector extensions: arithmetic lanewise, a comparison
/// gives a mask of -1 or 0 per lane, ?: selects per lane), and the mask.
typedef float CompareFloats __attribute__((vector_size(32)));
typedef int32_t CompareMask __attribute__((vector_size(32)));
inline CompareFloats compareAbs(CompareFloats v) {
  return (CompareFloats)((CompareMask)v & INT32_MAX);
}
#if defined(__AVX512F__)
/// Sixteen floats in one AVX-512 register (the CPU kernel's loop where the
/// CPU has it, lib/Runtime/CompareAvx512.cpp).
typedef float CompareFloats16 __attribute__((vector_size(64)));
typedef int32_t CompareMask16 __attribute__((vector_size(64)));
inline CompareFloats16 compareAbs(CompareFloats16 v) {
  return (CompareFloats16)((CompareMask16)v & INT32_MAX);
}
#endif
#endif

/// compareElementsOf's sums for one element at a time (a thread's on the
/// device, the CPU's tail): the statistics in f64.
struct CompareSums {
  double *s;
  AMPRT_HD void count(int k, bool c) const { s[k] += c ? 1.0 : 0.0; }
  AMPRT_HD void square(int k, float v) const { s[k] += double(v) * double(v); }
  AMPRT_HD void add(int k, float v) const { s[k] += double(v); }
  AMPRT_HD void max(int k, float v) const {
    s[k] = double(v) > s[k] ? double(v) : s[k];
  }
};

/// Adds element (x, r), both finite, to the statistics with x' = x * inv,
/// where F is a float, or a vector of them whose lanes are elements (the
/// CPU kernel's). floor: compareFloor. The element's arithmetic is in f32
/// (x, r and x' are floats; x' - r and |x' - r| / |r| are rounded once),
/// the sums in f64 (acc's count, square, add and max; a square is of the
/// f32 value widened, so it cannot overflow). Without branches (an element
/// that does not count adds zeros, which leaves every sum and the largest
/// error as they are): selects, which a vector computes per lane. The CPU
/// kernel runs this alone on a chunk first and keeps the chunk's results
/// only where its f32 sums are finite, which they are not when an element
/// is not (Compare.cpp).
template <typename F, typename Acc>
AMPRT_HD inline void compareFiniteElementsOf(const Acc &acc, F x, F r,
                                             float floor, float inv) {
  acc.square(kSqRef, r);
  auto nonzero = r != F();
  acc.count(kNonzero, nonzero);
  acc.count(kUnderflow, nonzero & (x == F()));
  auto counted = nonzero & (compareAbs(r) >= F() + floor);
  acc.count(kCounted, counted);
  F d = x * inv - r;
  acc.square(kSqDiff, d);
  // Divided where it counts (a lane that does not takes 0; its quotient,
  // 0 / 0 for a zero r, is not used).
  F rel = counted ? compareAbs(d) / compareAbs(r) : F();
  acc.add(kSumRel, rel);
  acc.max(kMaxRel, rel);
}

/// Adds element (x, r) to the statistics: an element where ref is finite
/// and x is not counts as an overflow; one where either is not finite
/// counts as (0, 0), which adds to nothing but the finite count
/// (compareFiniteElementsOf).
template <typename F, typename Acc>
AMPRT_HD inline void compareElementsOf(const Acc &acc, F x, F r, float floor,
                                       float inv) {
  auto rFinite = r - r == F(), xFinite = x - x == F(),
       xBad = x - x != F(); // NaN or an infinity, as !xFinite
  auto both = rFinite & xFinite;
  acc.count(kOverflow, rFinite & xBad);
  compareFiniteElementsOf(acc, both ? x : F(), both ? r : F(), floor, inv);
}

/// One element into acc[kCompareStats] (f64).
AMPRT_HD inline void compareElement(double *acc, float x, float r, float floor,
                                    float inv) {
  compareElementsOf<float>(CompareSums{acc}, x, r, floor, inv);
}

/// into += from over the element statistics (the largest for kMaxRel; the
/// sample's slots are not touched).
AMPRT_HD inline void compareMerge(double *into, const double *from) {
  for (int s = 0; s < kCompareStats; ++s)
    if (s == kMaxRel)
      into[s] = from[s] > into[s] ? from[s] : into[s];
    else if (s != kLogSum && s != kLogCount && s != kCarries)
      into[s] += from[s];
}

} // namespace amprt

#endif // AMP_RUNTIME_MATH_COMPARE_H

//===- Compare.h - one value against its fp32 reference -----------*- C++
//-*-===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// The element step of compare_stats (amp-run --compare-precision), one
// definition for the CPU kernel (Compare.cpp) and the CUDA kernel
// (kernels/Compare.cu). Each accumulates in f64; the callers sum blocks in a
// fixed order, so a result depends only on the blocking (by the element
// count), not on the threads.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_RUNTIME_MATH_COMPARE_H
#define AMP_RUNTIME_MATH_COMPARE_H

#include "amp/Runtime/Math/HostDevice.h"

#include <cmath>
#include <cstdint>

namespace amprt {

/// compare_stats's output, f64 [kCompareStats]: the accumulators below, in
/// this order. The error slots come twice: x as it is (factor 1), then x
/// divided by the scale (a gradient carrying the loss scale).
enum CompareStat : int {
  kSqRef,     ///< sum ref^2 over finite ref where x is finite
  kCounted,   ///< elements in the relative errors (|ref| >= floor, != 0)
  kNonzero,   ///< finite nonzero ref where x is finite
  kUnderflow, ///< ... of which x is 0
  kOverflow,  ///< finite ref where x is not finite
  kLogSum,    ///< sum log|x / ref| over a sample finite and nonzero in both
  kLogCount,  ///< that sample's size
  kSqDiff,    ///< sum (x f - ref)^2 (factor 1); kSqDiff + kPerFactor: 1/scale
  kSumRel,    ///< sum |x f - ref| / |ref| over the counted elements
  kMaxRel,    ///< the largest of those
  kPerFactor = 3,
  kCompareStats = kSqDiff + 2 * kPerFactor,
};

/// The sample of the scale detection: every stride-th element, about 1024.
AMPRT_HD inline int64_t compareSampleStride(int64_t n) {
  return n / 1024 > 1 ? n / 1024 : 1;
}

/// Whether v is finite (v - v is NaN for an infinity or a NaN): one
/// spelling for the host and the device.
AMPRT_HD inline bool finiteD(double v) { return v - v == 0.0; }

/// Adds element i (value x, reference r) to acc[kCompareStats]. floor: the
/// smallest |r| counted in the relative errors; inv: 1 / scale; twoFactors:
/// whether the 1/scale slots are wanted (scale != 1).
AMPRT_HD inline void compareElement(double *acc, float xf, float rf,
                                    double floor, double inv, bool twoFactors,
                                    bool sampled) {
  double x = xf, r = rf;
  if (!finiteD(r))
    return;
  if (!finiteD(x)) {
    acc[kOverflow] += 1;
    return;
  }
  acc[kSqRef] += r * r;
  bool nonzero = r != 0;
  if (nonzero) {
    acc[kNonzero] += 1;
    acc[kUnderflow] += x == 0;
    if (sampled && x != 0) {
      acc[kLogSum] += log(fabs(x / r));
      acc[kLogCount] += 1;
    }
  }
  bool counted = nonzero && fabs(r) >= floor;
  acc[kCounted] += counted;
  for (int f = 0; f < (twoFactors ? 2 : 1); ++f) {
    double d = (f ? x * inv : x) - r;
    double *a = acc + f * kPerFactor;
    a[kSqDiff] += d * d;
    if (counted) {
      double rel = fabs(d) / fabs(r);
      a[kSumRel] += rel;
      a[kMaxRel] = rel > a[kMaxRel] ? rel : a[kMaxRel];
    }
  }
}

/// into += from (the largest for the kMaxRel slots).
AMPRT_HD inline void compareMerge(double *into, const double *from) {
  for (int s = 0; s < kCompareStats; ++s)
    into[s] = s == kMaxRel || s == kMaxRel + kPerFactor
                  ? (from[s] > into[s] ? from[s] : into[s])
                  : into[s] + from[s];
}

} // namespace amprt

#endif // AMP_RUNTIME_MATH_COMPARE_H

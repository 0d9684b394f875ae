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
// it (compareElement). Each accumulates in f64; the callers sum blocks in a
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

/// The sample of the scale detection: every stride-th element, about 1024.
AMPRT_HD inline int64_t compareSampleStride(int64_t n) {
  return n / 1024 > 1 ? n / 1024 : 1;
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

/// Adds element (x, r) to acc[kCompareStats] with x' = x * inv. floor: the
/// smallest |r| counted in the relative errors. Without branches (an
/// element that does not count adds zeros, which leaves every sum and the
/// largest error as they are), so that the CPU's loop compiles to selects.
AMPRT_HD inline void compareElement(double *acc, float xf, float rf,
                                    double floor, double inv) {
  double x = xf, r = rf;
  bool rFinite = finiteD(r), xFinite = finiteD(x), both = rFinite && xFinite;
  acc[kOverflow] += double(rFinite && !xFinite);
  r = both ? r : 0.0;
  x = both ? x : 0.0;
  acc[kSqRef] += r * r;
  bool nonzero = r != 0;
  acc[kNonzero] += double(nonzero);
  acc[kUnderflow] += double(nonzero && x == 0);
  bool counted = nonzero && fabs(r) >= floor;
  acc[kCounted] += double(counted);
  double d = x * inv - r;
  acc[kSqDiff] += d * d;
  double rel = counted ? fabs(d) / fabs(r) : 0.0;
  acc[kSumRel] += rel;
  acc[kMaxRel] = rel > acc[kMaxRel] ? rel : acc[kMaxRel];
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

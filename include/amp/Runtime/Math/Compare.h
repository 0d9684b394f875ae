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

/// |v| and a condition as 1 or 0, for compareElementsOf's D = double; the
/// CPU kernel's vectors have their own (below).
AMPRT_HD inline double compareAbs(double v) { return fabs(v); }
AMPRT_HD inline double compareCount(bool c) { return c ? 1.0 : 0.0; }

#if defined(__GNUC__) && defined(__AVX__) && !defined(__CUDACC__)
#define AMPRT_COMPARE_VEC 1
/// Four doubles in one AVX register (GCC's and Clang's vector extensions:
/// arithmetic lanewise, a comparison gives a mask of -1 or 0 per lane, ?:
/// selects per lane), and the mask a comparison of two gives.
typedef double CompareVec __attribute__((vector_size(32)));
typedef int64_t CompareMask __attribute__((vector_size(32)));
inline CompareVec compareAbs(CompareVec v) {
  return (CompareVec)((CompareMask)v & INT64_MAX);
}
inline CompareVec compareCount(CompareMask c) {
  return (CompareVec)(c & (CompareMask)(CompareVec() + 1.0));
}
#endif

/// Adds element (x, r) to acc[kCompareStats] with x' = x * inv, where D is
/// a double, or a vector of them whose lanes are elements. floor: the
/// smallest |r| counted in the relative errors. Without branches (an
/// element that does not count adds zeros, which leaves every sum and the
/// largest error as they are): selects, which a vector computes per lane.
/// acc[s] is a D lvalue.
template <typename D, typename Acc>
AMPRT_HD inline void compareElementsOf(Acc &&acc, D x, D r, double floor,
                                       double inv) {
  auto rFinite = r - r == D(), xFinite = x - x == D(),
       xBad = x - x != D(); // NaN or an infinity, as !xFinite
  auto both = rFinite & xFinite;
  acc[kOverflow] += compareCount(rFinite & xBad);
  r = both ? r : D();
  x = both ? x : D();
  acc[kSqRef] += r * r;
  auto nonzero = r != D();
  acc[kNonzero] += compareCount(nonzero);
  acc[kUnderflow] += compareCount(nonzero & (x == D()));
  auto counted = nonzero & (compareAbs(r) >= D() + floor);
  acc[kCounted] += compareCount(counted);
  D d = x * inv - r;
  acc[kSqDiff] += d * d;
  // The division runs for every element (by 1 where it does not count).
  D rel = compareAbs(d) / (counted ? compareAbs(r) : D() + 1.0);
  rel = counted ? rel : D();
  acc[kSumRel] += rel;
  acc[kMaxRel] = rel > acc[kMaxRel] ? rel : acc[kMaxRel];
}

/// One element: acc[s] is a double lvalue (a thread's array on the device).
template <typename Acc>
AMPRT_HD inline void compareElement(Acc &&acc, float xf, float rf, double floor,
                                    double inv) {
  compareElementsOf<double>(acc, double(xf), double(rf), floor, inv);
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

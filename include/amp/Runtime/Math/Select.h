//===- Select.h - ranking, scatter and scan steps ---------------*- C++ -*-===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// The element rules of the selection kernels, shared by the CPU kernels
// (Select.cpp, Reduce.cpp) and the CUDA kernels (kernels/Select.cu): how
// arg_max / arg_min / top_k rank two values (NaN first), one step of a
// scatter reduction, and the running sums of cumsum.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_RUNTIME_MATH_SELECT_H
#define AMP_RUNTIME_MATH_SELECT_H

#include "amp/Runtime/Math/HostDevice.h"

#include <cstdint>

namespace amprt {

/// arg_max / arg_min / top_k ranking: a before b when larger (smaller);
/// NaN before any number. Integers compare exactly.
AMPRT_HD inline bool ranksBefore(float a, float b, bool largest) {
  bool na = a != a, nb = b != b;
  if (na || nb)
    return na && !nb;
  return largest ? a > b : a < b;
}
AMPRT_HD inline bool ranksBefore(int64_t a, int64_t b, bool largest) {
  return largest ? a > b : a < b;
}
AMPRT_HD inline bool ranksEqual(float a, float b) {
  return a == b || (a != a && b != b);
}
AMPRT_HD inline bool ranksEqual(int64_t a, int64_t b) { return a == b; }

/// The position along a line (elements at(base + i * inner), i < len) of
/// its first extreme element, or with `last` of its last one.
template <typename At>
AMPRT_HD inline int64_t argOfLine(int64_t base, int64_t len, int64_t inner,
                                  bool largest, bool last, At &&at) {
  int64_t best = 0;
  auto b = at(base);
  for (int64_t i = 1; i < len; ++i) {
    auto v = at(base + i * inner);
    if (ranksBefore(v, b, largest) || (last && ranksEqual(v, b))) {
      best = i;
      b = v;
    }
  }
  return best;
}

/// top_k's total order: element (u, position a) before (v, b) when u ranks
/// before v, ties by position.
AMPRT_HD inline bool topKBefore(float u, int64_t a, float v, int64_t b,
                                bool largest) {
  if (ranksBefore(u, v, largest))
    return true;
  return !ranksBefore(v, u, largest) && a < b;
}

/// One step of a scatter reduction (1 add, 2 mul, 3 max, 4 min) of the
/// value in place, a, with the update b: f32 math, a NaN propagating
/// through max and min (the caller rounds into the dtype). ScatterElements
/// and ScatterND, CPU and CUDA.
AMPRT_HD inline float scatterCombine(int32_t reduction, float a, float b) {
  switch (reduction) {
  case 1:
    return a + b;
  case 2:
    return a * b;
  default:
    if (a != a)
      return a;
    if (b != b)
      return b;
    return reduction == 3 ? (a < b ? b : a) : (b < a ? b : a);
  }
}
/// The integer step: exact, add and mul wrapping in 64 bits (the caller
/// stores into the dtype, wrapping again).
AMPRT_HD inline int64_t scatterCombine(int32_t reduction, int64_t a,
                                       int64_t b) {
  switch (reduction) {
  case 1:
    return int64_t(uint64_t(a) + uint64_t(b));
  case 2:
    return int64_t(uint64_t(a) * uint64_t(b));
  case 3:
    return a < b ? b : a;
  default:
    return b < a ? b : a;
  }
}

/// The running sums of one line (elements base + s * inner, s < len), in
/// order along the axis or against it; exclusive sums leave out the element
/// itself. Acc: double for floats, uint64_t (wrapping) for integers.
template <typename Acc, typename Load, typename Store>
AMPRT_HD inline void scanLine(int64_t base, int64_t len, int64_t inner,
                              bool exclusive, bool reverse, Load &&load,
                              Store &&store) {
  Acc acc = 0;
  for (int64_t s = 0; s < len; ++s) {
    int64_t i = base + (reverse ? len - 1 - s : s) * inner;
    Acc v = load(i);
    if (!exclusive)
      acc += v;
    store(i, acc);
    if (exclusive)
      acc += v;
  }
}

} // namespace amprt

#endif // AMP_RUNTIME_MATH_SELECT_H

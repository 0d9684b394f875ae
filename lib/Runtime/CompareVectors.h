//===- CompareVectors.h - compare_stats' vector loop ------------*- C++ -*-===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// compare_stats' element statistics over a block, as vectors of V::kLanes
// floats (Math/Compare.h's compareElementsOf on V::Floats): eight lanes on
// AVX2 (Compare.cpp), sixteen on AVX-512 (CompareAvx512.cpp, compiled for
// it and chosen at run time). A chunk of kChunk vectors is first taken as
// finite (compareFiniteElementsOf: no selects, no overflow count), each
// lane summing in f32 and counting in integers; where that pass does not
// stand (an element not finite, f32 sums that could be wrong: chunkSafe)
// the chunk runs again in full with f64 sums. A lane's chunk sums go to
// its f64 sums.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_LIB_RUNTIME_COMPAREVECTORS_H
#define AMP_LIB_RUNTIME_COMPAREVECTORS_H

#include "amp/Runtime/Math/Compare.h"

#include <cstdint>
#include <cstring>
#include <type_traits>
#ifdef AMPRT_COMPARE_VEC
#include <immintrin.h>
#endif

namespace amprt {

#ifdef AMPRT_COMPARE_VEC
namespace compare_vectors {

/// Vectors per chunk.
constexpr int kChunk = 8;
/// The statistics summed, and counted, per lane (plain arrays: a braced
/// list would instantiate initializer_list members in both files).
constexpr int kSums[] = {kSqRef, kSqDiff, kSumRel};
constexpr int kCounts[] = {kCounted, kNonzero, kUnderflow, kOverflow};
/// The counts of a chunk's finite pass (no overflow: no element is not
/// finite where the pass stands).
constexpr int kFiniteCounts[] = {kCounted, kNonzero, kUnderflow};

/// One chunk's statistics per lane, its elements taken as finite
/// (compareFiniteElementsOf): the sums in f32, the counts as integers (a
/// mask is -1), the largest error, and the lanes whose difference x' - r
/// was nonzero (an OR of |d|'s bits). Named members, not arrays by
/// statistic: they stay in registers.
template <typename V> struct ChunkF32 {
  using Floats = typename V::Floats;
  using Mask = typename V::Mask;
  Floats sqRef = {}, sqDiff = {}, sumRel = {}, largest = {};
  Mask nonzero = {}, underflow = {}, counted = {}, differs = {};
  Floats sum(int k) const {
    return k == kSqRef ? sqRef : k == kSqDiff ? sqDiff : sumRel;
  }
  Mask count(int k) const {
    return k == kNonzero ? nonzero : k == kUnderflow ? underflow : counted;
  }
};

/// A ChunkF32 as compareFiniteElementsOf's (const) accumulator.
template <typename V> struct ChunkAcc {
  ChunkF32<V> *c;
  void count(int k, typename V::Mask m) const {
    (k == kNonzero     ? c->nonzero
     : k == kUnderflow ? c->underflow
                       : c->counted) -= m;
  }
  void square(int k, typename V::Floats v) const {
    if (k == kSqRef) {
      c->sqRef = V::squareAdd(c->sqRef, v);
      return;
    }
    c->sqDiff = V::squareAdd(c->sqDiff, v);
    c->differs |= (typename V::Mask)v & INT32_MAX;
  }
  void add(int, typename V::Floats v) const { c->sumRel += v; }
  void max(int, typename V::Floats v) const {
    c->largest = V::max(v, c->largest);
  }
};

/// The sums per lane in f64 (each half of the lanes widened).
template <typename V> struct LanesF64 {
  typename V::Doubles s[kCompareStats][2] = {};
  void square(int k, typename V::Floats v) {
    typename V::Doubles l = V::lowHalf(v), h = V::highHalf(v);
    s[k][0] += l * l;
    s[k][1] += h * h;
  }
  void add(int k, typename V::Floats v) {
    s[k][0] += V::lowHalf(v);
    s[k][1] += V::highHalf(v);
  }
  void add(const ChunkF32<V> &c, int k) {
    s[k][0] += V::lowHalf(c.sum(k));
    s[k][1] += V::highHalf(c.sum(k));
  }
};

/// compareElementsOf's accumulator over a vector at a time, for a chunk
/// summed in f64: the counts as integers per lane, the largest in f32
/// (exact: a max of floats), the sums into LanesF64.
template <typename V> struct WideAcc {
  typename V::Mask *counts; // [kCompareStats]
  typename V::Floats *largest;
  LanesF64<V> *sums;
  void count(int k, typename V::Mask c) const { counts[k] -= c; }
  void square(int k, typename V::Floats v) const { sums->square(k, v); }
  void add(int k, typename V::Floats v) const { sums->add(k, v); }
  void max(int, typename V::Floats v) const {
    *largest = v > *largest ? v : *largest;
  }
};

/// Whether a chunk's finite pass stands for its statistics, its f32 sums
/// as good as f64's (relative error at most kChunk ulps: every term is
/// nonnegative): no sum is infinite or NaN (which they are where an element
/// of x or ref is: r^2 or x' - r is then not finite, and where a square
/// overflowed); no lane whose reference had a nonzero element summed its
/// squares into f32's small range (|ref| below about 2^-30, where the
/// squares of the differences would lose bits or underflow); and no lane
/// with a nonzero difference summed its squares below 2^-100, where a
/// square may have lost bits or become 0 (a tiny x against a zero
/// reference).
template <typename V> bool chunkSafe(const ChunkF32<V> &c) {
  using Floats = typename V::Floats;
  typename V::Mask bad = {};
  for (int k : kSums)
    bad |= c.sum(k) - c.sum(k) != Floats{};
  bad |= (c.nonzero != typename V::Mask{}) & (c.sqRef < Floats{} + 0x1p-60f);
  bad |= (c.differs != typename V::Mask{}) & (c.sqDiff < Floats{} + 0x1p-100f);
  return V::none(bad);
}

/// The V::kLanes elements of x (dtype Dt: f32, f16 or bf16) from element
/// i, as floats (widened exactly).
template <typename V, int32_t Dt>
typename V::Floats loadX(const void *x, int64_t i) {
  if constexpr (Dt == AMPRT_F32) {
    typename V::Floats f;
    std::memcpy(&f, static_cast<const float *>(x) + i, sizeof f);
    return f;
  } else if constexpr (Dt == AMPRT_F16) {
    return V::loadF16(static_cast<const uint16_t *>(x) + i);
  } else {
    static_assert(Dt == AMPRT_BF16, "compareVectors reads f32, f16, bf16");
    return V::loadBf16(static_cast<const uint16_t *>(x) + i);
  }
}

/// A chunk in full: compareElementsOf with f64 sums. Not inlined: a
/// compiler would keep the first pass's vectors for it, in memory.
template <typename V, int32_t Dt>
__attribute__((noinline)) void
compareChunkWide(const void *v, int64_t i, const float *r, float floor,
                 float inv, typename V::Mask *counts,
                 typename V::Floats &largest, LanesF64<V> &sums) {
  using Floats = typename V::Floats;
  constexpr int kLanes = V::kLanes;
  WideAcc<V> wide{counts, &largest, &sums};
  for (int c = 0; c < kChunk; ++c)
    compareElementsOf<Floats>(wide, loadX<V, Dt>(v, i + c * kLanes),
                              loadX<V, AMPRT_F32>(r, i + c * kLanes), floor,
                              inv);
}

/// The statistics of v[0, n) against r[0, n), n a whole number of chunks,
/// into counts, largest and sums: each chunk first as finite elements in
/// f32, again in full (non-finite elements, f64 sums) where chunkSafe says
/// the first pass does not stand. v has dtype Dt; Scaled: inv is not 1
/// (else x' is x: no multiply).
template <typename V, int32_t Dt, bool Scaled>
void compareChunks(const void *v, const float *r, int64_t n, float floor,
                   float inv, typename V::Mask *counts,
                   typename V::Floats &largest, LanesF64<V> &sums) {
  using Floats = typename V::Floats;
  constexpr int kLanes = V::kLanes;
  constexpr int64_t kStep = int64_t(kLanes) * kChunk;
  float x1 = Scaled ? inv : 1.f;
  for (int64_t i = 0; i < n; i += kStep) {
    ChunkF32<V> chunk;
    for (int c = 0; c < kChunk; ++c)
      compareFiniteElementsOf<Floats>(
          ChunkAcc<V>{&chunk}, loadX<V, Dt>(v, i + c * kLanes),
          loadX<V, AMPRT_F32>(r, i + c * kLanes), floor, x1);
    if (chunkSafe<V>(chunk)) {
      for (int k : kFiniteCounts)
        counts[k] += chunk.count(k);
      largest = V::max(chunk.largest, largest);
      for (int k : kSums)
        sums.add(chunk, k);
      continue;
    }
    compareChunkWide<V, Dt>(v, i, r, floor, x1, counts, largest, sums);
  }
}

} // namespace compare_vectors

/// The most lanes a compareVectors has.
constexpr int kMaxCompareLanes = 16;

/// Whether compareVectors reads dtype dt itself (else the caller widens it
/// to f32 first).
template <typename V> constexpr bool compareReads(int32_t dt) {
  return dt == AMPRT_F32 ||
         (V::kLoads16 && (dt == AMPRT_F16 || dt == AMPRT_BF16));
}

/// The element statistics of v[0, n) (dtype dt, compareReads) against
/// r[0, n) for the largest n <= len that is a whole number of chunks, lane
/// l's into lanes[l] (zeroed
/// first; the caller merges them in order: the AVX-512 file calls no
/// inline function that Compare.cpp compiles too, which the linker could
/// take for both); returns n (the caller takes the tail).
template <typename V>
int64_t compareVectors(const void *v, int32_t dt, const float *r, int64_t len,
                       float floor, float inv, double (*lanes)[kCompareStats]) {
  static_assert(V::kLanes <= kMaxCompareLanes, "too many lanes");
  using namespace compare_vectors;
  using Floats = typename V::Floats;
  using Mask = typename V::Mask;
  constexpr int kLanes = V::kLanes;
  Mask counts[kCompareStats] = {};
  Floats largest = {};
  LanesF64<V> sums;
  int64_t n = len / (int64_t(kLanes) * kChunk) * (int64_t(kLanes) * kChunk);
  auto run = [&](auto dtype) {
    constexpr int32_t Dt = decltype(dtype)::value;
    if (inv == 1.f)
      compareChunks<V, Dt, false>(v, r, n, floor, inv, counts, largest, sums);
    else
      compareChunks<V, Dt, true>(v, r, n, floor, inv, counts, largest, sums);
  };
  if constexpr (V::kLoads16) {
    if (dt == AMPRT_F16)
      run(std::integral_constant<int32_t, AMPRT_F16>());
    else if (dt == AMPRT_BF16)
      run(std::integral_constant<int32_t, AMPRT_BF16>());
    else
      run(std::integral_constant<int32_t, AMPRT_F32>());
  } else {
    run(std::integral_constant<int32_t, AMPRT_F32>());
  }
  constexpr int kHalf = kLanes / 2;
  for (int l = 0; l < kLanes; ++l) {
    double *lane = lanes[l];
    for (int k = 0; k < kCompareStats; ++k)
      lane[k] = 0;
    for (int k : kCounts)
      lane[k] = double(counts[k][l]);
    for (int k : kSums)
      lane[k] = sums.s[k][l / kHalf][l % kHalf];
    lane[kMaxRel] = double(largest[l]);
  }
  return n;
}
#endif

} // namespace amprt

/// compareVectors on sixteen lanes (CompareAvx512.cpp, compiled for
/// AVX-512; call it only where the CPU has AVX-512 F, DQ, BW and VL). C
/// linkage: that file declares nothing else outside its own namespace.
extern "C" int64_t
amprt_compare_vectors_avx512(const void *v, int32_t dt, const float *r,
                             int64_t len, float floor, float inv,
                             double (*lanes)[amprt::kCompareStats]);

#endif // AMP_LIB_RUNTIME_COMPAREVECTORS_H

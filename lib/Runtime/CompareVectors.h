//===- CompareVectors.h - compare_stats' vector loop ------------*- C++ -*-===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// compare_stats' element statistics over a block, as vectors of V::kLanes
// floats (Math/Compare.h's compareElementsOf on V::Floats): eight lanes on
// AVX2 (Compare.cpp), sixteen on AVX-512 (CompareAvx512.cpp, compiled for
// it and chosen at run time). Each lane sums kChunk elements in f32, then
// adds that to its f64 sum (chunkSafe says when a chunk is summed in f64
// instead); the counts are integers per lane, the largest error a float.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_LIB_RUNTIME_COMPAREVECTORS_H
#define AMP_LIB_RUNTIME_COMPAREVECTORS_H

#include "amp/Runtime/Math/Compare.h"

#include <cstdint>
#include <cstring>
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

/// The sums compareElementsOf adds to: of one chunk per lane in f32.
template <typename V> struct ChunkF32 {
  typename V::Floats s[kCompareStats] = {};
  /// The lanes with a nonzero difference (x' - r) in the chunk.
  typename V::Mask differs = {};
  void square(int k, typename V::Floats v) {
    s[k] += v * v;
    if (k == kSqDiff)
      differs |= v != typename V::Floats{};
  }
  void add(int k, typename V::Floats v) { s[k] += v; }
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
    s[k][0] += V::lowHalf(c.s[k]);
    s[k][1] += V::highHalf(c.s[k]);
  }
};

/// compareElementsOf's accumulator over a vector at a time: the counts as
/// integers per lane (a mask is -1) and the largest in f32 (exact: a max
/// of floats) when Counting, the sums into Sums.
template <typename V, typename Sums, bool Counting> struct VectorAcc {
  typename V::Mask *counts; // [kCompareStats]
  typename V::Floats *largest;
  Sums *sums;
  void count(int k, typename V::Mask c) const {
    if constexpr (Counting)
      counts[k] -= c;
  }
  void square(int k, typename V::Floats v) const { sums->square(k, v); }
  void add(int k, typename V::Floats v) const { sums->add(k, v); }
  void max(int, typename V::Floats v) const {
    if constexpr (Counting)
      *largest = v > *largest ? v : *largest;
  }
};

/// Whether a chunk's f32 sums are as good as f64's for the statistics
/// (relative error at most kChunk ulps: every term is nonnegative): none
/// overflowed; no lane whose reference had a nonzero element summed its
/// squares into f32's small range (|ref| below about 2^-30, where the
/// squares of the differences would lose bits or underflow); and no lane
/// with a nonzero difference summed its squares below 2^-100, where a
/// square may have lost bits or become 0 (a tiny x against a zero
/// reference). `nonzero`: the lanes' nonzero counts grew in the chunk.
template <typename V>
bool chunkSafe(const ChunkF32<V> &c, typename V::Mask nonzero) {
  using Floats = typename V::Floats;
  typename V::Mask bad = {};
  for (int k : kSums)
    bad |= c.s[k] - c.s[k] != Floats{};
  bad |= nonzero & (c.s[kSqRef] < Floats{} + 0x1p-60f);
  bad |= c.differs & (c.s[kSqDiff] < Floats{} + 0x1p-100f);
  return V::none(bad);
}

} // namespace compare_vectors

/// The most lanes a compareVectors has.
constexpr int kMaxCompareLanes = 16;

/// The element statistics of v[0, n) against r[0, n) for the largest n <=
/// len that is a whole number of chunks, lane l's into lanes[l] (zeroed
/// first; the caller merges them in order: the AVX-512 file calls no
/// inline function that Compare.cpp compiles too, which the linker could
/// take for both); returns n (the caller takes the tail).
template <typename V>
int64_t compareVectors(const float *v, const float *r, int64_t len, float floor,
                       float inv, double (*lanes)[kCompareStats]) {
  static_assert(V::kLanes <= kMaxCompareLanes, "too many lanes");
  using namespace compare_vectors;
  using Floats = typename V::Floats;
  using Mask = typename V::Mask;
  constexpr int kLanes = V::kLanes;
  Mask counts[kCompareStats] = {};
  Floats largest = {};
  LanesF64<V> sums;
  constexpr int64_t kStep = int64_t(kLanes) * kChunk;
  auto load = [](const float *p) {
    Floats f;
    std::memcpy(&f, p, sizeof f);
    return f;
  };
  int64_t i = 0;
  for (; i + kStep <= len; i += kStep) {
    ChunkF32<V> chunk;
    VectorAcc<V, ChunkF32<V>, true> acc{counts, &largest, &chunk};
    Mask nonzero = counts[kNonzero];
    for (int c = 0; c < kChunk; ++c)
      compareElementsOf<Floats>(acc, load(v + i + c * kLanes),
                                load(r + i + c * kLanes), floor, inv);
    if (chunkSafe<V>(chunk, counts[kNonzero] != nonzero)) {
      for (int k : kSums)
        sums.add(chunk, k);
      continue;
    }
    VectorAcc<V, LanesF64<V>, false> wide{counts, &largest, &sums};
    for (int c = 0; c < kChunk; ++c)
      compareElementsOf<Floats>(wide, load(v + i + c * kLanes),
                                load(r + i + c * kLanes), floor, inv);
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
  return i;
}
#endif

} // namespace amprt

/// compareVectors on sixteen lanes (CompareAvx512.cpp, compiled for
/// AVX-512; call it only where the CPU has AVX-512 F, DQ, BW and VL). C
/// linkage: that file declares nothing else outside its own namespace.
extern "C" int64_t
amprt_compare_vectors_avx512(const float *v, const float *r, int64_t len,
                             float floor, float inv,
                             double (*lanes)[amprt::kCompareStats]);

#endif // AMP_LIB_RUNTIME_COMPAREVECTORS_H

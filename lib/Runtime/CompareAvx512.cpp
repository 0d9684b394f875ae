//===- CompareAvx512.cpp - compare_stats' vector loop on AVX-512 ---------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// CompareVectors.h's loop on sixteen lanes. This file alone is compiled
// for AVX-512 (lib/Runtime/CMakeLists.txt); Compare.cpp calls it only
// where the CPU has it.
//
//===----------------------------------------------------------------------===//

// GCC 12's AVX-512 conversion intrinsics pass an undefined source vector
// to their masked builtins, which -Wmaybe-uninitialized (and, in a
// function not inlined, -Wuninitialized) takes for a read (GCC PR 105593).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include "CompareVectors.h"

#if !defined(__AVX512F__) || !defined(__AVX512DQ__) ||                         \
    !defined(__AVX512BW__) || !defined(__AVX512VL__)
#error "CompareAvx512.cpp is compiled for AVX-512 (F, DQ, BW, VL)"
#endif

using namespace amprt;

namespace {

struct Avx512 {
  using Floats = CompareFloats16;
  using Mask = CompareMask16;
  typedef double Doubles __attribute__((vector_size(64)));
  static constexpr int kLanes = 16;
  static Doubles lowHalf(Floats v) {
    return (Doubles)_mm512_cvtps_pd(_mm512_castps512_ps256((__m512)v));
  }
  static Doubles highHalf(Floats v) {
    return (Doubles)_mm512_cvtps_pd(
        (__m256)_mm512_extractf64x4_pd((__m512d)v, 1));
  }
  static bool none(Mask m) {
    return _mm512_test_epi32_mask((__m512i)m, (__m512i)m) == 0;
  }
  static constexpr bool kLoads16 = true;
  static Floats loadF16(const uint16_t *p) {
    return (Floats)_mm512_cvtph_ps(
        _mm256_loadu_si256(reinterpret_cast<const __m256i *>(p)));
  }
  static Floats loadBf16(const uint16_t *p) {
    __m512i w = _mm512_cvtepu16_epi32(
        _mm256_loadu_si256(reinterpret_cast<const __m256i *>(p)));
    return (Floats)_mm512_slli_epi32(w, 16);
  }
  static Floats max(Floats a, Floats b) {
    return (Floats)_mm512_max_ps((__m512)a, (__m512)b);
  }
  static Floats squareAdd(Floats s, Floats v) {
    return (Floats)_mm512_fmadd_ps((__m512)v, (__m512)v, (__m512)s);
  }
};

} // namespace

int64_t amprt_compare_vectors_avx512(const void *v, int32_t dt, const float *r,
                                     int64_t len, float floor, float inv,
                                     double (*lanes)[kCompareStats]) {
  return compareVectors<Avx512>(v, dt, r, len, floor, inv, lanes);
}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

//===- Random.h - counter-based random numbers of the runtime ---*- C++ -*-===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// The runtime's random streams (dropout, random_uniform, random_normal,
// bernoulli, random_fill): splitmix64 on a counter, so element i of a call
// is a function of its seed, the context's random offset and i alone. The
// CPU backend and the CUDA kernels draw with these functions, so a batch or
// a dropout mask does not depend on where it was drawn.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_RUNTIME_MATH_RANDOM_H
#define AMP_RUNTIME_MATH_RANDOM_H

#include "amp/Runtime/Math/ElementAccess.h"

namespace amprt {

/// splitmix64's step from state z: the generator's next output after z.
AMPRT_HD inline uint64_t mix64(uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/// Element i of random_fill(seed): draw i + 1 of splitmix64 started at
/// `seed`, mapped to dtype dt: floats uniform in [-1, 1) (53 bits, 2u - 1
/// in f64, one rounding), integers the draw mod `classes` (>= 1), bool its
/// low bit. Every backend computes it alike, so a batch does not depend on
/// where it was drawn.
AMPRT_HD inline void storeRandom(void *p, int32_t dt, int64_t i, uint64_t seed,
                                 int64_t classes) {
  uint64_t r = mix64(seed + uint64_t(i) * 0x9e3779b97f4a7c15ull);
  switch (dt) {
  case AMPRT_I64:
    static_cast<int64_t *>(p)[i] = int64_t(r % uint64_t(classes));
    break;
  case AMPRT_I32:
    static_cast<int32_t *>(p)[i] = int32_t(r % uint64_t(classes));
    break;
  case AMPRT_BOOL:
    static_cast<uint8_t *>(p)[i] = uint8_t(r & 1);
    break;
  default: {
    double u = double(r >> 11) * (1.0 / 9007199254740992.0);
    if (dt == AMPRT_F16 || dt == AMPRT_BF16) {
      // The f32 draw rounded once more: what a cast of the f32 fill gives
      // (amp-run draws a narrowed f32 data input in its 16-bit type).
      float f = float(2 * u - 1);
      static_cast<uint16_t *>(p)[i] =
          dt == AMPRT_F16 ? f32ToF16(f) : f32ToBf16(f);
    } else {
      writeD(p, dt, i, 2 * u - 1);
    }
  }
  }
}

/// The stream of a random kernel call: its seed, moved by the context's
/// random offset (amprt_set_random_offset; a training loop sets the step
/// index). Offset 0 leaves the seed as it is.
AMPRT_HD inline uint64_t streamKey(uint64_t seed, uint64_t offset) {
  return offset ? mix64(seed ^ mix64(offset)) : seed;
}

/// Uniform in [0, 1) with 24 random bits: element i of stream `key`
/// (dropout's keep test and bernoulli's draw compare it in f32).
AMPRT_HD inline float uniform24At(uint64_t key, int64_t i) {
  uint64_t r = mix64(key ^ mix64(uint64_t(i)));
  return float(r >> 40) * (1.f / 16777216.f);
}

/// Uniform in [0, 1) with 53 random bits from draw j + 1 of splitmix64
/// started at `key` (random_fill's stream).
AMPRT_HD inline double uniform53At(uint64_t key, uint64_t j) {
  uint64_t r = mix64(key + j * 0x9e3779b97f4a7c15ull);
  return double(r >> 11) * (1.0 / 9007199254740992.0);
}

/// random_uniform's element i: low + (high - low) u, u of 53 bits.
AMPRT_HD inline double uniformAt(uint64_t key, uint64_t i, double low,
                                 double high) {
  return low + (high - low) * uniform53At(key, i);
}

/// random_normal's element i: Box-Muller on draws 2i and 2i + 1 (1 - u is
/// in (0, 1], so the logarithm is finite). The host's and the device's
/// log, sqrt and cos may differ in the last bit of the double.
AMPRT_HD inline double normalAt(uint64_t key, uint64_t i, double mean,
                                double scale) {
  double u = uniform53At(key, 2 * i), v = uniform53At(key, 2 * i + 1);
  return mean + scale * sqrt(-2.0 * log(1.0 - u)) * cos(6.283185307179586 * v);
}

/// bernoulli's element i: 1 when the 24-bit uniform draw is below p.
AMPRT_HD inline double bernoulliAt(uint64_t key, int64_t i, float p) {
  return uniform24At(key, i) < p ? 1.0 : 0.0;
}

} // namespace amprt

#endif // AMP_RUNTIME_MATH_RANDOM_H

//===- ElementAccess.h - element conversions, loads and stores -*- C++ -*-===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// The runtime's scalar arithmetic on stored elements: f16/bf16 conversion
// (round to nearest even), f64 -> f32 round-to-odd, saturating float ->
// integer conversion, and typed loads and stores. One definition serves the
// CPU backend and the CUDA kernels (compiled by nvcc as __host__ __device__),
// so both round exactly alike. Part of the AmpRuntimeMath target.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_RUNTIME_MATH_ELEMENTACCESS_H
#define AMP_RUNTIME_MATH_ELEMENTACCESS_H

#include "amp/Runtime/Math/HostDevice.h"
#include "amp/Runtime/Runtime.h"

#include <cmath>
#include <cstdint>
#include <cstring>

#ifdef __CUDACC__
#include <cuda_fp16.h>
#endif
// The host's F16C instructions (x86-64-v3, the CPU runtime's -march) round
// f32 -> f16 to nearest even and widen exactly, as the loops below do; a
// build without them (another -march, nvcc's host pass) uses the loops.
#if defined(__F16C__) && !defined(__CUDA_ARCH__)
#define AMPRT_HOST_F16C 1
#include <immintrin.h>
#endif

namespace amprt {

AMPRT_HD inline uint32_t bitsOf(float f) {
#ifdef __CUDA_ARCH__
  return __float_as_uint(f);
#else
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
#endif
}
AMPRT_HD inline float floatOf(uint32_t u) {
#ifdef __CUDA_ARCH__
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, 4);
  return f;
#endif
}

/// True when f is NaN or Inf (exponent bits all ones).
AMPRT_HD inline bool nonFiniteF32(float f) {
  return (bitsOf(f) & 0x7f800000u) == 0x7f800000u;
}

/// IEEE binary32 -> binary16, round to nearest even; overflow gives Inf,
/// NaN stays NaN (quiet, sign and top payload bits kept).
AMPRT_HD inline uint16_t f32ToF16(float f) {
  uint32_t x = bitsOf(f);
#ifdef __CUDA_ARCH__
  // The hardware conversion rounds the same; only NaN payloads differ.
  if ((x & 0x7fffffffu) <= 0x7f800000u)
    return __half_as_ushort(__float2half_rn(f));
#elif defined(AMPRT_HOST_F16C)
  return uint16_t(_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT));
#endif
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t ax = x & 0x7fffffffu;
  if (ax >= 0x7f800000u) {
    if (ax > 0x7f800000u)
      return uint16_t(sign | 0x7e00u | ((ax >> 13) & 0x3ffu));
    return uint16_t(sign | 0x7c00u);
  }
  if (ax >= 0x477ff000u) // >= 65520: rounds to Inf
    return uint16_t(sign | 0x7c00u);
  if (ax >= 0x38800000u) { // normal binary16 (>= 2^-14)
    ax += 0xfffu + ((ax >> 13) & 1u);
    return uint16_t(sign | ((ax - 0x38000000u) >> 13));
  }
  if (ax <= 0x33000000u) // <= 2^-25: rounds to (signed) zero
    return uint16_t(sign);
  // Subnormal binary16: units of 2^-24.
  uint32_t e = ax >> 23;
  uint32_t m = (ax & 0x7fffffu) | 0x800000u;
  uint32_t shift = 126u - e; // 14..24
  uint32_t r = m >> shift;
  uint32_t rem = m & ((1u << shift) - 1u);
  uint32_t half = 1u << (shift - 1u);
  if (rem > half || (rem == half && (r & 1u)))
    ++r;
  return uint16_t(sign | r);
}

/// IEEE binary16 -> binary32 (exact).
AMPRT_HD inline float f16ToF32(uint16_t h) {
#ifdef __CUDA_ARCH__
  return __half2float(__ushort_as_half(h));
#elif defined(AMPRT_HOST_F16C)
  return _cvtsh_ss(h);
#endif
  uint32_t sign = uint32_t(h & 0x8000u) << 16;
  uint32_t e = (h >> 10) & 0x1fu;
  uint32_t m = h & 0x3ffu;
  if (e == 0x1f)
    return floatOf(sign | 0x7f800000u | (m << 13));
  if (e == 0) {
    if (m == 0)
      return floatOf(sign);
    // Subnormal: m * 2^-24, exact in binary32.
    float v = float(m) * floatOf(0x33800000u); // 2^-24
    return floatOf(sign | bitsOf(v));
  }
  return floatOf(sign | ((e + 112u) << 23) | (m << 13));
}

/// binary32 -> bfloat16, round to nearest even; NaN stays a quiet NaN.
AMPRT_HD inline uint16_t f32ToBf16(float f) {
  // Written as a select, not an early return, so that loops of it
  // vectorize: NaN keeps its sign and top payload bits, made quiet.
  uint32_t x = bitsOf(f);
  uint32_t nan = (x >> 16) | 0x40u;
  uint32_t rounded = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
  return uint16_t((x & 0x7fffffffu) > 0x7f800000u ? nan : rounded);
}
AMPRT_HD inline float bf16ToF32(uint16_t b) {
  return floatOf(uint32_t(b) << 16);
}

/// v stored into a float tensor of dtype dt and read back: f16 and bf16
/// round it, f32 and f64 keep it.
AMPRT_HD inline float roundedTo(int32_t dt, float v) {
  return dt == AMPRT_F16    ? f16ToF32(f32ToF16(v))
         : dt == AMPRT_BF16 ? bf16ToF32(f32ToBf16(v))
                            : v;
}

/// Reads element i of a float tensor (f32/f16/bf16/f64) as float.
AMPRT_HD inline float loadF(const void *p, int32_t dt, int64_t i) {
  switch (dt) {
  case AMPRT_F32:
    return static_cast<const float *>(p)[i];
  case AMPRT_F16:
    return f16ToF32(static_cast<const uint16_t *>(p)[i]);
  case AMPRT_BF16:
    return bf16ToF32(static_cast<const uint16_t *>(p)[i]);
  case AMPRT_F64:
    return float(static_cast<const double *>(p)[i]);
  default:
    return 0.f;
  }
}
AMPRT_HD inline void storeF(void *p, int32_t dt, int64_t i, float v) {
  switch (dt) {
  case AMPRT_F32:
    static_cast<float *>(p)[i] = v;
    break;
  case AMPRT_F16:
    static_cast<uint16_t *>(p)[i] = f32ToF16(v);
    break;
  case AMPRT_BF16:
    static_cast<uint16_t *>(p)[i] = f32ToBf16(v);
    break;
  case AMPRT_F64:
    static_cast<double *>(p)[i] = v;
    break;
  default:
    break;
  }
}

/// f64 -> f32 rounded to odd (truncate, then set the last bit if inexact):
/// a later rounding to f16/bf16 is then a single correct rounding.
AMPRT_HD inline float f64ToF32Odd(double d) {
  float f = float(d);
  bool fInf = (bitsOf(f) & 0x7fffffffu) == 0x7f800000u;
  if (d != d || fInf || double(f) == d)
    return f;
  if (fabs(double(f)) > fabs(d))
    f = nextafterf(f, 0.f);
  return floatOf(bitsOf(f) | 1u);
}

/// double -> integer: truncated toward zero, saturated, NaN -> 0.
template <typename I> AMPRT_HD I saturate(double v);
#define AMPRT_SATURATE(I, LO, HI)                                              \
  template <> AMPRT_HD inline I saturate<I>(double v) {                        \
    if (v != v)                                                                \
      return 0;                                                                \
    double t = trunc(v);                                                       \
    if (t <= double(LO))                                                       \
      return LO;                                                               \
    if (t >= double(HI))                                                       \
      return HI;                                                               \
    return I(t);                                                               \
  }
AMPRT_SATURATE(int64_t, INT64_MIN, INT64_MAX)
AMPRT_SATURATE(int32_t, INT32_MIN, INT32_MAX)
AMPRT_SATURATE(int8_t, INT8_MIN, INT8_MAX)
AMPRT_SATURATE(uint8_t, 0, UINT8_MAX)
#undef AMPRT_SATURATE

AMPRT_HD inline int64_t readI(const void *p, int32_t dt, int64_t i) {
  switch (dt) {
  case AMPRT_I64:
    return static_cast<const int64_t *>(p)[i];
  case AMPRT_I32:
    return static_cast<const int32_t *>(p)[i];
  case AMPRT_I8:
    return static_cast<const int8_t *>(p)[i];
  default:
    return static_cast<const uint8_t *>(p)[i];
  }
}

AMPRT_HD inline double readD(const void *p, int32_t dt, int64_t i) {
  switch (dt) {
  case AMPRT_F64:
    return static_cast<const double *>(p)[i];
  case AMPRT_F32:
  case AMPRT_F16:
  case AMPRT_BF16:
    return loadF(p, dt, i);
  default:
    return double(readI(p, dt, i));
  }
}

AMPRT_HD inline void writeI(void *p, int32_t dt, int64_t i, int64_t v) {
  switch (dt) {
  case AMPRT_I64:
    static_cast<int64_t *>(p)[i] = v;
    break;
  case AMPRT_I32:
    static_cast<int32_t *>(p)[i] = int32_t(v);
    break;
  case AMPRT_I8:
    static_cast<int8_t *>(p)[i] = int8_t(v);
    break;
  case AMPRT_U8:
    static_cast<uint8_t *>(p)[i] = uint8_t(v);
    break;
  case AMPRT_BOOL:
    static_cast<uint8_t *>(p)[i] = v != 0;
    break;
  default:
    break;
  }
}

/// Writes a double into a float or integer slot with one correct rounding.
AMPRT_HD inline void writeD(void *p, int32_t dt, int64_t i, double v) {
  switch (dt) {
  case AMPRT_F64:
    static_cast<double *>(p)[i] = v;
    break;
  case AMPRT_F32:
    static_cast<float *>(p)[i] = float(v);
    break;
  case AMPRT_F16:
    static_cast<uint16_t *>(p)[i] = f32ToF16(f64ToF32Odd(v));
    break;
  case AMPRT_BF16:
    static_cast<uint16_t *>(p)[i] = f32ToBf16(f64ToF32Odd(v));
    break;
  case AMPRT_I64:
    static_cast<int64_t *>(p)[i] = saturate<int64_t>(v);
    break;
  case AMPRT_I32:
    static_cast<int32_t *>(p)[i] = saturate<int32_t>(v);
    break;
  case AMPRT_I8:
    static_cast<int8_t *>(p)[i] = saturate<int8_t>(v);
    break;
  case AMPRT_U8:
    static_cast<uint8_t *>(p)[i] = saturate<uint8_t>(v);
    break;
  case AMPRT_BOOL:
    static_cast<uint8_t *>(p)[i] = v != 0 || v != v;
    break;
  default:
    break;
  }
}

/// Calls f(E()) with E the unsigned integer type of `bytes` (8, 4, 2, else
/// 1): for kernels that move elements of any dtype without reading them as
/// numbers (where, strided copies, gather, fill), on either backend's host
/// side.
template <typename F> void byElementSize(size_t bytes, F &&f) {
  switch (bytes) {
  case 8:
    f(uint64_t());
    break;
  case 4:
    f(uint32_t());
    break;
  case 2:
    f(uint16_t());
    break;
  default:
    f(uint8_t());
  }
}

} // namespace amprt

#endif // AMP_RUNTIME_MATH_ELEMENTACCESS_H

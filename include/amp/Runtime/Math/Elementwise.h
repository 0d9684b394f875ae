//===- Elementwise.h - activations, gradients, binary rules -----*- C++ -*-===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// The element formulas of the elementwise kernels, one definition for the
// CPU kernels (Elementwise.cpp) and the CUDA kernels (kernels/Elementwise.cu):
// the unary ops and activations with their gradients, the float and integer
// binary ops, the comparisons and the logical ops. Each takes and returns
// f32 (the kernels widen f16/bf16 inputs and round the result once into the
// output's dtype). The functions are libm's f32 ones (expf, erfcf, ...):
// glibc's on the host, CUDA's on the device (a few ulp apart); the
// arithmetic around them rounds alike on both (no FMA contraction).
//
//===----------------------------------------------------------------------===//

#ifndef AMP_RUNTIME_MATH_ELEMENTWISE_H
#define AMP_RUNTIME_MATH_ELEMENTWISE_H

#include "amp/Runtime/Math/HostDevice.h"

#include <cmath>
#include <cstdint>

namespace amprt {

//===----------------------------------------------------------------------===//
// Activations and their gradients
//===----------------------------------------------------------------------===//

constexpr float kSqrt1_2 = 0.70710678118654752440f;
constexpr float kInvSqrt2Pi = 0.39894228040143267794f;
constexpr float kSqrt2_Pi = 0.79788456080286535588f;
constexpr float kGeluC = 0.044715f;

/// The logistic function: the sigmoid kernel and the gates of the
/// recurrent cells.
AMPRT_HD inline float sigmoid(float v) { return 1.f / (1.f + expf(-v)); }

/// The unary float ops. Leaky and QuickGelu take a slope `alpha`.
enum class Act : int {
  Relu,
  Gelu,
  Neg,
  Abs,
  Sigmoid,
  Tanh,
  Exp,
  Log,
  Sqrt,
  Recip,
  FastGelu,
  Sign,
  Leaky,     // alpha
  QuickGelu, // alpha
  Erf,
  Sin,
  Cos,
  Floor,
  Ceil,
  Round
};

/// y = act(v).
AMPRT_HD inline float activation(Act act, float v, float alpha) {
  switch (act) {
  case Act::Relu:
    // NaN stays NaN (ONNX's max(0, x), ONNX Runtime and PyTorch): a relu
    // that zeroed it would hide an overflow from the loss scaler's check.
    return v > 0.f || v != v ? v : 0.f;
  case Act::Gelu:
    // 1 + erf(z) as erfc(-z): the sum cancels for negative inputs (1 +
    // erf(-4) keeps 6 of f32's 24 bits).
    return 0.5f * v * erfcf(-v * kSqrt1_2);
  case Act::Neg:
    return -v;
  case Act::Abs:
    return fabsf(v);
  case Act::Sigmoid:
    return sigmoid(v);
  case Act::Tanh:
    return tanhf(v);
  case Act::Exp:
    return expf(v);
  case Act::Log:
    return logf(v);
  case Act::Sqrt:
    return sqrtf(v);
  case Act::Recip:
    return 1.f / v;
  case Act::FastGelu:
    // 0.5 (1 + tanh(u)) as 1 / (1 + exp(-2u)), which does not cancel.
    return v / (1.f + expf(-2.f * kSqrt2_Pi * (v + kGeluC * v * v * v)));
  case Act::Sign:
    return v > 0.f ? 1.f : v < 0.f ? -1.f : v;
  case Act::Leaky:
    return v >= 0.f ? v : alpha * v;
  case Act::QuickGelu:
    return v / (1.f + expf(-alpha * v));
  case Act::Erf:
    return erff(v);
  case Act::Sin:
    return sinf(v);
  case Act::Cos:
    return cosf(v);
  case Act::Floor:
    return floorf(v);
  case Act::Ceil:
    return ceilf(v);
  case Act::Round:
    return nearbyintf(v); // the default mode: halves to even
  }
  return v;
}

/// dx = dy * act'(v) for the activations with a gradient kernel (Relu,
/// Gelu, Sigmoid, Tanh, FastGelu, Leaky, QuickGelu); `g` is dy. Sigmoid's
/// and Tanh's `v` is the forward's output, the others' its input.
AMPRT_HD inline float activationGrad(Act act, float g, float v, float alpha) {
  switch (act) {
  case Act::Relu:
    return v > 0.f ? g : 0.f;
  case Act::Gelu:
    return g * (0.5f * erfcf(-v * kSqrt1_2) +
                v * kInvSqrt2Pi * expf(-0.5f * v * v));
  case Act::Sigmoid:
    return g * v * (1.f - v);
  case Act::Tanh:
    return g * (1.f - v * v);
  case Act::FastGelu: {
    // With s = 0.5 (1 + tanh(u)): 0.5 (1 - tanh(u)^2) = 2 s (1 - s).
    float s = 1.f / (1.f + expf(-2.f * kSqrt2_Pi * (v + kGeluC * v * v * v)));
    return g * (s + 2.f * v * s * (1.f - s) * kSqrt2_Pi *
                        (1.f + 3.f * kGeluC * v * v));
  }
  case Act::Leaky:
    return v > 0.f ? g : alpha * g;
  case Act::QuickGelu: {
    float s = 1.f / (1.f + expf(-alpha * v));
    return g * (s + alpha * v * s * (1.f - s));
  }
  default:
    return 0.f;
  }
}

//===----------------------------------------------------------------------===//
// Binary ops, comparisons, logical ops
//===----------------------------------------------------------------------===//

enum class Bin : int { Add, Sub, Mul, Div, Mod, Fmod, Pow, Min, Max };

/// The float rule of a binary op.
AMPRT_HD inline float binaryF(Bin op, float a, float b) {
  switch (op) {
  case Bin::Add:
    return a + b;
  case Bin::Sub:
    return a - b;
  case Bin::Mul:
    return a * b;
  case Bin::Div:
    return a / b;
  case Bin::Mod: { // the divisor's sign (ONNX fmod = 0, numpy's mod)
    float r = fmodf(a, b);
    return (r != 0.f && ((r < 0.f) != (b < 0.f))) ? r + b : r;
  }
  case Bin::Fmod: // the dividend's sign (ONNX fmod = 1, C fmod)
    return fmodf(a, b);
  case Bin::Pow:
    return powf(a, b);
  case Bin::Min: // NaN propagates, as in ONNX Min/Max; a on ties (+-0)
    return (a != a || b != b) ? a + b : (b < a ? b : a);
  case Bin::Max:
    return (a != a || b != b) ? a + b : (b > a ? b : a);
  }
  return 0.f;
}

/// The integer rule (I = int64_t or int32_t): truncating division,
/// divisor-signed Mod, Fmod as C's %, Pow by repeated multiplication (b >=
/// 0). A zero divisor is the caller's to reject.
template <typename I> AMPRT_HD inline I binaryI(Bin op, I a, I b) {
  switch (op) {
  case Bin::Add:
    return I(a + b);
  case Bin::Sub:
    return I(a - b);
  case Bin::Mul:
    return I(a * b);
  case Bin::Div:
    return I(a / b);
  case Bin::Mod: {
    I r = I(a % b);
    return (r != 0 && ((r < 0) != (b < 0))) ? I(r + b) : r;
  }
  case Bin::Fmod:
    return I(a % b);
  case Bin::Min:
    return a < b ? a : b;
  case Bin::Max:
    return a > b ? a : b;
  case Bin::Pow: {
    I r = 1;
    for (I e = 0; e < b; ++e)
      r = I(r * a);
    return r;
  }
  }
  return 0;
}

/// The comparisons (bool out) and the logical ops (on values != 0).
enum class Cmp : int { Less, Greater, Equal, LessEq, GreaterEq, And, Or, Xor };

/// V = float (f32/f16/bf16 compared as f32) or int64_t (integers, bools).
template <typename V> AMPRT_HD inline uint8_t compareOp(Cmp op, V a, V b) {
  switch (op) {
  case Cmp::Less:
    return a < b;
  case Cmp::Greater:
    return a > b;
  case Cmp::Equal:
    return a == b;
  case Cmp::LessEq:
    return a <= b;
  case Cmp::GreaterEq:
    return a >= b;
  case Cmp::And:
    return a != 0 && b != 0;
  case Cmp::Or:
    return a != 0 || b != 0;
  case Cmp::Xor:
    return (a != 0) != (b != 0);
  }
  return 0;
}

} // namespace amprt

#endif // AMP_RUNTIME_MATH_ELEMENTWISE_H

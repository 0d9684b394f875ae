//===- Optimizer.h - optimizer and loss-scaling updates ---------*- C++ -*-===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// The per-element updates of the fused optimizers and the loss-scaling step
// kernels, one definition for the CPU kernels (Optimizer.cpp,
// MultiTensor.cpp, LossScaler.cpp) and the CUDA kernels of the same names
// in kernels/: SGD, AdamW (ONNX Runtime's
// AdamWOptimizer), the ai.onnx.preview.training Adam, Adagrad and Momentum,
// the gated unscale, and PyTorch GradScaler's scale update. All f32
// arithmetic on FP32 master weights and states; the gradient is widened by
// the caller.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_RUNTIME_MATH_OPTIMIZER_H
#define AMP_RUNTIME_MATH_OPTIMIZER_H

#include "amp/Runtime/Math/ElementAccess.h"
#include "amp/Runtime/Math/HostDevice.h"

#include <cmath>
#include <cstdint>

namespace amprt {

//===----------------------------------------------------------------------===//
// SGD and AdamW (sgd, adamw)
//===----------------------------------------------------------------------===//

/// One sgd call's scalars: `first` when the step counter is 0 (a momentum
/// buffer then starts as the gradient, PyTorch's first step).
struct SgdStep {
  float lr, momentum, dampening, weightDecay;
  bool nesterov, first;
};

/// PyTorch SGD on one element: the new weight from p and the gradient g;
/// `buf` (NULL without momentum) is the element's momentum buffer, updated.
AMPRT_HD inline float sgdStep(const SgdStep &s, float p, float g, float *buf) {
  float d = g + s.weightDecay * p;
  if (buf) {
    float b = s.first ? d : s.momentum * *buf + (1.f - s.dampening) * d;
    *buf = b;
    d = s.nesterov ? d + s.momentum * b : b;
  }
  return p - s.lr * d;
}

/// One adamw call's scalars. mode 0 = PyTorch AdamW (decay first), 1 =
/// HuggingFace (bias correction folded into the rate, decay after), 2 =
/// PyTorch Adam (L2 added to the gradient).
struct AdamWStep {
  float lr, lrCorrected, bc1, bc2; // bc: the bias corrections 1 - beta^t
  float beta1, beta2, epsilon, weightDecay;
  int32_t mode;
};

/// The scalars at step t, as ONNX Runtime's CPU kernel computes them: the
/// corrections from pow in double, kept as float; none before step 1 (its
/// compute_bias_correction_coefficient) or without correctBias.
AMPRT_HD inline AdamWStep adamwScalars(float lr, int64_t t, float beta1,
                                       float beta2, float epsilon,
                                       float weightDecay, int32_t mode,
                                       int32_t correctBias) {
  AdamWStep s = {lr, lr, 1.f, 1.f, beta1, beta2, epsilon, weightDecay, mode};
  if (correctBias && t > 0) {
    s.bc1 = 1.f - float(pow(double(beta1), double(t)));
    s.bc2 = 1.f - float(pow(double(beta2), double(t)));
    s.lrCorrected *= sqrtf(s.bc2) / s.bc1;
  }
  return s;
}

/// AdamW on one element: weight p and moments m, v updated from g.
AMPRT_HD inline void adamwStep(const AdamWStep &s, float g, float &p, float &m,
                               float &v) {
  if (s.mode == 0)
    p -= p * s.lr * s.weightDecay;
  else if (s.mode == 2)
    g += s.weightDecay * p;
  m = s.beta1 * m + (1.f - s.beta1) * g;
  v = s.beta2 * v + (1.f - s.beta2) * g * g;
  if (s.mode == 1) {
    p -= s.lrCorrected * m / (sqrtf(v) + s.epsilon);
    p -= s.lr * s.weightDecay * p;
  } else {
    float denom = sqrtf(v / s.bc2) + s.epsilon;
    p -= (s.lr * m) / (s.bc1 * denom);
  }
}

//===----------------------------------------------------------------------===//
// ai.onnx.preview.training Adam, Adagrad, Momentum (CPU only for now)
//===----------------------------------------------------------------------===//

/// onnx_adam's rate at step t: r sqrt(1 - beta^t) / (1 - alpha^t) in double
/// from step 1, r itself at step 0.
AMPRT_HD inline float onnxAdamRate(float r, int64_t t, float alpha,
                                   float beta) {
  if (t <= 0)
    return r;
  return float(double(r) * sqrt(1.0 - pow(double(beta), double(t))) /
               (1.0 - pow(double(alpha), double(t))));
}

/// onnx_adam on one element (x, its moments v, h; gradient g; `rate` from
/// onnxAdamRate).
AMPRT_HD inline void onnxAdamStep(float rate, float alpha, float beta,
                                  float epsilon, float normCoefficient,
                                  float normCoefficientPost, float g, float &x,
                                  float &v, float &h) {
  float gr = normCoefficient * x + g;
  v = alpha * v + (1.f - alpha) * gr;
  h = beta * h + (1.f - beta) * gr * gr;
  float xn = x - rate * (v / (sqrtf(h) + epsilon));
  x = (1.f - normCoefficientPost) * xn;
}

/// onnx_adagrad's rate at step t: r / (1 + t decay).
AMPRT_HD inline float onnxAdagradRate(float r, int64_t t, float decayFactor) {
  return r / (1.f + float(t) * decayFactor);
}

/// onnx_adagrad on one element (x, its squared-gradient sum h).
AMPRT_HD inline void onnxAdagradStep(float rate, float epsilon,
                                     float normCoefficient, float g, float &x,
                                     float &h) {
  float gr = normCoefficient * x + g;
  h += gr * gr;
  x -= rate * gr / (sqrtf(h) + epsilon);
}

/// onnx_momentum on one element (x, its velocity v); `b` is beta, or 1 at
/// step 0; nesterov: mode 1.
AMPRT_HD inline void onnxMomentumStep(float rate, float alpha, float b,
                                      float normCoefficient, int32_t mode,
                                      float g, float &x, float &v) {
  float gr = normCoefficient * x + g;
  v = alpha * v + b * gr;
  x -= mode ? rate * (gr + alpha * v) : rate * v;
}

//===----------------------------------------------------------------------===//
// Loss scaling (unscale_gate(_accumulate), loss_scaler_update)
//===----------------------------------------------------------------------===//

/// unscale_gate's element, v = pass ? x * s : 0, and what the output holds
/// after it: v (overwrite), else y + v (the accumulator y's old value).
AMPRT_HD inline float unscaleGateStep(float x, float y, float s, bool pass,
                                      bool overwrite) {
  float v = pass ? x * s : 0.f;
  return overwrite ? v : y + v;
}

/// PyTorch GradScaler's _amp_update_scale_, with bounds: the new scale from
/// s; `tracker` (the growth tracker) updated. An overflow (finite false)
/// backs off and resets the tracker; `interval` finite steps in a row grow
/// the scale, unless the product would be infinite; then the scale is
/// clamped to [minScale, maxScale] as std::min(std::max(s, min), max).
AMPRT_HD inline float lossScaleUpdate(float s, int64_t &tracker, bool finite,
                                      float growth, float backoff,
                                      int64_t interval, float minScale,
                                      float maxScale) {
  if (!finite) {
    s *= backoff;
    tracker = 0;
  } else {
    ++tracker;
    if (tracker >= interval) {
      float grown = s * growth;
      if (!nonFiniteF32(grown))
        s = grown;
      tracker = 0;
    }
  }
  s = s < minScale ? minScale : s;
  return maxScale < s ? maxScale : s;
}

} // namespace amprt

#endif // AMP_RUNTIME_MATH_OPTIMIZER_H

//===- Normalization.h - batch, layer and RMS normalization -----*- C++ -*-===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// The element formulas of the normalization kernels, one definition for the
// CPU kernels (Normalization.cpp) and the CUDA kernels
// (kernels/Normalization.cu): the inverse standard deviation, the running
// statistics, the normalized output and the input gradient. The statistics
// themselves are sums the callers take (in order on the CPU, as trees on the
// device, both in f64), so results agree within the order of those sums.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_RUNTIME_MATH_NORMALIZATION_H
#define AMP_RUNTIME_MATH_NORMALIZATION_H

#include "amp/Runtime/Math/HostDevice.h"

#include <cmath>

namespace amprt {

/// 1 / sqrt(var + epsilon) in double, kept as float (the saved inv_std).
AMPRT_HD inline float invStd(double var, float epsilon) {
  return float(1.0 / sqrt(var + double(epsilon)));
}

/// A running statistic after a batch: momentum old + (1 - momentum) batch,
/// in double.
AMPRT_HD inline float runningStat(float momentum, float old, double batch) {
  return float(double(momentum) * old + (1.0 - double(momentum)) * batch);
}

/// batch_norm_training's y: (x - mean) a + bias with a = inv_std * scale.
AMPRT_HD inline float batchNormApply(float x, float mean, float a, float bias) {
  return (x - mean) * a + bias;
}

/// batch_norm_grad's dx: a (dy - mean(dy) - xhat mean(dy xhat)) with a =
/// scale * inv_std and xhat = (x - mean) inv_std.
AMPRT_HD inline float batchNormGradDx(float a, float dy, float mdy, float xh,
                                      float mdyx) {
  return a * (dy - mdy - xh * mdyx);
}

/// layer_norm's y: (x - mean) inv_std scale + bias.
AMPRT_HD inline float layerNormApply(float x, float mean, float inv,
                                     float scale, float bias) {
  return (x - mean) * inv * scale + bias;
}

/// layer_norm_grad's dx: inv_std (gs - mean(gs) - xhat mean(gs xhat)) with
/// gs = dy scale.
AMPRT_HD inline float layerNormGradDx(float inv, float gs, float mg, float xh,
                                      float mgx) {
  return inv * (gs - mg - xh * mgx);
}

/// rms_norm's y: x inv_std scale (no mean, no bias).
AMPRT_HD inline float rmsNormApply(float x, float inv, float scale) {
  return x * inv * scale;
}

/// rms_norm_grad's dx: inv_std (gs - xhat mean(gs xhat)) with xhat = x
/// inv_std.
AMPRT_HD inline float rmsNormGradDx(float inv, float gs, float xh, float mgx) {
  return inv * (gs - xh * mgx);
}

} // namespace amprt

#endif // AMP_RUNTIME_MATH_NORMALIZATION_H

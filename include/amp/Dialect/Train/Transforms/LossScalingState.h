//===- LossScalingState.h - the loss scaler's graph inputs and outputs ----===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// The names of the state the loss-scaling pass adds to a training graph
// (docs/LossScaling.md): the scale and the growth tracker come in as graph
// inputs and go out, updated, as `<name>.out`; the all-finite flag is an
// output. A training loop feeds the outputs back (amp-run keeps them in
// onnxruntime-training checkpoints' property bag under the input names).
//
//===----------------------------------------------------------------------===//

#ifndef AMP_DIALECT_TRAIN_TRANSFORMS_LOSSSCALINGSTATE_H
#define AMP_DIALECT_TRAIN_TRANSFORMS_LOSSSCALINGSTATE_H

#include "llvm/ADT/StringRef.h"

namespace amp::train {

/// Graph input: the loss scale (f32 scalar).
inline constexpr llvm::StringLiteral kLossScaleName = "amp.loss_scale";
/// Graph input: the count of finite steps since the scale last changed (i64
/// scalar).
inline constexpr llvm::StringLiteral kGrowthTrackerName = "amp.growth_tracker";
/// Graph output: whether every checked gradient was finite (bool scalar).
inline constexpr llvm::StringLiteral kAllFiniteName = "amp.all_finite";
/// Each input's updated value is the graph output `<input><suffix>`.
inline constexpr llvm::StringLiteral kUpdatedSuffix = ".out";
/// Every name the pass makes starts with this.
inline constexpr llvm::StringLiteral kLossScalingNamePrefix = "amp.";

} // namespace amp::train

#endif // AMP_DIALECT_TRAIN_TRANSFORMS_LOSSSCALINGSTATE_H

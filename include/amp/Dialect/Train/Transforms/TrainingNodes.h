//===- TrainingNodes.h - accumulators and optimizers ------------*- C++ -*-===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// What the passes that rewrite a training step need to know of its nodes:
// which are gradient accumulators (onnxruntime-training's
// InPlaceAccumulator) and optimizers (com.microsoft's and
// ai.onnx.preview.training's), and where their gradients come in.
// loss-scaling gates them; train-data-parallel reduces their gradients
// across ranks.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_DIALECT_TRAIN_TRANSFORMS_TRAININGNODES_H
#define AMP_DIALECT_TRAIN_TRANSFORMS_TRAININGNODES_H

#include "amp/Dialect/Train/IR/TrainOps.h"

#include "llvm/ADT/SmallVector.h"

#include <optional>

namespace amp::train {

/// How an optimizer node takes its gradients and is gated.
struct OptimizerInfo {
  /// Operand index of `update_signal` (com.microsoft optimizers), or -1.
  int updateSignal = -1;
  /// Operand indices of the gradients.
  llvm::SmallVector<unsigned> gradientOperands;
  /// ai.onnx.preview.training: result i keeps operand keepOperand[i] when the
  /// step is skipped.
  llvm::SmallVector<unsigned> keepOperand;
};

/// Whether `op` is com.microsoft's InPlaceAccumulator (v1 or v2): operand
/// 0 the buffer, operand 1 the gradient added to it.
bool isAccumulator(mlir::Operation *op);

/// The optimizer `op` is (com.microsoft AdamWOptimizer, AdamOptimizer,
/// SGDOptimizerV2; ai.onnx.preview.training Adam, Adagrad, Momentum), or
/// nullopt.
std::optional<OptimizerInfo> getOptimizerInfo(mlir::Operation *op);

/// The gradients `graph` feeds its accumulators and optimizers, in the
/// order they are read (a sequence's elements in order; each once).
llvm::SmallVector<mlir::Value> getAccumulatedGradients(GraphOp graph);

} // namespace amp::train

#endif // AMP_DIALECT_TRAIN_TRANSFORMS_TRAININGNODES_H

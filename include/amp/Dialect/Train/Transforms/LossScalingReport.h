//===- LossScalingReport.h - What the loss-scaling pass did -----*- C++ -*-===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//

#ifndef AMP_DIALECT_TRAIN_TRANSFORMS_LOSSSCALINGREPORT_H
#define AMP_DIALECT_TRAIN_TRANSFORMS_LOSSSCALINGREPORT_H

#include "amp/Dialect/Train/Transforms/Passes.h"
#include "llvm/ADT/SmallVector.h"
#include <string>
#include <vector>

namespace amp::train {

/// What the loss-scaling pass did to one `train.graph` (one line of its
/// summary, docs/LossScaling.md).
struct LossScalingGraphRecord {
  std::string graph;
  /// ONNX names of the loss-gradient seeds that were scaled.
  llvm::SmallVector<std::string> seeds;
  /// Gradients unscaled and checked; accumulators, optimizers and other
  /// updates gated by the all-finite flag; gradient graph outputs unscaled.
  unsigned unscaled = 0, accumulators = 0, optimizers = 0, zeroed = 0,
           outputs = 0;
  /// An optimizer-only graph: the flag is a graph input.
  bool flagIsInput = false;
  /// The gradients are reduce-scattered (ZeRO): the flag is reduced with
  /// MIN over the data-parallel ranks.
  bool flagReduced = false;
  /// The graph had no loss gradient, gradients or optimizer.
  bool nothing = false;
};

/// The outcome of one run of the loss-scaling pass.
struct LossScalingReport {
  /// The options the pass ran with (mode, scale, growth and bounds).
  LossScalingOptions options;
  /// One record per graph of the module, in module order.
  std::vector<LossScalingGraphRecord> graphs;
};

} // namespace amp::train

#endif // AMP_DIALECT_TRAIN_TRANSFORMS_LOSSSCALINGREPORT_H

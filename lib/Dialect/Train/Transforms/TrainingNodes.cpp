//===- TrainingNodes.cpp - accumulators and optimizers --------------------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//

#include "amp/Dialect/Train/Transforms/TrainingNodes.h"
#include "amp/Dialect/Train/IR/OnnxSchema.h"

#include "llvm/ADT/SetVector.h"

using namespace mlir;
using namespace amp::train;

static StringRef domainOf(Operation *op) {
  return normalizeOnnxDomain(cast<OnnxNodeOpInterface>(op).getOnnxDomain());
}
static StringRef opTypeOf(Operation *op) {
  return cast<OnnxNodeOpInterface>(op).getOnnxOpType();
}

bool amp::train::isAccumulator(Operation *op) {
  return domainOf(op) == "com.microsoft" &&
         (opTypeOf(op) == "InPlaceAccumulator" ||
          opTypeOf(op) == "InPlaceAccumulatorV2") &&
         op->getNumOperands() >= 2;
}

std::optional<OptimizerInfo> amp::train::getOptimizerInfo(Operation *op) {
  StringRef d = domainOf(op), t = opTypeOf(op);
  unsigned n = op->getNumOperands();
  OptimizerInfo info;
  if (d == "com.microsoft") {
    if (t == "AdamWOptimizer" && n >= 4) {
      info.updateSignal = 6;
      info.gradientOperands = {3};
    } else if (t == "SGDOptimizerV2" && n >= 3) {
      info.updateSignal = 3;
      info.gradientOperands = {2};
    } else if (t == "AdamOptimizer" && n >= 4) {
      info.updateSignal = 9;
      info.gradientOperands = {3};
    } else {
      return std::nullopt;
    }
    return info;
  }
  if (d != "ai.onnx.preview.training")
    return std::nullopt;
  // Inputs R, T, X[n], G[n], state_1[n] ... state_k[n]; outputs X'[n],
  // state_1'[n] ... state_k'[n].
  unsigned states = t == "Adam"                           ? 2
                    : (t == "Adagrad" || t == "Momentum") ? 1
                                                          : 0;
  if (!states || n < 2 || (n - 2) % (2 + states) != 0)
    return std::nullopt;
  unsigned count = (n - 2) / (2 + states);
  if (op->getNumResults() != (1 + states) * count)
    return std::nullopt;
  for (unsigned j = 0; j < count; ++j)
    info.gradientOperands.push_back(2 + count + j);
  for (unsigned s = 0; s <= states; ++s)
    for (unsigned j = 0; j < count; ++j)
      info.keepOperand.push_back(2 + (s == 0 ? 0 : s + 1) * count + j);
  return info;
}

SmallVector<Value> amp::train::getAccumulatedGradients(GraphOp graph) {
  llvm::SetVector<Value> out;
  for (Operation &op : graph.getBody().front()) {
    if (!isa<OnnxNodeOpInterface>(op))
      continue;
    if (isAccumulator(&op)) {
      out.insert(op.getOperand(1));
      continue;
    }
    std::optional<OptimizerInfo> info = getOptimizerInfo(&op);
    if (!info)
      continue;
    for (unsigned i : info->gradientOperands) {
      Value g = op.getOperand(i);
      if (auto seq = g.getDefiningOp<SequenceConstructOp>())
        out.insert(seq->getOperands().begin(), seq->getOperands().end());
      else
        out.insert(g);
    }
  }
  return out.takeVector();
}

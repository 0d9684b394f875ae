//===- RangeCollector.h - value ranges over fp32 steps ----------*- C++ -*-===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// amp-run --collect-ranges stats.json: each training step runs call by
// call, and every tensor a call writes that holds a named ONNX value (the
// lowered form's `amprt.value`, or a graph input updated in place) is read
// back: its largest and smallest nonzero magnitude and how many of its
// nonzero values fall below fp16's smallest normal (a gradient's times the
// loss scale). The file is what auto-mixed-precision{ranges=...} reads
// (amp/Dialect/Train/Transforms/AMPRanges.h).
//
//===----------------------------------------------------------------------===//

#ifndef AMP_DRIVER_RANGECOLLECTOR_H
#define AMP_DRIVER_RANGECOLLECTOR_H

#include "amp/Dialect/Train/Transforms/AMPRanges.h"
#include "amp/Execution/Program.h"

#include "llvm/ADT/StringMap.h"

namespace amp::driver {

class RangeCollector {
public:
  /// Gradients are taken as the loss scaler would make them: times
  /// `lossScale` (the run's initial scale: initialLossScale, Trainer.h).
  explicit RangeCollector(double lossScale) : lossScale(lossScale) {}
  /// Runs `prog` (one step) call by call, recording what each call writes.
  llvm::Error runStep(exec::Program &prog, amprt_context *ctx);
  /// The ranges over the steps run so far.
  train::AMPRanges ranges() const;

private:
  struct Seen {
    double maxAbs = 0, minNonzero = 0;
    int64_t count = 0, nonzero = 0, below = 0;
    /// Elements that differ from their write's mean, and of them those
    /// fp16 and bf16 do not resolve (resolutionOf).
    int64_t varied = 0, unresolvedF16 = 0, unresolvedBF16 = 0;
    bool gradient = false;
  };
  double lossScale;
  /// Host buffers reused from value to value.
  std::vector<float> values;
  std::vector<char> scratch;
  int64_t steps = 0;
  llvm::StringMap<Seen> seen;
};

/// Whether ONNX value `name` is a gradient, by onnxruntime-training's
/// names (`<x>_grad`, its accumulation buffers, and `<node>_Grad/...`,
/// the values of a node's gradient subgraph).
bool isGradientName(llvm::StringRef name);

} // namespace amp::driver

#endif // AMP_DRIVER_RANGECOLLECTOR_H

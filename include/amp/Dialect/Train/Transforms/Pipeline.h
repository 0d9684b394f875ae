//===- Pipeline.h - Run the AMP pipeline from C++ ---------------*- C++ -*-===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// The C++ API of the AMP pipeline (auto-mixed-precision, then optionally
// loss-scaling) for programs that embed amp-mlir: build it from the passes'
// typed option structs, run it on a module, and get the summary, the per-node
// decisions, the inserted casts and the loss-scaling outcome back as data.
// See docs/Embedding.md.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_DIALECT_TRAIN_TRANSFORMS_PIPELINE_H
#define AMP_DIALECT_TRAIN_TRANSFORMS_PIPELINE_H

#include "amp/Dialect/Train/Transforms/AMPReport.h"
#include "amp/Dialect/Train/Transforms/LossScalingReport.h"
#include "amp/Dialect/Train/Transforms/Passes.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"
#include <optional>

namespace amp::train {

/// What to run. The passes' own summaries go to stderr only when their
/// `summary` option is set; the API returns them as data, so both default to
/// off here (unlike on the command line).
struct AMPPipelineOptions {
  AMPPipelineOptions() {
    amp.summary = false;
    lossScalingOptions.summary = false;
  }

  /// Run auto-mixed-precision (off: a data-parallel fp32 step).
  bool autoMixedPrecision = true;
  /// Options of auto-mixed-precision (mode, lists, keep-fp32, report=, ...).
  AutoMixedPrecisionOptions amp;
  /// Run train-data-parallel after auto-mixed-precision and before
  /// loss-scaling (whose check then sees the reduced gradients).
  std::optional<TrainDataParallelOptions> dataParallel;
  /// Run loss-scaling after auto-mixed-precision.
  bool lossScaling = false;
  /// Options of loss-scaling (dynamic/static, init scale, ...).
  LossScalingOptions lossScalingOptions;
  /// Verify the module after each pass.
  bool verifyEach = true;
};

/// What the pipeline did.
struct AMPPipelineResult {
  /// Summary counters, one record per processable node, inserted casts.
  AMPReport amp;
  /// Set when loss-scaling ran.
  std::optional<LossScalingReport> lossScaling;
};

/// Adds the pipeline's passes to `pm` (anchored on builtin.module). The
/// passes write their reports into `*result`, which must outlive `pm`.
void buildAMPPipeline(mlir::OpPassManager &pm,
                      const AMPPipelineOptions &options,
                      AMPPipelineResult &result);

/// Runs the pipeline on `module`. Errors (bad options, a graph the passes
/// reject) are reported as diagnostics on the module's context and give
/// failure; the module may then be partly rewritten.
mlir::FailureOr<AMPPipelineResult>
runAMPPipeline(mlir::ModuleOp module, const AMPPipelineOptions &options = {});

} // namespace amp::train

#endif // AMP_DIALECT_TRAIN_TRANSFORMS_PIPELINE_H

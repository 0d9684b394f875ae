//===- Passes.h - Train dialect transformation passes -----------*- C++ -*-===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//

#ifndef AMP_DIALECT_TRAIN_TRANSFORMS_PASSES_H
#define AMP_DIALECT_TRAIN_TRANSFORMS_PASSES_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include <memory>
#include <string>

namespace amp::train {

#define GEN_PASS_DECL
#include "amp/Dialect/Train/Transforms/Passes.h.inc"

struct AMPReport;
struct LossScalingReport;

/// Creates the auto-mixed-precision pass; each run stores its summary, node
/// decisions and inserted casts in `*report` (AMPReport.h), which must
/// outlive the pass.
std::unique_ptr<mlir::Pass>
createAutoMixedPrecision(AutoMixedPrecisionOptions options, AMPReport *report);

/// Creates the loss-scaling pass; each run stores what it rewrote in
/// `*report` (LossScalingReport.h), which must outlive the pass.
std::unique_ptr<mlir::Pass> createLossScaling(LossScalingOptions options,
                                              LossScalingReport *report);

#define GEN_PASS_REGISTRATION
#include "amp/Dialect/Train/Transforms/Passes.h.inc"

} // namespace amp::train

#endif // AMP_DIALECT_TRAIN_TRANSFORMS_PASSES_H

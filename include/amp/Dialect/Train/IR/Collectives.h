//===- Collectives.h - the collective nodes of data parallelism -*- C++ -*-===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// The nodes train-data-parallel adds to a training graph and the lowering
// turns into the runtime's collective calls: `org.amp-mlir:AllReduce`, a
// train.node whose outputs are its inputs reduced over the ranks
// (attribute `reduction`: "mean" or "sum"), one per bucket of gradients.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_DIALECT_TRAIN_IR_COLLECTIVES_H
#define AMP_DIALECT_TRAIN_IR_COLLECTIVES_H

#include "llvm/ADT/StringRef.h"

namespace amp::train {

/// The ONNX domain of amp-mlir's own nodes.
inline constexpr llvm::StringLiteral kAmpDomain = "org.amp-mlir";
/// Outputs = inputs reduced over the data-parallel ranks.
inline constexpr llvm::StringLiteral kAllReduceOpType = "AllReduce";
/// Its attribute: "mean" or "sum".
inline constexpr llvm::StringLiteral kReductionAttr = "reduction";
/// A unit attribute train-data-parallel puts on a training graph's batch
/// normalizations (BatchNormalization in training mode, BatchNormInternal,
/// BatchNormalizationGrad): statistics over every rank (SyncBatchNorm).
inline constexpr llvm::StringLiteral kSyncBatchNormAttr =
    "train.sync_batch_norm";

} // namespace amp::train

#endif // AMP_DIALECT_TRAIN_IR_COLLECTIVES_H

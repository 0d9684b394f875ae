//===- Collectives.h - the collective nodes of data parallelism -*- C++ -*-===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// The nodes train-data-parallel adds to a training graph and the lowering
// turns into the runtime's collective calls: `org.amp-mlir:AllReduce`, a
// train.node whose outputs are its inputs reduced over the ranks
// (attribute `reduction`: "mean" or "sum"; "min" for loss scaling's
// all-finite flag), one per bucket of gradients; and, when each parameter
// has an owner rank (ZeRO, amp-run --shard-optimizer),
// `org.amp-mlir:ReduceScatter`, whose outputs are the reduced inputs this
// rank owns.
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
/// Its attribute: "mean" or "sum" ("min": the all-finite flag, a bool).
inline constexpr llvm::StringLiteral kReductionAttr = "reduction";
/// Outputs = the inputs this rank owns, reduced over the ranks (attribute
/// `reduction` as AllReduce's). The inputs come in the order of their
/// owners (attribute `owners`, one rank per input, non-decreasing); rank
/// r's are packed, flattened, into part r of `ranks` equal parts (each
/// padded with zeros to the largest), the parts reduce-scattered, and rank
/// `rank` (attribute) unpacks its own: one output per input it owns, in
/// input order. One element type per node.
inline constexpr llvm::StringLiteral kReduceScatterOpType = "ReduceScatter";
inline constexpr llvm::StringLiteral kOwnersAttr = "owners";
inline constexpr llvm::StringLiteral kRankAttr = "rank";
inline constexpr llvm::StringLiteral kRanksAttr = "ranks";
/// A unit attribute train-data-parallel puts on a training graph's batch
/// normalizations (BatchNormalization in training mode, BatchNormInternal,
/// BatchNormalizationGrad): statistics over every rank (SyncBatchNorm).
inline constexpr llvm::StringLiteral kSyncBatchNormAttr =
    "train.sync_batch_norm";

} // namespace amp::train

#endif // AMP_DIALECT_TRAIN_IR_COLLECTIVES_H

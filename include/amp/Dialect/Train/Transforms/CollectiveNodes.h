//===- CollectiveNodes.h - building the collective nodes --------*- C++ -*-===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// The passes that add org.amp-mlir's collective nodes (Collectives.h) to a
// training graph: train-data-parallel (the gradients' buckets) and
// loss-scaling (the all-finite flag when each rank holds only its part of
// the reduced gradients).
//
//===----------------------------------------------------------------------===//

#ifndef AMP_DIALECT_TRAIN_TRANSFORMS_COLLECTIVENODES_H
#define AMP_DIALECT_TRAIN_TRANSFORMS_COLLECTIVENODES_H

#include "amp/Dialect/Train/IR/TrainOps.h"
#include "amp/Dialect/Train/Transforms/GraphEditor.h"

namespace amp::train {

/// A new `org.amp-mlir:<opType>` node at the editor's insertion point, of
/// `inputs` and results of `types`, with the ONNX attributes `attrs`,
/// named `name` (made unique); the domain is imported.
NodeOp createCollective(GraphEditor &editor, mlir::Location loc,
                        llvm::StringRef opType, mlir::TypeRange types,
                        mlir::ValueRange inputs,
                        llvm::ArrayRef<mlir::NamedAttribute> attrs,
                        llvm::StringRef name);

/// Whether `v` is an output of a ReduceScatter node, or a cast or identity
/// of one: a gradient reduced over the ranks that this rank owns, so the
/// rank sees only its part of the reduced gradients.
bool isReduceScattered(mlir::Value v);

} // namespace amp::train

#endif // AMP_DIALECT_TRAIN_TRANSFORMS_COLLECTIVENODES_H

//===- SymbolicDims.h - named symbolic dims and their sizes -----*- C++ -*-===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// ONNX names a dim it leaves open (`dim_param`: "batch", "seq"); the
// importer keeps the names as `train.dims` on graph inputs and in the
// graph's value_info entries. Passes bind them to sizes from a `dims`
// option ("batch=64,seq=128"): the lowering (train-bind-dims,
// convert-train-to-amprt) and the AMP report's Tensor Core sizes.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_DIALECT_TRAIN_IR_SYMBOLICDIMS_H
#define AMP_DIALECT_TRAIN_IR_SYMBOLICDIMS_H

#include "amp/Dialect/Train/IR/TrainOps.h"

#include "mlir/IR/Location.h"

#include "llvm/ADT/StringMap.h"

namespace amp::train {

/// Parses `text` ("batch=64,seq=128") into `out`; an error at `loc` naming
/// `what` (the pass) and the bad entry.
mlir::LogicalResult parseDimBindings(mlir::Location loc, llvm::StringRef what,
                                     llvm::StringRef text,
                                     llvm::StringMap<int64_t> &out);

/// The symbolic dim names of one graph's values: a graph input's
/// `train.dims`, a node output's value_info entry.
class SymbolicDimNames {
public:
  explicit SymbolicDimNames(mlir::FunctionOpInterface graph);
  /// The name of dim `d` of `value`, or empty (static, unnamed, unknown).
  llvm::StringRef get(mlir::Value value, unsigned d) const;

private:
  mutable mlir::FunctionOpInterface graph; // accessors are not const
  llvm::StringMap<mlir::ArrayAttr> byName;
};

} // namespace amp::train

#endif // AMP_DIALECT_TRAIN_IR_SYMBOLICDIMS_H

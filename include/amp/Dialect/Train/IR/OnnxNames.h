//===- OnnxNames.h - the ONNX names a train.graph records ---------*- C++
//-*-===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// The ONNX names of values as the importer records them in the IR (graph
// input names, initializer names, node output names, the inputs and outputs
// of subgraphs), read and renamed by the passes and the exporter alike.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_DIALECT_TRAIN_IR_ONNXNAMES_H
#define AMP_DIALECT_TRAIN_IR_ONNXNAMES_H

#include "amp/Dialect/Train/IR/TrainOps.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include <string>

namespace amp::train {

/// The ONNX name of `value`: the graph input's name, the initializer's name,
/// the producing node's output name, or a name made from the node's name.
std::string getOnnxValueName(mlir::FunctionOpInterface graph,
                             mlir::Value value);

/// Renames output `index` of the subgraph held by region `regionIndex` of
/// `holder` (If/Loop/Scan or any op with graph attributes) to `name`, the
/// name of the value its terminator now returns. Subgraph outputs are
/// positional, so the name is local to the subgraph. Does nothing when the
/// holder records no outputs for that region.
void setSubgraphOutputName(mlir::Operation *holder, unsigned regionIndex,
                           unsigned index, llvm::StringRef name);

/// Calls `fn` with the name of every input and output of the subgraphs that
/// `holder` records (none for an op without subgraphs).
void forEachSubgraphIOName(mlir::Operation *holder,
                           llvm::function_ref<void(llvm::StringRef)> fn);

} // namespace amp::train

#endif // AMP_DIALECT_TRAIN_IR_ONNXNAMES_H

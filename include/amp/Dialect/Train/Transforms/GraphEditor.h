//===- GraphEditor.h - ONNX-level edits of a train.graph --------*- C++ -*-===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// What a pass needs to add ONNX things to a `train.graph` so that the export
// stays valid ONNX: fresh node and value names, graph inputs and outputs with
// their names, initializers, and named nodes. Passes that add nodes share it
// so that every new node is named the same way.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_DIALECT_TRAIN_TRANSFORMS_GRAPHEDITOR_H
#define AMP_DIALECT_TRAIN_TRANSFORMS_GRAPHEDITOR_H

#include "amp/Dialect/Train/IR/OnnxNames.h"
#include "amp/Dialect/Train/IR/TrainOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include <string>

namespace amp::train {

class GraphEditor {
public:
  explicit GraphEditor(GraphOp graph);

  GraphOp getGraph() { return graph; }
  mlir::MLIRContext *getContext() { return graph.getContext(); }

  /// `base`, or `base_1`, `base_2`, ... : the first that no node (value) of
  /// the graph, its subgraphs or an earlier call uses. Reserves it.
  std::string uniqueNodeName(llvm::StringRef base);
  std::string uniqueValueName(llvm::StringRef base);

  /// The value the graph names `name` (input, initializer or node output of
  /// the top-level block), or null.
  mlir::Value lookup(llvm::StringRef name) const;

  /// The version of `domain` ("" = ONNX) in the module's opset imports, or 0.
  int64_t getOpsetVersion(llvm::StringRef domain);

  /// Imports `domain` at `version` in the module's opset imports unless it
  /// is imported (a node of a new domain needs it to be valid ONNX).
  void importOpset(llvm::StringRef domain, int64_t version);
  /// Appends a graph input named `name` (made unique) of `type`.
  mlir::BlockArgument addInput(llvm::StringRef name, mlir::Type type);
  /// Appends `value` to the graph outputs under its own ONNX name.
  void addOutput(mlir::Value value);
  /// Adds an initializer named `name` (made unique) at the top of the graph.
  mlir::Value addInitializer(llvm::StringRef name,
                             mlir::DenseElementsAttr value);

  /// Gives `op` (a new node) the node name `nodeBase` and to each result the
  /// value name `<nodeBase>` (one result) or `<nodeBase>_<i>`, all made
  /// unique. Returns `op`.
  mlir::Operation *name(mlir::Operation *op, llvm::StringRef nodeBase);
  /// Renames a node output (the value keeps its uses).
  void renameValue(mlir::Value value, llvm::StringRef newName);

  /// Builder whose insertion point new nodes are created at.
  mlir::OpBuilder builder;

private:
  GraphOp graph;
  llvm::StringSet<> usedNodeNames, usedValueNames;
  llvm::StringMap<mlir::Value> values;
};

} // namespace amp::train

#endif // AMP_DIALECT_TRAIN_TRANSFORMS_GRAPHEDITOR_H

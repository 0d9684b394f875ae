//===- CastNamer.h - Name the casts passes left unnamed ---------*- C++ -*-===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// Gives unnamed train.Cast nodes of a train.graph their ONNX node and output
// names in the IR, by the rule of CastNames.h (the rule
// the ONNX exporter applies to casts it finds unnamed).
//
//===----------------------------------------------------------------------===//

#ifndef AMP_DIALECT_TRAIN_IR_CASTNAMER_H
#define AMP_DIALECT_TRAIN_IR_CASTNAMER_H

#include "amp/Dialect/Train/IR/TrainOps.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/Support/StringSaver.h"

namespace amp::train {

/// The names in use in a graph that a generated cast name could clash with,
/// and fresh names taken from it (plain strings: nothing is interned). The
/// ONNX exporter names casts with it directly; CastNamer puts the names in
/// the IR.
class CastNameScope {
public:
  explicit CastNameScope(mlir::FunctionOpInterface graph) : graph(graph) {}

  /// The first of `base`, `base_1`, ... that no node (value) of the graph
  /// has and that no earlier call returned. Reserves it.
  llvm::StringRef takeNodeName(llvm::StringRef base);
  llvm::StringRef takeValueName(llvm::StringRef base);

private:
  void collect();
  llvm::StringRef take(llvm::DenseSet<llvm::StringRef> &used,
                       llvm::StringRef base);

  mlir::FunctionOpInterface graph;
  bool collected = false;
  /// Views of attribute storage, and of `saver` for names taken here.
  llvm::DenseSet<llvm::StringRef> usedNodeNames, usedValueNames;
  llvm::BumpPtrAllocator allocator;
  llvm::StringSaver saver{allocator};
};

class CastNamer {
public:
  explicit CastNamer(mlir::FunctionOpInterface graph)
      : graph(graph), scope(graph) {}

  /// Gives `cast` a node name if it has none, and an output name if it has
  /// none: `outputName` as it is when not empty, else the generated one.
  void name(CastOp cast, llvm::StringRef outputName = {});
  /// `base`, or `base_1`, ...: a value name no value of the graph has and
  /// that no earlier call gave. Reserves it.
  std::string uniqueValueName(llvm::StringRef base) {
    return scope.takeValueName(base).str();
  }

private:
  mlir::FunctionOpInterface graph;
  CastNameScope scope;
};

/// Names every unnamed cast of `graph` (block order, subgraphs included).
/// Returns how many casts it named.
unsigned nameUnnamedCasts(mlir::FunctionOpInterface graph);

} // namespace amp::train

#endif // AMP_DIALECT_TRAIN_IR_CASTNAMER_H

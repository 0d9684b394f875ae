//===- TrainOps.h - Train dialect ops ---------------------------*- C++ -*-===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//

#ifndef AMP_DIALECT_TRAIN_IR_TRAINOPS_H
#define AMP_DIALECT_TRAIN_IR_TRAINOPS_H

#include "amp/Dialect/Train/IR/OnnxSchema.h"
#include "amp/Dialect/Train/IR/TrainDialect.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/RegionKindInterface.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace amp::train {
/// Verifies an ONNX node op against its schema: input/output counts, the
/// kinds of its ONNX attributes, and required attributes.
mlir::LogicalResult verifyOnnxNode(mlir::Operation *op);
} // namespace amp::train

#include "amp/Dialect/Train/IR/TrainOpsInterfaces.h.inc"

#define GET_OP_CLASSES
#include "amp/Dialect/Train/IR/TrainOps.h.inc"

namespace amp::train {
/// The schema of an ONNX node op under the opset imports of its enclosing
/// graph, function or module (typed ops without one: the schema they were
/// generated from), or nullptr if unknown.
const OnnxOpSchema *getSchemaFor(OnnxNodeOpInterface op);
/// The opset version of `domain` ("" = ONNX) imported by the nearest
/// enclosing op with opset imports (the last entry wins), or -1.
int64_t getImportedOpsetVersion(mlir::Operation *op, llvm::StringRef domain);
/// The ONNX attribute `name` of node op `op`: an inherent attribute of a
/// typed op, an entry of a generic train.node's `attrs`; null if absent.
mlir::Attribute getOnnxAttribute(mlir::Operation *op, llvm::StringRef name);
/// The ONNX INT attribute `name` of `op`, or `dflt` when absent.
int64_t getOnnxInt(mlir::Operation *op, llvm::StringRef name, int64_t dflt);
/// The ONNX INTS attribute `name` of `op` (a scalar where a list is meant
/// counts as a list of one), or nullopt when absent.
std::optional<llvm::SmallVector<int64_t>> getOnnxInts(mlir::Operation *op,
                                                      llvm::StringRef name);
} // namespace amp::train

#endif // AMP_DIALECT_TRAIN_IR_TRAINOPS_H

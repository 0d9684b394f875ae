//===- AMPOpInterface.h - AMP on any dialect --------------------*- C++ -*-===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//

#ifndef AMP_INTERFACES_AMPOPINTERFACE_H
#define AMP_INTERFACES_AMPOPINTERFACE_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/OpDefinition.h"
#include "llvm/ADT/SmallVector.h"

namespace amp {

/// Operands and results of one op that share one element type.
struct AMPTypeGroup {
  llvm::SmallVector<unsigned, 4> operands, results;
};

/// `value` (a float scalar or a shaped value of floats) converted to element
/// type `type` with `arith.extf` or `arith.truncf`.
mlir::Value buildArithAMPCast(mlir::OpBuilder &builder, mlir::Location loc,
                              mlir::Value value, mlir::Type type);

/// The element type of a scalar or shaped type.
mlir::Type getAMPElementType(mlir::Type type);

/// `type` with its element type replaced by `elementType`.
mlir::Type withAMPElementType(mlir::Type type, mlir::Type elementType);

/// Attaches AMPOpInterface external models to upstream ops: linalg named
/// ops, arith and math float ops, tosa (docs/Embedding.md lists them).
void registerAMPExternalModels(mlir::DialectRegistry &registry);

} // namespace amp

#include "amp/Interfaces/AMPOpInterface.h.inc"

#endif // AMP_INTERFACES_AMPOPINTERFACE_H

//===- AmpRT.h - the amprt dialect --------------------------------*- C++
//-*-===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//

#ifndef AMP_DIALECT_AMPRT_AMPRT_H
#define AMP_DIALECT_AMPRT_AMPRT_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"

#include "amp/Dialect/AmpRT/KernelABI.h"

#include "amp/Dialect/AmpRT/AmpRTDialect.h.inc"

#define GET_OP_CLASSES
#include "amp/Dialect/AmpRT/AmpRTOps.h.inc"

namespace amp::amprt {

/// One tensor parameter of a call being made: its name in Ops.def and its
/// buffers (none: NULL; several: an array).
struct TensorArg {
  llvm::StringRef name;
  mlir::ValueRange buffers;
};

/// Creates `amprt.call kernel` at `builder`'s point: the tensors by
/// parameter name (a parameter not named is absent, count 0), every other
/// parameter from `attrs` (and `node`). The kernel and the names must be
/// Ops.def's (asserted).
CallOp createCall(mlir::OpBuilder &builder, mlir::Location loc,
                  llvm::StringRef kernel, llvm::ArrayRef<TensorArg> tensors,
                  llvm::ArrayRef<mlir::NamedAttribute> attrs);

} // namespace amp::amprt

#endif // AMP_DIALECT_AMPRT_AMPRT_H

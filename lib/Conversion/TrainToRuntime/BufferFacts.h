//===- BufferFacts.h - what the fusion patterns ask of a buffer -*- C++ -*-===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// Private to lib/Conversion/TrainToRuntime: the rewrite patterns of
// `amprt-fuse` (FusePatterns.h) run on the unplanned form of a lowered
// function (PlannedProgram.h), where every buffer is an SSA value: an
// argument, a `memref.get_global` (a constant) or a `memref.alloc` (a
// temporary). A fusion is safe when it knows who reads and writes a buffer,
// in call order: this header answers that from the IR, as
// PlannedProgram::callUses() does for the planned calls as data.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_LIB_CONVERSION_TRAINTORUNTIME_BUFFERFACTS_H
#define AMP_LIB_CONVERSION_TRAINTORUNTIME_BUFFERFACTS_H

#include "amp/Dialect/AmpRT/AmpRT.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributeInterfaces.h"
#include "mlir/IR/PatternMatch.h"

namespace amp::lowering {

/// One naming of a buffer by a call: the call, the operand's index (a
/// call's operands are its tensors) and the name of the tensor parameter it
/// is passed as.
struct BufferUse {
  amprt::CallOp call;
  unsigned operand;
  mlir::StringRef param;
};

/// The calls that name `buffer`, in call order (a call naming it twice
/// comes twice, in operand order). The function's return is no call.
llvm::SmallVector<BufferUse, 4> bufferUses(mlir::Value buffer);
/// Whether `buffer` is a temporary: a `memref.alloc` of the function.
bool isTemporary(mlir::Value buffer);
/// Whether the function returns `buffer` (a graph output).
bool isReturned(mlir::Value buffer);
/// Whether some call writes `buffer` over what it held
/// (amprt::CallOp::writesInPlace).
bool isWrittenInPlace(mlir::Value buffer);
/// The value of a constant buffer (a `memref.get_global` of a constant
/// global), or null.
mlir::ElementsAttr constantValue(mlir::Value buffer);
/// The element type of `buffer`'s memref type.
mlir::Type elementType(mlir::Value buffer);
/// The shape of `buffer`'s memref type.
llvm::ArrayRef<int64_t> bufferShape(mlir::Value buffer);

/// Whether `buffer` holds its value before `call` runs: an input or a
/// constant, or a temporary (in the unplanned form) first named, so
/// written, by an earlier call.
bool holdsValueBefore(mlir::Value buffer, amprt::CallOp call);

/// The calls of `kernel` in `func`'s body.
bool isCallOf(mlir::Operation *op, llvm::StringRef kernel);

/// A constant buffer holding `value` in `func`: a `memref.global` beside the
/// function and a `memref.get_global` after the function's last buffer, so
/// that reading the function back numbers it after every buffer it has, as
/// PlannedProgram's record form does. With `shared`, a constant buffer of
/// the same value made so before (kSharedConstAttr) is reused, and a new one
/// is marked so.
mlir::Value createConstantBuffer(mlir::RewriterBase &rewriter,
                                 mlir::func::FuncOp func,
                                 mlir::ElementsAttr value, bool shared);

/// Puts `builder` after the last buffer of `func` (its last `memref.alloc`
/// or `memref.get_global`), where a new buffer goes so that reading the
/// function back numbers it after every buffer it has.
void setInsertionPointAfterBuffers(mlir::OpBuilder &builder,
                                   mlir::func::FuncOp func);

/// Erases the buffers of `func` that nothing names any more, and the
/// globals that nothing reads then.
void eraseUnusedBuffers(mlir::func::FuncOp func);

} // namespace amp::lowering

#endif // AMP_LIB_CONVERSION_TRAINTORUNTIME_BUFFERFACTS_H

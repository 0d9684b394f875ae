//===- OnnxTypes.h - ONNX <-> MLIR type mapping -----------------*- C++ -*-===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// The mapping between ONNX element types (TensorProto.DataType numbers) and
// MLIR element types, and the ONNX type strings ("tensor(float16)") that
// schema type constraints use. Kept free of protobuf so the IR library and
// the AMP pass can use it.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_DIALECT_TRAIN_IR_ONNXTYPES_H
#define AMP_DIALECT_TRAIN_IR_ONNXTYPES_H

#include "mlir/IR/Types.h"
#include <optional>
#include <string>

namespace amp::train {

/// The MLIR element type of ONNX data type `dataType`, or a null type if the
/// number is not a known ONNX data type.
mlir::Type getElementTypeForOnnxDataType(mlir::MLIRContext *ctx,
                                         int32_t dataType);

/// The ONNX data type number of an MLIR element type, if it has one.
std::optional<int32_t> getOnnxDataType(mlir::Type elementType);

/// The ONNX spelling of an element type ("float16"), or "" if none.
llvm::StringRef getOnnxElementTypeName(mlir::Type elementType);

/// The ONNX type string of a value type ("tensor(float)",
/// "seq(tensor(int64))", "optional(tensor(bool))", "map(int64,tensor(float))",
/// "sparse_tensor(float)"), or "" for types with no ONNX spelling
/// (`!train.unknown`, `none`).
std::string getOnnxTypeString(mlir::Type type);

/// Size in bytes of one element of `dataType` for fixed-size types; 0 for
/// strings; for 4-bit types, 0 too (use getOnnxDataTypeBits).
unsigned getOnnxDataTypeBits(int32_t dataType);

} // namespace amp::train

#endif // AMP_DIALECT_TRAIN_IR_ONNXTYPES_H

//===- ExportONNX.h - train dialect to ONNX protobuf ------------*- C++ -*-===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//

#ifndef AMP_TARGET_ONNX_EXPORTONNX_H
#define AMP_TARGET_ONNX_EXPORTONNX_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/raw_ostream.h"

namespace amp {

/// Writes `module` (a train-dialect module: one train.graph, optional
/// train.function ops) as a serialized ONNX ModelProto to `os`. Large tensor
/// data is streamed from its resource blob, never copied into a protobuf
/// string. Emits diagnostics and returns failure if the module cannot be
/// expressed in ONNX.
mlir::LogicalResult exportOnnxModel(mlir::ModuleOp module,
                                    llvm::raw_ostream &os);

/// Registers the `--export-onnx` translation.
void registerToOnnxTranslation();

} // namespace amp

#endif // AMP_TARGET_ONNX_EXPORTONNX_H

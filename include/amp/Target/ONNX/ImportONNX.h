//===- ImportONNX.h - ONNX protobuf to train dialect ------------*- C++ -*-===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//

#ifndef AMP_TARGET_ONNX_IMPORTONNX_H
#define AMP_TARGET_ONNX_IMPORTONNX_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/MemoryBufferRef.h"
#include <cstdint>
#include <string>

namespace amp {

struct ImportOnnxOptions {
  /// Folder that external-data paths are resolved against (and must stay
  /// inside). Empty: the folder of the model file.
  std::string externalDataDir;
  /// Tensors with at least this many bytes are held as dense resources (out
  /// of the IR text body, no copy of the data); smaller ones inline.
  uint64_t resourceThresholdBytes = 1024;
};

/// Imports the ONNX model in `buffer` (named by its identifier, used in
/// diagnostics) into a new module. Diagnostics go to the context's handler;
/// returns null on error.
mlir::OwningOpRef<mlir::ModuleOp>
importOnnxModel(llvm::MemoryBufferRef buffer, mlir::MLIRContext *context,
                const ImportOnnxOptions &options = {});

/// Imports the ONNX model file at `path`, streaming it from disk (no copy of
/// the whole file in memory).
mlir::OwningOpRef<mlir::ModuleOp>
importOnnxFile(llvm::StringRef path, mlir::MLIRContext *context,
               const ImportOnnxOptions &options = {});

/// Whether the regular file at `path` starts like a binary model rather
/// than text: an ONNX Runtime ORT-format model (FlatBuffer identifier
/// "ORTM"), or a first byte that is not printable ASCII or white space (a
/// serialized ModelProto starts with a field tag, ir_version's 0x08
/// first). For tools that take ONNX or MLIR whatever the file is called
/// (`model.pb`). False when the file is not a regular file (a pipe cannot
/// be looked at without consuming it), cannot be read or is empty.
bool startsLikeBinaryModel(llvm::StringRef path);

/// The same test on a model's first bytes (at least the first 8, when the
/// input has them).
bool isBinaryModelHead(llvm::StringRef head);

/// Registers the `--import-onnx` translation.
void registerFromOnnxTranslation();

} // namespace amp

#endif // AMP_TARGET_ONNX_IMPORTONNX_H

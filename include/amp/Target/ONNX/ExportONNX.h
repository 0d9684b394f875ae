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

/// Where the exporter puts the main graph's initializers.
enum class ExternalDataMode {
  /// Tensors that were external data on import stay external; the others
  /// are written inline, unless the model would pass protobuf's 2 GiB:
  /// then every tensor of at least `sizeThreshold` bytes goes to the data
  /// file, with a remark saying so.
  Auto,
  /// Every tensor of at least `sizeThreshold` bytes goes to the data file.
  Always,
  /// Everything inline; a model over 2 GiB is an error.
  Never,
};

struct ExportOnnxOptions {
  ExternalDataMode externalData = ExternalDataMode::Auto;
  /// The data file, relative to the model's folder; "" is the model's file
  /// name plus ".data", as onnx.save_model names it.
  std::string location;
  /// The smallest tensor (in bytes) that Always moves out (onnx.save_model's
  /// size_threshold).
  uint64_t sizeThreshold = 1024;
  /// The file the model is written to, which the data file goes next to;
  /// "" or "-" (standard output) allows no external data.
  std::string modelPath;
  /// The largest model written as one protobuf: protobuf's 2 GiB. Tests
  /// lower it to exercise the large-model paths on small models.
  uint64_t protobufLimit = (uint64_t(1) << 31) - 1;
};

/// Writes `module` (a train-dialect module: one train.graph, optional
/// train.function ops) as a serialized ONNX ModelProto to `os`, and the
/// external data, if any, to its own file next to `options.modelPath`
/// (written under a temporary name and renamed once the model is written).
/// Large tensor data is streamed from its resource blob, never copied into a
/// protobuf string, and copied file to file when it was mapped from an
/// external data file on import. A model that would pass protobuf's 2 GiB
/// is never written. Emits diagnostics and returns failure if the module
/// cannot be expressed in ONNX or a file cannot be written.
mlir::LogicalResult exportOnnxModel(mlir::ModuleOp module,
                                    llvm::raw_ostream &os,
                                    const ExportOnnxOptions &options = {});

/// Registers the command-line options --onnx-external-data=auto|always|never,
/// --onnx-external-data-location and --onnx-external-data-threshold (for
/// amp-opt and amp-translate).
void registerExportOnnxCLOptions();
/// Their values, for a model written to `modelPath`.
ExportOnnxOptions getExportOnnxCLOptions(llvm::StringRef modelPath);

/// Registers the `--export-onnx` translation.
void registerToOnnxTranslation();

} // namespace amp

#endif // AMP_TARGET_ONNX_EXPORTONNX_H

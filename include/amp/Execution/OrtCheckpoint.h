//===- OrtCheckpoint.h - ONNX Runtime training checkpoints ------*- C++ -*-===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// Reads the parameters of the `checkpoint` file that onnxruntime-training's
// generate_artifacts writes next to training_model.onnx (and that
// CheckpointState.save_checkpoint writes): a FlatBuffer with the file
// identifier "ODTC" holding the module state (trainable and frozen
// parameters as tensors), optimizer groups (step count and per-parameter
// moments) and a property bag. The property bag is not read.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_EXECUTION_ORTCHECKPOINT_H
#define AMP_EXECUTION_ORTCHECKPOINT_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace amp::exec {

struct OrtCheckpointTensor {
  std::string name;
  int32_t onnxType = 0; ///< ONNX TensorProto data type (ORT uses the same)
  std::vector<int64_t> dims;
  std::vector<char> data; ///< little-endian, row-major
  bool trainable = false; ///< requires_grad_params (else frozen_params)
};

/// One optimizer state tensor of a parameter: ORT names an AdamW's first
/// and second moments "momentum0" and "momentum1".
struct OrtCheckpointMoment {
  std::string param, moment;
  OrtCheckpointTensor tensor;
};

struct OrtCheckpoint {
  std::vector<OrtCheckpointTensor> params;
  /// The optimizer state, when the checkpoint was saved with it (one
  /// optimizer group): the number of optimizer steps taken and the moments.
  std::optional<int64_t> optimizerStep;
  std::vector<OrtCheckpointMoment> moments;
};

/// True when `bytes` start like an ONNX Runtime training checkpoint (the
/// FlatBuffer file identifier "ODTC").
bool isOrtCheckpoint(llvm::StringRef bytes);

/// True when the file at `path` starts like one (reads 8 bytes).
bool isOrtCheckpointFile(llvm::StringRef path);

/// The `checkpoint` that generate_artifacts writes next to
/// `trainingModelPath`, if that file exists and is an ONNX Runtime training
/// checkpoint; else "".
std::string findArtifactsCheckpoint(llvm::StringRef trainingModelPath);

/// Reads and verifies the checkpoint at `path`. Errors name the file and
/// what is wrong: not a checkpoint, a buffer that fails FlatBuffers'
/// verification (truncated, corrupt), a nominal checkpoint (no values), a
/// tensor whose data does not match its type and dims, data kept in an
/// external file, or more than one optimizer group.
llvm::Expected<OrtCheckpoint> readOrtCheckpoint(llvm::StringRef path);

} // namespace amp::exec

#endif // AMP_EXECUTION_ORTCHECKPOINT_H

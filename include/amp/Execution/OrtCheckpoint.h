//===- OrtCheckpoint.h - ONNX Runtime training checkpoints ------*- C++ -*-===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// Reads and writes the `checkpoint` file that onnxruntime-training's
// generate_artifacts writes next to training_model.onnx (and that
// CheckpointState.save_checkpoint writes): a FlatBuffer with the file
// identifier "ODTC" holding the module state (trainable and frozen
// parameters as tensors), optimizer groups (step count, learning rate and
// per-parameter moments) and a property bag (named int64, float and string
// values).
//
//===----------------------------------------------------------------------===//

#ifndef AMP_EXECUTION_ORTCHECKPOINT_H
#define AMP_EXECUTION_ORTCHECKPOINT_H

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include <cstdint>
#include <map>
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

/// The property bag: user values by name (ORT's CheckpointState.properties).
struct OrtCheckpointProperties {
  std::map<std::string, int64_t> ints;
  std::map<std::string, float> floats;
  std::map<std::string, std::string> strings;
  bool empty() const { return ints.empty() && floats.empty() && strings.empty(); }
};

struct OrtCheckpoint {
  std::vector<OrtCheckpointTensor> params;
  /// The optimizer state, when the checkpoint was saved with it (one
  /// optimizer group): the number of optimizer steps taken, the learning
  /// rate and the moments.
  std::optional<int64_t> optimizerStep;
  float initialLearningRate = 0;
  std::vector<OrtCheckpointMoment> moments;
  OrtCheckpointProperties properties;
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
/// external file, more than one optimizer group, or a name used twice.
llvm::Expected<OrtCheckpoint> readOrtCheckpoint(llvm::StringRef path);

/// The checkpoint as onnxruntime-training 1.19 writes it (format version 2,
/// everything in one buffer): `params` split into requires_grad_params and
/// frozen_params by their `trainable` flag, one optimizer group "group0"
/// when `optimizerStep` is set (every trainable parameter gets an entry,
/// with the moments `moments` lists for it), and the property bag. Fails
/// when a tensor's data does not match its type and dims, or when the
/// whole does not fit in one FlatBuffer (2 GB; ORT keeps larger models'
/// tensors in an external file). The bytes go to `write`, which returns
/// encodeOrtCheckpoint's result.
llvm::Error
encodeOrtCheckpoint(const OrtCheckpoint &ckpt,
                    llvm::function_ref<llvm::Error(llvm::StringRef bytes)> write);

} // namespace amp::exec

#endif // AMP_EXECUTION_ORTCHECKPOINT_H

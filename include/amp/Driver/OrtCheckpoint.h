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
// values). Large models keep the tensors in `<checkpoint>.data` instead
// (ModuleState.has_external_data; each tensor's external_data_offset).
//
//===----------------------------------------------------------------------===//

#ifndef AMP_DRIVER_ORTCHECKPOINT_H
#define AMP_DRIVER_ORTCHECKPOINT_H

#include "amp/Driver/TensorStream.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace amp::driver {

struct OrtCheckpointTensor {
  std::string name;
  int32_t onnxType = 0; ///< ONNX TensorProto data type (ORT uses the same)
  std::vector<int64_t> dims;
  /// Little-endian, row-major. Read from a checkpoint: a range of the
  /// checkpoint file or of its external data file.
  TensorBytes data;
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
  bool empty() const {
    return ints.empty() && floats.empty() && strings.empty();
  }
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

/// onnxruntime-training's threshold (1.19, SaveCheckpoint): artifacts whose
/// parameters hold at least this many bytes keep them in
/// `<checkpoint>.data`.
constexpr uint64_t kOrtExternalDataThreshold = uint64_t(1800) << 20;

/// The external data file of the checkpoint at `path`, as ORT names it.
std::string ortExternalDataPath(llvm::StringRef path);

/// Reads and verifies the checkpoint at `path`; the tensors' bytes are left
/// where they are (the checkpoint file, or `<path>.data` when its module
/// state says it has external data) until they are copied. Errors name the
/// file and what is wrong: not a checkpoint, a buffer that fails
/// FlatBuffers' verification (truncated, corrupt), a nominal checkpoint (no
/// values), a tensor whose data does not match its type and dims, a missing
/// external data file or a tensor past its end (the tensor and file
/// named), more than one optimizer group, or a name used twice.
llvm::Expected<OrtCheckpoint> readOrtCheckpoint(llvm::StringRef path);

/// Writes the checkpoint as onnxruntime-training 1.19 writes it (format
/// version 2): `params` split into requires_grad_params and frozen_params by
/// their `trainable` flag, one optimizer group "group0" when `optimizerStep`
/// is set (every trainable parameter gets an entry, with the moments
/// `moments` lists for it), and the property bag. With `externalData` every
/// tensor's bytes go to `<path>.data` (ORT's layout: 4-byte aligned, 8 for
/// 64-bit types; ORT 1.19 keeps only parameters there and reads moments
/// from it too), else into the FlatBuffer (at most 2 GB). Streamed: the
/// tables are built first, then each tensor's bytes go from their source to
/// the file in pieces. Both files go through `.tmp` and a rename (the data
/// file first). Fails, naming the tensor, when its data does not match its
/// type and dims.
llvm::Error writeOrtCheckpoint(const OrtCheckpoint &ckpt, llvm::StringRef path,
                               bool externalData);

} // namespace amp::driver

#endif // AMP_DRIVER_ORTCHECKPOINT_H

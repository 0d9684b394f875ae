//===- Checkpoint.h - amp-run's own checkpoint file -------------*- C++ -*-===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// amp-run's --checkpoint / --resume file: the loop's counters and every
// state tensor by name (docs/amp-run.md, "Checkpoints"). Written as a
// stream, tensor by tensor from where the state lies, with the checksum
// computed on the way; read by mapping the file a window at a time, the
// tensors left in the file until they are copied to their buffers.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_DRIVER_CHECKPOINT_H
#define AMP_DRIVER_CHECKPOINT_H

#include "amp/Driver/TensorStream.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace amp::driver {

/// The training loop's counters.
struct CheckpointCounters {
  uint64_t steps = 0, optimizerStep = 0, skipped = 0;
  double lr = 0;
};

/// Writes `counters` and `tensors` to `path` in the current format
/// (AMPCKPT2) through `<path>.tmp`, fsync and a rename. Each tensor's bytes
/// go from their source to the file in pieces: writing adds at most one
/// piece (kTensorPieceBytes) to the memory in use.
llvm::Error writeCheckpoint(llvm::StringRef path,
                            const CheckpointCounters &counters,
                            llvm::ArrayRef<StoredTensor> tensors);

struct CheckpointContents {
  CheckpointCounters counters;
  /// Their bytes are ranges of the checkpoint file (TensorBytes::inFile).
  std::vector<StoredTensor> tensors;
};

/// Reads the checkpoint at `path` (AMPCKPT2, or AMPCKPT1 as amp-run wrote
/// it before): its layout and its checksum are verified, reading the file
/// once, a mapped window at a time. The tensors' bytes stay in the file.
/// Errors name the file and say what is wrong (not a checkpoint, ONNX
/// Runtime's checkpoint, truncated, bad record, checksum mismatch).
llvm::Expected<CheckpointContents> readCheckpoint(llvm::StringRef path);

} // namespace amp::driver

#endif // AMP_DRIVER_CHECKPOINT_H

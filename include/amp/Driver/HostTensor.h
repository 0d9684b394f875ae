//===- HostTensor.h - tensors on the host, in and out of files --*- C++ -*-===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// A tensor in host memory with an amprt dtype, and its files: ONNX
// TensorProto (.pb, as ONNX's test data sets and amp-run's data folders hold
// them) and NumPy .npy. Shared by the training loop (data, weights) and the
// one-shot graph runner (inputs, expected outputs).
//
//===----------------------------------------------------------------------===//

#ifndef AMP_DRIVER_HOSTTENSOR_H
#define AMP_DRIVER_HOSTTENSOR_H

#include "amp/Driver/TensorStream.h"
#include "amp/Runtime/Runtime.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace onnx {
class TensorProto;
} // namespace onnx

namespace amp::driver {

/// A host tensor: dtype (AMPRT_*), shape, bytes.
struct HostTensor {
  int32_t dtype = AMPRT_F32;
  std::vector<int64_t> shape;
  std::vector<char> data;
  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : shape)
      n *= d;
    return n;
  }
};

/// A shape as "[2, ?, 3]" (a negative, dynamic dim as "?"), for messages.
std::string shapeString(llvm::ArrayRef<int64_t> shape);

/// The amprt dtype of an ONNX TensorProto data type, or -1.
int32_t dtypeOfOnnx(int onnxType);
/// dtypeOfOnnx's inverse (TensorProto::UNDEFINED for none).
int onnxOfDtype(int32_t dtype);

/// `t`'s values; external data is read from files in `dir` (the folder of
/// the model or data file that holds `t`).
llvm::Expected<HostTensor> fromTensorProto(const onnx::TensorProto &t,
                                           llvm::StringRef dir);
/// `t`'s values, moved out of it (raw data) or left in their file
/// (external data, mapped): no copy of large bytes.
llvm::Expected<StoredTensor> takeTensorProto(onnx::TensorProto &t,
                                             llvm::StringRef dir);
/// `h` as a TensorProto named `name` (raw data).
void toTensorProto(const HostTensor &h, llvm::StringRef name,
                   onnx::TensorProto &t);

/// Reads a .npy file (format 1.0/2.0, little-endian, C order).
llvm::Expected<HostTensor> readNpy(llvm::StringRef path);
/// Reads a serialized TensorProto (.pb); `name`, when given, gets its name.
llvm::Expected<HostTensor> readTensorProtoFile(llvm::StringRef path,
                                               std::string *name = nullptr);

/// Whether `name` (a graph input's or output's) can name a file in a data
/// folder as <name>.npy / <name>.pb: no path separator, not "." or "..", so
/// that a model cannot point amp-run outside the folder.
bool isPlainFileName(llvm::StringRef name);

/// The tensor of a data folder named after a graph value: `dir`/<name>.npy,
/// else `dir`/<name>.pb; nullopt when neither exists or `name` is not a
/// plain file name (isPlainFileName).
llvm::Expected<std::optional<HostTensor>> readNamedTensor(llvm::StringRef dir,
                                                          llvm::StringRef name);

/// Writes `bytes` to `path` through a temporary file and a rename, so a
/// failure leaves any existing file untouched.
llvm::Error writeAtomically(llvm::StringRef path, llvm::StringRef bytes);

} // namespace amp::driver

#endif // AMP_DRIVER_HOSTTENSOR_H

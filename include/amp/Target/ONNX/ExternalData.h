//===- ExternalData.h - ONNX tensors stored outside the model ---*- C++ -*-===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// ONNX external data (TensorProto.data_location EXTERNAL: the bytes live in a
// file next to the model, at `location`, `offset`, `length`), read and
// written. Shared by the importer and exporter and by amp-run's weights,
// checkpoints and -o, so that all of them refuse the same unsafe paths and
// lay files out the same way.
//
// Weights pass through the heap at most once: reading maps the file;
// writing copies file to file (copy_file_range) when the bytes came from a
// mapped external data file, and writes from memory otherwise.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_TARGET_ONNX_EXTERNALDATA_H
#define AMP_TARGET_ONNX_EXTERNALDATA_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/MemoryBuffer.h"
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace onnx {
class TensorProto;
} // namespace onnx

namespace amp {

/// The largest serialized protobuf message: 2 GiB - 1 (protobuf's limit,
/// which ONNX models share).
constexpr uint64_t kMaxProtobufBytes = (uint64_t(1) << 31) - 1;

/// Where a tensor's bytes lie in a file.
struct ExternalDataSource {
  std::string path; ///< the real path of the data file
  uint64_t offset = 0;
};

/// The `expectedBytes` bytes of `tensor`'s external data, mapped when large.
/// Its `location` must be a relative path that stays inside `modelDir` (no
/// "..", and symlinks resolve inside it); `offset` and `length` must lie
/// within the file, and `length` (when given) must be `expectedBytes`. The
/// error message says which rule failed ("external data location 'x' leaves
/// the model folder", ...), without naming the tensor. `source`, when
/// given, receives the file and offset the bytes came from.
llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>>
readOnnxExternalData(const onnx::TensorProto &tensor, llvm::StringRef modelDir,
                     int64_t expectedBytes,
                     ExternalDataSource *source = nullptr);

/// Records that the `size` bytes at `data` are a mapping of `source`, so a
/// writer can copy them file to file instead of reading them into memory.
/// The importer registers every tensor it maps from an external data file
/// and forgets it when the mapping goes (forgetExternalDataSource).
void registerExternalDataSource(const void *data, size_t size,
                                ExternalDataSource source);
void forgetExternalDataSource(const void *data);
/// The source of exactly the `size` bytes at `data`, if registered.
std::optional<ExternalDataSource> findExternalDataSource(const void *data,
                                                         size_t size);

/// The data file name onnx.save_model uses for a model written to
/// `modelPath` with external data: its file name plus ".data".
std::string defaultExternalDataLocation(llvm::StringRef modelPath);

/// Checks a `location` to write: a relative path inside the model's
/// folder (not absolute, no ".." component, not empty).
llvm::Error checkExternalDataLocation(llvm::StringRef location);

/// Writes one ONNX external data file for a model written to `modelPath`:
/// tensors are appended in order, each at an offset aligned as onnx's
/// save_model aligns them (tensors of at least 1 MiB start at a multiple of
/// 64 KiB, the mmap granularity of every platform), and the tensor proto is
/// set to point at them (data_location EXTERNAL, location, offset, length;
/// raw_data and typed data cleared). The file is written under a temporary
/// name in the same folder and only appears under its name on commit();
/// a writer destroyed without commit() removes it.
class ExternalDataWriter {
public:
  static llvm::Expected<std::unique_ptr<ExternalDataWriter>>
  create(llvm::StringRef modelPath, llvm::StringRef location);
  ~ExternalDataWriter();
  ExternalDataWriter(const ExternalDataWriter &) = delete;
  ExternalDataWriter &operator=(const ExternalDataWriter &) = delete;

  /// Appends `bytes` as `tensor`'s data. When the bytes are a registered
  /// mapping of another file (findExternalDataSource), they are copied file
  /// to file by the kernel, never read into this process.
  llvm::Error append(onnx::TensorProto &tensor, llvm::ArrayRef<char> bytes);
  /// Appends `length` bytes of the file `source.path` from `source.offset`,
  /// copied file to file.
  llvm::Error appendFromFile(onnx::TensorProto &tensor,
                             const ExternalDataSource &source, uint64_t length);
  /// Appends `length` bytes that `fill` writes in pieces: fill(offset,
  /// piece) must fill `piece` with bytes [offset, offset + piece.size()) of
  /// the tensor (for data that is not in host memory as a whole, such as a
  /// device buffer: one bounded staging buffer).
  llvm::Error
  appendGenerated(onnx::TensorProto &tensor, uint64_t length,
                  llvm::function_ref<llvm::Error(uint64_t offset,
                                                 llvm::MutableArrayRef<char>)>
                      fill);
  /// Flushes the file to disk and renames it onto its name.
  llvm::Error commit();

  /// The location written into the tensors, the file's final path, and the
  /// bytes written so far.
  llvm::StringRef location() const { return location_; }
  llvm::StringRef path() const { return path_; }
  uint64_t size() const { return size_; }

private:
  ExternalDataWriter() = default;
  llvm::Error pad(uint64_t bytes);
  llvm::Error writeBytes(const char *data, size_t size);
  llvm::Error copyFrom(const ExternalDataSource &source, uint64_t length);
  void point(onnx::TensorProto &tensor, uint64_t offset, uint64_t length);
  llvm::Error fail(const llvm::Twine &msg);

  std::string location_, path_, tmpPath_;
  int fd_ = -1;
  uint64_t size_ = 0;
  bool committed_ = false;
  /// Source files open for copying, by path.
  llvm::StringMap<int> sources_;
};

} // namespace amp

#endif // AMP_TARGET_ONNX_EXTERNALDATA_H

//===- TensorStream.h - tensor bytes read and written in pieces -*- C++ -*-===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// Large state passes through host memory in bounded pieces: a tensor's bytes
// are named where they lie (host memory, a range of a file, or a device
// buffer read through a staging buffer) and handed to a consumer one piece
// at a time; a file range is mapped one window at a time and unmapped after
// it, so that reading a file never keeps more than a window resident.
// Files are written under a temporary name, flushed to disk and renamed.
// Used by amp-run's weights, checkpoints and -o (docs/amp-run.md).
//
//===----------------------------------------------------------------------===//

#ifndef AMP_DRIVER_TENSORSTREAM_H
#define AMP_DRIVER_TENSORSTREAM_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace llvm {
class raw_fd_ostream;
} // namespace llvm

namespace amp::driver {

/// The most bytes one piece holds: the window a file range is mapped in,
/// and the staging buffer of a device read.
constexpr uint64_t kTensorPieceBytes = uint64_t(16) << 20;

/// The bytes of one tensor, where they lie. Copyable (a copy names the same
/// bytes); the memory or file named must outlive the uses.
class TensorBytes {
public:
  /// Reads bytes [offset, offset + piece.size()) of the tensor into `piece`.
  using FillFn =
      std::function<llvm::Error(uint64_t offset, llvm::MutableArrayRef<char>)>;

  TensorBytes() = default;
  /// `size` bytes of host memory at `data`, owned elsewhere.
  static TensorBytes inHost(const void *data, uint64_t size);
  /// Bytes owned by the TensorBytes (and its copies).
  static TensorBytes owned(std::vector<char> bytes);
  static TensorBytes owned(std::string bytes);
  /// `size` bytes of the file `path` from `offset`.
  static TensorBytes inFile(std::string path, uint64_t offset, uint64_t size);
  /// `size` bytes that `fill` reads (a device buffer): staged through one
  /// buffer of at most kTensorPieceBytes.
  static TensorBytes filledBy(uint64_t size, FillFn fill);

  uint64_t size() const { return size_; }
  /// The bytes when they are in host memory as a whole; else null.
  const char *hostData() const { return host; }
  /// The file range, when the bytes lie in a file (else path() is empty).
  llvm::StringRef path() const { return file; }
  uint64_t fileOffset() const { return offset; }

  /// Calls fn(offset, piece) on consecutive pieces of at most
  /// kTensorPieceBytes, in order. A file is checked to hold the range
  /// first (an error names the file and what it lacks).
  llvm::Error forEachPiece(
      llvm::function_ref<llvm::Error(uint64_t offset, llvm::StringRef piece)>
          fn) const;
  /// Reads bytes [offset, offset + piece.size()) into `piece`.
  llvm::Error readAt(uint64_t offset, llvm::MutableArrayRef<char> piece) const;
  /// Copies the bytes into `dst` (size() bytes of host memory).
  llvm::Error readInto(char *dst) const;
  /// The bytes in a fresh host buffer (for small tensors).
  llvm::Expected<std::vector<char>> read() const;

private:
  uint64_t size_ = 0;
  const char *host = nullptr;
  std::shared_ptr<const void> keep;
  std::string file;
  uint64_t offset = 0;
  FillFn fill;
};

/// A tensor whose bytes are somewhere (TensorBytes): a parameter before it
/// is on the device, a checkpoint's record.
struct StoredTensor {
  std::string name;
  int32_t dtype = 0; ///< amprt dtype
  std::vector<int64_t> shape;
  TensorBytes bytes;
};

/// A file written under `<path>.tmp`, in order, and renamed onto `path` by
/// commit() after its bytes are flushed to disk (fsync). Destroyed without
/// commit() (an error on the way), it removes the temporary: an existing
/// file at `path` stays untouched. Errors name the file.
class AtomicOutputFile {
public:
  static llvm::Expected<std::unique_ptr<AtomicOutputFile>>
  create(llvm::StringRef path);
  ~AtomicOutputFile();
  AtomicOutputFile(const AtomicOutputFile &) = delete;
  AtomicOutputFile &operator=(const AtomicOutputFile &) = delete;

  llvm::Error write(llvm::StringRef bytes);
  llvm::Error writeZeros(uint64_t count);
  /// Writes `bytes` piece by piece; `observe`, when given, sees each piece
  /// as it is written (a checksum).
  llvm::Error
  write(const TensorBytes &bytes,
        llvm::function_ref<void(llvm::StringRef)> observe = nullptr);
  /// Bytes written so far.
  uint64_t offset() const { return written; }
  llvm::StringRef path() const { return finalPath; }
  llvm::Error commit();

private:
  AtomicOutputFile() = default;
  llvm::Error failed(const llvm::Twine &what);
  std::string finalPath, tmpPath;
  int fd = -1;
  std::unique_ptr<llvm::raw_fd_ostream> os;
  uint64_t written = 0;
  bool done = false;
};

} // namespace amp::driver

#endif // AMP_DRIVER_TENSORSTREAM_H

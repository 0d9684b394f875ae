//===- ExternalData.cpp - ONNX tensors stored outside the model -----------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//

#include "amp/Target/ONNX/ExternalData.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Signals.h"

#include <onnx/onnx_pb.h>

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <map>
#include <mutex>
#include <unistd.h>
#include <vector>

using namespace llvm;

static Error failure(const Twine &msg) {
  return createStringError(inconvertibleErrorCode(), msg);
}

//===----------------------------------------------------------------------===//
// Reading
//===----------------------------------------------------------------------===//

Expected<std::unique_ptr<MemoryBuffer>>
amp::readOnnxExternalData(const onnx::TensorProto &tensor, StringRef modelDir,
                          int64_t expectedBytes, ExternalDataSource *source) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto &kv : tensor.external_data()) {
    if (kv.key() == "location") {
      location = kv.value();
    } else if (kv.key() == "offset" || kv.key() == "length") {
      long long v;
      if (StringRef(kv.value()).getAsInteger(10, v) || v < 0)
        return failure("external data " + kv.key() + " '" + kv.value() +
                       "' is not a non-negative integer");
      (kv.key() == "offset" ? offset : length) = v;
    }
  }
  if (location.empty())
    return failure("external data has no 'location'");
  if (Error e = checkExternalDataLocation(location))
    return std::move(e);
  std::string dir = modelDir.empty() ? "." : modelDir.str();
  SmallString<256> path(dir);
  sys::path::append(path, location);
  // Resolve symlinks and check again that the file is inside the folder.
  SmallString<256> realDir, realPath;
  if (sys::fs::real_path(dir, realDir) || sys::fs::real_path(path, realPath))
    return failure("cannot open external data file '" + path + "'");
  if (!StringRef(realPath).starts_with(StringRef(realDir.str().str() + "/")))
    return failure("external data location '" + location +
                   "' resolves outside the model folder");
  uint64_t fileSize = 0;
  if (sys::fs::file_size(realPath, fileSize))
    return failure("cannot stat external data file '" + path + "'");
  if (length < 0)
    length = expectedBytes;
  if ((uint64_t)offset > fileSize || (uint64_t)length > fileSize - offset)
    return failure("external data [" + Twine(offset) + ", " +
                   Twine(uint64_t(offset) + uint64_t(length)) +
                   ") is beyond the end of '" + path + "' (" + Twine(fileSize) +
                   " bytes)");
  if (length != expectedBytes)
    return failure("external data has " + Twine(length) +
                   " bytes but the tensor needs " + Twine(expectedBytes));
  auto buf = MemoryBuffer::getFileSlice(realPath, length, offset,
                                        /*IsVolatile=*/false);
  if (!buf)
    return failure("cannot read external data file '" + path +
                   "': " + buf.getError().message());
  if (source)
    *source = {realPath.str().str(), uint64_t(offset)};
  return std::move(*buf);
}

//===----------------------------------------------------------------------===//
// Where mapped bytes come from
//===----------------------------------------------------------------------===//

namespace {
struct SourceRegistry {
  std::mutex mutex;
  std::map<const void *, std::pair<size_t, amp::ExternalDataSource>> byData;
};
SourceRegistry &sourceRegistry() {
  static SourceRegistry registry;
  return registry;
}
} // namespace

void amp::registerExternalDataSource(const void *data, size_t size,
                                     ExternalDataSource source) {
  SourceRegistry &r = sourceRegistry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.byData[data] = {size, std::move(source)};
}

void amp::forgetExternalDataSource(const void *data) {
  SourceRegistry &r = sourceRegistry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.byData.erase(data);
}

std::optional<amp::ExternalDataSource>
amp::findExternalDataSource(const void *data, size_t size) {
  SourceRegistry &r = sourceRegistry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.byData.find(data);
  if (it == r.byData.end() || it->second.first != size)
    return std::nullopt;
  return it->second.second;
}

//===----------------------------------------------------------------------===//
// Writing
//===----------------------------------------------------------------------===//

std::string amp::defaultExternalDataLocation(StringRef modelPath) {
  return (sys::path::filename(modelPath) + ".data").str();
}

Error amp::checkExternalDataLocation(StringRef location) {
  if (location.empty())
    return failure("external data location is empty");
  // The path must stay inside the model's folder: relative, no "..".
  if (sys::path::is_absolute(location) ||
      sys::path::is_absolute(location, sys::path::Style::windows))
    return failure("external data location '" + location +
                   "' is an absolute path outside the model folder");
  for (auto it = sys::path::begin(location), e = sys::path::end(location);
       it != e; ++it)
    if (*it == "..")
      return failure("external data location '" + location +
                     "' leaves the model folder");
  return Error::success();
}

/// ONNX Runtime's ModelSavingOptions: tensors of at least 1 MiB start at a
/// multiple of 64 KiB (Windows' allocation granularity; Linux needs 4 KiB),
/// so that a reader can map each of them.
static constexpr uint64_t kAlignThreshold = 1 << 20, kAlignment = 1 << 16;
/// Writes and copies go in pieces of this size.
static constexpr uint64_t kPiece = 64 << 20;

Expected<std::unique_ptr<amp::ExternalDataWriter>>
amp::ExternalDataWriter::create(StringRef modelPath, StringRef location) {
  if (Error e = checkExternalDataLocation(location))
    return std::move(e);
  std::unique_ptr<ExternalDataWriter> w(new ExternalDataWriter());
  w->location_ = location.str();
  SmallString<256> path(sys::path::parent_path(modelPath));
  sys::path::append(path, location);
  w->path_ = path.str().str();
  SmallString<256> tmp;
  int fd;
  if (std::error_code ec =
          sys::fs::createUniqueFile(w->path_ + "-%%%%%%.tmp", fd, tmp))
    return failure(w->path_ +
                   ": cannot create the external data file: " + ec.message());
  w->fd_ = fd;
  w->tmpPath_ = tmp.str().str();
  sys::RemoveFileOnSignal(w->tmpPath_);
  return std::move(w);
}

amp::ExternalDataWriter::~ExternalDataWriter() {
  if (fd_ >= 0)
    ::close(fd_);
  if (!committed_ && !tmpPath_.empty()) {
    sys::fs::remove(tmpPath_);
    sys::DontRemoveFileOnSignal(tmpPath_);
  }
  for (auto &s : sources_)
    ::close(s.getValue());
}

Error amp::ExternalDataWriter::fail(const Twine &msg) {
  return failure(path_ + ": " + msg);
}

Error amp::ExternalDataWriter::writeBytes(const char *data, size_t size) {
  while (size) {
    ssize_t n = ::write(fd_, data, std::min<size_t>(size, kPiece));
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return fail(Twine("write failed: ") + std::strerror(errno));
    data += n;
    size -= size_t(n);
    size_ += uint64_t(n);
  }
  return Error::success();
}

Error amp::ExternalDataWriter::pad(uint64_t bytes) {
  static const char zeros[4096] = {};
  while (bytes) {
    size_t n = std::min<uint64_t>(bytes, sizeof(zeros));
    if (Error e = writeBytes(zeros, n))
      return e;
    bytes -= n;
  }
  return Error::success();
}

Error amp::ExternalDataWriter::copyFrom(const ExternalDataSource &source,
                                        uint64_t length) {
  auto [it, fresh] = sources_.try_emplace(source.path, -1);
  if (fresh)
    it->second = ::open(source.path.c_str(), O_RDONLY | O_CLOEXEC);
  int in = it->second;
  if (in < 0)
    return fail("cannot open '" + source.path +
                "' to copy from: " + std::strerror(errno));
  off_t from = off_t(source.offset);
  uint64_t left = length;
  // The kernel copies (and may share extents); where it cannot
  // (another file system on an old kernel, a special file), bounded reads.
  while (left) {
    ssize_t n = ::copy_file_range(in, &from, fd_, nullptr,
                                  std::min<uint64_t>(left, kPiece), 0);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    left -= uint64_t(n);
    size_ += uint64_t(n);
  }
  if (!left)
    return Error::success();
  std::vector<char> piece(std::min<uint64_t>(left, 8 << 20));
  while (left) {
    ssize_t n =
        ::pread(in, piece.data(), std::min<uint64_t>(left, piece.size()), from);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return fail("cannot read '" + source.path + "' at offset " +
                  Twine(uint64_t(from)) +
                  (n == 0 ? ": the file is shorter than expected"
                          : Twine(": ") + std::strerror(errno)));
    if (Error e = writeBytes(piece.data(), size_t(n)))
      return e;
    from += n;
    left -= uint64_t(n);
  }
  return Error::success();
}

void amp::ExternalDataWriter::point(onnx::TensorProto &tensor, uint64_t offset,
                                    uint64_t length) {
  tensor.clear_raw_data();
  tensor.clear_float_data();
  tensor.clear_int32_data();
  tensor.clear_string_data();
  tensor.clear_int64_data();
  tensor.clear_double_data();
  tensor.clear_uint64_data();
  tensor.clear_external_data();
  tensor.set_data_location(onnx::TensorProto::EXTERNAL);
  auto add = [&](const char *key, const std::string &value) {
    auto *kv = tensor.add_external_data();
    kv->set_key(key);
    kv->set_value(value);
  };
  add("location", location_);
  add("offset", std::to_string(offset));
  add("length", std::to_string(length));
}

Error amp::ExternalDataWriter::appendGenerated(
    onnx::TensorProto &tensor, uint64_t length,
    function_ref<Error(uint64_t, MutableArrayRef<char>)> fill) {
  if (length >= kAlignThreshold && size_ % kAlignment)
    if (Error e = pad(kAlignment - size_ % kAlignment))
      return e;
  uint64_t offset = size_;
  std::vector<char> piece(std::min<uint64_t>(length, 8 << 20));
  for (uint64_t at = 0; at < length; at += piece.size()) {
    MutableArrayRef<char> part(piece.data(),
                               std::min<uint64_t>(piece.size(), length - at));
    if (Error e = fill(at, part))
      return e;
    if (Error e = writeBytes(part.data(), part.size()))
      return e;
  }
  point(tensor, offset, length);
  return Error::success();
}

Error amp::ExternalDataWriter::appendFromFile(onnx::TensorProto &tensor,
                                              const ExternalDataSource &source,
                                              uint64_t length) {
  if (length >= kAlignThreshold && size_ % kAlignment)
    if (Error e = pad(kAlignment - size_ % kAlignment))
      return e;
  uint64_t offset = size_;
  if (Error e = copyFrom(source, length))
    return e;
  point(tensor, offset, length);
  return Error::success();
}

Error amp::ExternalDataWriter::append(onnx::TensorProto &tensor,
                                      ArrayRef<char> bytes) {
  if (auto source = findExternalDataSource(bytes.data(), bytes.size()))
    return appendFromFile(tensor, *source, bytes.size());
  if (bytes.size() >= kAlignThreshold && size_ % kAlignment)
    if (Error e = pad(kAlignment - size_ % kAlignment))
      return e;
  uint64_t offset = size_;
  if (Error e = writeBytes(bytes.data(), bytes.size()))
    return e;
  point(tensor, offset, bytes.size());
  return Error::success();
}

Error amp::ExternalDataWriter::commit() {
  if (::close(fd_) != 0) {
    fd_ = -1;
    return fail(Twine("write failed: ") + std::strerror(errno));
  }
  fd_ = -1;
  if (std::error_code ec = sys::fs::rename(tmpPath_, path_))
    return fail("cannot rename '" + tmpPath_ + "' onto it: " + ec.message());
  committed_ = true;
  sys::DontRemoveFileOnSignal(tmpPath_);
  return Error::success();
}

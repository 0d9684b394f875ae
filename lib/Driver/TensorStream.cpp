//===- TensorStream.cpp - tensor bytes read and written in pieces --------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//

#include "amp/Driver/TensorStream.h"

#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cstring>
#include <unistd.h>

using namespace amp::driver;
using llvm::StringRef;
using llvm::Twine;

namespace {
llvm::Error fail(const Twine &msg) { return llvm::createStringError(msg); }
} // namespace

TensorBytes TensorBytes::inHost(const void *data, uint64_t size) {
  TensorBytes t;
  t.size_ = size;
  t.host = static_cast<const char *>(data);
  return t;
}

TensorBytes TensorBytes::owned(std::vector<char> bytes) {
  auto keep = std::make_shared<std::vector<char>>(std::move(bytes));
  TensorBytes t = inHost(keep->data(), keep->size());
  t.keep = std::move(keep);
  return t;
}

TensorBytes TensorBytes::owned(std::string bytes) {
  auto keep = std::make_shared<std::string>(std::move(bytes));
  TensorBytes t = inHost(keep->data(), keep->size());
  t.keep = std::move(keep);
  return t;
}

TensorBytes TensorBytes::inFile(std::string path, uint64_t offset,
                                uint64_t size) {
  TensorBytes t;
  t.size_ = size;
  t.file = std::move(path);
  t.offset = offset;
  return t;
}

TensorBytes TensorBytes::filledBy(uint64_t size, FillFn fill) {
  TensorBytes t;
  t.size_ = size;
  t.fill = std::move(fill);
  return t;
}

llvm::Error TensorBytes::forEachPiece(
    llvm::function_ref<llvm::Error(uint64_t, StringRef)> fn) const {
  if (host || size_ == 0) {
    for (uint64_t at = 0; at < size_; at += kTensorPieceBytes)
      if (llvm::Error e =
              fn(at,
                 StringRef(host + at, std::min(kTensorPieceBytes, size_ - at))))
        return e;
    return llvm::Error::success();
  }
  if (fill) {
    std::vector<char> staging(std::min(size_, kTensorPieceBytes));
    for (uint64_t at = 0; at < size_; at += kTensorPieceBytes) {
      llvm::MutableArrayRef<char> piece(
          staging.data(), std::min(kTensorPieceBytes, size_ - at));
      if (llvm::Error e = fill(at, piece))
        return e;
      if (llvm::Error e = fn(at, StringRef(piece.data(), piece.size())))
        return e;
    }
    return llvm::Error::success();
  }
  // A file range: check the file holds it (mapping past the end would fault
  // on access), then map one window at a time.
  auto fd = llvm::sys::fs::openNativeFileForRead(file);
  if (!fd)
    return fail(file + ": " + llvm::toString(fd.takeError()));
  llvm::scope_exit close([&] { llvm::sys::fs::closeFile(*fd); });
  llvm::sys::fs::file_status st;
  if (std::error_code ec = llvm::sys::fs::status(*fd, st))
    return fail(file + ": " + ec.message());
  if (offset > st.getSize() || size_ > st.getSize() - offset)
    return fail(file + ": bytes [" + Twine(offset) + ", " +
                Twine(offset + size_) + ") are past its end (" +
                Twine(st.getSize()) + " bytes)");
  const uint64_t align = llvm::sys::fs::mapped_file_region::alignment();
  for (uint64_t at = 0; at < size_; at += kTensorPieceBytes) {
    uint64_t len = std::min(kTensorPieceBytes, size_ - at);
    uint64_t start = offset + at, base = start - start % align;
    std::error_code ec;
    llvm::sys::fs::mapped_file_region window(
        *fd, llvm::sys::fs::mapped_file_region::readonly,
        size_t(start - base + len), base, ec);
    if (ec)
      return fail(file + ": cannot map bytes at " + Twine(start) + ": " +
                  ec.message());
    if (llvm::Error e =
            fn(at, StringRef(window.const_data() + (start - base), len)))
      return e;
  }
  return llvm::Error::success();
}

llvm::Error TensorBytes::readAt(uint64_t at,
                                llvm::MutableArrayRef<char> piece) const {
  if (at > size_ || piece.size() > size_ - at)
    return fail("read past the end of a tensor");
  if (host) {
    std::memcpy(piece.data(), host + at, piece.size());
    return llvm::Error::success();
  }
  if (fill)
    return fill(at, piece);
  return inFile(file, offset + at, piece.size()).readInto(piece.data());
}

llvm::Error TensorBytes::readInto(char *dst) const {
  return forEachPiece([&](uint64_t at, StringRef piece) {
    std::memcpy(dst + at, piece.data(), piece.size());
    return llvm::Error::success();
  });
}

llvm::Expected<std::vector<char>> TensorBytes::read() const {
  std::vector<char> out(size_);
  if (llvm::Error e = readInto(out.data()))
    return std::move(e);
  return out;
}

llvm::Expected<std::unique_ptr<AtomicOutputFile>>
AtomicOutputFile::create(StringRef path) {
  std::unique_ptr<AtomicOutputFile> f(new AtomicOutputFile);
  f->finalPath = path.str();
  f->tmpPath = (path + ".tmp").str();
  if (std::error_code ec = llvm::sys::fs::openFileForWrite(
          f->tmpPath, f->fd, llvm::sys::fs::CD_CreateAlways))
    return fail(f->tmpPath + ": " + ec.message());
  f->os = std::make_unique<llvm::raw_fd_ostream>(f->fd, /*shouldClose=*/false);
  f->os->SetBufferSize(1 << 20);
  return std::move(f);
}

AtomicOutputFile::~AtomicOutputFile() {
  if (os) {
    os->clear_error();
    os.reset();
  }
  if (fd >= 0)
    ::close(fd);
  if (!done)
    llvm::sys::fs::remove(tmpPath);
}

llvm::Error AtomicOutputFile::failed(const Twine &what) {
  std::string msg = tmpPath + ": " + what.str();
  if (os && os->has_error())
    msg += ": " + os->error().message();
  return fail(msg);
}

llvm::Error AtomicOutputFile::write(StringRef bytes) {
  os->write(bytes.data(), bytes.size());
  written += bytes.size();
  if (os->has_error())
    return failed("write failed");
  return llvm::Error::success();
}

llvm::Error AtomicOutputFile::writeZeros(uint64_t count) {
  static const char zeros[4096] = {};
  while (count) {
    uint64_t n = std::min<uint64_t>(count, sizeof(zeros));
    if (llvm::Error e = write(StringRef(zeros, n)))
      return e;
    count -= n;
  }
  return llvm::Error::success();
}

llvm::Error
AtomicOutputFile::write(const TensorBytes &bytes,
                        llvm::function_ref<void(StringRef)> observe) {
  return bytes.forEachPiece([&](uint64_t, StringRef piece) {
    if (observe)
      observe(piece);
    return write(piece);
  });
}

llvm::Error AtomicOutputFile::commit() {
  os->flush();
  if (os->has_error())
    return failed("write failed");
  // On disk before the rename: a crash leaves the old file or the new one,
  // never a renamed file whose blocks are not written yet.
  if (::fsync(fd) != 0)
    return failed(Twine("fsync failed: ") + std::strerror(errno));
  os.reset();
  int closing = fd;
  fd = -1;
  if (::close(closing) != 0)
    return failed(Twine("close failed: ") + std::strerror(errno));
  if (std::error_code ec = llvm::sys::fs::rename(tmpPath, finalPath))
    return fail(finalPath + ": " + ec.message());
  done = true;
  return llvm::Error::success();
}

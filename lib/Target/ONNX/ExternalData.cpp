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

#include <onnx/onnx_pb.h>

using namespace llvm;

static Error failure(const Twine &msg) {
  return createStringError(inconvertibleErrorCode(), msg);
}

Expected<std::unique_ptr<MemoryBuffer>>
amp::readOnnxExternalData(const onnx::TensorProto &tensor, StringRef modelDir,
                          int64_t expectedBytes) {
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
                   ") is beyond the end of '" + path + "' (" +
                   Twine(fileSize) + " bytes)");
  if (length != expectedBytes)
    return failure("external data has " + Twine(length) +
                   " bytes but the tensor needs " + Twine(expectedBytes));
  auto buf = MemoryBuffer::getFileSlice(realPath, length, offset,
                                        /*IsVolatile=*/false);
  if (!buf)
    return failure("cannot read external data file '" + path +
                   "': " + buf.getError().message());
  return std::move(*buf);
}

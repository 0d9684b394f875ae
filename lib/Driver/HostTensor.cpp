//===- HostTensor.cpp - tensors on the host, in and out of files ----------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//

#include "amp/Driver/HostTensor.h"
#include "amp/Driver/TensorStream.h"
#include "amp/Runtime/Runtime.h"
#include "amp/Target/ONNX/ExternalData.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <onnx/onnx_pb.h>

#include <cstring>
#include <map>

using namespace amp;
using namespace amp::driver;
using llvm::SmallString;
using llvm::SmallVector;
using llvm::StringRef;
using llvm::Twine;

namespace {
llvm::Error fail(const Twine &msg) { return llvm::createStringError(msg); }
} // namespace

int32_t amp::driver::dtypeOfOnnx(int t) {
  switch (t) {
  case onnx::TensorProto::FLOAT:
    return AMPRT_F32;
  case onnx::TensorProto::FLOAT16:
    return AMPRT_F16;
  case onnx::TensorProto::BFLOAT16:
    return AMPRT_BF16;
  case onnx::TensorProto::DOUBLE:
    return AMPRT_F64;
  case onnx::TensorProto::INT64:
    return AMPRT_I64;
  case onnx::TensorProto::INT32:
    return AMPRT_I32;
  case onnx::TensorProto::INT8:
    return AMPRT_I8;
  case onnx::TensorProto::UINT8:
    return AMPRT_U8;
  case onnx::TensorProto::BOOL:
    return AMPRT_BOOL;
  default:
    return -1;
  }
}

int amp::driver::onnxOfDtype(int32_t dt) {
  static const int types[] = {
      onnx::TensorProto::FLOAT,    onnx::TensorProto::FLOAT16,
      onnx::TensorProto::BFLOAT16, onnx::TensorProto::DOUBLE,
      onnx::TensorProto::INT64,    onnx::TensorProto::INT32,
      onnx::TensorProto::INT8,     onnx::TensorProto::UINT8,
      onnx::TensorProto::BOOL};
  for (int t : types)
    if (dtypeOfOnnx(t) == dt)
      return t;
  return onnx::TensorProto::UNDEFINED;
}

namespace {
/// `t`'s dtype and dims, checked before anything is allocated (a negative
/// or overflowing shape in a small file must not ask for terabytes); the
/// bytes its values take.
llvm::Expected<size_t> typeOf(const onnx::TensorProto &t, int32_t &dtype,
                              std::vector<int64_t> &shape) {
  dtype = dtypeOfOnnx(t.data_type());
  if (dtype < 0)
    return fail("tensor '" + t.name() + "': unsupported data type");
  shape.assign(t.dims().begin(), t.dims().end());
  uint64_t numel = 1;
  for (int64_t d : shape) {
    if (d < 0 || (d && numel > (uint64_t(INT64_MAX) / 8) / uint64_t(d)))
      return fail("tensor '" + t.name() + "': invalid dims");
    numel *= uint64_t(d);
  }
  return size_t(numel) * amprt_dtype_size(dtype);
}
} // namespace

llvm::Expected<HostTensor>
amp::driver::fromTensorProto(const onnx::TensorProto &t, StringRef dir) {
  HostTensor h;
  auto size = typeOf(t, h.dtype, h.shape);
  if (!size)
    return size.takeError();
  size_t bytes = *size;
  if (t.data_location() == onnx::TensorProto::EXTERNAL) {
    auto buf = readOnnxExternalData(t, dir, int64_t(bytes));
    if (!buf)
      return fail("tensor '" + t.name() + "': " + toString(buf.takeError()));
    h.data.assign((*buf)->getBufferStart(), (*buf)->getBufferStart() + bytes);
    return h;
  }
  // The one field that holds the values, and how many bytes it has.
  const void *src = nullptr;
  size_t available = 0;
  if (t.has_raw_data()) {
    src = t.raw_data().data();
    available = t.raw_data().size();
  } else if (h.dtype == AMPRT_F32) {
    src = t.float_data().data();
    available = size_t(t.float_data_size()) * 4;
  } else if (h.dtype == AMPRT_I64) {
    src = t.int64_data().data();
    available = size_t(t.int64_data_size()) * 8;
  } else if (h.dtype == AMPRT_F64) {
    src = t.double_data().data();
    available = size_t(t.double_data_size()) * 8;
  } else {
    return fail("tensor '" + t.name() + "': no data in a supported field");
  }
  if (!t.has_raw_data() && available == 0 && bytes != 0)
    return fail("tensor '" + t.name() + "': no data in a supported field");
  if (available != bytes)
    return fail("tensor '" + t.name() + "': " + Twine(available) +
                " bytes of data, its type and dims need " + Twine(bytes));
  h.data.resize(bytes);
  if (bytes)
    std::memcpy(h.data.data(), src, bytes);
  return h;
}

llvm::Expected<StoredTensor> amp::driver::takeTensorProto(onnx::TensorProto &t,
                                                          StringRef dir) {
  StoredTensor s;
  s.name = t.name();
  auto bytes = typeOf(t, s.dtype, s.shape);
  if (!bytes)
    return bytes.takeError();
  if (t.data_location() == onnx::TensorProto::EXTERNAL) {
    // Checked, then left in its file: read (mapped, a window at a time)
    // when the bytes are copied, or copied file to file.
    ExternalDataSource source;
    auto buf = readOnnxExternalData(t, dir, int64_t(*bytes), &source);
    if (!buf)
      return fail("tensor '" + t.name() + "': " + toString(buf.takeError()));
    s.bytes = TensorBytes::inFile(source.path, source.offset, *bytes);
    return s;
  }
  if (t.has_raw_data() && t.raw_data().size() == *bytes) {
    s.bytes = TensorBytes::owned(std::move(*t.mutable_raw_data()));
    t.clear_raw_data();
    return s;
  }
  auto h = fromTensorProto(t, dir);
  if (!h)
    return h.takeError();
  s.bytes = TensorBytes::owned(std::move(h->data));
  return s;
}

llvm::Expected<HostTensor> amp::driver::readNpy(StringRef path) {
  auto buf = llvm::MemoryBuffer::getFile(path);
  if (!buf)
    return fail(path + ": " + buf.getError().message());
  StringRef s = (*buf)->getBuffer();
  if (s.size() < 10 || !s.starts_with("\x93NUMPY"))
    return fail(path + ": not a .npy file");
  uint8_t major = s[6];
  size_t hlen, off;
  if (major == 1) {
    hlen = uint8_t(s[8]) | (uint8_t(s[9]) << 8);
    off = 10;
  } else {
    hlen = uint8_t(s[8]) | (uint8_t(s[9]) << 8) | (uint8_t(s[10]) << 16) |
           (size_t(uint8_t(s[11])) << 24);
    off = 12;
  }
  if (off + hlen > s.size())
    return fail(path + ": truncated header");
  StringRef header = s.substr(off, hlen);
  auto field = [&](StringRef key) {
    size_t p = header.find(key);
    return p == StringRef::npos ? StringRef() : header.substr(p + key.size());
  };
  StringRef descr = field("'descr':").ltrim(" '");
  descr = descr.take_until([](char c) { return c == '\''; });
  HostTensor h;
  static const std::map<std::string, int32_t> kinds = {
      {"<f4", AMPRT_F32}, {"<f2", AMPRT_F16}, {"<f8", AMPRT_F64},
      {"<i8", AMPRT_I64}, {"<i4", AMPRT_I32}, {"|i1", AMPRT_I8},
      {"|u1", AMPRT_U8},  {"|b1", AMPRT_BOOL}};
  auto k = kinds.find(descr.str());
  if (k == kinds.end())
    return fail(path + ": unsupported dtype '" + descr + "'");
  h.dtype = k->second;
  if (field("'fortran_order':").ltrim().starts_with("True"))
    return fail(path + ": Fortran order is not supported");
  StringRef shape = field("'shape':").ltrim(" (");
  shape = shape.take_until([](char c) { return c == ')'; });
  SmallVector<StringRef> dims;
  shape.split(dims, ',', -1, false);
  for (StringRef d : dims) {
    int64_t v;
    if (d.trim().empty())
      continue;
    if (d.trim().getAsInteger(10, v))
      return fail(path + ": bad shape");
    h.shape.push_back(v);
  }
  size_t bytes = size_t(h.numel()) * amprt_dtype_size(h.dtype);
  if (off + hlen + bytes != s.size())
    return fail(path + ": data size does not match the shape");
  h.data.assign(s.begin() + off + hlen, s.end());
  return h;
}

llvm::Error amp::driver::writeAtomically(StringRef path, StringRef bytes) {
  auto file = AtomicOutputFile::create(path);
  if (!file)
    return file.takeError();
  if (llvm::Error e = (*file)->write(bytes))
    return e;
  return (*file)->commit();
}

void amp::driver::toTensorProto(const HostTensor &h, StringRef name,
                                onnx::TensorProto &t) {
  t.Clear();
  t.set_name(name.str());
  t.set_data_type(onnxOfDtype(h.dtype));
  for (int64_t d : h.shape)
    t.add_dims(d);
  t.set_raw_data(std::string(h.data.begin(), h.data.end()));
}

llvm::Expected<HostTensor> amp::driver::readTensorProtoFile(StringRef path,
                                                            std::string *name) {
  auto buf = llvm::MemoryBuffer::getFile(path);
  if (!buf)
    return fail(path + ": " + buf.getError().message());
  onnx::TensorProto proto;
  StringRef bytes = (*buf)->getBuffer();
  if (bytes.size() > size_t(INT32_MAX) ||
      !proto.ParseFromArray(bytes.data(), int(bytes.size())))
    return fail(path + ": cannot read the TensorProto (truncated or not one)");
  if (name)
    *name = proto.name();
  auto h = fromTensorProto(proto, llvm::sys::path::parent_path(path));
  if (!h)
    return fail(path + ": " + toString(h.takeError()));
  return h;
}

bool amp::driver::isPlainFileName(StringRef name) {
  return !name.empty() && name != "." && name != ".." &&
         name.find_first_of("/\\") == StringRef::npos;
}

llvm::Expected<std::optional<HostTensor>>
amp::driver::readNamedTensor(StringRef dir, StringRef name) {
  if (!isPlainFileName(name))
    return std::nullopt;
  for (StringRef ext : {".npy", ".pb"}) {
    SmallString<256> path(dir);
    llvm::sys::path::append(path, name + ext);
    if (!llvm::sys::fs::exists(path))
      continue;
    auto h = ext == ".npy" ? readNpy(path) : readTensorProtoFile(path);
    if (!h)
      return h.takeError();
    return std::optional<HostTensor>(std::move(*h));
  }
  return std::nullopt;
}

std::string amp::driver::shapeString(llvm::ArrayRef<int64_t> shape) {
  std::string r = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    r += (i ? ", " : "") +
         (shape[i] < 0 ? std::string("?") : std::to_string(shape[i]));
  return r + "]";
}

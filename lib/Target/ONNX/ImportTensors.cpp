//===- ImportTensors.cpp - ONNX tensors and attributes --------------------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// TensorProtos as MLIR attributes: typed or raw storage, packed sub-byte
// types, external data (mapped, and registered so that export copies it file
// to file), small tensors inline and large ones as dense resources that own
// their bytes without a copy; sparse tensors; node attributes of every kind.
//
//===----------------------------------------------------------------------===//

#include "ImportONNXInternals.h"
#include "amp/Dialect/Train/IR/OnnxTypes.h"

#include "mlir/IR/BuiltinDialect.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Path.h"

using namespace mlir;
using namespace amp;
using namespace amp::train;
using namespace amp::onnx_detail;

//===----------------------------------------------------------------------===//
// Tensors
//===----------------------------------------------------------------------===//

namespace {
/// Appends the little-endian bytes of `v` (of `width` bytes) to `out`.
template <typename T> void appendLE(std::string &out, T v, unsigned width) {
  for (unsigned i = 0; i < width; ++i)
    out.push_back(
        static_cast<char>((static_cast<uint64_t>(v) >> (8 * i)) & 0xff));
}
} // namespace

FailureOr<std::unique_ptr<llvm::MemoryBuffer>>
Importer::loadExternalData(const onnx::TensorProto &tensor, const Twine &what,
                           int64_t expectedBytes, ExternalDataSource *source) {
  std::string dir = options.externalDataDir;
  if (dir.empty()) {
    dir = llvm::sys::path::parent_path(fileName).str();
    if (dir.empty())
      dir = ".";
  }
  auto buf = readOnnxExternalData(tensor, dir, expectedBytes, source);
  if (!buf)
    return error() << what << ": " << llvm::toString(buf.takeError());
  return std::move(*buf);
}

FailureOr<Attribute> Importer::importTensor(onnx::TensorProto &tensor,
                                            const Twine &what, bool *raw) {
  if (tensor.has_segment())
    return error() << what << ": segmented tensors are not supported";
  int32_t dataType = tensor.data_type();
  Type elt = getElementTypeForOnnxDataType(ctx, dataType);
  if (!elt)
    return error() << what << ": unknown data_type " << dataType;
  SmallVector<int64_t> shape;
  int64_t count = 1;
  for (int64_t d : tensor.dims()) {
    if (d < 0)
      return error() << what << ": dimension " << shape.size()
                     << " is negative (" << d << ")";
    if (d != 0 && count > kMaxElements / d)
      return error() << what << ": dimensions are absurdly large (more than "
                     << kMaxElements << " elements)";
    count *= d;
    shape.push_back(d);
  }
  if (count > kMaxElements)
    return error() << what << ": dimensions are absurdly large";
  auto type = RankedTensorType::get(shape, elt);
  bool external = tensor.data_location() == onnx::TensorProto::EXTERNAL;
  if (raw)
    *raw = tensor.has_raw_data() || external;

  // Strings.
  if (dataType == onnx::TensorProto::STRING) {
    if (tensor.string_data_size() != count)
      return error() << what << ": has " << tensor.string_data_size()
                     << " strings but its dims need " << count;
    SmallVector<StringRef> strs(tensor.string_data().begin(),
                                tensor.string_data().end());
    return Attribute(DenseStringElementsAttr::get(type, strs));
  }

  int64_t rawBytes = getRawDataSize(dataType, count);
  unsigned bits = getOnnxDataTypeBits(dataType);
  std::unique_ptr<llvm::MemoryBuffer> externalBuf;
  ExternalDataSource externalSource;
  std::string *owned = nullptr; // heap string holding the bytes
  std::string converted;
  StringRef bytes;
  if (external) {
    auto buf = loadExternalData(tensor, what, rawBytes, &externalSource);
    if (failed(buf))
      return failure();
    externalBuf = std::move(*buf);
    bytes = externalBuf->getBuffer();
  } else if (tensor.has_raw_data()) {
    if ((int64_t)tensor.raw_data().size() != rawBytes)
      return error() << what << ": raw_data has " << tensor.raw_data().size()
                     << " bytes but dims " << "and data_type need " << rawBytes;
    bytes = tensor.raw_data();
  } else {
    // Typed storage: convert to the raw little-endian layout.
    auto checkCount = [&](int64_t have, int64_t per) -> LogicalResult {
      int64_t want = count * per;
      if (bits < 8)
        want = rawBytes; // packed bytes, one per int32
      if (have != want)
        return error() << what << ": has " << have
                       << " values in its typed data field but its dims need "
                       << want;
      return success();
    };
    unsigned width = bits / 8;
    switch (dataType) {
    case onnx::TensorProto::FLOAT:
    case onnx::TensorProto::COMPLEX64:
      if (failed(checkCount(tensor.float_data_size(),
                            dataType == onnx::TensorProto::COMPLEX64 ? 2 : 1)))
        return failure();
      for (float f : tensor.float_data())
        appendLE(converted, llvm::bit_cast<uint32_t>(f), 4);
      break;
    case onnx::TensorProto::DOUBLE:
    case onnx::TensorProto::COMPLEX128:
      if (failed(checkCount(tensor.double_data_size(),
                            dataType == onnx::TensorProto::COMPLEX128 ? 2 : 1)))
        return failure();
      for (double f : tensor.double_data())
        appendLE(converted, llvm::bit_cast<uint64_t>(f), 8);
      break;
    case onnx::TensorProto::INT64:
      if (failed(checkCount(tensor.int64_data_size(), 1)))
        return failure();
      for (int64_t v : tensor.int64_data())
        appendLE(converted, v, 8);
      break;
    case onnx::TensorProto::UINT32:
    case onnx::TensorProto::UINT64:
      if (failed(checkCount(tensor.uint64_data_size(), 1)))
        return failure();
      for (uint64_t v : tensor.uint64_data())
        appendLE(converted, v, width);
      break;
    default:
      if (bits < 8 && 8 % bits != 0) {
        // 6-bit floats: one element per int32; pack them as raw_data does.
        if (tensor.int32_data_size() != count)
          return error() << what << ": has " << tensor.int32_data_size()
                         << " values in its typed data field but its dims "
                         << "need " << count;
        converted.assign(rawBytes, '\0');
        for (int64_t i = 0; i < count; ++i) {
          uint64_t v = uint32_t(tensor.int32_data(i)) & ((1u << bits) - 1);
          for (unsigned b = 0; b < bits; ++b)
            if (v >> b & 1)
              converted[(i * bits + b) / 8] |= char(1 << ((i * bits + b) % 8));
        }
        break;
      }
      // int32, int16, int8, uint16, uint8, bool, float16, bfloat16, float8,
      // and 2/4-bit types: one value (or packed byte) per int32.
      if (failed(checkCount(tensor.int32_data_size(), 1)))
        return failure();
      for (int32_t v : tensor.int32_data())
        appendLE(converted, static_cast<uint32_t>(v), bits < 8 ? 1 : width);
      break;
    }
    bytes = converted;
  }

  // Sub-byte types and bool: MLIR stores them differently from ONNX's
  // packing, so build them element by element (they are rare and small).
  if (bits < 8 || dataType == onnx::TensorProto::BOOL) {
    SmallVector<APInt> values;
    values.reserve(count);
    unsigned width = elt.getIntOrFloatBitWidth();
    for (int64_t i = 0; i < count; ++i) {
      uint64_t v;
      if (dataType == onnx::TensorProto::BOOL) {
        v = bytes[i] != 0;
      } else {
        // Elements are packed low bits first.
        v = 0;
        for (unsigned b = 0; b < bits; ++b) {
          int64_t bit = i * bits + b;
          v |= uint64_t((uint8_t(bytes[bit / 8]) >> (bit % 8)) & 1) << b;
        }
      }
      values.push_back(APInt(width, v));
    }
    if (auto f = dyn_cast<FloatType>(elt)) {
      SmallVector<APFloat> fv;
      for (const APInt &v : values)
        fv.push_back(APFloat(f.getFloatSemantics(), v));
      return Attribute(DenseElementsAttr::get(type, fv));
    }
    return Attribute(DenseElementsAttr::get(type, values));
  }

  // Small tensors inline, large ones as dense resources that own (or map)
  // the bytes without a copy.
  if ((uint64_t)rawBytes < options.resourceThresholdBytes) {
    bool splat = false;
    if (!DenseElementsAttr::isValidRawBuffer(
            type, ArrayRef<char>(bytes.data(), bytes.size()), splat))
      return error() << what << ": cannot interpret its data";
    return Attribute(DenseElementsAttr::getFromRawBuffer(
        type, ArrayRef<char>(bytes.data(), bytes.size())));
  }

  AsmResourceBlob blob;
  size_t align = std::max<size_t>(1, bits / 8);
  if (externalBuf) {
    // The exporter copies these bytes file to file when it writes them as
    // external data again (ExternalDataWriter): say where they come from.
    llvm::MemoryBuffer *mb = externalBuf.release();
    registerExternalDataSource(mb->getBufferStart(), mb->getBufferSize(),
                               std::move(externalSource));
    blob = AsmResourceBlob(
        ArrayRef<char>(mb->getBufferStart(), mb->getBufferSize()), align,
        [mb](void *, size_t, size_t) {
          forgetExternalDataSource(mb->getBufferStart());
          delete mb;
        },
        /*dataIsMutable=*/false);
  } else {
    // Moved, not released: the model is on an arena, where release_*
    // copies; the string's heap buffer moves without a copy either way.
    if (tensor.has_raw_data())
      owned = new std::string(std::move(*tensor.mutable_raw_data()));
    else
      owned = new std::string(std::move(converted));
    blob = AsmResourceBlob(
        ArrayRef<char>(owned->data(), owned->size()), align,
        [owned](void *, size_t, size_t) { delete owned; },
        /*dataIsMutable=*/false);
  }
  // A readable, unique resource key derived from the tensor name.
  std::string key;
  for (char c : tensor.name())
    key.push_back(llvm::isAlnum(c) || c == '_' || c == '.' ? c : '_');
  if (key.empty() || !llvm::isAlpha(key[0]))
    key.insert(0, "t_");
  if (!resourceNames.insert(key).second)
    key += "_" + std::to_string(resourceCounter++);
  resourceNames.insert(key);
  auto &manager = DenseResourceElementsHandle::getManagerInterface(ctx);
  DenseResourceElementsHandle handle = manager.insert(key, std::move(blob));
  return Attribute(DenseResourceElementsAttr::get(type, handle));
}

FailureOr<Attribute> Importer::importTensorAttr(onnx::TensorProto &tensor,
                                                const Twine &what) {
  bool raw = false;
  FailureOr<Attribute> value = importTensor(tensor, what, &raw);
  if (failed(value))
    return failure();
  bool isString = tensor.data_type() == onnx::TensorProto::STRING;
  if (tensor.name().empty() && tensor.doc_string().empty() && (raw || isString))
    return value;
  return Attribute(
      TensorAttr::get(ctx, *value, builder.getStringAttr(tensor.name()),
                      builder.getStringAttr(tensor.doc_string()), raw));
}

FailureOr<Attribute>
Importer::importSparseTensor(onnx::SparseTensorProto &sparse,
                             const Twine &what) {
  FailureOr<Attribute> values =
      importTensorAttr(*sparse.mutable_values(), what + " (values)");
  if (failed(values))
    return failure();
  FailureOr<Attribute> indices =
      importTensorAttr(*sparse.mutable_indices(), what + " (indices)");
  if (failed(indices))
    return failure();
  SmallVector<int64_t> dims(sparse.dims().begin(), sparse.dims().end());
  for (int64_t d : dims)
    if (d < 0 || d > kMaxElements)
      return error() << what << ": sparse tensor dimension " << d
                     << " is out of range";
  return Attribute(SparseTensorAttr::get(ctx, *values, *indices,
                                         DenseI64ArrayAttr::get(ctx, dims)));
}

//===----------------------------------------------------------------------===//
// Attributes
//===----------------------------------------------------------------------===//

FailureOr<Attribute> Importer::importAttribute(onnx::AttributeProto &attr,
                                               StringRef nodeDesc) {
  std::string what = (nodeDesc + ": attribute '" + attr.name() + "'").str();
  auto kind = static_cast<uint32_t>(attr.type());
  if (!attr.ref_attr_name().empty())
    return Attribute(
        RefAttr::get(ctx, builder.getStringAttr(attr.ref_attr_name()), kind));
  switch (attr.type()) {
  case onnx::AttributeProto::FLOAT:
    return Attribute(builder.getF32FloatAttr(attr.f()));
  case onnx::AttributeProto::INT:
    return Attribute(builder.getI64IntegerAttr(attr.i()));
  case onnx::AttributeProto::STRING:
    return Attribute(builder.getStringAttr(attr.s()));
  case onnx::AttributeProto::TENSOR:
    return importTensorAttr(*attr.mutable_t(), what);
  case onnx::AttributeProto::SPARSE_TENSOR:
    return importSparseTensor(*attr.mutable_sparse_tensor(), what);
  case onnx::AttributeProto::FLOATS: {
    SmallVector<float> v(attr.floats().begin(), attr.floats().end());
    return Attribute(DenseF32ArrayAttr::get(ctx, v));
  }
  case onnx::AttributeProto::INTS: {
    SmallVector<int64_t> v(attr.ints().begin(), attr.ints().end());
    return Attribute(DenseI64ArrayAttr::get(ctx, v));
  }
  case onnx::AttributeProto::STRINGS: {
    SmallVector<Attribute> v;
    for (const std::string &s : attr.strings())
      v.push_back(builder.getStringAttr(s));
    return Attribute(builder.getArrayAttr(v));
  }
  case onnx::AttributeProto::TENSORS: {
    SmallVector<Attribute> v;
    for (auto &t : *attr.mutable_tensors()) {
      FailureOr<Attribute> a = importTensorAttr(t, what);
      if (failed(a))
        return failure();
      v.push_back(*a);
    }
    return Attribute(builder.getArrayAttr(v));
  }
  case onnx::AttributeProto::SPARSE_TENSORS: {
    SmallVector<Attribute> v;
    for (auto &t : *attr.mutable_sparse_tensors()) {
      FailureOr<Attribute> a = importSparseTensor(t, what);
      if (failed(a))
        return failure();
      v.push_back(*a);
    }
    return Attribute(builder.getArrayAttr(v));
  }
  case onnx::AttributeProto::TYPE_PROTO:
    return importTypeAttr(attr.tp(), what);
  case onnx::AttributeProto::TYPE_PROTOS: {
    SmallVector<Attribute> v;
    for (const auto &tp : attr.type_protos()) {
      FailureOr<Attribute> t = importTypeAttr(tp, what);
      if (failed(t))
        return failure();
      v.push_back(*t);
    }
    return Attribute(builder.getArrayAttr(v));
  }
  default:
    return error() << what << ": has unknown attribute type " << kind;
  }
}

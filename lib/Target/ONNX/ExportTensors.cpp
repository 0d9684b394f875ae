//===- ExportTensors.cpp - MLIR attributes to ONNX tensors ----------------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// Tensor attributes as TensorProtos (the inverse of ImportTensors.cpp): raw
// or typed storage as the file had it, sub-byte types packed as ONNX packs
// them, splats expanded; the bytes of a main-graph initializer held in a
// resource blob are deferred (written after the model, never copied into the
// protobuf). Sparse tensors and node attributes of every kind.
//
//===----------------------------------------------------------------------===//

#include "ExportONNXInternals.h"
#include "amp/Dialect/Train/IR/OnnxTypes.h"

#include "mlir/IR/BuiltinDialect.h"
#include "mlir/IR/DialectResourceBlobManager.h"

using namespace mlir;
using namespace amp;
using namespace amp::train;
using namespace amp::onnx_detail;

//===----------------------------------------------------------------------===//
// Tensors
//===----------------------------------------------------------------------===//

LogicalResult Exporter::exportTensor(Attribute value, onnx::TensorProto &tensor,
                                     Operation *op, bool raw,
                                     std::vector<DeferredTensor> *deferred) {
  if (auto wrapped = dyn_cast<TensorAttr>(value)) {
    tensor.set_name(wrapped.getName().getValue().str());
    if (!wrapped.getDocString().getValue().empty())
      tensor.set_doc_string(wrapped.getDocString().getValue().str());
    return exportTensor(wrapped.getValue(), tensor, op, wrapped.getRawStorage(),
                        deferred);
  }
  auto typed = dyn_cast<TypedAttr>(value);
  auto type =
      typed ? dyn_cast<RankedTensorType>(typed.getType()) : RankedTensorType();
  if (!type)
    return error(op) << "tensor value " << value << " has no ONNX equivalent";
  std::optional<int32_t> dt = getOnnxDataType(type.getElementType());
  if (!dt)
    return error(op) << "element type " << type.getElementType()
                     << " has no ONNX equivalent";
  tensor.set_data_type(*dt);
  for (int64_t d : type.getShape())
    tensor.add_dims(d);
  int64_t count = type.getNumElements();

  if (auto strs = dyn_cast<DenseStringElementsAttr>(value)) {
    ArrayRef<StringRef> values = strs.getRawStringData();
    for (int64_t i = 0; i < count; ++i)
      tensor.add_string_data((strs.isSplat() ? values[0] : values[i]).str());
    return success();
  }

  // The raw little-endian bytes of the tensor.
  std::string bytes;
  ArrayRef<char> blobData;
  if (auto res = dyn_cast<DenseResourceElementsAttr>(value)) {
    AsmResourceBlob *blob = res.getRawHandle().getBlob();
    if (!blob)
      return error(op) << "resource '" << res.getRawHandle().getKey()
                       << "' has no data";
    blobData = blob->getData();
  } else if (auto dense = dyn_cast<DenseElementsAttr>(value)) {
    unsigned bits = getOnnxDataTypeBits(*dt);
    if (bits < 8 || *dt == onnx::TensorProto::BOOL) {
      // Re-pack sub-byte types as ONNX does (low bits first).
      int64_t size = getRawDataSize(*dt, count);
      bytes.assign(size, '\0');
      int64_t i = 0;
      auto put = [&](uint64_t v) {
        if (*dt == onnx::TensorProto::BOOL) {
          bytes[i] = v ? 1 : 0;
        } else {
          for (unsigned b = 0; b < bits; ++b)
            if (v >> b & 1)
              bytes[(i * bits + b) / 8] |= char(1 << ((i * bits + b) % 8));
        }
        ++i;
      };
      if (isa<FloatType>(type.getElementType()))
        for (APFloat f : dense.getValues<APFloat>())
          put(f.bitcastToAPInt().getZExtValue());
      else
        for (APInt v : dense.getValues<APInt>())
          put(v.getZExtValue());
    } else {
      ArrayRef<char> rawData = dense.getRawData();
      if (dense.isSplat() && count != 1) {
        // Expand the splat.
        bytes.reserve(rawData.size() * count);
        for (int64_t i = 0; i < count; ++i)
          bytes.append(rawData.data(), rawData.size());
      } else {
        bytes.assign(rawData.data(), rawData.size());
      }
    }
  } else {
    return error(op) << "tensor value " << value << " has no ONNX equivalent";
  }

  ArrayRef<char> data =
      blobData.data() ? blobData : ArrayRef<char>(bytes.data(), bytes.size());
  int64_t expected = getRawDataSize(*dt, count);
  if ((int64_t)data.size() != expected)
    return error(op) << "tensor data has " << data.size()
                     << " bytes but its type needs " << expected;

  if (!raw) {
    // Typed storage, the inverse of the importer's conversion.
    auto le = [&](int64_t i, unsigned w) {
      uint64_t v = 0;
      for (unsigned b = 0; b < w; ++b)
        v |= uint64_t(uint8_t(data[i * w + b])) << (8 * b);
      return v;
    };
    unsigned bits = getOnnxDataTypeBits(*dt);
    switch (*dt) {
    case onnx::TensorProto::FLOAT:
    case onnx::TensorProto::COMPLEX64:
      for (size_t i = 0; i < data.size() / 4; ++i)
        tensor.add_float_data(llvm::bit_cast<float>(uint32_t(le(i, 4))));
      return success();
    case onnx::TensorProto::DOUBLE:
    case onnx::TensorProto::COMPLEX128:
      for (size_t i = 0; i < data.size() / 8; ++i)
        tensor.add_double_data(llvm::bit_cast<double>(le(i, 8)));
      return success();
    case onnx::TensorProto::INT64:
      for (size_t i = 0; i < data.size() / 8; ++i)
        tensor.add_int64_data(int64_t(le(i, 8)));
      return success();
    case onnx::TensorProto::UINT32:
    case onnx::TensorProto::UINT64: {
      unsigned w = bits / 8;
      for (size_t i = 0; i < data.size() / w; ++i)
        tensor.add_uint64_data(le(i, w));
      return success();
    }
    default: {
      if (bits < 8 && 8 % bits != 0) {
        // 6-bit floats: one element per int32.
        for (int64_t i = 0; i < count; ++i) {
          uint32_t v = 0;
          for (unsigned b = 0; b < bits; ++b) {
            int64_t bit = i * bits + b;
            v |= uint32_t((uint8_t(data[bit / 8]) >> (bit % 8)) & 1) << b;
          }
          tensor.add_int32_data(int32_t(v));
        }
        return success();
      }
      unsigned w = bits < 8 ? 1 : bits / 8;
      bool isSigned = *dt == onnx::TensorProto::INT8 ||
                      *dt == onnx::TensorProto::INT16 ||
                      *dt == onnx::TensorProto::INT32;
      for (size_t i = 0; i < data.size() / w; ++i) {
        uint64_t v = le(i, w);
        int64_t sv = (int64_t)v;
        if (isSigned && w < 8 && (v >> (8 * w - 1)))
          sv = (int64_t)(v | (~uint64_t(0) << (8 * w)));
        tensor.add_int32_data((int32_t)sv);
      }
      return success();
    }
    }
  }
  if (deferred && blobData.data()) {
    deferred->push_back({tensor, blobData, nullptr, false});
    return success();
  }
  tensor.set_raw_data(data.data(), data.size());
  return success();
}

//===----------------------------------------------------------------------===//
// Attributes
//===----------------------------------------------------------------------===//

LogicalResult Exporter::exportAttribute(StringRef name, Attribute value,
                                        onnx::AttributeProto &attr,
                                        Operation *op, int64_t kindHint) {
  attr.set_name(name.str());
  if (auto ref = dyn_cast<RefAttr>(value)) {
    attr.set_ref_attr_name(ref.getRefName().getValue().str());
    attr.set_type((onnx::AttributeProto::AttributeType)ref.getKind());
    return success();
  }
  if (auto f = dyn_cast<FloatAttr>(value)) {
    attr.set_type(onnx::AttributeProto::FLOAT);
    attr.set_f(f.getValueAsDouble());
  } else if (auto i = dyn_cast<IntegerAttr>(value)) {
    attr.set_type(onnx::AttributeProto::INT);
    attr.set_i(i.getValue().getSExtValue());
  } else if (auto s = dyn_cast<StringAttr>(value)) {
    attr.set_type(onnx::AttributeProto::STRING);
    attr.set_s(s.getValue().str());
  } else if (auto fs = dyn_cast<DenseF32ArrayAttr>(value)) {
    attr.set_type(onnx::AttributeProto::FLOATS);
    for (float f : fs.asArrayRef())
      attr.add_floats(f);
  } else if (auto is = dyn_cast<DenseI64ArrayAttr>(value)) {
    attr.set_type(onnx::AttributeProto::INTS);
    for (int64_t v : is.asArrayRef())
      attr.add_ints(v);
  } else if (auto sp = dyn_cast<SparseTensorAttr>(value)) {
    attr.set_type(onnx::AttributeProto::SPARSE_TENSOR);
    return exportSparseTensor(sp, *attr.mutable_sparse_tensor(), op);
  } else if (isa<ElementsAttr, TensorAttr>(value)) {
    attr.set_type(onnx::AttributeProto::TENSOR);
    return exportTensor(value, *attr.mutable_t(), op, true, nullptr);
  } else if (auto t = dyn_cast<TypeAttr>(value)) {
    attr.set_type(onnx::AttributeProto::TYPE_PROTO);
    return exportType(t.getValue(), {}, *attr.mutable_tp(), op);
  } else if (auto tp = dyn_cast<TypeProtoAttr>(value)) {
    attr.set_type(onnx::AttributeProto::TYPE_PROTO);
    attr.mutable_tp()->ParseFromString(tp.getProto().getValue().str());
  } else if (auto list = dyn_cast<ArrayAttr>(value)) {
    int64_t kind = kindHint;
    if (kind < 0 && !list.empty()) {
      Attribute first = list[0];
      kind = isa<StringAttr>(first) ? onnx::AttributeProto::STRINGS
             : isa<SparseTensorAttr>(first)
                 ? onnx::AttributeProto::SPARSE_TENSORS
             : isa<TypeAttr, TypeProtoAttr>(first)
                 ? onnx::AttributeProto::TYPE_PROTOS
                 : onnx::AttributeProto::TENSORS;
    }
    if (kind < 0)
      kind = onnx::AttributeProto::STRINGS;
    attr.set_type((onnx::AttributeProto::AttributeType)kind);
    for (Attribute e : list) {
      switch (kind) {
      case onnx::AttributeProto::STRINGS:
        attr.add_strings(cast<StringAttr>(e).getValue().str());
        break;
      case onnx::AttributeProto::TENSORS:
        if (failed(exportTensor(e, *attr.add_tensors(), op, true, nullptr)))
          return failure();
        break;
      case onnx::AttributeProto::SPARSE_TENSORS:
        if (failed(exportSparseTensor(cast<SparseTensorAttr>(e),
                                      *attr.add_sparse_tensors(), op)))
          return failure();
        break;
      case onnx::AttributeProto::GRAPHS:
        return error(op) << "attribute '" << name
                         << "': a GRAPHS list is held as regions";
      case onnx::AttributeProto::TYPE_PROTOS:
        if (auto tp = dyn_cast<TypeProtoAttr>(e))
          attr.add_type_protos()->ParseFromString(
              tp.getProto().getValue().str());
        else if (failed(exportType(cast<TypeAttr>(e).getValue(), {},
                                   *attr.add_type_protos(), op)))
          return failure();
        break;
      default:
        return error(op) << "attribute '" << name << "' has a list kind "
                         << kind << " that cannot be exported";
      }
    }
  } else {
    return error(op) << "attribute '" << name << "' (" << value
                     << ") has no ONNX equivalent";
  }
  return success();
}

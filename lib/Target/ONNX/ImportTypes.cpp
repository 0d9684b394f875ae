//===- ImportTypes.cpp - ONNX types to MLIR types -------------------------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// ONNX TypeProtos as MLIR types (tensors, sparse tensors, sequences,
// optionals, maps), with symbolic dims in `train.dims` and the whole
// TypeProto kept where the type cannot hold it (denotations, nested symbolic
// dims); value infos and TYPE_PROTO attributes.
//
//===----------------------------------------------------------------------===//

#include "ImportONNXInternals.h"
#include "amp/Dialect/Train/IR/OnnxTypes.h"

using namespace mlir;
using namespace amp;
using namespace amp::train;
using namespace amp::onnx_detail;

//===----------------------------------------------------------------------===//
// Types
//===----------------------------------------------------------------------===//

FailureOr<Type> Importer::importType(const onnx::TypeProto &type,
                                     const Twine &what,
                                     SmallVectorImpl<Attribute> *dims) {
  // Denotations have no place in MLIR types; importValueInfo keeps the
  // whole TypeProto when it has any.
  switch (type.value_case()) {
  case onnx::TypeProto::kTensorType:
  case onnx::TypeProto::kSparseTensorType: {
    bool sparse = type.value_case() == onnx::TypeProto::kSparseTensorType;
    int32_t elemType = sparse ? type.sparse_tensor_type().elem_type()
                              : type.tensor_type().elem_type();
    // elem_type 0 (UNDEFINED) appears in real files: keep it unknown.
    Type elt = elemType == 0 ? Type(UnknownType::get(ctx))
                             : getElementTypeForOnnxDataType(ctx, elemType);
    if (!elt)
      return error() << what << ": unknown element type " << elemType;
    bool hasShape = sparse ? type.sparse_tensor_type().has_shape()
                           : type.tensor_type().has_shape();
    Type result;
    if (!hasShape) {
      result = UnrankedTensorType::get(elt);
    } else {
      const onnx::TensorShapeProto &shape =
          sparse ? type.sparse_tensor_type().shape()
                 : type.tensor_type().shape();
      SmallVector<int64_t> sizes;
      bool anyParam = false;
      SmallVector<Attribute> dimNames;
      for (const auto &d : shape.dim()) {
        if (d.has_dim_value() && d.dim_value() < 0) {
          // Some exporters write -1 for "unknown"; MLIR has only `?`, so
          // the value travels in train.dims.
          sizes.push_back(ShapedType::kDynamic);
          dimNames.push_back(builder.getI64IntegerAttr(d.dim_value()));
          anyParam = true;
        } else if (d.has_dim_value()) {
          sizes.push_back(d.dim_value());
          dimNames.push_back(builder.getStringAttr(""));
        } else {
          sizes.push_back(ShapedType::kDynamic);
          // "?" marks a dim with neither value nor param.
          if (d.has_dim_param()) {
            anyParam = true;
            dimNames.push_back(builder.getStringAttr(d.dim_param()));
          } else {
            dimNames.push_back(builder.getStringAttr(""));
          }
        }
      }
      if (anyParam && dims)
        dims->append(dimNames.begin(), dimNames.end());
      result = RankedTensorType::get(sizes, elt);
    }
    if (sparse)
      return Type(SparseTensorType::get(ctx, result));
    return result;
  }
  case onnx::TypeProto::kSequenceType: {
    if (!type.sequence_type().has_elem_type())
      return Type(SeqType::get(ctx, UnknownType::get(ctx)));
    FailureOr<Type> inner =
        importType(type.sequence_type().elem_type(), what, nullptr);
    if (failed(inner))
      return failure();
    return Type(SeqType::get(ctx, *inner));
  }
  case onnx::TypeProto::kOptionalType: {
    if (!type.optional_type().has_elem_type())
      return Type(OptType::get(ctx, UnknownType::get(ctx)));
    FailureOr<Type> inner =
        importType(type.optional_type().elem_type(), what, nullptr);
    if (failed(inner))
      return failure();
    return Type(OptType::get(ctx, *inner));
  }
  case onnx::TypeProto::kMapType: {
    Type key = getElementTypeForOnnxDataType(ctx, type.map_type().key_type());
    if (!key)
      return error() << what << ": unknown map key type "
                     << type.map_type().key_type();
    FailureOr<Type> value =
        importType(type.map_type().value_type(), what, nullptr);
    if (failed(value))
      return failure();
    return Type(MapType::get(ctx, key, *value));
  }
  case onnx::TypeProto::VALUE_NOT_SET:
    return Type(UnknownType::get(ctx));
  default:
    return error() << what << ": unsupported ONNX type kind "
                   << (int)type.value_case();
  }
}

/// Whether a TypeProto says more than its MLIR type plus the top-level
/// `train.dims` can hold: denotations anywhere, symbolic dims below the top
/// level (or at the top when `topLevelDims` is false).
static bool typeLosesInfo(const onnx::TypeProto &type, bool topLevelDims) {
  if (!type.denotation().empty())
    return true;
  auto shapeLoses = [&](const onnx::TensorShapeProto &shape) {
    return llvm::any_of(shape.dim(), [&](const auto &d) {
      return !d.denotation().empty() || (!topLevelDims && d.has_dim_param());
    });
  };
  switch (type.value_case()) {
  case onnx::TypeProto::kTensorType:
    return shapeLoses(type.tensor_type().shape());
  case onnx::TypeProto::kSparseTensorType:
    return shapeLoses(type.sparse_tensor_type().shape());
  case onnx::TypeProto::kSequenceType:
    return typeLosesInfo(type.sequence_type().elem_type(), false);
  case onnx::TypeProto::kOptionalType:
    return typeLosesInfo(type.optional_type().elem_type(), false);
  case onnx::TypeProto::kMapType:
    return typeLosesInfo(type.map_type().value_type(), false);
  default:
    return false;
  }
}

FailureOr<DictionaryAttr>
Importer::importValueInfo(const onnx::ValueInfoProto &vi, const Twine &what,
                          Type *typeOut) {
  NamedAttrList entry;
  entry.set("name", builder.getStringAttr(vi.name()));
  SmallVector<Attribute> dims;
  Type type = UnknownType::get(ctx);
  if (vi.has_type()) {
    FailureOr<Type> t = importType(vi.type(), what, &dims);
    if (failed(t))
      return failure();
    type = *t;
    entry.set("type", TypeAttr::get(type));
    if (typeLosesInfo(vi.type(), /*topLevelDims=*/true))
      entry.set(attrs::kTypeProto,
                builder.getStringAttr(vi.type().SerializeAsString()));
  }
  if (!dims.empty())
    entry.set(attrs::kDims, builder.getArrayAttr(dims));
  setDoc(entry, vi.doc_string());
  if (StringAttr u = unknownFields(vi))
    entry.set("train.unknown_fields", u);
  if (typeOut)
    *typeOut = type;
  return entry.getDictionary(ctx);
}

FailureOr<Attribute> Importer::importTypeAttr(const onnx::TypeProto &tp,
                                              const Twine &what) {
  FailureOr<Type> t = importType(tp, what, nullptr);
  if (failed(t))
    return failure();
  if (!typeLosesInfo(tp, /*topLevelDims=*/false))
    return Attribute(TypeAttr::get(*t));
  // Symbolic dims or denotations: the type plus the original TypeProto.
  return Attribute(TypeProtoAttr::get(
      ctx, TypeAttr::get(*t), builder.getStringAttr(tp.SerializeAsString())));
}

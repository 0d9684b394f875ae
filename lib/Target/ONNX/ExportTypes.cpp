//===- ExportTypes.cpp - MLIR types to ONNX types -------------------------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// MLIR types as ONNX TypeProtos (the inverse of ImportTypes.cpp), with the
// symbolic dims of `train.dims`; value infos, written from the TypeProto the
// importer kept when the type is unchanged, else with the element type
// refreshed from the value (a pass may have changed the precision).
//
//===----------------------------------------------------------------------===//

#include "ExportONNXInternals.h"
#include "amp/Dialect/Train/IR/OnnxTypes.h"

using namespace mlir;
using namespace amp;
using namespace amp::train;
using namespace amp::onnx_detail;

//===----------------------------------------------------------------------===//
// Types
//===----------------------------------------------------------------------===//

LogicalResult Exporter::exportType(Type type, ArrayAttr dims,
                                   onnx::TypeProto &proto, Operation *op) {
  auto setTensor = [&](TensorType t,
                       onnx::TypeProto_Tensor *tp) -> LogicalResult {
    std::optional<int32_t> dt = getOnnxDataType(t.getElementType());
    if (!dt)
      return error(op) << "element type " << t.getElementType()
                       << " has no ONNX equivalent";
    tp->set_elem_type(*dt);
    if (auto ranked = dyn_cast<RankedTensorType>(t)) {
      onnx::TensorShapeProto *shape = tp->mutable_shape();
      for (auto [i, d] : llvm::enumerate(ranked.getShape())) {
        auto *dim = shape->add_dim();
        StringRef param;
        IntegerAttr literal;
        if (dims && i < dims.size()) {
          if (auto s = dyn_cast<StringAttr>(dims[i]))
            param = s.getValue();
          else
            literal = dyn_cast<IntegerAttr>(dims[i]);
        }
        if (!ShapedType::isDynamic(d))
          dim->set_dim_value(d);
        else if (literal)
          dim->set_dim_value(literal.getInt());
        else if (!param.empty())
          dim->set_dim_param(param.str());
      }
    }
    return success();
  };
  if (auto t = dyn_cast<TensorType>(type))
    return setTensor(t, proto.mutable_tensor_type());
  if (auto s = dyn_cast<SparseTensorType>(type)) {
    auto *tp = proto.mutable_sparse_tensor_type();
    onnx::TypeProto_Tensor tmp;
    if (failed(setTensor(cast<TensorType>(s.getTensorType()), &tmp)))
      return failure();
    tp->set_elem_type(tmp.elem_type());
    if (tmp.has_shape())
      *tp->mutable_shape() = tmp.shape();
    return success();
  }
  if (auto s = dyn_cast<SeqType>(type)) {
    auto *seq = proto.mutable_sequence_type();
    if (isa<UnknownType>(s.getElementType()))
      return success();
    return exportType(s.getElementType(), {}, *seq->mutable_elem_type(), op);
  }
  if (auto o = dyn_cast<OptType>(type)) {
    auto *opt = proto.mutable_optional_type();
    if (isa<UnknownType>(o.getElementType()))
      return success();
    return exportType(o.getElementType(), {}, *opt->mutable_elem_type(), op);
  }
  if (auto m = dyn_cast<MapType>(type)) {
    auto *map = proto.mutable_map_type();
    std::optional<int32_t> key = getOnnxDataType(m.getKeyType());
    if (!key)
      return error(op) << "map key type " << m.getKeyType()
                       << " has no ONNX equivalent";
    map->set_key_type(*key);
    return exportType(m.getValueType(), {}, *map->mutable_value_type(), op);
  }
  if (isa<UnknownType>(type))
    return success();
  return error(op) << "type " << type << " has no ONNX equivalent";
}

/// The declared type with its element type refreshed from the value's
/// current type (a pass may have changed the precision).
static Type refreshType(Type declared, Type current) {
  auto d = dyn_cast<TensorType>(declared);
  auto c = dyn_cast_or_null<TensorType>(current);
  if (!d || !c || d.getElementType() == c.getElementType())
    return declared;
  return d.clone(c.getElementType());
}

LogicalResult Exporter::exportValueInfo(DictionaryAttr entry, Type current,
                                        onnx::ValueInfoProto &vi,
                                        Operation *op) {
  vi.set_name(cast<StringAttr>(entry.get("name")).getValue().str());
  if (auto doc = entry.getAs<StringAttr>(attrs::kDocString))
    vi.set_doc_string(doc.getValue().str());
  if (auto typeAttr = entry.getAs<TypeAttr>("type")) {
    Type t = entry.get(attrs::kKeepType)
                 ? typeAttr.getValue()
                 : refreshType(typeAttr.getValue(), current);
    auto original = entry.getAs<StringAttr>(attrs::kTypeProto);
    if (original && t == typeAttr.getValue()) {
      // Unchanged: the original TypeProto, denotations included.
      vi.mutable_type()->ParseFromString(original.getValue().str());
    } else if (failed(exportType(t, entry.getAs<ArrayAttr>(attrs::kDims),
                                 *vi.mutable_type(), op))) {
      return failure();
    }
  }
  if (auto u = entry.getAs<StringAttr>("train.unknown_fields"))
    vi.MergeFromString(u.getValue().str());
  return success();
}

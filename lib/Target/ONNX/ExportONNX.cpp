//===- ExportONNX.cpp - train dialect to ONNX protobuf --------------------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// Writes a train-dialect module back to an ONNX ModelProto: the inverse of
// ImportONNX.cpp. Tensor data held in resource blobs is not copied into the
// protobuf: the model is serialized without it and each large initializer is
// appended as a separate `graph { initializer { ... raw_data } }` chunk
// (protobuf merges repeated occurrences of a message field), so exporting a
// 1 GB model needs no second gigabyte.
//
//===----------------------------------------------------------------------===//

#include "amp/Target/ONNX/ExportONNX.h"
#include "ONNXInternals.h"
#include "amp/Dialect/Train/IR/CastNamer.h"
#include "amp/Dialect/Train/IR/CastNames.h"
#include "amp/Dialect/Train/IR/OnnxTypes.h"
#include "amp/Dialect/Train/IR/TrainOps.h"

#include "amp/Target/ONNX/ExternalData.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/Tools/mlir-translate/Translation.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/ManagedStatic.h"
#include <optional>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <onnx/onnx_pb.h>

using namespace mlir;
using namespace amp;
using namespace amp::train;
using namespace amp::onnx_detail;

namespace {

/// An initializer of the main graph whose bytes are written after the model
/// (straight from its resource blob, or from `owned`), or into the external
/// data file.
struct DeferredTensor {
  onnx::TensorProto header;           // everything but the data
  ArrayRef<char> data;                // the bytes, when they live in a blob
  std::unique_ptr<std::string> owned; // else the bytes
  bool external = false;
  ArrayRef<char> bytes() const {
    return owned ? ArrayRef<char>(owned->data(), owned->size()) : data;
  }
};

class Exporter {
public:
  Exporter(ModuleOp module, const ExportOnnxOptions &options)
      : module(module), ctx(module.getContext()), options(options) {}
  LogicalResult exportModel(onnx::ModelProto &model,
                            std::vector<DeferredTensor> &deferred);

private:
  InFlightDiagnostic error(Operation *op) { return op->emitError(); }
  LogicalResult exportGraph(Block &block, onnx::GraphProto &graph,
                            DictionaryAttr info, Operation *owner,
                            std::vector<DeferredTensor> *deferred);
  LogicalResult exportNode(Operation *op, onnx::NodeProto &node);
  LogicalResult exportAttribute(StringRef name, Attribute value,
                                onnx::AttributeProto &attr, Operation *op,
                                int64_t kindHint);
  LogicalResult exportTensor(Attribute value, onnx::TensorProto &tensor,
                             Operation *op, bool raw,
                             std::vector<DeferredTensor> *deferred);
  LogicalResult exportSparseTensor(SparseTensorAttr sparse,
                                   onnx::SparseTensorProto &proto,
                                   Operation *op) {
    if (failed(exportTensor(sparse.getValues(), *proto.mutable_values(), op,
                            /*raw=*/true, nullptr)) ||
        failed(exportTensor(sparse.getIndices(), *proto.mutable_indices(), op,
                            /*raw=*/true, nullptr)))
      return failure();
    for (int64_t d : sparse.getDims().asArrayRef())
      proto.add_dims(d);
    return success();
  }
  LogicalResult exportType(Type type, ArrayAttr dims, onnx::TypeProto &proto,
                           Operation *op);
  LogicalResult exportValueInfo(DictionaryAttr entry, Type current,
                                onnx::ValueInfoProto &vi, Operation *op);
  std::string nameOf(Value v);
  void mergeUnknown(Operation *op, google::protobuf::Message &msg) {
    if (auto u = op->getAttrOfType<StringAttr>("train.unknown_fields"))
      msg.MergeFromString(u.getValue().str());
  }

  /// Whether the main-graph initializer `init` goes to the external data
  /// file (ExternalDataMode).
  bool goesExternal(InitializerOp init);

  ModuleOp module;
  MLIRContext *ctx;
  const ExportOnnxOptions &options;
  /// ONNX names of values.
  DenseMap<Value, std::string> names;
  llvm::StringSet<> usedNames;
  unsigned generated = 0;
  /// Casts a pass left unnamed in the main graph are named here, by the
  /// rule of CastNames.h, without interning the names in the context.
  GraphOp mainGraph;
  std::optional<CastNameScope> castNames;
  DenseMap<Operation *, StringRef> castNodeNames; ///< given here
  CastNameScope &castNameScope() {
    if (!castNames)
      castNames.emplace(mainGraph);
    return *castNames;
  }
  bool isGeneratedCast(Operation *op) {
    return mainGraph && isa<CastOp>(op) && mainGraph->isProperAncestor(op);
  }
};

} // namespace

std::string Exporter::nameOf(Value v) {
  auto it = names.find(v);
  if (it != names.end())
    return it->second;
  if (isa<NoneType>(v.getType()))
    return "";
  Operation *def = v.getDefiningOp();
  if (def && isGeneratedCast(def) && hasUnnamedCastOutput(def)) {
    auto castOp = cast<CastOp>(def);
    std::string name = castNameScope()
                           .takeValueName(getCastValueNameBase(
                               castOp, nameOf(castOp.getInput())))
                           .str();
    usedNames.insert(name);
    names[v] = name;
    return name;
  }
  // A value a pass created: give it a fresh unique name.
  std::string name;
  do {
    name = "amp_value_" + std::to_string(generated++);
  } while (usedNames.contains(name));
  usedNames.insert(name);
  names[v] = name;
  return name;
}

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

//===----------------------------------------------------------------------===//
// Nodes and graphs
//===----------------------------------------------------------------------===//

LogicalResult Exporter::exportNode(Operation *op, onnx::NodeProto &node) {
  auto iface = cast<OnnxNodeOpInterface>(op);
  auto generic = dyn_cast<NodeOp>(op);
  if (generic)
    node.set_domain(generic.getDomain().str());
  else if (!iface.getOnnxDomain().empty())
    node.set_domain(iface.getOnnxDomain().str());
  node.set_op_type(iface.getOnnxOpType().str());
  if (auto name = op->getAttrOfType<StringAttr>(attrs::kNodeName))
    node.set_name(name.getValue().str());
  else if (isGeneratedCast(op) && isUnnamedCast(op)) {
    auto castOp = cast<CastOp>(op);
    StringRef name = castNameScope().takeNodeName(getCastNodeNameBase(
        castOp, nameOf(castOp.getInput()), [&](Operation *def) -> StringRef {
          if (auto n = def->getAttrOfType<StringAttr>(attrs::kNodeName))
            return n.getValue();
          return castNodeNames.lookup(def);
        }));
    castNodeNames[op] = name;
    node.set_name(name.str());
  }
  if (auto doc = op->getAttrOfType<StringAttr>(attrs::kDocString))
    node.set_doc_string(doc.getValue().str());

  // Inputs: trailing absent ones are dropped unless ONNX had them.
  SmallVector<std::string> inputs;
  for (Value v : op->getOperands())
    inputs.push_back(nameOf(v));
  int64_t numInputs = inputs.size();
  if (auto n = op->getAttrOfType<IntegerAttr>(attrs::kNumInputs))
    numInputs = n.getInt();
  else if (!generic)
    while (numInputs > 0 && inputs[numInputs - 1].empty())
      --numInputs;
  for (int64_t i = 0; i < numInputs; ++i)
    node.add_input(i < (int64_t)inputs.size() ? inputs[i] : "");

  // Outputs: the recorded ONNX count (absent trailing ones omitted).
  auto outNames = op->getAttrOfType<ArrayAttr>(attrs::kOutputNames);
  unsigned numOutputs = op->getNumResults();
  if (outNames && !generic)
    numOutputs = std::min<unsigned>(numOutputs, outNames.size());
  if (!outNames)
    while (numOutputs > 0 &&
           isa<NoneType>(op->getResult(numOutputs - 1).getType()))
      --numOutputs;
  for (unsigned i = 0; i < numOutputs; ++i)
    node.add_output(nameOf(op->getResult(i)));

  // Attributes.
  auto kinds = op->getAttrOfType<DictionaryAttr>("train.attr_kinds");
  auto docs = op->getAttrOfType<DictionaryAttr>(attrs::kAttrDocs);
  auto exportOne = [&](StringRef name, Attribute value) -> LogicalResult {
    int64_t hint = -1;
    if (kinds)
      if (auto k = kinds.getAs<IntegerAttr>(name))
        hint = k.getInt();
    onnx::AttributeProto *attr = node.add_attribute();
    if (docs)
      if (auto d = docs.getAs<StringAttr>(name))
        attr->set_doc_string(d.getValue().str());
    return exportAttribute(name, value, *attr, op, hint);
  };
  if (generic) {
    for (NamedAttribute na : generic.getAttrs())
      if (failed(exportOne(na.getName(), na.getValue())))
        return failure();
  } else {
    for (NamedAttribute na : op->getAttrs())
      if (!isBookkeepingAttr(na.getName()) &&
          failed(exportOne(na.getName(), na.getValue())))
        return failure();
  }
  // Graph attributes.
  auto infos = op->getAttrOfType<DictionaryAttr>(attrs::kSubgraphs);
  SmallVector<StringRef> graphNames = iface.getGraphAttrNames();
  llvm::StringMap<onnx::AttributeProto *> lists; // GRAPHS attributes
  for (auto [name, region] : llvm::zip(graphNames, op->getRegions())) {
    if (region.empty())
      continue;
    bool isList = false;
    if (kinds)
      if (auto k = kinds.getAs<IntegerAttr>(name))
        isList = k.getInt() == onnx::AttributeProto::GRAPHS;
    onnx::AttributeProto *attr = isList ? lists.lookup(name) : nullptr;
    std::string infoKey = name.str();
    if (!attr) {
      attr = node.add_attribute();
      attr->set_name(name.str());
      attr->set_type(isList ? onnx::AttributeProto::GRAPHS
                            : onnx::AttributeProto::GRAPH);
      if (docs)
        if (auto d = docs.getAs<StringAttr>(name))
          attr->set_doc_string(d.getValue().str());
      if (isList)
        lists[name] = attr;
    }
    if (isList)
      infoKey += "#" + std::to_string(attr->graphs_size());
    DictionaryAttr info =
        infos ? infos.getAs<DictionaryAttr>(infoKey) : DictionaryAttr();
    onnx::GraphProto *g = isList ? attr->add_graphs() : attr->mutable_g();
    if (failed(exportGraph(region.front(), *g, info, op, nullptr)))
      return failure();
  }
  // Attribute order: as recorded, else sorted by name.
  auto *attrList = node.mutable_attribute();
  SmallVector<StringRef> order;
  if (auto recorded = op->getAttrOfType<ArrayAttr>(attrs::kAttrOrder))
    for (Attribute a : recorded)
      order.push_back(cast<StringAttr>(a).getValue());
  auto rank = [&](const onnx::AttributeProto *a) {
    auto it = llvm::find(order, a->name());
    return std::make_pair(it == order.end() ? order.size() : it - order.begin(),
                          StringRef(a->name()));
  };
  std::stable_sort(
      attrList->pointer_begin(), attrList->pointer_end(),
      [&](const onnx::AttributeProto *a, const onnx::AttributeProto *b) {
        return rank(a) < rank(b);
      });
  mergeUnknown(op, node);
  return success();
}

LogicalResult Exporter::exportGraph(Block &block, onnx::GraphProto &graph,
                                    DictionaryAttr info, Operation *owner,
                                    std::vector<DeferredTensor> *deferred) {
  // Names first, so references to later values resolve.
  ArrayAttr inputInfos = info ? info.getAs<ArrayAttr>("inputs") : ArrayAttr();
  ArrayAttr outputInfos = info ? info.getAs<ArrayAttr>("outputs") : ArrayAttr();
  for (auto [i, arg] : llvm::enumerate(block.getArguments())) {
    if (!inputInfos || i >= inputInfos.size())
      continue; // function arguments are named by the caller
    std::string name =
        cast<StringAttr>(cast<DictionaryAttr>(inputInfos[i]).get("name"))
            .getValue()
            .str();
    names[arg] = name;
    usedNames.insert(name);
  }
  for (Operation &op : block) {
    if (auto init = dyn_cast<InitializerOp>(op)) {
      if (!names.count(init.getResult())) {
        names[init.getResult()] = init.getName().str();
        usedNames.insert(init.getName());
      }
      continue;
    }
    auto outNames = op.getAttrOfType<ArrayAttr>(attrs::kOutputNames);
    if (!outNames)
      continue;
    for (auto [i, n] : llvm::enumerate(outNames))
      if (i < op.getNumResults()) {
        StringRef s = cast<StringAttr>(n).getValue();
        if (s.empty())
          continue;
        names[op.getResult(i)] = s.str();
        usedNames.insert(s);
      }
  }

  if (info) {
    if (auto n = info.getAs<StringAttr>(attrs::kGraphName))
      graph.set_name(n.getValue().str());
    if (auto d = info.getAs<StringAttr>(attrs::kDocString))
      graph.set_doc_string(d.getValue().str());
  }
  for (auto [i, arg] : llvm::enumerate(block.getArguments())) {
    onnx::ValueInfoProto *vi = graph.add_input();
    if (inputInfos && i < inputInfos.size()) {
      if (failed(exportValueInfo(cast<DictionaryAttr>(inputInfos[i]),
                                 arg.getType(), *vi, owner)))
        return failure();
    } else {
      vi->set_name(nameOf(arg));
    }
  }

  Operation *terminator = block.getTerminator();
  // Nodes go out in block order, or in their recorded file order when the
  // graph was stored unsorted. A node a pass added (no order) follows the
  // node before it.
  SmallVector<std::pair<int64_t, Operation *>> order;
  int64_t key = -1;
  bool reorder = false;
  for (Operation &op : block) {
    if (auto o = op.getAttrOfType<IntegerAttr>(attrs::kOrder)) {
      key = o.getInt();
      reorder = true;
    }
    order.push_back({key, &op});
  }
  if (reorder)
    llvm::stable_sort(
        order, [](const auto &a, const auto &b) { return a.first < b.first; });
  for (auto &entry : order) {
    Operation &op = *entry.second;
    if (&op == terminator || isa<NoneOp>(op))
      continue;
    if (auto init = dyn_cast<InitializerOp>(op)) {
      if (init.getSparse()) {
        if (failed(exportSparseTensor(cast<SparseTensorAttr>(init.getValue()),
                                      *graph.add_sparse_initializer(), &op)))
          return failure();
        continue;
      }
      onnx::TensorProto tensor;
      tensor.set_name(init.getName().str());
      if (auto doc = init.getDocString())
        tensor.set_doc_string(doc->str());
      size_t before = deferred ? deferred->size() : 0;
      // External data is raw bytes, whatever the storage on import.
      bool external = deferred && goesExternal(init);
      if (failed(exportTensor(init.getValue(), tensor, &op,
                              init.getRaw() || external, deferred)))
        return failure();
      mergeUnknown(&op, tensor);
      if (external && deferred->size() == before) {
        // Bytes that are not in a blob (a small tensor held inline).
        auto owned = std::make_unique<std::string>(
            std::move(*tensor.mutable_raw_data()));
        tensor.clear_raw_data();
        deferred->push_back({onnx::TensorProto(), {}, std::move(owned), true});
      }
      if (deferred && deferred->size() > before) {
        deferred->back().header = std::move(tensor);
        deferred->back().external = external;
        // Keep the initializer's position: a placeholder marks it.
        graph.add_initializer()->set_name("\x01amp-deferred");
      } else {
        *graph.add_initializer() = std::move(tensor);
      }
      continue;
    }
    if (!isa<OnnxNodeOpInterface>(op))
      return op.emitError("cannot be exported to ONNX: not an ONNX node");
    if (failed(exportNode(&op, *graph.add_node())))
      return failure();
  }

  // Outputs.
  for (auto [i, v] : llvm::enumerate(terminator->getOperands())) {
    onnx::ValueInfoProto *vi = graph.add_output();
    if (outputInfos && i < outputInfos.size()) {
      if (failed(exportValueInfo(cast<DictionaryAttr>(outputInfos[i]),
                                 v.getType(), *vi, owner)))
        return failure();
      // The value feeding an output is named after it.
      std::string want = vi->name(), have = nameOf(v);
      if (want != have)
        return terminator->emitError("graph output '")
               << want << "' is fed by value '" << have
               << "' of another name; ONNX needs an Identity node here";
    } else {
      vi->set_name(nameOf(v));
    }
  }
  if (info)
    if (auto vis = info.getAs<ArrayAttr>(attrs::kValueInfo)) {
      // Refresh element types from the values they describe.
      llvm::StringMap<Type> current;
      for (auto &[v, n] : names)
        if (!n.empty() && v.getParentBlock() == &block)
          current[n] = v.getType();
      for (Attribute a : vis) {
        auto entry = cast<DictionaryAttr>(a);
        Type t = current.lookup(cast<StringAttr>(entry.get("name")).getValue());
        if (failed(exportValueInfo(entry, t, *graph.add_value_info(), owner)))
          return failure();
      }
    }
  if (info)
    if (auto u = info.getAs<StringAttr>("train.unknown_fields"))
      graph.MergeFromString(u.getValue().str());
  return success();
}

//===----------------------------------------------------------------------===//
// Model
//===----------------------------------------------------------------------===//

static void exportOpsets(
    ArrayAttr list,
    google::protobuf::RepeatedPtrField<onnx::OperatorSetIdProto> &out) {
  if (!list)
    return;
  for (Attribute e : list) {
    auto pair = cast<ArrayAttr>(e);
    auto *o = out.Add();
    o->set_domain(cast<StringAttr>(pair[0]).getValue().str());
    o->set_version(cast<IntegerAttr>(pair[1]).getInt());
  }
}

LogicalResult Exporter::exportModel(onnx::ModelProto &model,
                                    std::vector<DeferredTensor> &deferred) {
  Operation *m = module;
  if (auto v = m->getAttrOfType<IntegerAttr>(attrs::kIrVersion))
    model.set_ir_version(v.getInt());
  else
    model.set_ir_version(8);
  exportOpsets(m->getAttrOfType<ArrayAttr>(attrs::kOpsetImport),
               *model.mutable_opset_import());
  if (auto s = m->getAttrOfType<StringAttr>(attrs::kProducerName))
    model.set_producer_name(s.getValue().str());
  if (auto s = m->getAttrOfType<StringAttr>(attrs::kProducerVersion))
    model.set_producer_version(s.getValue().str());
  if (auto s = m->getAttrOfType<StringAttr>(attrs::kModelDomain))
    model.set_domain(s.getValue().str());
  if (auto v = m->getAttrOfType<IntegerAttr>(attrs::kModelVersion))
    model.set_model_version(v.getInt());
  if (auto s = m->getAttrOfType<StringAttr>(attrs::kDocString))
    model.set_doc_string(s.getValue().str());
  if (auto props = m->getAttrOfType<ArrayAttr>(attrs::kMetadataProps))
    for (Attribute p : props) {
      auto kv = cast<ArrayAttr>(p);
      auto *e = model.add_metadata_props();
      e->set_key(cast<StringAttr>(kv[0]).getValue().str());
      e->set_value(cast<StringAttr>(kv[1]).getValue().str());
    }

  GraphOp graphOp;
  for (Operation &op : module.getBody()->getOperations()) {
    if (auto g = dyn_cast<GraphOp>(op)) {
      if (graphOp)
        return op.emitError("a module exported to ONNX has one train.graph");
      graphOp = g;
      continue;
    }
    auto fn = dyn_cast<FunctionOp>(op);
    if (!fn)
      return op.emitError("cannot be exported to ONNX (expected "
                          "train.graph or train.function)");
    onnx::FunctionProto *proto = model.add_functions();
    proto->set_name(fn.getOnnxName().str());
    proto->set_domain(fn.getDomain().str());
    if (auto doc = fn->getAttrOfType<StringAttr>(attrs::kDocString))
      proto->set_doc_string(doc.getValue().str());
    exportOpsets(fn->getAttrOfType<ArrayAttr>(attrs::kOpsetImport),
                 *proto->mutable_opset_import());
    if (auto a = fn->getAttrOfType<ArrayAttr>(attrs::kFunctionAttrs))
      for (Attribute n : a)
        proto->add_attribute(cast<StringAttr>(n).getValue().str());
    Block &body = fn.getBody().front();
    for (auto [i, arg] : llvm::enumerate(body.getArguments())) {
      auto n = fn.getArgAttrOfType<StringAttr>(i, attrs::kValueName);
      std::string name = n ? n.getValue().str() : nameOf(arg);
      names[arg] = name;
      proto->add_input(name);
    }
    onnx::GraphProto tmp;
    if (failed(exportGraph(body, tmp, DictionaryAttr(), fn, nullptr)))
      return failure();
    for (int i = 0; i < tmp.output_size(); ++i) {
      auto n = fn.getResultAttrOfType<StringAttr>(i, attrs::kValueName);
      proto->add_output(n ? n.getValue().str() : tmp.output(i).name());
    }
    proto->mutable_node()->Swap(tmp.mutable_node());
    mergeUnknown(fn, *proto);
  }
  if (!graphOp)
    return module.emitError("no train.graph to export");
  mainGraph = graphOp;

  // The main graph: arg/res attributes hold the input/output value infos.
  NamedAttrList info(graphOp->getAttrDictionary());
  auto toInfos = [&](ArrayAttr attrsList, ArrayRef<Type> types) {
    SmallVector<Attribute> out;
    for (auto [i, t] : llvm::enumerate(types)) {
      NamedAttrList entry;
      if (attrsList && i < attrsList.size())
        entry.append(cast<DictionaryAttr>(attrsList[i]).getValue());
      if (Attribute name = entry.get(attrs::kValueName)) {
        entry.erase(attrs::kValueName);
        entry.set("name", name);
      } else {
        entry.set("name", StringAttr::get(ctx, ""));
      }
      if (!entry.get("train.no_type"))
        entry.set("type", TypeAttr::get(t));
      out.push_back(entry.getDictionary(ctx));
    }
    return ArrayAttr::get(ctx, out);
  };
  info.set("inputs",
           toInfos(graphOp.getArgAttrsAttr(), graphOp.getArgumentTypes()));
  info.set("outputs",
           toInfos(graphOp.getResAttrsAttr(), graphOp.getResultTypes()));
  return exportGraph(graphOp.getBody().front(), *model.mutable_graph(),
                     info.getDictionary(ctx), graphOp, &deferred);
}

bool Exporter::goesExternal(InitializerOp init) {
  auto type = dyn_cast<RankedTensorType>(init.getType());
  std::optional<int32_t> dt =
      type ? getOnnxDataType(type.getElementType()) : std::nullopt;
  if (!dt || *dt == onnx::TensorProto::STRING || init.getSparse())
    return false;
  switch (options.externalData) {
  case ExternalDataMode::Never:
    return false;
  case ExternalDataMode::Auto:
    return bool(init.getExternal());
  case ExternalDataMode::Always:
    return uint64_t(getRawDataSize(*dt, type.getNumElements())) >=
           options.sizeThreshold;
  }
  llvm_unreachable("ExternalDataMode");
}

namespace {
/// ModelProto's appended `graph { initializer { ... } }` chunks.
void appendVarint(uint64_t v, std::string &out) {
  while (v >= 0x80) {
    out.push_back(char(v | 0x80));
    v >>= 7;
  }
  out.push_back(char(v));
}
constexpr uint32_t kGraphTag = (7 << 3) | 2, kInitTag = (5 << 3) | 2,
                   kRawTag = (9 << 3) | 2;
/// The chunk's bytes before the tensor's data (which follows when
/// `dataBytes` is not zero).
std::string chunkHead(const onnx::TensorProto &header, uint64_t dataBytes,
                      bool withData) {
  std::string tensorHead;
  header.SerializeToString(&tensorHead);
  std::string rawPrefix;
  if (withData) {
    appendVarint(kRawTag, rawPrefix);
    appendVarint(dataBytes, rawPrefix);
  }
  uint64_t tensorSize =
      tensorHead.size() + rawPrefix.size() + (withData ? dataBytes : 0);
  std::string initPrefix;
  appendVarint(kInitTag, initPrefix);
  appendVarint(tensorSize, initPrefix);
  std::string out;
  appendVarint(kGraphTag, out);
  appendVarint(initPrefix.size() + tensorSize, out);
  return out + initPrefix + tensorHead + rawPrefix;
}
/// What the external_data entries of a tensor add to its header at most
/// (offsets and lengths are not known before the data file is laid out).
constexpr uint64_t kExternalEntryBytes = 96;
} // namespace

LogicalResult amp::exportOnnxModel(ModuleOp module, llvm::raw_ostream &os,
                                   const ExportOnnxOptions &options) {
  onnx::ModelProto model;
  std::vector<DeferredTensor> deferred;
  Exporter exporter(module, options);
  if (failed(exporter.exportModel(model, deferred)))
    return failure();

  // Serialize. Initializers whose data is deferred leave a placeholder in
  // the graph; to keep their order, the graph's initializers are all moved
  // into the appended chunks when any is deferred.
  std::vector<onnx::TensorProto> inlineInits;
  onnx::GraphProto *graph = model.mutable_graph();
  bool anyDeferred = !deferred.empty();
  std::vector<std::pair<bool, size_t>> order; // (deferred?, index)
  if (anyDeferred) {
    size_t d = 0;
    for (onnx::TensorProto &t : *graph->mutable_initializer()) {
      if (t.name() == "\x01amp-deferred") {
        order.push_back({true, d++});
      } else {
        order.push_back({false, inlineInits.size()});
        inlineInits.push_back(std::move(t));
      }
    }
    graph->clear_initializer();
  }

  std::string head;
  if (!model.SerializeToString(&head)) {
    emitError(module.getLoc()) << "the model cannot be serialized";
    return failure();
  }

  // The whole model's size, before a byte is written: protobuf cannot read
  // a message over 2 GiB, so such a file is never written.
  uint64_t total = head.size();
  bool anyExternal = false;
  for (auto [isDeferred, index] : order) {
    if (!isDeferred) {
      total += chunkHead(inlineInits[index], 0, false).size();
      continue;
    }
    const DeferredTensor &d = deferred[index];
    anyExternal |= d.external;
    total += chunkHead(d.header, d.bytes().size(), !d.external).size() +
             (d.external ? kExternalEntryBytes : d.bytes().size());
  }
  if (total > options.protobufLimit) {
    if (options.externalData == ExternalDataMode::Auto) {
      ExportOnnxOptions external = options;
      external.externalData = ExternalDataMode::Always;
      std::string location =
          options.location.empty()
              ? defaultExternalDataLocation(options.modelPath)
              : options.location;
      emitRemark(module.getLoc())
          << "the model would be " << total
          << " bytes, more than one protobuf can hold ("
          << options.protobufLimit << "): tensors of at least "
          << options.sizeThreshold << " bytes go to the external data file '"
          << location << "'";
      return exportOnnxModel(module, os, external);
    }
    InFlightDiagnostic diag = emitError(module.getLoc());
    diag << "the model would be " << total
         << " bytes, more than one protobuf can hold (" << options.protobufLimit
         << ", 2 GiB); nothing was written";
    if (options.externalData == ExternalDataMode::Never)
      diag << " (write its weights as external data: "
              "--onnx-external-data=auto or always)";
    else
      diag << " even with every initializer of at least "
           << options.sizeThreshold
           << " bytes in the external data file (what is left: node "
              "attributes, subgraph initializers)";
    return failure();
  }

  // External data first, into its own temporary file; it is renamed onto
  // its name once the model is written too.
  std::unique_ptr<ExternalDataWriter> writer;
  if (anyExternal) {
    StringRef modelPath = options.modelPath;
    if (modelPath.empty() || modelPath == "-") {
      emitError(module.getLoc())
          << "the model keeps tensors in an external data file, which needs "
             "the model written to a file (-o model.onnx), not to standard "
             "output (or --onnx-external-data=never to write them inline)";
      return failure();
    }
    std::string location = options.location.empty()
                               ? defaultExternalDataLocation(modelPath)
                               : options.location;
    auto created = ExternalDataWriter::create(modelPath, location);
    if (!created) {
      emitError(module.getLoc()) << llvm::toString(created.takeError());
      return failure();
    }
    writer = std::move(*created);
    for (DeferredTensor &d : deferred) {
      if (!d.external)
        continue;
      if (llvm::Error e = writer->append(d.header, d.bytes())) {
        emitError(module.getLoc()) << "initializer '" << d.header.name()
                                   << "': " << llvm::toString(std::move(e));
        return failure();
      }
    }
  }

  os.write(head.data(), head.size());
  for (auto [isDeferred, index] : order) {
    if (!isDeferred) {
      os << chunkHead(inlineInits[index], 0, false);
      continue;
    }
    const DeferredTensor &d = deferred[index];
    ArrayRef<char> data = d.bytes();
    os << chunkHead(d.header, data.size(), !d.external);
    if (!d.external)
      os.write(data.data(), data.size());
  }
  os.flush();
  if (os.get_kind() == llvm::raw_ostream::OStreamKind::OK_FDStream) {
    auto &fd = static_cast<llvm::raw_fd_ostream &>(os);
    if (fd.has_error()) {
      emitError(module.getLoc())
          << "cannot write the model: " << fd.error().message();
      fd.clear_error(); // reported; the caller removes the file
      return failure();
    }
  }
  if (writer)
    if (llvm::Error e = writer->commit()) {
      emitError(module.getLoc()) << llvm::toString(std::move(e));
      return failure();
    }
  return success();
}

//===----------------------------------------------------------------------===//
// Command-line options
//===----------------------------------------------------------------------===//

namespace {
struct ExportCLOptions {
  llvm::cl::opt<ExternalDataMode> mode{
      "onnx-external-data",
      llvm::cl::desc("Where ONNX export puts the main graph's initializers"),
      llvm::cl::init(ExternalDataMode::Auto),
      llvm::cl::values(
          clEnumValN(ExternalDataMode::Auto, "auto",
                     "tensors that were external data stay external; all "
                     "of at least the threshold go external when the model "
                     "would pass 2 GiB (default)"),
          clEnumValN(ExternalDataMode::Always, "always",
                     "every tensor of at least the threshold in the data "
                     "file"),
          clEnumValN(ExternalDataMode::Never, "never",
                     "everything inline (a model over 2 GiB is an error)"))};
  llvm::cl::opt<std::string> location{
      "onnx-external-data-location",
      llvm::cl::desc("The external data file, relative to the model's "
                     "folder (default: <model file name>.data)"),
      llvm::cl::value_desc("file")};
  llvm::cl::opt<uint64_t> threshold{
      "onnx-external-data-threshold",
      llvm::cl::desc("The smallest tensor, in bytes, that "
                     "--onnx-external-data=always (and auto past 2 GiB) "
                     "writes to the data file (default 1024)"),
      llvm::cl::init(1024), llvm::cl::value_desc("bytes")};
  llvm::cl::opt<uint64_t> limit{
      "onnx-protobuf-limit",
      llvm::cl::desc("For tests: the largest model written as one protobuf "
                     "(default 2 GiB - 1, protobuf's limit)"),
      llvm::cl::init(kMaxProtobufBytes), llvm::cl::Hidden};
};
llvm::ManagedStatic<ExportCLOptions> clOptions;
} // namespace

void amp::registerExportOnnxCLOptions() { *clOptions; }

ExportOnnxOptions amp::getExportOnnxCLOptions(StringRef modelPath) {
  ExportOnnxOptions o;
  o.modelPath = modelPath.str();
  if (clOptions.isConstructed()) {
    o.externalData = clOptions->mode;
    o.location = clOptions->location;
    o.sizeThreshold = clOptions->threshold;
    o.protobufLimit = std::min<uint64_t>(clOptions->limit, kMaxProtobufBytes);
  }
  return o;
}

/// The file mlir-translate's -o names ("-" when it writes to standard
/// output): external data goes next to it.
static std::string translateOutputPath() {
  auto &registered = llvm::cl::getRegisteredOptions();
  auto it = registered.find("o");
  if (it == registered.end())
    return "-";
  // MlirTranslateMain's `-o` is a cl::opt<std::string>.
  return static_cast<llvm::cl::opt<std::string> *>(it->second)->getValue();
}

void amp::registerToOnnxTranslation() {
  registerExportOnnxCLOptions();
  TranslateFromMLIRRegistration registration(
      "export-onnx", "export a train-dialect module to ONNX (.onnx)",
      [](Operation *op, llvm::raw_ostream &os) -> LogicalResult {
        auto module = dyn_cast<ModuleOp>(op);
        if (!module)
          return op->emitError("expected a builtin.module");
        return exportOnnxModel(module, os,
                               getExportOnnxCLOptions(translateOutputPath()));
      },
      [](DialectRegistry &registry) { registry.insert<TrainDialect>(); });
}

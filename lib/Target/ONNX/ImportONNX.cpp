//===- ImportONNX.cpp - ONNX protobuf to train dialect --------------------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// Imports an ONNX ModelProto into the train dialect, losslessly: every node,
// attribute, initializer, name, doc string, value_info entry, opset import,
// function and subgraph, and any field this libonnx does not know (kept as
// its wire bytes). Nodes are sorted topologically (stably: a sorted graph
// keeps its order); undefined inputs, cycles, duplicate outputs, bad
// attributes and bad tensors are reported with the file and node.
//
//===----------------------------------------------------------------------===//

#include "amp/Target/ONNX/ImportONNX.h"
#include "ONNXInternals.h"
#include "amp/Dialect/Train/IR/OnnxTypes.h"
#include "amp/Dialect/Train/IR/TrainOps.h"
#include "amp/Target/ONNX/ExternalData.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Tools/mlir-translate/Translation.h"
#include "llvm/ADT/SmallSet.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/Allocator.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"

#include <functional>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <google/protobuf/unknown_field_set.h>
#include <onnx/onnx_pb.h>

#include <fcntl.h>
#include <optional>
#include <queue>
#include <sys/stat.h>
#include <unistd.h>

using namespace mlir;
using namespace amp;
using namespace amp::train;
using namespace amp::onnx_detail;

namespace {

/// Names visible in a graph: its inputs, initializers and node outputs, then
/// those of the enclosing graphs.
// The name tables hold an entry per value or node: their entries come from
// a bump allocator, so a graph of a million nodes frees them as a few slabs
// rather than as millions of heap chunks for later passes to wade through.
using NameSet = llvm::StringSet<llvm::BumpPtrAllocator>;
template <typename T>
using NameMap = llvm::StringMap<T, llvm::BumpPtrAllocator>;

struct Scope {
  NameMap<Value> values;
  const Scope *parent = nullptr;
  Value lookup(StringRef name) const {
    for (const Scope *s = this; s; s = s->parent) {
      auto it = s->values.find(name);
      if (it != s->values.end())
        return it->second;
    }
    return {};
  }
};

/// Opset versions by (normalized) domain.
using OpsetMap = llvm::StringMap<int64_t>;

class Importer {
public:
  Importer(MLIRContext *ctx, StringRef fileName, const ImportOnnxOptions &opts)
      : ctx(ctx), builder(ctx), fileName(fileName.str()), options(opts),
        fileLoc(FileLineColLoc::get(ctx, fileName, 0, 0)) {}

  OwningOpRef<ModuleOp> importModel(onnx::ModelProto &model);

private:
  InFlightDiagnostic error() { return emitError(fileLoc); }
  Location nodeLoc(StringRef nodeName) {
    return NameLoc::get(StringAttr::get(ctx, nodeName), fileLoc);
  }

  // Types and tensors.
  FailureOr<Type> importType(const onnx::TypeProto &type, const Twine &what,
                             SmallVectorImpl<Attribute> *dims);
  FailureOr<Attribute> importTensor(onnx::TensorProto &tensor,
                                    const Twine &what, bool *raw = nullptr);
  FailureOr<Attribute> importSparseTensor(onnx::SparseTensorProto &sparse,
                                          const Twine &what);
  FailureOr<Attribute> importTensorAttr(onnx::TensorProto &tensor,
                                        const Twine &what);
  FailureOr<std::unique_ptr<llvm::MemoryBuffer>>
  loadExternalData(const onnx::TensorProto &tensor, const Twine &what,
                   int64_t expectedBytes, ExternalDataSource *source);

  // Value infos.
  FailureOr<DictionaryAttr> importValueInfo(const onnx::ValueInfoProto &vi,
                                            const Twine &what, Type *type);

  // Graphs and nodes.
  LogicalResult importGraph(onnx::GraphProto &graph, Block *block, Scope &scope,
                            const OpsetMap &opsets, NamedAttrList &graphInfo,
                            bool isMain, SmallVectorImpl<Type> &resultTypes);
  LogicalResult importNode(onnx::NodeProto &node, Scope &scope,
                           const OpsetMap &opsets,
                           const llvm::StringMap<Type> &declaredTypes);
  FailureOr<Attribute> importAttribute(onnx::AttributeProto &attr,
                                       StringRef nodeDesc);
  FailureOr<Attribute> importTypeAttr(const onnx::TypeProto &tp,
                                      const Twine &what);
  void refineControlFlowResultTypes(const onnx::NodeProto &node,
                                    ArrayRef<SmallVector<Type>> subgraphOutputs,
                                    SmallVectorImpl<Type> &resultTypes);
  Type inferResultType(const OnnxOpSchema *schema, unsigned resultIndex,
                       ArrayRef<Value> operands,
                       const NamedAttrList &onnxAttrs);
  LogicalResult importFunction(onnx::FunctionProto &fn, ModuleOp module,
                               const OpsetMap &modelOpsets);
  StringAttr unknownFields(const google::protobuf::Message &msg);
  void setDoc(NamedAttrList &attrs, const std::string &doc) {
    if (!doc.empty())
      attrs.set(attrs::kDocString, builder.getStringAttr(doc));
  }
  Value getNone(Block *block);
  std::string uniqueNodeName(const onnx::NodeProto &node);

  MLIRContext *ctx;
  OpBuilder builder;
  std::string fileName;
  ImportOnnxOptions options;
  Location fileLoc;
  /// Local functions, "domain\0name".
  llvm::StringSet<> localFunctions;
  /// Node names seen so far (to make generated names unique).
  NameSet nodeNames;
  /// Per op_type, where the search for a free generated name resumes.
  llvm::StringMap<unsigned> nextUnnamedIndex;
  llvm::DenseMap<Block *, Value> noneValues;
  llvm::StringSet<> warnedUnknownOps;
  unsigned resourceCounter = 0;
  llvm::StringSet<> resourceNames;
};

} // namespace

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

StringAttr Importer::unknownFields(const google::protobuf::Message &msg) {
  const google::protobuf::UnknownFieldSet &set =
      msg.GetReflection()->GetUnknownFields(msg);
  if (set.empty())
    return {};
  std::string bytes;
  set.SerializeToString(&bytes);
  return builder.getStringAttr(bytes);
}

Value Importer::getNone(Block *block) {
  Value &none = noneValues[block];
  if (!none) {
    OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPointToStart(block);
    none = NoneOp::create(builder, fileLoc, builder.getNoneType()).getResult();
  }
  return none;
}

std::string Importer::uniqueNodeName(const onnx::NodeProto &node) {
  if (!node.name().empty()) {
    nodeNames.insert(node.name());
    return node.name();
  }
  // Stable: derived from the op type and a counter in import order: the
  // first free `<op_type>_<i>`. Names are never released, so the search
  // for an op type resumes where its last one ended (linear, not
  // quadratic, in the number of unnamed nodes).
  unsigned &i = nextUnnamedIndex[node.op_type()];
  for (;; ++i) {
    std::string name = (node.op_type() + "_" + Twine(i)).str();
    if (nodeNames.insert(name).second)
      return name;
  }
}

/// Key of a model-local function in `localFunctions`.
static std::string functionKey(StringRef domain, StringRef name) {
  return (domain + Twine('\0') + name).str();
}

/// The version of `domain` in `opsets`, or -1.
static int64_t getOpset(const OpsetMap &opsets, StringRef domain) {
  auto it = opsets.find(normalizeOnnxDomain(domain));
  return it == opsets.end() ? -1 : it->second;
}

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

/// The empty-list attribute kinds that the MLIR value cannot tell apart.
static bool isAmbiguousEmptyList(const onnx::AttributeProto &attr) {
  switch (attr.type()) {
  case onnx::AttributeProto::STRINGS:
    return attr.strings_size() == 0;
  case onnx::AttributeProto::TENSORS:
    return attr.tensors_size() == 0;
  case onnx::AttributeProto::SPARSE_TENSORS:
    return attr.sparse_tensors_size() == 0;
  case onnx::AttributeProto::TYPE_PROTOS:
    return attr.type_protos_size() == 0;
  default:
    return false;
  }
}

//===----------------------------------------------------------------------===//
// Nodes
//===----------------------------------------------------------------------===//

/// If/Loop/Scan results the file does not type take the type of the
/// subgraph output they come from: If result i is output i of both branches;
/// a Loop's carried value j is body output 1+j and its scan outputs stack
/// body outputs (same element type, one more dimension); Scan's states and
/// scan outputs likewise. Types the file declares are kept as they are.
void Importer::refineControlFlowResultTypes(
    const onnx::NodeProto &node, ArrayRef<SmallVector<Type>> subgraphOutputs,
    SmallVectorImpl<Type> &resultTypes) {
  StringRef domain = node.domain(), opType = node.op_type();
  if ((!domain.empty() && domain != "ai.onnx") || subgraphOutputs.empty())
    return;
  auto stacked = [](Type t) -> Type {
    if (auto tt = dyn_cast<TensorType>(t))
      return UnrankedTensorType::get(tt.getElementType());
    return {};
  };
  // Index of the body output feeding result i, and whether it is stacked.
  std::function<std::pair<int, bool>(unsigned)> source;
  if (opType == "If") {
    source = [](unsigned i) { return std::make_pair((int)i, false); };
  } else if (opType == "Loop") {
    unsigned carried = node.input_size() >= 2 ? node.input_size() - 2 : 0;
    source = [carried](unsigned i) {
      return std::make_pair((int)i + 1, i >= carried);
    };
  } else if (opType == "Scan") {
    int64_t scanInputs = -1;
    for (const onnx::AttributeProto &a : node.attribute())
      if (a.name() == "num_scan_inputs")
        scanInputs = a.i();
    if (scanInputs < 0 || scanInputs > node.input_size())
      return;
    unsigned state = node.input_size() - scanInputs;
    source = [state](unsigned i) { return std::make_pair((int)i, i >= state); };
  } else {
    return;
  }
  for (unsigned i = 0; i < resultTypes.size(); ++i) {
    if (!isa<UnknownType>(resultTypes[i]))
      continue;
    auto [index, isStacked] = source(i);
    Type merged;
    for (ArrayRef<Type> outs : subgraphOutputs) {
      if (index >= (int)outs.size() || isa<UnknownType>(outs[index]))
        continue;
      Type t = isStacked ? stacked(outs[index]) : outs[index];
      if (!t || (merged && merged != t)) {
        // Branches disagree: keep the element type when they share one.
        if (t && merged && stacked(t) && stacked(t) == stacked(merged))
          merged = stacked(t);
        else
          return;
      } else if (!merged) {
        merged = t;
      }
    }
    if (merged)
      resultTypes[i] = merged;
  }
}

Type Importer::inferResultType(const OnnxOpSchema *schema, unsigned resultIndex,
                               ArrayRef<Value> operands,
                               const NamedAttrList &onnxAttrs) {
  Type unknown = UnknownType::get(ctx);
  if (!schema)
    return unknown;
  const OnnxParamSchema *param = schema->getOutputParam(resultIndex);
  if (!param)
    return unknown;
  auto fromTypeString = [&](StringRef s) -> Type {
    if (!s.consume_front("tensor(") || !s.consume_back(")"))
      return {};
    for (int32_t dt = 1; dt <= 26; ++dt) {
      Type elt = getElementTypeForOnnxDataType(ctx, dt);
      if (elt && getOnnxElementTypeName(elt) == s)
        return UnrankedTensorType::get(elt);
    }
    return {};
  };
  const OnnxTypeConstraintSchema *constraint =
      schema->findConstraint(param->typeStr);
  if (!constraint) {
    Type t = fromTypeString(param->typeStr);
    return t ? t : unknown;
  }
  // Cast-like ops: the "to" attribute names the output element type.
  if (StringRef(schema->opType) == "Cast" ||
      StringRef(schema->opType) == "CastLike") {
    if (auto to = dyn_cast_or_null<IntegerAttr>(onnxAttrs.get("to")))
      if (Type elt = getElementTypeForOnnxDataType(ctx, to.getInt()))
        return UnrankedTensorType::get(elt);
  }
  // An input bound to the same constraint fixes the element type.
  for (auto [i, v] : llvm::enumerate(operands)) {
    const OnnxParamSchema *in = schema->getInputParam(i);
    if (!in || StringRef(in->typeStr) != param->typeStr)
      continue;
    Type t = v.getType();
    if (isa<NoneType, UnknownType>(t))
      continue;
    if (auto tt = dyn_cast<TensorType>(t))
      return UnrankedTensorType::get(tt.getElementType());
    return t;
  }
  if (constraint->numAllowedTypes == 1)
    if (Type t = fromTypeString(constraint->allowedTypes[0]))
      return t;
  return unknown;
}

LogicalResult Importer::importNode(onnx::NodeProto &node, Scope &scope,
                                   const OpsetMap &opsets,
                                   const llvm::StringMap<Type> &declaredTypes) {
  Block *block = builder.getInsertionBlock();
  std::string name = uniqueNodeName(node);
  std::string desc = ("node '" + name + "' (" + node.op_type() + ")");
  Location loc = nodeLoc(name);
  StringRef domain = normalizeOnnxDomain(node.domain());

  // Inputs.
  SmallVector<Value> inputs;
  for (const std::string &in : node.input()) {
    if (in.empty()) {
      inputs.push_back(getNone(block));
      continue;
    }
    Value v = scope.lookup(in);
    if (!v)
      return error() << desc << ": input '" << in << "' is not defined";
    inputs.push_back(v);
  }

  // Attributes.
  NamedAttrList onnxAttrs;
  SmallVector<onnx::AttributeProto *> graphAttrs;
  NamedAttrList attrDocs, ambiguousKinds;
  bool hasRef = false;
  llvm::StringSet<> seenAttrs;
  for (onnx::AttributeProto &attr : *node.mutable_attribute()) {
    if (attr.name().empty())
      return error() << desc << ": has an attribute with no name";
    if (!seenAttrs.insert(attr.name()).second)
      return error() << desc << ": attribute '" << attr.name()
                     << "' is given twice";
    if (!attr.doc_string().empty())
      attrDocs.set(attr.name(), builder.getStringAttr(attr.doc_string()));
    if ((attr.type() == onnx::AttributeProto::GRAPH ||
         (attr.type() == onnx::AttributeProto::GRAPHS &&
          attr.graphs_size() > 0)) &&
        attr.ref_attr_name().empty()) {
      graphAttrs.push_back(&attr);
      if (attr.type() == onnx::AttributeProto::GRAPHS)
        ambiguousKinds.set(attr.name(), builder.getI64IntegerAttr(
                                            onnx::AttributeProto::GRAPHS));
      continue;
    }
    if (attr.type() == onnx::AttributeProto::GRAPHS) {
      // An empty GRAPHS list.
      ambiguousKinds.set(
          attr.name(), builder.getI64IntegerAttr(onnx::AttributeProto::GRAPHS));
      onnxAttrs.set(attr.name(), builder.getArrayAttr({}));
      continue;
    }
    FailureOr<Attribute> a = importAttribute(attr, desc);
    if (failed(a))
      return failure();
    hasRef |= isa<RefAttr>(*a);
    if (isAmbiguousEmptyList(attr))
      ambiguousKinds.set(attr.name(),
                         builder.getI64IntegerAttr((int64_t)attr.type()));
    onnxAttrs.set(attr.name(), *a);
  }

  // Schema, and whether the typed op applies.
  int64_t version = getOpset(opsets, domain);
  bool isLocalFunction =
      localFunctions.contains(functionKey(node.domain(), node.op_type()));
  const OnnxOpSchema *schema =
      (version >= 0 && !isLocalFunction)
          ? lookupOnnxSchema(domain, node.op_type(), version)
          : nullptr;
  if (!schema && !isLocalFunction && domain.empty()) {
    if (version < 0)
      return error() << desc << ": the model imports no opset for the "
                     << "default ONNX domain";
    // Real training graphs put custom ops in the default domain (SGD,
    // MSELoss, ...): keep them as generic nodes, and say so once per op.
    if (warnedUnknownOps.insert(node.op_type()).second)
      emitWarning(loc) << desc << ": operator '" << node.op_type()
                       << "' is not in the default ONNX domain at opset "
                       << version << "; kept as a generic train.node";
  }
  // Hand-written (ONNX Runtime) schemas are not enforced: a node that does
  // not fit one stays generic. The standard ONNX schemas are enforced.
  bool standard = schema && isStandardOnnxSchema(*schema);
  bool fits = true;
  if (schema && !standard) {
    int maxIn = schema->getMaxInputs(), maxOut = schema->getMaxOutputs();
    fits = node.input_size() >= schema->getMinInputs() &&
           (maxIn < 0 || node.input_size() <= maxIn) &&
           (maxOut < 0 || node.output_size() <= maxOut);
    for (onnx::AttributeProto &attr : *node.mutable_attribute()) {
      const OnnxAttrSchema *as = schema->findAttr(attr.name());
      fits &= as && (uint32_t)as->kind == (uint32_t)attr.type();
    }
  }
  if (schema && standard) {
    // A node whose arity or attributes do not fit the standard schema (older
    // exporters write such graphs: Unsqueeze-13 with an `axes` attribute)
    // stays a generic node, with a warning. An attribute the schema defines
    // with another type is an error: no reading of it is right.
    std::string misfit;
    int maxIn = schema->getMaxInputs(), maxOut = schema->getMaxOutputs();
    std::string version =
        (node.op_type() + "-" + Twine(schema->sinceVersion)).str();
    if (maxIn >= 0 && node.input_size() > maxIn)
      misfit = ("has " + Twine(node.input_size()) + " inputs but " + version +
                " takes at most " + Twine(maxIn))
                   .str();
    else if (node.input_size() < schema->getMinInputs())
      misfit = ("has " + Twine(node.input_size()) + " inputs but " + version +
                " needs at least " + Twine(schema->getMinInputs()))
                   .str();
    else if (maxOut >= 0 && node.output_size() > maxOut)
      misfit = ("has " + Twine(node.output_size()) + " outputs but " + version +
                " has at most " + Twine(maxOut))
                   .str();
    for (const onnx::AttributeProto &attr : node.attribute())
      if (misfit.empty() && !schema->findAttr(attr.name()))
        misfit = "has attribute '" + attr.name() + "' that " + version +
                 " does not define";
    if (!misfit.empty()) {
      fits = false;
      emitWarning(loc) << desc << ": " << misfit
                       << "; kept as a generic train.node";
    }
    // Attribute kinds.
    for (onnx::AttributeProto &attr : *node.mutable_attribute()) {
      const OnnxAttrSchema *as = schema->findAttr(attr.name());
      if (as && attr.ref_attr_name().empty() &&
          (uint32_t)as->kind != (uint32_t)attr.type())
        return error() << desc << ": attribute '" << attr.name()
                       << "' has ONNX type "
                       << onnx::AttributeProto::AttributeType_Name(attr.type())
                       << " but " << node.op_type() << " expects "
                       << onnx::AttributeProto::AttributeType_Name(
                              (onnx::AttributeProto::AttributeType)as->kind);
    }
  }
  std::string typedName = getTypedOpName(domain, node.op_type());
  std::optional<RegisteredOperationName> typedOp =
      (schema && fits && schema->matchesTypedOp && !hasRef &&
       !typedName.empty())
          ? RegisteredOperationName::lookup(typedName, ctx)
          : std::nullopt;
  if (typedOp) {
    // Unknown attributes (not in the schema) force the generic op.
    for (NamedAttribute na : onnxAttrs)
      if (!schema->findAttr(na.getName()))
        typedOp = std::nullopt;
    for (onnx::AttributeProto *g : graphAttrs)
      if (!schema->findAttr(g->name()) ||
          g->type() == onnx::AttributeProto::GRAPHS)
        typedOp = std::nullopt;
  }

  // Operands: typed ops have one operand per non-variadic formal input,
  // absent optional ones being none.
  SmallVector<Value> operands = inputs;
  NamedAttrList extra;
  // The typed op has the operands/results/regions of the newest version.
  const OnnxOpSchema *newest =
      typedOp ? lookupLatestOnnxSchema(domain, node.op_type()) : nullptr;
  if (typedOp) {
    ArrayRef<OnnxParamSchema> formals = newest->getInputs();
    bool variadicLast =
        !formals.empty() && formals.back().option == OnnxParamOption::Variadic;
    unsigned fixed = formals.size() - (variadicLast ? 1 : 0);
    while (operands.size() < fixed)
      operands.push_back(getNone(block));
    // Trailing "" inputs written explicitly do not survive the none
    // padding: remember the ONNX input count.
    if (!node.input().empty() && node.input().rbegin()->empty())
      extra.set(attrs::kNumInputs,
                builder.getI64IntegerAttr(node.input_size()));
  }

  // Results.
  SmallVector<Type> resultTypes;
  SmallVector<Attribute> outputNames;
  unsigned numResults = node.output_size();
  if (typedOp) {
    ArrayRef<OnnxParamSchema> formals = newest->getOutputs();
    bool variadicLast =
        !formals.empty() && formals.back().option == OnnxParamOption::Variadic;
    unsigned fixed = formals.size() - (variadicLast ? 1 : 0);
    numResults = std::max<unsigned>(numResults, fixed);
  }
  for (unsigned i = 0; i < numResults; ++i) {
    StringRef out = i < (unsigned)node.output_size() ? StringRef(node.output(i))
                                                     : StringRef();
    if (i < (unsigned)node.output_size())
      outputNames.push_back(builder.getStringAttr(out));
    if (out.empty()) {
      resultTypes.push_back(builder.getNoneType());
      continue;
    }
    auto it = declaredTypes.find(out);
    if (it != declaredTypes.end() && !isa<UnknownType>(it->second))
      resultTypes.push_back(it->second);
    else
      resultTypes.push_back(inferResultType(schema, i, operands, onnxAttrs));
  }

  OperationState state(loc, typedOp ? typedOp->getStringRef()
                                    : NodeOp::getOperationName());
  state.addOperands(operands);
  state.addTypes(resultTypes);
  SmallVector<onnx::AttributeProto *> regionAttrs;
  if (typedOp) {
    state.addAttributes(onnxAttrs);
    // Regions in the order of the typed op's (the newest schema's) graph
    // attributes; an older version may lack some (empty regions).
    for (const OnnxAttrSchema &as : newest->getAttrs()) {
      if (as.kind != OnnxAttrKind::Graph)
        continue;
      onnx::AttributeProto *found = nullptr;
      for (onnx::AttributeProto *g : graphAttrs)
        if (g->name() == as.name)
          found = g;
      regionAttrs.push_back(found);
    }
  } else {
    SmallVector<Attribute> graphNames;
    for (onnx::AttributeProto *g : graphAttrs) {
      if (g->type() == onnx::AttributeProto::GRAPHS) {
        for (int i = 0; i < g->graphs_size(); ++i) {
          graphNames.push_back(builder.getStringAttr(g->name()));
          regionAttrs.push_back(g);
        }
        continue;
      }
      graphNames.push_back(builder.getStringAttr(g->name()));
      regionAttrs.push_back(g);
    }
    state.addAttribute("domain", builder.getStringAttr(node.domain()));
    state.addAttribute("op_type", builder.getStringAttr(node.op_type()));
    state.addAttribute("attrs", onnxAttrs.getDictionary(ctx));
    state.addAttribute("graph_attrs", builder.getArrayAttr(graphNames));
  }
  state.addAttribute(attrs::kNodeName, builder.getStringAttr(name));
  state.addAttribute(attrs::kOutputNames, builder.getArrayAttr(outputNames));
  if (!node.doc_string().empty())
    state.addAttribute(attrs::kDocString,
                       builder.getStringAttr(node.doc_string()));
  if (!attrDocs.empty())
    state.addAttribute(attrs::kAttrDocs, attrDocs.getDictionary(ctx));
  if (!ambiguousKinds.empty())
    state.addAttribute("train.attr_kinds", ambiguousKinds.getDictionary(ctx));
  // Export writes attributes sorted by name unless the file had another
  // order, which is then recorded.
  {
    SmallVector<StringRef> order;
    for (const onnx::AttributeProto &attr : node.attribute())
      order.push_back(attr.name());
    if (!llvm::is_sorted(order))
      state.addAttribute(attrs::kAttrOrder, builder.getStrArrayAttr(order));
  }
  if (StringAttr u = unknownFields(node))
    state.addAttribute("train.unknown_fields", u);
  state.addAttributes(extra);

  // Subgraphs.
  NamedAttrList subgraphInfos;
  llvm::StringMap<int> graphsSeen;                // index into a GRAPHS list
  SmallVector<SmallVector<Type>> subgraphOutputs; // per imported region
  for (onnx::AttributeProto *g : regionAttrs) {
    Region *region = state.addRegion();
    if (!g)
      continue;
    bool isList = g->type() == onnx::AttributeProto::GRAPHS;
    int listIndex = isList ? graphsSeen[g->name()]++ : 0;
    onnx::GraphProto *graphProto =
        isList ? g->mutable_graphs(listIndex) : g->mutable_g();
    std::string infoKey =
        isList ? g->name() + "#" + std::to_string(listIndex) : g->name();
    Block *body = new Block();
    region->push_back(body);
    OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPointToEnd(body);
    Scope subScope;
    subScope.parent = &scope;
    NamedAttrList info;
    SmallVector<Type> subResults;
    if (failed(importGraph(*graphProto, body, subScope, opsets, info,
                           /*isMain=*/false, subResults)))
      return failure();
    subgraphInfos.set(infoKey, info.getDictionary(ctx));
    subgraphOutputs.push_back(std::move(subResults));
  }
  if (typedOp)
    refineControlFlowResultTypes(node, subgraphOutputs, state.types);
  if (!subgraphInfos.empty())
    state.addAttribute(attrs::kSubgraphs, subgraphInfos.getDictionary(ctx));

  Operation *op = builder.create(state);
  if (typedOp && !standard) {
    bool ok;
    {
      ScopedDiagnosticHandler quiet(ctx,
                                    [](Diagnostic &) { return success(); });
      ok = succeeded(verifyOnnxNode(op));
    }
    if (!ok) {
      // Rebuild as a generic node: same operands (as ONNX had them),
      // regions moved over.
      OperationState generic(loc, NodeOp::getOperationName());
      generic.addOperands(inputs);
      for (unsigned i = 0; i < outputNames.size(); ++i)
        generic.addTypes(op->getResult(i).getType());
      SmallVector<Attribute> graphNames;
      for (onnx::AttributeProto *g : graphAttrs)
        graphNames.push_back(builder.getStringAttr(g->name()));
      for (NamedAttribute na : op->getAttrs())
        if (isBookkeepingAttr(na.getName()) &&
            na.getName() != attrs::kNumInputs)
          generic.addAttribute(na.getName(), na.getValue());
      generic.addAttribute("domain", builder.getStringAttr(node.domain()));
      generic.addAttribute("op_type", builder.getStringAttr(node.op_type()));
      generic.addAttribute("attrs", onnxAttrs.getDictionary(ctx));
      generic.addAttribute("graph_attrs", builder.getArrayAttr(graphNames));
      // Regions of the typed op are in schema order; the generic op keeps
      // the node's order.
      for (onnx::AttributeProto *g : graphAttrs) {
        Region *dst = generic.addRegion();
        for (auto [i, as] : llvm::enumerate(llvm::make_filter_range(
                 newest->getAttrs(), [](const OnnxAttrSchema &a) {
                   return a.kind == OnnxAttrKind::Graph;
                 })))
          if (g->name() == as.name)
            dst->takeBody(op->getRegion(i));
      }
      Operation *replacement = builder.create(generic);
      op->erase();
      op = replacement;
    }
  }
  // Bind outputs; a name defined twice is an error.
  for (auto [i, nameAttr] : llvm::enumerate(outputNames)) {
    StringRef out = cast<StringAttr>(nameAttr).getValue();
    if (out.empty())
      continue;
    if (scope.values.count(out))
      return error() << desc << ": output '" << out
                     << "' is already defined (duplicate output name)";
    scope.values[out] = op->getResult(i);
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Graphs
//===----------------------------------------------------------------------===//

/// Names a node (and its subgraphs, transitively) reads from outside itself.
static void collectFreeInputs(const onnx::NodeProto &node,
                              llvm::StringSet<> &out) {
  for (const std::string &in : node.input())
    if (!in.empty())
      out.insert(in);
  std::vector<const onnx::GraphProto *> graphs;
  for (const auto &attr : node.attribute()) {
    if (attr.has_g())
      graphs.push_back(&attr.g());
    for (const auto &g : attr.graphs())
      graphs.push_back(&g);
  }
  for (const onnx::GraphProto *gp : graphs) {
    const onnx::GraphProto &g = *gp;
    llvm::StringSet<> defined;
    for (const auto &vi : g.input())
      defined.insert(vi.name());
    for (const auto &t : g.initializer())
      defined.insert(t.name());
    for (const auto &t : g.sparse_initializer())
      defined.insert(t.values().name());
    for (const auto &n : g.node())
      for (const std::string &o : n.output())
        defined.insert(o);
    for (const auto &n : g.node()) {
      llvm::StringSet<> sub;
      collectFreeInputs(n, sub);
      for (const auto &s : sub)
        if (!defined.contains(s.getKey()))
          out.insert(s.getKey());
    }
  }
}

LogicalResult Importer::importGraph(onnx::GraphProto &graph, Block *block,
                                    Scope &scope, const OpsetMap &opsets,
                                    NamedAttrList &info, bool isMain,
                                    SmallVectorImpl<Type> &resultTypes) {
  std::string graphDesc =
      isMain ? std::string("graph") : ("subgraph '" + graph.name() + "'");
  if (!graph.quantization_annotation().empty())
    return error() << graphDesc << ": quantization_annotation is not supported";
  info.set(attrs::kGraphName, builder.getStringAttr(graph.name()));
  setDoc(info, graph.doc_string());
  if (StringAttr u = unknownFields(graph))
    info.set("train.unknown_fields", u);

  // Inputs become block arguments.
  SmallVector<Attribute> inputInfos;
  for (const onnx::ValueInfoProto &vi : graph.input()) {
    Type type;
    FailureOr<DictionaryAttr> entry =
        importValueInfo(vi, graphDesc + " input '" + vi.name() + "'", &type);
    if (failed(entry))
      return failure();
    if (vi.name().empty())
      return error() << graphDesc << ": an input has no name";
    if (scope.values.count(vi.name()))
      return error() << graphDesc << ": input '" << vi.name()
                     << "' is declared twice";
    BlockArgument arg = block->addArgument(type, fileLoc);
    scope.values[vi.name()] = arg;
    inputInfos.push_back(*entry);
  }
  info.set("inputs", builder.getArrayAttr(inputInfos));

  // Declared types: value_info and outputs.
  llvm::StringMap<Type> declared;
  SmallVector<Attribute> valueInfos, outputInfos;
  for (const onnx::ValueInfoProto &vi : graph.value_info()) {
    Type type;
    FailureOr<DictionaryAttr> entry = importValueInfo(
        vi, graphDesc + " value_info '" + vi.name() + "'", &type);
    if (failed(entry))
      return failure();
    declared[vi.name()] = type;
    valueInfos.push_back(*entry);
  }
  for (const onnx::ValueInfoProto &vi : graph.output()) {
    Type type;
    FailureOr<DictionaryAttr> entry =
        importValueInfo(vi, graphDesc + " output '" + vi.name() + "'", &type);
    if (failed(entry))
      return failure();
    declared[vi.name()] = type;
    outputInfos.push_back(*entry);
    resultTypes.push_back(type);
  }
  if (!valueInfos.empty())
    info.set(attrs::kValueInfo, builder.getArrayAttr(valueInfos));
  info.set("outputs", builder.getArrayAttr(outputInfos));

  // Initializers. A name that is also a graph input keeps the input's
  // block argument as its value (the initializer is only a default).
  for (onnx::TensorProto &t : *graph.mutable_initializer()) {
    std::string what = graphDesc + " initializer '" + t.name() + "'";
    if (t.name().empty())
      return error() << graphDesc << ": an initializer has no name";
    bool raw = false;
    FailureOr<Attribute> value = importTensor(t, what, &raw);
    if (failed(value))
      return failure();
    auto op = InitializerOp::create(
        builder, nodeLoc(t.name()), cast<TypedAttr>(*value).getType(),
        builder.getStringAttr(t.name()), *value, raw, /*sparse=*/false,
        t.doc_string().empty() ? StringAttr()
                               : builder.getStringAttr(t.doc_string()),
        ArrayAttr());
    if (t.data_location() == onnx::TensorProto::EXTERNAL) {
      SmallVector<Attribute> kvs;
      for (const auto &kv : t.external_data())
        kvs.push_back(builder.getStrArrayAttr({kv.key(), kv.value()}));
      op.setExternalAttr(builder.getArrayAttr(kvs));
    }
    if (StringAttr u = unknownFields(t))
      op->setAttr("train.unknown_fields", u);
    bool isInput = scope.values.count(t.name());
    if (!isInput) {
      if (scope.values.count(t.name()))
        return error() << what << ": is defined twice";
      scope.values[t.name()] = op.getResult();
    } else if (!isa<BlockArgument>(scope.values[t.name()])) {
      return error() << what << ": is defined twice";
    }
  }
  for (onnx::SparseTensorProto &st : *graph.mutable_sparse_initializer()) {
    std::string name = st.values().name();
    std::string what = graphDesc + " sparse initializer '" + name + "'";
    FailureOr<Attribute> value = importSparseTensor(st, what);
    if (failed(value))
      return failure();
    auto sp = cast<SparseTensorAttr>(*value);
    Type elt =
        cast<ShapedType>(
            isa<TensorAttr>(sp.getValues())
                ? cast<TypedAttr>(cast<TensorAttr>(sp.getValues()).getValue())
                      .getType()
                : cast<TypedAttr>(sp.getValues()).getType())
            .getElementType();
    auto type = RankedTensorType::get(sp.getDims().asArrayRef(), elt);
    auto op = InitializerOp::create(
        builder, nodeLoc(name), type, builder.getStringAttr(name), *value,
        /*raw=*/false, /*sparse=*/true, StringAttr(), ArrayAttr());
    if (scope.values.count(name))
      return error() << what << ": is defined twice";
    scope.values[name] = op.getResult();
  }

  // Nodes, in a stable topological order: among ready nodes, always the one
  // that comes first in the file.
  int n = graph.node_size();
  NameMap<int> producer;
  for (int i = 0; i < n; ++i)
    for (const std::string &o : graph.node(i).output())
      if (!o.empty()) {
        auto [it, inserted] = producer.try_emplace(o, i);
        if (!inserted)
          return error() << graphDesc << ": node '" << graph.node(i).name()
                         << "' (" << graph.node(i).op_type() << "): output '"
                         << o << "' is already produced by node '"
                         << graph.node(it->second).name()
                         << "' (duplicate output name)";
        if (scope.values.count(o))
          return error() << graphDesc << ": node '" << graph.node(i).name()
                         << "' (" << graph.node(i).op_type() << "): output '"
                         << o << "' is already defined as a graph input or "
                         << "initializer (duplicate output name)";
      }
  std::vector<SmallVector<int, 2>> users(n);
  std::vector<int> pending(n, 0);
  for (int i = 0; i < n; ++i) {
    llvm::StringSet<> reads;
    collectFreeInputs(graph.node(i), reads);
    llvm::SmallSet<int, 4> deps;
    for (const auto &r : reads) {
      auto it = producer.find(r.getKey());
      if (it != producer.end() && !scope.values.count(r.getKey()))
        deps.insert(it->second);
    }
    for (int d : deps) {
      if (d == i)
        return error() << graphDesc << ": node '" << graph.node(i).name()
                       << "' (" << graph.node(i).op_type()
                       << ") reads its own output (cycle)";
      users[d].push_back(i);
      ++pending[i];
    }
  }
  std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
  for (int i = 0; i < n; ++i)
    if (pending[i] == 0)
      ready.push(i);
  int done = 0;
  // A graph stored out of topological order keeps its file order in
  // `train.order` on each node, so export can restore it.
  bool sorted = true;
  std::vector<Operation *> nodeOps(n, nullptr);
  while (!ready.empty()) {
    int i = ready.top();
    ready.pop();
    sorted &= i == done;
    ++done;
    if (failed(importNode(*graph.mutable_node(i), scope, opsets, declared)))
      return failure();
    nodeOps[i] = &builder.getInsertionBlock()->back();
    for (int u : users[i])
      if (--pending[u] == 0)
        ready.push(u);
  }
  if (done != n) {
    for (int i = 0; i < n; ++i)
      if (pending[i] > 0)
        return error() << graphDesc << ": node '" << graph.node(i).name()
                       << "' (" << graph.node(i).op_type()
                       << ") is part of a cycle";
  }
  if (!sorted)
    for (auto [i, op] : llvm::enumerate(nodeOps))
      op->setAttr(attrs::kOrder, builder.getI64IntegerAttr(i));

  // value_info entries that already disagree with the value's element type
  // (contradictory files) are written back as they were, never refreshed.
  if (!valueInfos.empty()) {
    bool changed = false;
    for (Attribute &a : valueInfos) {
      auto entry = cast<DictionaryAttr>(a);
      auto t = entry.getAs<TypeAttr>("type");
      Value v =
          scope.values.lookup(cast<StringAttr>(entry.get("name")).getValue());
      auto declared = t ? dyn_cast<TensorType>(t.getValue()) : TensorType();
      auto actual = v ? dyn_cast<TensorType>(v.getType()) : TensorType();
      if (declared && actual &&
          declared.getElementType() != actual.getElementType()) {
        NamedAttrList e(entry);
        e.set(attrs::kKeepType, builder.getUnitAttr());
        a = e.getDictionary(ctx);
        changed = true;
      }
    }
    if (changed)
      info.set(attrs::kValueInfo, builder.getArrayAttr(valueInfos));
  }

  // Outputs.
  SmallVector<Value> results;
  for (const onnx::ValueInfoProto &vi : graph.output()) {
    Value v = scope.lookup(vi.name());
    if (!v)
      return error() << graphDesc << ": output '" << vi.name()
                     << "' is not defined";
    results.push_back(v);
  }
  ReturnOp::create(builder, fileLoc, results);
  return success();
}

//===----------------------------------------------------------------------===//
// Functions
//===----------------------------------------------------------------------===//

static ArrayAttr importOpsets(
    Builder &b,
    const google::protobuf::RepeatedPtrField<onnx::OperatorSetIdProto> &list,
    OpsetMap &map) {
  SmallVector<Attribute> entries;
  for (const auto &o : list) {
    entries.push_back(b.getArrayAttr(
        {b.getStringAttr(o.domain()), b.getI64IntegerAttr(o.version())}));
    map[normalizeOnnxDomain(o.domain())] = o.version();
  }
  return b.getArrayAttr(entries);
}

LogicalResult Importer::importFunction(onnx::FunctionProto &fn, ModuleOp module,
                                       const OpsetMap &modelOpsets) {
  std::string desc = "function '" + fn.domain() + ":" + fn.name() + "'";
  OpsetMap opsets;
  ArrayAttr opsetAttr = importOpsets(builder, fn.opset_import(), opsets);
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPointToEnd(module.getBody());
  SmallVector<Type> argTypes(fn.input_size(), UnknownType::get(ctx));
  SmallVector<Type> resTypes(fn.output_size(), UnknownType::get(ctx));
  std::string symName = fn.domain() + "." + fn.name();
  auto func = FunctionOp::create(
      builder, nodeLoc(fn.name()), builder.getStringAttr(symName),
      builder.getStringAttr(fn.domain()), builder.getStringAttr(fn.name()),
      TypeAttr::get(builder.getFunctionType(argTypes, resTypes)), ArrayAttr(),
      ArrayAttr());
  func->setAttr(attrs::kOpsetImport, opsetAttr);
  SmallVector<Attribute> argAttrs, resAttrs;
  for (const std::string &in : fn.input())
    argAttrs.push_back(builder.getDictionaryAttr(
        builder.getNamedAttr(attrs::kValueName, builder.getStringAttr(in))));
  for (const std::string &out : fn.output())
    resAttrs.push_back(builder.getDictionaryAttr(
        builder.getNamedAttr(attrs::kValueName, builder.getStringAttr(out))));
  func.setArgAttrsAttr(builder.getArrayAttr(argAttrs));
  func.setResAttrsAttr(builder.getArrayAttr(resAttrs));
  SmallVector<Attribute> attrNames;
  for (const std::string &a : fn.attribute())
    attrNames.push_back(builder.getStringAttr(a));
  func->setAttr(attrs::kFunctionAttrs, builder.getArrayAttr(attrNames));
  // attribute_proto (default values, IR 9+) is newer than this libonnx:
  // it travels with the other unknown fields below.
  if (!fn.doc_string().empty())
    func->setAttr(attrs::kDocString, builder.getStringAttr(fn.doc_string()));
  if (StringAttr u = unknownFields(fn))
    func->setAttr("train.unknown_fields", u);

  Block *body = func.addEntryBlock();
  builder.setInsertionPointToEnd(body);
  Scope scope;
  for (auto [i, in] : llvm::enumerate(fn.input()))
    scope.values[in] = body->getArgument(i);
  // Function bodies: same ordering and checks as graphs.
  // On the function's arena, so that the Swap below moves the nodes
  // rather than deep-copying them across arenas.
  std::unique_ptr<onnx::GraphProto> onHeap;
  onnx::GraphProto &asGraph =
      fn.GetArena() ? *google::protobuf::Arena::CreateMessage<onnx::GraphProto>(
                          fn.GetArena())
                    : *(onHeap = std::make_unique<onnx::GraphProto>());
  asGraph.set_name(fn.name());
  for (const std::string &o : fn.output())
    asGraph.add_output()->set_name(o);
  asGraph.mutable_node()->Swap(fn.mutable_node());
  // Reuse the graph importer on a block that already has the arguments.
  NamedAttrList info;
  SmallVector<Type> resultTypes;
  // importGraph adds arguments for graph inputs; functions have none in
  // asGraph, their inputs are already in scope.
  if (failed(importGraph(asGraph, body, scope, opsets, info, /*isMain=*/false,
                         resultTypes)))
    return failure();
  (void)modelOpsets;
  return success();
}

//===----------------------------------------------------------------------===//
// Model
//===----------------------------------------------------------------------===//

OwningOpRef<ModuleOp> Importer::importModel(onnx::ModelProto &model) {
  ctx->loadDialect<TrainDialect>();
  OwningOpRef<ModuleOp> module = ModuleOp::create(fileLoc);
  Builder &b = builder;
  OpsetMap opsets;
  NamedAttrList modelAttrs;
  modelAttrs.set(attrs::kIrVersion, b.getI64IntegerAttr(model.ir_version()));
  modelAttrs.set(attrs::kOpsetImport,
                 importOpsets(b, model.opset_import(), opsets));
  if (model.has_producer_name())
    modelAttrs.set(attrs::kProducerName,
                   b.getStringAttr(model.producer_name()));
  if (model.has_producer_version())
    modelAttrs.set(attrs::kProducerVersion,
                   b.getStringAttr(model.producer_version()));
  if (model.has_domain())
    modelAttrs.set(attrs::kModelDomain, b.getStringAttr(model.domain()));
  if (model.has_model_version())
    modelAttrs.set(attrs::kModelVersion,
                   b.getI64IntegerAttr(model.model_version()));
  setDoc(modelAttrs, model.doc_string());
  if (model.metadata_props_size()) {
    SmallVector<Attribute> props;
    for (const auto &kv : model.metadata_props())
      props.push_back(b.getStrArrayAttr({kv.key(), kv.value()}));
    modelAttrs.set(attrs::kMetadataProps, b.getArrayAttr(props));
  }
  if (model.training_info_size()) {
    error() << "model: training_info is not supported";
    return nullptr;
  }
  if (StringAttr u = unknownFields(model))
    modelAttrs.set("train.unknown_fields", u);
  for (NamedAttribute na : modelAttrs)
    (*module)->setAttr(na.getName(), na.getValue());

  for (const onnx::FunctionProto &fn : model.functions())
    localFunctions.insert(functionKey(fn.domain(), fn.name()));
  for (onnx::FunctionProto &fn : *model.mutable_functions())
    if (failed(importFunction(fn, *module, opsets)))
      return nullptr;

  if (!model.has_graph()) {
    error() << "model: has no graph";
    return nullptr;
  }
  builder.setInsertionPointToEnd(module->getBody());
  auto graphOp = GraphOp::create(builder, fileLoc, b.getStringAttr("main"),
                                 TypeAttr::get(b.getFunctionType({}, {})),
                                 ArrayAttr(), ArrayAttr());
  Block *body = new Block();
  graphOp.getBody().push_back(body);
  builder.setInsertionPointToEnd(body);
  Scope scope;
  NamedAttrList info;
  SmallVector<Type> resultTypes;
  if (failed(importGraph(*model.mutable_graph(), body, scope, opsets, info,
                         /*isMain=*/true, resultTypes)))
    return nullptr;
  SmallVector<Type> argTypes(body->getArgumentTypes());
  graphOp.setFunctionTypeAttr(
      TypeAttr::get(b.getFunctionType(argTypes, resultTypes)));
  // Input/output value infos become argument/result attributes.
  auto toArgAttrs = [&](ArrayAttr infos) {
    SmallVector<Attribute> out;
    for (Attribute a : infos) {
      NamedAttrList entry(cast<DictionaryAttr>(a));
      entry.erase("type");
      if (Attribute name = entry.get("name")) {
        entry.erase("name");
        entry.set(attrs::kValueName, name);
      }
      out.push_back(entry.getDictionary(ctx));
    }
    return b.getArrayAttr(out);
  };
  graphOp.setArgAttrsAttr(toArgAttrs(cast<ArrayAttr>(info.get("inputs"))));
  graphOp.setResAttrsAttr(toArgAttrs(cast<ArrayAttr>(info.get("outputs"))));
  // Value infos without a type keep a marker so export reproduces them.
  for (auto [i, vi] : llvm::enumerate(model.graph().input()))
    if (!vi.has_type())
      graphOp.setArgAttr(i, "train.no_type", b.getUnitAttr());
  for (auto [i, vi] : llvm::enumerate(model.graph().output()))
    if (!vi.has_type())
      graphOp.setResultAttr(i, "train.no_type", b.getUnitAttr());
  info.erase("inputs");
  info.erase("outputs");
  for (NamedAttribute na : info)
    graphOp->setAttr(na.getName(), na.getValue());

  // Verify, reporting problems against the node that has them.
  SmallVector<std::pair<Location, std::string>> problems;
  {
    ScopedDiagnosticHandler handler(ctx, [&](Diagnostic &diag) {
      if (diag.getSeverity() == DiagnosticSeverity::Error)
        problems.emplace_back(diag.getLocation(), diag.str());
      return success();
    });
    if (succeeded(verify(*module)))
      return module;
  }
  for (auto &[loc, msg] : problems) {
    if (auto nameLoc = dyn_cast<NameLoc>(loc))
      error() << "node '" << nameLoc.getName().getValue() << "': " << msg;
    else
      error() << msg;
  }
  if (problems.empty())
    error() << "the imported model does not verify";
  return nullptr;
}

//===----------------------------------------------------------------------===//
// Entry points
//===----------------------------------------------------------------------===//

/// ONNX Runtime's ORT format: a FlatBuffer whose file identifier (bytes 4
/// to 8) is "ORTM". Users meet it as generate_artifacts(ort_format=True)'s
/// .ort files, and it parses as no protobuf.
static bool isOrtFormat(StringRef head) {
  return head.size() >= 8 && head.substr(4, 4) == "ORTM";
}

static std::string tooLargeMessage(uint64_t bytes) {
  return "file is " + std::to_string(bytes) +
         " bytes, larger than 2 GiB, the protobuf limit: not one ONNX "
         "ModelProto (a model this large keeps its weights as external "
         "data, which onnx.save_model(..., save_as_external_data=True) "
         "writes)";
}

/// `head`: the first bytes of the input (at most 8), when they could be
/// read without consuming the stream (not from a pipe).
static OwningOpRef<ModuleOp>
importFromStream(google::protobuf::io::ZeroCopyInputStream &stream,
                 StringRef name, MLIRContext *ctx,
                 const ImportOnnxOptions &options,
                 std::optional<StringRef> head) {
  Location loc = FileLineColLoc::get(ctx, name, 0, 0);
  if (head && head->empty()) {
    emitError(loc) << "file is empty: not an ONNX model";
    return nullptr;
  }
  if (head && isOrtFormat(*head)) {
    emitError(loc) << "an ONNX Runtime ORT-format model (FlatBuffer 'ORTM'), "
                      "not ONNX: give the .onnx model it was made from "
                      "(generate_artifacts writes one next to each .ort)";
    return nullptr;
  }
  // On an arena: a model of a million nodes is parsed into a few large
  // blocks and freed as them, not as millions of small heap chunks (which
  // would leave glibc's heap to sort them on the passes' next allocations).
  google::protobuf::Arena arena;
  onnx::ModelProto &model =
      *google::protobuf::Arena::CreateMessage<onnx::ModelProto>(&arena);
  google::protobuf::io::CodedInputStream coded(&stream);
  coded.SetTotalBytesLimit(std::numeric_limits<int>::max());
  if (!model.ParseFromCodedStream(&coded) || !coded.ConsumedEntireMessage()) {
    // A stream (a pipe) is only known to be too large once the parser
    // reaches protobuf's limit.
    if (coded.BytesUntilTotalBytesLimit() <= 0)
      emitError(loc) << "input is larger than 2 GiB, the protobuf limit: "
                        "not one ONNX ModelProto (a model this large keeps "
                        "its weights as external data)";
    else
      emitError(loc) << "cannot parse the file as an ONNX ModelProto "
                     << "(truncated or not a protobuf)";
    return nullptr;
  }
  if (!model.has_graph() && model.ir_version() == 0) {
    emitError(loc) << "not an ONNX model: no ir_version and no graph";
    return nullptr;
  }
  Importer importer(ctx, name, options);
  return importer.importModel(model);
}

OwningOpRef<ModuleOp> amp::importOnnxModel(llvm::MemoryBufferRef buffer,
                                           MLIRContext *context,
                                           const ImportOnnxOptions &options) {
  if (buffer.getBufferSize() > kMaxProtobufBytes) {
    emitError(FileLineColLoc::get(context, buffer.getBufferIdentifier(), 0, 0))
        << tooLargeMessage(buffer.getBufferSize());
    return nullptr;
  }
  google::protobuf::io::ArrayInputStream stream(buffer.getBufferStart(),
                                                buffer.getBufferSize());
  return importFromStream(stream, buffer.getBufferIdentifier(), context,
                          options, buffer.getBuffer().take_front(8));
}

OwningOpRef<ModuleOp> amp::importOnnxFile(StringRef path, MLIRContext *context,
                                          const ImportOnnxOptions &options) {
  Location loc = FileLineColLoc::get(context, path, 0, 0);
  int fd = ::open(path.str().c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    emitError(loc) << "cannot open file: " << std::strerror(errno);
    return nullptr;
  }
  // A regular file over protobuf's limit cannot be one ModelProto: say so
  // before parsing 2 GiB of it.
  struct stat st;
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
      uint64_t(st.st_size) > kMaxProtobufBytes) {
    ::close(fd);
    emitError(loc) << tooLargeMessage(uint64_t(st.st_size));
    return nullptr;
  }
  // The first bytes, without consuming them (a pipe cannot be peeked: its
  // head stays unknown and protobuf's parse speaks for it).
  char head[8];
  ssize_t got = ::pread(fd, head, sizeof(head), 0);
  std::optional<StringRef> headBytes;
  if (got >= 0)
    headBytes = StringRef(head, size_t(got));
  OwningOpRef<ModuleOp> result;
  {
    google::protobuf::io::FileInputStream stream(fd, 1 << 20);
    result = importFromStream(stream, path, context, options, headBytes);
  }
  ::close(fd);
  return result;
}

bool amp::startsLikeBinaryModel(StringRef path) {
  // Only a regular file can be looked at without taking bytes from the
  // parse that follows (a pipe or /dev/fd/N cannot).
  if (!llvm::sys::fs::is_regular_file(path))
    return false;
  int fd = ::open(path.str().c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return false;
  char head[8];
  ssize_t got = ::pread(fd, head, sizeof(head), 0);
  ::close(fd);
  return got > 0 && isBinaryModelHead(StringRef(head, size_t(got)));
}

bool amp::isBinaryModelHead(StringRef head) {
  if (head.empty())
    return false;
  if (isOrtFormat(head))
    return true;
  unsigned char first = head[0];
  bool text = (first >= 0x20 && first < 0x7f) || first == '\t' ||
              first == '\n' || first == '\r';
  return !text;
}

void amp::registerFromOnnxTranslation() {
  TranslateToMLIRRegistration registration(
      "import-onnx", "import an ONNX model (.onnx) into the train dialect",
      [](llvm::SourceMgr &sourceMgr,
         MLIRContext *context) -> OwningOpRef<Operation *> {
        const llvm::MemoryBuffer *buf =
            sourceMgr.getMemoryBuffer(sourceMgr.getMainFileID());
        return importOnnxModel(buf->getMemBufferRef(), context);
      },
      [](DialectRegistry &registry) { registry.insert<TrainDialect>(); });
}

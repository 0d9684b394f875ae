//===- TrainOps.cpp - Train dialect ops -----------------------------------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// Verifiers and custom syntax of the structural ops, and the schema-driven
// verifier shared by every ONNX node op. The generated op definitions are
// compiled in the TrainOpsShard*.cpp files.
//
//===----------------------------------------------------------------------===//

#include "amp/Dialect/Train/IR/TrainOps.h"
#include "amp/Dialect/Train/IR/OnnxTypes.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Interfaces/FunctionImplementation.h"
#include "llvm/ADT/StringMap.h"

using namespace mlir;
using namespace amp::train;

#include "amp/Dialect/Train/IR/TrainOpsInterfaces.cpp.inc"

//===----------------------------------------------------------------------===//
// GraphOp / FunctionOp
//===----------------------------------------------------------------------===//

/// Function-like syntax shared by train.graph and train.function.
template <typename OpTy>
static ParseResult parseFunctionLike(OpAsmParser &parser,
                                     OperationState &result) {
  auto buildFuncType =
      [](Builder &builder, ArrayRef<Type> argTypes, ArrayRef<Type> results,
         function_interface_impl::VariadicFlag,
         std::string &) { return builder.getFunctionType(argTypes, results); };
  return function_interface_impl::parseFunctionOp(
      parser, result, /*allowVariadic=*/false,
      OpTy::getFunctionTypeAttrName(result.name), buildFuncType,
      OpTy::getArgAttrsAttrName(result.name),
      OpTy::getResAttrsAttrName(result.name));
}

template <typename OpTy>
static void printFunctionLike(OpTy op, OpAsmPrinter &p) {
  function_interface_impl::printFunctionOp(
      p, op, /*isVariadic=*/false, op.getFunctionTypeAttrName(),
      op.getArgAttrsAttrName(), op.getResAttrsAttrName());
}

ParseResult GraphOp::parse(OpAsmParser &parser, OperationState &result) {
  return parseFunctionLike<GraphOp>(parser, result);
}
void GraphOp::print(OpAsmPrinter &p) { printFunctionLike(*this, p); }

LogicalResult GraphOp::verify() {
  if (getBody().empty())
    return emitOpError("must have a body");
  Block &entry = getBody().front();
  if (entry.getNumArguments() != getArgumentTypes().size())
    return emitOpError("body has ")
           << entry.getNumArguments() << " arguments but the type has "
           << getArgumentTypes().size();
  return success();
}

ParseResult FunctionOp::parse(OpAsmParser &parser, OperationState &result) {
  return parseFunctionLike<FunctionOp>(parser, result);
}
void FunctionOp::print(OpAsmPrinter &p) { printFunctionLike(*this, p); }

//===----------------------------------------------------------------------===//
// InitializerOp
//===----------------------------------------------------------------------===//

LogicalResult InitializerOp::verify() {
  Attribute value = getValue();
  if (getSparse()) {
    if (!isa<SparseTensorAttr>(value))
      return emitOpError("sparse initializer needs a #train.sparse value");
    return success();
  }
  auto elements = dyn_cast<ElementsAttr>(value);
  if (!elements)
    return emitOpError("value must be an elements attribute");
  if (elements.getType() != getResult().getType())
    return emitOpError("value type ")
           << elements.getType() << " does not match the result type "
           << getResult().getType();
  return success();
}

//===----------------------------------------------------------------------===//
// NodeOp
//===----------------------------------------------------------------------===//

StringRef NodeOp::getOnnxDomain() { return getDomain(); }
StringRef NodeOp::getOnnxOpType() { return getOpType(); }
int64_t NodeOp::getOnnxSinceVersion() { return -1; }
SmallVector<StringRef> NodeOp::getGraphAttrNames() {
  SmallVector<StringRef> names;
  for (Attribute a : getGraphAttrs())
    names.push_back(cast<StringAttr>(a).getValue());
  return names;
}

LogicalResult NodeOp::verify() {
  if (getGraphAttrs().size() != getGraphs().size())
    return emitOpError("has ") << getGraphs().size() << " regions but names "
                               << getGraphAttrs().size() << " graph attributes";
  return success();
}

//===----------------------------------------------------------------------===//
// Schema-driven verification of ONNX node ops
//===----------------------------------------------------------------------===//

Attribute amp::train::getOnnxAttribute(Operation *op, StringRef name) {
  if (auto g = dyn_cast<NodeOp>(op))
    return g.getAttrs().get(name);
  return op->getAttr(name);
}

int64_t amp::train::getOnnxInt(Operation *op, StringRef name, int64_t dflt) {
  if (auto a = dyn_cast_or_null<IntegerAttr>(getOnnxAttribute(op, name)))
    return a.getInt();
  return dflt;
}

std::optional<SmallVector<int64_t>> amp::train::getOnnxInts(Operation *op,
                                                            StringRef name) {
  Attribute a = getOnnxAttribute(op, name);
  if (auto d = dyn_cast_or_null<DenseI64ArrayAttr>(a))
    return SmallVector<int64_t>(d.asArrayRef());
  if (auto i =
          dyn_cast_or_null<IntegerAttr>(a)) // a scalar where a list is meant
    return SmallVector<int64_t>{i.getInt()};
  auto list = dyn_cast_or_null<ArrayAttr>(a);
  if (!list)
    return std::nullopt;
  SmallVector<int64_t> v;
  for (Attribute e : list)
    if (auto i = dyn_cast<IntegerAttr>(e))
      v.push_back(i.getInt());
  return v;
}

int64_t amp::train::getImportedOpsetVersion(Operation *op, StringRef domain) {
  for (Operation *p = op; p; p = p->getParentOp()) {
    auto list = p->getAttrOfType<ArrayAttr>(attrs::kOpsetImport);
    if (!list)
      continue;
    // A domain imported twice: the last entry wins, as in the importer.
    int64_t version = -1;
    for (Attribute entry : list) {
      auto pair = dyn_cast<ArrayAttr>(entry);
      if (!pair || pair.size() != 2)
        continue;
      auto d = dyn_cast<StringAttr>(pair[0]);
      auto v = dyn_cast<IntegerAttr>(pair[1]);
      if (d && v && normalizeOnnxDomain(d.getValue()) == domain)
        version = v.getInt();
    }
    return version;
  }
  return -1;
}

const OnnxOpSchema *amp::train::getSchemaFor(OnnxNodeOpInterface op) {
  // The version the model imports decides (an older schema with the same
  // signature may map to the typed op); without an import, the typed op's.
  // Imports belong to graphs, functions and models, as in ONNX (a node has
  // none), so the search starts at the node's parent.
  StringRef domain = normalizeOnnxDomain(op.getOnnxDomain());
  int64_t version = getImportedOpsetVersion(op->getParentOp(), domain);
  if (version < 0)
    version = op.getOnnxSinceVersion();
  if (version < 0)
    return nullptr;
  return lookupOnnxSchema(domain, op.getOnnxOpType(), version);
}

/// Kind check of one ONNX attribute value.
static bool attrMatchesKind(Attribute value, OnnxAttrKind kind) {
  if (isa<RefAttr>(value))
    return true;
  switch (kind) {
  case OnnxAttrKind::Float:
    return isa<FloatAttr>(value);
  case OnnxAttrKind::Int:
    return isa<IntegerAttr>(value);
  case OnnxAttrKind::String:
    return isa<StringAttr>(value);
  case OnnxAttrKind::Tensor:
    return isa<ElementsAttr, TensorAttr>(value);
  case OnnxAttrKind::Floats:
    return isa<DenseF32ArrayAttr>(value);
  case OnnxAttrKind::Ints:
    return isa<DenseI64ArrayAttr>(value);
  case OnnxAttrKind::Strings:
  case OnnxAttrKind::Tensors:
  case OnnxAttrKind::Graphs:
  case OnnxAttrKind::SparseTensors:
  case OnnxAttrKind::TypeProtos:
    return isa<ArrayAttr>(value);
  case OnnxAttrKind::SparseTensor:
    return isa<SparseTensorAttr>(value);
  case OnnxAttrKind::TypeProto:
    return isa<TypeAttr, TypeProtoAttr>(value);
  case OnnxAttrKind::Graph:
  case OnnxAttrKind::Undefined:
    return false;
  }
  return false;
}

static const char *attrKindName(OnnxAttrKind kind) {
  static const char *names[] = {"UNDEFINED",      "FLOAT",      "INT",
                                "STRING",         "TENSOR",     "GRAPH",
                                "FLOATS",         "INTS",       "STRINGS",
                                "TENSORS",        "GRAPHS",     "SPARSE_TENSOR",
                                "SPARSE_TENSORS", "TYPE_PROTO", "TYPE_PROTOS"};
  return names[static_cast<unsigned>(kind)];
}

/// Checks that the values bound to each type constraint agree and are
/// allowed by it.
static LogicalResult verifyTypeConstraints(Operation *op,
                                           const OnnxOpSchema &schema) {
  // The first port bound to each constraint (few per op: a small vector).
  struct Bound {
    StringRef constraint;
    std::string typeStr;
    StringRef what;
    unsigned index;
  };
  SmallVector<Bound, 4> bound;
  auto check = [&](Type type, const OnnxParamSchema &param, StringRef what,
                   unsigned index) -> LogicalResult {
    if (isa<NoneType, UnknownType>(type))
      return success();
    std::string typeStr = getOnnxTypeString(type);
    // Map types are spelled inconsistently in the ai.onnx.ml schemas
    // ("map(int64, float)" for a map of tensors); not checked.
    if (typeStr.empty() || StringRef(typeStr).contains("map("))
      return success();
    StringRef constraintName = param.typeStr;
    const OnnxTypeConstraintSchema *constraint =
        schema.findConstraint(constraintName);
    if (!constraint) {
      // A literal type such as "tensor(int64)".
      if (constraintName != typeStr)
        return op->emitOpError()
               << what << " #" << index << " ('" << param.name << "') must be "
               << constraintName << ", got " << typeStr;
      return success();
    }
    if (!llvm::is_contained(constraint->getAllowedTypes(), typeStr))
      return op->emitOpError()
             << what << " #" << index << " ('" << param.name << "') has type "
             << typeStr << ", which type constraint " << constraintName
             << " does not allow";
    if (param.option == OnnxParamOption::Variadic && !param.homogeneous)
      return success();
    auto it = llvm::find_if(
        bound, [&](const Bound &b) { return b.constraint == constraintName; });
    if (it == bound.end())
      bound.push_back({constraintName, std::move(typeStr), what, index});
    else if (it->typeStr != typeStr)
      return op->emitOpError()
             << what << " #" << index << " has type " << typeStr << " but "
             << it->what << " #" << it->index << " has " << it->typeStr
             << " and both are bound to type constraint " << constraintName;
    return success();
  };
  for (auto [i, v] : llvm::enumerate(op->getOperands()))
    if (const OnnxParamSchema *p = schema.getInputParam(i))
      if (failed(check(v.getType(), *p, "input", i)))
        return failure();
  for (auto [i, v] : llvm::enumerate(op->getResults()))
    if (const OnnxParamSchema *p = schema.getOutputParam(i))
      if (failed(check(v.getType(), *p, "output", i)))
        return failure();
  return success();
}

LogicalResult amp::train::verifyOnnxNode(Operation *op) {
  auto node = cast<OnnxNodeOpInterface>(op);
  auto outputNames = op->getAttrOfType<ArrayAttr>(attrs::kOutputNames);
  // Typed ops have a result for every formal output (absent optional ones
  // are none); ONNX may list fewer.
  if (outputNames && outputNames.size() > op->getNumResults())
    return op->emitOpError("'")
           << attrs::kOutputNames << "' names " << outputNames.size()
           << " outputs but the op has " << op->getNumResults();
  // The generic op is what carries nodes that do not fit a schema: it is
  // checked by its own verifier only.
  if (isa<NodeOp>(op))
    return success();
  const OnnxOpSchema *schema = getSchemaFor(node);
  if (!schema)
    return success();
  auto nodeOp = dyn_cast<NodeOp>(op);
  bool typed = !nodeOp;
  // The ONNX input count: typed ops pad absent trailing optional inputs
  // with none (up to the newest version's count); ONNX lists them only when
  // written explicitly (train.num_inputs).
  unsigned numInputs = op->getNumOperands();
  while (numInputs > 0 &&
         isa<NoneType>(op->getOperand(numInputs - 1).getType()))
    --numInputs;
  if (auto n = op->getAttrOfType<IntegerAttr>(attrs::kNumInputs))
    numInputs = n.getInt();
  int maxIn = schema->getMaxInputs();
  if ((int)numInputs < schema->getMinInputs() ||
      (maxIn >= 0 && (int)numInputs > maxIn))
    return op->emitOpError("has ")
           << numInputs << " inputs but " << schema->opType << "-"
           << schema->sinceVersion << " takes " << schema->getMinInputs()
           << (maxIn < 0 ? " or more" : (" to " + Twine(maxIn)).str());
  int maxOut = schema->getMaxOutputs();
  unsigned numOutputs = op->getNumResults();
  if (outputNames)
    numOutputs = outputNames.size();
  else
    while (numOutputs > 0 &&
           isa<NoneType>(op->getResult(numOutputs - 1).getType()))
      --numOutputs;
  if ((int)numOutputs < schema->getMinOutputs() && !typed)
    return op->emitOpError("has ")
           << numOutputs << " outputs but " << schema->opType
           << " needs at least " << schema->getMinOutputs();
  if (maxOut >= 0 && (int)numOutputs > maxOut)
    return op->emitOpError("has ")
           << numOutputs << " outputs but " << schema->opType << " has at most "
           << maxOut;
  // Attributes: kinds and required ones.
  auto checkAttr = [&](StringRef name, Attribute value) -> LogicalResult {
    const OnnxAttrSchema *a = schema->findAttr(name);
    if (!a)
      return op->emitOpError("has attribute '")
             << name << "' that " << schema->opType << "-"
             << schema->sinceVersion << " does not define";
    if (!attrMatchesKind(value, a->kind))
      return op->emitOpError("attribute '")
             << name << "' must be of ONNX type " << attrKindName(a->kind);
    return success();
  };
  llvm::SmallVector<StringRef> graphNames = node.getGraphAttrNames();
  if (nodeOp) {
    for (NamedAttribute na : nodeOp.getAttrs())
      if (failed(checkAttr(na.getName(), na.getValue())))
        return failure();
  } else if (op->getPropertiesStorageSize()) {
    // What getAttrs() lists (raw attributes and the inherent ones from the
    // properties, sorted by name), without the uniqued DictionaryAttr that
    // getAttrs() builds on every call for an op with properties.
    NamedAttrList list(op->getRawDictionaryAttrs());
    op->getName().populateInherentAttrs(op, list);
    SmallVector<NamedAttribute, 8> sorted(list.begin(), list.end());
    llvm::sort(sorted);
    for (NamedAttribute na : sorted)
      if (!isBookkeepingAttr(na.getName()) &&
          failed(checkAttr(na.getName(), na.getValue())))
        return failure();
  } else {
    for (NamedAttribute na : op->getAttrs())
      if (!isBookkeepingAttr(na.getName()) &&
          failed(checkAttr(na.getName(), na.getValue())))
        return failure();
  }
  for (const OnnxAttrSchema &a : schema->getAttrs()) {
    if (!a.required)
      continue;
    bool present = false;
    if (a.kind == OnnxAttrKind::Graph) {
      for (auto [name, region] : llvm::zip(graphNames, op->getRegions()))
        present |= name == a.name && !region.empty();
    } else {
      present = nodeOp ? (bool)nodeOp.getAttrs().get(a.name)
                       : (bool)op->getAttr(a.name);
    }
    if (!present)
      return op->emitOpError("is missing required attribute '")
             << a.name << "'";
  }
  return verifyTypeConstraints(op, *schema);
}

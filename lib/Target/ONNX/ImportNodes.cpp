//===- ImportNodes.cpp - ONNX nodes to train ops --------------------------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// One NodeProto as one op: the typed op of its (domain, op_type) when the
// schema of the model's opset fits it, else a generic train.node (with a
// warning when a standard schema does not fit); unique node names; result
// types from value_info, the schema or control-flow bodies; subgraphs as
// regions.
//
//===----------------------------------------------------------------------===//

#include "ImportONNXInternals.h"
#include "amp/Dialect/Train/IR/OnnxTypes.h"

#include <functional>
#include <optional>

using namespace mlir;
using namespace amp;
using namespace amp::train;
using namespace amp::onnx_detail;

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

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

/// The version of `domain` in `opsets`, or -1.
static int64_t getOpset(const OpsetMap &opsets, StringRef domain) {
  auto it = opsets.find(normalizeOnnxDomain(domain));
  return it == opsets.end() ? -1 : it->second;
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

//===- ImportStructure.cpp - ONNX models, functions and graphs ------------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// The structure of a model: its attributes and opset imports, its local
// functions, and each graph (the main one and subgraphs): inputs as block
// arguments, value_info and outputs, initializers, then the nodes in a stable
// topological order (file order kept in `train.order` when it differs), with
// undefined inputs, cycles and duplicate outputs reported. The module is
// verified at the end, problems reported against their node.
//
//===----------------------------------------------------------------------===//

#include "ImportONNXInternals.h"

#include "mlir/IR/Verifier.h"
#include "llvm/ADT/SmallSet.h"

#include <google/protobuf/unknown_field_set.h>

#include <queue>

using namespace mlir;
using namespace amp;
using namespace amp::train;
using namespace amp::onnx_detail;

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

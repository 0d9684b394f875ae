//===- ExportStructure.cpp - train modules to ONNX models -----------------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// The structure of a model (the inverse of ImportStructure.cpp): its
// attributes and opset imports, its train.function ops as FunctionProtos, and
// each graph: inputs, initializers (those to defer or to write as external
// data marked by a placeholder), nodes in block order or their recorded file
// order, outputs and value_info.
//
//===----------------------------------------------------------------------===//

#include "ExportONNXInternals.h"
#include "amp/Dialect/Train/IR/OnnxTypes.h"

using namespace mlir;
using namespace amp;
using namespace amp::train;
using namespace amp::onnx_detail;

//===----------------------------------------------------------------------===//
// Graphs
//===----------------------------------------------------------------------===//

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

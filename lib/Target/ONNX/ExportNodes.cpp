//===- ExportNodes.cpp - train ops to ONNX nodes --------------------------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// One op as one NodeProto (the inverse of ImportNodes.cpp): domain, op_type,
// name (casts a pass left unnamed are named by the rule of CastNames.h),
// inputs and outputs with their recorded counts, attributes in their recorded
// order (else sorted by name), regions as GRAPH or GRAPHS attributes. The
// ONNX names of values: as imported, else generated.
//
//===----------------------------------------------------------------------===//

#include "ExportONNXInternals.h"
#include "amp/Dialect/Train/IR/CastNames.h"

using namespace mlir;
using namespace amp;
using namespace amp::train;
using namespace amp::onnx_detail;

//===----------------------------------------------------------------------===//
// Value names
//===----------------------------------------------------------------------===//

std::string Exporter::nameOf(Value v) {
  auto it = names.find(v);
  if (it != names.end())
    return it->second;
  if (isa<NoneType>(v.getType()))
    return "";
  Operation *def = v.getDefiningOp();
  if (def && isGeneratedCast(def) && hasUnnamedCastOutput(def)) {
    auto castOp = cast<CastOp>(def);
    std::string name = castNameScope(def)
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
// Nodes
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
    StringRef name = castNameScope(op).takeNodeName(getCastNodeNameBase(
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

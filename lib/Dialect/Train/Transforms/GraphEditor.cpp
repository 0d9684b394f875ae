//===- GraphEditor.cpp - ONNX-level edits of a train.graph ----------------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//

#include "amp/Dialect/Train/Transforms/GraphEditor.h"
#include "amp/Dialect/Train/IR/CastNames.h"
#include "amp/Dialect/Train/IR/OnnxNames.h"

using namespace mlir;
using namespace amp::train;

GraphEditor::GraphEditor(GraphOp graph)
    : builder(graph.getContext()), graph(graph) {
  Block &body = graph.getBody().front();
  for (BlockArgument arg : body.getArguments()) {
    std::string n = getOnnxValueName(graph, arg);
    usedValueNames.insert(n);
    values.try_emplace(n, arg);
  }
  graph.getBody().walk([&](Operation *op) {
    bool top = op->getBlock() == &body;
    if (auto n = op->getAttrOfType<StringAttr>(attrs::kNodeName))
      usedNodeNames.insert(n.getValue());
    forEachSubgraphIOName(op, [&](StringRef n) { usedValueNames.insert(n); });
    if (auto init = dyn_cast<InitializerOp>(op)) {
      usedValueNames.insert(init.getName());
      if (top)
        values.try_emplace(init.getName(), init.getResult());
      return;
    }
    auto outs = op->getAttrOfType<ArrayAttr>(attrs::kOutputNames);
    if (!outs)
      return;
    for (auto [i, a] : llvm::enumerate(outs)) {
      auto s = dyn_cast<StringAttr>(a);
      if (!s || s.getValue().empty())
        continue;
      usedValueNames.insert(s.getValue());
      if (top && i < op->getNumResults())
        values.try_emplace(s.getValue(), op->getResult(i));
    }
  });
  builder.setInsertionPoint(body.getTerminator());
}

static std::string makeUnique(llvm::StringSet<> &used, StringRef base) {
  std::string name = base.str();
  for (unsigned k = 1; used.contains(name); ++k)
    name = (base + "_" + Twine(k)).str();
  used.insert(name);
  return name;
}

std::string GraphEditor::uniqueNodeName(StringRef base) {
  return makeUnique(usedNodeNames, base);
}

std::string GraphEditor::uniqueValueName(StringRef base) {
  return makeUnique(usedValueNames, base);
}

Value GraphEditor::lookup(StringRef name) const { return values.lookup(name); }

int64_t GraphEditor::getOpsetVersion(StringRef domain) {
  return std::max<int64_t>(
      0, getImportedOpsetVersion(graph.getOperation(), domain));
}

void GraphEditor::importOpset(StringRef domain, int64_t version) {
  if (getImportedOpsetVersion(graph.getOperation(), domain) >= 0)
    return;
  Operation *module = graph->getParentOp();
  if (!module)
    return;
  SmallVector<Attribute> list;
  if (auto old = module->getAttrOfType<ArrayAttr>(attrs::kOpsetImport))
    list.append(old.begin(), old.end());
  Builder b(getContext());
  list.push_back(
      b.getArrayAttr({b.getStringAttr(domain), b.getI64IntegerAttr(version)}));
  module->setAttr(attrs::kOpsetImport, b.getArrayAttr(list));
}

BlockArgument GraphEditor::addInput(StringRef name, Type type) {
  std::string unique = uniqueValueName(name);
  unsigned index = graph.getNumArguments();
  auto attrsDict = DictionaryAttr::get(
      getContext(),
      {NamedAttribute(StringAttr::get(getContext(), attrs::kValueName),
                      StringAttr::get(getContext(), unique))});
  (void)graph.insertArgument(index, type, attrsDict, graph.getLoc());
  BlockArgument arg = graph.getArgument(index);
  values[unique] = arg;
  return arg;
}

void GraphEditor::addOutput(Value value) {
  Operation *ret = graph.getBody().front().getTerminator();
  unsigned index = graph.getNumResults();
  auto attrsDict = DictionaryAttr::get(
      getContext(),
      {NamedAttribute(
          StringAttr::get(getContext(), attrs::kValueName),
          StringAttr::get(getContext(), getOnnxValueName(graph, value)))});
  (void)graph.insertResult(index, value.getType(), attrsDict);
  ret->insertOperands(ret->getNumOperands(), value);
}

Value GraphEditor::addInitializer(StringRef name, DenseElementsAttr value) {
  std::string unique = uniqueValueName(name);
  OpBuilder b(getContext());
  b.setInsertionPointToStart(&graph.getBody().front());
  auto init = InitializerOp::create(b, graph.getLoc(), value.getType(),
                                    b.getStringAttr(unique), value,
                                    /*raw=*/nullptr, /*sparse=*/nullptr,
                                    /*doc_string=*/nullptr,
                                    /*external=*/nullptr);
  values[unique] = init.getResult();
  return init.getResult();
}

Operation *GraphEditor::name(Operation *op, StringRef nodeBase) {
  std::string node = uniqueNodeName(nodeBase);
  op->setAttr(attrs::kNodeName, builder.getStringAttr(node));
  SmallVector<Attribute> outs;
  for (unsigned i = 0, e = op->getNumResults(); i < e; ++i) {
    std::string base = e == 1 ? node : node + "_" + std::to_string(i);
    std::string v = uniqueValueName(base);
    outs.push_back(builder.getStringAttr(v));
    values[v] = op->getResult(i);
  }
  op->setAttr(attrs::kOutputNames, builder.getArrayAttr(outs));
  return op;
}

void GraphEditor::renameValue(Value value, StringRef newName) {
  Operation *op = value.getDefiningOp();
  assert(op && !isa<InitializerOp>(op) && "renames node outputs only");
  unsigned i = cast<OpResult>(value).getResultNumber();
  SmallVector<Attribute> outs;
  if (auto old = op->getAttrOfType<ArrayAttr>(attrs::kOutputNames))
    outs.assign(old.begin(), old.end());
  while (outs.size() <= i)
    outs.push_back(builder.getStringAttr(""));
  if (auto s = dyn_cast<StringAttr>(outs[i]))
    values.erase(s.getValue());
  outs[i] = builder.getStringAttr(newName);
  usedValueNames.insert(newName);
  values[newName] = value;
  op->setAttr(attrs::kOutputNames, builder.getArrayAttr(outs));
}

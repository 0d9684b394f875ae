//===- OnnxNames.cpp - the ONNX names a train.graph records ---------------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//

#include "amp/Dialect/Train/IR/OnnxNames.h"
#include "amp/Dialect/Train/IR/CastNames.h"

using namespace mlir;
using namespace amp::train;

/// The key of the `kSubgraphs` entry of region `regionIndex` of `holder`:
/// the graph attribute's name, with `#k` for the k-th graph of a GRAPHS list
/// (as the importer records them); and the entry. Empty when none.
static std::pair<std::string, DictionaryAttr>
getSubgraphInfo(Operation *holder, unsigned regionIndex) {
  auto iface = dyn_cast<OnnxNodeOpInterface>(holder);
  auto infos = holder->getAttrOfType<DictionaryAttr>(attrs::kSubgraphs);
  if (!iface || !infos)
    return {};
  SmallVector<StringRef> graphNames = iface.getGraphAttrNames();
  if (regionIndex >= graphNames.size())
    return {};
  StringRef attrName = graphNames[regionIndex];
  std::string key = attrName.str();
  if (!infos.get(key)) {
    unsigned k =
        llvm::count(ArrayRef(graphNames).take_front(regionIndex), attrName);
    key += "#" + std::to_string(k);
  }
  return {key, infos.getAs<DictionaryAttr>(key)};
}

std::string amp::train::getOnnxValueName(FunctionOpInterface graph,
                                         Value value) {
  if (auto arg = dyn_cast<BlockArgument>(value)) {
    Operation *holder = arg.getOwner()->getParentOp();
    if (holder == graph.getOperation()) {
      if (auto dict = graph.getArgAttrDict(arg.getArgNumber()))
        if (auto n = dict.getAs<StringAttr>(attrs::kValueName))
          return n.getValue().str();
    } else if (DictionaryAttr info =
                   getSubgraphInfo(
                       holder, arg.getOwner()->getParent()->getRegionNumber())
                       .second) {
      // A subgraph input: named in the holder's record of the subgraph.
      if (auto inputs = info.getAs<ArrayAttr>("inputs"))
        if (arg.getArgNumber() < inputs.size())
          if (auto entry = dyn_cast<DictionaryAttr>(inputs[arg.getArgNumber()]))
            if (auto n = entry.getAs<StringAttr>("name"))
              return n.getValue().str();
    }
    return "arg" + std::to_string(arg.getArgNumber());
  }
  Operation *op = value.getDefiningOp();
  if (auto init = dyn_cast<InitializerOp>(op))
    return init.getName().str();
  unsigned i = cast<OpResult>(value).getResultNumber();
  if (auto outs = op->getAttrOfType<ArrayAttr>(attrs::kOutputNames))
    if (i < outs.size())
      if (auto s = dyn_cast<StringAttr>(outs[i]); s && !s.getValue().empty())
        return s.getValue().str();
  if (auto n = op->getAttrOfType<StringAttr>(attrs::kNodeName))
    return (n.getValue() + "_out" + Twine(i)).str();
  // A cast not yet named: the name writing the graph gives it, before it
  // is made unique.
  if (auto c = dyn_cast<CastOp>(op); c && hasUnnamedCastOutput(c))
    return getCastValueNameBase(c, getOnnxValueName(graph, c.getInput()));
  return "value";
}

void amp::train::setSubgraphOutputName(Operation *holder, unsigned regionIndex,
                                       unsigned index, StringRef name) {
  auto [key, info] = getSubgraphInfo(holder, regionIndex);
  auto outputs = info ? info.getAs<ArrayAttr>("outputs") : ArrayAttr();
  if (!outputs || index >= outputs.size())
    return;
  MLIRContext *ctx = holder->getContext();
  NamedAttrList entry(cast<DictionaryAttr>(outputs[index]));
  entry.set("name", StringAttr::get(ctx, name));
  SmallVector<Attribute> newOutputs(outputs.begin(), outputs.end());
  newOutputs[index] = entry.getDictionary(ctx);
  NamedAttrList newInfo(info);
  newInfo.set("outputs", ArrayAttr::get(ctx, newOutputs));
  NamedAttrList newInfos(
      holder->getAttrOfType<DictionaryAttr>(attrs::kSubgraphs));
  newInfos.set(key, newInfo.getDictionary(ctx));
  holder->setAttr(attrs::kSubgraphs, newInfos.getDictionary(ctx));
}

void amp::train::forEachSubgraphIOName(Operation *holder,
                                       function_ref<void(StringRef)> fn) {
  if (holder->getNumRegions() == 0)
    return;
  auto infos = holder->getAttrOfType<DictionaryAttr>(attrs::kSubgraphs);
  if (!infos)
    return;
  for (NamedAttribute entry : infos) {
    auto info = dyn_cast<DictionaryAttr>(entry.getValue());
    if (!info)
      continue;
    for (StringRef key : {"inputs", "outputs"})
      if (auto list = info.getAs<ArrayAttr>(key))
        for (Attribute a : list)
          if (auto d = dyn_cast<DictionaryAttr>(a))
            if (auto n = d.getAs<StringAttr>("name"))
              fn(n.getValue());
  }
}

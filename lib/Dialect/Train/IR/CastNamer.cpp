//===- CastNamer.cpp - Name the casts passes left unnamed -----------------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//

#include "amp/Dialect/Train/IR/CastNamer.h"
#include "amp/Dialect/Train/IR/CastNames.h"
#include "amp/Dialect/Train/IR/OnnxNames.h"
#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace amp::train;

void CastNameScope::collect() {
  collected = true;
  auto addNode = [&](StringRef n) {
    if (mayBeCastNodeName(n))
      usedNodeNames.insert(n);
  };
  auto addValue = [&](StringRef n) {
    if (mayBeCastValueName(n))
      usedValueNames.insert(n);
  };
  for (BlockArgument arg : graph.getFunctionBody().getArguments())
    if (auto dict = graph.getArgAttrDict(arg.getArgNumber()))
      if (auto n = dict.getAs<StringAttr>(attrs::kValueName))
        addValue(n.getValue());
  // The names as identifiers: looked up by pointer, not by string.
  MLIRContext *ctx = graph.getContext();
  auto nodeNameId = StringAttr::get(ctx, attrs::kNodeName);
  auto outputNamesId = StringAttr::get(ctx, attrs::kOutputNames);
  graph.getFunctionBody().walk([&](Operation *op) {
    if (auto n = op->getAttrOfType<StringAttr>(nodeNameId))
      addNode(n.getValue());
    if (auto outs = op->getAttrOfType<ArrayAttr>(outputNamesId))
      for (Attribute a : outs)
        if (auto s = dyn_cast<StringAttr>(a))
          addValue(s.getValue());
    if (auto init = dyn_cast<InitializerOp>(op))
      addValue(init.getNameAttr().getValue());
    forEachSubgraphIOName(op, addValue);
  });
}

StringRef CastNameScope::take(DenseSet<StringRef> &used, StringRef base) {
  if (!collected)
    collect();
  StringRef name = saver.save(
      makeUniqueName(base, [&](StringRef n) { return used.contains(n); }));
  used.insert(name);
  return name;
}

StringRef CastNameScope::takeNodeName(StringRef base) {
  return take(usedNodeNames, base);
}

StringRef CastNameScope::takeValueName(StringRef base) {
  return take(usedValueNames, base);
}

void CastNamer::name(CastOp cast, StringRef outputName) {
  MLIRContext *ctx = graph.getContext();
  std::string input = getOnnxValueName(graph, cast.getInput());
  if (isUnnamedCast(cast))
    cast->setAttr(attrs::kNodeName,
                  StringAttr::get(ctx, scope.takeNodeName(
                                           getCastNodeNameBase(cast, input))));
  if (hasUnnamedCastOutput(cast)) {
    StringRef out = outputName.empty()
                        ? scope.takeValueName(getCastValueNameBase(cast, input))
                        : outputName;
    cast->setAttr(attrs::kOutputNames,
                  ArrayAttr::get(ctx, {StringAttr::get(ctx, out)}));
  }
}

unsigned amp::train::nameUnnamedCasts(FunctionOpInterface graph) {
  SmallVector<CastOp> unnamed;
  graph.getFunctionBody().walk([&](CastOp cast) {
    if (isUnnamedCast(cast) || hasUnnamedCastOutput(cast))
      unnamed.push_back(cast);
  });
  CastNamer namer(graph);
  for (CastOp cast : unnamed)
    namer.name(cast);
  return unnamed.size();
}

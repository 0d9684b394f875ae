//===- SymbolicDims.cpp - named symbolic dims and their sizes -------------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//

#include "amp/Dialect/Train/IR/SymbolicDims.h"
#include "amp/Dialect/Train/IR/TrainDialect.h"

#include "mlir/IR/Diagnostics.h"

using namespace mlir;
using namespace amp::train;

LogicalResult amp::train::parseDimBindings(Location loc, StringRef what,
                                           StringRef text,
                                           llvm::StringMap<int64_t> &out) {
  SmallVector<StringRef> parts;
  text.split(parts, ',', -1, false);
  for (StringRef p : parts) {
    auto [k, v] = p.split('=');
    int64_t n;
    if (k.trim().empty() || v.trim().getAsInteger(10, n) || n < 0)
      return emitError(loc)
             << what << ": bad dims entry '" << p << "' (expected name=size)";
    out[k.trim()] = n;
  }
  return success();
}

SymbolicDimNames::SymbolicDimNames(FunctionOpInterface graph) : graph(graph) {
  if (auto infos = graph->getAttrOfType<ArrayAttr>(attrs::kValueInfo))
    for (Attribute a : infos) {
      auto entry = dyn_cast<DictionaryAttr>(a);
      auto name = entry ? entry.getAs<StringAttr>("name") : StringAttr();
      auto dims = entry ? entry.getAs<ArrayAttr>(attrs::kDims) : ArrayAttr();
      if (name && dims)
        byName[name.getValue()] = dims;
    }
}

StringRef SymbolicDimNames::get(Value value, unsigned d) const {
  ArrayAttr dims;
  if (auto arg = dyn_cast<BlockArgument>(value)) {
    if (arg.getOwner()->getParentOp() == graph.getOperation())
      dims =
          graph.getArgAttrOfType<ArrayAttr>(arg.getArgNumber(), attrs::kDims);
  } else if (auto result = dyn_cast<OpResult>(value)) {
    auto outs =
        result.getOwner()->getAttrOfType<ArrayAttr>(attrs::kOutputNames);
    if (outs && result.getResultNumber() < outs.size())
      if (auto name = dyn_cast<StringAttr>(outs[result.getResultNumber()]))
        dims = byName.lookup(name.getValue());
  }
  if (!dims || d >= dims.size())
    return {};
  auto name = dyn_cast<StringAttr>(dims[d]);
  return name ? name.getValue() : StringRef();
}

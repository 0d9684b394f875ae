//===- CollectiveNodes.cpp - building the collective nodes ----------------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//

#include "amp/Dialect/Train/Transforms/CollectiveNodes.h"
#include "amp/Dialect/Train/IR/Collectives.h"

using namespace mlir;
using namespace amp::train;

NodeOp amp::train::createCollective(GraphEditor &editor, Location loc,
                                    StringRef opType, TypeRange types,
                                    ValueRange inputs,
                                    ArrayRef<NamedAttribute> attrs,
                                    StringRef name) {
  editor.importOpset(kAmpDomain, 1);
  auto node =
      NodeOp::create(editor.builder, loc, types, inputs, kAmpDomain, opType,
                     DictionaryAttr::get(editor.getContext(), attrs),
                     editor.builder.getStrArrayAttr({}), 0);
  editor.name(node, name);
  return node;
}

bool amp::train::isReduceScattered(Value v) {
  while (Operation *def = v.getDefiningOp()) {
    if (auto node = dyn_cast<NodeOp>(def))
      return node.getDomain() == kAmpDomain &&
             node.getOpType() == kReduceScatterOpType;
    if (!isa<CastOp, IdentityOp>(def))
      return false;
    v = def->getOperand(0);
  }
  return false;
}

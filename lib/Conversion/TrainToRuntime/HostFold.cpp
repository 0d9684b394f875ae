//===- HostFold.cpp - shape computations evaluated at lowering time ------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// The lowering's use of the train dialect's host evaluation
// (HostEvaluation.h): a node whose inputs are known here (initializers,
// constants, values folded before, and the static shape of every buffer,
// which the lowering computes for activations too) is evaluated and never
// becomes a runtime call. A folded value that a kernel reads is
// materialized as a constant (memref.global).
//
//===----------------------------------------------------------------------===//

#include "GraphLowering.h"

namespace amp::lowering {

std::optional<HostTensor> GraphLowering::hostIn(unsigned i) {
  if (!has(i))
    return std::nullopt;
  auto c = hostConst.find(current->getOperand(i));
  if (c == hostConst.end())
    return std::nullopt;
  return readHost(c->second);
}

std::optional<Shape> GraphLowering::shapeOfInput(unsigned i) {
  if (!has(i))
    return std::nullopt;
  Value v = current->getOperand(i);
  auto b = valueBuf.find(v);
  if (b != valueBuf.end())
    return bufs[b->second].shape;
  auto c = hostConst.find(v);
  if (c != hostConst.end()) {
    auto t = cast<ShapedType>(c->second.getType());
    return Shape(t.getShape().begin(), t.getShape().end());
  }
  return std::nullopt;
}

Type GraphLowering::resultElemOr(unsigned i, Type fallback) {
  if (auto t = dyn_cast<ShapedType>(current->getResult(i).getType()))
    return t.getElementType();
  return fallback;
}

void GraphLowering::setHost(unsigned i, const HostTensor &h) {
  hostConst[current->getResult(i)] = toAttr(h);
}

FailureOr<bool> GraphLowering::tryHostFold(StringRef domain, StringRef type) {
  SmallVector<ElementsAttr> values;
  SmallVector<std::optional<HostShape>> shapes;
  SmallVector<Type> elems;
  for (unsigned i = 0; i < current->getNumOperands(); ++i) {
    values.push_back(has(i) ? hostConst.lookup(current->getOperand(i))
                            : ElementsAttr());
    std::optional<Shape> s = shapeOfInput(i);
    shapes.push_back(s ? std::optional<HostShape>(*s) : std::nullopt);
    elems.push_back(has(i) ? elementOfOperand(i) : Type());
  }
  SmallVector<ElementsAttr> results;
  std::string why;
  FailureOr<bool> folded =
      evaluateOnHost(current, {values, shapes, elems}, results, why);
  if (failed(folded))
    return err() << why;
  if (!*folded)
    return false;
  for (auto [res, value] : llvm::zip(current->getResults(), results))
    if (value)
      hostConst[res] = value;
  return true;
}

} // namespace amp::lowering

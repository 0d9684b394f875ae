//===- FiniteCheck.cpp - x * 0 summed and tested for NaN, as one call -----===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// Portable ONNX has no "all finite" op, so a finite check over tensors u_i
// is written IsNaN(Sum_i(ReduceSum(Mul(u_i, 0)))): x * 0 is NaN exactly
// when x is Inf or NaN, and a sum of zeros is NaN exactly when one term is.
// The loss-scaling pass (LossScaling.cpp) writes its check so. Run as
// written, that is a multiply and a reduction over every gradient, plus the
// sum; as one amprt_multi_tensor_all_finite over the u_i it is one read of
// each, with the same result: IsNaN's output is the flag's negation.
//
// The match is structural, for any graph: each intermediate value must have
// that one use, the reductions must reduce every dim into a scalar
// (keepdims 0), the factor must be a constant 0, and no InPlaceAccumulator
// may write a checked tensor before the IsNaN (the fused call reads it
// there).
//
//===----------------------------------------------------------------------===//

#include "GraphLowering.h"

using namespace amp::lowering;

namespace {

bool isOnnxOp(Operation *op, StringRef type) {
  auto n = dyn_cast_or_null<OnnxNodeOpInterface>(op);
  if (!n || n.getOnnxOpType() != type)
    return false;
  StringRef d = n.getOnnxDomain();
  return d.empty() || d == "ai.onnx";
}

/// Whether a node before `use` in the block may write `u`'s buffer in place
/// (InPlaceAccumulator's input 0): the fused call reads u at `use`, the
/// multiplication read it where it stood.
bool updatedBefore(Value u, Operation *use) {
  for (OpOperand &o : u.getUses()) {
    Operation *w = o.getOwner();
    if (o.getOperandNumber() == 0 && w->getBlock() == use->getBlock() &&
        w->isBeforeInBlock(use) && isa_and_nonnull<OnnxNodeOpInterface>(w) &&
        cast<OnnxNodeOpInterface>(w).getOnnxOpType().starts_with(
            "InPlaceAccumulator"))
      return true;
  }
  return false;
}

} // namespace

bool GraphLowering::isConstantZero(Value v) {
  Operation *def = v.getDefiningOp();
  if (!def)
    return false;
  ElementsAttr value;
  if (auto init = dyn_cast<InitializerOp>(def)) {
    if (!init.getExternal())
      value = dyn_cast_or_null<ElementsAttr>(init.getValue());
  } else if (isOnnxOp(def, "Constant")) {
    Attribute a = nodeAttrOf(def, "value");
    if (auto ta = dyn_cast_or_null<TensorAttr>(a))
      a = ta.getValue();
    value = dyn_cast_or_null<ElementsAttr>(a);
  }
  std::optional<HostTensor> h = value ? readHost(value) : std::nullopt;
  if (!h || h->v.size() != 1 || !isa<FloatType>(h->elem))
    return false;
  return h->v[0] == 0.0;
}

void GraphLowering::planFiniteChecks() {
  for (Operation &op : graph.getBody().front()) {
    if (!isOnnxOp(&op, "IsNaN") || op.getNumOperands() != 1)
      continue;
    Value x = op.getOperand(0);
    Operation *def = x.getDefiningOp();
    if (!def || !x.hasOneUse())
      continue;
    SmallVector<Operation *> away;
    SmallVector<Value> terms;
    if (isOnnxOp(def, "Sum")) {
      away.push_back(def);
      terms.append(def->operand_begin(), def->operand_end());
    } else {
      terms.push_back(x);
    }
    SmallVector<Value> checked;
    for (Value t : terms) {
      Operation *r = t.getDefiningOp();
      if (!r || !t.hasOneUse() || !isOnnxOp(r, "ReduceSum") ||
          r->getNumOperands() < 1)
        break;
      // Every dim reduced into a scalar (keepdims 0), so IsNaN's output is
      // a scalar, as the fused call's.
      bool all = (r->getNumOperands() < 2 ||
                  isa<NoneType>(r->getOperand(1).getType())) &&
                 !nodeAttrOf(r, "axes") &&
                 attrIntOf(r, "noop_with_empty_axes", 0) == 0 &&
                 attrIntOf(r, "keepdims", 1) == 0;
      Value m = r->getOperand(0);
      Operation *mul = m.getDefiningOp();
      if (!all || !mul || !m.hasOneUse() || !isOnnxOp(mul, "Mul"))
        break;
      Value u = isConstantZero(mul->getOperand(1))   ? mul->getOperand(0)
                : isConstantZero(mul->getOperand(0)) ? mul->getOperand(1)
                                                     : Value();
      // The factor is one element, so u * 0 holds every element of u (a
      // broadcast only repeats them). u must be a float tensor in a buffer:
      // a graph input or a node's result, not a constant.
      auto ut = u ? dyn_cast<ShapedType>(u.getType()) : ShapedType();
      Operation *ud = u ? u.getDefiningOp() : nullptr;
      if (!ut || !isa<FloatType>(ut.getElementType()) ||
          (ud && (isa<InitializerOp>(ud) || isOnnxOp(ud, "Constant"))) ||
          updatedBefore(u, &op))
        break;
      checked.push_back(u);
      away.push_back(r);
      away.push_back(mul);
    }
    if (checked.size() != terms.size())
      continue;
    finiteChecks[&op] = std::move(checked);
    fusedAway.insert(away.begin(), away.end());
  }
}

LogicalResult GraphLowering::lowerFiniteCheck(ArrayRef<Value> checked) {
  TArg ins{"ins", {}};
  for (Value u : checked) {
    std::optional<int> b = bufferOf(u); // folded at lowering time: a constant
    if (!b)
      return err() << "a checked tensor has no buffer (a sequence?)";
    ins.bufs.push_back(*b);
  }
  Buffer flag;
  flag.elem = IntegerType::get(ctx, 1);
  int f = newBuffer(flag);
  if (failed(call("multi_tensor_all_finite", {ins, {"all_finite", {f}}},
                  {{"n", i64(checked.size())}, {"reset", i32(1)}})))
    return failure();
  auto y = out(0, {});
  if (failed(y))
    return failure();
  return call("logical_not", {{"x", {f}}, {"y", {*y}}});
}

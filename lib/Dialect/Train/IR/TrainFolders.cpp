//===- TrainFolders.cpp - shape computations folded to Constant nodes ----===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// The train dialect's canonicalization: an ONNX node of a graph that the
// host evaluation (HostEvaluation.h) computes from what the graph makes
// known becomes one Constant node per result in its place, with its node
// and output names. Known are the values of Constant nodes and the shapes of
// constants and of graph inputs whose type is static (as train-bind-dims
// leaves the inputs whose dims it binds). Not initializers: they are the
// model's weights, which a fold must neither copy nor orphan (the lowering
// folds what reads them, HostFold.cpp). Not the declared shape of an
// intermediate value: it is not checked against what its producer computes
// until the lowering, which folds the rest of the shape computations with
// the same evaluation (train-infer-shapes writes those back).
//===----------------------------------------------------------------------===//

#include "amp/Dialect/Train/IR/HostEvaluation.h"
#include "amp/Dialect/Train/IR/TrainDialect.h"
#include "amp/Dialect/Train/IR/TrainOps.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace amp::train;

namespace {

/// What the graph makes known of value `v`: a constant's value, a static
/// shape (a constant's, or a graph input's), an int or float element type.
struct Known {
  ElementsAttr value;
  std::optional<HostShape> shape;
  Type elem;
};

Known knownOf(Value v) {
  Known k;
  auto type = dyn_cast<ShapedType>(v.getType());
  if (type && type.getElementType().isIntOrFloat())
    k.elem = type.getElementType();
  Operation *def = v.getDefiningOp();
  if (auto c = dyn_cast_or_null<ConstantOp>(def)) {
    SmallVector<ElementsAttr> values;
    std::string why;
    FailureOr<bool> folded = evaluateOnHost(c, {}, values, why);
    if (succeeded(folded) && *folded)
      k.value = values[0];
  } else if (auto arg = dyn_cast<BlockArgument>(v);
             arg && isa<GraphOp>(arg.getOwner()->getParentOp()) && type &&
             type.hasStaticShape()) {
    k.shape = HostShape(type.getShape());
  }
  if (k.value) {
    auto vt = cast<ShapedType>(k.value.getType());
    k.shape = HostShape(vt.getShape());
    k.elem = vt.getElementType();
  }
  return k;
}

struct FoldOnHost : OpInterfaceRewritePattern<OnnxNodeOpInterface> {
  using OpInterfaceRewritePattern::OpInterfaceRewritePattern;
  LogicalResult matchAndRewrite(OnnxNodeOpInterface node,
                                PatternRewriter &rewriter) const override {
    Operation *op = node;
    // Nodes of a graph only: a function's attributes may refer to its
    // caller's (#train.ref), which the evaluation would read as absent.
    if (isa<ConstantOp>(op) || op->getNumRegions() || !op->getNumOperands() ||
        !isa_and_nonnull<GraphOp>(op->getParentOp()))
      return failure();
    SmallVector<ElementsAttr> values;
    SmallVector<std::optional<HostShape>> shapes;
    SmallVector<Type> elems;
    for (Value v : op->getOperands()) {
      Known k = knownOf(v);
      values.push_back(k.value);
      shapes.push_back(k.shape);
      elems.push_back(k.elem);
    }
    SmallVector<ElementsAttr> results;
    std::string why;
    FailureOr<bool> folded =
        evaluateOnHost(op, {values, shapes, elems}, results, why);
    // An ill-formed node is the lowering's (or the verifier's) to report.
    if (failed(folded) || !*folded)
      return failure();
    for (auto [res, value] : llvm::zip(op->getResults(), results))
      if (value ? !mayReplaceWithConstant(res.getType(), value)
                : !res.use_empty())
        return failure();
    replaceWithConstants(rewriter, op, results);
    return success();
  }
};

} // namespace

bool amp::train::mayReplaceWithConstant(Type t, ElementsAttr value) {
  auto rt = dyn_cast<ShapedType>(t);
  if (!rt)
    return true;
  auto vt = cast<ShapedType>(value.getType());
  if (rt.getElementType().isIntOrFloat() &&
      rt.getElementType() != vt.getElementType())
    return false;
  if (!rt.hasRank())
    return true;
  if (rt.getRank() != vt.getRank())
    return false;
  for (auto [a, b] : llvm::zip(rt.getShape(), vt.getShape()))
    if (!ShapedType::isDynamic(a) && a != b)
      return false;
  return true;
}

void amp::train::replaceWithConstants(RewriterBase &rewriter, Operation *op,
                                      ArrayRef<ElementsAttr> values,
                                      bool valueTypes) {
  auto outputs = op->getAttrOfType<ArrayAttr>(attrs::kOutputNames);
  auto name = op->getAttrOfType<StringAttr>(attrs::kNodeName);
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPoint(op);
  for (auto [i, res, value] : llvm::enumerate(op->getResults(), values)) {
    if (!value)
      continue;
    SmallVector<NamedAttribute> attrs{rewriter.getNamedAttr("value", value)};
    for (NamedAttribute a : op->getDiscardableAttrs()) {
      StringRef n = a.getName().getValue();
      if (!n.starts_with("train.") || n == attrs::kOutputNames ||
          n == attrs::kNodeName)
        continue;
      attrs.push_back(a);
    }
    if (outputs && i < outputs.size())
      attrs.push_back(rewriter.getNamedAttr(
          attrs::kOutputNames, rewriter.getArrayAttr({outputs[i]})));
    if (name)
      attrs.push_back(rewriter.getNamedAttr(
          attrs::kNodeName, i == 0
                                ? name
                                : rewriter.getStringAttr(name.getValue() + "_" +
                                                         std::to_string(i))));
    Type type = valueTypes ? value.getType() : res.getType();
    auto c = ConstantOp::create(rewriter, op->getLoc(), TypeRange{type},
                                ValueRange{}, attrs);
    rewriter.replaceAllUsesWith(res, c.getResult());
  }
  rewriter.eraseOp(op);
}

void TrainDialect::getCanonicalizationPatterns(
    RewritePatternSet &results) const {
  results.add<FoldOnHost>(getContext());
}

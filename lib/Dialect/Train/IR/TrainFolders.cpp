//===- TrainFolders.cpp - shape queries of graph inputs as constants -----===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// Canonicalization patterns of the train dialect's shape queries: `Shape`
// (with ONNX's start/end, clamped) and `Size` of a graph input whose type is
// static (as train-bind-dims leaves the inputs whose dims it binds) become
// an ONNX `Constant` node in their place, with their node and output names.
// Only graph inputs: their types are what the lowering binds buffers from;
// an intermediate value's declared type is not checked against what its
// producer computes until the lowering. The op list is
// utils/gen_onnx_ods.py's CANONICALIZED.
//
//===----------------------------------------------------------------------===//

#include "amp/Dialect/Train/IR/TrainDialect.h"
#include "amp/Dialect/Train/IR/TrainOps.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace amp::train;

namespace {
/// The static shape of `v` when it is an input of its train.graph.
std::optional<ArrayRef<int64_t>> staticInputShape(Value v) {
  auto arg = dyn_cast<BlockArgument>(v);
  if (!arg || !isa<GraphOp>(arg.getOwner()->getParentOp()))
    return std::nullopt;
  auto t = dyn_cast<RankedTensorType>(v.getType());
  if (!t || !t.hasStaticShape())
    return std::nullopt;
  return t.getShape();
}

/// Replaces `op` (one result) by a Constant node holding `values` as an i64
/// tensor of `shape`, with op's attributes that name it (train.*), when
/// op's result may have that type: a shaped type whose element type is i64
/// or unknown and whose static dims agree, or no shaped type.
LogicalResult replaceByConstant(Operation *op, ArrayRef<int64_t> shape,
                                ArrayRef<int64_t> values,
                                PatternRewriter &rewriter) {
  Type resultType = op->getResult(0).getType();
  auto i64 = rewriter.getI64Type();
  if (auto rt = dyn_cast<ShapedType>(resultType)) {
    if (rt.getElementType().isIntOrFloat() && rt.getElementType() != i64)
      return failure();
    if (rt.hasRank()) {
      if (rt.getRank() != int64_t(shape.size()))
        return failure();
      for (auto [a, b] : llvm::zip(rt.getShape(), shape))
        if (!ShapedType::isDynamic(a) && a != b)
          return failure();
    }
  }
  auto value =
      DenseElementsAttr::get(RankedTensorType::get(shape, i64), values);
  SmallVector<NamedAttribute> attrs{rewriter.getNamedAttr("value", value)};
  for (NamedAttribute a : op->getDiscardableAttrs())
    if (a.getName().getValue().starts_with("train."))
      attrs.push_back(a);
  rewriter.replaceOpWithNewOp<ConstantOp>(op, TypeRange{resultType},
                                          ValueRange{}, attrs);
  return success();
}

struct ShapeOfInput : OpRewritePattern<ShapeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ShapeOp op,
                                PatternRewriter &rewriter) const override {
    std::optional<ArrayRef<int64_t>> s = staticInputShape(op.getData());
    if (!s)
      return failure();
    int64_t rank = s->size();
    // ONNX: negative axes count from the end; both clamp to [0, rank].
    auto axis = [&](std::optional<int64_t> a, int64_t dflt) {
      int64_t v = a.value_or(dflt);
      if (v < 0)
        v += rank;
      return std::clamp<int64_t>(v, 0, rank);
    };
    int64_t start = axis(op.getStart(), 0), end = axis(op.getEnd(), rank);
    ArrayRef<int64_t> dims =
        start < end ? s->slice(start, end - start) : ArrayRef<int64_t>();
    return replaceByConstant(op, {int64_t(dims.size())}, dims, rewriter);
  }
};

struct SizeOfInput : OpRewritePattern<SizeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(SizeOp op,
                                PatternRewriter &rewriter) const override {
    std::optional<ArrayRef<int64_t>> s = staticInputShape(op.getData());
    if (!s)
      return failure();
    int64_t n = 1;
    for (int64_t d : *s)
      if (__builtin_mul_overflow(n, d, &n))
        return failure();
    return replaceByConstant(op, {}, {n}, rewriter);
  }
};
} // namespace

void ShapeOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                          MLIRContext *context) {
  results.add<ShapeOfInput>(context);
}

void SizeOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                         MLIRContext *context) {
  results.add<SizeOfInput>(context);
}

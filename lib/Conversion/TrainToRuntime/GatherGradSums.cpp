//===- GatherGradSums.cpp - summed GatherGrads as scatters into one buffer ===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// A tensor gathered several times gets one GatherGrad per gather, each a
// full-size tensor of zeros with its slice written, and their Sum. PyTorch's
// nn.MultiheadAttention does this to the packed q/k/v projection: it is
// unbound with three Gathers of a scalar index, and its gradient is three
// [3, ...] GatherGrads and a Sum, four times the projection's size where
// one would do (the largest buffers of the transformer fixture's step).
//
// When every input of a sum is a gather_grad along axis 0 with a constant
// scalar index (all distinct), made for this sum alone, the sum's output is
// filled with zeros once (before the first gather_grad) and each gather's
// dY is added into its slice in place by scatter_nd (reduction add), where
// the gather_grad was. Each element of the result then gets 0 plus the one
// value the sum added to zeros (distinct scalar indices give each element
// one value at most; zeros add exactly, and 0 + -0 is +0 both ways): the
// bits are the same. The dY tensors, one slice each, live until their
// scatter instead of full-size copies.
//
// The pattern matches an `amprt.call "sum"` of at least two inputs whose
// output y is a temporary no call writes in place, where each input is a
// temporary of y's shape and element type, named once by the sum and
// otherwise only by an earlier gather_grad writing it as dx (no graph
// output, not written in place), along axis 0, at a rank-0 constant index
// (a dense global) whose value no other input's gather_grad has. It puts
// `fill(y, 0)` (the sum's attributes but n) before the first of those
// gather_grads, replaces each by `scatter_nd(y, index, dy, y)` (reduction
// 1, add) reading a new constant holding its index as a one-tuple ([1]),
// made in the order of the sum's inputs, and erases the sum.
//
//===----------------------------------------------------------------------===//

#include "BufferFacts.h"
#include "FusePatterns.h"
#include "PlannedProgram.h"

#include "llvm/ADT/DenseSet.h"

using namespace mlir;
using namespace amp;
using namespace amp::lowering;

namespace {

/// One input of a fused sum: the gather_grad writing it, and its index.
struct GatherInput {
  amprt::CallOp grad;
  DenseElementsAttr index;
};

struct FuseGatherGradSum : CallPattern {
  explicit FuseGatherGradSum(MLIRContext *ctx) : CallPattern(ctx, "sum") {}

  LogicalResult rewriteCall(amprt::CallOp sum,
                            PatternRewriter &rewriter) const override {
    Value y = sum.getSingleTensor("y");
    OperandRange ins = sum.getTensorParam("inputs");
    if (!y || ins.size() < 2 || !isTemporary(y) || isWrittenInPlace(y))
      return failure();
    auto yType = cast<MemRefType>(y.getType());
    SmallVector<GatherInput, 4> inputs;
    llvm::SmallDenseSet<int64_t, 4> indexValues;
    for (Value g : ins) {
      // Made for this sum alone (one writer, one reader), of y's type.
      auto gType = cast<MemRefType>(g.getType());
      SmallVector<BufferUse, 4> uses = bufferUses(g);
      if (!isTemporary(g) || isWrittenInPlace(g) || isReturned(g) ||
          uses.size() != 2 || llvm::count(ins, g) != 1 ||
          gType.getElementType() != yType.getElementType() ||
          gType.getShape() != yType.getShape())
        return failure();
      amprt::CallOp grad;
      for (BufferUse use : uses)
        if (use.call != sum && use.call.getKernel() == "gather_grad" &&
            use.param == "dx")
          grad = use.call;
      if (!grad || !grad->isBeforeInBlock(sum) || !grad.getSingleTensor("dy"))
        return failure();
      // Along axis 0, at a constant scalar index.
      auto axis = grad->getAttrOfType<IntegerAttr>("axis");
      Value idx = grad.getSingleTensor("indices");
      if (!axis || axis.getInt() != 0 || !idx ||
          cast<MemRefType>(idx.getType()).getRank() != 0)
        return failure();
      auto index = dyn_cast_or_null<DenseElementsAttr>(constantValue(idx));
      if (!index)
        return failure();
      // Distinct indices: each element gets one value at most, so the
      // order of the scatters is the order of nothing.
      std::optional<HostTensor> h = readHost(index);
      if (!h || h->v.size() != 1 ||
          !indexValues.insert(hostInt(h->v[0])).second)
        return failure();
      inputs.push_back({grad, index});
    }

    amprt::CallOp first = inputs.front().grad;
    for (const GatherInput &in : inputs)
      if (in.grad->isBeforeInBlock(first))
        first = in.grad;
    NamedAttrList fillAttrs(sum->getAttrs());
    fillAttrs.erase("n");
    fillAttrs.set("value", rewriter.getF64FloatAttr(0.0));
    rewriter.setInsertionPoint(first);
    amprt::createCall(rewriter, sum.getLoc(), "fill", {{"y", y}},
                      fillAttrs.getAttrs());
    auto func = sum->getParentOfType<func::FuncOp>();
    for (GatherInput in : inputs) {
      // The index as a one-tuple of scatter_nd's indices ([1]).
      auto type = RankedTensorType::get({1}, in.index.getElementType());
      Value idx = createConstantBuffer(
          rewriter, func, cast<ElementsAttr>(in.index.reshape(type)),
          /*shared=*/false);
      Value dy = in.grad.getSingleTensor("dy");
      SmallVector<NamedAttribute, 2> attrs;
      if (Attribute node = in.grad->getAttr("node"))
        attrs.push_back(rewriter.getNamedAttr("node", node));
      attrs.push_back(rewriter.getNamedAttr(
          "reduction", rewriter.getI32IntegerAttr(1))); // add
      rewriter.setInsertionPoint(in.grad);
      amprt::createCall(
          rewriter, in.grad.getLoc(), "scatter_nd",
          {{"data", y}, {"indices", idx}, {"updates", dy}, {"y", y}}, attrs);
      rewriter.eraseOp(in.grad);
    }
    rewriter.eraseOp(sum);
    return success();
  }
};

} // namespace

void amp::lowering::populateGatherGradSumsPatterns(
    RewritePatternSet &patterns) {
  patterns.add<FuseGatherGradSum>(patterns.getContext());
}

//===- FuseMatMulBias.cpp - a MatMul and its bias Add, one gemm -----------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// PyTorch exports a linear layer on [batch, seq, features] as MatMul (or
// ORT's FusedMatMul) with a 2-D weight, then an Add of the bias: two calls
// and a buffer between them, the product rounded once into it and once more
// with the bias. The gemm kernel takes a [.., K] operand whose leading dims
// are its rows (Ops.def), so the two become one gemm with the bias as c:
// y = alpha a b + bias, rounded once. In f32 those are the bits of the two
// calls (the product, then one f32 addition); in f16/bf16 one rounding less.
// FuseGemmRelu then takes a ReLU after it as for any gemm, and the layer's
// bias and activation are the gemm's epilogue (issue 26's forward
// epilogues for transformer MLPs).
//
// It applies when the product y is a temporary, no graph output, written in
// place by no call, read by one add that reads it once, whose other operand
// is a vector [N] (N: y's last dim) available before the product and not
// written in place, and whose result z has y's shape and element type and
// is named by no call before the add.
//
//===----------------------------------------------------------------------===//

#include "BufferFacts.h"
#include "FusePatterns.h"
#include "Products.h"

using namespace mlir;
using namespace amp;
using namespace amp::lowering;

namespace {

struct FuseMatMulBias : CallPattern {
  FuseMatMulBias(MLIRContext *ctx, StringRef kernel)
      : CallPattern(ctx, kernel) {}

  LogicalResult rewriteCall(amprt::CallOp mm,
                            PatternRewriter &rewriter) const override {
    std::optional<Product> p = productOf(mm);
    if (!p || p->ta || bufferShape(p->b).size() != 2 || p->a == p->y ||
        p->b == p->y)
      return failure();
    Value a = p->a, b = p->b, y = p->y;
    if (!isTemporary(y) || isReturned(y) || isWrittenInPlace(y))
      return failure();
    amprt::CallOp add;
    Value bias;
    for (BufferUse use : bufferUses(y)) {
      if (use.call == mm)
        continue;
      if (add || use.call.getKernel() != "add" ||
          !mm->isBeforeInBlock(use.call))
        return failure();
      add = use.call;
      bias = add.getSingleTensor(use.param == "a" ? "b" : "a");
    }
    if (!add || !bias || bias == y)
      return failure();
    ArrayRef<int64_t> ys = bufferShape(y);
    if (bufferShape(bias) != ArrayRef<int64_t>(ys.back()) ||
        !isa<FloatType>(elementType(bias)) || isWrittenInPlace(bias) ||
        !holdsValueBefore(bias, mm))
      return failure();
    Value z = add.getSingleTensor("y");
    if (!z || z == y || z == bias || z == a || z == b || bufferShape(z) != ys ||
        elementType(z) != elementType(y) || isWrittenInPlace(z))
      return failure();
    // z is written where y was: no call may name z before the add (in the
    // unplanned form a temporary's first naming call writes it).
    for (BufferUse use : bufferUses(z))
      if (use.call != add && !add->isBeforeInBlock(use.call))
        return failure();
    // The product's flags and alpha, the bias as c with beta 1.
    SmallVector<NamedAttribute> attrs = productAttrs(rewriter, mm, *p);
    attrs.push_back(
        rewriter.getNamedAttr("beta", rewriter.getF32FloatAttr(1.f)));
    rewriter.setInsertionPoint(mm);
    amprt::createCall(rewriter, mm.getLoc(), "gemm",
                      {{"a", a}, {"b", b}, {"c", bias}, {"y", z}}, attrs);
    rewriter.eraseOp(add);
    rewriter.eraseOp(mm);
    return success();
  }
};

} // namespace

void amp::lowering::populateFuseMatMulBiasPatterns(
    RewritePatternSet &patterns) {
  patterns.add<FuseMatMulBias>(patterns.getContext(), "fused_matmul");
  patterns.add<FuseMatMulBias>(patterns.getContext(), "matmul");
}

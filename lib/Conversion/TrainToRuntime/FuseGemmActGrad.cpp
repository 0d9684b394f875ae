//===- FuseGemmActGrad.cpp - a GEMM and the activation gradient of it -----===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// In a backward pass the gradient of a hidden activation is a product (the
// next layer's input gradient, dz W) that only the activation's gradient
// reads: ReluGrad, GeluGrad or FastGeluGrad, dx = act'(x) g. The two calls
// store g and read it back; gemm_act_grad (Ops.def) computes the product in
// f32, rounds it as g's buffer would hold it and applies the gradient in
// the same pass: the bits of the two calls, one buffer and one pass over it
// less (cuBLASLt's DRELU/DGELU epilogues, issue 26, as our own epilogue).
//
// It applies to a gemm without c, or a MatMul/FusedMatMul with a 2-D b and
// an untransposed a, whose result g is a temporary, no graph output,
// written in place by no call, read only by one such gradient (as dy, after
// the product) writing dx of g's element type; x must hold its value before
// the product and not be written in place, and no call may name dx before
// the gradient.
//
//===----------------------------------------------------------------------===//

#include "BufferFacts.h"
#include "FusePatterns.h"
#include "Products.h"

#include "llvm/ADT/StringSwitch.h"

using namespace mlir;
using namespace amp;
using namespace amp::lowering;

namespace {

/// gemm_act_grad's `act` of a gradient kernel, or -1.
int32_t actOf(StringRef kernel) {
  return llvm::StringSwitch<int32_t>(kernel)
      .Case("relu_grad", 0)
      .Case("gelu_grad", 1)
      .Case("fast_gelu_grad", 2)
      .Default(-1);
}

struct FuseGemmActGrad : CallPattern {
  FuseGemmActGrad(MLIRContext *ctx, StringRef kernel)
      : CallPattern(ctx, kernel) {}

  LogicalResult rewriteCall(amprt::CallOp mm,
                            PatternRewriter &rewriter) const override {
    std::optional<Product> p = productOf(mm);
    if (!p || p->a == p->y || p->b == p->y || bufferShape(p->b).size() != 2)
      return failure();
    // A gemm without c (or a zero beta): the product alone; a transposed a
    // only as a matrix.
    if (p->c && p->beta != 0.0)
      return failure();
    if (p->ta && bufferShape(p->a).size() != 2)
      return failure();
    Value a = p->a, b = p->b, g = p->y;
    if (!isTemporary(g) || isReturned(g) || isWrittenInPlace(g))
      return failure();
    amprt::CallOp grad;
    int32_t act = -1;
    for (BufferUse use : bufferUses(g)) {
      if (use.call == mm)
        continue;
      if (grad || use.param != "dy" || !mm->isBeforeInBlock(use.call))
        return failure();
      grad = use.call;
      act = actOf(grad.getKernel());
    }
    if (!grad || act < 0)
      return failure();
    Value x = grad.getSingleTensor("x"), dx = grad.getSingleTensor("dx");
    // x must not be an operand of the product either: the fused call would
    // name it twice (and read as written).
    if (!x || !dx || x == g || x == a || x == b || dx == g || dx == x ||
        dx == a || dx == b || elementType(dx) != elementType(g) ||
        bufferShape(dx) != bufferShape(g))
      return failure();
    if (isWrittenInPlace(x) || !holdsValueBefore(x, mm) || isWrittenInPlace(dx))
      return failure();
    // dx is written where g was: no call may name it before the gradient.
    for (BufferUse use : bufferUses(dx))
      if (use.call != grad && !grad->isBeforeInBlock(use.call))
        return failure();
    SmallVector<NamedAttribute> attrs = productAttrs(rewriter, mm, *p);
    attrs.push_back(
        rewriter.getNamedAttr("act", rewriter.getI32IntegerAttr(act)));
    rewriter.setInsertionPoint(mm);
    amprt::createCall(rewriter, mm.getLoc(), "gemm_act_grad",
                      {{"a", a}, {"b", b}, {"x", x}, {"dx", dx}}, attrs);
    rewriter.eraseOp(grad);
    rewriter.eraseOp(mm);
    return success();
  }
};

} // namespace

void amp::lowering::populateFuseGemmActGradPatterns(
    RewritePatternSet &patterns) {
  for (StringRef k : {"gemm", "matmul", "fused_matmul"})
    patterns.add<FuseGemmActGrad>(patterns.getContext(), k);
}

//===- FuseGemmRelu.cpp - a Gemm and the Relu that reads it, one call ----===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// A linear layer and its ReLU (an MLP's hidden layers, a classifier's head)
// are a gemm that writes y and a relu that reads y and writes z; in
// training, the ReluGrad of the backward reads y again. The fused call
// gemm_relu writes z directly (Ops.def: the relu applied to the f32 result
// before its one rounding, the same bits as the two calls), and the
// relu_grad calls read z instead of y: relu'(y) is y > 0, and z > 0 exactly
// where y > 0 (z is y there, +0 or NaN elsewhere, as y is). y is then never
// made: one pass over the layer's output and one buffer less.
//
// It applies when y is a temporary that is no graph output and that no call
// writes in place, its readers are one relu (writing z, of y's dtype) and
// relu_grad calls reading it as x after that relu, and z is not written in
// place either.
//
//===----------------------------------------------------------------------===//

#include "BufferFacts.h"
#include "FusePatterns.h"

using namespace mlir;
using namespace amp;
using namespace amp::lowering;

namespace {

struct FuseGemmRelu : CallPattern {
  explicit FuseGemmRelu(MLIRContext *ctx) : CallPattern(ctx, "gemm") {}

  LogicalResult rewriteCall(amprt::CallOp gemm,
                            PatternRewriter &rewriter) const override {
    Value y = gemm.getSingleTensor("y");
    if (!y || !isTemporary(y) || isReturned(y) || isWrittenInPlace(y))
      return failure();
    amprt::CallOp relu;
    SmallVector<BufferUse, 4> grads;
    for (BufferUse use : bufferUses(y)) {
      if (use.call == gemm) {
        if (use.param != "y")
          return failure();
        continue;
      }
      if (!gemm->isBeforeInBlock(use.call))
        return failure();
      StringRef k = use.call.getKernel();
      if (k == "relu" && use.param == "x" && !relu) {
        relu = use.call;
        continue;
      }
      if (k == "relu_grad" && use.param == "x") {
        grads.push_back(use);
        continue;
      }
      return failure();
    }
    if (!relu)
      return failure();
    Value z = relu.getSingleTensor("y");
    if (!z || z == y || elementType(z) != elementType(y) || isWrittenInPlace(z))
      return failure();
    for (BufferUse g : grads)
      if (!relu->isBeforeInBlock(g.call))
        return failure();
    // z is written where y was: every other call naming z must come after
    // the relu. Those calls read z: in the unplanned form a temporary is
    // written by the first call that names it (here the relu) and by calls
    // that write it in place, which isWrittenInPlace excluded
    // (exec::Program reads the form the same way).
    for (BufferUse use : bufferUses(z))
      if (use.call != relu && !relu->isBeforeInBlock(use.call))
        return failure();
    rewriter.modifyOpInPlace(gemm, [&] {
      gemm->setAttr(gemm.getKernelAttrName(),
                    rewriter.getStringAttr("gemm_relu"));
      for (OpOperand &o : gemm->getOpOperands())
        if (o.get() == y)
          o.set(z);
    });
    for (BufferUse g : grads)
      rewriter.modifyOpInPlace(g.call,
                               [&] { g.call->setOperand(g.operand, z); });
    rewriter.eraseOp(relu);
    return success();
  }
};

} // namespace

void amp::lowering::populateFuseGemmReluPatterns(RewritePatternSet &patterns) {
  patterns.add<FuseGemmRelu>(patterns.getContext());
}

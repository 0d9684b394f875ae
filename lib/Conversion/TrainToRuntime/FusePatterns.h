//===- FusePatterns.h - the rewrite patterns of amprt-fuse ------*- C++ -*-===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// Private to lib/Conversion/TrainToRuntime: the fusions of `amprt-fuse` as
// rewrite patterns on `amprt.call`s of an unplanned lowered function
// (PlannedProgram.h's unplanned form; BufferFacts.h says who reads and
// writes a buffer). Each populate function is one fusion, one file; the
// pass applies them one set after another in the order of
// include/amp/Conversion/Passes.td, each set top-down over the calls.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_LIB_CONVERSION_TRAINTORUNTIME_FUSEPATTERNS_H
#define AMP_LIB_CONVERSION_TRAINTORUNTIME_FUSEPATTERNS_H

#include "amp/Dialect/AmpRT/AmpRT.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/PatternMatch.h"

#include <string>

namespace amp::lowering {

/// A rewrite pattern on the calls of one kernel: rewriteCall sees only
/// them.
class CallPattern : public mlir::OpRewritePattern<amprt::CallOp> {
public:
  CallPattern(mlir::MLIRContext *ctx, llvm::StringRef kernel)
      : OpRewritePattern(ctx), kernel(kernel.str()) {}
  mlir::LogicalResult
  matchAndRewrite(amprt::CallOp call,
                  mlir::PatternRewriter &rewriter) const final {
    if (call.getKernel() != kernel)
      return mlir::failure();
    return rewriteCall(call, rewriter);
  }

protected:
  virtual mlir::LogicalResult
  rewriteCall(amprt::CallOp call, mlir::PatternRewriter &rewriter) const = 0;

private:
  std::string kernel;
};

/// Loss scaling's unscale, check and gate without the unscaled copies
/// (FuseUnscale.cpp).
void populateFuseUnscalePatterns(mlir::RewritePatternSet &patterns);
/// Each gradient checked and written into its accumulator as it comes, the
/// gate applied once at the end, for a driver that overwrites its
/// accumulators every step (EarlyAccumulate.cpp).
void populateAccumulateEarlyPatterns(mlir::RewritePatternSet &patterns);
/// Transposes of GEMM operands and results as trans flags
/// (FoldTransposes.cpp).
void populateFoldTransposesPatterns(mlir::RewritePatternSet &patterns);
/// Attention in 16 bits (scores, softmax, output product and their
/// gradient) as one attention and one attention_grad call
/// (FuseAttention.cpp).
void populateFuseAttentionPatterns(mlir::RewritePatternSet &patterns);
/// The transposes, reshapes and slices that move a fused attention's
/// operands to and from their buffers as the calls' strided views
/// (FoldAttentionViews.cpp).
void populateFoldAttentionViewsPatterns(mlir::RewritePatternSet &patterns);
/// Sums of GatherGrads at distinct scalar indices as scatters into one
/// buffer (GatherGradSums.cpp).
void populateGatherGradSumsPatterns(mlir::RewritePatternSet &patterns);
/// Widening casts read by their elementwise consumers, narrowing casts
/// written by their producer (FoldCasts.cpp).
void populateFoldCastsPatterns(mlir::RewritePatternSet &patterns);
/// A gemm and the relu that reads its result as one gemm_relu, the
/// ReluGrads reading the relu's output (FuseGemmRelu.cpp).
void populateFuseMatMulBiasPatterns(mlir::RewritePatternSet &patterns);
void populateFuseGemmReluPatterns(mlir::RewritePatternSet &patterns);
void populateFuseGemmActGradPatterns(mlir::RewritePatternSet &patterns);

} // namespace amp::lowering

#endif // AMP_LIB_CONVERSION_TRAINTORUNTIME_FUSEPATTERNS_H

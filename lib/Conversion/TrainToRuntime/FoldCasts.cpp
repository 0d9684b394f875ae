//===- FoldCasts.cpp - casts folded into their producer or consumer -------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// Mixed precision widens 16-bit values to f32 where an f32 node reads them:
// the residual Add of a transformer, the Sum that accumulates a tied
// embedding's gradient (GatherGrad in f32 plus the LM head's f16 GEMM
// gradient). The cast writes a second, twice as large copy of the value.
//
// The elementwise kernels read each operand in its own dtype and compute in
// f32 (Ops.def: "f32/f16/bf16 in, f32 math"), on both backends. Widening
// f16 or bf16 to f32 is exact, so such a kernel reading the 16-bit value
// computes what it computed from the cast: the cast and its copy go away,
// and results are bit-identical.
//
// Likewise a cast that narrows an f32 temporary to f16/bf16, when the
// temporary's producer is its only other user and writes any float dtype
// by rounding its f32 value once (the elementwise kernels, sum, the loss
// gradient): the producer writes the 16-bit value directly, the same bits,
// and the f32 copy is never made (the logits' gradient of a language model
// feeding the LM head's fp16 backward GEMM).
//
// A widening cast folds when it widens f16/bf16 to f32, its output is a
// temporary that is no graph output and that no call writes in place, and
// every call reading it is a float binary op, a unary float op (not a cast,
// copy or test), an activation gradient, sum, softmax_cross_entropy_loss
// (its scores: the logits of a language model, cast to f32 for the loss,
// are the step's largest tensor), a float reduction (reduce_sum, _mean,
// _max, _min read x in its dtype and sum in f64: a Gemm's bias gradient,
// ReduceSum of the f32 copy of the f16 activation gradient), layer_norm and
// layer_norm_grad (x, dy) or scale (x), or inplace_accumulate (value: a
// weight gradient into its f32 buffer in bf16, where no loss scaler's
// accumulation takes it), which read them the same way.
//
//===----------------------------------------------------------------------===//

#include "BufferFacts.h"
#include "FusePatterns.h"
#include "PlannedProgram.h"

#include "llvm/ADT/StringSet.h"

using namespace mlir;
using namespace amp;
using namespace amp::lowering;

namespace {

/// Whether `use`'s kernel reads that float operand in any of f32, f16 and
/// bf16 (converting to f32 as it loads it).
bool readsAnyFloat(BufferUse use) {
  static const llvm::StringSet<> comparisons = {
      "less", "greater", "equal", "less_or_equal", "greater_or_equal"};
  StringRef k = use.call.getKernel();
  if (isElementwiseFloat(k) || comparisons.contains(k))
    return true;
  // The reductions read x in its dtype (into an f64 accumulator): the bias
  // gradient's ReduceSum of a widened f16 activation gradient. LayerNorm and
  // its gradient read x (and dy) in theirs, scale its x: a transformer's f32
  // LayerNorm of an f16 residual sum.
  static const llvm::StringSet<> readXAsItIs = {"reduce_sum", "reduce_mean",
                                                "reduce_max", "reduce_min",
                                                "layer_norm", "scale"};
  if (readXAsItIs.contains(k))
    return use.param == "x";
  if (k == "layer_norm_grad")
    return use.param == "x" || use.param == "dy";
  // The loss reads its scores (the logits) in their dtype: the AMP graph's
  // cast of f16 logits to f32, the step's largest tensor in a language
  // model, folds into it.
  if (k == "softmax_cross_entropy_loss")
    return use.param == "scores";
  // An accumulator adds its value in f32 whatever its dtype: the bf16
  // weight gradient widened for its f32 gradient buffer (no loss scaler to
  // fuse it into) goes in as it is.
  return k == "inplace_accumulate" && use.param == "value";
}

/// Whether `use`'s kernel writes that float output in any of f32, f16 and
/// bf16, computing in f32 and rounding once into it.
bool writesAnyFloat(BufferUse use) {
  StringRef k = use.call.getKernel();
  if (isElementwiseFloat(k)) { // the output is the last tensor parameter
    const KernelParam *last = nullptr;
    for (const KernelParam &p : use.call.getSignature()->params)
      if (p.kind == ParamKind::Tensor)
        last = &p;
    return last && use.param == last->name;
  }
  // The loss gradient (the logits' gradient, cast to f16 for the LM head's
  // backward GEMM).
  return k == "softmax_cross_entropy_loss_grad" && use.param == "dx";
}

/// Replaces every operand of `call`'s tensor parameter `param` that is
/// `from` by `to`.
void replaceInParam(PatternRewriter &rewriter, amprt::CallOp call,
                    StringRef param, Value from, Value to) {
  rewriter.modifyOpInPlace(call, [&] {
    for (OpOperand &o : call->getOpOperands()) // the operands are its tensors
      if (o.get() == from &&
          call.getTensorParamName(o.getOperandNumber()) == param)
        o.set(to);
  });
}

struct FoldCast : CallPattern {
  explicit FoldCast(MLIRContext *ctx) : CallPattern(ctx, "cast") {}

  LogicalResult rewriteCall(amprt::CallOp cast,
                            PatternRewriter &rewriter) const override {
    if (cast.getTensors().size() != 2 ||
        cast.getCounts() != ArrayRef<int64_t>{1, 1})
      return failure();
    Value x = cast.getSingleTensor("x"), y = cast.getSingleTensor("y");
    Type from = elementType(x), to = elementType(y);
    // Narrowing f32 to f16/bf16: the producer rounds into y directly, once,
    // from the f32 value it would have stored in x (the same bits).
    if (from.isF32() && (to.isF16() || to.isBF16()) && isTemporary(x) &&
        isTemporary(y) && !isWrittenInPlace(x) && !isReturned(x) &&
        !isWrittenInPlace(y)) {
      SmallVector<BufferUse, 4> xs = bufferUses(x);
      if (xs.size() == 2 && xs[1].call == cast &&
          xs[0].call->isBeforeInBlock(cast) && writesAnyFloat(xs[0])) {
        replaceInParam(rewriter, xs[0].call, xs[0].param, x, y);
        rewriter.eraseOp(cast);
        return success();
      }
    }
    // Widening f16/bf16 to f32: every later reader reads x itself.
    if (!(from.isF16() || from.isBF16()) || !to.isF32() || !isTemporary(y) ||
        isWrittenInPlace(y) || isReturned(y))
      return failure();
    SmallVector<BufferUse, 4> readers;
    for (const BufferUse &use : bufferUses(y)) {
      if (use.call == cast)
        continue;
      if (!cast->isBeforeInBlock(use.call) || !readsAnyFloat(use))
        return failure();
      readers.push_back(use);
    }
    if (readers.empty())
      return failure();
    for (const BufferUse &use : readers)
      replaceInParam(rewriter, use.call, use.param, y, x);
    rewriter.eraseOp(cast);
    return success();
  }
};

} // namespace

void amp::lowering::populateFoldCastsPatterns(RewritePatternSet &patterns) {
  patterns.add<FoldCast>(patterns.getContext());
}

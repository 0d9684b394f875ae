//===- EarlyAccumulate.cpp - gradients into their buffers as they come ----===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// Loss scaling gates each gradient's accumulation on the step's all-finite
// flag, and the flag needs every gradient: as FuseUnscale.cpp leaves it,
// one multi_tensor_unscale_check reads all the (fp16) weight gradients and
// only then does each unscale_gate_accumulate write its buffer. Every
// weight gradient is alive at once, as many bytes as the fp16 weights: a
// 660M-parameter decoder's AMP step held 1.4 GB of them, twice its fp32
// step's arena, whose gradients go into their buffers as they come.
//
// When the driver overwrites the accumulation buffers every step (its
// lazy_reset_grad is always true, or a version-1 accumulate signal always
// false: amp-run without --accumulate, the lowering option
// `overwrite-accumulators`), the gate can come after the writes instead:
//
//   first:         fill(flag, true)
//   for each gradient g, right after it is made:
//                  unscale_check_accumulate(buffer, g, inv, flag, ...)
//                    (multi_tensor_unscale_check([g], inv, flag), ANDed,
//                    and unscale_gate_accumulate(buffer, g, inv, true, ...)
//                    in one pass over g)
//   at the end:    multi_tensor_zero_unless(buffers, gate)
//
// ANDs commute, so ScheduleCalls.cpp orders the checks only after the fill
// and before the flag's readers, and moves each with its gradient (when
// ORT made the weight-gradient GEMM late, the GEMM, its check and its
// accumulation move up together). The flag is the same AND of the same
// products; a buffer holds g * inv
// when the step is finite and zero bytes (+0, as the gate's 0 gives)
// otherwise: the same bits as before, and each gradient lives only until
// it is in its buffer.
//
// The rewrite pattern is anchored on a multi_tensor_unscale_check with
// reset != 0 that is the only writer of its flag, every one of whose
// gradients is a temporary made by one call before it, gated into an
// accumulator after it by exactly one unscale_gate_accumulate with the
// check's factor, and read by nothing else. The fill goes before the first
// gradient's producer, each gradient's check and accumulation right after
// its producer (after those of gradients the producer made before it, in
// the order of the check's ins), as one unscale_check_accumulate, and one
// zero_unless per gate flag where the last gated accumulation was; the
// function is marked kOverwriteAccumulatorsAttr. The pass applies the pattern
// only to functions not so marked yet.
//
//===----------------------------------------------------------------------===//

#include "BufferFacts.h"
#include "FusePatterns.h"
#include "PlannedProgram.h"

#include "llvm/ADT/MapVector.h"

using namespace mlir;
using namespace amp;
using namespace amp::lowering;

namespace {

/// Whether `op` is the checked accumulation of a gradient that `producer`
/// made: one this rewrite put right after `producer`, for an earlier
/// gradient of the same check or of another check.
bool madeAfter(Operation *op, Operation *producer) {
  auto call = dyn_cast<amprt::CallOp>(op);
  if (!call || call.getKernel() != "unscale_check_accumulate")
    return false;
  Value g = call.getSingleTensor("x");
  if (!g)
    return false;
  SmallVector<BufferUse, 4> uses = bufferUses(g);
  return uses.front().call == producer;
}

/// A multi_tensor_unscale_check that resets its flag, with its gated
/// accumulations: each gradient checked and accumulated as it comes, the
/// gate applied at the end (the file comment).
struct AccumulateEarly : CallPattern {
  explicit AccumulateEarly(MLIRContext *ctx)
      : CallPattern(ctx, "multi_tensor_unscale_check") {}

  LogicalResult rewriteCall(amprt::CallOp check,
                            PatternRewriter &rewriter) const override {
    auto reset = check->getAttrOfType<IntegerAttr>("reset");
    OperandRange gs = check.getTensorParam("ins");
    Value inv = check.getSingleTensor("inv_scale"),
          flag = check.getSingleTensor("all_finite");
    auto func = check->getParentOfType<func::FuncOp>();
    if (!reset || reset.getInt() == 0 || !inv || !flag || gs.empty() || !func)
      return failure();
    // The flag's writers: this check alone.
    for (BufferUse use : bufferUses(flag)) {
      StringRef k = use.call.getKernel();
      bool writes =
          use.param == "all_finite" &&
          (k == "multi_tensor_unscale_check" ||
           k == "multi_tensor_all_finite" || k == "multi_tensor_unscale");
      if (writes && use.call != check)
        return failure();
    }
    // Each gradient: made by one call before the check, read by the check
    // and one gate-accumulate with its factor after it.
    struct Grad {
      Value g;
      amprt::CallOp producer, gate;
    };
    SmallVector<Grad> grads;
    llvm::SmallDenseSet<Value, 16> seen;
    for (Value g : gs) {
      if (!seen.insert(g).second || !isTemporary(g) || isWrittenInPlace(g) ||
          isReturned(g))
        return failure();
      Grad gr{g, {}, {}};
      for (BufferUse use : bufferUses(g)) {
        if (use.call == check)
          continue;
        if (!gr.producer && use.call->isBeforeInBlock(check)) {
          gr.producer = use.call;
          continue;
        }
        if (!gr.gate && isCallOf(use.call, "unscale_gate_accumulate") &&
            use.param == "x" && use.call.getSingleTensor("inv_scale") == inv &&
            use.call.getSingleTensor("buffer") &&
            use.call.getSingleTensor("gate")) {
          gr.gate = use.call;
          continue;
        }
        return failure();
      }
      if (!gr.producer || !gr.gate || !check->isBeforeInBlock(gr.gate))
        return failure();
      grads.push_back(gr);
    }

    // The flag starts true and each gradient's checked accumulation ANDs
    // into it right after the gradient is made: ANDs commute, so the
    // scheduler may move each with its gradient (ScheduleCalls.cpp).
    amprt::CallOp firstProducer = grads.front().producer;
    for (Grad gr : grads)
      if (gr.producer->isBeforeInBlock(firstProducer))
        firstProducer = gr.producer;
    SmallVector<NamedAttribute, 2> fillAttrs;
    if (Attribute node = check->getAttr("node"))
      fillAttrs.push_back(rewriter.getNamedAttr("node", node));
    fillAttrs.push_back(
        rewriter.getNamedAttr("value", rewriter.getF64FloatAttr(1.0)));
    rewriter.setInsertionPoint(firstProducer);
    amprt::createCall(rewriter, check.getLoc(), "fill", {{"y", flag}},
                      fillAttrs);
    llvm::MapVector<Value, SmallVector<Value, 8>> byGate; // gate -> buffers
    amprt::CallOp lastGate;
    for (Grad gr : grads) {
      Operation *after = gr.producer;
      while (after->getNextNode() &&
             madeAfter(after->getNextNode(), gr.producer))
        after = after->getNextNode();
      rewriter.setInsertionPointAfter(after);
      Value buffer = gr.gate.getSingleTensor("buffer");
      byGate[gr.gate.getSingleTensor("gate")].push_back(buffer);
      amprt::createCall(rewriter, gr.gate.getLoc(), "unscale_check_accumulate",
                        {{"buffer", buffer},
                         {"x", gr.g},
                         {"inv_scale", inv},
                         {"all_finite", flag},
                         {"overwrite", gr.gate.getTensorParam("overwrite")},
                         {"updated", gr.gate.getTensorParam("updated")}},
                        gr.gate->getAttrs());
      if (!lastGate || lastGate->isBeforeInBlock(gr.gate))
        lastGate = gr.gate;
    }
    // The buffers zeroed unless the step was finite, where the last gated
    // accumulation was.
    rewriter.setInsertionPointAfter(lastGate);
    for (auto &[gate, buffers] : byGate) {
      SmallVector<NamedAttribute, 2> attrs;
      if (Attribute node = lastGate->getAttr("node"))
        attrs.push_back(rewriter.getNamedAttr("node", node));
      attrs.push_back(rewriter.getNamedAttr(
          "n", rewriter.getI64IntegerAttr(int64_t(buffers.size()))));
      amprt::createCall(rewriter, lastGate.getLoc(), "multi_tensor_zero_unless",
                        {{"ins", buffers}, {"keep", gate}}, attrs);
    }
    for (Grad gr : grads)
      rewriter.eraseOp(gr.gate);
    rewriter.eraseOp(check);
    rewriter.modifyOpInPlace(func, [&] {
      func->setAttr(kOverwriteAccumulatorsAttr, rewriter.getUnitAttr());
    });
    return success();
  }
};

} // namespace

void amp::lowering::populateAccumulateEarlyPatterns(
    RewritePatternSet &patterns) {
  patterns.add<AccumulateEarly>(patterns.getContext());
}

//===- FuseUnscale.cpp - loss-scaling unscale, check and gate, fused ------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// The loss-scaling pass writes, per gradient g, in portable ONNX:
//
//   u = Mul(Cast(g, f32), inv)            the unscaled gradient
//   all_finite over every u               (FiniteCheck.cpp: one call)
//   Where(all_finite, u, 0)               the gate, often read only by the
//                                         gradient accumulator
//
// Planned as written, that is four to five passes over each gradient per
// step: the cast, the multiply, the check, the gate and the accumulation.
// These rewrite patterns on `amprt.call` never store u:
//
//   multi_tensor_unscale_check(g_i, inv)  checks the products g_i * inv
//   unscale_gate(g, inv, flag) -> y       where the Where was, or
//   unscale_gate_accumulate(acc, g, ...)  where the accumulator was, when
//                                         the gate was its only reader
//
// The arithmetic is the same f32 product, so the results are bit-identical
// (test/python/runtime_training.py checks the kernels so; the lowered
// fixtures train to the same loss bits).
//
// u is an unscaled gradient, for any graph, when one `mul` writes it from
// a gradient g (or from an exact widening cast of g, f16/bf16/f32 to f32,
// that only the multiply reads: the cast is folded) and a one-element
// factor inv, u is an f32 temporary, and its only readers are
// multi_tensor_all_finite checks and gates where(flag, u, +0) into an f32
// tensor of u's shape under a one-element i1 flag; no call may write u, g,
// inv or the flag in place. The patterns:
//
//   on multi_tensor_all_finite: its unscaled gradients are checked by one
//     multi_tensor_unscale_check per factor (in the order of its ins),
//     after a multi_tensor_all_finite of the rest; the first call made
//     keeps the check's reset, the others AND into the flag (reset 0);
//   on where: the gate of an unscaled gradient becomes unscale_gate, or
//     unscale_gate_accumulate in the place of the inplace_accumulate that
//     is the gate's only reader;
//   on mul: an unscaled gradient that nothing reads goes.
//
// The multiply, and the cast it folds, go with u's last reader. The calls
// a pattern makes read g, the factor and the flag where the ones it
// replaces read u, so whether u is an unscaled gradient is the same for
// every pattern that asks, and the same as on the calls before the fusion.
//
//===----------------------------------------------------------------------===//

#include "BufferFacts.h"
#include "FusePatterns.h"
#include "PlannedProgram.h"

#include "llvm/ADT/MapVector.h"

#include <cmath>
#include <optional>

using namespace mlir;
using namespace amp;
using namespace amp::lowering;

namespace {

bool isFloat(Value buffer) {
  Type t = elementType(buffer);
  return t.isF32() || t.isF16() || t.isBF16();
}

/// Whether some call writes `buffer` in place (isWrittenInPlace), as the
/// calls before this fusion did: a call this fusion makes may name one
/// buffer twice where the calls it replaces named it once (two unscalings
/// of one gradient by one factor, checked together; a gate written over
/// the gradient it reads), and only reads it twice.
bool isUpdated(Value buffer) {
  for (OpOperand &use : buffer.getUses()) {
    auto call = dyn_cast<amprt::CallOp>(use.getOwner());
    if (!call)
      continue;
    unsigned i = use.getOperandNumber();
    StringRef k = call.getKernel();
    bool made = k == "multi_tensor_unscale_check" || k == "unscale_gate" ||
                k == "unscale_gate_accumulate";
    if (made ? amprt::isInPlaceParam(k, call.getTensorParamName(i))
             : call.writesInPlace(i))
      return true;
  }
  return false;
}

/// Whether `buffer` is a one-element float constant +0.
bool isPlusZero(Value buffer) {
  ElementsAttr value = constantValue(buffer);
  if (!value || numel(bufferShape(buffer)) != 1)
    return false;
  std::optional<HostTensor> h = readHost(value);
  return h && isa<FloatType>(h->elem) && h->v.size() == 1 && h->v[0] == 0.0 &&
         !std::signbit(h->v[0]);
}

/// Whether `buffer` is a temporary that `producer` writes and only
/// `reader` reads.
bool onlyReadBy(Value buffer, Operation *producer, Operation *reader) {
  if (!isTemporary(buffer) || isReturned(buffer) || isUpdated(buffer))
    return false;
  SmallVector<BufferUse, 4> uses = bufferUses(buffer);
  return uses.size() == 2 && llvm::all_of(uses, [&](const BufferUse &use) {
           return use.call == producer || use.call == reader;
         });
}

/// Whether `use` reads u as a gate Where(flag, u, +0) into an f32 tensor of
/// u's shape, under a one-element flag nothing writes in place.
bool isGateOf(const BufferUse &use, Value u) {
  if (!isCallOf(use.call, "where") || use.param != "a")
    return false;
  amprt::CallOp where = use.call;
  Value cond = where.getSingleTensor("cond"), zero = where.getSingleTensor("b"),
        y = where.getSingleTensor("y");
  return cond && zero && y && where.getSingleTensor("a") == u &&
         elementType(cond).isInteger(1) && numel(bufferShape(cond)) == 1 &&
         !isUpdated(cond) && isPlusZero(zero) && elementType(y).isF32() &&
         bufferShape(y) == bufferShape(u);
}

/// An unscaled gradient: the multiply that writes it, the cast it reads
/// (null when it reads the gradient itself), the multiply's non-factor
/// operand, the gradient and the factor.
struct Unscaled {
  amprt::CallOp mul, cast;
  Value x, g, inv;
};

/// Whether `u` is an unscaled gradient (the file comment), and how.
std::optional<Unscaled> matchUnscaled(Value u) {
  if (!u || !isTemporary(u) || !elementType(u).isF32() || isReturned(u) ||
      isUpdated(u))
    return std::nullopt;
  SmallVector<BufferUse, 4> uses = bufferUses(u);
  amprt::CallOp mul;
  for (BufferUse use : uses)
    if (isCallOf(use.call, "mul") && use.param == "y") {
      // Two multiplies writing u: to each, the other is a reader that is
      // no check or gate.
      if (mul && mul != use.call)
        return std::nullopt;
      mul = use.call;
    }
  if (!mul)
    return std::nullopt;
  // Every reader is a finite check or a gate.
  for (BufferUse use : uses)
    if (use.call != mul &&
        !(isCallOf(use.call, "multi_tensor_all_finite") &&
          use.param == "ins") &&
        !isGateOf(use, u))
      return std::nullopt;
  Value a = mul.getSingleTensor("a"), b = mul.getSingleTensor("b");
  if (!a || !b)
    return std::nullopt;
  Value x = numel(bufferShape(b)) == 1 && bufferShape(a) == bufferShape(u) ? a
            : numel(bufferShape(a)) == 1 && bufferShape(b) == bufferShape(u)
                ? b
                : Value();
  if (!x)
    return std::nullopt;
  Value inv = x == a ? b : a;
  if (!isFloat(x) || !isFloat(inv) || isUpdated(x) || isUpdated(inv))
    return std::nullopt;
  Unscaled un{mul, {}, x, x, inv};
  // An exact widening cast read only by this multiply: read its input.
  for (BufferUse use : bufferUses(x)) {
    if (!isCallOf(use.call, "cast") || use.param != "y")
      continue;
    Value src = use.call.getSingleTensor("x");
    if (src && isFloat(src) && elementType(x).isF32() && !isUpdated(src) &&
        onlyReadBy(x, use.call, mul)) {
      un.g = src;
      un.cast = use.call;
    }
  }
  return un;
}

/// Erases u's multiply, and the cast it folds, once no other call names u.
void eraseIfUnread(PatternRewriter &rewriter, Value u, const Unscaled &un) {
  if (llvm::any_of(bufferUses(u),
                   [&](const BufferUse &use) { return use.call != un.mul; }))
    return;
  rewriter.eraseOp(un.mul);
  if (un.cast)
    rewriter.eraseOp(un.cast);
}

/// The `node` attribute of `call`, if it has one.
SmallVector<NamedAttribute, 1> nodeOf(amprt::CallOp call) {
  SmallVector<NamedAttribute, 1> attrs;
  if (Attribute node = call->getAttr("node"))
    attrs.push_back(
        NamedAttribute(StringAttr::get(call.getContext(), "node"), node));
  return attrs;
}

/// multi_tensor_all_finite over unscaled gradients: one unscale check per
/// factor, of the gradients themselves.
struct FuseFiniteCheck : CallPattern {
  explicit FuseFiniteCheck(MLIRContext *ctx)
      : CallPattern(ctx, "multi_tensor_all_finite") {}

  LogicalResult rewriteCall(amprt::CallOp check,
                            PatternRewriter &rewriter) const override {
    auto reset = check->getAttrOfType<IntegerAttr>("reset");
    Value flag = check.getSingleTensor("all_finite");
    if (!reset || !flag)
      return failure();
    // The checked values left as they are, and the gradients of the others
    // by factor.
    SmallVector<Value> keep;
    llvm::MapVector<Value, SmallVector<Value>> byInv;
    SmallVector<std::pair<Value, Unscaled>> fused;
    for (Value b : check.getTensorParam("ins")) {
      std::optional<Unscaled> un = matchUnscaled(b);
      if (!un) {
        keep.push_back(b);
        continue;
      }
      byInv[un->inv].push_back(un->g);
      fused.push_back({b, *un});
    }
    if (fused.empty())
      return failure();

    // The first call made writes the flag as the check did, the others AND
    // into it.
    bool first = true;
    auto attrs = [&](size_t n) {
      NamedAttrList a(check->getAttrs());
      a.set("n", rewriter.getI64IntegerAttr(int64_t(n)));
      a.set("reset", rewriter.getI32IntegerAttr(first ? reset.getInt() : 0));
      first = false;
      return a;
    };
    rewriter.setInsertionPoint(check);
    if (!keep.empty())
      amprt::createCall(rewriter, check.getLoc(), "multi_tensor_all_finite",
                        {{"ins", keep}, {"all_finite", flag}},
                        attrs(keep.size()));
    for (auto &[inv, gs] : byInv)
      amprt::createCall(rewriter, check.getLoc(), "multi_tensor_unscale_check",
                        {{"ins", gs}, {"inv_scale", inv}, {"all_finite", flag}},
                        attrs(gs.size()));
    rewriter.eraseOp(check);
    for (auto &[u, un] : fused)
      eraseIfUnread(rewriter, u, un);
    return success();
  }
};

/// The gate of an unscaled gradient: unscale_gate, or
/// unscale_gate_accumulate in the place of its only reader, an
/// inplace_accumulate.
struct FuseGate : CallPattern {
  explicit FuseGate(MLIRContext *ctx) : CallPattern(ctx, "where") {}

  LogicalResult rewriteCall(amprt::CallOp where,
                            PatternRewriter &rewriter) const override {
    // u's every reader is a gate or a check (matchUnscaled): this where is
    // such a gate.
    Value u = where.getSingleTensor("a");
    std::optional<Unscaled> un = matchUnscaled(u);
    if (!un)
      return failure();
    Value cond = where.getSingleTensor("cond"), y = where.getSingleTensor("y");
    // The gate read only as InPlaceAccumulator's value: gate into the
    // accumulator, where the accumulation was.
    amprt::CallOp acc;
    SmallVector<BufferUse, 4> ys = bufferUses(y);
    if (ys.size() == 2 && !isReturned(y))
      for (BufferUse use : ys)
        if (use.call != where && isCallOf(use.call, "inplace_accumulate") &&
            use.param == "value")
          acc = use.call;
    if (acc) {
      rewriter.setInsertionPoint(acc);
      amprt::createCall(rewriter, acc.getLoc(), "unscale_gate_accumulate",
                        {{"buffer", acc.getTensorParam("buffer")},
                         {"x", un->g},
                         {"inv_scale", un->inv},
                         {"gate", cond},
                         {"overwrite", acc.getTensorParam("overwrite")},
                         {"updated", acc.getTensorParam("updated")}},
                        nodeOf(acc));
      rewriter.eraseOp(acc);
    } else {
      rewriter.setInsertionPoint(where);
      amprt::createCall(
          rewriter, where.getLoc(), "unscale_gate",
          {{"x", un->g}, {"inv_scale", un->inv}, {"gate", cond}, {"y", y}},
          nodeOf(where));
    }
    rewriter.eraseOp(where);
    eraseIfUnread(rewriter, u, *un);
    return success();
  }
};

/// An unscaled gradient that no call reads: its multiply goes, with the
/// cast it folds.
struct EraseUnreadUnscale : CallPattern {
  explicit EraseUnreadUnscale(MLIRContext *ctx) : CallPattern(ctx, "mul") {}

  LogicalResult rewriteCall(amprt::CallOp mul,
                            PatternRewriter &rewriter) const override {
    Value u = mul.getSingleTensor("y");
    std::optional<Unscaled> un = matchUnscaled(u);
    if (!un || llvm::any_of(bufferUses(u), [&](const BufferUse &use) {
          return use.call != mul;
        }))
      return failure();
    // Another unscaling of the same x reads through x's cast when x has no
    // other reader on the calls before the fusion, this multiply included:
    // one whose value is still read goes first (the calls that replace its
    // readers read x, and the driver comes back to this one), and the
    // unread ones go together.
    SmallVector<amprt::CallOp> unread = {mul};
    for (BufferUse use : bufferUses(un->x)) {
      if (use.call == mul || !isCallOf(use.call, "mul"))
        continue;
      Value other = use.call.getSingleTensor("y");
      std::optional<Unscaled> o = matchUnscaled(other);
      if (!o || o->x != un->x || llvm::is_contained(unread, use.call))
        continue;
      if (llvm::any_of(bufferUses(other),
                       [&](const BufferUse &r) { return r.call != use.call; }))
        return failure();
      unread.push_back(use.call);
    }
    for (amprt::CallOp m : unread)
      rewriter.eraseOp(m);
    if (un->cast)
      rewriter.eraseOp(un->cast);
    return success();
  }
};

} // namespace

void amp::lowering::populateFuseUnscalePatterns(RewritePatternSet &patterns) {
  patterns.add<FuseFiniteCheck, FuseGate, EraseUnreadUnscale>(
      patterns.getContext());
}

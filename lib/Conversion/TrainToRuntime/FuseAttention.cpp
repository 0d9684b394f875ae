//===- FuseAttention.cpp - attention subgraphs as fused calls -------------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// A transformer's attention is, lowered node by node,
//
//   s  = alpha q k^T            a product (k^T a flag or a stored k^T)
//   s' = s * c  (or s / c)      optional, c a scalar constant
//   s" = s' + bias              optional, bias broadcast to s's shape
//   p  = softmax(s", last dim)
//   y  = p v                    a product
//
// and, in a training graph, ONNX Runtime's gradient of it:
//
//   dp  = dy v^T, dv = p^T dy            two products reading p and dy
//   ds" = softmax_grad(dp, p)
//   ds  = ds" * c (or / c)               where the forward scaled s (and
//                                        identities: an Add's gradient)
//   dq  = alpha ds k, dk = alpha ds^T q  two products (dk in k's layout)
//
// Each side becomes one call, attention and attention_grad (Ops.def): s and
// p are never stored (for a batch of 64 sequences of 128 tokens and 8 heads,
// each of s, p, dp and ds is 8 Mi elements a layer), the backward recomputes
// p from the forward's log-sum-exp (lse, f32 [.., Sq], the one buffer
// added), and the CUDA backend runs cuDNN's fused attention. Scores and
// probabilities stay f32 inside the call where the unfused calls round them
// to the operands' dtype, so the results are close to, not the bits of, the
// calls they replace.
//
// It applies to attention in 16 bits (q, k, v, y and the gradients all f16
// or all bf16: the programs AMP makes, and what cuDNN's fused attention
// takes); an f32 program keeps its calls and their bits. The match is
// strict, everything else is left as it was:
//  * q, k, v and the products' results share their leading (batch) dims,
//    rank >= 3 (no broadcasting); q is read untransposed, v untransposed;
//  * s, s', s", p, dp, ds", ds are temporaries, no graph outputs, written by
//    no call in place, and named only by the calls above (so no dropout on
//    p, no gradient for the bias, nothing else reading the scores);
//  * the backward's scale is the forward's (alpha c, within 1e-6) and its
//    products read the forward's q, k and v;
//  * no call writes q, k, v or the bias in place, nor y and dy where there
//    is a backward (the fused calls read them later than some calls they
//    replace), and each gradient has its operand's shape;
//  * a softmax whose p only the forward product reads (no gradient) makes
//    attention without lse.
// attention takes the forward product's place, attention_grad the place of
// the first backward call.
//
//===----------------------------------------------------------------------===//

#include "BufferFacts.h"
#include "FusePatterns.h"
#include "PlannedProgram.h"
#include "Products.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"

#include <cmath>
#include <optional>

using namespace mlir;
using namespace amp;
using namespace amp::lowering;

namespace {

/// The leading (batch) dims of a buffer of rank >= 2.
ArrayRef<int64_t> leadOf(Value buffer) {
  return bufferShape(buffer).drop_back(2);
}

bool is16Bit(Type t) { return t.isF16() || t.isBF16(); }

/// The value of a one-element float constant buffer.
std::optional<double> scalarConstant(Value buffer) {
  ElementsAttr value = constantValue(buffer);
  std::optional<HostTensor> h = value ? readHost(value) : std::nullopt;
  if (!h || !isa<FloatType>(h->elem) || h->v.size() != 1)
    return std::nullopt;
  return h->v[0];
}

/// A buffer that only the fusion's calls may name: a temporary, no graph
/// output, written in place by no call, named exactly by `calls` (each
/// once).
bool privateTo(Value buffer, ArrayRef<amprt::CallOp> calls) {
  if (!buffer || !isTemporary(buffer) || isReturned(buffer) ||
      isWrittenInPlace(buffer))
    return false;
  SmallVector<BufferUse, 4> uses = bufferUses(buffer);
  if (uses.size() != calls.size())
    return false;
  for (const BufferUse &use : uses)
    if (!llvm::is_contained(calls, use.call))
      return false;
  return true;
}

/// The call that writes `buffer` into being: in the unplanned form, the
/// first call naming it (PlannedProgram.h), as `param`.
amprt::CallOp writerOf(Value buffer, StringRef param) {
  SmallVector<BufferUse, 4> uses = bufferUses(buffer);
  if (uses.empty() || uses.front().param != param)
    return {};
  return uses.front().call;
}

/// A multiplication by a scalar constant, y = x * c or x / c (or c * x):
/// x and the factor (1 / c for a division).
std::optional<std::pair<Value, double>> scaling(amprt::CallOp call) {
  if (!call)
    return std::nullopt;
  StringRef k = call.getKernel();
  if (k != "mul" && k != "div")
    return std::nullopt;
  Value a = call.getSingleTensor("a"), b = call.getSingleTensor("b");
  if (!a || !b)
    return std::nullopt;
  if (std::optional<double> c = scalarConstant(b))
    return std::pair{a, k == "mul" ? *c : 1.0 / *c};
  if (k == "mul")
    if (std::optional<double> c = scalarConstant(a))
      return std::pair{b, *c};
  return std::nullopt;
}

/// Whether two scale factors agree within `rel` (default: f32's rounding).
bool sameScale(double a, double b, double rel = 1e-6) {
  return std::abs(a - b) <= rel * std::max(std::abs(a), std::abs(b));
}

/// The calls of one attention and its gradient, as matched.
struct Attention {
  // The forward.
  amprt::CallOp scores, scale, addBias, softmax, output;
  Value q, k, v, bias, y, p;
  bool kTrans = false;
  double factor = 1.0;
  // The backward (grad null: none).
  amprt::CallOp grad, dpProduct, dvProduct, dqProduct, dkProduct;
  /// The identities and the scaling between the softmax_grad and the
  /// products of dq and dk.
  SmallVector<amprt::CallOp, 2> dsChain;
  Value dy, dq, dk, dv;
};

/// Whether the product `call` is y = alpha op(a) op(b) with exactly these
/// operands and flags (and no c).
bool isProductOf(const std::optional<Product> &p, Value a, int64_t ta, Value b,
                 int64_t tb) {
  return p && !p->c && p->a == a && p->ta == ta && p->b == b && p->tb == tb;
}

bool lastAxis(amprt::CallOp call, Value x) {
  auto axis = call->getAttrOfType<IntegerAttr>("axis");
  int64_t r = int64_t(bufferShape(x).size());
  return axis && (axis.getInt() == -1 || axis.getInt() == r - 1);
}

/// The forward from the softmax back to the scores' product and on to the
/// output product; false where it is not attention as the header says.
bool matchForward(amprt::CallOp softmax, Attention &m) {
  m.softmax = softmax;
  Value s2 = softmax.getSingleTensor("x");
  m.p = softmax.getSingleTensor("y");
  if (!s2 || !m.p || !lastAxis(softmax, s2) || bufferShape(s2).size() < 3)
    return false;
  // Back from the softmax: an optional bias add, an optional scaling.
  Value cur = s2;
  amprt::CallOp next = softmax;
  amprt::CallOp w = writerOf(cur, "y");
  if (w && w.getKernel() == "add") {
    Value a = w.getSingleTensor("a"), b = w.getSingleTensor("b");
    if (!a || !b || !privateTo(cur, {w, next}))
      return false;
    // The scores are the operand of s's shape that the chain made.
    auto fromChain = [&](Value x) {
      amprt::CallOp xw = writerOf(x, "y");
      return xw && x != cur && bufferShape(x) == bufferShape(cur) &&
             (isProduct(xw) || scaling(xw));
    };
    Value scores = fromChain(a) ? a : fromChain(b) ? b : Value();
    if (!scores)
      return false;
    m.bias = scores == a ? b : a;
    if (!isa<FloatType>(elementType(m.bias)))
      return false;
    m.addBias = w;
    next = w;
    cur = scores;
    w = writerOf(cur, "y");
  }
  if (auto sc = scaling(w)) {
    if (!privateTo(cur, {w, next}))
      return false;
    m.scale = w;
    m.factor = sc->second;
    next = w;
    cur = sc->first;
    w = writerOf(cur, "y");
  }
  if (!w || !isProduct(w) || !privateTo(cur, {w, next}))
    return false;
  std::optional<Product> s = productOf(w);
  if (!s || s->c || s->ta != 0)
    return false;
  m.scores = w;
  m.q = s->a;
  m.k = s->b;
  m.kTrans = s->tb == 0;
  m.factor *= s->alpha;
  ArrayRef<int64_t> lead = leadOf(cur);
  if (bufferShape(m.q).size() != bufferShape(cur).size() ||
      leadOf(m.q) != lead ||
      bufferShape(m.k).size() != bufferShape(cur).size() || leadOf(m.k) != lead)
    return false;
  // The output product: y = p v.
  for (const BufferUse &use : bufferUses(m.p)) {
    if (use.call == softmax || use.param != "a" || !isProduct(use.call))
      continue;
    std::optional<Product> o = productOf(use.call);
    if (!o || o->c || o->ta != 0 || o->tb != 0 || o->alpha != 1.0)
      continue;
    if (m.output)
      return false;
    m.output = use.call;
    m.v = o->b;
    m.y = o->y;
  }
  if (!m.output || bufferShape(m.v).size() != lead.size() + 2 ||
      leadOf(m.v) != lead || m.y == m.q || m.y == m.k || m.y == m.v)
    return false;
  Type t = elementType(m.q);
  if (!is16Bit(t) || elementType(m.k) != t || elementType(m.v) != t ||
      elementType(m.y) != t)
    return false;
  // The fused call reads q, k and the bias where the output product was:
  // none may change after the calls that read them before.
  for (Value x : {m.q, m.k, m.v, m.bias})
    if (x && isWrittenInPlace(x))
      return false;
  return softmax->isBeforeInBlock(m.output);
}

/// The backward, from the softmax_grad reading p; false where it is not
/// attention's gradient as the header says.
bool matchBackward(amprt::CallOp grad, Attention &m) {
  m.grad = grad;
  Value dp = grad.getSingleTensor("dy"), ds2 = grad.getSingleTensor("dx");
  if (!dp || !ds2 || !lastAxis(grad, dp))
    return false;
  // dp = dy v^T, dv = p^T dy.
  m.dpProduct = writerOf(dp, "y");
  if (!m.dpProduct || !isProduct(m.dpProduct) ||
      !privateTo(dp, {m.dpProduct, grad}))
    return false;
  std::optional<Product> dpp = productOf(m.dpProduct);
  if (!dpp || dpp->ta != 0 || dpp->alpha != 1.0 ||
      !isProductOf(dpp, dpp->a, 0, m.v, 1))
    return false;
  m.dy = dpp->a;
  for (const BufferUse &use : bufferUses(m.p)) {
    if (use.call == m.softmax || use.call == m.output || use.call == grad)
      continue;
    std::optional<Product> d =
        isProduct(use.call) ? productOf(use.call) : std::nullopt;
    if (m.dvProduct || !d || d->alpha != 1.0 ||
        !isProductOf(d, m.p, 1, m.dy, 0))
      return false;
    m.dvProduct = use.call;
    m.dv = d->y;
  }
  if (!m.dvProduct)
    return false;
  // ds = ds" (times the forward's constant where it scaled s), through the
  // identities ONNX Runtime writes for the gradient of an Add.
  Value ds = ds2;
  double factor = 1.0;
  bool scaled = false;
  amprt::CallOp dsWriter = grad;
  while (true) {
    SmallVector<BufferUse, 4> uses = bufferUses(ds);
    if (uses.size() != 2 || uses[0].call != dsWriter)
      break;
    amprt::CallOp next = uses[1].call;
    std::optional<std::pair<Value, double>> sc = scaling(next);
    bool identity = next.getKernel() == "identity" && uses[1].param == "x";
    if (!identity && !(sc && m.scale && !scaled && sc->first == ds))
      break;
    Value out = next.getSingleTensor("y");
    if (!out || elementType(out) != elementType(ds) ||
        bufferShape(out) != bufferShape(ds) || !privateTo(ds, {dsWriter, next}))
      return false;
    if (sc && !identity) {
      scaled = true;
      factor = sc->second;
    }
    m.dsChain.push_back(next);
    dsWriter = next;
    ds = out;
  }
  if (bool(m.scale) != scaled)
    return false;
  // dq = alpha ds k, dk = alpha ds^T q (k's layout: alpha q^T ds).
  for (const BufferUse &use : bufferUses(ds)) {
    if (use.call == dsWriter)
      continue;
    std::optional<Product> d =
        isProduct(use.call) ? productOf(use.call) : std::nullopt;
    if (!d || !sameScale(d->alpha * factor, m.factor))
      return false;
    if (!m.dqProduct && isProductOf(d, ds, 0, m.k, m.kTrans ? 1 : 0)) {
      m.dqProduct = use.call;
      m.dq = d->y;
    } else if (!m.dkProduct && (m.kTrans ? isProductOf(d, m.q, 1, ds, 0)
                                         : isProductOf(d, ds, 1, m.q, 0))) {
      m.dkProduct = use.call;
      m.dk = d->y;
    } else {
      return false;
    }
  }
  if (!m.dqProduct || !m.dkProduct ||
      !privateTo(ds, {dsWriter, m.dqProduct, m.dkProduct}))
    return false;
  Type t = elementType(m.q);
  for (Value g : {m.dy, m.dq, m.dk, m.dv})
    if (elementType(g) != t)
      return false;
  // The gradient reads the forward's operands (matchForward: written in
  // place by no call), its result and dy (at the first of the calls that
  // read it): none may change in between. Each gradient has its operand's
  // shape (no broadcast dy).
  if (isWrittenInPlace(m.y) || isWrittenInPlace(m.dy))
    return false;
  for (auto [g, like] :
       {std::pair{m.dy, m.y}, {m.dq, m.q}, {m.dk, m.k}, {m.dv, m.v}})
    if (bufferShape(g) != bufferShape(like))
      return false;
  return m.output->isBeforeInBlock(m.dpProduct) &&
         m.output->isBeforeInBlock(m.dvProduct);
}

/// A constant scaling of q or k read by the attention alone (PyTorch's
/// multi-head attention scales q and k^T by d^-1/4 each, BART scales q):
/// the scaling op, its input and factor, and, with a gradient, the op that
/// scales the operand's gradient by the same factor and its output.
struct OperandScaling {
  amprt::CallOp op, gradOp, gradCast;
  Value x, gradOut;
  double factor = 1.0;
};

/// The scaling that made `operand` (q or k of `m`) when it folds into the
/// fused calls' scale: its result read only by the scores' product and by
/// the backward product that reads it (`gradReader`), its input no other
/// dtype and written in place by no call, and the gradient `grad` (the
/// operand's) read only by one scaling by the same factor.
std::optional<OperandScaling> operandScaling(const Attention &m, Value operand,
                                             amprt::CallOp gradReader,
                                             Value grad) {
  OperandScaling o;
  o.op = writerOf(operand, "y");
  auto sc = scaling(o.op);
  if (!sc || elementType(sc->first) != elementType(operand) ||
      bufferShape(sc->first) != bufferShape(operand) ||
      isWrittenInPlace(sc->first) || m.q == m.k)
    return std::nullopt;
  SmallVector<amprt::CallOp, 3> readers = {o.op, m.scores};
  if (gradReader)
    readers.push_back(gradReader);
  if (!privateTo(operand, readers))
    return std::nullopt;
  o.x = sc->first;
  o.factor = sc->second;
  if (!grad)
    return o;
  // The gradient's scaling, maybe after a widening cast (the AMP pass's
  // cast to the f32 scaling).
  SmallVector<BufferUse, 4> uses = bufferUses(grad);
  if (uses.size() != 2)
    return std::nullopt;
  Value scaled = grad;
  o.gradOp = uses[1].call;
  if (o.gradOp.getKernel() == "cast") {
    Value wide = o.gradOp.getSingleTensor("y");
    if (!wide || !privateTo(grad, {uses[0].call, o.gradOp}))
      return std::nullopt;
    SmallVector<BufferUse, 4> wideUses = bufferUses(wide);
    if (wideUses.size() != 2 || wideUses[0].call != o.gradOp)
      return std::nullopt;
    o.gradCast = o.gradOp;
    o.gradOp = wideUses[1].call;
    scaled = wide;
  }
  // The forward's constant is in the operand's 16 bits (the AMP pass cast
  // it), the gradient's often the f32 original: they agree to that
  // rounding. The fused gradient takes the forward's, as its true gradient.
  double unit = elementType(operand).isBF16() ? 0x1p-8 : 0x1p-11;
  auto back = scaling(o.gradOp);
  if (!back || back->first != scaled ||
      !sameScale(back->second, o.factor, unit) ||
      !privateTo(scaled, {bufferUses(scaled)[0].call, o.gradOp}))
    return std::nullopt;
  o.gradOut = o.gradOp.getSingleTensor("y");
  if (!o.gradOut || bufferShape(o.gradOut) != bufferShape(grad) ||
      bufferUses(o.gradOut).front().call != o.gradOp)
    return std::nullopt;
  return o;
}

struct FuseAttention : CallPattern {
  explicit FuseAttention(MLIRContext *ctx) : CallPattern(ctx, "softmax") {}

  LogicalResult rewriteCall(amprt::CallOp softmax,
                            PatternRewriter &rewriter) const override {
    Attention m;
    if (!matchForward(softmax, m))
      return failure();
    // p's readers: the softmax, the output product and, in training, the
    // softmax_grad and the dv product.
    amprt::CallOp grad;
    for (BufferUse use : bufferUses(m.p))
      if (use.call.getKernel() == "softmax_grad" && use.param == "y") {
        if (grad)
          return failure();
        grad = use.call;
      }
    if (grad ? !matchBackward(grad, m) : !privateTo(m.p, {softmax, m.output}))
      return failure();
    if (grad) {
      SmallVector<amprt::CallOp> readers = {softmax, m.output, grad,
                                            m.dvProduct};
      if (!privateTo(m.p, readers))
        return failure();
    }
    // Scalings of q and k fold into the scale: the calls read their inputs,
    // and attention_grad's dq and dk are then the gradients of those
    // inputs, the factor applied. Where the gradient's scaling changed the
    // dtype (f16 to f32) a cast takes its place, else the fused call writes
    // its result.
    SmallVector<amprt::CallOp> scalings;
    for (bool isQ : {true, false}) {
      Value &operand = isQ ? m.q : m.k;
      Value &g = isQ ? m.dq : m.dk;
      std::optional<OperandScaling> o = operandScaling(
          m, operand, isQ ? m.dkProduct : m.dqProduct, grad ? g : Value());
      if (!o)
        continue;
      operand = o->x;
      m.factor *= o->factor;
      scalings.push_back(o->op);
      if (!o->gradOp)
        continue;
      scalings.push_back(o->gradOp);
      if (o->gradCast) {
        // The cast widens the (now scaled) gradient into the scaling's
        // result.
        rewriter.modifyOpInPlace(
            o->gradCast, [&] { o->gradCast->setOperand(1, o->gradOut); });
        continue;
      }
      if (elementType(o->gradOut) == elementType(g)) {
        g = o->gradOut;
        continue;
      }
      rewriter.setInsertionPoint(o->gradOp);
      SmallVector<NamedAttribute> attrs;
      if (Attribute node = o->gradOp->getAttr("node"))
        attrs.push_back(rewriter.getNamedAttr("node", node));
      amprt::createCall(rewriter, o->gradOp.getLoc(), "cast",
                        {{"x", g}, {"y", o->gradOut}}, attrs);
    }

    Location loc = m.output.getLoc();
    StringAttr node = softmax->getAttrOfType<StringAttr>("node");
    Type f32 = rewriter.getF32Type();
    auto attrs = [&](StringAttr name) {
      // No views: every operand is its buffer (FoldAttentionViews.cpp may
      // set them).
      SmallVector<NamedAttribute> a = {
          rewriter.getNamedAttr("scale", rewriter.getFloatAttr(f32, m.factor)),
          rewriter.getNamedAttr("k_trans",
                                rewriter.getI32IntegerAttr(m.kTrans)),
          rewriter.getNamedAttr("views", rewriter.getDenseI64ArrayAttr({})),
          rewriter.getNamedAttr("nviews", rewriter.getI64IntegerAttr(0))};
      if (name)
        a.push_back(rewriter.getNamedAttr("node", name));
      return a;
    };
    ValueRange bias = m.bias ? ValueRange(m.bias) : ValueRange();
    Value lse;
    if (grad) {
      // One f32 per row of scores, beside p's buffer.
      SmallVector<int64_t> rows(leadOf(m.q));
      rows.push_back(bufferShape(m.q).drop_back().back());
      rewriter.setInsertionPointAfter(m.p.getDefiningOp());
      auto alloc = memref::AllocOp::create(
          rewriter, m.p.getLoc(), MemRefType::get(rows, rewriter.getF32Type()));
      alloc->setAttr(kRoleAttr, rewriter.getStringAttr(kArenaRoles[0]));
      lse = alloc;
    }
    rewriter.setInsertionPoint(m.output);
    amprt::createCall(rewriter, loc, "attention",
                      {{"q", m.q},
                       {"k", m.k},
                       {"v", m.v},
                       {"bias", bias},
                       {"y", m.y},
                       {"lse", lse ? ValueRange(lse) : ValueRange()}},
                      attrs(node));
    SmallVector<amprt::CallOp> erased = {m.scores, m.scale, m.addBias, softmax,
                                         m.output};
    if (grad) {
      amprt::CallOp first =
          m.dpProduct->isBeforeInBlock(m.dvProduct) ? m.dpProduct : m.dvProduct;
      rewriter.setInsertionPoint(first);
      amprt::createCall(rewriter, grad.getLoc(), "attention_grad",
                        {{"q", m.q},
                         {"k", m.k},
                         {"v", m.v},
                         {"bias", bias},
                         {"y", m.y},
                         {"lse", lse},
                         {"dy", m.dy},
                         {"dq", m.dq},
                         {"dk", m.dk},
                         {"dv", m.dv}},
                        attrs(grad->getAttrOfType<StringAttr>("node")));
      erased.append({grad, m.dpProduct, m.dvProduct, m.dqProduct, m.dkProduct});
      erased.append(m.dsChain.begin(), m.dsChain.end());
    }
    erased.append(scalings.begin(), scalings.end());
    for (amprt::CallOp call : erased)
      if (call)
        rewriter.eraseOp(call);
    return success();
  }
};

} // namespace

void amp::lowering::populateFuseAttentionPatterns(RewritePatternSet &patterns) {
  patterns.add<FuseAttention>(patterns.getContext());
}

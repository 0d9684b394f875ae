//===- FoldAttentionViews.cpp - head transposes into attention's views ----===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// Around a fused attention (FuseAttention.cpp) a transformer moves its
// heads: the projections' [B, S, H*D] rows are reshaped to [B, S, H, D] and
// transposed to [B, H, S, D] for q, k and v (sliced first out of a packed
// projection), and the output goes back the same way; the gradient undoes
// each step. Every step is a copy of the tensor. attention and
// attention_grad read and write their operands through strided views
// (Ops.def's `views`), so those copies fold into them:
//
//   input operand t = op_1(op_2(... op_n(x))), each op a transpose, a
//     reshape, a slice, an identity or a one-input concat, whose results
//     only the next op reads (and t only the attention calls): the calls
//     read x through the composed view, and the ops go;
//   output operand t read by op_1, op_1's result by op_2, ..., to z: the
//     attention call writes z through the inverse view (transposes,
//     reshapes and identities only: each a bijection), and the ops go.
//
// A view is an element offset, dims and strides (packed for a buffer); a
// transpose permutes the dims, a slice moves the offset and scales the
// strides, and a reshape regroups dims where the strides allow it without a
// copy (numpy's rule); a chain is cut where a reshape does not. attention
// and its gradient (found through lse) are rewritten together, as they read
// q, k, v and y alike. The same elements are read and written, so the
// results are bit-identical.
//
//===----------------------------------------------------------------------===//

#include "BufferFacts.h"
#include "FusePatterns.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"

#include <optional>

using namespace mlir;
using namespace amp;
using namespace amp::lowering;

namespace {

/// An element offset, dims and element strides into a buffer.
struct View {
  int64_t offset = 0;
  SmallVector<int64_t> dims, strides;

  static View packed(ArrayRef<int64_t> shape) {
    View v;
    v.dims.assign(shape.begin(), shape.end());
    v.strides.resize(shape.size());
    int64_t s = 1;
    for (int64_t i = int64_t(shape.size()) - 1; i >= 0; --i) {
      v.strides[size_t(i)] = s;
      s *= shape[size_t(i)];
    }
    return v;
  }

  /// dims'[i] = dims[perm[i]] (a transpose's result).
  bool permute(ArrayRef<int64_t> perm) {
    if (perm.size() != dims.size())
      return false;
    SmallVector<int64_t> d, s;
    for (int64_t p : perm) {
      if (p < 0 || p >= int64_t(dims.size()))
        return false;
      d.push_back(dims[size_t(p)]);
      s.push_back(strides[size_t(p)]);
    }
    dims = d;
    strides = s;
    return true;
  }

  /// The same elements in row-major order as `shape` (a reshape), where
  /// the strides allow it: each group of old dims that multiplies to a
  /// group of new dims is contiguous in itself (numpy's no-copy reshape).
  bool reshape(ArrayRef<int64_t> shape) {
    SmallVector<int64_t> od, os;
    for (auto [d, s] : llvm::zip(dims, strides))
      if (d != 1) {
        od.push_back(d);
        os.push_back(s);
      }
    SmallVector<int64_t> nd;
    SmallVector<size_t> where; // the new dims other than 1
    for (auto [i, d] : llvm::enumerate(shape))
      if (d != 1) {
        nd.push_back(d);
        where.push_back(i);
      }
    if (llvm::is_contained(od, 0) || llvm::is_contained(nd, 0))
      return false;
    SmallVector<int64_t> ns(nd.size(), 0);
    size_t oi = 0, ni = 0;
    while (oi < od.size() && ni < nd.size()) {
      size_t oj = oi + 1, nj = ni + 1;
      int64_t op = od[oi], np = nd[ni];
      while (op != np) {
        if (np < op) {
          if (nj == nd.size())
            return false;
          np *= nd[nj++];
        } else {
          if (oj == od.size())
            return false;
          op *= od[oj++];
        }
      }
      for (size_t k = oi; k + 1 < oj; ++k)
        if (os[k] != od[k + 1] * os[k + 1])
          return false;
      ns[nj - 1] = os[oj - 1];
      for (size_t k = nj - 1; k > ni; --k)
        ns[k - 1] = ns[k] * nd[k];
      oi = oj;
      ni = nj;
    }
    if (oi != od.size() || ni != nd.size())
      return false;
    dims.assign(shape.begin(), shape.end());
    strides.assign(shape.size(), 0);
    for (auto [k, i] : llvm::enumerate(where))
      strides[i] = ns[k];
    return true;
  }

  /// A slice with non-negative starts and steps to `shape`.
  bool slice(ArrayRef<int64_t> starts, ArrayRef<int64_t> axes,
             ArrayRef<int64_t> steps, ArrayRef<int64_t> shape) {
    if (shape.size() != dims.size() || starts.size() != axes.size() ||
        steps.size() != axes.size())
      return false;
    for (auto [start, axis, step] : llvm::zip(starts, axes, steps)) {
      int64_t a = axis < 0 ? axis + int64_t(dims.size()) : axis;
      if (a < 0 || a >= int64_t(dims.size()) || start < 0 || step < 1 ||
          start > dims[size_t(a)])
        return false;
      offset += start * strides[size_t(a)];
      strides[size_t(a)] *= step;
    }
    dims.assign(shape.begin(), shape.end());
    return true;
  }
};

ArrayRef<int64_t> intsAttr(amprt::CallOp call, StringRef name) {
  auto a = call->getAttrOfType<DenseI64ArrayAttr>(name);
  return a ? a.asArrayRef() : ArrayRef<int64_t>();
}

/// The data operand of a call that only moves elements (nullptr if `call`
/// is not one): transpose, reshape, identity, slice and a concat of one
/// input.
Value movedFrom(amprt::CallOp call) {
  StringRef k = call.getKernel();
  if (k == "transpose" || k == "reshape" || k == "identity" || k == "slice")
    return call.getSingleTensor("x");
  if (k == "concat")
    return call.getSingleTensor("inputs");
  return {};
}

/// `v` (a view of `call`'s input) made a view of its result.
bool forward(View &v, amprt::CallOp call) {
  StringRef k = call.getKernel();
  Value y = call.getSingleTensor("y");
  if (k == "transpose")
    return v.permute(intsAttr(call, "perm"));
  if (k == "reshape")
    return v.reshape(bufferShape(y));
  if (k == "slice")
    return v.slice(intsAttr(call, "starts"), intsAttr(call, "axes"),
                   intsAttr(call, "steps"), bufferShape(y));
  return true; // identity, one-input concat
}

/// `v` (a view of `call`'s result) made a view of its input, for the calls
/// that are bijections (no slice).
bool backward(View &v, amprt::CallOp call) {
  StringRef k = call.getKernel();
  if (k == "transpose") {
    ArrayRef<int64_t> perm = intsAttr(call, "perm");
    SmallVector<int64_t> inv(perm.size(), -1);
    for (auto [i, p] : llvm::enumerate(perm)) {
      if (p < 0 || p >= int64_t(perm.size()))
        return false;
      inv[size_t(p)] = int64_t(i);
    }
    return !llvm::is_contained(inv, -1) && v.permute(inv);
  }
  if (k == "reshape")
    return v.reshape(bufferShape(movedFrom(call)));
  return k == "identity" || k == "concat";
}

/// Whether `buffer` may be dropped from the program once the calls in
/// `users` no longer name it: a temporary, no graph output, written in
/// place by no call, and named only by `writer` and `users`.
bool onlyBetween(Value buffer, amprt::CallOp writer,
                 ArrayRef<amprt::CallOp> users) {
  if (!isTemporary(buffer) || isReturned(buffer) || isWrittenInPlace(buffer))
    return false;
  for (const BufferUse &use : bufferUses(buffer))
    if (use.call != writer && !llvm::is_contained(users, use.call))
      return false;
  return true;
}

/// An operand's new buffer and view, and the calls that go.
struct Folded {
  Value base;
  View view;
  SmallVector<amprt::CallOp, 4> erased;
};

/// The longest prefix chain[0, n) whose moves compose into a view of `t`:
/// `base(n)` the buffer the view is of (null: none for this n), `step`
/// turning a view of one side of a move into one of the other, applied
/// from chain[n - 1] down to chain[0].
template <typename Base, typename Step>
std::optional<Folded> longestFold(ArrayRef<amprt::CallOp> chain, Value t,
                                  Base base, Step step) {
  for (size_t n = chain.size(); n > 0; --n) {
    Value b = base(n);
    if (!b)
      continue;
    View v = View::packed(bufferShape(b));
    bool ok = true;
    for (size_t i = n; ok && i > 0; --i)
      ok = step(v, chain[i - 1]);
    if (ok && ArrayRef<int64_t>(v.dims) == bufferShape(t))
      return Folded{b, v, SmallVector<amprt::CallOp, 4>(chain.take_front(n))};
  }
  return std::nullopt;
}

/// Input operand `t` of the calls `group`: the longest chain of element
/// moves that made it, whose results only the chain and the group read.
std::optional<Folded> foldInput(Value t, ArrayRef<amprt::CallOp> group) {
  SmallVector<amprt::CallOp, 4> chain;
  Value cur = t;
  SmallVector<amprt::CallOp, 4> readers(group.begin(), group.end());
  while (true) {
    SmallVector<BufferUse, 4> uses = bufferUses(cur);
    if (uses.empty() || uses.front().param != "y")
      break;
    amprt::CallOp w = uses.front().call;
    Value from = movedFrom(w);
    if (!from || from == cur || elementType(from) != elementType(cur) ||
        !onlyBetween(cur, w, readers))
      break;
    chain.push_back(w);
    readers.assign({w});
    cur = from;
  }
  // The farthest base from which the views compose.
  return longestFold(
      chain, t,
      [&](size_t n) {
        Value base = movedFrom(chain[n - 1]);
        return isWrittenInPlace(base) ? Value() : base;
      },
      forward);
}

/// Output operand `t` written by `writer` (and read by the calls `group`):
/// the longest chain of bijective element moves that its result goes
/// through, each result read only by the next.
std::optional<Folded> foldOutput(Value t, amprt::CallOp writer,
                                 ArrayRef<amprt::CallOp> group) {
  SmallVector<amprt::CallOp, 4> chain;
  Value cur = t;
  amprt::CallOp curWriter = writer;
  bool first = true;
  while (true) {
    amprt::CallOp next;
    bool single = true;
    for (BufferUse use : bufferUses(cur)) {
      if (use.call == curWriter ||
          (first && llvm::is_contained(group, use.call)))
        continue;
      single = single && !next;
      next = use.call;
    }
    if (!next || !single)
      break;
    StringRef k = next.getKernel();
    Value to = next.getSingleTensor("y");
    if (k == "slice" || movedFrom(next) != cur || !to || to == cur ||
        elementType(to) != elementType(cur))
      break;
    SmallVector<amprt::CallOp, 4> users = {next};
    if (first)
      users.append(group.begin(), group.end());
    if (!onlyBetween(cur, curWriter, users))
      break;
    chain.push_back(next);
    curWriter = next;
    cur = to;
    first = false;
  }
  return longestFold(
      chain, t,
      [&](size_t n) {
        Value z = chain[n - 1].getSingleTensor("y");
        // The attention call now writes z, earlier than its writer did: z is a
        // temporary that no call names before that writer, and (y, read again
        // by the gradient) that no call changes in place.
        bool ok = isTemporary(z) && !isWrittenInPlace(z) &&
                  bufferUses(z).front().call == chain[n - 1];
        return ok ? z : Value();
      },
      backward);
}

struct FoldAttentionViews : CallPattern {
  explicit FoldAttentionViews(MLIRContext *ctx)
      : CallPattern(ctx, "attention") {}

  LogicalResult rewriteCall(amprt::CallOp fwd,
                            PatternRewriter &rewriter) const override {
    auto done = fwd->getAttrOfType<IntegerAttr>("nviews");
    if (done && done.getInt() != 0)
      return failure();
    // The gradient: the call reading the forward's lse.
    amprt::CallOp grad;
    if (Value lse = fwd.getSingleTensor("lse"))
      for (BufferUse use : bufferUses(lse))
        if (use.call != fwd && use.call.getKernel() == "attention_grad" &&
            use.param == "lse")
          grad = use.call;
    static const char *const kParams[] = {"q",  "k",  "v",  "y",
                                          "dy", "dq", "dk", "dv"};
    size_t n = grad ? 8 : 4;
    SmallVector<Value, 8> buffers;
    for (size_t i = 0; i < n; ++i) {
      Value b = (i < 4 ? fwd : grad).getSingleTensor(kParams[i]);
      if (!b || (grad && i < 4 && grad.getSingleTensor(kParams[i]) != b))
        return failure();
      buffers.push_back(b);
    }
    SmallVector<amprt::CallOp, 2> group = {fwd};
    if (grad)
      group.push_back(grad);
    // Each operand's buffer and view; the calls that go.
    SmallVector<Value, 8> bases(buffers.begin(), buffers.end());
    SmallVector<View, 8> views;
    SmallVector<amprt::CallOp, 8> erased;
    llvm::DenseSet<Value> taken;
    llvm::DenseSet<Operation *> gone;
    bool any = false;
    for (size_t i = 0; i < n; ++i) {
      Value t = buffers[i];
      std::optional<Folded> f;
      // An operand named twice (q and k of one buffer) keeps its buffer.
      bool twice = llvm::count(buffers, t) > 1;
      if (!twice && i == 3)
        f = foldOutput(t, fwd, ArrayRef<amprt::CallOp>(group).drop_front());
      else if (!twice && i >= 5)
        f = foldOutput(t, grad, {});
      else if (!twice)
        f = foldInput(t, i == 4 ? ArrayRef<amprt::CallOp>(grad)
                                : ArrayRef<amprt::CallOp>(group));
      // Outputs must land in buffers of their own, and no move folds into
      // two operands (y moved into dy by identities: y's fold takes them).
      if (f && llvm::any_of(f->erased, [&](amprt::CallOp c) {
            return gone.contains(c.getOperation());
          }))
        f.reset();
      if (f && (i == 3 || i >= 5) && !taken.insert(f->base).second)
        f.reset();
      if (f)
        for (amprt::CallOp c : f->erased)
          gone.insert(c.getOperation());
      if (!f) {
        views.push_back(View::packed(bufferShape(t)));
        continue;
      }
      any = true;
      bases[i] = f->base;
      views.push_back(f->view);
      erased.append(f->erased.begin(), f->erased.end());
    }
    if (!any)
      return failure();
    // The logical rank is q's; every view has it.
    size_t r = views.front().dims.size();
    for (const View &v : views)
      if (v.dims.size() != r)
        return failure();
    auto flatten = [&](size_t count) {
      SmallVector<int64_t> flat;
      for (size_t i = 0; i < count; ++i) {
        flat.push_back(views[i].offset);
        flat.append(views[i].dims);
        flat.append(views[i].strides);
      }
      return flat;
    };
    auto rewrite = [&](amprt::CallOp call, size_t count) {
      SmallVector<NamedAttribute> attrs;
      for (NamedAttribute a : call->getAttrs())
        if (a.getName() != "counts" && a.getName() != "kernel" &&
            a.getName() != "views" && a.getName() != "nviews")
          attrs.push_back(a);
      SmallVector<int64_t> flat = flatten(count);
      attrs.push_back(
          rewriter.getNamedAttr("views", rewriter.getDenseI64ArrayAttr(flat)));
      attrs.push_back(rewriter.getNamedAttr(
          "nviews", rewriter.getI64IntegerAttr(int64_t(flat.size()))));
      SmallVector<amprt::TensorArg> tensors;
      for (size_t i = 0; i < count; ++i)
        tensors.push_back({kParams[i], bases[i]});
      for (StringRef p : {"bias", "lse"})
        tensors.push_back({p, call.getTensorParam(p)});
      rewriter.setInsertionPoint(call);
      amprt::createCall(rewriter, call.getLoc(), call.getKernel(), tensors,
                        attrs);
      rewriter.eraseOp(call);
    };
    // The moves go first (the outputs' ones read the old buffers).
    for (amprt::CallOp c : llvm::reverse(erased))
      rewriter.eraseOp(c);
    rewrite(fwd, 4);
    if (grad)
      rewrite(grad, 8);
    return success();
  }
};

} // namespace

void amp::lowering::populateFoldAttentionViewsPatterns(
    RewritePatternSet &patterns) {
  patterns.add<FoldAttentionViews>(patterns.getContext());
}

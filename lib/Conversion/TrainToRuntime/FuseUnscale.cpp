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
// This rewrite of the planned calls never stores u:
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
// The match is on the planned calls, for any graph: u must be an f32
// temporary that only the check and such gates read; the factor one
// element; the zero a +0 constant; the cast (folded when the multiply is
// its only reader) exact (f16/bf16/f32 to f32); and no call may write g,
// inv or the flag in place.
//
//===----------------------------------------------------------------------===//

#include "PlannedProgram.h"

#include "llvm/ADT/MapVector.h"

#include <cmath>

using namespace amp::lowering;

namespace {

bool named(const PlannedCall &c, StringRef kernel) {
  return c.sig->name == kernel;
}

} // namespace

void PlannedProgram::fuseUnscaleGates() {
  CallUses cu = callUses();
  // References, not structured bindings: lambdas below capture them.
  const llvm::DenseSet<int> &written = cu.written, &outputs = cu.outputs;
  auto &uses = cu.uses;

  auto isFloat = [&](int b) {
    Type t = bufs[b].elem;
    return t.isF32() || t.isF16() || t.isBF16();
  };
  auto isPlusZero = [&](int b) {
    if (bufs[b].kind != Buffer::Const || numel(bufs[b].shape) != 1)
      return false;
    std::optional<HostTensor> h = readHost(bufs[b].value);
    return h && isa<FloatType>(h->elem) && h->v.size() == 1 && h->v[0] == 0.0 &&
           !std::signbit(h->v[0]);
  };
  // A temporary that one call writes and only the call at `reader` reads.
  auto onlyReadBy = [&](int b, int producer, int reader) {
    if (bufs[b].kind != Buffer::Temp || outputs.contains(b) ||
        written.contains(b))
      return false;
    for (auto [ci, si] : uses[b])
      if (ci != producer && ci != reader)
        return false;
    return uses[b].size() == 2;
  };

  // What replaces an unscaled gradient u: the gradient read instead, the
  // factor, and the calls that go away.
  struct Unscaled {
    int g, inv;
    SmallVector<int, 2> dropped; // the multiply, maybe the cast
  };
  DenseMap<int, Unscaled> fused;
  for (auto [ci, c] : llvm::enumerate(calls)) {
    if (!named(c, "mul"))
      continue;
    int a = singleBuffer(c, "a"), b = singleBuffer(c, "b"),
        u = singleBuffer(c, "y");
    if (a < 0 || b < 0 || u < 0 || !bufs[u].elem.isF32() ||
        bufs[u].kind != Buffer::Temp || outputs.contains(u) ||
        written.contains(u))
      continue;
    int x = numel(shapeOf(b)) == 1 && shapeOf(a) == shapeOf(u)   ? a
            : numel(shapeOf(a)) == 1 && shapeOf(b) == shapeOf(u) ? b
                                                                 : -1;
    if (x < 0)
      continue;
    int inv = x == a ? b : a;
    if (!isFloat(x) || !isFloat(inv) || written.contains(x) ||
        written.contains(inv))
      continue;
    // Every reader of u is a finite check or a gate Where(flag, u, +0)
    // into an f32 tensor of u's shape, under a flag nothing rewrites.
    bool ok = true;
    for (auto [ri, si] : uses[u]) {
      const PlannedCall &r = calls[ri];
      if (ri == int(ci))
        continue;
      if (named(r, "multi_tensor_all_finite") && si == tensorSlot(r, "ins"))
        continue;
      if (named(r, "where") && si == tensorSlot(r, "a")) {
        int cond = singleBuffer(r, "cond"), z = singleBuffer(r, "b"),
            y = singleBuffer(r, "y");
        if (cond >= 0 && z >= 0 && y >= 0 && singleBuffer(r, "a") == u &&
            bufs[cond].elem.isInteger(1) && numel(shapeOf(cond)) == 1 &&
            !written.contains(cond) && isPlusZero(z) && bufs[y].elem.isF32() &&
            shapeOf(y) == shapeOf(u))
          continue;
      }
      ok = false;
    }
    if (!ok)
      continue;
    Unscaled un{x, inv, {int(ci)}};
    // An exact widening cast read only by this multiply: read its input.
    for (auto [pi, si] : uses[x]) {
      const PlannedCall &p = calls[pi];
      if (!named(p, "cast") || si != tensorSlot(p, "y"))
        continue;
      int src = singleBuffer(p, "x");
      if (src >= 0 && isFloat(src) && bufs[x].elem.isF32() &&
          !written.contains(src) && onlyReadBy(x, pi, int(ci))) {
        un.g = src;
        un.dropped.push_back(pi);
      }
    }
    fused[u] = un;
  }
  if (fused.empty())
    return;

  // Rewrite. Replacements keep the position of the call they replace.
  llvm::DenseSet<int> drop;
  for (auto &[u, un] : fused)
    drop.insert(un.dropped.begin(), un.dropped.end());
  CallReplacements replace;
  for (auto [ci, c] : llvm::enumerate(calls)) {
    if (named(c, "multi_tensor_all_finite")) {
      // The unfused checks stay; the fused ones become one unscale check
      // per factor, ANDed into the same flag.
      const auto &ins = c.tensors[tensorSlot(c, "ins")];
      if (llvm::none_of(ins, [&](int b) { return fused.count(b); }))
        continue;
      SmallVector<int, 1> keep;
      llvm::MapVector<int, SmallVector<int, 1>> byInv;
      for (int b : ins) {
        auto it = fused.find(b);
        if (it == fused.end())
          keep.push_back(b);
        else
          byInv[it->second.inv].push_back(it->second.g);
      }
      int flag = singleBuffer(c, "all_finite");
      auto reset = cast<IntegerAttr>(c.attrs.get("reset")).getInt();
      SmallVector<PlannedCall, 2> now;
      auto attrs = [&](size_t n) {
        NamedAttrList a = c.attrs;
        a.set("n", i64(n));
        a.set("reset", i32(now.empty() ? reset : 0));
        return a;
      };
      if (!keep.empty())
        now.push_back(plannedCall("multi_tensor_all_finite",
                                  {{"ins", keep}, {"all_finite", {flag}}},
                                  attrs(keep.size()), c.loc));
      for (auto &[inv, gs] : byInv)
        now.push_back(plannedCall(
            "multi_tensor_unscale_check",
            {{"ins", gs}, {"inv_scale", {inv}}, {"all_finite", {flag}}},
            attrs(gs.size()), c.loc));
      replace[int(ci)] = std::move(now);
      continue;
    }
    if (!named(c, "where"))
      continue;
    auto it = fused.find(singleBuffer(c, "a"));
    if (it == fused.end())
      continue;
    const Unscaled &un = it->second;
    int cond = singleBuffer(c, "cond"), y = singleBuffer(c, "y");
    NamedAttrList attrs;
    attrs.set("node", c.attrs.get("node"));
    // The gate read only as InPlaceAccumulator's value: gate into the
    // accumulator, where the accumulation was.
    int acc = -1;
    if (uses[y].size() == 2 && !outputs.contains(y))
      for (auto [ri, si] : uses[y])
        if (ri != int(ci) && named(calls[ri], "inplace_accumulate") &&
            si == tensorSlot(calls[ri], "value"))
          acc = ri;
    if (acc >= 0) {
      PlannedCall &a = calls[acc];
      NamedAttrList aattrs;
      aattrs.set("node", a.attrs.get("node"));
      replace[acc].push_back(
          plannedCall("unscale_gate_accumulate",
                      {{"buffer", a.tensors[tensorSlot(a, "buffer")]},
                       {"x", {un.g}},
                       {"inv_scale", {un.inv}},
                       {"gate", {cond}},
                       {"overwrite", a.tensors[tensorSlot(a, "overwrite")]},
                       {"updated", a.tensors[tensorSlot(a, "updated")]}},
                      aattrs, a.loc));
      drop.insert(ci);
      continue;
    }
    replace[ci].push_back(plannedCall(
        "unscale_gate",
        {{"x", {un.g}}, {"inv_scale", {un.inv}}, {"gate", {cond}}, {"y", {y}}},
        attrs, c.loc));
  }
  spliceCalls(drop, replace);
}

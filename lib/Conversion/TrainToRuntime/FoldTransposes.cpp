//===- FoldTransposes.cpp - transposes into GEMM operand flags ------------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// Exported models multiply by transposed weights (a Linear layer is
// MatMul(x, Transpose(W))), and their gradient graphs transpose the weight
// gradient back (Transpose(MatMul(...))). Planned as written, each is a copy
// of the matrix and a launch, every step. The GEMM kernels take the
// transposition as a flag instead:
//
//   transpose(x) -> t, read only as a product's operand:
//       the product reads x with that operand's trans flag flipped;
//   a product -> y, read only by transpose(y) -> z:
//       z = (A B)^T = B^T A^T, one product with the operands swapped.
//
// Only transposes of the last two dims (leading dims in place) fold: the
// products are matrix products over the last two dims, batched over the
// rest. The same products are summed in the same order, so the results are
// bit-identical on the CPU backend; cuBLASLt may pick another algorithm for
// the other layout.
//
//===----------------------------------------------------------------------===//

#include "PlannedProgram.h"

#include "llvm/ADT/DenseSet.h"

using namespace amp::lowering;

namespace {

/// A transpose of the last two dims of a rank >= 2 tensor.
bool swapsLastTwo(const PlannedCall &c) {
  auto perm = dyn_cast_or_null<DenseI64ArrayAttr>(c.attrs.get("perm"));
  if (!perm || perm.size() < 2)
    return false;
  ArrayRef<int64_t> p = perm.asArrayRef();
  int64_t r = p.size();
  for (int64_t i = 0; i + 2 < r; ++i)
    if (p[i] != i)
      return false;
  return p[r - 2] == r - 1 && p[r - 1] == r - 2;
}

bool isProduct(const PlannedCall &c) {
  StringRef n = c.sig->name;
  return n == "matmul" || n == "fused_matmul" || n == "gemm";
}

} // namespace

void PlannedProgram::foldTransposes() {
  CallUses cu = callUses();
  // References, not structured bindings: lambdas below capture them.
  const llvm::DenseSet<int> &written = cu.written, &outputs = cu.outputs;
  auto &uses = cu.uses;
  auto temp = [&](int b) {
    return b >= 0 && bufs[b].kind == Buffer::Temp && !outputs.contains(b) &&
           !written.contains(b);
  };
  // A product in fused_matmul's or gemm's form: operands, flags, alpha.
  struct Product {
    int a, b, c, y;
    int64_t ta, tb;
    double alpha, beta;
  };
  auto productOf = [&](const PlannedCall &c) -> std::optional<Product> {
    Product p{singleBuffer(c, "a"),
              singleBuffer(c, "b"),
              -1,
              singleBuffer(c, "y"),
              0,
              0,
              1.0,
              0.0};
    if (p.a < 0 || p.b < 0 || p.y < 0 || shapeOf(p.a).size() < 2 ||
        shapeOf(p.b).size() < 2)
      return std::nullopt; // matmul's 1-D promotion: not a flag
    auto flag = [&](StringRef n) {
      auto a = dyn_cast_or_null<IntegerAttr>(c.attrs.get(n));
      return a ? a.getInt() : 0;
    };
    auto real = [&](StringRef n, double d) {
      auto a = dyn_cast_or_null<FloatAttr>(c.attrs.get(n));
      return a ? a.getValueAsDouble() : d;
    };
    p.ta = flag("trans_a");
    p.tb = flag("trans_b");
    p.alpha = real("alpha", 1.0);
    if (c.sig->name == StringRef("gemm")) {
      int s = tensorSlot(c, "c");
      if (!c.tensors[s].empty())
        p.c = c.tensors[s].front();
      p.beta = real("beta", 0.0);
    }
    return p;
  };
  auto emit = [&](const PlannedCall &like, const Product &p) {
    NamedAttrList attrs;
    attrs.set("node", like.attrs.get("node"));
    attrs.set("trans_a", i32(p.ta));
    attrs.set("trans_b", i32(p.tb));
    attrs.set("alpha", f32(p.alpha));
    if (like.sig->name == StringRef("gemm")) {
      attrs.set("beta", f32(p.beta));
      SmallVector<int, 1> c;
      if (p.c >= 0)
        c.push_back(p.c);
      return plannedCall("gemm",
                         {{"a", {p.a}}, {"b", {p.b}}, {"c", c}, {"y", {p.y}}},
                         attrs, like.loc);
    }
    return plannedCall("fused_matmul",
                       {{"a", {p.a}}, {"b", {p.b}}, {"y", {p.y}}}, attrs,
                       like.loc);
  };

  llvm::DenseSet<int> drop;
  CallReplacements replace; // one call each
  // The current form of call ci (a product may be rewritten twice: an
  // operand and its result).
  auto current = [&](int ci) -> PlannedCall & {
    auto it = replace.find(ci);
    return it == replace.end() ? calls[ci] : it->second.front();
  };
  for (auto [ti, t] : llvm::enumerate(calls)) {
    if (t.sig->name != StringRef("transpose") || !swapsLastTwo(t))
      continue;
    int x = singleBuffer(t, "x"), y = singleBuffer(t, "y");
    if (x < 0 || y < 0 || bufs[y].kind != Buffer::Temp || written.contains(y) ||
        written.contains(x))
      continue;
    // Operand side: every reader of y is a product reading it as a or b.
    bool operands = !uses[y].empty();
    for (auto [ri, si] : uses[y]) {
      if (ri == int(ti))
        continue;
      const PlannedCall &r = current(ri);
      operands = operands && isProduct(r) && productOf(r) &&
                 (si == tensorSlot(r, "a") || si == tensorSlot(r, "b"));
    }
    if (operands && uses[y].size() > 1 && !outputs.contains(y)) {
      for (auto [ri, si] : uses[y]) {
        if (ri == int(ti))
          continue;
        PlannedCall &r = current(ri);
        Product p = *productOf(r);
        if (si == tensorSlot(r, "a")) {
          p.a = x;
          p.ta = !p.ta;
        } else {
          p.b = x;
          p.tb = !p.tb;
        }
        replace.insert_or_assign(ri, SmallVector<PlannedCall, 2>{emit(r, p)});
      }
      drop.insert(ti);
      continue;
    }
    // Result side: x is a product's result read only by this transpose,
    // which the product can write in its place (a graph output too).
    if (!temp(x) || uses[x].size() != 2)
      continue;
    int pi = -1;
    for (auto [ci, si] : uses[x])
      if (ci != int(ti) && isProduct(current(ci)) &&
          si == tensorSlot(current(ci), "y"))
        pi = ci;
    if (pi < 0 || pi > int(ti))
      continue;
    std::optional<Product> p = productOf(current(pi));
    if (!p || p->c >= 0)
      continue;
    Product q = *p;
    q.a = p->b;
    q.b = p->a;
    q.ta = !p->tb;
    q.tb = !p->ta;
    q.y = y;
    replace.insert_or_assign(pi,
                             SmallVector<PlannedCall, 2>{emit(current(pi), q)});
    drop.insert(ti);
  }
  if (drop.empty())
    return;
  spliceCalls(drop, replace);
}

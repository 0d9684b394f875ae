//===- LowerMath.cpp - GEMM, reductions, softmax
//---------------------------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// Gemm and MatMul (batched products included), the Reduce* ops, Softmax
// and LogSoftmax.
//
//===----------------------------------------------------------------------===//

#include "LoweringTable.h"

namespace amp::lowering {

FailureOr<bool> GraphLowering::lowerMath(StringRef domain, StringRef type) {
  bool onnx = domain.empty() || domain == "ai.onnx";

  if (onnx && (type == "Gemm" || type == "MatMul")) {
    auto a = in(0), b = in(1);
    if (failed(a) || failed(b))
      return failure();
    Shape sa = shapeOf(*a), sb = shapeOf(*b);
    if (type == "MatMul") {
      if (sa.size() < 2 || sb.size() < 2)
        return err() << "1-D MatMul operands are not supported yet";
      Shape ba(sa.begin(), sa.end() - 2), bb(sb.begin(), sb.end() - 2), s;
      if (!broadcast({ba, bb}, s) || sa.back() != sb[sb.size() - 2])
        return err() << "MatMul shapes do not agree";
      s.push_back(sa[sa.size() - 2]);
      s.push_back(sb.back());
      auto y = out(0, s);
      if (failed(y))
        return failure();
      return handled(call("matmul", {{"a", {*a}}, {"b", {*b}}, {"y", {*y}}}));
    }
    int64_t ta = attrInt("transA", 0), tb = attrInt("transB", 0);
    // Deeploy's training graphs have Gemm on operands of rank 3 (invalid
    // ONNX; its runtime multiplies the last two dims batched over the
    // rest) without C: that is FusedMatMul.
    if ((sa.size() > 2 || sb.size() > 2) && sa.size() >= 2 && sb.size() >= 2 &&
        (!has(2) || attrFloat("beta", 1.0) == 0.0))
      return handled(lowerBatchedMatMul(ta, tb, attrFloat("alpha", 1.0)));
    if (sa.size() != 2 || sb.size() != 2)
      return err() << "Gemm operands must be 2-D (or, as Deeploy writes "
                      "them, of rank 3 and more without C)";
    int64_t m = ta ? sa[1] : sa[0], ka = ta ? sa[0] : sa[1];
    int64_t kb = tb ? sb[1] : sb[0], n = tb ? sb[0] : sb[1];
    if (ka != kb)
      return err() << "Gemm inner dims " << ka << " and " << kb << " differ";
    SmallVector<TArg> ts = {{"a", {*a}}, {"b", {*b}}};
    if (failed(optionalIn(ts, "c", 2)))
      return failure();
    auto y = out(0, {m, n});
    if (failed(y))
      return failure();
    ts.push_back({"y", {*y}});
    return handled(call("gemm", ts,
                        {{"trans_a", i32(ta)},
                         {"trans_b", i32(tb)},
                         {"alpha", f32(attrFloat("alpha", 1.0))},
                         {"beta", f32(attrFloat("beta", 1.0))}}));
  }
  if (onnx && (type == "ReduceSum" || type == "ReduceMean" ||
               type == "ReduceMax" || type == "ReduceMin")) {
    auto x = in(0);
    if (failed(x))
      return failure();
    auto axesOr = axesOf(1);
    if (failed(axesOr))
      return failure();
    SmallVector<int64_t> axes = *axesOr;
    int64_t keep = attrInt("keepdims", 1);
    int64_t noop = attrInt("noop_with_empty_axes", 0);
    auto s = reducedShape(shapeOf(*x), axes, keep, noop);
    if (failed(s))
      return failure();
    auto y = out(0, *s);
    if (failed(y))
      return failure();
    Type e = bufs[*x].elem;
    bool ints = type != "ReduceMean" && (e.isInteger(64) || e.isInteger(32));
    if (!isa<FloatType>(e) && !ints)
      return err() << "input 0 has element type " << e << "; the runtime's "
                   << type << " takes f32, f16, bf16"
                   << (type == "ReduceMean" ? "" : ", i64 or i32");
    StringRef kernel = llvm::StringSwitch<StringRef>(type)
                           .Case("ReduceSum", "reduce_sum")
                           .Case("ReduceMean", "reduce_mean")
                           .Case("ReduceMax", "reduce_max")
                           .Default("reduce_min");
    return handled(call(kernel, {{"x", {*x}}, {"y", {*y}}},
                        reduceAttrs(axes, keep, noop)));
  }
  if (onnx && (type == "Softmax" || type == "LogSoftmax")) {
    return handled(sameShapeCall(type == "Softmax" ? "softmax" : "log_softmax",
                                 {{"axis", i64(attrInt("axis", -1))}}));
  }
  return false;
}

FailureOr<Shape> GraphLowering::reducedShape(ArrayRef<int64_t> sx,
                                             ArrayRef<int64_t> axes,
                                             bool keepdims, bool noop) {
  int64_t rank = sx.size();
  SmallVector<bool> red(rank, axes.empty() && !noop);
  for (int64_t ax : axes) {
    if (ax < -rank || ax >= rank) {
      err() << "axis " << ax << " out of range";
      return failure();
    }
    red[ax < 0 ? ax + rank : ax] = true;
  }
  Shape s;
  for (int64_t d = 0; d < rank; ++d)
    if (!red[d])
      s.push_back(sx[d]);
    else if (keepdims)
      s.push_back(1);
  return s;
}

LogicalResult GraphLowering::lowerBatchedMatMul(int64_t ta, int64_t tb,
                                                double alpha) {
  auto a = in(0), b = in(1);
  if (failed(a) || failed(b))
    return failure();
  Shape sa = shapeOf(*a), sb = shapeOf(*b);
  if (sa.size() < 2 || sb.size() < 2)
    return err() << "operands must have rank 2 or more";
  int64_t m = sa[sa.size() - (ta ? 1 : 2)], ka = sa[sa.size() - (ta ? 2 : 1)];
  int64_t kb = sb[sb.size() - (tb ? 1 : 2)], n = sb[sb.size() - (tb ? 2 : 1)];
  if (ka != kb)
    return err() << "inner dims " << ka << " and " << kb << " differ";
  Shape ba(sa.begin(), sa.end() - 2), bb(sb.begin(), sb.end() - 2), s;
  if (!broadcast({ba, bb}, s))
    return err() << "batch dims do not broadcast";
  s.push_back(m);
  s.push_back(n);
  auto y = out(0, s);
  if (failed(y))
    return failure();
  return call(
      "fused_matmul", {{"a", {*a}}, {"b", {*b}}, {"y", {*y}}},
      {{"trans_a", i32(ta)}, {"trans_b", i32(tb)}, {"alpha", f32(alpha)}});
}

void GraphLowering::registerMath(FamilyTable &t) {
  t.add(kOnnxDomain,
        {"Gemm", "MatMul", "ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin",
         "Softmax", "LogSoftmax"},
        &GraphLowering::lowerMath);
}

} // namespace amp::lowering

//===- LowerShape.cpp - reshapes and transposes
//----------------------------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// Reshape, Flatten, Squeeze, Unsqueeze (a copy, or a view once
// AliasReshapes.cpp has run) and Transpose.
//
//===----------------------------------------------------------------------===//

#include "LoweringTable.h"

namespace amp::lowering {

FailureOr<Shape> GraphLowering::reshapedShape(StringRef type,
                                              ArrayRef<int64_t> sx) {
  int64_t rank = sx.size();
  Shape s;
  if (type == "Flatten") {
    int64_t axis = attrInt("axis", 1);
    if (axis < -rank || axis > rank) {
      err() << "axis " << axis << " out of range";
      return failure();
    }
    if (axis < 0)
      axis += rank;
    s = {numel(sx.take_front(axis)), numel(sx.drop_front(axis))};
  } else if (type == "Reshape") {
    auto h = hostInts(1);
    if (failed(h))
      return failure();
    int64_t known = 1, infer = -1;
    for (auto [i, d] : llvm::enumerate(*h)) {
      int64_t v = d;
      if (v == 0 && !attrInt("allowzero", 0))
        v = int64_t(i) < rank ? sx[i] : 0;
      if (v < -1 || (v == -1 && infer >= 0)) {
        err() << "bad target shape entry " << d;
        return failure();
      }
      if (v == -1)
        infer = i;
      else
        known *= v;
      s.push_back(v);
    }
    if (infer >= 0)
      s[infer] = known ? numel(sx) / known : 0;
  } else {
    auto axesOr = axesOf(1);
    if (failed(axesOr))
      return failure();
    SmallVector<int64_t> axes = *axesOr;
    int64_t outRank = type == "Squeeze" ? rank : rank + int64_t(axes.size());
    SmallVector<bool> marked(outRank, type == "Squeeze" && axes.empty());
    for (int64_t a : axes) {
      if (a < -outRank || a >= outRank) {
        err() << "axis " << a << " out of range";
        return failure();
      }
      marked[a < 0 ? a + outRank : a] = true;
    }
    if (type == "Squeeze") {
      for (int64_t d = 0; d < rank; ++d)
        if (!(marked[d] && sx[d] == 1))
          s.push_back(sx[d]);
    } else {
      for (int64_t d = 0, k = 0; d < outRank; ++d)
        s.push_back(marked[d] ? 1 : sx[k++]);
    }
  }
  if (numel(s) != numel(sx)) {
    err() << "reshape changes the element count";
    return failure();
  }
  return s;
}

FailureOr<bool> GraphLowering::lowerShape(StringRef domain, StringRef type) {
  bool onnx = domain.empty() || domain == "ai.onnx";

  if (onnx && (type == "Reshape" || type == "Flatten" || type == "Squeeze" ||
               type == "Unsqueeze")) {
    auto sx = shapeOfInput(0);
    if (!sx)
      return err() << "input 0 has no buffer";
    auto s = reshapedShape(type, *sx);
    if (failed(s))
      return failure();
    if (auto h = hostIn(0)) {
      h->shape = *s;
      setHost(0, std::move(*h));
      return true;
    }
    auto x = in(0);
    if (failed(x))
      return failure();
    auto y = out(0, *s);
    if (failed(y))
      return failure();
    return handled(call("reshape", {{"x", {*x}}, {"y", {*y}}}));
  }
  if (onnx && type == "Transpose") {
    auto x = in(0);
    if (failed(x))
      return failure();
    const Shape &sx = shapeOf(*x);
    SmallVector<int64_t> perm;
    if (auto p = attrInts("perm"))
      perm = *p;
    else
      for (int64_t d = sx.size() - 1; d >= 0; --d)
        perm.push_back(d);
    Shape s;
    for (int64_t p : perm)
      s.push_back(sx[p]);
    auto y = out(0, s);
    if (failed(y))
      return failure();
    return handled(call("transpose", {{"x", {*x}}, {"y", {*y}}},
                        {{"perm", ints(perm)}, {"nperm", i64(perm.size())}}));
  }
  return false;
}

void GraphLowering::registerShape(FamilyTable &t) {
  t.add(kOnnxDomain,
        {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Transpose"},
        &GraphLowering::lowerShape);
}

} // namespace amp::lowering

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

FailureOr<bool> GraphLowering::lowerShape(StringRef domain, StringRef type) {
  bool onnx = domain.empty() || domain == "ai.onnx";

  if (onnx && (type == "Reshape" || type == "Flatten" || type == "Squeeze" ||
               type == "Unsqueeze")) {
    auto sx = shapeOfInput(0);
    if (!sx)
      return err() << "input 0 has no buffer";
    // The target shape or the axes: input 1 where the node has it (known
    // here; a value on the host is folded before, HostFold.cpp).
    std::optional<SmallVector<int64_t>> input1;
    if (type == "Reshape" || has(1)) {
      auto h = hostInts(1);
      if (failed(h))
        return failure();
      input1 = *h;
    }
    std::string why;
    std::optional<Shape> s = reshapedShape(
        current, *sx,
        input1 ? std::optional<ArrayRef<int64_t>>(*input1) : std::nullopt, why);
    if (!s)
      return err() << why;
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

//===- Products.cpp - the GEMM calls of a lowered function ----------------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//

#include "Products.h"

using namespace mlir;
using namespace amp;
using namespace amp::lowering;

namespace {

int64_t rank(Value buffer) {
  return cast<MemRefType>(buffer.getType()).getRank();
}

} // namespace

bool amp::lowering::isProduct(amprt::CallOp call) {
  StringRef k = call.getKernel();
  return k == "matmul" || k == "fused_matmul" || k == "gemm";
}

std::optional<Product> amp::lowering::productOf(amprt::CallOp call) {
  Product p;
  p.a = call.getSingleTensor("a");
  p.b = call.getSingleTensor("b");
  p.y = call.getSingleTensor("y");
  if (!p.a || !p.b || !p.y || rank(p.a) < 2 || rank(p.b) < 2)
    return std::nullopt;
  auto flag = [&](StringRef n) -> int64_t {
    auto a = call->getAttrOfType<IntegerAttr>(n);
    return a ? a.getInt() : 0;
  };
  auto real = [&](StringRef n, double d) {
    auto a = call->getAttrOfType<FloatAttr>(n);
    return a ? a.getValueAsDouble() : d;
  };
  p.ta = flag("trans_a");
  p.tb = flag("trans_b");
  p.alpha = real("alpha", 1.0);
  if (call.getKernel() == "gemm") {
    OperandRange c = call.getTensorParam("c");
    if (!c.empty())
      p.c = c.front();
    p.beta = real("beta", 0.0);
  }
  return p;
}

SmallVector<NamedAttribute> amp::lowering::productAttrs(Builder &builder,
                                                        amprt::CallOp like,
                                                        const Product &p) {
  SmallVector<NamedAttribute> attrs;
  if (Attribute node = like->getAttr("node"))
    attrs.push_back(builder.getNamedAttr("node", node));
  attrs.push_back(
      builder.getNamedAttr("trans_a", builder.getI32IntegerAttr(p.ta)));
  attrs.push_back(
      builder.getNamedAttr("trans_b", builder.getI32IntegerAttr(p.tb)));
  attrs.push_back(builder.getNamedAttr(
      "alpha", builder.getFloatAttr(builder.getF32Type(), p.alpha)));
  return attrs;
}

void amp::lowering::replaceProduct(PatternRewriter &rewriter,
                                   amprt::CallOp like, const Product &p) {
  Type f32 = rewriter.getF32Type();
  SmallVector<NamedAttribute> attrs = productAttrs(rewriter, like, p);
  rewriter.setInsertionPoint(like);
  if (like.getKernel() == "gemm") {
    attrs.push_back(
        rewriter.getNamedAttr("beta", rewriter.getFloatAttr(f32, p.beta)));
    amprt::createCall(rewriter, like.getLoc(), "gemm",
                      {{"a", p.a},
                       {"b", p.b},
                       {"c", p.c ? ValueRange(p.c) : ValueRange()},
                       {"y", p.y}},
                      attrs);
  } else {
    amprt::createCall(rewriter, like.getLoc(), "fused_matmul",
                      {{"a", p.a}, {"b", p.b}, {"y", p.y}}, attrs);
  }
  rewriter.eraseOp(like);
}

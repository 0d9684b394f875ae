//===- Products.h - the GEMM calls of a lowered function --------*- C++ -*-===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// Private to lib/Conversion/TrainToRuntime: matmul, fused_matmul and gemm
// calls read as one form, y = alpha op(a) op(b) (+ beta c), for the fusions
// that rewrite products (FoldTransposes.cpp, FuseAttention.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef AMP_LIB_CONVERSION_TRAINTORUNTIME_PRODUCTS_H
#define AMP_LIB_CONVERSION_TRAINTORUNTIME_PRODUCTS_H

#include "amp/Dialect/AmpRT/AmpRT.h"
#include "mlir/IR/PatternMatch.h"

#include <optional>

namespace amp::lowering {

/// Whether `call` is a matmul, fused_matmul or gemm.
bool isProduct(amprt::CallOp call);

/// A product in fused_matmul's or gemm's form: operands, flags, alpha (and
/// gemm's c and beta).
struct Product {
  mlir::Value a, b, c, y;
  int64_t ta = 0, tb = 0;
  double alpha = 1.0, beta = 0.0;
};

/// `call` (a product) as a Product, or nullopt where an operand or the
/// result is no single buffer or an operand has rank < 2 (matmul's 1-D
/// promotion: not a flag).
std::optional<Product> productOf(amprt::CallOp call);

/// The attributes of a call that computes p's product: `like`'s node, p's
/// trans flags and alpha (a gemm adds beta).
llvm::SmallVector<mlir::NamedAttribute>
productAttrs(mlir::Builder &builder, amprt::CallOp like, const Product &p);
/// Replaces the product `like` by `p`, in its place: a gemm for a gemm, else
/// a fused_matmul, named after `like`'s node.
void replaceProduct(mlir::PatternRewriter &rewriter, amprt::CallOp like,
                    const Product &p);

} // namespace amp::lowering

#endif // AMP_LIB_CONVERSION_TRAINTORUNTIME_PRODUCTS_H

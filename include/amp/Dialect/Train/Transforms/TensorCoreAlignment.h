//===- TensorCoreAlignment.h - GEMM/conv sizes against Tensor Cores -*- C++
//-*-===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// Tensor Cores run an fp16/bf16 GEMM at full rate only when its sizes are
// multiples of 8 elements (16 bytes; cuBLAS and cuDNN pad or fall back
// otherwise): a GEMM's M, N and K, a convolution's input and output
// channels (cuDNN's implicit GEMM). The AMP pass checks every node it
// converts (docs/AutoMixedPrecision.md, "Tensor Core alignment").
//
//===----------------------------------------------------------------------===//

#ifndef AMP_DIALECT_TRAIN_TRANSFORMS_TENSORCOREALIGNMENT_H
#define AMP_DIALECT_TRAIN_TRANSFORMS_TENSORCOREALIGNMENT_H

#include "mlir/IR/Operation.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace amp::train {

/// The multiple of elements Tensor Cores want of every GEMM size.
inline constexpr int64_t kTensorCoreMultiple = 8;

/// One size of a GEMM or convolution: its name (M, N, K; C_in, C_out) and
/// value, -1 when the graph leaves it symbolic.
struct TensorCoreSize {
  std::string name;
  int64_t value = -1;
  /// The next multiple of kTensorCoreMultiple (the size to pad to), or
  /// `value` when it is one already (or symbolic).
  int64_t padTo() const {
    if (value < 0 || value % kTensorCoreMultiple == 0)
      return value;
    return (value / kTensorCoreMultiple + 1) * kTensorCoreMultiple;
  }
  bool aligned() const { return padTo() == value; }
};

/// A GEMM or convolution node's sizes: MatMul, Gemm, com.microsoft
/// FusedMatMul (M, N, K of the product on the last two dims), Conv,
/// com.microsoft ConvGrad (C_in per group, C_out), ConvTranspose (C_in,
/// C_out per group). Nullopt for any other op, and for a product of a
/// vector (rank below 2: no GEMM).
/// `resolve`, when given, sizes a dim the type leaves symbolic (dim `d` of
/// an operand; -1: still unknown).
std::optional<std::vector<TensorCoreSize>> getTensorCoreSizes(
    mlir::Operation *op,
    llvm::function_ref<int64_t(mlir::Value, unsigned)> resolve = nullptr);

} // namespace amp::train

#endif // AMP_DIALECT_TRAIN_TRANSFORMS_TENSORCOREALIGNMENT_H

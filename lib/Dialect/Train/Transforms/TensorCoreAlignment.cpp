//===- TensorCoreAlignment.cpp - GEMM/conv sizes from static shapes ------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// The sizes come from the operands' types: a dim the graph leaves symbolic
// (usually M, the batch times the sequence) is reported as unknown, and
// alignment is judged on the known sizes.
//
//===----------------------------------------------------------------------===//

#include "amp/Dialect/Train/Transforms/TensorCoreAlignment.h"
#include "amp/Dialect/Train/IR/TrainOps.h"

#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;
using namespace amp::train;

namespace {
/// Dim `d` of operand `i` (negative `d` counts from the end): -1 when
/// symbolic; nullopt when the operand has no rank or too few dims.
std::optional<int64_t>
dimOf(Operation *op, unsigned i, int64_t d, int64_t minRank,
      llvm::function_ref<int64_t(Value, unsigned)> resolve) {
  if (i >= op->getNumOperands())
    return std::nullopt;
  auto t = dyn_cast<RankedTensorType>(op->getOperand(i).getType());
  if (!t || t.getRank() < minRank)
    return std::nullopt;
  if (d < 0)
    d += t.getRank();
  if (!t.isDynamicDim(d))
    return t.getDimSize(d);
  return resolve ? resolve(op->getOperand(i), unsigned(d)) : -1;
}

/// An integer ONNX attribute of `op`, 0 when absent.
int64_t attrInt(Operation *op, StringRef name) {
  auto i = dyn_cast_or_null<IntegerAttr>(getOnnxAttribute(op, name));
  return i ? i.getInt() : 0;
}
} // namespace

std::optional<std::vector<TensorCoreSize>> amp::train::getTensorCoreSizes(
    Operation *op, llvm::function_ref<int64_t(Value, unsigned)> resolve) {
  auto node = dyn_cast<OnnxNodeOpInterface>(op);
  if (!node)
    return std::nullopt;
  StringRef domain = node.getOnnxDomain(), type = node.getOnnxOpType();
  bool onnx = domain.empty() || domain == "ai.onnx";
  bool ms = domain == "com.microsoft";
  if ((onnx && (type == "MatMul" || type == "Gemm")) ||
      (ms && type == "FusedMatMul")) {
    bool ta = type != "MatMul" && attrInt(op, "transA");
    bool tb = type != "MatMul" && attrInt(op, "transB");
    auto rows = dimOf(op, 0, ta ? -1 : -2, 2, resolve);
    auto inner = dimOf(op, 0, ta ? -2 : -1, 2, resolve);
    auto cols = dimOf(op, 1, tb ? -2 : -1, 2, resolve);
    if (!rows || !inner || !cols)
      return std::nullopt;
    return std::vector<TensorCoreSize>{
        {"M", *rows}, {"N", *cols}, {"K", *inner}};
  }
  // Weights [C_out, C_in / group, k...] (ConvTranspose: [C_in, C_out /
  // group, k...]); ConvGrad's are its third operand (dY, X, W).
  bool conv = onnx && type == "Conv", grad = ms && type == "ConvGrad";
  bool transposed = onnx && type == "ConvTranspose";
  if (!conv && !grad && !transposed)
    return std::nullopt;
  unsigned w = grad ? 2 : 1;
  auto d0 = dimOf(op, w, 0, 3, resolve), d1 = dimOf(op, w, 1, 3, resolve);
  if (!d0 || !d1)
    return std::nullopt;
  if (transposed)
    return std::vector<TensorCoreSize>{{"C_in", *d0}, {"C_out", *d1}};
  return std::vector<TensorCoreSize>{{"C_in", *d1}, {"C_out", *d0}};
}

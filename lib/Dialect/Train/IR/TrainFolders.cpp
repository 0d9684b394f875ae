//===- TrainFolders.cpp - folders of the train dialect's ONNX ops --------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// Shape queries are constants once their input's type is static (after
// train-bind-dims has bound the graph's symbolic dims, or where the graph
// gave static value_info): `Shape` (with ONNX's start/end, clamped) and
// `Size` fold to i64 tensors, which the dialect materializes as ONNX
// `Constant` nodes. The op list is utils/gen_onnx_ods.py's FOLDERS.
//
//===----------------------------------------------------------------------===//

#include "amp/Dialect/Train/IR/TrainDialect.h"
#include "amp/Dialect/Train/IR/TrainOps.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;
using namespace amp::train;

namespace {
/// The static shape of `v`, or nullopt.
std::optional<ArrayRef<int64_t>> staticShape(Value v) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  if (!t || !t.hasStaticShape())
    return std::nullopt;
  return t.getShape();
}

/// An i64 tensor of `shape` holding `values`, when `result` (the folded
/// op's result) may have that type: a tensor of i64 (or of unknown
/// element type) whose static dims agree, or no tensor type at all.
Attribute i64Tensor(Value result, ArrayRef<int64_t> shape,
                    ArrayRef<int64_t> values) {
  auto i64 = IntegerType::get(result.getContext(), 64);
  auto type = RankedTensorType::get(shape, i64);
  if (auto rt = dyn_cast<RankedTensorType>(result.getType())) {
    if (rt.getRank() != type.getRank())
      return {};
    for (auto [a, b] : llvm::zip(rt.getShape(), shape))
      if (!ShapedType::isDynamic(a) && a != b)
        return {};
    if (rt.getElementType().isIntOrFloat() && rt.getElementType() != i64)
      return {};
  }
  return DenseElementsAttr::get(type, values);
}
} // namespace

OpFoldResult ShapeOp::fold(FoldAdaptor) {
  std::optional<ArrayRef<int64_t>> s = staticShape(getData());
  if (!s)
    return {};
  int64_t rank = s->size();
  // ONNX: negative axes count from the end; both clamp to [0, rank].
  auto axis = [&](std::optional<int64_t> a, int64_t dflt) {
    int64_t v = a.value_or(dflt);
    if (v < 0)
      v += rank;
    return std::clamp<int64_t>(v, 0, rank);
  };
  int64_t start = axis(getStart(), 0), end = axis(getEnd(), rank);
  ArrayRef<int64_t> dims =
      start < end ? s->slice(start, end - start) : ArrayRef<int64_t>();
  return i64Tensor(getShape(), {int64_t(dims.size())}, dims);
}

OpFoldResult SizeOp::fold(FoldAdaptor) {
  std::optional<ArrayRef<int64_t>> s = staticShape(getData());
  if (!s)
    return {};
  int64_t n = 1;
  for (int64_t d : *s)
    n *= d;
  return i64Tensor(getSize(), {}, {n});
}

Operation *TrainDialect::materializeConstant(OpBuilder &builder,
                                             Attribute value, Type type,
                                             Location loc) {
  if (!isa<ElementsAttr>(value))
    return nullptr;
  return ConstantOp::create(builder, loc, TypeRange{type}, ValueRange{},
                            {builder.getNamedAttr("value", value)});
}

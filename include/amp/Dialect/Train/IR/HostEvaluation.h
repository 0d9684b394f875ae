//===- HostEvaluation.h - ONNX shape computations on the host ---*- C++ -*-===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// Exported training graphs compute reshape targets, gather indices and
// scale factors from `Shape` and `Size` of activations (PyTorch's exporter
// and ORT's gradient builder both do). Once shapes are static these are
// constants. evaluateOnHost computes such a node from what is known of its
// inputs (small host values, static shapes, element types): `Shape`/`Size`
// of any value of known shape, and small integer or float computations whose
// inputs are all known. Two users, one rule: the train dialect's
// canonicalization (TrainFolders.cpp: nodes on constants and on static graph
// inputs become Constant nodes) and the lowering (HostFold.cpp: also the
// shapes it computes for activations).
//
//===----------------------------------------------------------------------===//

#ifndef AMP_DIALECT_TRAIN_IR_HOSTEVALUATION_H
#define AMP_DIALECT_TRAIN_IR_HOSTEVALUATION_H

#include "mlir/IR/BuiltinAttributeInterfaces.h"
#include "mlir/IR/Operation.h"
#include "mlir/IR/PatternMatch.h"

#include "llvm/ADT/SmallVector.h"

#include <cstdint>
#include <optional>
#include <string>

namespace amp::train {

using HostShape = llvm::SmallVector<int64_t, 4>;

/// Largest host tensor evaluated (elements). Anything bigger is real data
/// and runs on the device.
inline constexpr int64_t kMaxHostElements = 1 << 16;

/// A small tensor known on the host, values held as doubles (exact for every
/// integer a shape computation produces and for f32/f16/bf16).
struct HostTensor {
  HostShape shape;
  mlir::Type elem;
  llvm::SmallVector<double> v;
};

inline int64_t numel(llvm::ArrayRef<int64_t> s) {
  int64_t n = 1;
  for (int64_t d : s)
    n *= d;
  return n;
}

/// Numpy broadcasting of `shapes` into `out`; false when they do not
/// broadcast.
bool broadcast(llvm::ArrayRef<HostShape> shapes, HostShape &out);

/// A host value as an int64: exact below 2^53 in magnitude, saturated past
/// the ends, so INT64_MAX / INT64_MIN (Slice's "to the end"), which become
/// 2^63 as doubles, come back as themselves instead of overflowing.
inline int64_t hostInt(double d) {
  if (d != d)
    return 0;
  if (d >= 9223372036854775807.0)
    return INT64_MAX;
  if (d <= -9223372036854775808.0)
    return INT64_MIN;
  return int64_t(d);
}

/// The values of a dense or dense_resource attribute of at most
/// kMaxHostElements int or float elements, or nullopt.
std::optional<HostTensor> readHost(mlir::ElementsAttr attr);
/// A dense attribute holding `h` (values rounded to h.elem).
mlir::ElementsAttr toAttr(const HostTensor &h);

/// ONNX Slice normalized against a static shape: per dim the first index,
/// the step and the resulting size.
struct SliceRange {
  HostShape start, step, shape;
};
std::optional<SliceRange>
sliceRange(llvm::ArrayRef<int64_t> shape, llvm::ArrayRef<int64_t> starts,
           llvm::ArrayRef<int64_t> ends, llvm::ArrayRef<int64_t> axes,
           llvm::ArrayRef<int64_t> steps, std::string &why);

/// The output shape of Reshape, Flatten, Squeeze or Unsqueeze node `op` of
/// an input of shape `sx`. `input1` is the node's input 1 as integers (the
/// target shape of Reshape, the axes of opset-13 Squeeze/Unsqueeze) when
/// it has one. nullopt with `why` set when the node is ill-formed.
std::optional<HostShape>
reshapedShape(mlir::Operation *op, llvm::ArrayRef<int64_t> sx,
              std::optional<llvm::ArrayRef<int64_t>> input1, std::string &why);

/// What is known of a node's operands on the host, one entry per operand:
/// its value (null if not known), its static shape, its element type (null
/// if not an int or float).
struct HostOperands {
  llvm::ArrayRef<mlir::ElementsAttr> values;
  llvm::ArrayRef<std::optional<HostShape>> shapes;
  llvm::ArrayRef<mlir::Type> elems;
};

/// Evaluates ONNX node `op` on the host. True: `results` holds one value per
/// result (null for a result the node leaves unused). False: the node is not
/// a shape computation, or an input is not known or too big. Failure: the
/// node is ill-formed on these inputs (`why` says how).
mlir::FailureOr<bool>
evaluateOnHost(mlir::Operation *op, const HostOperands &in,
               llvm::SmallVectorImpl<mlir::ElementsAttr> &results,
               std::string &why);

/// Whether a Constant node of `value` may stand for a result of type `t`: a
/// shaped type whose element type is the value's or unknown and whose static
/// dims agree, or no shaped type.
bool mayReplaceWithConstant(mlir::Type t, mlir::ElementsAttr value);

/// Replaces ONNX node `op` by one Constant node per result of `values` (null:
/// a result without uses, which goes), each with the node's train.*
/// attributes, named after the node (the second result's `<name>_1`, ...)
/// and its output, and of the result's type (`valueTypes`: of the value's
/// type; the caller then updates what must follow, a graph's result types).
/// The caller checked mayReplaceWithConstant.
void replaceWithConstants(mlir::RewriterBase &rewriter, mlir::Operation *op,
                          llvm::ArrayRef<mlir::ElementsAttr> values,
                          bool valueTypes = false);

} // namespace amp::train

#endif // AMP_DIALECT_TRAIN_IR_HOSTEVALUATION_H

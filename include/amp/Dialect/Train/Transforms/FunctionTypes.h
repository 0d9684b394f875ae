//===- FunctionTypes.h - a model-local function typed from its calls -*- C++
//-*-===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// An ONNX FunctionProto has no types: its inputs take the types of each
// call, and the importer gives its values `!train.unknown`. The AMP pass
// paints a model-local function (train.function) as it paints a graph, so
// the function first gets the types its calls give it: each argument the
// element type every call site passes it, each value of its body the
// element type its ONNX schema's type constraint binds it to (an output
// constrained like an input takes that input's; a fixed-type output its
// type; a Cast its `to`), as unranked tensors. The exporter writes a
// function's nodes only, so these types never reach the ONNX file.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_DIALECT_TRAIN_TRANSFORMS_FUNCTIONTYPES_H
#define AMP_DIALECT_TRAIN_TRANSFORMS_FUNCTIONTYPES_H

#include "amp/Dialect/Train/IR/TrainOps.h"

#include "mlir/IR/BuiltinOps.h"

#include <string>

namespace amp::train {

/// Types `fn` from the calls to it in `module` (a call's untyped input says
/// nothing; the calls' untyped results then take the function's result
/// types); on failure (no call, calls that disagree on an argument's
/// element type, an argument no call types) returns why and leaves `fn`
/// unchanged.
std::optional<std::string> typeFunctionFromCalls(mlir::ModuleOp module,
                                                 FunctionOp fn);

} // namespace amp::train

#endif // AMP_DIALECT_TRAIN_TRANSFORMS_FUNCTIONTYPES_H

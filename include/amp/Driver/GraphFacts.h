//===- GraphFacts.h - what the execution layer reads off a graph -*- C++
//-*-===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// Questions amp-run asks of an imported ONNX graph before lowering it: which
// nodes are optimizers (an optimizer model holds one), and which integer
// inputs have values known before the run, so that shape computations over
// them fold (the trainer's frozen parameters, the graph runner's inputs).
//
//===----------------------------------------------------------------------===//

#ifndef AMP_DRIVER_GRAPHFACTS_H
#define AMP_DRIVER_GRAPHFACTS_H

#include "amp/Dialect/Train/IR/TrainOps.h"
#include "amp/Driver/HostTensor.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"

namespace amp::driver {

/// The ONNX op_type of a node, typed or generic ("" for other ops).
llvm::StringRef opTypeOf(mlir::Operation *op);

/// The optimizer nodes of onnxruntime-training and Deeploy's default-domain
/// SGD that the lowering implements (LowerOptimizer.cpp), for messages.
inline constexpr llvm::StringLiteral kLoweredOptimizerOps[] = {
    "AdamWOptimizer", "AdamOptimizer", "SGDOptimizerV2", "SGD"};
/// ai.onnx.preview.training's optimizers.
inline constexpr llvm::StringLiteral kPreviewOptimizerOps[] = {
    "Adam", "Adagrad", "Momentum"};

/// Whether `op` is an optimizer node (either list above).
bool isOptimizerOp(mlir::Operation *op);
/// Whether `module` holds an optimizer node.
bool containsOptimizer(mlir::ModuleOp module);

/// Replaces the uses of each integer input of `graph` whose value
/// `valueOf(name)` gives (null: unknown) by an initializer holding it, so
/// that shape computations over it fold when lowering. The graph keeps the
/// input (fed as before, now unused). Left alone: tensors of more than
/// 4096 elements, values beyond 2^53 but for INT64_MIN and INT64_MAX (host
/// folding computes in doubles), inputs written back as "<name>.out", and
/// inputs of the ops that update a tensor in place (accumulators,
/// optimizers).
void inlineFrozenIntegers(
    train::GraphOp graph,
    llvm::function_ref<const HostTensor *(llvm::StringRef name)> valueOf);

} // namespace amp::driver

#endif // AMP_DRIVER_GRAPHFACTS_H

//===- CastNames.h - The ONNX names of generated casts ----------*- C++ -*-===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// A pass that inserts train.Cast nodes (the AMP pass inserts about one per
// three nodes) may leave them unnamed: interning two fresh names per cast in
// the MLIRContext is most of the cost of inserting it in a large graph. Such
// a cast is named when the graph is written: by the ONNX exporter directly
// in the protobuf, or by the `train-name-casts` pass that amp-opt runs
// before printing MLIR. Both follow the rule here, so the names are the same
// either way:
//
//   node   <producer>_CastTo<Fp16|Bf16|Fp32>   (producer: the input's node
//          name, `_<result>` added for a node of several outputs, else the
//          input's value name)
//   output <input>_<fp16|bf16|fp32>
//
// each made unique with `_1`, `_2`, ... against the names in use.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_DIALECT_TRAIN_IR_CASTNAMES_H
#define AMP_DIALECT_TRAIN_IR_CASTNAMES_H

#include "amp/Dialect/Train/IR/TrainOps.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include <string>

namespace amp::train {

/// "Fp16", "Bf16" or "Fp32" for a cast to f16, bf16 or f32; "" otherwise.
llvm::StringRef getCastNameSuffix(mlir::Type elementType);

/// Whether `op` is a cast to f16, bf16 or f32 that has no node name.
bool isUnnamedCast(mlir::Operation *op);
/// Whether `op` is a cast to f16, bf16 or f32 whose output has no name.
bool hasUnnamedCastOutput(mlir::Operation *op);

/// The node name `cast` takes before it is made unique; `inputName` is the
/// ONNX name of its input. `nodeNameOf` gives the node name of the input's
/// producer (default: its `train.name`; a writer that names casts outside
/// the IR passes the names it gave).
std::string getCastNodeNameBase(
    CastOp cast, llvm::StringRef inputName,
    llvm::function_ref<llvm::StringRef(mlir::Operation *)> nodeNameOf = {});
/// The output name `cast` takes before it is made unique.
std::string getCastValueNameBase(CastOp cast, llvm::StringRef inputName);

/// Whether `name` has the form of a generated cast node (value) name,
/// `_1`, `_2`, ... included. A name of another form never clashes with
/// one, so the sets of names in use need not hold it.
bool mayBeCastNodeName(llvm::StringRef name);
bool mayBeCastValueName(llvm::StringRef name);

/// `base`, else the first of `base_1`, `base_2`, ... that is not `taken`.
std::string makeUniqueName(llvm::StringRef base,
                           llvm::function_ref<bool(llvm::StringRef)> taken);

} // namespace amp::train

#endif // AMP_DIALECT_TRAIN_IR_CASTNAMES_H

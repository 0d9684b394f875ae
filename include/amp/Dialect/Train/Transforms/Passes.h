//===- Passes.h - Train dialect transformation passes -----------*- C++ -*-===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//

#ifndef AMP_DIALECT_TRAIN_TRANSFORMS_PASSES_H
#define AMP_DIALECT_TRAIN_TRANSFORMS_PASSES_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include <memory>
#include <string>

namespace amp::train {

#define GEN_PASS_DECL
#include "amp/Dialect/Train/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "amp/Dialect/Train/Transforms/Passes.h.inc"

} // namespace amp::train

#endif // AMP_DIALECT_TRAIN_TRANSFORMS_PASSES_H

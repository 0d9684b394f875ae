//===- Passes.h - the lowering of train graphs to runtime calls -*- C++ -*-===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// The passes of the lowering (Passes.td) and `convert-train-to-runtime`,
// the pipeline of them (TrainToRuntime/TrainToRuntime.h).
//
//===----------------------------------------------------------------------===//

#ifndef AMP_CONVERSION_PASSES_H
#define AMP_CONVERSION_PASSES_H

#include "amp/Conversion/TrainToRuntime/TrainToRuntime.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

#include <memory>
#include <string>

namespace amp {

#define GEN_PASS_DECL
#include "amp/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "amp/Conversion/Passes.h.inc"

} // namespace amp

#endif // AMP_CONVERSION_PASSES_H

//===- Lowering.h - the driver's import-to-lowered-step steps ----*- C++
//-*-===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// What amp-run does between an imported training graph and a lowered step
// that lib/Execution runs: the dialects it needs and the lowering pipeline
// with the options a training loop sets.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_DRIVER_LOWERING_H
#define AMP_DRIVER_LOWERING_H

#include "amp/Conversion/TrainToRuntime/TrainToRuntime.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

namespace amp::driver {

/// Loads the dialects that importing, lowering and running a model need
/// (train, amprt, func, memref, arith).
void loadDialects(mlir::MLIRContext &ctx);

/// Lowers every train.graph of `module` to runtime calls
/// (convert-train-to-runtime with `options`; with keepValues, whose caller
/// reads every value after the run, without the rewrites that leave a
/// value unstored or stored otherwise: fused attention, GEMM epilogues,
/// channels last); the lowering's errors are diagnostics, its arena
/// remarks are dropped. `what` names the model in the error.
llvm::Error lowerToRuntime(mlir::ModuleOp module, TrainToRuntimeOptions options,
                           llvm::StringRef what);

} // namespace amp::driver

#endif // AMP_DRIVER_LOWERING_H

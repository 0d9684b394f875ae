//===- InitAllDialects.h - amp-mlir dialect registration --------*- C++ -*-===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//

#ifndef AMP_INITALLDIALECTS_H
#define AMP_INITALLDIALECTS_H

#include "amp/Dialect/AmpRT/AmpRT.h"
#include "amp/Dialect/Train/IR/TrainDialect.h"
#include "amp/Interfaces/AMPOpInterface.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/DialectRegistry.h"

namespace amp {
/// Adds every dialect of amp-mlir to `registry`, and the AMPOpInterface
/// external models of upstream dialects (applied when those dialects load).
inline void registerAllDialects(mlir::DialectRegistry &registry) {
  registry
      .insert<train::TrainDialect, amprt::AmpRTDialect, mlir::func::FuncDialect,
              mlir::memref::MemRefDialect, mlir::arith::ArithDialect>();
  registerAMPExternalModels(registry);
}
} // namespace amp

#endif // AMP_INITALLDIALECTS_H

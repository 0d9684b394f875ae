//===- InitAllDialects.h - amp-mlir dialect registration --------*- C++ -*-===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//

#ifndef AMP_INITALLDIALECTS_H
#define AMP_INITALLDIALECTS_H

#include "amp/Dialect/Train/IR/TrainDialect.h"
#include "amp/Interfaces/AMPOpInterface.h"
#include "mlir/IR/DialectRegistry.h"

namespace amp {
/// Adds every dialect of amp-mlir to `registry`, and the AMPOpInterface
/// external models of upstream dialects (applied when those dialects load).
inline void registerAllDialects(mlir::DialectRegistry &registry) {
  registry.insert<train::TrainDialect>();
  registerAMPExternalModels(registry);
}
} // namespace amp

#endif // AMP_INITALLDIALECTS_H

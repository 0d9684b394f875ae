//===- InitAllDialects.h - amp-mlir dialect registration --------*- C++ -*-===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//

#ifndef AMP_INITALLDIALECTS_H
#define AMP_INITALLDIALECTS_H

#include "amp/Dialect/Train/IR/TrainDialect.h"
#include "mlir/IR/DialectRegistry.h"

namespace amp {
/// Adds every dialect of amp-mlir to `registry`.
inline void registerAllDialects(mlir::DialectRegistry &registry) {
  registry.insert<train::TrainDialect>();
}
} // namespace amp

#endif // AMP_INITALLDIALECTS_H

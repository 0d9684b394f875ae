//===- InitAllPasses.h - amp-mlir pass registration -------------*- C++ -*-===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//

#ifndef AMP_INITALLPASSES_H
#define AMP_INITALLPASSES_H

#include "amp/Conversion/Passes.h"
#include "amp/Dialect/Train/Transforms/Passes.h"

namespace amp {
/// Registers every pass of amp-mlir with the global pass registry: the
/// train dialect's (AMP, loss scaling, ...), the lowering's and the
/// `convert-train-to-runtime` pipeline.
inline void registerAllPasses() {
  train::registerTrainPasses();
  registerConvertTrainToRuntimePasses();
}
} // namespace amp

#endif // AMP_INITALLPASSES_H

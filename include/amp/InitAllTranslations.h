//===- InitAllTranslations.h - amp-mlir translations -------------*- C++
//-*-===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//

#ifndef AMP_INITALLTRANSLATIONS_H
#define AMP_INITALLTRANSLATIONS_H

#include "amp/Target/ONNX/ExportONNX.h"
#include "amp/Target/ONNX/ImportONNX.h"

namespace amp {
/// Registers `--import-onnx` and `--export-onnx`.
inline void registerAllTranslations() {
  static bool once = [] {
    registerFromOnnxTranslation();
    registerToOnnxTranslation();
    return true;
  }();
  (void)once;
}
} // namespace amp

#endif // AMP_INITALLTRANSLATIONS_H

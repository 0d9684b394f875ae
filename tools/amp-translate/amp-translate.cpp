//===- amp-translate.cpp - ONNX <-> train dialect translation -------------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//

#include "amp/InitAllTranslations.h"
#include "amp/Tools/AmpOptMain.h"
#include "mlir/Tools/mlir-translate/MlirTranslateMain.h"

int main(int argc, char **argv) {
  amp::registerAllTranslations();
  amp::registerVersionPrinter();
  return mlir::failed(mlir::mlirTranslateMain(
             argc, argv, "amp-translate: ONNX <-> train dialect translation"))
             ? 1
             : 0;
}

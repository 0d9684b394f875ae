//===- amp-opt.cpp - amp-mlir optimizer driver ----------------------------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//

#include "amp/InitAllDialects.h"
#include "amp/InitAllPasses.h"
#include "amp/Tools/AmpOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::registerTransformsPasses();
  amp::registerAllPasses();
  mlir::DialectRegistry registry;
  amp::registerAllDialects(registry);
  return amp::ampOptMain(argc, argv, registry);
}

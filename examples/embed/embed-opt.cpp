//===- embed-opt.cpp - An *-opt tool with amp-mlir's passes ---------------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// A downstream optimizer driver: MLIR's func dialect and canonicalizer next
// to amp-mlir's train dialect and its passes (auto-mixed-precision,
// loss-scaling), all from the installed package.
//
//===----------------------------------------------------------------------===//

#include "amp/InitAllDialects.h"
#include "amp/InitAllPasses.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::registerCanonicalizerPass();
  amp::registerAllPasses();
  mlir::DialectRegistry registry;
  registry.insert<mlir::func::FuncDialect>();
  amp::registerAllDialects(registry);
  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "embed-opt: amp-mlir embedded\n", registry));
}

//===- amp-opt.cpp - amp-mlir optimizer driver ----------------------------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//

#include "amp/InitAllDialects.h"
#include "amp/InitAllPasses.h"
#include "amp/Tools/AmpOptMain.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tosa/IR/TosaOps.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::registerTransformsPasses();
  amp::registerAllPasses();
  mlir::DialectRegistry registry;
  amp::registerAllDialects(registry);
  // Upstream dialects the AMP pass paints through AMPOpInterface.
  registry.insert<mlir::linalg::LinalgDialect, mlir::math::MathDialect,
                  mlir::tensor::TensorDialect, mlir::tosa::TosaDialect>();
  return amp::ampOptMain(argc, argv, registry);
}

//===- amp-opt.cpp - amp-mlir optimizer driver ----------------------------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//

#include "amp/Conversion/TrainToRuntime/TrainToRuntime.h"
#include "amp/Dialect/AmpRT/AmpRT.h"
#include "amp/InitAllDialects.h"
#include "amp/InitAllPasses.h"
#include "amp/Tools/AmpOptMain.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tosa/IR/TosaOps.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::registerTransformsPasses();
  amp::registerAllPasses();
  mlir::DialectRegistry registry;
  amp::registerAllDialects(registry);
  // The lowering and its target (lib/Conversion/TrainToRuntime).
  amp::registerConvertTrainToRuntimePass();
  registry.insert<amp::amprt::AmpRTDialect, mlir::func::FuncDialect,
                  mlir::memref::MemRefDialect, mlir::arith::ArithDialect>();
  // Upstream dialects the AMP pass paints through AMPOpInterface.
  registry.insert<mlir::linalg::LinalgDialect, mlir::math::MathDialect,
                  mlir::tensor::TensorDialect, mlir::tosa::TosaDialect>();
  return amp::ampOptMain(argc, argv, registry);
}

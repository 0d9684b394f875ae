//===- Lowering.cpp - the driver's import-to-lowered-step steps -----------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//

#include "amp/Driver/Lowering.h"
#include "amp/Conversion/TrainToRuntime/TrainToRuntime.h"
#include "amp/Dialect/AmpRT/AmpRT.h"
#include "amp/Dialect/Train/IR/TrainDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Pass/PassManager.h"

using namespace mlir;
using namespace amp;

void amp::driver::loadDialects(MLIRContext &ctx) {
  DialectRegistry registry;
  registry.insert<train::TrainDialect, amprt::AmpRTDialect, func::FuncDialect,
                  memref::MemRefDialect, arith::ArithDialect>();
  ctx.appendDialectRegistry(registry);
  ctx.loadAllAvailableDialects();
}

llvm::Error amp::driver::lowerToRuntime(ModuleOp module,
                                        TrainToRuntimeOptions options,
                                        llvm::StringRef what) {
  MLIRContext *ctx = module.getContext();
  // The lowering's arena remark is for amp-opt; callers report their own.
  ScopedDiagnosticHandler quiet(ctx, [](Diagnostic &d) {
    return success(d.getSeverity() == DiagnosticSeverity::Remark);
  });
  PassManager pm(ctx);
  if (options.keepValues) {
    // A run that reads every value afterwards needs the scores and
    // probabilities that fused attention never stores, the product before
    // a bias that a bias gemm never stores, and each value in its graph's
    // layout.
    options.fuseAttention = false;
    options.fuseGemmEpilogues = false;
    options.channelsLast = ChannelsLast::Off;
  }
  buildConvertTrainToRuntimePipeline(pm, options);
  if (failed(pm.run(module)))
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        what + ": lowering to runtime calls failed (see the errors above)");
  return llvm::Error::success();
}

//===- Pipeline.cpp - Run the AMP pipeline from C++ -----------------------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//

#include "amp/Dialect/Train/Transforms/Pipeline.h"

using namespace mlir;
using namespace amp::train;

void amp::train::buildAMPPipeline(OpPassManager &pm,
                                  const AMPPipelineOptions &options,
                                  AMPPipelineResult &result) {
  if (options.autoMixedPrecision)
    pm.addPass(createAutoMixedPrecision(options.amp, &result.amp));
  if (options.dataParallel)
    pm.addPass(createTrainDataParallel(*options.dataParallel));
  if (options.lossScaling) {
    result.lossScaling.emplace();
    pm.addPass(
        createLossScaling(options.lossScalingOptions, &*result.lossScaling));
  }
}

FailureOr<AMPPipelineResult>
amp::train::runAMPPipeline(ModuleOp module, const AMPPipelineOptions &options) {
  AMPPipelineResult result;
  PassManager pm(module.getContext(), ModuleOp::getOperationName());
  pm.enableVerifier(options.verifyEach);
  buildAMPPipeline(pm, options, result);
  if (failed(pm.run(module)))
    return failure();
  return result;
}

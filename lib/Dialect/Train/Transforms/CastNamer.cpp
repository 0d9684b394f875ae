//===- CastNamer.cpp - the name-casts pass --------------------------------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//

#include "amp/Dialect/Train/IR/CastNamer.h"
#include "amp/Dialect/Train/Transforms/Passes.h"

namespace amp::train {
#define GEN_PASS_DEF_NAMECASTS
#include "amp/Dialect/Train/Transforms/Passes.h.inc"
} // namespace amp::train

using namespace mlir;
using namespace amp::train;

namespace {
struct NameCastsPass : public amp::train::impl::NameCastsBase<NameCastsPass> {
  void runOnOperation() override {
    for (GraphOp graph : getOperation().getOps<GraphOp>())
      nameUnnamedCasts(graph);
    for (FunctionOp fn : getOperation().getOps<FunctionOp>())
      nameUnnamedCasts(fn);
  }
};
} // namespace

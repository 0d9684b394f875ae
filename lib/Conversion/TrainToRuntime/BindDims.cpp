//===- BindDims.cpp - symbolic dims of graph inputs bound to sizes -------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// `train-bind-dims`: a graph input's dynamic dims that its `train.dims`
// names and the `dims` option binds become static in its type (and the
// graph's function type); the input is marked `train.bound_dims`, which
// the lowering reads as "a batch of data" (the arena's weight copies are
// casts of inputs without it; narrow-inputs takes only inputs with it).
// Then the train dialect's canonicalization runs (TrainFolders.cpp): the
// shape computations of the now static inputs and of Constant nodes
// become Constant nodes.
//
//===----------------------------------------------------------------------===//

#include "amp/Conversion/Passes.h"
#include "amp/Dialect/Train/IR/SymbolicDims.h"
#include "amp/Dialect/Train/IR/TrainOps.h"

#include "mlir/Rewrite/FrozenRewritePatternSet.h"
#include "mlir/Transforms/WalkPatternRewriteDriver.h"

namespace amp {
#define GEN_PASS_DEF_TRAINBINDDIMS
#include "amp/Conversion/Passes.h.inc"
} // namespace amp

using namespace mlir;
using namespace amp;
using namespace amp::train;

namespace {
struct TrainBindDimsPass
    : public amp::impl::TrainBindDimsBase<TrainBindDimsPass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    llvm::StringMap<int64_t> dimMap;
    if (failed(train::parseDimBindings(module.getLoc(), getArgument(), dims,
                                       dimMap)))
      return signalPassFailure();
    for (GraphOp g : module.getOps<GraphOp>()) {
      if (g.getBody().empty())
        continue;
      Block &body = g.getBody().front();
      bool changed = false;
      for (BlockArgument arg : body.getArguments()) {
        unsigned idx = arg.getArgNumber();
        auto type = dyn_cast<RankedTensorType>(arg.getType());
        auto names = g.getArgAttrOfType<ArrayAttr>(idx, "train.dims");
        if (!type || !names || type.hasStaticShape())
          continue;
        SmallVector<int64_t> shape(type.getShape());
        bool bound = false;
        for (auto [d, size] : llvm::enumerate(shape)) {
          auto name =
              d < names.size() ? dyn_cast<StringAttr>(names[d]) : StringAttr();
          if (!ShapedType::isDynamic(size) || !name)
            continue;
          auto it = dimMap.find(name.getValue());
          if (it == dimMap.end())
            continue;
          size = it->second;
          bound = true;
        }
        if (!bound)
          continue;
        arg.setType(type.clone(shape));
        g.setArgAttr(idx, attrs::kBoundDims, UnitAttr::get(&getContext()));
        changed = true;
      }
      if (changed)
        g.setFunctionTypeAttr(TypeAttr::get(
            FunctionType::get(&getContext(), body.getArgumentTypes(),
                              g.getFunctionType().getResults())));
    }
    // The train dialect's canonicalization patterns (TrainFolders.cpp): the
    // shape computations that the now static inputs and the constants make
    // known become Constant nodes in place. One walk in order (a node is
    // visited after the nodes it reads), no dead-code removal: nothing else
    // of the graph changes.
    RewritePatternSet set(&getContext());
    getContext().getLoadedDialect<TrainDialect>()->getCanonicalizationPatterns(
        set);
    for (RegisteredOperationName op : getContext().getRegisteredOperations())
      if (op.getDialectNamespace() == "train")
        op.getCanonicalizationPatterns(set, &getContext());
    FrozenRewritePatternSet patterns(std::move(set));
    for (GraphOp g : module.getOps<GraphOp>())
      walkAndApplyPatterns(g, patterns);
  }
};
} // namespace

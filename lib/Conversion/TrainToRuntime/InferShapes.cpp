//===- InferShapes.cpp - train-infer-shapes: the lowering's types -------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// train-infer-shapes: the train dialect has no shape functions of its own;
// the lowering computes every value's static shape (each op family its
// outputs') and knows the shape computations' values (HostFold.cpp). The
// pass lowers a copy of each graph and writes that back: what was known on
// the host becomes Constant nodes (replaceWithConstants, as the dialect's
// canonicalization writes them), every other result its buffer's type.
//
//===----------------------------------------------------------------------===//

#include "GraphLowering.h"

#include "amp/Conversion/Passes.h"
#include "amp/Dialect/Train/IR/SymbolicDims.h"

#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"

namespace amp {
#define GEN_PASS_DEF_TRAININFERSHAPES
#include "amp/Conversion/Passes.h.inc"
} // namespace amp

using namespace mlir;
using namespace amp;
using namespace amp::lowering;

namespace {

/// Writes back into `graph` what the lowering computed for the values of
/// its copy (`copyOf`: a graph value -> its copy's).
void writeBack(GraphOp graph, const GraphLowering &state,
               const DenseMap<Value, Value> &copyOf) {
  IRRewriter rewriter(graph.getContext());
  for (Operation &op : llvm::make_early_inc_range(graph.getBody().front())) {
    if (!isa<OnnxNodeOpInterface>(op) || isa<ConstantOp>(op) ||
        op.getNumRegions())
      continue;
    SmallVector<std::optional<GraphLowering::ComputedValue>> computed;
    for (Value r : op.getResults())
      computed.push_back(state.computed(copyOf.lookup(r)));
    // Known on the host: Constant nodes, when every used result is.
    SmallVector<ElementsAttr> values;
    bool constant = op.getNumResults() > 0;
    for (auto [r, c] : llvm::zip(op.getResults(), computed)) {
      ElementsAttr v = c ? c->hostValue : ElementsAttr();
      constant &= v ? mayReplaceWithConstant(r.getType(), v) : r.use_empty();
      values.push_back(v);
    }
    if (constant && llvm::any_of(values, [](ElementsAttr v) { return !!v; })) {
      replaceWithConstants(rewriter, &op, values, /*valueTypes=*/true);
      continue;
    }
    // Else each result the static type of its buffer: the element type
    // the graph gave it, where it gave one.
    for (auto [r, c] : llvm::zip(op.getResults(), computed)) {
      auto declared = dyn_cast<ShapedType>(r.getType());
      if (!c || !declared)
        continue;
      Type elem = declared.getElementType().isIntOrFloat()
                      ? declared.getElementType()
                      : c->elem;
      r.setType(RankedTensorType::get(c->shape, elem));
    }
  }
  auto ret = cast<ReturnOp>(graph.getBody().front().getTerminator());
  graph.setFunctionTypeAttr(TypeAttr::get(FunctionType::get(
      graph.getContext(), graph.getBody().front().getArgumentTypes(),
      ret.getOperandTypes())));
}

struct TrainInferShapesPass
    : public amp::impl::TrainInferShapesBase<TrainInferShapesPass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    llvm::StringMap<int64_t> dimMap;
    if (failed(train::parseDimBindings(module.getLoc(), getArgument(), dims,
                                       dimMap)))
      return signalPassFailure();
    for (GraphOp graph : llvm::to_vector(module.getOps<GraphOp>())) {
      if (graph.getBody().empty())
        continue;
      // A copy, in a module of its own, that the lowering consumes; the
      // values are then asked about by their copies' addresses.
      OwningOpRef<ModuleOp> scratch = ModuleOp::create(graph.getLoc());
      IRMapping mapping;
      auto copy = cast<GraphOp>(graph->clone(mapping));
      scratch->push_back(copy);
      DenseMap<Value, Value> copyOf;
      for (Operation &op : graph.getBody().front())
        for (Value r : op.getResults())
          copyOf[r] = mapping.lookup(r);
      GraphLowering state(copy, dimMap);
      if (failed(lowerGraph(state, copy))) {
        graph.emitError() << getArgument()
                          << ": the graph cannot be lowered (above), so "
                             "the lowering computed no shapes for it";
        return signalPassFailure();
      }
      writeBack(graph, state, copyOf);
    }
  }
};

} // namespace

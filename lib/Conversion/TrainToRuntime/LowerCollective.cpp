//===- LowerCollective.cpp - the collectives of data parallelism ----------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// org.amp-mlir:AllReduce (train-data-parallel's bucket of gradients): one
// all_reduce_many call over the context's communicator, each output a new
// temporary of its input's shape.
//
//===----------------------------------------------------------------------===//

#include "LoweringTable.h"

#include "amp/Dialect/Train/IR/Collectives.h"

namespace amp::lowering {

FailureOr<bool> GraphLowering::lowerCollective(StringRef domain,
                                               StringRef type) {
  if (domain != train::kAmpDomain || type != train::kAllReduceOpType)
    return false;
  std::string reduction = attrStr(train::kReductionAttr, "mean");
  if (reduction != "mean" && reduction != "sum")
    return err() << "reduction '" << reduction << "' is not mean or sum";
  if (current->getNumOperands() != current->getNumResults() ||
      current->getNumOperands() == 0)
    return err() << "needs as many outputs as inputs, at least one";
  SmallVector<int, 4> xs, ys;
  for (unsigned i = 0; i < current->getNumOperands(); ++i) {
    auto x = in(i);
    if (failed(x))
      return failure();
    if (!isa<FloatType>(bufs[*x].elem))
      return err() << "input " << i << " has element type " << bufs[*x].elem
                   << "; gradients are floats";
    auto y = out(i, shapeOf(*x), bufs[*x].elem);
    if (failed(y))
      return failure();
    xs.push_back(*x);
    ys.push_back(*y);
  }
  amprt::ReduceOp op =
      reduction == "mean" ? amprt::ReduceOp::Avg : amprt::ReduceOp::Sum;
  return handled(
      call("all_reduce_many",
           {{"xs", {xs.begin(), xs.end()}}, {"ys", {ys.begin(), ys.end()}}},
           {{"n", i64(xs.size())}, {"op", i32(int32_t(op))}}));
}

void GraphLowering::registerCollective(FamilyTable &t) {
  t.add(train::kAmpDomain, {train::kAllReduceOpType},
        &GraphLowering::lowerCollective);
}

} // namespace amp::lowering

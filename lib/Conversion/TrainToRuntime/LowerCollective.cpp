//===- LowerCollective.cpp - the collectives of data parallelism ----------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// org.amp-mlir:AllReduce (train-data-parallel's bucket of gradients, or
// loss scaling's all-finite flag): one all_reduce_many call over the
// context's communicator, each output a new temporary of its input's
// shape. org.amp-mlir:ReduceScatter (a bucket reduce-scattered to the
// parameters' owners, ZeRO): the inputs packed by owner into equal parts
// (concat of their flattened views and zero padding), one reduce_scatter
// call, and this rank's outputs sliced from its part.
//
//===----------------------------------------------------------------------===//

#include "LoweringTable.h"

#include "amp/Dialect/Train/IR/Collectives.h"

namespace amp::lowering {

namespace {

/// The runtime's reduction for a node's `reduction` attribute, or nullopt.
std::optional<amprt::ReduceOp> reduceOpOf(StringRef reduction) {
  if (reduction == "mean")
    return amprt::ReduceOp::Avg;
  if (reduction == "sum")
    return amprt::ReduceOp::Sum;
  if (reduction == "min")
    return amprt::ReduceOp::Min;
  return std::nullopt;
}

} // namespace

FailureOr<bool> GraphLowering::lowerCollective(StringRef domain,
                                               StringRef type) {
  if (domain != train::kAmpDomain)
    return false;
  if (type == train::kReduceScatterOpType)
    return handled(lowerReduceScatter());
  if (type != train::kAllReduceOpType)
    return false;
  std::string reduction = attrStr(train::kReductionAttr, "mean");
  std::optional<amprt::ReduceOp> op = reduceOpOf(reduction);
  if (!op)
    return err() << "reduction '" << reduction << "' is not mean, sum or min";
  if (current->getNumOperands() != current->getNumResults() ||
      current->getNumOperands() == 0)
    return err() << "needs as many outputs as inputs, at least one";
  SmallVector<int, 4> xs, ys;
  for (unsigned i = 0; i < current->getNumOperands(); ++i) {
    auto x = in(i);
    if (failed(x))
      return failure();
    Type elem = bufs[*x].elem;
    if (!isa<FloatType>(elem) && !(reduction == "min" && elem.isInteger(1)))
      return err() << "input " << i << " has element type " << elem
                   << "; gradients are floats (a bool takes min: the "
                      "all-finite flag)";
    auto y = out(i, shapeOf(*x), elem);
    if (failed(y))
      return failure();
    xs.push_back(*x);
    ys.push_back(*y);
  }
  return handled(
      call("all_reduce_many",
           {{"xs", {xs.begin(), xs.end()}}, {"ys", {ys.begin(), ys.end()}}},
           {{"n", i64(xs.size())}, {"op", i32(int32_t(*op))}}));
}

LogicalResult GraphLowering::lowerReduceScatter() {
  std::string reduction = attrStr(train::kReductionAttr, "mean");
  std::optional<amprt::ReduceOp> op = reduceOpOf(reduction);
  if (!op || *op == amprt::ReduceOp::Min)
    return err() << "reduction '" << reduction << "' is not mean or sum";
  SmallVector<int64_t> owners =
      attrInts(train::kOwnersAttr).value_or(SmallVector<int64_t>());
  int64_t rank = attrInt(train::kRankAttr, -1),
          ranks = attrInt(train::kRanksAttr, 0);
  unsigned n = current->getNumOperands();
  if (n == 0 || owners.size() != n)
    return err() << "needs at least one input and one owner per input";
  if (ranks < 1 || rank < 0 || rank >= ranks)
    return err() << "rank " << rank << " is not one of " << ranks << " ranks";
  for (unsigned i = 0; i < n; ++i)
    if (owners[i] < 0 || owners[i] >= ranks || (i && owners[i] < owners[i - 1]))
      return err() << "owners must be ranks below " << ranks
                   << " in non-decreasing order";
  if (current->getNumResults() != unsigned(llvm::count(owners, rank)))
    return err() << "needs one output per input rank " << rank << " owns";
  // Every input flattened: rank r's part is its inputs in order, then
  // zeros up to the largest part.
  SmallVector<int> flat(n);
  SmallVector<int64_t> load(ranks, 0);
  Type elem;
  for (unsigned i = 0; i < n; ++i) {
    auto x = in(i);
    if (failed(x))
      return failure();
    if (!elem)
      elem = bufs[*x].elem;
    if (!isa<FloatType>(elem) || bufs[*x].elem != elem)
      return err() << "input " << i << " has element type " << bufs[*x].elem
                   << "; the inputs are gradients of one float type";
    int64_t m = numel(shapeOf(*x));
    flat[i] = scratch({m}, elem);
    if (failed(call("reshape", {{"x", {*x}}, {"y", {flat[i]}}})))
      return failure();
    load[owners[i]] += m;
  }
  int64_t part = *llvm::max_element(load);
  SmallVector<int> pieces;
  for (int64_t r = 0; r < ranks; ++r) {
    for (unsigned i = 0; i < n; ++i)
      if (owners[i] == r)
        pieces.push_back(flat[i]);
    if (load[r] == part)
      continue;
    int pad = scratch({part - load[r]}, elem);
    if (failed(call("fill", {{"y", {pad}}}, {{"value", f64(0)}})))
      return failure();
    pieces.push_back(pad);
  }
  int send = scratch({ranks * part}, elem), recv = scratch({part}, elem);
  if (failed(call("concat",
                  {{"inputs", {pieces.begin(), pieces.end()}}, {"y", {send}}},
                  {{"n", i64(pieces.size())}, {"axis", i64(0)}})) ||
      failed(call("reduce_scatter", {{"x", {send}}, {"y", {recv}}},
                  {{"op", i32(int32_t(*op))}})))
    return failure();
  // This rank's outputs: its part, cut in its inputs' shapes.
  int64_t at = 0;
  unsigned res = 0;
  for (unsigned i = 0; i < n; ++i) {
    if (owners[i] != rank)
      continue;
    Shape shape = shapeOf(*in(i));
    int64_t m = numel(shape);
    int piece = scratch({m}, elem);
    auto y = out(res++, shape, elem);
    if (failed(y) ||
        failed(call("slice", {{"x", {recv}}, {"y", {piece}}},
                    {{"starts", ints({at})},
                     {"ends", ints({at + m})},
                     {"axes", ints({0})},
                     {"steps", ints({1})},
                     {"n", i64(1)}})) ||
        failed(call("reshape", {{"x", {piece}}, {"y", {*y}}})))
      return failure();
    at += m;
  }
  return success();
}

void GraphLowering::registerCollective(FamilyTable &t) {
  t.add(train::kAmpDomain,
        {train::kAllReduceOpType, train::kReduceScatterOpType},
        &GraphLowering::lowerCollective);
}

} // namespace amp::lowering

//===- AMPCastInsertion.cpp - AMP's rewrite of a painted graph ------------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// The rewrite of a painted graph: the ALLOW vertices' f32 ports become the
// low type, and every edge whose two ends disagree gets a train.Cast (one per
// value and type, reused where it dominates the consumer, moved up where it
// does not); graph outputs stay the f32 values of their names, and retargeted
// casts that became low to low fold away.
//
//===----------------------------------------------------------------------===//

#include "AMPGraphRewriter.h"
#include "amp/Dialect/Train/IR/OnnxNames.h"
#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace amp::train;
using namespace amp::train::detail;

//===----------------------------------------------------------------------===//
// Rewrite
//===----------------------------------------------------------------------===//

std::string AMPGraphRewriter::valueName(Value value) {
  return getOnnxValueName(graph, value);
}

bool AMPGraphRewriter::isLowOnlySource(Value value) {
  // Graph inputs, initializers and Constant nodes: their casts are "Const
  // and Variable casts" and do not count in the summary.
  if (auto arg = dyn_cast<BlockArgument>(value)) // not a subgraph's input
    return arg.getOwner()->getParentOp() == graph.getOperation();
  Operation *op = value.getDefiningOp();
  return isa<InitializerOp, ConstantOp>(op);
}

Value AMPGraphRewriter::getCast(Value value, Type elementType,
                                Operation *consumer) {
  auto key = std::make_pair(value, elementType);
  if (auto it = castCache.find(key); it != castCache.end())
    return it->second;

  // Exact round trip: value = Cast(x_low -> f32) and we want x_low back.
  if (auto cast = value.getDefiningOp<CastOp>())
    if (elementType == lowType &&
        getElementTypeOrNull(value.getType()) == f32Type &&
        getElementTypeOrNull(cast.getInput().getType()) == elementType) {
      castCache[key] = cast.getInput();
      return cast.getInput();
    }

  // A graph output that became low precision gets a cast back to f32 of its
  // own, named after the output; existing casts of it then read that cast.
  bool namedOutput = elementType == f32Type && outputCastNames.count(value);

  // Reuse an existing cast of this value to this type that dominates the
  // consumer. Else one that comes after the consumer in the value's block
  // moves up to where a new cast would go, so the value keeps a single cast
  // to this type.
  Block *home = isa<BlockArgument>(value)
                    ? cast<BlockArgument>(value).getOwner()
                    : value.getDefiningOp()->getBlock();
  CastOp movable;
  if (!namedOutput)
    for (Operation *user : value.getUsers()) {
      auto existing = dyn_cast<CastOp>(user);
      if (!existing || getElementTypeOrNull(existing.getType()) != elementType)
        continue;
      if (dom.properlyDominates(existing.getOperation(), consumer)) {
        castCache[key] = existing.getResult();
        return existing.getResult();
      }
      if (!movable && existing->getBlock() == home)
        movable = existing;
    }
  if (movable) {
    if (isa<BlockArgument>(value)) {
      auto tail = argCastTail.find(home);
      if (tail != argCastTail.end())
        movable->moveAfter(tail->second);
      else
        movable->moveBefore(&home->front());
      argCastTail[home] = movable;
    } else {
      movable->moveAfter(value.getDefiningOp());
    }
    // Exported right after the node before it, not at its old file position.
    movable->removeAttr(attrs::kOrder);
    castCache[key] = movable.getResult();
    return movable.getResult();
  }

  OpBuilder b(graph.getContext());
  if (auto arg = dyn_cast<BlockArgument>(value)) {
    // Casts of block arguments go to the top of the block, in creation order.
    auto tail = argCastTail.find(arg.getOwner());
    if (tail != argCastTail.end())
      b.setInsertionPointAfter(tail->second);
    else
      b.setInsertionPointToStart(arg.getOwner());
  } else
    b.setInsertionPointAfter(value.getDefiningOp());
  // The result type and the `to` attribute come from caches, and the op
  // name is resolved once: a graph of a million nodes gets ~10^5 casts.
  Type &type = castTypes[{value.getType(), elementType}];
  if (!type)
    type = cast<TensorType>(value.getType()).clone(elementType);
  IntegerAttr &to = castTo[elementType];
  if (!to)
    to = b.getI64IntegerAttr(elementType == f32Type           ? 1
                             : isa<BFloat16Type>(elementType) ? 16
                                                              : 10);
  if (!castName)
    castName = OperationName(CastOp::getOperationName(), graph.getContext());
  OperationState state(value.getLoc(), *castName);
  CastOp::build(b, state, type, value, /*round_mode=*/nullptr,
                /*saturate=*/nullptr, to);
  auto castOp = cast<CastOp>(b.create(state));
  // A graph output's cast back to f32 takes the output's name.
  if (auto it = outputCastNames.find(value);
      it != outputCastNames.end() && elementType == f32Type)
    namer.name(castOp, it->second);
  newCasts.push_back({castOp, value});
  if (auto arg = dyn_cast<BlockArgument>(value))
    argCastTail[arg.getOwner()] = castOp;
  if (elementType != f32Type && !isLowOnlySource(value))
    ++report.summary.lowPrecisionCasts;
  castCache[key] = castOp.getResult();
  return castOp.getResult();
}

void AMPGraphRewriter::rewrite() {
  // Changes the types of an ALLOW vertex.
  loweredPort.assign(portVertex.size(), 0);
  auto lowerVertex = [&](unsigned vi) {
    NodeInfo &info = nodes[vertexNode[vi]];
    info.converted = true;
    auto lower = [&](Value r) {
      auto t = dyn_cast<TensorType>(r.getType());
      if (!t || t.getElementType() != f32Type)
        return false;
      Type &lowT = lowered[t];
      if (!lowT)
        lowT = t.clone(lowType);
      r.setType(lowT);
      return true;
    };
    forEachPort(
        vi, [](unsigned) {},
        [&](unsigned p) {
          if (lower(info.op->getResult(p)))
            loweredPort[info.ports + info.numInputs + p] = 1;
        });
    if (const ControlFlowPorts *cf = controlFlowPortsOf(vi))
      for (Value arg : cf->outs) // body arguments of a control-flow group
        if (lower(arg))
          loweredArgs.insert(arg);
    if (auto cast = dyn_cast<CastOp>(info.op))
      cast.setToAttr(
          OpBuilder(cast).getI64IntegerAttr(mode == AMPMode::BF16 ? 16 : 10));
  };
  auto lowerNode = [&](unsigned n) {
    for (unsigned vi : nodes[n].vertices())
      if (allow[vi])
        lowerVertex(vi);
  };

  // A graph output must stay the f32 value of its name: the low-precision
  // producer's output is renamed `<name>_fp16` and the cast back to f32
  // takes `<name>`.
  Operation *terminator = graph.getFunctionBody().front().getTerminator();
  for (auto [i, value] : llvm::enumerate(terminator->getOperands())) {
    Operation *def = value.getDefiningOp();
    auto outName = graph.getResultAttrOfType<StringAttr>(i, attrs::kValueName);
    if (!def || !outName || !willLower(value) || outputCastNames.count(value) ||
        valueName(value) != outName.getValue())
      continue;
    auto outs = def->getAttrOfType<ArrayAttr>(attrs::kOutputNames);
    unsigned r = cast<OpResult>(value).getResultNumber();
    if (!outs || r >= outs.size())
      continue;
    SmallVector<Attribute> names(outs.begin(), outs.end());
    StringRef suffix = mode == AMPMode::BF16 ? "_bf16" : "_fp16";
    names[r] = StringAttr::get(
        graph.getContext(),
        namer.uniqueValueName((outName.getValue() + suffix).str()));
    def->setAttr(attrs::kOutputNames,
                 ArrayAttr::get(graph.getContext(), names));
    outputCastNames[value] = outName.getValue().str();
  }

  // Without regions, each node is lowered just before its operands are
  // fixed below (its producers come before it): one visit per node. Cast
  // nodes go first: getCast() looks for a value's casts among its users,
  // wherever they are, and must see their final types.
  for (unsigned n = 0; n < nodes.size(); ++n)
    if (hasRegions || nodes[n].isCast)
      lowerNode(n);

  // Fix every edge whose ends disagree, in post-order (casts of a block
  // argument are created, and so ordered, as their consumers come).
  auto fixOperands = [&](Operation *op, const NodeInfo *info) {
    for (OpOperand &operand : op->getOpOperands()) {
      Value value = operand.get();
      Type cur = getElementTypeOrNull(value.getType());
      if (!cur)
        continue;
      Type want;
      int vi = info ? inVertex(*info, operand.getOperandNumber())
                    : consumerVertex(operand);
      bool lowConsumer = vi >= 0 && allow[vi];
      if (lowConsumer)
        want = lowType;
      else if (cur != lowType) // the values the pass lowered are all low now
        continue;
      else if (info ? inputWasLowered(*info, operand.getOperandNumber(), value)
                    : wasLowered(value))
        want = f32Type; // the pass lowers f32 values only
      else
        continue;
      if (want == cur)
        continue;
      // An existing Cast of the value to `want` is the cast other consumers
      // reuse; its own input stays as it is (no self-recurring cast).
      Value casted = getCast(value, want, op);
      if (casted.getDefiningOp() == op)
        continue;
      operand.set(casted);
      // A subgraph output is named after the value its terminator returns.
      Operation *holder = op->getParentOp();
      if (!info && op->hasTrait<OpTrait::IsTerminator>() &&
          holder != graph.getOperation()) {
        if (auto c = casted.getDefiningOp<CastOp>())
          namer.name(c);
        setSubgraphOutputName(holder, op->getParentRegion()->getRegionNumber(),
                              operand.getOperandNumber(), valueName(casted));
      }
    }
  };
  if (!hasRegions) {
    // One block: post-order is the collected order, the nodes interleaved
    // with the other ops, and no walk of the IR is needed.
    unsigned other = 0;
    for (unsigned n = 0; n <= nodes.size(); ++n) {
      for (; other < otherOps.size() && otherOps[other].first == n; ++other)
        fixOperands(otherOps[other].second, nullptr);
      if (n < nodes.size()) {
        if (!nodes[n].isCast)
          lowerNode(n);
        fixOperands(nodes[n].op, &nodes[n]);
      }
    }
  } else {
    SmallVector<Operation *> ops;
    graph.getFunctionBody().walk([&](Operation *op) { ops.push_back(op); });
    for (Operation *op : ops) {
      auto ni = nodeIndex.find(op);
      fixOperands(op, ni == nodeIndex.end() ? nullptr : &nodes[ni->second]);
    }
  }

  // The report names every cast: name them now, as writing the graph
  // would.
  if (records) {
    nameUnnamedCasts(graph);
    for (auto [c, input] : newCasts)
      report.casts.push_back(
          {c->getAttrOfType<StringAttr>(attrs::kNodeName).getValue().str(),
           valueName(input),
           getElementTypeOrNull(c.getType()) == f32Type
               ? "fp32"
               : getAMPModeName(mode).str()});
  }

  // Retargeted casts that now cast low to low fold away.
  for (NodeInfo &info : nodes) {
    if (!info.retargetedCast || !info.converted)
      continue;
    auto cast = cast_if_present<CastOp>(info.op);
    if (!cast || cast.getInput().getType() != cast.getType())
      continue;
    cast.getResult().replaceAllUsesWith(cast.getInput());
  }
}

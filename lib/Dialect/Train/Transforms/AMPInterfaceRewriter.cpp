//===- AMPInterfaceRewriter.cpp - AMP on ops of any dialect ---------------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// The auto-mixed-precision pass on functions of upstream-dialect ops (linalg,
// arith, math, tosa, ... through AMPOpInterface): the same painting
// (AMPPainter), one cast per (value, type), the same summary and report.
//
//===----------------------------------------------------------------------===//

#include "amp/Dialect/Train/Transforms/AMPInterfaceRewriter.h"
#include "amp/Dialect/Train/Transforms/AMPPainter.h"
#include "amp/Interfaces/AMPOpInterface.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

using namespace mlir;
using namespace amp;
using namespace amp::train;

namespace {

struct Node {
  Operation *op;
  AMPOpInterface iface;
  std::string domain, opType, name;
  AMPList list = AMPList::None;
  bool keep = false;
  bool converted = false;
  SmallVector<AMPTypeGroup, 1> groups;
  SmallVector<unsigned, 1> vertices; ///< one per group
};

class InterfaceRewriter {
public:
  InterfaceRewriter(FunctionOpInterface fn, const AMPLists &lists, AMPMode mode,
                    ArrayRef<llvm::Regex> keepRegexes,
                    const llvm::StringSet<> &keepNames, AMPReport &report,
                    bool records)
      : fn(fn), lists(lists), mode(mode), keepRegexes(keepRegexes),
        keepNames(keepNames), report(report), records(records) {
    MLIRContext *ctx = fn->getContext();
    lowType = mode == AMPMode::BF16 ? Type(BFloat16Type::get(ctx))
                                    : Type(Float16Type::get(ctx));
    f32Type = Float32Type::get(ctx);
  }

  void run() {
    collect();
    paint = paintAMP(pv, edges, mode);
    if (!paint.nothingToDo) {
      report.foundAllowOps = true;
      rewrite();
    }
    record();
  }

private:
  void collect();
  void rewrite();
  void record();
  Value getCast(Value value, Type type, Operation *consumer);
  bool isKept(StringRef name) const {
    if (name.empty())
      return false;
    if (keepNames.contains(name))
      return true;
    return llvm::any_of(keepRegexes,
                        [&](const llvm::Regex &re) { return re.match(name); });
  }

  FunctionOpInterface fn;
  const AMPLists &lists;
  AMPMode mode;
  ArrayRef<llvm::Regex> keepRegexes;
  const llvm::StringSet<> &keepNames;
  AMPReport &report;
  bool records;
  Type lowType, f32Type;

  std::vector<Node> nodes;
  std::vector<AMPVertex> pv;
  AMPEdges edges;
  std::vector<std::pair<unsigned, unsigned>> vertexGroup; ///< (node, group)
  DenseMap<OpOperand *, unsigned> operandVertex;
  AMPPaint paint;
  DenseMap<Value, Type> originalTypes;
  DenseMap<std::pair<Value, Type>, Value> castCache;
  DenseMap<Block *, Operation *> argCastTail;
  DenseSet<Operation *> createdCasts;
};

} // namespace

static std::string locationName(Location loc) {
  if (auto name = dyn_cast<NameLoc>(loc))
    return name.getName().str();
  if (auto fused = dyn_cast<FusedLoc>(loc))
    for (Location l : fused.getLocations())
      if (auto name = dyn_cast<NameLoc>(l))
        return name.getName().str();
  return "";
}

static std::string locationText(Location loc) {
  if (auto file = dyn_cast<FileLineColLoc>(loc))
    return (file.getFilename().getValue() + ":" + Twine(file.getLine()) + ":" +
            Twine(file.getColumn()))
        .str();
  return "";
}

void InterfaceRewriter::collect() {
  fn.getFunctionBody().walk<WalkOrder::PreOrder>([&](Operation *op) {
    auto iface = dyn_cast<AMPOpInterface>(op);
    if (!iface)
      return WalkResult::advance();
    Node n;
    n.op = op;
    n.iface = iface;
    n.domain = op->getName().getDialectNamespace().str();
    n.opType = op->getName().stripDialect().str();
    n.name = locationName(op->getLoc());
    n.keep = isKept(n.name);
    n.list = lists.classify(n.domain, n.opType);
    if (!n.keep)
      iface.getAMPTypeGroups(n.groups);
    unsigned index = nodes.size();
    for (auto [gi, g] : llvm::enumerate(n.groups)) {
      unsigned v = pv.size();
      AMPVertex vertex;
      vertex.list = n.list;
      bool anyF32 = false, other = false;
      auto look = [&](Type t) {
        (getAMPElementType(t) == f32Type ? anyF32 : other) = true;
      };
      for (unsigned i : g.operands) {
        look(op->getOperand(i).getType());
        operandVertex[&op->getOpOperand(i)] = v;
      }
      for (unsigned i : g.results)
        look(op->getResult(i).getType());
      vertex.isF32 = anyF32 && !other;
      vertex.supports = iface.canUseAMPType(g, lowType);
      pv.push_back(std::move(vertex));
      vertexGroup.push_back({index, (unsigned)gi});
      n.vertices.push_back(v);
    }
    nodes.push_back(std::move(n));
    // The body of an interface op (a linalg region) is part of the op.
    return op->getNumRegions() ? WalkResult::skip() : WalkResult::advance();
  });
  // Edges: producer result -> consumer operand.
  for (unsigned v = 0; v < pv.size(); ++v) {
    auto [ni, gi] = vertexGroup[v];
    Operation *op = nodes[ni].op;
    for (unsigned r : nodes[ni].groups[gi].results)
      for (OpOperand &use : op->getResult(r).getUses()) {
        auto it = operandVertex.find(&use);
        if (it != operandVertex.end())
          edges.add(v, it->second);
      }
  }
  edges.finalize(pv.size());
}

Value InterfaceRewriter::getCast(Value value, Type type, Operation *consumer) {
  auto key = std::make_pair(value, type);
  if (auto it = castCache.find(key); it != castCache.end())
    return it->second;
  OpBuilder b(fn->getContext());
  if (auto arg = dyn_cast<BlockArgument>(value)) {
    auto tail = argCastTail.find(arg.getOwner());
    if (tail != argCastTail.end())
      b.setInsertionPointAfter(tail->second);
    else
      b.setInsertionPointToStart(arg.getOwner());
  } else {
    b.setInsertionPointAfter(value.getDefiningOp());
  }
  // The consumer's dialect builds the cast (tosa.cast for tosa), else the
  // producer's, else arith.
  AMPOpInterface builder = dyn_cast<AMPOpInterface>(consumer);
  if (!builder && value.getDefiningOp())
    builder = dyn_cast<AMPOpInterface>(value.getDefiningOp());
  Value result = builder ? builder.buildAMPCast(b, value.getLoc(), value, type)
                         : buildArithAMPCast(b, value.getLoc(), value, type);
  Operation *castOp = result.getDefiningOp();
  createdCasts.insert(castOp);
  if (auto arg = dyn_cast<BlockArgument>(value))
    argCastTail[arg.getOwner()] = castOp;
  bool source = isa<BlockArgument>(value) ||
                value.getDefiningOp()->hasTrait<OpTrait::ConstantLike>();
  if (type != f32Type && !source)
    ++report.summary.lowPrecisionCasts;
  if (records)
    report.casts.push_back(
        {castOp->getName().getStringRef().str(), locationText(value.getLoc()),
         type == f32Type ? "fp32" : getAMPModeName(mode).str()});
  castCache[key] = result;
  return result;
}

void InterfaceRewriter::rewrite() {
  for (unsigned v = 0; v < pv.size(); ++v) {
    if (!paint.allow[v])
      continue;
    auto [ni, gi] = vertexGroup[v];
    Node &n = nodes[ni];
    n.converted = true;
    for (unsigned r : n.groups[gi].results) {
      Value res = n.op->getResult(r);
      originalTypes[res] = res.getType();
      res.setType(withAMPElementType(res.getType(), lowType));
    }
    n.iface.updateAfterAMPTypeChange(n.groups[gi], lowType);
  }
  // Fix every edge whose ends disagree.
  SmallVector<Operation *> ops;
  fn.getFunctionBody().walk<WalkOrder::PreOrder>([&](Operation *op) {
    ops.push_back(op);
    return isa<AMPOpInterface>(op) && op->getNumRegions()
               ? WalkResult::skip()
               : WalkResult::advance();
  });
  for (Operation *op : ops) {
    if (createdCasts.contains(op))
      continue;
    for (OpOperand &operand : op->getOpOperands()) {
      Value value = operand.get();
      Type cur = getAMPElementType(value.getType());
      if (!isa<FloatType>(cur))
        continue;
      auto it = operandVertex.find(&operand);
      Type want;
      if (it != operandVertex.end() && paint.allow[it->second])
        want = lowType;
      else if (auto orig = originalTypes.find(value);
               orig != originalTypes.end())
        want = getAMPElementType(orig->second);
      else
        continue;
      if (want != cur)
        operand.set(getCast(value, want, op));
    }
  }
}

void InterfaceRewriter::record() {
  AMPSummary &s = report.summary;
  for (Node &n : nodes) {
    bool isDenied = false;
    int deniedVertex = -1;
    for (unsigned v : n.vertices)
      if (paint.deny[v]) {
        isDenied = true;
        deniedVertex = v;
      }
    if (!n.keep)
      s.countNode(n.list, n.converted, isDenied);
    if (!records)
      continue;
    AMPNodeRecord rec;
    rec.name = n.name.empty() ? locationText(n.op->getLoc()) : n.name;
    rec.domain = n.domain;
    rec.opType = n.opType;
    rec.list = n.list;
    rec.lowPrecision = n.converted;
    std::string listed =
        getAMPListName(n.list).str() + ": " + n.domain + ":" + n.opType;
    if (n.keep)
      rec.reason = "keep-fp32";
    else if (n.list == AMPList::None)
      rec.reason = "not on any list";
    else if (n.list == AMPList::Deny)
      rec.reason = listed;
    else if (paint.nothingToDo)
      rec.reason = "stays fp32: no allow-list node in the graph, nothing to do";
    else if (isDenied) {
      int root = paint.denyRoot[deniedVertex];
      const Node &r = nodes[vertexGroup[root].first];
      rec.reason = "blocked by deny node " +
                   (r.name.empty() ? r.domain + ":" + r.opType : r.name) +
                   " at " + locationText(r.op->getLoc());
    } else if (n.converted)
      rec.reason = listed;
    else if (n.list == AMPList::Allow)
      rec.reason =
          listed + ", but no f32 port can take " + getAMPModeName(mode).str();
    else if (n.list == AMPList::Infer)
      rec.reason = "stays fp32: not between allow nodes";
    else
      rec.reason = "stays fp32: no allow neighbour";
    report.nodes.push_back(std::move(rec));
  }
}

void amp::train::runAMPOnFunction(FunctionOpInterface fn, const AMPLists &lists,
                                  AMPMode mode,
                                  ArrayRef<llvm::Regex> keepRegexes,
                                  const llvm::StringSet<> &keepNames,
                                  AMPReport &report, bool records) {
  InterfaceRewriter(fn, lists, mode, keepRegexes, keepNames, report, records)
      .run();
}

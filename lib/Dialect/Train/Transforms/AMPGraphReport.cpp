//===- AMPGraphReport.cpp - what the AMP pass reports ---------------------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// What the AMP pass tells about one graph: the summary counts, a record per
// node with the reason for its precision (report= and dot=), and a warning
// naming the operator versions that kept allow-list nodes fp32 (a later opset
// of the operator takes the low type).
//
//===----------------------------------------------------------------------===//

#include "AMPGraphRewriter.h"
#include "amp/Dialect/Train/IR/SymbolicDims.h"

using namespace mlir;
using namespace amp::train;
using namespace amp::train::detail;

//===----------------------------------------------------------------------===//
// Report
//===----------------------------------------------------------------------===//

int AMPGraphRewriter::getLaterOpsetTaking(const OnnxOpSchema &schema) {
  auto [it, inserted] = laterOpsetTaking.try_emplace(&schema, 0);
  if (!inserted)
    return it->second;
  StringRef low =
      mode == AMPMode::BF16 ? "tensor(bfloat16)" : "tensor(float16)";
  // The constraints that take f32 but not the low type, by name: a later
  // version keeps the names of its type constraints.
  SmallVector<StringRef, 2> lacking;
  for (const OnnxTypeConstraintSchema &c : schema.getConstraints())
    if (llvm::is_contained(c.getAllowedTypes(), StringRef("tensor(float)")) &&
        !llvm::is_contained(c.getAllowedTypes(), low))
      lacking.push_back(c.name);
  for (const OnnxOpSchema *next = lookupNextOnnxSchema(schema);
       next && !lacking.empty(); next = lookupNextOnnxSchema(*next))
    for (StringRef name : lacking)
      if (const OnnxTypeConstraintSchema *c = next->findConstraint(name);
          c && llvm::is_contained(c->getAllowedTypes(), low))
        return laterOpsetTaking[&schema] = next->sinceVersion;
  return 0;
}

void AMPGraphRewriter::warnOpsetLimits() {
  if (opsetLimits.empty())
    return;
  unsigned total = 0;
  for (const auto &entry : opsetLimits)
    total += entry.second.nodes;
  // At the graph's location, without the graph printed after it.
  InFlightDiagnostic diag =
      mlir::emitWarning(graph.getLoc())
      << "auto-mixed-precision: " << total
      << (total == 1 ? " allow-list node stays" : " allow-list nodes stay")
      << " fp32 because the model's operator "
         "versions take no "
      << getAMPModeName(mode) << ": ";
  bool onlyOnnx = true;
  llvm::interleaveComma(opsetLimits, diag, [&](const auto &entry) {
    const auto &[domain, opType, since] = entry.first;
    const OpsetLimit &l = entry.second;
    onlyOnnx &= domain.empty();
    diag << (domain.empty() ? "" : domain + ":") << opType << "-" << since
         << " (" << l.nodes << "; from opset " << l.taking << ")";
  });
  diag << "; convert the model to a newer opset first";
  if (onlyOnnx)
    diag << " (e.g. with onnx.version_converter)";
}

void AMPGraphRewriter::record() {
  AMPSummary &s = report.summary;
  // A symbolic dim of a GEMM or convolution operand, sized by the pass's
  // dims= (through the casts the pass inserted: their inputs carry the
  // names), else -1.
  std::optional<SymbolicDimNames> dimNames;
  auto resolveDim = [&](Value v, unsigned d) -> int64_t {
    if (!dimBindings || dimBindings->empty())
      return -1;
    if (!dimNames)
      dimNames.emplace(graph);
    while (auto cast = v.getDefiningOp<CastOp>())
      v = cast.getInput();
    StringRef name = dimNames->get(v, d);
    auto it = name.empty() ? dimBindings->end() : dimBindings->find(name);
    return it == dimBindings->end() ? -1 : it->second;
  };
  auto nodeNameOf = [&](int v) -> std::string {
    if (v < 0)
      return "?";
    const NodeInfo &n = nodes[vertexNode[v]];
    StringRef name = nodeName(n);
    return (name.empty() ? opTypeOf(n) : name).str();
  };
  // A neighbouring vertex of an allow-list node that stayed f32 (its
  // operator cannot take the low type, or it is kept), or -1.
  auto unpaintedAllowNeighbour = [&](const NodeInfo &info) -> int {
    for (unsigned v : info.vertices())
      for (ArrayRef<unsigned> next : {edges.fanin(v), edges.fanout(v)})
        for (unsigned w : next)
          if (!allow[w] && nodes[vertexNode[w]].list == AMPList::Allow)
            return w;
    return -1;
  };
  for (NodeInfo &info : nodes) {
    bool isDenied = false;
    int deniedVertex = -1;
    for (unsigned v : info.vertices())
      if (deny[v]) {
        isDenied = true;
        deniedVertex = v;
      }

    if (info.processable)
      s.countNode(info.list, info.converted, isDenied);
    // An allow-list node whose f32 ports take no low type at this opset,
    // though a later version of its operator does.
    int laterOpset = 0;
    if (info.processable && info.schema && info.list == AMPList::Allow &&
        !info.converted && !isDenied && !info.keep && !info.structural &&
        llvm::any_of(info.vertices(), [&](unsigned v) {
          return pv[v].isF32 && !pv[v].supports;
        }))
      laterOpset = getLaterOpsetTaking(*info.schema);
    if (laterOpset) {
      OpsetLimit &limit =
          opsetLimits[{normalizeOnnxDomain(domainOf(info)).str(),
                       opTypeOf(info).str(), info.schema->sinceVersion}];
      limit.taking = laterOpset;
      ++limit.nodes;
    }
    // A converted GEMM or convolution: its sizes against Tensor Cores.
    if (info.converted && !info.isCast)
      if (auto sizes = getTensorCoreSizes(info.op, resolveDim)) {
        StringRef name = nodeName(info);
        report.tensorCore.push_back(
            {(name.empty() ? opTypeOf(info) : name).str(), opTypeOf(info).str(),
             std::move(*sizes)});
      }
    if (!records) // the summary is all that was asked for
      continue;

    AMPNodeRecord rec;
    StringRef domain = domainOf(info), opType = opTypeOf(info);
    rec.name = nodeName(info).str();
    rec.domain = domain.str();
    rec.opType = opType.str();
    rec.list = info.list;
    rec.lowPrecision = info.converted;
    std::string listed = (getAMPListName(info.list) + ": " +
                          (domain.empty() ? opType : domain + ":" + opType))
                             .str();

    if (info.structural)
      rec.reason = "has subgraphs of unknown semantics: treated as fp32";
    else if (auto it = rangeReasons.find(info.op); it != rangeReasons.end())
      rec.reason = "measured range: " + it->second;
    else if (info.keep)
      rec.reason = "keep-fp32";
    else if (info.retargetedCast && info.converted)
      rec.reason = "existing Cast retargeted: all consumers are " +
                   getAMPModeName(mode).str();
    else if (info.list == AMPList::None)
      rec.reason =
          info.schema ? "not on any list" : "not on any list (no ONNX schema)";
    else if (!info.schema)
      rec.reason = listed + ", but no ONNX schema: fp32";
    else if (info.list == AMPList::Deny)
      rec.reason = listed;
    else if (nothingToDo)
      rec.reason = "stays fp32: no allow-list node in the graph, nothing to do";
    else if (isDenied) {
      int root = denyRoot[deniedVertex], via = paintFrom[deniedVertex];
      rec.reason = "blocked by deny node " + nodeNameOf(root);
      if (via >= 0 && via != root)
        rec.reason += " via " + nodeNameOf(via);
    } else if (info.converted) {
      rec.reason = listed;
      for (unsigned v : info.vertices()) {
        if (!allow[v])
          continue;
        switch (why[v]) {
        case PaintWhy::Between:
          rec.reason +=
              ", between allow nodes (via " + nodeNameOf(paintFrom[v]) + ")";
          break;
        case PaintWhy::FollowAllow:
          rec.reason += ", follows allow node " + nodeNameOf(paintFrom[v]);
          break;
        case PaintWhy::Clear:
          rec.reason += ", next to " + getAMPModeName(mode).str() + " node " +
                        nodeNameOf(paintFrom[v]);
          break;
        default:
          break;
        }
        break;
      }
    } else if (info.list == AMPList::Allow) {
      rec.reason =
          listed + ", but no f32 port can take " + getAMPModeName(mode).str();
      if (laterOpset)
        rec.reason += " (" + opType.str() + "-" +
                      std::to_string(info.schema->sinceVersion) +
                      " takes none; opset " + std::to_string(laterOpset) +
                      " does)";
    } else if (int w = unpaintedAllowNeighbour(info); w >= 0)
      rec.reason = "stays fp32: its allow-list neighbour " + nodeNameOf(w) +
                   " stays fp32";
    else if (info.list == AMPList::Infer)
      rec.reason = "stays fp32: not between allow nodes";
    else
      rec.reason = "stays fp32: no allow neighbour";
    report.nodes.push_back(std::move(rec));
  }

  // Erase folded casts last (records above still read their ops).
  for (NodeInfo &info : nodes)
    if (info.retargetedCast && info.converted && info.op->use_empty() &&
        isa<CastOp>(info.op))
      info.op->erase();
}

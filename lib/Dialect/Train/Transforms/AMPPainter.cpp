//===- AMPPainter.cpp - Grappler's painting passes on a vertex graph ------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//

#include "amp/Dialect/Train/Transforms/AMPPainter.h"
#include "llvm/ADT/ArrayRef.h"

using namespace llvm;
using namespace amp::train;

void AMPEdges::finalize(unsigned numVertices) {
  // Counting sort by producer: stable, so each fan-out list keeps the order
  // its edges were added in.
  outStart.assign(numVertices + 1, 0);
  for (auto [from, to] : pending)
    ++outStart[from + 1];
  for (unsigned v = 0; v < numVertices; ++v)
    outStart[v + 1] += outStart[v];
  outList.resize(pending.size());
  {
    std::vector<unsigned> next(outStart.begin(), outStart.end() - 1);
    for (auto [from, to] : pending)
      outList[next[from]++] = to;
  }
  pending.clear();
  pending.shrink_to_fit();
  // Repeats (a value read twice by one node, two results of one group read
  // by one node) dropped, each list keeping its first occurrences.
  std::vector<unsigned> seenFrom(numVertices, ~0u);
  size_t kept = 0;
  for (unsigned v = 0; v < numVertices; ++v) {
    size_t begin = outStart[v], end = outStart[v + 1];
    outStart[v] = kept;
    for (size_t e = begin; e < end; ++e)
      if (seenFrom[outList[e]] != v) {
        seenFrom[outList[e]] = v;
        outList[kept++] = outList[e];
      }
  }
  outStart[numVertices] = kept;
  outList.resize(kept);
  // Fan-in lists in producer order.
  inStart.assign(numVertices + 1, 0);
  for (unsigned to : outList)
    ++inStart[to + 1];
  for (unsigned v = 0; v < numVertices; ++v)
    inStart[v + 1] += inStart[v];
  inList.resize(kept);
  std::vector<unsigned> next(inStart.begin(), inStart.end() - 1);
  for (unsigned v = 0; v < numVertices; ++v)
    for (unsigned to : fanout(v))
      inList[next[to]++] = v;
}

/// Iterative DFS from `roots` over fan-in and/or fan-out edges, entering a
/// vertex when `enter` says so; `visit(v, parent)` on every vertex reached.
template <typename Enter, typename Visit>
static void dfs(const AMPEdges &edges, unsigned numVertices,
                ArrayRef<unsigned> roots, bool inputs, bool outputs,
                Enter enter, Visit visit) {
  std::vector<char> seen(numVertices, 0);
  SmallVector<std::pair<unsigned, int>> stack;
  stack.reserve(std::min<size_t>(numVertices, 1 << 16));
  for (unsigned r : roots) {
    if (seen[r])
      continue;
    seen[r] = 1;
    stack.push_back({r, -1});
    while (!stack.empty()) {
      auto [v, parent] = stack.pop_back_val();
      visit(v, parent);
      auto step = [&](ArrayRef<unsigned> next) {
        for (unsigned w : next)
          if (!seen[w] && enter(w)) {
            seen[w] = 1;
            stack.push_back({w, (int)v});
          }
      };
      if (inputs)
        step(edges.fanin(v));
      if (outputs)
        step(edges.fanout(v));
    }
  }
}

AMPPaint amp::train::paintAMP(ArrayRef<AMPVertex> vertices,
                              const AMPEdges &edges, AMPMode mode) {
  unsigned numV = vertices.size();
  AMPPaint p;
  p.allow.assign(numV, 0);
  p.deny.assign(numV, 0);
  p.why.assign(numV, AMPPaintWhy::None);
  p.paintFrom.assign(numV, -1);
  p.denyRoot.assign(numV, -1);
  std::vector<char> &allow = p.allow, &deny = p.deny;
  auto listOf = [&](unsigned v) { return vertices[v].list; };
  auto canTake = [&](unsigned w) {
    return canTakeLowType(vertices[w], deny[w]);
  };

  // Pass 1: allow-list ops.
  std::vector<unsigned> allowOps, denyOps, denyOrInferOps;
  size_t numAllow = 0, numDeny = 0, numInfer = 0;
  for (const AMPVertex &v : vertices) {
    numAllow += v.list == AMPList::Allow;
    numDeny += v.list == AMPList::Deny;
    numInfer += v.list == AMPList::Infer;
  }
  allowOps.reserve(numAllow);
  denyOps.reserve(numDeny);
  denyOrInferOps.reserve(numDeny + numInfer);
  // Unlike Grappler, an allow-list vertex that cannot take the low type
  // (not f32, or an operator version whose constraint lacks it: Conv-11 in
  // bf16, an integer MatMul) seeds nothing. Grappler paints it here and
  // drops it in pass 6, after passes 3 and 5 spread its paint to the clear
  // nodes around it: harmless in TensorFlow, whose allow-list kernels all
  // take fp16 and bf16, but in ONNX it would leave low-precision islands of
  // clear nodes between f32 nodes, each wrapped in casts.
  bool anyAllowOp = false;
  for (unsigned v = 0; v < numV; ++v) {
    AMPList l = listOf(v);
    if (l == AMPList::Allow) {
      anyAllowOp = true;
      if (vertices[v].isF32 && vertices[v].supports) {
        allow[v] = 1;
        p.why[v] = AMPPaintWhy::AllowOp;
        allowOps.push_back(v);
      }
    }
    if (l == AMPList::Deny)
      denyOps.push_back(v);
    if (l == AMPList::Deny || l == AMPList::Infer)
      denyOrInferOps.push_back(v);
  }
  if (!anyAllowOp) {
    p.nothingToDo = true;
    return p;
  }

  // Pass 2: deny forward through clear/infer, only along paths that end at
  // a deny or infer op.
  std::vector<char> upstream(numV, 0);
  dfs(
      edges, numV, denyOrInferOps, /*inputs=*/true, /*outputs=*/false,
      [&](unsigned w) { return listOf(w) == AMPList::Clear && !upstream[w]; },
      [&](unsigned v, int) { upstream[v] = 1; });
  dfs(
      edges, numV, denyOps, /*inputs=*/false, /*outputs=*/true,
      [&](unsigned w) { return !deny[w] && upstream[w]; },
      [&](unsigned v, int parent) {
        deny[v] = 1;
        allow[v] = 0;
        bool isRoot = parent < 0 || listOf(v) == AMPList::Deny;
        p.denyRoot[v] = isRoot ? (int)v : p.denyRoot[parent];
        p.paintFrom[v] = isRoot ? -1 : parent;
      });

  // Pass 3: clear/infer between allow ops.
  std::vector<char> downstream(numV, 0);
  dfs(
      edges, numV, allowOps, false, true,
      [&](unsigned w) {
        AMPList l = listOf(w);
        return (l == AMPList::Clear || l == AMPList::Infer) && canTake(w) &&
               !downstream[w];
      },
      [&](unsigned v, int) { downstream[v] = 1; });
  dfs(
      edges, numV, allowOps, true, false,
      [&](unsigned w) { return downstream[w] && listOf(w) != AMPList::Allow; },
      [&](unsigned v, int parent) {
        if (allow[v])
          return;
        allow[v] = 1;
        p.why[v] = AMPPaintWhy::Between;
        p.paintFrom[v] = parent;
      });

  // Pass 4 (bf16): infer ops fed by allow and by no deny.
  if (mode == AMPMode::BF16) {
    for (unsigned v = 0; v < numV; ++v) {
      if (listOf(v) != AMPList::Infer || allow[v] || !canTake(v))
        continue;
      int from = -1;
      bool anyDeny = false;
      for (unsigned w : edges.fanin(v)) {
        if (deny[w])
          anyDeny = true;
        if (allow[w] && from < 0)
          from = w;
      }
      if (from >= 0 && !anyDeny) {
        allow[v] = 1;
        p.why[v] = AMPPaintWhy::FollowAllow;
        p.paintFrom[v] = from;
      }
    }
  }

  // Pass 5: allow through clear ops, both directions.
  std::vector<unsigned> allowNow;
  allowNow.reserve(llvm::count(allow, 1));
  for (unsigned v = 0; v < numV; ++v)
    if (allow[v])
      allowNow.push_back(v);
  dfs(
      edges, numV, allowNow, true, true,
      [&](unsigned w) {
        return listOf(w) == AMPList::Clear && !allow[w] && canTake(w);
      },
      [&](unsigned v, int parent) {
        if (allow[v])
          return;
        allow[v] = 1;
        p.why[v] = AMPPaintWhy::Clear;
        p.paintFrom[v] = parent;
      });

  // Pass 6: drop what cannot take the low type.
  for (unsigned v = 0; v < numV; ++v)
    if (allow[v] && (!vertices[v].isF32 || !vertices[v].supports))
      allow[v] = 0;
  return p;
}

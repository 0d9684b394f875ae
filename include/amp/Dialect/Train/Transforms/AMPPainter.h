//===- AMPPainter.h - Grappler's painting passes on a vertex graph -*- C++
//-*-=//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// The painting passes of Grappler's auto_mixed_precision on an abstract graph
// of (node, type constraint) vertices. The ONNX rewriter (train dialect) and
// the interface-driven rewriter (upstream dialects) build the vertices their
// own way and share this.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_DIALECT_TRAIN_TRANSFORMS_AMPPAINTER_H
#define AMP_DIALECT_TRAIN_TRANSFORMS_AMPPAINTER_H

#include "amp/Dialect/Train/Transforms/AMPPolicy.h"
#include "llvm/ADT/SmallVector.h"
#include <vector>

namespace amp::train {

/// One (node, type constraint) vertex as painting sees it. Its edges are
/// in the AMPEdges of the graph.
struct AMPVertex {
  AMPList list = AMPList::None; ///< the list of its node
  bool isF32 = false;           ///< its ports are f32 now
  bool supports = false;        ///< its constraint allows the low type
};

/// The edges between vertices, in compressed sparse rows: one flat array per
/// direction, so that a graph of a million nodes costs a few bytes per edge
/// and no allocation per vertex. Built by add(), in any order, then
/// finalize(); fanout(v) and fanin(v) keep the order edges were first added
/// in.
class AMPEdges {
public:
  /// Adds the edge from -> to; finalize() drops repeats.
  void add(unsigned from, unsigned to) { pending.push_back({from, to}); }
  /// Room for `n` edges before finalize().
  void reserve(size_t n) { pending.reserve(n); }
  /// Builds both directions for `numVertices` vertices.
  void finalize(unsigned numVertices);

  llvm::ArrayRef<unsigned> fanout(unsigned v) const {
    return llvm::ArrayRef(outList).slice(outStart[v],
                                         outStart[v + 1] - outStart[v]);
  }
  llvm::ArrayRef<unsigned> fanin(unsigned v) const {
    return llvm::ArrayRef(inList).slice(inStart[v],
                                        inStart[v + 1] - inStart[v]);
  }

private:
  std::vector<std::pair<unsigned, unsigned>> pending;
  std::vector<unsigned> outStart, outList, inStart, inList;
};

/// Why a vertex was painted ALLOW.
enum class AMPPaintWhy : uint8_t {
  None,
  AllowOp,
  Between,
  FollowAllow,
  Clear,
  Cast
};

struct AMPPaint {
  std::vector<char> allow, deny;
  std::vector<AMPPaintWhy> why;
  std::vector<int> paintFrom; ///< neighbour vertex that painted it, or -1
  std::vector<int> denyRoot;  ///< deny-list vertex a deny paint came from
  /// No allow-list vertex: nothing was painted (Grappler's "No allowlist ops
  /// found, nothing to do").
  bool nothingToDo = false;
};

/// Whether a vertex may be painted ALLOW: not DENY, f32 now, and its
/// constraint allows the low type.
inline bool canTakeLowType(const AMPVertex &v, bool denied) {
  return !denied && v.isF32 && v.supports;
}

/// Runs Grappler's passes 1-6 (docs/AutoMixedPrecision.md, "Painting").
AMPPaint paintAMP(llvm::ArrayRef<AMPVertex> vertices, const AMPEdges &edges,
                  AMPMode mode);

} // namespace amp::train

#endif // AMP_DIALECT_TRAIN_TRANSFORMS_AMPPAINTER_H

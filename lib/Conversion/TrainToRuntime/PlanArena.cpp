//===- PlanArena.cpp - temporaries placed in one arena by liveness --------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// Every temporary lives from the first call that touches it to the last
// (graph outputs to the end); a view (AliasReshapes.cpp) keeps the buffer it
// views alive. Two buffers whose lives overlap never share memory, so a
// call's outputs never overlap its inputs.
//
// Placement is offset assignment of intervals, NP-hard in general; four
// greedy orders are tried and the smallest arena is kept:
//  * first fit in order of definition (the lowest offset free of every
//    block alive at the buffer's first call), good when lifetimes nest;
//  * greedy by size (Pisarchyk & Lee, "Efficient Memory Management for Deep
//    Neural Net Inference", 2020; TFLite's GreedyBySize): largest first, at
//    the lowest offset free of every placed buffer whose life overlaps,
//    good when a few large buffers dominate (a backward pass's gradients);
//    and the same with buffers of one size taken latest-dying first (the
//    transformer fixture's AMP step at batch 16, with fused attention:
//    133,120 -> 125,696 bytes);
//  * greedy by area (size x life), the same walk: long-lived small buffers
//    (loss scaling's scalars, an activation kept for the backward pass) go
//    before large short-lived ones, which then stack above them only where
//    they meet (the MLP fixture's AMP step: 5,632 -> 5,184 bytes).
// Neither is ever below the lower bound, the most bytes alive at one call;
// the split of that peak by Buffer::Role is what amp-run reports. (The
// greedy walks are quadratic: graphs of more than 20,000 temporaries get
// first fit alone.)
//
//===----------------------------------------------------------------------===//

#include "PlannedProgram.h"

using namespace amp::lowering;

namespace {
struct Block {
  int64_t off, size;
  int first, last;
};

int64_t blockSize(const Buffer &b) {
  return std::max<int64_t>((b.bytes() + 63) / 64 * 64, 64);
}

/// The lowest offset at which `size` bytes fit between the blocks of
/// `taken` (sorted by offset).
int64_t lowestFit(ArrayRef<Block> taken, int64_t size) {
  int64_t off = 0;
  for (const Block &l : taken) {
    if (off + size <= l.off)
      break;
    off = std::max(off, l.off + l.size);
  }
  return off;
}

/// Places the buffers `ids` in this order, each at the lowest offset free of
/// every placed buffer whose life overlaps its own; returns the arena size.
/// When `ids` are in order of definition, a placed buffer overlaps the next
/// one exactly when it is still alive at that one's first call, so the
/// blocks that died are dropped as the walk goes (first fit, linear in the
/// live set); in any other order every placed block is checked.
int64_t placeInOrder(ArrayRef<Buffer> bufs, ArrayRef<int> ids,
                     bool byDefinition, SmallVectorImpl<int64_t> &offsets) {
  SmallVector<Block> placed, overlapping;
  int64_t arena = 0;
  for (int id : ids) {
    const Buffer &b = bufs[id];
    overlapping.clear();
    if (byDefinition)
      llvm::erase_if(placed, [&](const Block &p) { return p.last < b.first; });
    for (const Block &p : placed)
      if (p.first <= b.last && b.first <= p.last)
        overlapping.push_back(p);
    llvm::sort(overlapping,
               [](const Block &x, const Block &y) { return x.off < y.off; });
    int64_t size = blockSize(b);
    int64_t off = lowestFit(overlapping, size);
    offsets[id] = off;
    placed.push_back({off, size, b.first, b.last});
    arena = std::max(arena, off + size);
  }
  return arena;
}

/// Greedy by size is quadratic in the buffers: past this many, first fit
/// alone.
constexpr size_t kMaxGreedyBuffers = 20000;
} // namespace

void PlannedProgram::planArena(int64_t &arenaBytes, int64_t split[4],
                               bool keepAll) {
  // Liveness over call indices; outputs (with keepAll, every temporary)
  // live to the end.
  int end = calls.size();
  auto touch = [&](int b, int ci) {
    for (int id = b; id >= 0; id = bufs[id].aliasOf) {
      Buffer &buf = bufs[id];
      buf.first = buf.first < 0 ? ci : std::min(buf.first, ci);
      buf.last = std::max(buf.last, ci);
    }
  };
  for (auto [ci, c] : llvm::enumerate(calls))
    for (auto &list : c.tensors)
      for (int b : list)
        touch(b, int(ci));
  for (int b : results)
    touch(b, end);
  // A lowering's own intermediates (no ONNX value: an im2col, a
  // transposed copy) are never read after the run and keep their liveness.
  if (keepAll)
    for (auto [id, b] : llvm::enumerate(bufs))
      if (b.kind == Buffer::Temp && b.first >= 0 && !b.name.empty())
        touch(int(id), end);

  SmallVector<int> order;
  for (auto [i, b] : llvm::enumerate(bufs))
    if (b.kind == Buffer::Temp && b.first >= 0 && b.aliasOf < 0)
      order.push_back(i);
  // First fit in order of definition; then, unless the graph is too large,
  // greedy by size (largest first) and greedy by area (size x life: a small
  // buffer alive across the step before a large short-lived one).
  SmallVector<int> byDef(order);
  llvm::stable_sort(
      byDef, [&](int a, int b) { return bufs[a].first < bufs[b].first; });
  SmallVector<int64_t> offsets(bufs.size(), 0), tried(bufs.size(), 0);
  arenaBytes = placeInOrder(bufs, byDef, /*byDefinition=*/true, offsets);
  // Greedy by size twice: buffers of one size (a transformer has many)
  // taken in order of definition, or those that live longest into the step
  // first; the two pack differently, and either may be the smaller.
  for (auto [byArea, lastFirst] :
       {std::pair{false, false}, {true, false}, {false, true}}) {
    if (order.size() > kMaxGreedyBuffers)
      break;
    // A double: size x life can pass int64 in an absurd graph.
    auto key = [&](int id) {
      const Buffer &b = bufs[id];
      return double(blockSize(b)) * (byArea ? double(b.last - b.first + 1) : 1);
    };
    SmallVector<int> greedy(order);
    llvm::stable_sort(greedy, [&](int a, int b) {
      double ka = key(a), kb = key(b);
      if (ka != kb)
        return ka > kb;
      if (lastFirst && bufs[a].last != bufs[b].last)
        return bufs[a].last > bufs[b].last;
      return bufs[a].first < bufs[b].first;
    });
    int64_t size = placeInOrder(bufs, greedy, /*byDefinition=*/false, tried);
    if (size < arenaBytes) {
      arenaBytes = size;
      std::swap(offsets, tried);
    }
  }
  for (int id : order)
    bufs[id].offset = offsets[id];
  for (Buffer &b : bufs)
    if (b.aliasOf >= 0) {
      int root = b.aliasOf;
      while (bufs[root].aliasOf >= 0)
        root = bufs[root].aliasOf;
      b.offset = bufs[root].offset;
    }

  // What is alive at the call where most is, by role.
  SmallVector<int64_t> liveBytes(end + 1, 0);
  for (int id : order) {
    liveBytes[bufs[id].first] += bufs[id].bytes();
    if (bufs[id].last + 1 <= end)
      liveBytes[bufs[id].last + 1] -= bufs[id].bytes();
  }
  int peak = 0;
  int64_t running = 0, best = -1;
  for (int ci = 0; ci <= end; ++ci) {
    running += liveBytes[ci];
    if (running > best) {
      best = running;
      peak = ci;
    }
  }
  for (int r = 0; r < 4; ++r)
    split[r] = 0;
  for (int id : order)
    if (bufs[id].first <= peak && peak <= bufs[id].last)
      split[bufs[id].role] += bufs[id].bytes();
}

//===- RematerializeCasts.cpp - cast again instead of keeping a copy ------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// Mixed precision puts casts between the fp32 and the 16-bit halves of a
// graph. A cast's output is often read twice, far apart: the fp16 copy of a
// weight by the forward GEMM and by the backward GEMM that computes the
// input's gradient; the fp16 copy of an activation by the forward GEMM and
// by the weight-gradient GEMM; the fp32 copy of a GEMM output by a
// LayerNorm and by its gradient. Kept as one buffer, the copy lives across
// the whole step beside the value it was cast from, and an AMP step holds
// more memory than the fp32 step (GPT-2 small: 900 MB against 738 MB).
//
// Casting is exact to repeat (the same bits from the same input), and a
// widening cast's input is half the size of its output. So each group of
// nearby readers (readers at most kGap calls apart) after the first gets a
// fresh cast of the source right before it, when the source is still there
// to cast from:
//
//  * a graph input or constant that no call of the graph writes (the
//    weights the optimizer updates only after the step), or
//  * a temporary that nothing writes in place, and that is alive at that
//    group anyway (it has a reader there or later), or is no larger than
//    the copy (a widening cast: keeping the fp16 value alive instead of its
//    fp32 copy halves what the gap holds).
//
// The copy then lives only from its cast to its group's last reader. Not
// rematerialized: copies that are graph outputs or that a call writes in
// place (their value may change), and casts between integer types (any
// cast qualifies; these are rare and small).
//
// A transpose or a reshape of a graph input is as exact to repeat (the
// channels-last twin of an image batch, amprt-channels-last's, read by the
// first convolution and by its weight gradient; a reshape of an input
// cannot be a view of it, as inputs are not in the arena): those get
// fresh copies too, from a graph input or constant, or from a temporary
// alive at the group anyway (the copy is as large as its source, so keeping
// the source instead saves nothing).
//
//===----------------------------------------------------------------------===//

#include "PlannedProgram.h"

using namespace amp::lowering;

/// Readers of a cast's output at most this many calls apart share one copy.
/// (A few calls apart are the backward GEMMs of one product, which read the
/// same fp16 operand; a forward reader and its backward one are hundreds of
/// calls apart in a real graph.)
static constexpr int kGap = 8;

void PlannedProgram::rematerializeCasts() {
  CallUses u = callUses();
  // Each source's last reader, updated as fresh casts read it later.
  DenseMap<int, int> lastUse;
  for (auto &[b, uses] : u.uses)
    for (auto [ci, slot] : uses)
      lastUse[b] = std::max(lastUse.lookup(b), ci);

  // Fresh casts to insert, by the call index they go before.
  struct Fresh {
    std::string kernel;
    int x, copy;
    NamedAttrList attrs; // the cast's: profiles name its node
    Location loc;
  };
  std::map<int, SmallVector<Fresh, 1>> before;
  for (auto [ci, c] : llvm::enumerate(calls)) {
    StringRef kernel = c.sig->name;
    bool cast = kernel == "cast";
    if ((!cast && kernel != "transpose" && kernel != "reshape") ||
        c.tensors.size() != 2 || c.tensors[0].size() != 1 ||
        c.tensors[1].size() != 1)
      continue;
    int x = c.tensors[0][0], y = c.tensors[1][0];
    // (Values, not references: newBufferLike grows `bufs`.)
    if (x == y || bufs[y].kind != Buffer::Temp || bufs[y].aliasOf >= 0 ||
        u.written.contains(y) || u.outputs.contains(y) ||
        u.written.contains(x) || bufs[x].aliasOf >= 0)
      continue;
    // The copy's readers after its cast, in order.
    SmallVector<std::pair<int, int>> readers;
    for (auto [rc, slot] : u.uses.lookup(y))
      if (rc > int(ci))
        readers.push_back({rc, slot});
    llvm::sort(readers);
    bool persistent = bufs[x].kind != Buffer::Temp;
    bool smaller = bufs[x].bytes() <= bufs[y].bytes();
    // Groups of readers; the first keeps the original copy.
    size_t g = 0;
    while (g < readers.size()) {
      size_t e = g + 1;
      while (e < readers.size() &&
             readers[e].first - readers[e - 1].first <= kGap)
        ++e;
      int start = readers[g].first;
      bool fresh =
          g > 0 && start - readers[g - 1].first > kGap &&
          (persistent || (cast && smaller) || lastUse.lookup(x) >= start);
      if (fresh) {
        int copy = newBufferLike(y);
        bufs[copy].role = bufs[y].role;
        before[start].push_back({kernel.str(), x, copy, c.attrs, c.loc});
        for (size_t k = g; k < e; ++k) {
          auto &list = calls[readers[k].first].tensors[readers[k].second];
          for (int &b : list)
            if (b == y)
              b = copy;
        }
        lastUse[x] = std::max(lastUse.lookup(x), start);
      }
      g = e;
    }
  }
  if (before.empty())
    return;

  SmallVector<PlannedCall> out;
  out.reserve(calls.size() + before.size());
  for (auto [ci, c] : llvm::enumerate(calls)) {
    if (auto it = before.find(int(ci)); it != before.end())
      for (const Fresh &f : it->second)
        out.push_back(plannedCall(f.kernel, {{"x", {f.x}}, {"y", {f.copy}}},
                                  f.attrs, f.loc));
    out.push_back(std::move(c));
  }
  calls = std::move(out);
}

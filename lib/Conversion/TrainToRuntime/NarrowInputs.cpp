//===- NarrowInputs.cpp - data inputs taken in their 16-bit type ----------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// Mixed precision casts a batch of f32 data (an MLP's features, a CNN's
// images) to f16/bf16 before the first GEMM or convolution reads it. The
// cast's output is a temporary: the step holds the batch twice, the f32
// buffer the driver fills and its 16-bit copy in the arena, and the copy
// grows with the batch. Where the input is wider than the activations (an
// MLP of 64 features and 32 hidden units) AMP then needs more memory per
// sample than f32 does.
//
// A driver that fills the batch itself can convert it on the way in, as it
// copies the samples. With narrowInputs, an f32 graph input whose shape has
// a dim bound by `dims` (a batch of data: weights have static shapes) and
// whose every reader is a cast to one 16-bit float type becomes an input of
// that type: the casts go, their readers read the input, and the lowered
// function's argument carries kNarrowedFromAttr (f32) so that the driver
// knows to round its f32 samples to nearest even, as the cast did. The
// results are bit-identical; the 16-bit copy and the f32 buffer are
// replaced by one 16-bit buffer outside the arena.
//
//===----------------------------------------------------------------------===//

#include "PlannedProgram.h"

using namespace amp::lowering;

void PlannedProgram::narrowDataInputs(
    function_ref<bool(unsigned argIndex)> isData) {
  CallUses u = callUses();
  DenseMap<int, SmallVector<int>> castsOf; // input buffer -> cast calls
  for (auto [x, b] : llvm::enumerate(bufs)) {
    if (b.kind != Buffer::Arg || !isData(b.argIndex) || !b.elem.isF32() ||
        u.written.contains(int(x)) || u.outputs.contains(int(x)))
      continue;
    Type to;
    SmallVector<int> casts;
    bool ok = true;
    for (auto [ci, slot] : u.uses.lookup(int(x))) {
      const PlannedCall &c = calls[ci];
      int y = c.sig->name == "cast" && slot == 0 && c.tensors.size() == 2 &&
                      c.tensors[1].size() == 1
                  ? c.tensors[1][0]
                  : -1;
      Type t = y >= 0 ? bufs[y].elem : Type();
      ok &= y >= 0 && (t.isF16() || t.isBF16()) && (!to || t == to) &&
            bufs[y].kind == Buffer::Temp && bufs[y].aliasOf < 0 &&
            !u.outputs.contains(y) && !u.written.contains(y);
      if (!ok)
        break;
      to = t;
      casts.push_back(int(ci));
    }
    if (!ok || casts.empty())
      continue;
    castsOf[int(x)] = std::move(casts);
  }
  if (castsOf.empty())
    return;

  llvm::DenseSet<int> dropped;
  DenseMap<int, int> replace; // a cast's output -> the narrowed input
  for (auto &[x, casts] : castsOf) {
    Buffer &b = bufs[x];
    Type to = bufs[calls[casts.front()].tensors[1][0]].elem;
    narrowedArgs.push_back({b.argIndex, b.elem});
    b.elem = to;
    argTypes[b.argIndex] = MemRefType::get(b.shape, to);
    for (int ci : casts) {
      replace[calls[ci].tensors[1][0]] = x;
      dropped.insert(ci);
    }
  }
  for (PlannedCall &c : calls)
    for (auto &list : c.tensors)
      for (int &b : list)
        if (auto it = replace.find(b); it != replace.end())
          b = it->second;
  spliceCalls(dropped);
}

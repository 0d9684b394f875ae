//===- ReuseInputs.cpp - elementwise outputs in a dying input's memory ----===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// An elementwise call whose input is read for the last time there can write
// its output over that input: element i of the output depends on element i
// of the input only, and is written after it is read. Ops.def allows it for
// the binary ops ("a, b and y may alias"), the unary float ops ("x and y
// may alias") and sum ("y may alias an input of y's shape"). Backward
// passes are chains of such calls over large tensors (a tied embedding's
// gradient: GatherGrad plus the LM head's gradient, summed; residual
// gradients added); each reuse saves one tensor at that point of the step.
//
// The output becomes a view of the input's memory (Buffer::aliasOf, as
// AliasReshapes.cpp makes them), which then lives as long as either. Taken
// when: the input is a temporary (or a view of one) that no call writes in
// place, no later call reads it or any other view of its memory, it is no
// graph output, and it has the output's element type and element count; the
// output is a temporary first written by this call.
//
//===----------------------------------------------------------------------===//

#include "PlannedProgram.h"

using namespace amp::lowering;

void PlannedProgram::reuseInputs() {
  CallUses u = callUses();
  auto root = [&](int b) {
    while (bufs[b].aliasOf >= 0)
      b = bufs[b].aliasOf;
    return b;
  };
  // The last call touching each root's memory (through any view), and the
  // first call touching each buffer.
  DenseMap<int, int> last, first;
  for (auto [ci, c] : llvm::enumerate(calls))
    for (auto &list : c.tensors)
      for (int b : list) {
        int r = root(b);
        last[r] = std::max(last.lookup(r), int(ci));
        first.try_emplace(b, int(ci));
      }
  llvm::DenseSet<int> outputRoots;
  for (int b : results)
    outputRoots.insert(root(b));
  llvm::DenseSet<int> writtenRoots;
  for (int b : u.written)
    writtenRoots.insert(root(b));

  for (auto [ci, c] : llvm::enumerate(calls)) {
    if (!isElementwiseFloat(c.sig->name) || c.tensors.empty() ||
        c.tensors.back().size() != 1)
      continue;
    int y = c.tensors.back().front(); // the output is the last parameter
    const Buffer &out = bufs[y];
    if (out.kind != Buffer::Temp || out.aliasOf >= 0 ||
        first.lookup(y) != int(ci) || u.written.contains(y))
      continue;
    for (size_t s = 0; s + 1 < c.tensors.size(); ++s) {
      bool reused = false;
      for (int x : c.tensors[s]) {
        int r = root(x);
        const Buffer &in = bufs[r];
        if (r == y || in.kind != Buffer::Temp || last.lookup(r) != int(ci) ||
            outputRoots.contains(r) || writtenRoots.contains(r) ||
            in.elem != out.elem || numel(in.shape) != numel(out.shape) ||
            numel(bufs[x].shape) != numel(out.shape))
          continue;
        bufs[y].aliasOf = r;
        // The memory now lives as long as the output does.
        last[r] = std::max(last.lookup(r), last.lookup(y));
        if (outputRoots.contains(y))
          outputRoots.insert(r);
        reused = true;
        break;
      }
      if (reused)
        break;
    }
  }
}

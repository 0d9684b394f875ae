//===- AliasReshapes.cpp - reshapes as views of their input ---------------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// Reshape, Flatten, Squeeze and Unsqueeze lower to amprt_reshape, and
// Identity to amprt_identity: copies of the bytes. A temporary's bytes are
// written once, by the call that produces it, so a copy of a temporary can
// instead be a second view of the same arena memory: the call goes away and
// the two buffers share one place, alive as long as either is read. A
// transformer step has dozens of these (57 reshapes per step in the
// GPU-sized fixture; gradient graphs add an Identity per bias gradient).
//
// Not aliased: graph inputs and constants (their memory is not in the
// arena), and any buffer a call writes in place after producing it (the
// gradient accumulator's buffer, an optimizer's state, the loss scale):
// there the copy is the semantics.
//
//===----------------------------------------------------------------------===//

#include "PlannedProgram.h"

#include "llvm/ADT/DenseSet.h"

using namespace amp::lowering;

void PlannedProgram::aliasReshapes() {
  llvm::DenseSet<int> written = buffersWrittenInPlace();
  auto root = [&](int b) {
    while (bufs[b].aliasOf >= 0)
      b = bufs[b].aliasOf;
    return b;
  };
  SmallVector<PlannedCall> kept;
  kept.reserve(calls.size());
  for (PlannedCall &c : calls) {
    StringRef k = c.sig->name;
    if ((k == "reshape" || k == "identity") && c.tensors.size() == 2 &&
        c.tensors[0].size() == 1 && c.tensors[1].size() == 1) {
      int x = c.tensors[0][0], y = c.tensors[1][0];
      int r = root(x);
      if (x != y && bufs[r].kind == Buffer::Temp &&
          bufs[y].kind == Buffer::Temp && bufs[y].aliasOf < 0 &&
          bufs[x].elem == bufs[y].elem && bufs[x].bytes() == bufs[y].bytes() &&
          !written.contains(x) && !written.contains(r) &&
          !written.contains(y)) {
        bufs[y].aliasOf = r;
        bufs[y].reshapeView = true;
        continue;
      }
    }
    kept.push_back(std::move(c));
  }
  calls = std::move(kept);
}

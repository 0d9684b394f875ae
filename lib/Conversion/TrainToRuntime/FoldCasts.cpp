//===- FoldCasts.cpp - casts folded into their producer or consumer -------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// Mixed precision widens 16-bit values to f32 where an f32 node reads them:
// the residual Add of a transformer, the Sum that accumulates a tied
// embedding's gradient (GatherGrad in f32 plus the LM head's f16 GEMM
// gradient). The cast writes a second, twice as large copy of the value.
//
// The elementwise kernels read each operand in its own dtype and compute in
// f32 (Ops.def: "f32/f16/bf16 in, f32 math"), on both backends. Widening
// f16 or bf16 to f32 is exact, so such a kernel reading the 16-bit value
// computes what it computed from the cast: the cast and its copy go away,
// and results are bit-identical.
//
// Likewise a cast that narrows an f32 temporary to f16/bf16, when the
// temporary's producer is its only other user and writes any float dtype
// by rounding its f32 value once (the elementwise kernels, sum, the loss
// gradient): the producer writes the 16-bit value directly, the same bits,
// and the f32 copy is never made (the logits' gradient of a language model
// feeding the LM head's fp16 backward GEMM).
//
// A widening cast folds when it widens f16/bf16 to f32, its output is a
// temporary that is no graph output and that no call writes in place, and every
// call reading it is a float binary op, a unary float op (not a cast, copy or
// test), an activation gradient, sum, or softmax_cross_entropy_loss (its
// scores: the logits of a language model, cast to f32 for the loss, are the
// step's largest tensor).
//
//===----------------------------------------------------------------------===//

#include "PlannedProgram.h"

#include "llvm/ADT/StringSet.h"

using namespace amp::lowering;

/// Whether call `c`'s kernel reads the float tensor operand in tensor slot
/// `slot` in any of f32, f16 and bf16 (converting to f32 as it loads it).
static bool readsAnyFloat(const PlannedCall &c, int slot) {
  static const llvm::StringSet<> comparisons = {
      "less", "greater", "equal", "less_or_equal", "greater_or_equal"};
  StringRef k = c.sig->name;
  if (isElementwiseFloat(k) || comparisons.contains(k))
    return true;
  // The loss reads its scores (the logits) in their dtype: the AMP graph's
  // cast of f16 logits to f32, the step's largest tensor in a language
  // model, folds into it.
  return k == "softmax_cross_entropy_loss" &&
         slot == PlannedProgram::tensorSlot(c, "scores");
}

/// Whether call `c` writes its float output in tensor slot `slot` in any of
/// f32, f16 and bf16, computing in f32 and rounding once into it.
static bool writesAnyFloat(const PlannedCall &c, int slot) {
  StringRef k = c.sig->name;
  if (isElementwiseFloat(k))
    return slot == int(c.tensors.size()) - 1; // the output is the last
  // The loss gradient (the logits' gradient, cast to f16 for the LM head's
  // backward GEMM).
  return k == "softmax_cross_entropy_loss_grad" &&
         slot == PlannedProgram::tensorSlot(c, "dx");
}

void PlannedProgram::foldWideningCasts() {
  CallUses u = callUses();
  llvm::DenseSet<int> folded; // cast calls that go
  for (auto [ci, c] : llvm::enumerate(calls)) {
    if (c.sig->name != "cast" || c.tensors.size() != 2 ||
        c.tensors[0].size() != 1 || c.tensors[1].size() != 1)
      continue;
    int x = c.tensors[0][0], y = c.tensors[1][0];
    Type from = bufs[x].elem, to = bufs[y].elem;
    // Narrowing f32 to f16/bf16: the producer rounds into y directly, once,
    // from the f32 value it would have stored in x (the same bits).
    if (from.isF32() && (to.isF16() || to.isBF16()) &&
        bufs[x].kind == Buffer::Temp && bufs[y].kind == Buffer::Temp &&
        !u.written.contains(x) && !u.outputs.contains(x) &&
        !u.written.contains(y)) {
      auto xs = u.uses.lookup(x);
      if (xs.size() == 2 && xs[1].first == int(ci) && xs[0].first < int(ci) &&
          writesAnyFloat(calls[xs[0].first], xs[0].second)) {
        for (int &b : calls[xs[0].first].tensors[xs[0].second])
          if (b == x)
            b = y;
        folded.insert(int(ci));
        continue;
      }
    }
    if (!(from.isF16() || from.isBF16()) || !to.isF32() ||
        bufs[y].kind != Buffer::Temp || bufs[y].aliasOf >= 0 ||
        u.written.contains(y) || u.outputs.contains(y))
      continue;
    bool ok = true;
    SmallVector<std::pair<int, int>> readers;
    for (auto [rc, slot] : u.uses.lookup(y)) {
      if (rc == int(ci))
        continue;
      ok &= rc > int(ci) && readsAnyFloat(calls[rc], slot);
      readers.push_back({rc, slot});
    }
    if (!ok || readers.empty())
      continue;
    for (auto [rc, slot] : readers)
      for (int &b : calls[rc].tensors[slot])
        if (b == y)
          b = x;
    folded.insert(int(ci));
  }
  spliceCalls(folded);
}

//===- EarlyAccumulate.cpp - gradients into their buffers as they come ----===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// Loss scaling gates each gradient's accumulation on the step's all-finite
// flag, and the flag needs every gradient: as FuseUnscale.cpp leaves it,
// one multi_tensor_unscale_check reads all the (fp16) weight gradients and
// only then does each unscale_gate_accumulate write its buffer. Every
// weight gradient is alive at once, as many bytes as the fp16 weights: a
// 660M-parameter decoder's AMP step held 1.4 GB of them, twice its fp32
// step's arena, whose gradients go into their buffers as they come.
//
// When the driver overwrites the accumulation buffers every step (its
// lazy_reset_grad is always true, or a version-1 accumulate signal always
// false: amp-run without --accumulate, the lowering option
// `overwrite-accumulators`), the gate can come after the writes instead:
//
//   first:         fill(flag, true)
//   for each gradient g, right after it is made:
//                  multi_tensor_unscale_check([g], inv, flag)   ANDed
//                  unscale_gate_accumulate(buffer, g, inv, true, ...)
//   at the end:    multi_tensor_zero_unless(buffers, gate)
//
// ANDs commute, so ScheduleCalls.cpp orders the checks only after the fill
// and before the flag's readers, and moves each with its gradient (when
// ORT made the weight-gradient GEMM late, the GEMM, its check and its
// accumulation move up together). The flag is the same AND of the same
// products; a buffer holds g * inv
// when the step is finite and zero bytes (+0, as the gate's 0 gives)
// otherwise: the same bits as before, and each gradient lives only until
// it is in its buffer. Taken for a check that is the only writer of its
// flag (reset), every one of whose gradients is gated into an accumulator
// by exactly one call with the check's factor, and read by nothing else.
//
//===----------------------------------------------------------------------===//

#include "PlannedProgram.h"

#include "llvm/ADT/MapVector.h"

using namespace amp::lowering;

bool PlannedProgram::accumulateEarly() {
  CallUses u = callUses();
  int trueFlag = -1;
  // New calls, by the call index they go before or after.
  DenseMap<int, SmallVector<PlannedCall, 2>> before, following;
  llvm::DenseSet<int> drop;
  for (auto [ki, k] : llvm::enumerate(calls)) {
    if (k.sig->name != "multi_tensor_unscale_check")
      continue;
    const auto &gs = k.tensors[tensorSlot(k, "ins")];
    int inv = singleBuffer(k, "inv_scale"),
        flag = singleBuffer(k, "all_finite");
    if (cast<IntegerAttr>(k.attrs.get("reset")).getInt() == 0 || inv < 0 ||
        flag < 0 || gs.empty())
      continue;
    // The flag's writers: this check alone.
    bool ok = true;
    for (auto [ci, slot] : u.uses.lookup(flag)) {
      const PlannedCall &c = calls[ci];
      bool writes = slot == tensorSlot(c, "all_finite") &&
                    (c.sig->name == "multi_tensor_unscale_check" ||
                     c.sig->name == "multi_tensor_all_finite" ||
                     c.sig->name == "multi_tensor_unscale");
      ok &= !writes || ci == int(ki);
    }
    // Each gradient: made by one call before the check, read by the check
    // and one gate-accumulate with its factor.
    struct Grad {
      int g, producer, gate;
    };
    SmallVector<Grad> grads;
    llvm::SmallDenseSet<int, 16> seen;
    for (int g : gs) {
      if (!ok)
        break;
      ok &= seen.insert(g).second && bufs[g].kind == Buffer::Temp &&
            !u.written.contains(g) && !u.outputs.contains(g);
      int producer = -1, gate = -1;
      for (auto [ci, slot] : u.uses.lookup(g)) {
        const PlannedCall &c = calls[ci];
        if (ci == int(ki))
          continue;
        if (producer < 0 && ci < int(ki)) {
          producer = ci;
          continue;
        }
        if (c.sig->name == "unscale_gate_accumulate" && gate < 0 &&
            slot == tensorSlot(c, "x") && singleBuffer(c, "inv_scale") == inv &&
            singleBuffer(c, "buffer") >= 0 && singleBuffer(c, "gate") >= 0) {
          gate = ci;
          continue;
        }
        ok = false;
      }
      ok &= producer >= 0 && gate > int(ki);
      grads.push_back({g, producer, gate});
    }
    if (!ok)
      continue;

    if (trueFlag < 0) {
      HostTensor t;
      t.elem = IntegerType::get(ctx, 1);
      t.v = {1.0};
      trueFlag = constBuffer(t);
    }
    // The flag starts true and each gradient's check ANDs into it right
    // after the gradient is made, with its accumulation: ANDs commute, so
    // the scheduler may move each with its gradient (ScheduleCalls.cpp).
    int firstProducer = int(calls.size());
    for (const Grad &gr : grads)
      firstProducer = std::min(firstProducer, gr.producer);
    NamedAttrList fillAttrs;
    fillAttrs.set("node", k.attrs.get("node"));
    fillAttrs.set("value", f64(1.0));
    before[firstProducer].push_back(
        plannedCall("fill", {{"y", {flag}}}, fillAttrs, k.loc));
    llvm::MapVector<int, SmallVector<int, 8>> byGate; // gate -> buffers
    int lastGate = 0;
    for (const Grad &gr : grads) {
      NamedAttrList checkAttrs = k.attrs;
      checkAttrs.set("n", i64(1));
      checkAttrs.set("reset", i32(0));
      auto &now = following[gr.producer];
      now.push_back(plannedCall(
          "multi_tensor_unscale_check",
          {{"ins", {gr.g}}, {"inv_scale", {inv}}, {"all_finite", {flag}}},
          checkAttrs, k.loc));
      PlannedCall &a = calls[gr.gate];
      int buffer = singleBuffer(a, "buffer");
      byGate[singleBuffer(a, "gate")].push_back(buffer);
      now.push_back(
          plannedCall("unscale_gate_accumulate",
                      {{"buffer", {buffer}},
                       {"x", {gr.g}},
                       {"inv_scale", {inv}},
                       {"gate", {trueFlag}},
                       {"overwrite", a.tensors[tensorSlot(a, "overwrite")]},
                       {"updated", a.tensors[tensorSlot(a, "updated")]}},
                      a.attrs, a.loc));
      drop.insert(gr.gate);
      lastGate = std::max(lastGate, gr.gate);
    }
    drop.insert(int(ki));
    for (auto &[gate, buffers] : byGate) {
      NamedAttrList attrs;
      attrs.set("node", calls[lastGate].attrs.get("node"));
      attrs.set("n", i64(buffers.size()));
      SmallVector<int, 1> ins(buffers.begin(), buffers.end());
      following[lastGate].push_back(plannedCall(
          "multi_tensor_zero_unless", {{"ins", ins}, {"keep", {gate}}}, attrs,
          calls[lastGate].loc));
    }
  }
  if (drop.empty())
    return false;
  SmallVector<PlannedCall> out;
  out.reserve(calls.size() + 2 * drop.size());
  for (auto [ci, c] : llvm::enumerate(calls)) {
    if (auto b = before.find(int(ci)); b != before.end())
      out.append(b->second.begin(), b->second.end());
    if (!drop.contains(int(ci)))
      out.push_back(std::move(c));
    if (auto f = following.find(int(ci)); f != following.end())
      out.append(f->second.begin(), f->second.end());
  }
  calls = std::move(out);
  return true;
}

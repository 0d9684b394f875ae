//===- GatherGradSums.cpp - summed GatherGrads as scatters into one buffer
//-===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// A tensor gathered several times gets one GatherGrad per gather, each a
// full-size tensor of zeros with its slice written, and their Sum. PyTorch's
// nn.MultiheadAttention does this to the packed q/k/v projection: it is
// unbound with three Gathers of a scalar index, and its gradient is three
// [3, ...] GatherGrads and a Sum, four times the projection's size where
// one would do (the largest buffers of the transformer fixture's step).
//
// When every input of a sum is a gather_grad along axis 0 with a constant
// scalar index (all distinct), made for this sum alone, the sum's output is
// filled with
// zeros once (before the first gather_grad) and each gather's dY is added
// into its slice in place by scatter_nd (reduction add), where the
// gather_grad was. Each element of the result then gets 0 plus the one
// value the sum added to zeros (distinct scalar indices give each element
// one value at most; zeros add exactly, and 0 + -0 is +0 both ways): the
// bits are the same. The dY tensors,
// one slice each, live until their scatter instead of full-size copies.
//
//===----------------------------------------------------------------------===//

#include "PlannedProgram.h"

using namespace amp::lowering;

void PlannedProgram::fuseGatherGradSums() {
  CallUses u = callUses();
  // The gather_grad call producing each buffer.
  DenseMap<int, int> producer;
  for (auto [ci, c] : llvm::enumerate(calls))
    if (c.sig->name == "gather_grad")
      producer[singleBuffer(c, "dx")] = int(ci);

  CallReplacements replace;
  llvm::DenseSet<int> drop;
  for (auto [ci, c] : llvm::enumerate(calls)) {
    if (c.sig->name != "sum")
      continue;
    int y = singleBuffer(c, "y");
    const auto &ins = c.tensors[tensorSlot(c, "inputs")];
    if (y < 0 || ins.size() < 2 || bufs[y].kind != Buffer::Temp ||
        u.written.contains(y))
      continue;
    bool ok = true;
    llvm::SmallDenseSet<int64_t, 4> indexValues;
    for (int g : ins) {
      auto p = producer.find(g);
      if (p == producer.end() || int(ci) <= p->second) {
        ok = false;
        break;
      }
      const PlannedCall &gg = calls[p->second];
      int idx = singleBuffer(gg, "indices");
      auto axis = cast<IntegerAttr>(gg.attrs.get("axis")).getInt();
      // Made for this sum alone (one writer, one reader), of y's type,
      // along axis 0, at a constant scalar index.
      ok &= bufs[g].kind == Buffer::Temp && !u.written.contains(g) &&
            !u.outputs.contains(g) && u.uses.lookup(g).size() == 2 &&
            llvm::count(ins, g) == 1 && bufs[g].elem == bufs[y].elem &&
            bufs[g].shape == bufs[y].shape && axis == 0 && idx >= 0 &&
            bufs[idx].kind == Buffer::Const && bufs[idx].shape.empty() &&
            isa<DenseElementsAttr>(bufs[idx].value);
      if (!ok)
        break;
      // Distinct indices: each element gets one value at most, so the
      // order of the scatters is the order of nothing.
      std::optional<HostTensor> h = readHost(bufs[idx].value);
      ok &=
          h && h->v.size() == 1 && indexValues.insert(hostInt(h->v[0])).second;
      if (!ok)
        break;
    }
    if (!ok)
      continue;
    NamedAttrList fillAttrs = c.attrs;
    fillAttrs.erase("n");
    fillAttrs.set("value", f64(0.0));
    int firstProducer = int(calls.size());
    for (int g : ins)
      firstProducer = std::min(firstProducer, producer[g]);
    replace[firstProducer].push_back(
        plannedCall("fill", {{"y", {y}}}, fillAttrs, c.loc));
    for (int g : ins) {
      int pi = producer[g];
      const PlannedCall &gg = calls[pi];
      int dy = singleBuffer(gg, "dy");
      // The index as a one-tuple of scatter_nd's indices ([1]).
      Buffer index = bufs[singleBuffer(gg, "indices")];
      auto type = cast<ShapedType>(index.value.getType());
      index.value = cast<ElementsAttr>(
          cast<DenseElementsAttr>(index.value)
              .reshape(RankedTensorType::get({1}, type.getElementType())));
      index.shape = {1};
      int idx = newBuffer(index);
      auto &now = replace[pi];
      NamedAttrList attrs;
      attrs.set("node", gg.attrs.get("node"));
      attrs.set("reduction", i32(1)); // add
      now.push_back(plannedCall(
          "scatter_nd",
          {{"data", {y}}, {"indices", {idx}}, {"updates", {dy}}, {"y", {y}}},
          attrs, gg.loc));
    }
    drop.insert(int(ci));
  }
  if (replace.empty())
    return;
  spliceCalls(drop, replace);
}

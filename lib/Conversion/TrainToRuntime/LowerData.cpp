//===- LowerData.cpp - gather, slice, concat, expand, FusedMatMul, Scale --===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// Data movement on device tensors whose geometry (indices' shapes, slice
// bounds, target shapes) is known when lowering, and the com.microsoft
// matmul/scale helpers ORT's gradient builder emits.
//
//===----------------------------------------------------------------------===//

#include "LoweringTable.h"

#include "llvm/ADT/StringSwitch.h"

namespace amp::lowering {

FailureOr<bool> GraphLowering::lowerData(StringRef domain, StringRef type) {
  bool onnx = domain.empty() || domain == "ai.onnx";
  bool ms = domain == "com.microsoft";

  if (onnx && type == "Gather") {
    auto d = in(0), idx = in(1);
    if (failed(d) || failed(idx))
      return failure();
    const Shape &sd = shapeOf(*d);
    int64_t rank = sd.size(), axis = attrInt("axis", 0);
    if (failed(normAxis(axis, rank)))
      return failure();
    Shape sy(sd.begin(), sd.begin() + axis);
    Shape si = shapeOf(*idx);
    sy.append(si.begin(), si.end());
    sy.append(sd.begin() + axis + 1, sd.end());
    auto y = out(0, sy);
    if (failed(y))
      return failure();
    return handled(call("gather",
                        {{"data", {*d}}, {"indices", {*idx}}, {"y", {*y}}},
                        {{"axis", i64(axis)}}));
  }
  if (onnx && type == "Pad") {
    // Pads and the value are inputs from opset 11 (axes from 18), before
    // that attributes; ORT's gradient of Pad is a Pad by the negated pads.
    auto x = in(0);
    if (failed(x))
      return failure();
    Shape sx = shapeOf(*x);
    int64_t rank = sx.size();
    SmallVector<int64_t> given;
    if (has(1)) {
      auto p = hostInts(1);
      if (failed(p))
        return failure();
      given = *p;
    } else {
      given = attrInts("pads").value_or(SmallVector<int64_t>());
    }
    SmallVector<int64_t> axes;
    if (has(3)) {
      auto a = hostInts(3);
      if (failed(a))
        return failure();
      axes = *a;
    } else {
      for (int64_t d = 0; d < rank; ++d)
        axes.push_back(d);
    }
    if (given.size() != 2 * axes.size())
      return err() << "pads has " << given.size() << " entries for "
                   << axes.size() << " axes";
    SmallVector<int64_t> pads(2 * rank, 0);
    for (auto [i, a] : llvm::enumerate(axes)) {
      if (failed(normAxis(a, rank)))
        return failure();
      pads[a] = given[i];
      pads[a + rank] = given[i + axes.size()];
    }
    double value = attrFloat("value", 0.0);
    if (has(2)) {
      auto v = hostIn(2);
      if (!v || v->v.size() != 1)
        return err() << "constant_value must be one element known when "
                        "lowering";
      value = v->v[0];
    }
    std::string mode = attrStr("mode", "constant");
    int32_t m = llvm::StringSwitch<int32_t>(mode)
                    .Case("constant", 0)
                    .Case("reflect", 1)
                    .Case("edge", 2)
                    .Case("wrap", 3)
                    .Default(-1);
    if (m < 0)
      return err() << "unknown mode '" << mode << "'";
    Shape sy = sx;
    for (int64_t d = 0; d < rank; ++d) {
      if (__builtin_add_overflow(sx[d], pads[d], &sy[d]) ||
          __builtin_add_overflow(sy[d], pads[d + rank], &sy[d]) || sy[d] < 0)
        return err() << "pads " << pads[d] << ", " << pads[d + rank]
                     << " of dim " << d << " (" << sx[d]
                     << ") give a negative or overflowing size";
      if (m != 0 && sx[d] == 0 && sy[d] > 0)
        return err() << "dim " << d << " is empty: mode '" << mode
                     << "' cannot pad it";
    }
    auto y = out(0, sy);
    if (failed(y))
      return failure();
    return handled(call("pad", {{"x", {*x}}, {"y", {*y}}},
                        {{"pads", ints(pads)},
                         {"npads", i64(2 * rank)},
                         {"mode", i32(m)},
                         {"value", f64(value)}}));
  }
  // --- picking along one axis (Select.cpp) --------------------------------
  // The indices of GatherElements / ScatterElements may be shorter than the
  // data on every dim but the axis, never longer.
  auto indicesFit = [&](ArrayRef<int64_t> data, ArrayRef<int64_t> idx,
                        int64_t axis) -> LogicalResult {
    if (data.size() != idx.size())
      return err() << "indices and data have different ranks";
    for (size_t d = 0; d < data.size(); ++d)
      if (int64_t(d) != axis && idx[d] > data[d])
        return err() << "indices exceed the data at dim " << d << " (" << idx[d]
                     << " > " << data[d] << ")";
    return success();
  };
  // The kernels that compare values take floats.
  auto floatInput = [&](int b) -> LogicalResult {
    if (!isa<FloatType>(bufs[b].elem))
      return err() << "input 0 has element type " << bufs[b].elem
                   << "; the runtime's " << type << " takes f32, f16 or bf16";
    return success();
  };
  if (onnx && (type == "ArgMax" || type == "ArgMin")) {
    // Integers are compared exactly (HF's GPT-2 finds the last non-pad token
    // with an ArgMax over an i32 mask).
    auto x = in(0);
    if (failed(x))
      return failure();
    Type e = bufs[*x].elem;
    auto it = dyn_cast<IntegerType>(e);
    if (!e.isF32() && !e.isF16() && !e.isBF16() &&
        !(it && llvm::is_contained({1u, 8u, 32u, 64u}, it.getWidth())))
      return err() << "input 0 has element type " << e << "; the runtime's "
                   << type << " takes f32, f16, bf16, integers or bool";
    Shape sy = shapeOf(*x);
    int64_t axis = attrInt("axis", 0), keep = attrInt("keepdims", 1);
    if (failed(normAxis(axis, int64_t(sy.size()))))
      return failure();
    if (keep)
      sy[axis] = 1;
    else
      sy.erase(sy.begin() + axis);
    auto y = out(0, sy, IntegerType::get(ctx, 64));
    if (failed(y))
      return failure();
    return handled(call(
        type == "ArgMax" ? "arg_max" : "arg_min", {{"x", {*x}}, {"y", {*y}}},
        {{"axis", i64(axis)},
         {"keepdims", i32(keep)},
         {"select_last_index", i32(attrInt("select_last_index", 0))}}));
  }
  if (onnx && type == "TopK") {
    auto x = in(0);
    if (failed(x) || failed(floatInput(*x)))
      return failure();
    SmallVector<int64_t> kv;
    if (has(1)) {
      auto k = hostInts(1);
      if (failed(k))
        return failure();
      kv = *k;
    } else if (auto k = attrInts("k")) { // opset 1
      kv = *k;
    } else if (auto k = attrInt("k", -1); k >= 0) {
      kv = {k};
    }
    if (kv.size() != 1)
      return err() << "k must be one value known when lowering";
    Shape sy = shapeOf(*x);
    int64_t axis = attrInt("axis", -1);
    if (failed(normAxis(axis, int64_t(sy.size()))))
      return failure();
    if (kv[0] < 0 || kv[0] > sy[axis])
      return err() << "k = " << kv[0] << " for an axis of " << sy[axis];
    sy[axis] = kv[0];
    auto v = out(0, sy);
    auto i = out(1, sy, IntegerType::get(ctx, 64));
    if (failed(v) || failed(i))
      return failure();
    return handled(call("top_k",
                        {{"x", {*x}}, {"values", {*v}}, {"indices", {*i}}},
                        {{"k", i64(kv[0])},
                         {"axis", i64(axis)},
                         {"largest", i32(attrInt("largest", 1))},
                         {"sorted", i32(attrInt("sorted", 1))}}));
  }
  if (onnx && type == "CumSum") {
    // RoBERTa's position ids are a CumSum of the non-pad mask.
    auto x = in(0);
    if (failed(x))
      return failure();
    auto a = hostInts(1);
    if (failed(a))
      return failure();
    if (a->size() != 1)
      return err() << "axis must be one value, got " << a->size();
    Type e = bufs[*x].elem;
    if (!e.isF32() && !e.isF16() && !e.isBF16() && !e.isInteger(64) &&
        !e.isInteger(32))
      return err() << "input 0 has element type " << e
                   << "; the runtime's CumSum takes f32, f16, bf16, i64 or "
                      "i32";
    int64_t axis = (*a)[0];
    Shape s = shapeOf(*x);
    if (failed(normAxis(axis, int64_t(s.size()))))
      return failure();
    auto y = out(0, s);
    if (failed(y))
      return failure();
    return handled(call("cumsum", {{"x", {*x}}, {"y", {*y}}},
                        {{"axis", i64(axis)},
                         {"exclusive", i32(attrInt("exclusive", 0))},
                         {"reverse", i32(attrInt("reverse", 0))}}));
  }
  if (onnx && type == "GatherElements") {
    auto d = in(0), idx = in(1);
    if (failed(d) || failed(idx))
      return failure();
    int64_t axis = attrInt("axis", 0);
    if (failed(normAxis(axis, int64_t(shapeOf(*d).size()))) ||
        failed(indicesFit(shapeOf(*d), shapeOf(*idx), axis)))
      return failure();
    auto y = out(0, shapeOf(*idx));
    if (failed(y))
      return failure();
    return handled(call("gather_elements",
                        {{"data", {*d}}, {"indices", {*idx}}, {"y", {*y}}},
                        {{"axis", i64(axis)}}));
  }
  // GatherND (dynamo exports of x[arange(b), idx]) and ORT's gradient of
  // it, GatherNDGrad (shape, indices, dY).
  if ((onnx && type == "GatherND") || (ms && type == "GatherNDGrad")) {
    bool grad = type == "GatherNDGrad";
    auto idx = in(1);
    if (failed(idx))
      return failure();
    Shape sd;
    int data = -1;
    if (grad) {
      auto shape = hostInts(0);
      if (failed(shape))
        return failure();
      sd.assign(shape->begin(), shape->end());
    } else {
      auto d = in(0);
      if (failed(d))
        return failure();
      data = *d;
      sd = shapeOf(data);
    }
    Shape si = shapeOf(*idx);
    int64_t b = attrInt("batch_dims", 0), r = sd.size(), q = si.size();
    int64_t k = q ? si.back() : 0;
    if (q < 1 || b < 0 || b >= std::min(r, q) || k < 1 || k > r - b)
      return err() << "indices of rank " << q << " with last dim " << k
                   << ", data of rank " << r << " and batch_dims " << b
                   << " do not fit";
    for (int64_t d = 0; d < b; ++d)
      if (si[d] != sd[d])
        return err() << "batch dim " << d << " differs: " << si[d]
                     << " in the indices, " << sd[d] << " in the data";
    Shape sy(si.begin(), si.end() - 1);
    sy.append(sd.begin() + b + k, sd.end());
    if (grad) {
      auto dy = in(2);
      if (failed(dy))
        return failure();
      if (!llvm::equal(shapeOf(*dy), sy))
        return err() << "dY's shape is not the gathered shape";
      auto dx = out(0, sd);
      if (failed(dx))
        return failure();
      return handled(call("gather_nd_grad",
                          {{"dy", {*dy}}, {"indices", {*idx}}, {"dx", {*dx}}},
                          {{"batch_dims", i64(b)}}));
    }
    auto y = out(0, sy);
    if (failed(y))
      return failure();
    return handled(call("gather_nd",
                        {{"data", {data}}, {"indices", {*idx}}, {"y", {*y}}},
                        {{"batch_dims", i64(b)}}));
  }
  // The scatters' reduction attribute (opset 16, max/min 18) as the
  // runtime's number; the element types each kernel reduces.
  auto reduction = [&](Type data, bool integers) -> FailureOr<int32_t> {
    std::string red = attrStr("reduction", "none");
    int32_t r = llvm::StringSwitch<int32_t>(red)
                    .Case("none", 0)
                    .Case("add", 1)
                    .Case("mul", 2)
                    .Case("max", 3)
                    .Case("min", 4)
                    .Default(-1);
    if (r < 0)
      return err() << "unknown reduction '" << red << "'";
    if (r && !data.isF32() && !data.isF16() && !data.isBF16() &&
        !(integers && (data.isInteger(64) || data.isInteger(32))))
      return err() << "reduction '" << red << "' on element type " << data
                   << "; the runtime's " << type << " reduces f32, f16, bf16"
                   << (integers ? ", i64 or i32" : "");
    return r;
  };
  if (onnx && type == "ScatterElements") {
    auto d = in(0), idx = in(1), u = in(2);
    if (failed(d) || failed(idx) || failed(u))
      return failure();
    int64_t axis = attrInt("axis", 0);
    if (failed(normAxis(axis, int64_t(shapeOf(*d).size()))) ||
        failed(indicesFit(shapeOf(*d), shapeOf(*idx), axis)))
      return failure();
    if (!llvm::equal(shapeOf(*u), shapeOf(*idx)))
      return err() << "updates and indices have different shapes";
    auto r = reduction(bufs[*d].elem, false);
    if (failed(r))
      return failure();
    auto y = out(0, shapeOf(*d));
    if (failed(y))
      return failure();
    return handled(call(
        "scatter_elements",
        {{"data", {*d}}, {"indices", {*idx}}, {"updates", {*u}}, {"y", {*y}}},
        {{"axis", i64(axis)}, {"reduction", i32(*r)}}));
  }
  // ScatterND (opsets 11-18): encoder-decoder exports build their causal
  // masks and shift their decoder inputs right with it (slice assignment).
  if (onnx && type == "ScatterND") {
    auto d = in(0), idx = in(1), u = in(2);
    if (failed(d) || failed(idx) || failed(u))
      return failure();
    const Shape &sd = shapeOf(*d), &si = shapeOf(*idx);
    int64_t r = sd.size(), q = si.size(), k = q ? si.back() : 0;
    if (q < 1 || k < 1 || k > r)
      return err() << "indices of rank " << q << " with last dim " << k
                   << " do not fit data of rank " << r
                   << " (need 1 <= last dim <= data rank)";
    Shape su(si.begin(), si.end() - 1);
    su.append(sd.begin() + k, sd.end());
    if (!llvm::equal(shapeOf(*u), su)) {
      auto e = err() << "updates have shape [";
      llvm::interleaveComma(shapeOf(*u), e);
      e << "], expected [";
      llvm::interleaveComma(su, e);
      return e << "] (the indices' leading dims, then the data's after the "
                  "indexed ones)";
    }
    auto red = reduction(bufs[*d].elem, true);
    if (failed(red))
      return failure();
    auto y = out(0, sd);
    if (failed(y))
      return failure();
    return handled(call(
        "scatter_nd",
        {{"data", {*d}}, {"indices", {*idx}}, {"updates", {*u}}, {"y", {*y}}},
        {{"reduction", i32(*red)}}));
  }
  if (ms && type == "GatherElementsGrad") {
    // (dY, the data's shape, indices)
    auto dy = in(0), idx = in(2);
    auto shape = hostInts(1);
    if (failed(dy) || failed(idx) || failed(shape))
      return failure();
    int64_t axis = attrInt("axis", 0);
    if (failed(normAxis(axis, int64_t(shape->size()))) ||
        failed(indicesFit(*shape, shapeOf(*idx), axis)))
      return failure();
    auto dx = out(0, *shape);
    if (failed(dx))
      return failure();
    return handled(call("gather_elements_grad",
                        {{"dy", {*dy}}, {"indices", {*idx}}, {"dx", {*dx}}},
                        {{"axis", i64(axis)}}));
  }
  if ((onnx || ms) && type == "Trilu") {
    // com.microsoft Trilu is ORT's gradient of Trilu: the same operation.
    auto x = in(0);
    if (failed(x))
      return failure();
    int64_t k = 0;
    if (has(1)) {
      auto kv = hostInts(1);
      if (failed(kv))
        return failure();
      if (kv->size() != 1)
        return err() << "k must be one value";
      k = (*kv)[0];
    }
    auto y = out(0, shapeOf(*x));
    if (failed(y))
      return failure();
    return handled(call("trilu", {{"x", {*x}}, {"y", {*y}}},
                        {{"k", i64(k)}, {"upper", i32(attrInt("upper", 1))}}));
  }
  if (ms && type == "GatherGrad") {
    // (shape of the gathered tensor, indices, dY)
    auto shape = hostInts(0);
    if (failed(shape))
      return failure();
    auto idx = in(1), dy = in(2);
    if (failed(idx) || failed(dy))
      return failure();
    int64_t rank = shape->size(), axis = attrInt("axis", 0);
    if (failed(normAxis(axis, rank)))
      return failure();
    auto dx = out(0, *shape);
    if (failed(dx))
      return failure();
    return handled(call("gather_grad",
                        {{"dy", {*dy}}, {"indices", {*idx}}, {"dx", {*dx}}},
                        {{"axis", i64(axis)}}));
  }
  // Slice(x, starts, ends, axes, steps) and com.microsoft SliceGrad(dY,
  // shape of x, starts, ends, axes, steps): one normalized geometry.
  bool sliceGrad = ms && type == "SliceGrad";
  if ((onnx && type == "Slice") || sliceGrad) {
    unsigned o = sliceGrad ? 1 : 0; // starts at input 1 + o
    auto x = in(0);
    if (failed(x))
      return failure();
    Shape full = shapeOf(*x);
    if (sliceGrad) {
      auto s = hostInts(1);
      if (failed(s))
        return failure();
      full.assign(s->begin(), s->end());
      for (int64_t d : full)
        if (d < 0)
          return err() << "input 1 (the shape) has a negative dim";
    }
    auto starts = hostInts(1 + o);
    if (failed(starts))
      return failure();
    auto ends = hostInts(2 + o);
    if (failed(ends))
      return failure();
    SmallVector<int64_t> axes, steps;
    if (has(3 + o)) {
      auto a = hostInts(3 + o);
      if (failed(a))
        return failure();
      axes = *a;
    }
    if (has(4 + o)) {
      auto st = hostInts(4 + o);
      if (failed(st))
        return failure();
      steps = *st;
    }
    std::string why;
    auto r = sliceRange(full, *starts, *ends, axes, steps, why);
    if (!r)
      return err() << why;
    if (sliceGrad && !llvm::equal(shapeOf(*x), r->shape)) {
      auto d = err() << "dY has shape [";
      llvm::interleaveComma(shapeOf(*x), d);
      d << "], but the slice of [";
      llvm::interleaveComma(full, d);
      d << "] it is the gradient of has shape [";
      llvm::interleaveComma(r->shape, d);
      return d << "]";
    }
    auto y = out(0, sliceGrad ? full : r->shape);
    if (failed(y))
      return failure();
    // The kernel takes the normalized form: every dim, explicit steps.
    int64_t rank = full.size();
    SmallVector<int64_t> b, e, ax, st;
    for (int64_t d = 0; d < rank; ++d) {
      b.push_back(r->start[d]);
      // An end that lands before index 0 for negative steps is spelled as
      // a large negative number (ONNX clamps it to "before the start").
      int64_t end = r->start[d] + r->shape[d] * r->step[d];
      e.push_back(r->step[d] < 0 && end < 0 ? INT64_MIN : end);
      ax.push_back(d);
      st.push_back(r->step[d]);
    }
    return handled(
        call(sliceGrad ? "slice_grad" : "slice",
             {{sliceGrad ? "dy" : "x", {*x}}, {sliceGrad ? "dx" : "y", {*y}}},
             {{"starts", ints(b)},
              {"ends", ints(e)},
              {"axes", ints(ax)},
              {"steps", ints(st)},
              {"n", i64(rank)}}));
  }
  if (onnx && type == "Expand") {
    auto x = in(0);
    if (failed(x))
      return failure();
    auto target = hostInts(1);
    if (failed(target))
      return failure();
    Shape s;
    if (!broadcast({shapeOf(*x), Shape(target->begin(), target->end())}, s))
      return err() << "the target shape does not broadcast with the input";
    auto y = out(0, s);
    if (failed(y))
      return failure();
    return handled(call("expand", {{"x", {*x}}, {"y", {*y}}}));
  }
  if ((onnx && type == "Concat") || (ms && type == "ConcatTraining")) {
    SmallVector<int, 1> list;
    SmallVector<int64_t> lengths;
    Shape sy;
    int64_t axis = attrInt("axis", 0);
    for (unsigned i = 0; i < current->getNumOperands(); ++i) {
      if (!has(i))
        continue;
      auto b = in(i);
      if (failed(b))
        return failure();
      const Shape &s = shapeOf(*b);
      int64_t rank = s.size();
      if (list.empty()) {
        if (failed(normAxis(axis, rank)))
          return failure();
        sy = s;
        sy[axis] = 0;
      }
      if (rank != int64_t(sy.size()))
        return err() << "inputs differ in rank";
      for (int64_t d = 0; d < rank; ++d)
        if (d != axis && s[d] != sy[d])
          return err() << "input " << i << " differs off the concat axis";
      sy[axis] += s[axis];
      lengths.push_back(s[axis]);
      list.push_back(*b);
    }
    if (list.empty())
      return err() << "no inputs";
    auto y = out(0, sy);
    if (failed(y))
      return failure();
    if (type == "ConcatTraining" && resultUsed(1)) {
      HostTensor l;
      l.elem = IntegerType::get(ctx, 64);
      l.shape = {int64_t(lengths.size())};
      for (int64_t v : lengths)
        l.v.push_back(double(v));
      setHost(1, std::move(l));
    }
    return handled(call("concat", {{"inputs", list}, {"y", {*y}}},
                        {{"n", i64(list.size())}, {"axis", i64(axis)}}));
  }
  if (ms && type == "FusedMatMul") {
    if (attrInt("transBatchA", 0) || attrInt("transBatchB", 0))
      return err() << "transBatchA/transBatchB are not supported";
    return handled(lowerBatchedMatMul(
        attrInt("transA", 0), attrInt("transB", 0), attrFloat("alpha", 1.0)));
  }
  if (ms && type == "Scale") {
    auto x = in(0), s = in(1);
    if (failed(x) || failed(s))
      return failure();
    if (numel(shapeOf(*s)) != 1)
      return err() << "the scale must have one element";
    auto y = out(0, shapeOf(*x));
    if (failed(y))
      return failure();
    return handled(call("scale", {{"x", {*x}}, {"s", {*s}}, {"y", {*y}}},
                        {{"scale_down", i32(attrInt("scale_down", 0))}}));
  }
  return false;
}

void GraphLowering::registerData(FamilyTable &t) {
  t.add(kOnnxDomain,
        {"Gather", "Pad", "ArgMax", "ArgMin", "TopK", "CumSum",
         "GatherElements", "GatherND", "ScatterElements", "ScatterND", "Trilu",
         "Slice", "Expand", "Concat"},
        &GraphLowering::lowerData);
  t.add(kMicrosoftDomain,
        {"GatherNDGrad", "GatherElementsGrad", "Trilu", "GatherGrad",
         "SliceGrad", "ConcatTraining", "FusedMatMul", "Scale"},
        &GraphLowering::lowerData);
}

} // namespace amp::lowering

//===- LowerComposite.cpp - ops lowered as several existing kernels -------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// Ops whose semantics a short sequence of existing kernels computes exactly
// as a fused kernel would (up to the order of f32 roundings), so they need
// no ABI entry of their own and run on every backend that has those
// kernels:
//
//   Clip(x, lo, hi)           max(x, lo) then min(., hi), in place
//   HardSigmoid(x)            min(max(alpha x + beta, 0), 1)
//   HardSwish(x)              x HardSigmoid(x; 1/6, 1/2)
//   InstanceNormalization(x, scale, bias)
//                             layer_norm over dims [2, rank) with unit
//                             scale, then scale and bias per channel
//   Tile(x, repeats)          x viewed as [1, d0, 1, d1, ...], expanded to
//                             [r0, d0, r1, d1, ...], viewed as [r0 d0, ...]
//   Split / SplitTraining     one slice per output
//   ReduceL2(x)               sqrt(reduce_sum(x * x))
//   ReduceLogSumExp(x)        m + log(reduce_sum(exp(x - m))), m the max
//                             (0 where the max is infinite)
//   LogSoftmaxGrad_13(dY, Y)  dY - exp(Y) * reduce_sum(dY, axis)
//   DivGrad(dY, A, B)         dA = dY / B, dB = -(dY A) / (B B), each
//                             summed over the dims its operand broadcast
//
// Intermediates are f32 whatever the graph's dtype (the binary kernels
// take mixed dtypes and compute in f32), so an f16 graph rounds once, into
// the result.
//
//===----------------------------------------------------------------------===//

#include "LoweringTable.h"

#include <tuple>

using namespace amp::lowering;

int GraphLowering::scratch(ArrayRef<int64_t> shape, Type elem) {
  Buffer b;
  b.shape.assign(shape.begin(), shape.end());
  b.elem = elem;
  return newBuffer(b);
}

LogicalResult GraphLowering::sumToShape(int x, ArrayRef<int64_t> target,
                                        int y) {
  Shape sx = shapeOf(x);
  if (sx.size() < target.size())
    return err() << "internal: a gradient of lower rank than its operand";
  size_t lead = sx.size() - target.size();
  SmallVector<int64_t> axes;
  Shape kept;
  for (size_t d = 0; d < sx.size(); ++d) {
    bool reduce = d < lead || (target[d - lead] == 1 && sx[d] != 1);
    if (reduce)
      axes.push_back(d);
    else if (d >= lead && target[d - lead] != sx[d])
      return err() << "internal: a gradient that does not broadcast from "
                      "its operand";
    kept.push_back(reduce ? 1 : sx[d]);
  }
  if (axes.empty()) // the same shape: a copy, rounded to y's dtype
    return call("cast", {{"x", {x}}, {"y", {y}}});
  int t = scratch(kept, bufs[y].elem);
  if (failed(call("reduce_sum", {{"x", {x}}, {"y", {t}}},
                  reduceAttrs(axes, 1, 0))))
    return failure();
  return call("reshape", {{"x", {t}}, {"y", {y}}});
}

FailureOr<bool> GraphLowering::lowerComposite(StringRef domain,
                                              StringRef type) {
  bool onnx = domain.empty() || domain == "ai.onnx";
  bool ms = domain == "com.microsoft";
  Type f32t = Float32Type::get(ctx);

  // Clip: min(max(x, lo), hi), lo and hi inputs (opset 11+) or attributes
  // (opset 6), either absent.
  if (onnx && type == "Clip") {
    auto x = in(0);
    if (failed(x))
      return failure();
    Type elem = bufs[*x].elem;
    auto bound = [&](unsigned i, StringRef attr) -> FailureOr<int> {
      if (has(i))
        return in(i);
      if (auto a = attrOf<FloatAttr>(attr))
        return constBuffer(HostTensor{{}, elem, {a.getValueAsDouble()}});
      return -1;
    };
    auto lo = bound(1, "min"), hi = bound(2, "max");
    if (failed(lo) || failed(hi))
      return failure();
    for (int b : {*lo, *hi})
      if (b >= 0 && numel(shapeOf(b)) != 1)
        return err() << "min and max must be scalars";
    auto y = out(0, shapeOf(*x));
    if (failed(y))
      return failure();
    if (*lo < 0 && *hi < 0)
      return handled(call("identity", {{"x", {*x}}, {"y", {*y}}}));
    if (*lo >= 0 &&
        failed(call("max", {{"a", {*x}}, {"b", {*lo}}, {"y", {*y}}})))
      return failure();
    if (*hi >= 0)
      return handled(call(
          "min", {{"a", {*lo >= 0 ? *y : *x}}, {"b", {*hi}}, {"y", {*y}}}));
    return true;
  }
  // HardSigmoid and HardSwish (MobileNetV3): alpha x + beta clamped to
  // [0, 1], in f32 (the binary kernels compute in f32 and the scratch is
  // f32), rounded once into y; HardSwish multiplies it by x.
  if (onnx && (type == "HardSigmoid" || type == "HardSwish")) {
    auto x = in(0);
    if (failed(x))
      return failure();
    bool swish = type == "HardSwish";
    Shape sx = shapeOf(*x);
    auto y = out(0, sx);
    if (failed(y))
      return failure();
    double alpha = swish ? 1.0 / 6.0 : attrFloat("alpha", 0.2);
    double beta = swish ? 0.5 : attrFloat("beta", 0.5);
    auto scalar = [&](double v) {
      return constBuffer(HostTensor{{}, f32t, {double(float(v))}});
    };
    // HardSigmoid's clamp to 1 rounds once into y; HardSwish's stays f32
    // for the product.
    int t = scratch(sx, f32t), last = swish ? t : *y;
    for (auto [kernel, a, b, out] :
         {std::tuple<StringRef, int, int, int>{"mul", *x, scalar(alpha), t},
          {"add", t, scalar(beta), t},
          {"max", t, scalar(0), t},
          {"min", t, scalar(1), last}})
      if (failed(call(kernel, {{"a", {a}}, {"b", {b}}, {"y", {out}}})))
        return failure();
    if (swish)
      return handled(call("mul", {{"a", {*x}}, {"b", {t}}, {"y", {*y}}}));
    return true;
  }
  // InstanceNormalization(x [N, C, D...], scale [C], bias [C]): the
  // statistics of each (n, c) over D... are layer_norm's over dims
  // [2, rank) (unit scale, no bias, f32 out), then y = t scale + bias with
  // scale and bias seen as [C, 1, ...] (ONNX's epsilon, default 1e-5).
  if (onnx && type == "InstanceNormalization") {
    auto x = in(0), sc = in(1), bias = in(2);
    if (failed(x) || failed(sc) || failed(bias))
      return failure();
    Shape sx = shapeOf(*x);
    if (sx.size() < 3)
      return err() << "input of rank " << sx.size()
                   << ": InstanceNormalization needs [N, C, D1, ...]";
    Shape perChannel(sx.size() - 1, 1);
    perChannel[0] = sx[1];
    for (int b : {*sc, *bias})
      if (numel(shapeOf(b)) != sx[1] || shapeOf(b).size() != 1)
        return err() << "scale and bias must be [" << sx[1]
                     << "] (the channels)";
    auto y = out(0, sx);
    if (failed(y))
      return failure();
    int64_t inner = numel(ArrayRef<int64_t>(sx).drop_front(2));
    HostTensor ones{{inner}, f32t, SmallVector<double>(inner, 1.0)};
    int t = scratch(sx, f32t), s = scratch(perChannel, bufs[*sc].elem),
        b = scratch(perChannel, bufs[*bias].elem);
    if (failed(call("layer_norm",
                    {{"x", {*x}}, {"scale", {constBuffer(ones)}}, {"y", {t}}},
                    {{"axis", i64(2)},
                     {"epsilon", f32(attrFloat("epsilon", 1e-5))}})) ||
        failed(call("reshape", {{"x", {*sc}}, {"y", {s}}})) ||
        failed(call("reshape", {{"x", {*bias}}, {"y", {b}}})) ||
        failed(call("mul", {{"a", {t}}, {"b", {s}}, {"y", {t}}})))
      return failure();
    return handled(call("add", {{"a", {t}}, {"b", {b}}, {"y", {*y}}}));
  }
  if (onnx && type == "Tile") {
    auto x = in(0);
    auto reps = hostInts(1);
    if (failed(x) || failed(reps))
      return failure();
    Shape sx = shapeOf(*x);
    if (reps->size() != sx.size())
      return err() << "repeats has " << reps->size() << " entries for rank "
                   << sx.size();
    Shape spread, wide, sy;
    for (size_t d = 0; d < sx.size(); ++d) {
      int64_t r = (*reps)[d], n;
      if (r < 0)
        return err() << "negative repeat " << r;
      if (__builtin_mul_overflow(r, sx[d], &n))
        return err() << "repeat " << r << " of dim " << d << " (" << sx[d]
                     << ") overflows";
      spread.append({1, sx[d]});
      wide.append({r, sx[d]});
      sy.push_back(n);
    }
    auto y = out(0, sy);
    if (failed(y))
      return failure();
    if (llvm::all_of(*reps, [](int64_t r) { return r == 1; }))
      return handled(call("identity", {{"x", {*x}}, {"y", {*y}}}));
    Type elem = bufs[*x].elem;
    int a = scratch(spread, elem), b = scratch(wide, elem);
    return handled(
        success(succeeded(call("reshape", {{"x", {*x}}, {"y", {a}}})) &&
                succeeded(call("expand", {{"x", {a}}, {"y", {b}}})) &&
                succeeded(call("reshape", {{"x", {b}}, {"y", {*y}}}))));
  }

  if ((onnx && type == "Split") || (ms && type == "SplitTraining")) {
    auto x = in(0);
    if (failed(x))
      return failure();
    Shape sx = shapeOf(*x);
    int64_t rank = sx.size(), axis = attrInt("axis", 0);
    if (failed(normAxis(axis, rank)))
      return failure();
    unsigned n = current->getNumResults();
    if (n == 0)
      return err() << "Split has no outputs";
    if (int64_t k = attrInt("num_outputs", n); k != int64_t(n))
      return err() << "num_outputs is " << k << " but the node has " << n
                   << " outputs";
    SmallVector<int64_t> sizes;
    if (has(1)) {
      auto s = hostInts(1);
      if (failed(s))
        return failure();
      sizes.assign(s->begin(), s->end());
    } else if (auto s = attrInts("split")) {
      sizes = *s;
    } else {
      // Equal parts, the last one smaller when the dim does not divide
      // (opset 18's num_outputs rule; before it the dim must divide).
      int64_t part = (sx[axis] + n - 1) / n;
      for (unsigned i = 0; i < n; ++i)
        sizes.push_back(
            std::max<int64_t>(0, std::min(part, sx[axis] - int64_t(i) * part)));
    }
    int64_t total = 0;
    bool bad = sizes.size() != n;
    for (int64_t s : sizes)
      bad = bad || s < 0 || __builtin_add_overflow(total, s, &total);
    if (bad || total != sx[axis])
      return err() << "split sizes do not cover dim " << axis << " ("
                   << sx[axis] << ") in " << n << " outputs";
    int64_t start = 0;
    for (unsigned i = 0; i < n; ++i) {
      Shape so = sx;
      so[axis] = sizes[i];
      if (resultUsed(i)) {
        auto y = out(i, so);
        if (failed(y))
          return failure();
        SmallVector<int64_t> b(rank, 0), e(sx.begin(), sx.end()), ax,
            st(rank, 1);
        for (int64_t d = 0; d < rank; ++d)
          ax.push_back(d);
        b[axis] = start;
        e[axis] = start + sizes[i];
        if (failed(call("slice", {{"x", {*x}}, {"y", {*y}}},
                        {{"starts", ints(b)},
                         {"ends", ints(e)},
                         {"axes", ints(ax)},
                         {"steps", ints(st)},
                         {"n", i64(rank)}})))
          return failure();
      }
      start += sizes[i];
    }
    return true;
  }

  // ReduceL2 / ReduceLogSumExp: x, the axes and flags, and y of the
  // reduced shape; with no axes and noop_with_empty_axes, y is x (a copy:
  // `copied`, nothing left to do).
  struct Reduction {
    int x = -1, y = -1;
    SmallVector<int64_t> axes;
    int64_t keep = 1, noop = 0;
    Shape sx, sy;
    bool copied = false;
  };
  auto reduction = [&]() -> FailureOr<Reduction> {
    Reduction r;
    auto x = in(0);
    auto axesOr = axesOf(1);
    if (failed(x) || failed(axesOr))
      return failure();
    r.x = *x;
    r.axes = *axesOr;
    r.keep = attrInt("keepdims", 1);
    r.noop = attrInt("noop_with_empty_axes", 0);
    r.sx = shapeOf(*x);
    r.copied = r.axes.empty() && r.noop;
    if (r.copied) {
      r.sy = r.sx;
    } else {
      auto s = reducedShape(r.sx, r.axes, r.keep, r.noop);
      if (failed(s))
        return failure();
      r.sy = *s;
    }
    auto y = out(0, r.sy);
    if (failed(y))
      return failure();
    r.y = *y;
    if (r.copied && failed(call("identity", {{"x", {r.x}}, {"y", {r.y}}})))
      return failure();
    return r;
  };

  if (onnx && type == "ReduceL2") {
    auto r = reduction();
    if (failed(r))
      return failure();
    if (r->copied)
      return true;
    int x = r->x;
    int sq = scratch(r->sx, f32t), sum = scratch(r->sy, f32t);
    return handled(
        success(succeeded(call("mul", {{"a", {x}}, {"b", {x}}, {"y", {sq}}})) &&
                succeeded(call("reduce_sum", {{"x", {sq}}, {"y", {sum}}},
                               reduceAttrs(r->axes, r->keep, r->noop))) &&
                succeeded(call("sqrt", {{"x", {sum}}, {"y", {r->y}}}))));
  }

  if (onnx && type == "ReduceLogSumExp") {
    // m + log(sum(exp(x - m))) with m the max over the axes (kept as
    // dims), so exp cannot overflow; no reduction: log(exp(x)) = x.
    auto r = reduction();
    if (failed(r))
      return failure();
    if (r->copied)
      return true;
    int x = r->x;
    Shape sx = r->sx, sy = r->sy;
    auto sm = reducedShape(sx, r->axes, 1, r->noop);
    if (failed(sm))
      return failure();
    // An infinite max (a row of -inf, masked logits) is replaced by 0, so
    // that x - m is not inf - inf: the result is then the row's +-inf.
    HostTensor zero;
    zero.elem = f32t;
    zero.v = {0.0};
    int mx = scratch(*sm, f32t), inf = scratch(*sm, IntegerType::get(ctx, 1)),
        m = scratch(*sm, f32t), d = scratch(sx, f32t), e = scratch(sx, f32t);
    int s = scratch(sy, f32t), l = scratch(sy, f32t), mr = scratch(sy, f32t);
    return handled(success(
        succeeded(call("reduce_max", {{"x", {x}}, {"y", {mx}}},
                       reduceAttrs(r->axes, 1, r->noop))) &&
        succeeded(call("isinf", {{"x", {mx}}, {"y", {inf}}})) &&
        succeeded(call("where", {{"cond", {inf}},
                                 {"a", {constBuffer(zero)}},
                                 {"b", {mx}},
                                 {"y", {m}}})) &&
        succeeded(call("sub", {{"a", {x}}, {"b", {m}}, {"y", {d}}})) &&
        succeeded(call("exp", {{"x", {d}}, {"y", {e}}})) &&
        succeeded(call("reduce_sum", {{"x", {e}}, {"y", {s}}},
                       reduceAttrs(r->axes, r->keep, r->noop))) &&
        succeeded(call("log", {{"x", {s}}, {"y", {l}}})) &&
        succeeded(call("reshape", {{"x", {m}}, {"y", {mr}}})) &&
        succeeded(call("add", {{"a", {l}}, {"b", {mr}}, {"y", {r->y}}}))));
  }

  if (ms && type == "LogSoftmaxGrad_13") {
    auto dy = in(0), y = in(1);
    if (failed(dy) || failed(y))
      return failure();
    Shape sy = shapeOf(*y);
    int64_t rank = sy.size(), axis = attrInt("axis", -1);
    if (failed(normAxis(axis, rank)))
      return failure();
    if (shapeOf(*dy) != sy)
      return err() << "dY and Y differ in shape";
    Shape ss = sy;
    ss[axis] = 1;
    auto dx = out(0, sy);
    if (failed(dx))
      return failure();
    int e = scratch(sy, f32t), s = scratch(ss, f32t), m = scratch(sy, f32t);
    return handled(success(
        succeeded(call("exp", {{"x", {*y}}, {"y", {e}}})) &&
        succeeded(call("reduce_sum", {{"x", {*dy}}, {"y", {s}}},
                       reduceAttrs({axis}, 1, 0))) &&
        succeeded(call("mul", {{"a", {e}}, {"b", {s}}, {"y", {m}}})) &&
        succeeded(call("sub", {{"a", {*dy}}, {"b", {m}}, {"y", {*dx}}}))));
  }

  if (ms && type == "DivGrad") {
    auto dy = in(0), a = in(1), b = in(2);
    if (failed(dy) || failed(a) || failed(b))
      return failure();
    Shape sd = shapeOf(*dy), sa = shapeOf(*a), sb = shapeOf(*b), s;
    if (!broadcast({sa, sb}, s) || s != sd)
      return err() << "dY's shape is not A and B broadcast";
    if (resultUsed(0)) {
      auto da = out(0, sa);
      int q = scratch(sd, f32t);
      if (failed(da) ||
          failed(call("div", {{"a", {*dy}}, {"b", {*b}}, {"y", {q}}})) ||
          failed(sumToShape(q, sa, *da)))
        return failure();
    }
    if (resultUsed(1)) {
      auto db = out(1, sb);
      int p = scratch(sd, f32t), bb = scratch(sb, f32t), q = scratch(sd, f32t);
      if (failed(db) ||
          failed(call("mul", {{"a", {*dy}}, {"b", {*a}}, {"y", {p}}})) ||
          failed(call("mul", {{"a", {*b}}, {"b", {*b}}, {"y", {bb}}})) ||
          failed(call("div", {{"a", {p}}, {"b", {bb}}, {"y", {q}}})) ||
          failed(call("neg", {{"x", {q}}, {"y", {q}}})) ||
          failed(sumToShape(q, sb, *db)))
        return failure();
    }
    return true;
  }
  return false;
}

void GraphLowering::registerComposite(FamilyTable &t) {
  t.add(kOnnxDomain,
        {"Clip", "HardSigmoid", "HardSwish", "InstanceNormalization", "Tile",
         "Split", "ReduceL2", "ReduceLogSumExp"},
        &GraphLowering::lowerComposite);
  t.add(kMicrosoftDomain, {"SplitTraining", "LogSoftmaxGrad_13", "DivGrad"},
        &GraphLowering::lowerComposite);
}

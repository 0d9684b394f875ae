//===- LowerNN.cpp - conv, pool, normalization, softmax grad, dropout -----===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// The layers of CNNs and transformers, forward and backward (ONNX and
// ORT's com.microsoft gradient ops). Window geometry (kernel, strides,
// pads, dilations, auto_pad, ceil_mode) is resolved here, once, into the
// `amprt_window` dictionary every conv/pool call carries.
//
//===----------------------------------------------------------------------===//

#include "LoweringTable.h"

#include "amp/Runtime/Window.h"

#include "llvm/ADT/StringSwitch.h"

#include <cmath>

namespace amp::lowering {

FailureOr<DictionaryAttr> GraphLowering::window(ArrayRef<int64_t> x,
                                                ArrayRef<int64_t> k, bool pool,
                                                Shape &outSpatial) {
  int64_t sr = int64_t(x.size()) - 2;
  if (sr < 1 || sr > 3) {
    err() << "input of rank " << x.size()
          << ": the runtime has 1-D, 2-D and 3-D windows (N, C, W), (N, C, "
             "H, W) or (N, C, D, H, W)";
    return failure();
  }
  if (int64_t(k.size()) != sr) {
    err() << "the kernel has " << k.size() << " spatial dims, the input " << sr;
    return failure();
  }
  auto vec = [&](StringRef name, int64_t n,
                 int64_t dflt) -> FailureOr<SmallVector<int64_t>> {
    auto a = attrInts(name);
    if (!a)
      return SmallVector<int64_t>(n, dflt);
    if (int64_t(a->size()) != n) {
      err() << "attribute '" << name << "' has " << a->size()
            << " entries, expected " << n;
      return failure();
    }
    return *a;
  };
  auto strides = vec("strides", sr, 1);
  auto dil = vec("dilations", sr, 1);
  auto pads = vec("pads", 2 * sr, 0);
  if (failed(strides) || failed(dil) || failed(pads))
    return failure();
  if (auto ks = attrInts("kernel_shape"))
    if (!llvm::equal(*ks, k)) {
      err() << "kernel_shape disagrees with the weight";
      return failure();
    }
  std::string autoPad = attrStr("auto_pad", "NOTSET");
  int64_t ceil = pool ? attrInt("ceil_mode", 0) : 0;
  outSpatial.clear();
  for (int64_t i = 0; i < sr; ++i) {
    int64_t in = x[2 + i], s = (*strides)[i], d = (*dil)[i];
    if (k[i] < 1 || s < 1 || d < 1) {
      err() << "bad window at spatial dim " << i;
      return failure();
    }
    int64_t span = (k[i] - 1) * d + 1;
    if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
      int64_t o = (in + s - 1) / s;
      int64_t total = std::max<int64_t>((o - 1) * s + span - in, 0);
      int64_t small = total / 2;
      (*pads)[i] = autoPad == "SAME_UPPER" ? small : total - small;
      (*pads)[i + sr] = total - (*pads)[i];
    } else if (autoPad == "VALID") {
      (*pads)[i] = (*pads)[i + sr] = 0;
    } else if (autoPad != "NOTSET") {
      err() << "auto_pad '" << autoPad << "' is not an ONNX value";
      return failure();
    }
    int64_t pb = (*pads)[i], pe = (*pads)[i + sr];
    if (pb < 0 || pe < 0) {
      err() << "negative pads";
      return failure();
    }
    int64_t o = amprt_window_count(in + pb + pe - span, s, ceil, in + pb);
    if (o < 1) {
      err() << "window larger than the padded input at spatial dim " << i;
      return failure();
    }
    outSpatial.push_back(o);
  }
  Builder b(ctx);
  NamedAttrList w;
  w.set("spatial_rank", b.getI64IntegerAttr(sr));
  w.set("ceil_mode", b.getI64IntegerAttr(ceil));
  w.set("count_include_pad",
        b.getI64IntegerAttr(attrInt("count_include_pad", 0)));
  w.set("group", b.getI64IntegerAttr(pool ? 1 : attrInt("group", 1)));
  w.set("kernel", b.getDenseI64ArrayAttr(k));
  w.set("strides", b.getDenseI64ArrayAttr(*strides));
  w.set("pads", b.getDenseI64ArrayAttr(*pads));
  w.set("dilations", b.getDenseI64ArrayAttr(*dil));
  return w.getDictionary(ctx);
}

LogicalResult GraphLowering::convForward(StringRef kernel, int x, int w,
                                         ArrayRef<int64_t> sy,
                                         DictionaryAttr win) {
  SmallVector<TArg> ts = {{"x", {x}}, {"w", {w}}};
  if (failed(optionalIn(ts, "bias", 2)))
    return failure();
  auto y = out(0, sy);
  if (failed(y))
    return failure();
  ts.push_back({"y", {*y}});
  return call(kernel, ts, {{"win", win}});
}

FailureOr<bool> GraphLowering::lowerNN(StringRef domain, StringRef type) {
  bool onnx = domain.empty() || domain == "ai.onnx";
  bool ms = domain == "com.microsoft";

  // --- convolution -------------------------------------------------------
  if ((onnx && type == "Conv") || (ms && type == "ConvGrad")) {
    bool grad = type == "ConvGrad";
    unsigned xi = grad ? 1 : 0, wi = grad ? 2 : 1;
    auto x = in(xi), w = in(wi);
    if (failed(x) || failed(w))
      return failure();
    const Shape &sx = shapeOf(*x), &sw = shapeOf(*w);
    if (sw.size() != sx.size() || sx.size() < 3)
      return err() << "x and w must have the same rank (N, C, spatial)";
    Shape os;
    auto win = window(sx, ArrayRef<int64_t>(sw).drop_front(2), false, os);
    if (failed(win))
      return failure();
    int64_t group = attrInt("group", 1);
    if (group < 1 || sx[1] != sw[1] * group || sw[0] % group)
      return err() << "channels " << sx[1] << " and weight " << sw[0] << "x"
                   << sw[1] << " do not fit group " << group;
    Shape sy = {sx[0], sw[0]};
    sy.append(os.begin(), os.end());
    if (!grad)
      return handled(convForward("conv", *x, *w, sy, *win));
    auto dy = in(0);
    if (failed(dy))
      return failure();
    if (!llvm::equal(shapeOf(*dy), sy))
      return err() << "dY's shape does not match the convolution output";
    SmallVector<TArg> ts = {{"dy", {*dy}}, {"x", {*x}}, {"w", {*w}}};
    if (failed(optionalOut(ts, "dx", 0, sx)) ||
        failed(optionalOut(ts, "dw", 1, sw)) ||
        failed(optionalOut(ts, "db", 2, {sw[0]})))
      return failure();
    return handled(call("conv_grad", ts, {{"win", *win}}));
  }

  // --- transposed convolution ----------------------------------------------
  // ConvTranspose(X, W, B) is the data gradient of the convolution of its
  // output Y by W (strides, pads, dilations, group as given): that
  // convolution maps Y's shape to X's. ConvTransposeGrad(dY, X, W): dX is
  // that convolution of dY, dW its weight gradient with X as the output
  // gradient and dY as the input, dB the sum of dY over all but channels.
  if ((onnx && type == "ConvTranspose") ||
      (ms && type == "ConvTransposeGrad")) {
    bool grad = type == "ConvTransposeGrad";
    auto x = in(grad ? 1 : 0), w = in(grad ? 2 : 1);
    if (failed(x) || failed(w))
      return failure();
    Shape sx = shapeOf(*x), sw = shapeOf(*w);
    if (sw.size() != sx.size() || sx.size() < 3)
      return err() << "x and w must have the same rank (N, C, spatial)";
    int64_t sr = sx.size() - 2, group = attrInt("group", 1);
    std::string autoPad = attrStr("auto_pad", "NOTSET");
    if (autoPad != "NOTSET" && autoPad != "VALID")
      return err() << "auto_pad '" << autoPad
                   << "' on ConvTranspose is not supported (give pads)";
    if (nodeAttr("output_shape"))
      return err() << "output_shape on ConvTranspose is not supported (give "
                      "pads and output_padding)";
    if (group < 1 || sx[1] != sw[0] || sx[1] % group)
      return err() << "channels " << sx[1] << " and weight " << sw[0] << "x"
                   << sw[1] << " do not fit group " << group;
    auto ints = [&](StringRef n, int64_t count, int64_t dflt) {
      SmallVector<int64_t> v = attrInts(n).value_or(SmallVector<int64_t>());
      if (int64_t(v.size()) != count)
        v.assign(count, dflt);
      return v;
    };
    SmallVector<int64_t> st = ints("strides", sr, 1),
                         dl = ints("dilations", sr, 1),
                         op = ints("output_padding", sr, 0),
                         pd = ints("pads", 2 * sr, 0);
    if (autoPad == "VALID")
      pd.assign(2 * sr, 0);
    Shape sy = {sx[0], sw[1] * group};
    for (int64_t i = 0; i < sr; ++i) {
      // ONNX also allows output_padding below the dilation alone; the
      // convolution this lowers to cannot express that.
      if (op[i] < 0 || op[i] >= st[i])
        return err() << "output_padding " << op[i] << " at spatial dim " << i
                     << " must be below the stride (" << st[i] << ")";
      int64_t a, b, o;
      if (st[i] < 1 || dl[i] < 1 || sx[2 + i] < 1 ||
          __builtin_mul_overflow(st[i], sx[2 + i] - 1, &a) ||
          __builtin_mul_overflow(sw[2 + i] - 1, dl[i], &b) ||
          __builtin_add_overflow(a, b, &o) ||
          __builtin_add_overflow(o, op[i] + 1, &o))
        return err() << "bad strides, dilations or input size at spatial dim "
                     << i;
      o -= pd[i] + pd[i + sr];
      if (o < 1)
        return err() << "the output is empty at spatial dim " << i;
      sy.push_back(o);
    }
    // The convolution of Y's shape that gives X's shape.
    Shape os;
    auto win = window(sy, ArrayRef<int64_t>(sw).drop_front(2), false, os);
    if (failed(win))
      return failure();
    if (!llvm::equal(os, ArrayRef<int64_t>(sx).drop_front(2)))
      return err() << "internal: the transposed geometry does not invert";
    if (!grad)
      return handled(convForward("conv_transpose", *x, *w, sy, *win));
    auto dy = in(0);
    if (failed(dy))
      return failure();
    if (!llvm::equal(shapeOf(*dy), sy))
      return err() << "dY's shape does not match the transposed convolution "
                      "output";
    // ORT leaves these outputs untyped: each has its operand's dtype.
    if (resultUsed(0)) {
      auto dx = out(0, sx, resultElemOr(0, bufs[*x].elem));
      if (failed(dx) ||
          failed(call("conv", {{"x", {*dy}}, {"w", {*w}}, {"y", {*dx}}},
                      {{"win", *win}})))
        return failure();
    }
    if (resultUsed(1)) {
      auto dw = out(1, sw, resultElemOr(1, bufs[*w].elem));
      if (failed(dw) ||
          failed(call("conv_grad",
                      {{"dy", {*x}}, {"x", {*dy}}, {"w", {*w}}, {"dw", {*dw}}},
                      {{"win", *win}})))
        return failure();
    }
    if (resultUsed(2)) {
      auto db = out(2, {sy[1]}, resultElemOr(2, bufs[*w].elem));
      SmallVector<int64_t> axes = {0};
      for (int64_t i = 0; i < sr; ++i)
        axes.push_back(2 + i);
      if (failed(db) || failed(call("reduce_sum", {{"x", {*dy}}, {"y", {*db}}},
                                    reduceAttrs(axes, 0, 0))))
        return failure();
    }
    return true;
  }

  // --- pooling -----------------------------------------------------------
  if (onnx && (type == "MaxPool" || type == "AveragePool")) {
    auto x = in(0);
    if (failed(x))
      return failure();
    const Shape &sx = shapeOf(*x);
    auto ks = attrInts("kernel_shape");
    if (!ks)
      return err() << "kernel_shape is required";
    if (attrInt("storage_order", 0) != 0)
      return err() << "storage_order=1 (column-major indices) is not "
                      "supported";
    Shape os;
    auto win = window(sx, *ks, true, os);
    if (failed(win))
      return failure();
    Shape sy = {sx[0], sx[1]};
    sy.append(os.begin(), os.end());
    auto y = out(0, sy);
    if (failed(y))
      return failure();
    SmallVector<TArg> ts = {{"x", {*x}}, {"y", {*y}}};
    if (type == "AveragePool") {
      avgPools.push_back({sx, sy, *win});
      return handled(call("average_pool", ts, {{"win", *win}}));
    }
    if (failed(optionalOut(ts, "indices", 1, sy)))
      return failure();
    if (resultUsed(1))
      poolInput[valueBuf[current->getResult(1)]] = sx;
    return handled(call("max_pool", ts, {{"win", *win}}));
  }
  if (type == "MaxPoolGrad" && (onnx || ms)) {
    auto dy = in(0), idx = in(1);
    if (failed(dy) || failed(idx))
      return failure();
    auto it = poolInput.find(*idx);
    if (it == poolInput.end())
      return err() << "input 1 must be the indices output of a MaxPool of "
                      "this graph (the input shape comes from it)";
    auto dx = out(0, it->second);
    if (failed(dx))
      return failure();
    return handled(call("max_pool_grad",
                        {{"dy", {*dy}}, {"indices", {*idx}}, {"dx", {*dx}}}));
  }
  // AveragePoolGrad has only dY: dX's shape is the input shape of this
  // graph's AveragePool with the same window whose output has dY's shape.
  if (type == "AveragePoolGrad" && (onnx || ms)) {
    auto dy = in(0);
    if (failed(dy))
      return failure();
    auto ks = attrInts("kernel_shape");
    if (!ks)
      return err() << "kernel_shape is required";
    std::optional<std::pair<Shape, DictionaryAttr>> match;
    for (const AvgPool &p : avgPools) {
      if (!llvm::equal(p.y, shapeOf(*dy)))
        continue;
      Shape os;
      auto win = window(p.x, *ks, true, os);
      if (failed(win))
        return failure();
      if (*win != p.win)
        continue;
      if (match && match->first != p.x)
        return err() << "two AveragePool nodes of this window give dY's "
                        "shape from different inputs; dX's shape is "
                        "ambiguous";
      match = {p.x, *win};
    }
    if (!match)
      return err() << "no AveragePool of this graph with this window has "
                      "dY's shape (dX's shape comes from its input)";
    auto dx = out(0, match->first);
    if (failed(dx))
      return failure();
    return handled(call("average_pool_grad", {{"dy", {*dy}}, {"dx", {*dx}}},
                        {{"win", match->second}}));
  }
  if (onnx && type == "GlobalAveragePool") {
    auto x = in(0);
    if (failed(x))
      return failure();
    Shape sy = shapeOf(*x);
    if (sy.size() < 3)
      return err() << "input must be (N, C, spatial...)";
    for (size_t d = 2; d < sy.size(); ++d)
      sy[d] = 1;
    auto y = out(0, sy);
    if (failed(y))
      return failure();
    return handled(call("global_average_pool", {{"x", {*x}}, {"y", {*y}}}));
  }
  if (type == "GlobalAveragePoolGrad" && (onnx || ms)) {
    // dx has dy's (N, C) and the forward input's spatial dims: from the
    // second input when present, else from kernel_shape.
    auto dy = in(0);
    if (failed(dy))
      return failure();
    Shape sx = shapeOf(*dy);
    if (has(1)) {
      auto s = shapeOfInput(1);
      if (!s)
        return err() << "input 1 has no shape";
      if (auto h = hostIn(1); h && h->shape.size() == 1 &&
                              int64_t(h->v.size()) == int64_t(sx.size()))
        for (size_t d = 0; d < sx.size(); ++d)
          sx[d] = int64_t(h->v[d]);
      else
        sx = *s;
    } else if (auto ks = attrInts("kernel_shape")) {
      if (ks->size() + 2 != sx.size())
        return err() << "kernel_shape does not match dY's rank";
      for (size_t d = 0; d < ks->size(); ++d)
        sx[d + 2] = (*ks)[d];
    } else {
      return err() << "the forward input's spatial dims are unknown (no "
                      "input 1 and no kernel_shape)";
    }
    auto dx = out(0, sx);
    if (failed(dx))
      return failure();
    return handled(
        call("global_average_pool_grad", {{"x", {*dy}}, {"y", {*dx}}}));
  }

  // --- batch normalization ----------------------------------------------
  if ((onnx && type == "BatchNormalization") ||
      (ms && type == "BatchNormInternal")) {
    auto x = in(0), sc = in(1), b = in(2), m = in(3), v = in(4);
    if (failed(x) || failed(sc) || failed(b) || failed(m) || failed(v))
      return failure();
    const Shape &sx = shapeOf(*x);
    if (sx.size() < 2)
      return err() << "input must be (N, C, ...)";
    float eps = attrFloat("epsilon", 1e-5);
    float momentum = attrFloat("momentum", 0.9);
    bool training = type == "BatchNormInternal" || attrInt("training_mode", 0);
    auto y = out(0, sx);
    if (failed(y))
      return failure();
    if (!training) {
      for (unsigned i = 1; i < current->getNumResults(); ++i)
        if (resultUsed(i))
          return err() << "output " << i << " exists only in training mode";
      return handled(call("batch_norm_inference",
                          {{"x", {*x}},
                           {"scale", {*sc}},
                           {"bias", {*b}},
                           {"mean", {*m}},
                           {"var", {*v}},
                           {"y", {*y}}},
                          {{"epsilon", f32(eps)}}));
    }
    // The running statistics are state: when the input is a graph input
    // read by nothing else, the update is written into it, in place (the
    // framework keeps it across steps, as PyTorch does); otherwise into a
    // new buffer.
    Shape sc1 = {sx[1]};
    auto running = [&](unsigned res, unsigned input,
                       int buf) -> FailureOr<int> {
      if (isExclusiveState(input, buf)) {
        if (resultUsed(res))
          valueBuf[current->getResult(res)] = buf;
        return buf;
      }
      if (resultUsed(res))
        return out(res, sc1);
      return newBufferLike(buf);
    };
    auto mo = running(1, 3, *m), vo = running(2, 4, *v);
    if (failed(mo) || failed(vo))
      return failure();
    SmallVector<TArg> ts = {{"x", {*x}},
                            {"scale", {*sc}},
                            {"bias", {*b}},
                            {"running_mean", {*m}},
                            {"running_var", {*v}},
                            {"y", {*y}},
                            {"running_mean_out", {*mo}},
                            {"running_var_out", {*vo}}};
    if (failed(optionalOut(ts, "saved_mean", 3, sc1)) ||
        failed(optionalOut(ts, "saved_inv_std", 4, sc1)))
      return failure();
    // SyncBatchNorm (train-data-parallel): the statistics of the global
    // batch, over every rank.
    return handled(call(
        syncBatchNorm() ? "batch_norm_training_sync" : "batch_norm_training",
        ts, {{"momentum", f32(momentum)}, {"epsilon", f32(eps)}}));
  }
  if (ms && type == "BatchNormalizationGrad") {
    auto dy = in(0), x = in(1), sc = in(2), m = in(3), is = in(4);
    if (failed(dy) || failed(x) || failed(sc) || failed(m) || failed(is))
      return failure();
    Shape sc1 = {shapeOf(*x).size() > 1 ? shapeOf(*x)[1] : 1};
    SmallVector<TArg> ts = {{"dy", {*dy}},
                            {"x", {*x}},
                            {"scale", {*sc}},
                            {"saved_mean", {*m}},
                            {"saved_inv_std", {*is}}};
    if (failed(optionalOut(ts, "dx", 0, shapeOf(*x))) ||
        failed(optionalOut(ts, "dscale", 1, sc1)) ||
        failed(optionalOut(ts, "dbias", 2, sc1)))
      return failure();
    return handled(
        call(syncBatchNorm() ? "batch_norm_grad_sync" : "batch_norm_grad", ts));
  }

  // --- layer and RMS normalization -----------------------------------------
  // LayerNormalization and SimplifiedLayerNormalization (an RMSNorm, as
  // ORT's fusion writes it; opset 23's RMSNormalization is the same with
  // one output) share their geometry: statistics per row of the dims
  // before `axis`, scale (and bias) over the rest.
  bool rms = type.starts_with("Simplified") || type == "RMSNormalization";
  if ((onnx && (type == "LayerNormalization" ||
                type == "SimplifiedLayerNormalization" ||
                type == "RMSNormalization")) ||
      (ms && (type == "LayerNormalizationGrad" ||
              type == "SimplifiedLayerNormalizationGrad"))) {
    bool grad = type.ends_with("Grad");
    auto x = in(grad ? 1 : 0), sc = in(grad ? 2 : 1);
    if (failed(x) || failed(sc))
      return failure();
    const Shape &sx = shapeOf(*x);
    int64_t rank = sx.size(), axis = attrInt("axis", -1);
    if (failed(normAxis(axis, rank)))
      return failure();
    Shape stat(sx.begin(), sx.begin() + axis);
    stat.append(rank - axis, 1);
    Shape sp(sx.begin() + axis, sx.end());
    if (!grad) {
      SmallVector<TArg> ts = {{"x", {*x}}, {"scale", {*sc}}};
      if (!rms && failed(optionalIn(ts, "bias", 2)))
        return failure();
      auto y = out(0, sx);
      if (failed(y))
        return failure();
      ts.push_back({"y", {*y}});
      if (rms && resultUsed(1)) {
        // inv_std_var is float (stash_type 1, the only one ORT has), and
        // ORT's fusion leaves it untyped.
        auto is = out(1, stat, Float32Type::get(ctx));
        if (failed(is))
          return failure();
        ts.push_back({"inv_std", {*is}});
      }
      if (!rms && (failed(optionalOut(ts, "mean", 1, stat)) ||
                   failed(optionalOut(ts, "inv_std", 2, stat))))
        return failure();
      return handled(call(
          rms ? "rms_norm" : "layer_norm", ts,
          {{"axis", i64(axis)}, {"epsilon", f32(attrFloat("epsilon", 1e-5))}}));
    }
    // LayerNormalizationGrad(dY, X, scale, mean, inv_std);
    // SimplifiedLayerNormalizationGrad(dY, X, scale, inv_std).
    auto dy = in(0), is = in(rms ? 3 : 4);
    if (failed(dy) || failed(is))
      return failure();
    SmallVector<TArg> ts = {
        {"dy", {*dy}}, {"x", {*x}}, {"scale", {*sc}}, {"inv_std", {*is}}};
    if (!rms) {
      auto m = in(3);
      if (failed(m))
        return failure();
      ts.push_back({"mean", {*m}});
    }
    if (failed(optionalOut(ts, "dx", 0, sx)) ||
        failed(optionalOut(ts, "dscale", 1, sp)) ||
        (!rms && failed(optionalOut(ts, "dbias", 2, sp))))
      return failure();
    if (!rms && !resultUsed(0))
      return err() << "output 0 (dX) is required";
    return handled(call(rms ? "rms_norm_grad" : "layer_norm_grad", ts,
                        {{"axis", i64(axis)}}));
  }

  // --- softmax gradient --------------------------------------------------
  if (ms && (type == "SoftmaxGrad_13" || type == "SoftmaxGrad")) {
    auto dy = in(0), y = in(1);
    if (failed(dy) || failed(y))
      return failure();
    int64_t rank = shapeOf(*y).size();
    int64_t axis = attrInt("axis", type == "SoftmaxGrad" ? 1 : -1);
    if (axis < 0)
      axis += rank;
    // Opset-1 SoftmaxGrad works on the 2-D view [prod(:axis),
    // prod(axis:)]; it equals the one-axis form only on the last axis.
    if (type == "SoftmaxGrad" && axis != rank - 1)
      return err() << "SoftmaxGrad (2-D view) on a non-last axis is not "
                      "supported";
    auto dx = out(0, shapeOf(*y));
    if (failed(dx))
      return failure();
    return handled(call("softmax_grad",
                        {{"dy", {*dy}}, {"y", {*y}}, {"dx", {*dx}}},
                        {{"axis", i64(axis)}}));
  }

  // --- dropout -----------------------------------------------------------
  if (onnx && type == "Dropout") {
    auto x = in(0);
    if (failed(x))
      return failure();
    SmallVector<TArg> ts = {{"x", {*x}}};
    if (failed(optionalIn(ts, "ratio", 1)) ||
        failed(optionalIn(ts, "training", 2)))
      return failure();
    auto y = out(0, shapeOf(*x));
    if (failed(y))
      return failure();
    ts.push_back({"y", {*y}});
    if (failed(optionalOut(ts, "mask", 1, shapeOf(*x))))
      return failure();
    return handled(call("dropout", ts, {{"seed", i64(nodeSeed())}}));
  }
  // Generators: stochastic depth (RandomUniformLike, Add, Floor) and noise.
  // The "Like" forms take the shape of input 0 (and its dtype when the node
  // names none: the result type says which), the others their `shape`.
  bool uniform = type == "RandomUniform" || type == "RandomUniformLike";
  if (onnx &&
      (uniform || type == "RandomNormal" || type == "RandomNormalLike")) {
    Shape s;
    if (type.ends_with("Like")) {
      auto x = in(0);
      if (failed(x))
        return failure();
      s = shapeOf(*x);
    } else if (auto v = attrInts("shape")) {
      s = Shape(v->begin(), v->end());
    } else {
      return err() << "has no shape attribute";
    }
    auto y = out(0, s);
    if (failed(y))
      return failure();
    if (uniform)
      return handled(call("random_uniform", {{"y", {*y}}},
                          {{"seed", i64(nodeSeed())},
                           {"low", f64(attrFloat("low", 0.0))},
                           {"high", f64(attrFloat("high", 1.0))}}));
    return handled(call("random_normal", {{"y", {*y}}},
                        {{"seed", i64(nodeSeed())},
                         {"mean", f64(attrFloat("mean", 0.0))},
                         {"scale", f64(attrFloat("scale", 1.0))}}));
  }
  if (onnx && type == "Bernoulli") {
    auto p = in(0);
    if (failed(p))
      return failure();
    Type e = bufs[*p].elem;
    if (!e.isF32() && !e.isF16() && !e.isBF16())
      return err() << "input 0 has element type " << e
                   << "; the runtime's Bernoulli takes f32, f16 or bf16";
    auto y = out(0, shapeOf(*p));
    if (failed(y))
      return failure();
    return handled(call("bernoulli", {{"p", {*p}}, {"y", {*y}}},
                        {{"seed", i64(nodeSeed())}}));
  }
  if (ms && type == "DropoutGrad") {
    auto dy = in(0), mask = in(1);
    if (failed(dy) || failed(mask))
      return failure();
    SmallVector<TArg> ts = {{"dy", {*dy}}, {"mask", {*mask}}};
    if (failed(optionalIn(ts, "ratio", 2)) ||
        failed(optionalIn(ts, "training", 3)))
      return failure();
    auto dx = out(0, shapeOf(*dy));
    if (failed(dx))
      return failure();
    ts.push_back({"dx", {*dx}});
    return handled(call("dropout_grad", ts));
  }
  return false;
}

void GraphLowering::registerNN(FamilyTable &t) {
  t.add(kOnnxDomain,
        {"Conv", "ConvTranspose", "MaxPool", "AveragePool", "MaxPoolGrad",
         "AveragePoolGrad", "GlobalAveragePool", "GlobalAveragePoolGrad",
         "BatchNormalization", "LayerNormalization",
         "SimplifiedLayerNormalization", "RMSNormalization", "Dropout",
         "RandomUniform", "RandomUniformLike", "RandomNormal",
         "RandomNormalLike", "Bernoulli"},
        &GraphLowering::lowerNN);
  t.add(kMicrosoftDomain,
        {"ConvGrad", "ConvTransposeGrad", "MaxPoolGrad", "AveragePoolGrad",
         "GlobalAveragePoolGrad", "BatchNormInternal", "BatchNormalizationGrad",
         "LayerNormalizationGrad", "SimplifiedLayerNormalizationGrad",
         "SoftmaxGrad_13", "SoftmaxGrad", "DropoutGrad"},
        &GraphLowering::lowerNN);
}

} // namespace amp::lowering

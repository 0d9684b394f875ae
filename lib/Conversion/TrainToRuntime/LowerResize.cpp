//===- LowerResize.cpp - Resize, Upsample and ResizeGrad ------------------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// ONNX Resize (and the older Upsample) and ORT's ResizeGrad: scales from
// the node's inputs (or sizes), the coordinate transformation and the
// interpolation mode resolved here into one resize / resize_grad call.
//
//===----------------------------------------------------------------------===//

#include "LoweringTable.h"

#include "llvm/ADT/StringSwitch.h"

#include <cmath>

namespace amp::lowering {

/// Resize (opset 11+: X, roi, scales, sizes; opset 10 and Upsample: X,
/// scales) and com.microsoft ResizeGrad (dY, X, roi, scales, sizes): the
/// modes by number, the scales of every dim as a constant f32 buffer.
LogicalResult GraphLowering::lowerResize(bool grad) {
  unsigned xi = grad ? 1 : 0;
  auto x = in(xi);
  if (failed(x))
    return failure();
  Shape sx = shapeOf(*x);
  int64_t rank = sx.size();
  // Two inputs: opset 10's Resize or Upsample (asymmetric, floor).
  bool legacy = !grad && current->getNumOperands() == 2;
  unsigned scalesAt = legacy ? 1 : xi + 2, sizesAt = xi + 3;

  std::string mode = attrStr("mode", "nearest");
  int32_t m = mode == "nearest"                        ? 0
              : mode == "linear" || mode == "bilinear" ? 1
              : mode == "cubic" || mode == "bicubic"   ? 2
                                                       : -1;
  if (m < 0)
    return err() << "mode '" << mode
                 << "' is not supported (nearest, linear and cubic are)";
  std::string coord =
      legacy ? "asymmetric"
             : attrStr("coordinate_transformation_mode", "half_pixel");
  int32_t c = llvm::StringSwitch<int32_t>(coord)
                  .Case("half_pixel", 0)
                  .Case("asymmetric", 1)
                  .Case("align_corners", 2)
                  .Case("pytorch_half_pixel", 3)
                  .Case("tf_half_pixel_for_nn", 4)
                  .Case("half_pixel_symmetric", 5)
                  .Default(-1);
  if (c < 0)
    return err() << "coordinate_transformation_mode '" << coord
                 << "' is not supported";
  std::string nearest =
      legacy ? "floor" : attrStr("nearest_mode", "round_prefer_floor");
  int32_t nm = llvm::StringSwitch<int32_t>(nearest)
                   .Case("round_prefer_floor", 0)
                   .Case("round_prefer_ceil", 1)
                   .Case("floor", 2)
                   .Case("ceil", 3)
                   .Default(-1);
  if (nm < 0)
    return err() << "nearest_mode '" << nearest << "' is not supported";
  if (attrInt("antialias", 0) != 0)
    return err() << "antialias is not supported";
  if (attrStr("keep_aspect_ratio_policy", "stretch") != "stretch")
    return err() << "keep_aspect_ratio_policy other than 'stretch' is not "
                    "supported";

  SmallVector<int64_t> axes = attrInts("axes").value_or(SmallVector<int64_t>());
  if (axes.empty())
    for (int64_t d = 0; d < rank; ++d)
      axes.push_back(d);
  for (int64_t &a : axes)
    if (failed(normAxis(a, rank)))
      return failure();

  // The scales of every dim and the output shape: from the scales when
  // they are given (not empty), else from the sizes.
  SmallVector<double> scale(rank, 1.0);
  Shape sy = sx;
  std::optional<HostTensor> s;
  if (has(scalesAt) && (s = hostIn(scalesAt)) && !s->v.empty()) {
    if (s->v.size() != axes.size())
      return err() << "scales has " << s->v.size() << " entries for "
                   << axes.size() << " axes";
    for (auto [i, a] : llvm::enumerate(axes)) {
      double v = s->v[i];
      if (!(v > 0) || !std::isfinite(v))
        return err() << "scale " << v << " of dim " << a
                     << " is not positive and finite";
      scale[a] = v;
      double n = std::floor(double(sx[a]) * v);
      if (n >= 9.2e18)
        return err() << "scale " << v << " of dim " << a << " overflows";
      sy[a] = int64_t(n);
    }
  } else if (has(sizesAt) || grad) {
    // ResizeGrad may have neither: dY has the resized shape.
    FailureOr<SmallVector<int64_t>> z = SmallVector<int64_t>();
    if (has(sizesAt)) {
      z = hostInts(sizesAt);
    } else {
      auto dy = in(0);
      if (failed(dy))
        return failure();
      axes.clear();
      for (int64_t d = 0; d < rank; ++d) {
        axes.push_back(d);
        z->push_back(d < int64_t(shapeOf(*dy).size()) ? shapeOf(*dy)[d] : 0);
      }
      if (int64_t(shapeOf(*dy).size()) != rank)
        return err() << "dY has rank " << shapeOf(*dy).size() << ", X rank "
                     << rank;
    }
    if (failed(z))
      return failure();
    if (z->size() != axes.size())
      return err() << "sizes has " << z->size() << " entries for "
                   << axes.size() << " axes";
    for (auto [i, a] : llvm::enumerate(axes)) {
      int64_t n = (*z)[i];
      if (n < 0 || (n > 0 && sx[a] == 0))
        return err() << "size " << n << " of dim " << a << " (" << sx[a]
                     << ") is not possible";
      sy[a] = n;
      scale[a] = sx[a] ? double(n) / double(sx[a]) : 1.0;
    }
  } else {
    return err() << "scales or sizes must be given and known when lowering";
  }

  if (legacy && m == 0) {
    // ORT's Resize-10 / Upsample nearest truncates the (non-negative)
    // coordinate when an axis grows and rounds it up when it shrinks.
    bool up = llvm::any_of(scale, [](double s) { return s > 1; });
    bool down = llvm::any_of(scale, [](double s) { return s < 1; });
    if (up && down)
      return err() << "nearest Resize-10 / Upsample that grows some axes and "
                      "shrinks others is not supported";
    nm = down ? 3 : 2;
  }
  HostTensor h;
  h.shape = {rank};
  h.elem = Float32Type::get(ctx);
  h.v.assign(scale.begin(), scale.end());
  int sc = constBuffer(h);
  SmallVector<std::pair<StringRef, Attribute>> attrs = {
      {"mode", i32(m)},
      {"coord_mode", i32(c)},
      {"nearest_mode", i32(nm)},
      {"cubic_coeff_a", f32(attrFloat("cubic_coeff_a", -0.75))},
      {"exclude_outside", i32(attrInt("exclude_outside", 0))}};
  if (grad) {
    auto dy = in(0);
    if (failed(dy))
      return failure();
    if (!llvm::equal(shapeOf(*dy), sy)) {
      auto diag = err() << "dY has shape [";
      llvm::interleaveComma(shapeOf(*dy), diag);
      diag << "], the resized shape is [";
      llvm::interleaveComma(sy, diag);
      return diag << "]";
    }
    auto dx = out(0, sx);
    if (failed(dx))
      return failure();
    return call("resize_grad", {{"dy", {*dy}}, {"scales", {sc}}, {"dx", {*dx}}},
                attrs);
  }
  auto y = out(0, sy);
  if (failed(y))
    return failure();
  return call("resize", {{"x", {*x}}, {"scales", {sc}}, {"y", {*y}}}, attrs);
}

FailureOr<bool> GraphLowering::lowerResizeFamily(StringRef domain,
                                                 StringRef type) {
  bool onnx = domain.empty() || domain == "ai.onnx";
  bool ms = domain == "com.microsoft";
  bool resizeGrad = ms && type == "ResizeGrad";
  if ((onnx && (type == "Resize" || type == "Upsample")) || resizeGrad)
    return handled(lowerResize(resizeGrad));
  return false;
}

void GraphLowering::registerResize(FamilyTable &t) {
  t.add(kOnnxDomain, {"Resize", "Upsample"}, &GraphLowering::lowerResizeFamily);
  t.add(kMicrosoftDomain, {"ResizeGrad"}, &GraphLowering::lowerResizeFamily);
}

} // namespace amp::lowering

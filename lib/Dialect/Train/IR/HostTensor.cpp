//===- HostTensor.cpp - host values and the shape rules they follow ------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// The pieces of HostEvaluation.h that the lowering shares too: host values
// read from and written to attributes, numpy broadcasting, and the shape
// rules of Slice and of the reshape family.
//
//===----------------------------------------------------------------------===//

#include "amp/Dialect/Train/IR/HostEvaluation.h"
#include "amp/Dialect/Train/IR/TrainOps.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/DialectResourceBlobManager.h"

#include <cstring>

using namespace mlir;

namespace amp::train {

bool broadcast(ArrayRef<HostShape> shapes, HostShape &out) {
  size_t rank = 0;
  for (const HostShape &s : shapes)
    rank = std::max(rank, s.size());
  out.assign(rank, 1);
  for (const HostShape &s : shapes)
    for (size_t i = 0; i < s.size(); ++i) {
      int64_t &o = out[rank - s.size() + i];
      int64_t d = s[i];
      if (d == o || d == 1)
        continue;
      if (o != 1)
        return false;
      o = d;
    }
  return true;
}

std::optional<HostTensor> readHost(ElementsAttr attr) {
  auto type = cast<ShapedType>(attr.getType());
  if (!type.hasStaticShape())
    return std::nullopt;
  HostTensor h;
  h.shape.assign(type.getShape().begin(), type.getShape().end());
  h.elem = type.getElementType();
  int64_t n = numel(h.shape);
  if (n > kMaxHostElements)
    return std::nullopt;
  if (!h.elem.isIntOrFloat())
    return std::nullopt;
  if (auto dense = dyn_cast<DenseElementsAttr>(attr)) {
    if (isa<FloatType>(h.elem)) {
      for (APFloat v : dense.getValues<APFloat>()) {
        bool lost;
        v.convert(llvm::APFloat::IEEEdouble(),
                  llvm::APFloat::rmNearestTiesToEven, &lost);
        h.v.push_back(v.convertToDouble());
      }
    } else {
      bool isBool = h.elem.isInteger(1) || h.elem.isUnsignedInteger();
      for (APInt v : dense.getValues<APInt>())
        h.v.push_back(
            double(isBool ? int64_t(v.getZExtValue()) : v.getSExtValue()));
    }
    return h;
  }
  if (auto res = dyn_cast<DenseResourceElementsAttr>(attr)) {
    AsmResourceBlob *blob = res.getRawHandle().getBlob();
    if (!blob)
      return std::nullopt;
    ArrayRef<char> data = blob->getData();
    unsigned bits = h.elem.getIntOrFloatBitWidth();
    unsigned bytes = h.elem.isInteger(1) ? 1 : (bits + 7) / 8;
    if (int64_t(data.size()) < n * bytes)
      return std::nullopt;
    for (int64_t k = 0; k < n; ++k) {
      uint64_t raw = 0;
      std::memcpy(&raw, data.data() + k * bytes, bytes);
      if (auto ft = dyn_cast<FloatType>(h.elem)) {
        llvm::APFloat a(ft.getFloatSemantics(), APInt(bits, raw));
        bool lost;
        a.convert(llvm::APFloat::IEEEdouble(),
                  llvm::APFloat::rmNearestTiesToEven, &lost);
        h.v.push_back(a.convertToDouble());
      } else if (h.elem.isInteger(1) || h.elem.isUnsignedInteger()) {
        h.v.push_back(double(raw));
      } else {
        h.v.push_back(double(APInt(bits, raw).getSExtValue()));
      }
    }
    return h;
  }
  return std::nullopt;
}

ElementsAttr toAttr(const HostTensor &h) {
  auto type = RankedTensorType::get(h.shape, h.elem);
  if (auto ft = dyn_cast<FloatType>(h.elem)) {
    SmallVector<APFloat> vals;
    for (double d : h.v) {
      llvm::APFloat a(d);
      bool lost;
      a.convert(ft.getFloatSemantics(), llvm::APFloat::rmNearestTiesToEven,
                &lost);
      vals.push_back(a);
    }
    return DenseElementsAttr::get(type, vals);
  }
  unsigned bits = h.elem.getIntOrFloatBitWidth();
  SmallVector<APInt> vals;
  for (double d : h.v)
    // A bool is true when nonzero; an integer wraps to its width.
    vals.push_back(APInt(bits,
                         bits == 1 ? uint64_t(d != 0) : uint64_t(hostInt(d)),
                         /*isSigned=*/bits != 1, /*implicitTrunc=*/true));
  return DenseElementsAttr::get(type, vals);
}

std::optional<SliceRange>
sliceRange(ArrayRef<int64_t> shape, ArrayRef<int64_t> starts,
           ArrayRef<int64_t> ends, ArrayRef<int64_t> axes,
           ArrayRef<int64_t> steps, std::string &why) {
  int64_t rank = shape.size();
  SliceRange r;
  r.start.assign(rank, 0);
  r.step.assign(rank, 1);
  r.shape.assign(shape.begin(), shape.end());
  if (starts.size() != ends.size() ||
      (!axes.empty() && axes.size() != starts.size()) ||
      (!steps.empty() && steps.size() != starts.size())) {
    why = "starts, ends, axes and steps differ in length";
    return std::nullopt;
  }
  for (size_t k = 0; k < starts.size(); ++k) {
    int64_t ax = axes.empty() ? int64_t(k) : axes[k];
    if (ax < -rank || ax >= rank) {
      why = "axis " + std::to_string(ax) + " out of range";
      return std::nullopt;
    }
    if (ax < 0)
      ax += rank;
    int64_t dim = shape[ax];
    int64_t st = steps.empty() ? 1 : steps[k];
    if (st == 0) {
      why = "a step is 0";
      return std::nullopt;
    }
    auto clampIdx = [&](int64_t v, int64_t lo, int64_t hi) {
      if (v < 0)
        v = v < -dim ? -1 : v + dim; // INT64_MIN-safe
      return std::min(std::max(v, lo), hi);
    };
    int64_t b, e;
    if (st > 0) {
      b = clampIdx(starts[k], 0, dim);
      e = clampIdx(ends[k], 0, dim);
    } else {
      b = clampIdx(starts[k], -1, dim - 1);
      e = clampIdx(ends[k], -1, dim - 1);
    }
    int64_t n = st > 0 ? (e > b ? (e - b + st - 1) / st : 0)
                       : (b > e ? (b - e + (-st) - 1) / (-st) : 0);
    r.start[ax] = b;
    r.step[ax] = st;
    r.shape[ax] = n;
  }
  return r;
}

std::optional<HostShape> reshapedShape(Operation *op, ArrayRef<int64_t> sx,
                                       std::optional<ArrayRef<int64_t>> input1,
                                       std::string &why) {
  StringRef type = cast<OnnxNodeOpInterface>(op).getOnnxOpType();
  int64_t rank = sx.size();
  HostShape s;
  if (type == "Flatten") {
    int64_t axis = getOnnxInt(op, "axis", 1);
    if (axis < -rank || axis > rank) {
      why = "axis " + std::to_string(axis) + " out of range";
      return std::nullopt;
    }
    if (axis < 0)
      axis += rank;
    s = {numel(sx.take_front(axis)), numel(sx.drop_front(axis))};
  } else if (type == "Reshape") {
    if (!input1) {
      why = "the target shape (input 1) is not known";
      return std::nullopt;
    }
    int64_t known = 1, infer = -1;
    for (auto [i, d] : llvm::enumerate(*input1)) {
      int64_t v = d;
      if (v == 0 && !getOnnxInt(op, "allowzero", 0))
        v = int64_t(i) < rank ? sx[i] : 0;
      if (v < -1 || (v == -1 && infer >= 0)) {
        why = "bad target shape entry " + std::to_string(d);
        return std::nullopt;
      }
      if (v == -1)
        infer = i;
      else
        known *= v;
      s.push_back(v);
    }
    if (infer >= 0)
      s[infer] = known ? numel(sx) / known : 0;
  } else {
    // Squeeze, Unsqueeze: the axes are input 1 (opset 13) or an attribute.
    SmallVector<int64_t> axes =
        input1 ? SmallVector<int64_t>(*input1)
               : getOnnxInts(op, "axes").value_or(SmallVector<int64_t>());
    int64_t outRank = type == "Squeeze" ? rank : rank + int64_t(axes.size());
    SmallVector<bool> marked(outRank, type == "Squeeze" && axes.empty());
    for (int64_t a : axes) {
      if (a < -outRank || a >= outRank) {
        why = "axis " + std::to_string(a) + " out of range";
        return std::nullopt;
      }
      marked[a < 0 ? a + outRank : a] = true;
    }
    if (type == "Squeeze") {
      for (int64_t d = 0; d < rank; ++d)
        if (!(marked[d] && sx[d] == 1))
          s.push_back(sx[d]);
    } else {
      for (int64_t d = 0, k = 0; d < outRank; ++d)
        s.push_back(marked[d] ? 1 : sx[k++]);
    }
  }
  if (numel(s) != numel(sx)) {
    why = "reshape changes the element count";
    return std::nullopt;
  }
  return s;
}

} // namespace amp::train

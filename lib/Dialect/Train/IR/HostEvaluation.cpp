//===- HostEvaluation.cpp - ONNX shape computations on the host -----------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// evaluateOnHost (HostEvaluation.h): the shape computations of exported
// training graphs, evaluated on small host values in double precision and
// rounded once into the result's element type.
//
//===----------------------------------------------------------------------===//

#include "amp/Dialect/Train/IR/HostEvaluation.h"
#include "amp/Dialect/Train/IR/OnnxTypes.h"
#include "amp/Dialect/Train/IR/TrainOps.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/DialectResourceBlobManager.h"

#include "llvm/ADT/StringMap.h"

#include <cmath>
#include <cstring>

using namespace mlir;

namespace amp::train {

namespace {

bool isFloatType(Type t) { return isa<FloatType>(t); }

/// Numpy broadcasting index: the flat index into `in` (shape `s`, aligned to
/// the right of `out`) of the output element `flat`.
int64_t broadcastIndex(ArrayRef<int64_t> out, ArrayRef<int64_t> s,
                       int64_t flat) {
  int64_t idx = 0, stride = 1;
  for (int64_t d = int64_t(out.size()) - 1, k = int64_t(s.size()) - 1; k >= 0;
       --d, --k) {
    int64_t coord = flat % out[d];
    flat /= out[d];
    if (s[k] != 1)
      idx += coord * stride;
    stride *= s[k];
  }
  return idx;
}

/// Rounds `v` to the value type `t` holds (integers truncate toward zero
/// and wrap as two's complement; bool is v != 0; floats round to nearest
/// even in their own format).
double roundTo(Type t, double v) {
  if (auto ft = dyn_cast<FloatType>(t)) {
    if (std::isnan(v) || std::isinf(v))
      return v;
    llvm::APFloat a(v);
    bool lost;
    a.convert(ft.getFloatSemantics(), llvm::APFloat::rmNearestTiesToEven,
              &lost);
    a.convert(llvm::APFloat::IEEEdouble(), llvm::APFloat::rmNearestTiesToEven,
              &lost);
    return a.convertToDouble();
  }
  if (t.isInteger(1))
    return v != 0;
  return std::trunc(v);
}

} // namespace

FailureOr<bool> evaluateOnHost(Operation *node, const HostOperands &in,
                               SmallVectorImpl<ElementsAttr> &results,
                               std::string &why) {
  auto onnxNode = dyn_cast<OnnxNodeOpInterface>(node);
  if (!onnxNode)
    return false;
  StringRef domain = onnxNode.getOnnxDomain();
  StringRef type = onnxNode.getOnnxOpType();
  bool onnx = domain.empty() || domain == "ai.onnx";
  bool ms = domain == "com.microsoft";
  MLIRContext *ctx = node->getContext();
  results.assign(node->getNumResults(), ElementsAttr());
  unsigned numOperands = node->getNumOperands();
  auto has = [&](unsigned i) {
    return i < numOperands && !isa<NoneType>(node->getOperand(i).getType());
  };
  auto hostIn = [&](unsigned i) -> std::optional<HostTensor> {
    if (!has(i) || i >= in.values.size() || !in.values[i])
      return std::nullopt;
    return readHost(in.values[i]);
  };
  auto resultUsed = [&](unsigned i) {
    return i < node->getNumResults() &&
           !isa<NoneType>(node->getResult(i).getType());
  };
  // The element type the graph declares for result i, where it declares
  // an int or float one, else `fallback`.
  auto resultElemOr = [&](unsigned i, Type fallback) -> Type {
    if (auto t = dyn_cast<ShapedType>(node->getResult(i).getType()))
      if (t.getElementType().isIntOrFloat())
        return t.getElementType();
    return fallback;
  };
  auto setHost = [&](unsigned i, HostTensor h) {
    for (double &d : h.v)
      d = roundTo(h.elem, d);
    results[i] = toAttr(h);
  };
  auto fail = [&](const Twine &message) -> FailureOr<bool> {
    why = message.str();
    return failure();
  };
  auto attrInt = [&](StringRef n, int64_t dflt) {
    return getOnnxInt(node, n, dflt);
  };
  auto nodeAttr = [&](StringRef n) { return getOnnxAttribute(node, n); };
  // `axis` normalized against `rank` (negative counts from the end); false
  // with `why` set when out of range.
  auto normAxis = [&](int64_t &axis, int64_t rank) {
    if (axis < -rank || axis >= rank) {
      why = "axis " + std::to_string(axis) + " out of range";
      return false;
    }
    if (axis < 0)
      axis += rank;
    return true;
  };
  Type i64 = IntegerType::get(ctx, 64);
  Type i1 = IntegerType::get(ctx, 1);

  // Shape and Size need only the (static) shape of their input.
  if (onnx && (type == "Shape" || type == "Size")) {
    std::optional<HostShape> s =
        has(0) && in.shapes.size() > 0 ? in.shapes[0] : std::nullopt;
    if (!s)
      return false;
    HostTensor h;
    h.elem = i64;
    if (type == "Size") {
      int64_t n = 1;
      for (int64_t d : *s)
        if (d < 0 || __builtin_mul_overflow(n, d, &n))
          return false;
      h.v = {double(n)};
    } else {
      int64_t rank = s->size();
      auto norm = [&](int64_t v) {
        if (v < 0)
          v += rank;
        return std::min(std::max<int64_t>(v, 0), rank);
      };
      int64_t b = norm(attrInt("start", 0));
      int64_t e = norm(attrInt("end", rank));
      for (int64_t d = b; d < e; ++d)
        h.v.push_back(double((*s)[d]));
      h.shape = {int64_t(h.v.size())};
    }
    setHost(0, std::move(h));
    return true;
  }
  // com.microsoft BroadcastGradientArgs(a_shape, b_shape): the axes each
  // gradient sums over to undo numpy broadcasting (ORT's gradient builder
  // emits it for every broadcasting binary op). With both shapes known it
  // is a constant pair of axis lists.
  if (ms && type == "BroadcastGradientArgs") {
    auto sa = hostIn(0), sb = hostIn(1);
    if (!sa || !sb)
      return fail("the shapes must be known when lowering");
    SmallVector<int64_t> a, b;
    for (double d : sa->v)
      a.push_back(hostInt(d));
    for (double d : sb->v)
      b.push_back(hostInt(d));
    size_t rank = std::max(a.size(), b.size());
    HostTensor ra, rb;
    ra.elem = rb.elem = i64;
    for (size_t d = 0; d < rank; ++d) {
      // Dim d of the broadcast result, counted from the left; an operand
      // with fewer dims is aligned to the right.
      int64_t da = d + a.size() >= rank ? a[d + a.size() - rank] : 1;
      int64_t db = d + b.size() >= rank ? b[d + b.size() - rank] : 1;
      if (da != db && da != 1 && db != 1)
        return fail("shapes do not broadcast at dim " + Twine(d));
      if (da == 1 && db != 1)
        ra.v.push_back(double(d));
      if (db == 1 && da != 1)
        rb.v.push_back(double(d));
    }
    ra.shape = {int64_t(ra.v.size())};
    rb.shape = {int64_t(rb.v.size())};
    if (resultUsed(0))
      setHost(0, std::move(ra));
    if (resultUsed(1))
      setHost(1, std::move(rb));
    return true;
  }
  if (onnx && type == "Constant") {
    Attribute v = nodeAttr("value");
    if (auto ta = dyn_cast_or_null<TensorAttr>(v))
      v = ta.getValue();
    if (auto e = dyn_cast_or_null<ElementsAttr>(v)) {
      results[0] = e;
      return true;
    }
    HostTensor h;
    if (auto f = dyn_cast_or_null<FloatAttr>(nodeAttr("value_float"))) {
      h.elem = Float32Type::get(ctx);
      h.v = {f.getValueAsDouble()};
    } else if (auto i = dyn_cast_or_null<IntegerAttr>(nodeAttr("value_int"))) {
      h.elem = i64;
      h.v = {double(i.getInt())};
    } else if (auto fs = dyn_cast_or_null<DenseF32ArrayAttr>(
                   nodeAttr("value_floats"))) {
      h.elem = Float32Type::get(ctx);
      for (float x : fs.asArrayRef())
        h.v.push_back(x);
      h.shape = {int64_t(h.v.size())};
    } else if (auto is = getOnnxInts(node, "value_ints")) {
      h.elem = i64;
      for (int64_t x : *is)
        h.v.push_back(double(x));
      h.shape = {int64_t(h.v.size())};
    } else {
      return fail("only numeric Constant values are supported");
    }
    setHost(0, std::move(h));
    return true;
  }

  if (onnx && type == "CastLike") {
    // Input 1 only lends its element type: it need not be a host value.
    Type like = has(1) && in.elems.size() > 1 ? in.elems[1] : Type();
    std::optional<HostTensor> h = like ? hostIn(0) : std::nullopt;
    if (!h)
      return false;
    h->elem = like;
    setHost(0, std::move(*h));
    return true;
  }
  // Everything else folds only when every present input is a small host
  // value.
  SmallVector<std::optional<HostTensor>> ins;
  for (unsigned i = 0; i < numOperands; ++i) {
    if (!has(i)) {
      ins.push_back(std::nullopt);
      continue;
    }
    auto h = hostIn(i);
    if (!h)
      return false;
    ins.push_back(std::move(h));
  }
  if (numOperands == 0 || !ins[0])
    return false;
  const HostTensor &x = *ins[0];
  auto ints = [](const HostTensor &h) {
    SmallVector<int64_t> v;
    for (double d : h.v)
      v.push_back(hostInt(d));
    return v;
  };

  static const llvm::StringMap<int> binary = {
      {"Add", 0},      {"Sub", 1},  {"Mul", 2}, {"Div", 3},   {"Mod", 4},
      {"Pow", 5},      {"Min", 6},  {"Max", 7}, {"Equal", 8}, {"Less", 9},
      {"Greater", 10}, {"And", 11}, {"Or", 12}};
  if (onnx && binary.count(type) && ins.size() == 2 && ins[1]) {
    const HostTensor &y = *ins[1];
    HostShape s;
    if (!broadcast({x.shape, y.shape}, s))
      return fail("input shapes do not broadcast");
    int op = binary.lookup(type);
    HostTensor h;
    h.shape = s;
    if (numel(s) > kMaxHostElements)
      return false;
    h.elem = op >= 8 ? i1 : resultElemOr(0, x.elem);
    bool intMath = !isFloatType(x.elem);
    for (int64_t k = 0, n = numel(s); k < n; ++k) {
      double a = x.v[broadcastIndex(s, x.shape, k)];
      double b = y.v[broadcastIndex(s, y.shape, k)];
      double r = 0;
      switch (op) {
      case 0:
        r = a + b;
        break;
      case 1:
        r = a - b;
        break;
      case 2:
        r = a * b;
        break;
      case 3:
        if (intMath && b == 0)
          return fail("integer division by zero");
        r = intMath ? std::trunc(a / b) : a / b;
        break;
      case 4: {
        if (intMath && b == 0)
          return fail("integer modulo by zero");
        // fmod = 1: the remainder takes the dividend's sign (C fmod);
        // fmod = 0: the divisor's (Python's %), integers and floats alike.
        r = std::fmod(a, b);
        if (!attrInt("fmod", 0) && r != 0 && ((r < 0) != (b < 0)))
          r += b;
        break;
      }
      case 5:
        r = std::pow(a, b);
        break;
      case 6:
        r = std::min(a, b);
        break;
      case 7:
        r = std::max(a, b);
        break;
      case 8:
        r = a == b;
        break;
      case 9:
        r = a < b;
        break;
      case 10:
        r = a > b;
        break;
      case 11:
        r = (a != 0) && (b != 0);
        break;
      case 12:
        r = (a != 0) || (b != 0);
        break;
      }
      h.v.push_back(r);
    }
    setHost(0, std::move(h));
    return true;
  }
  // Where on host values: torch's expand(-1, ...) and repeat shapes pick
  // between the traced dims and -1 with it.
  if (onnx && type == "Where" && ins.size() == 3 && ins[1] && ins[2]) {
    const HostTensor &a = *ins[1], &b = *ins[2];
    HostShape s;
    if (!broadcast({x.shape, a.shape, b.shape}, s))
      return fail("input shapes do not broadcast");
    HostTensor h;
    h.shape = s;
    if (numel(s) > kMaxHostElements)
      return false;
    h.elem = resultElemOr(0, a.elem);
    for (int64_t k = 0, n = numel(s); k < n; ++k)
      h.v.push_back(x.v[broadcastIndex(s, x.shape, k)] != 0
                        ? a.v[broadcastIndex(s, a.shape, k)]
                        : b.v[broadcastIndex(s, b.shape, k)]);
    setHost(0, std::move(h));
    return true;
  }
  static const llvm::StringMap<double (*)(double)> unary = {
      {"Identity", [](double v) { return v; }},
      {"Neg", [](double v) { return -v; }},
      {"Abs", [](double v) { return std::fabs(v); }},
      {"Sqrt", [](double v) { return std::sqrt(v); }},
      {"Reciprocal", [](double v) { return 1.0 / v; }},
      {"Floor", [](double v) { return std::floor(v); }},
      {"Ceil", [](double v) { return std::ceil(v); }},
      {"Exp", [](double v) { return std::exp(v); }},
      {"Log", [](double v) { return std::log(v); }},
      {"Not", [](double v) { return double(v == 0); }},
      {"Cast", [](double v) { return v; }}};
  if (onnx && unary.count(type)) {
    HostTensor h = x;
    // Cast: the type `to` names (the graph may leave the result untyped).
    if (type == "Cast") {
      auto to = dyn_cast_or_null<IntegerAttr>(nodeAttr("to"));
      Type named = to ? getElementTypeForOnnxDataType(ctx, int32_t(to.getInt()))
                      : Type();
      h.elem = named && named.isIntOrFloat() ? named : resultElemOr(0, x.elem);
    }
    for (double &d : h.v)
      d = unary.lookup(type)(d);
    setHost(0, std::move(h));
    return true;
  }
  if (onnx && (type == "Reshape" || type == "Flatten" || type == "Squeeze" ||
               type == "Unsqueeze")) {
    std::optional<SmallVector<int64_t>> axes;
    if (ins.size() > 1 && ins[1])
      axes = ints(*ins[1]);
    else if (type == "Reshape")
      return false;
    std::optional<HostShape> s = reshapedShape(
        node, x.shape,
        axes ? std::optional<ArrayRef<int64_t>>(*axes) : std::nullopt, why);
    if (!s)
      return failure();
    HostTensor h = x;
    h.shape = *s;
    setHost(0, std::move(h));
    return true;
  }
  if (onnx && type == "Gather") {
    if (ins.size() < 2 || !ins[1])
      return false;
    int64_t rank = x.shape.size();
    int64_t axis = attrInt("axis", 0);
    if (!normAxis(axis, rank))
      return failure();
    const HostTensor &idx = *ins[1];
    HostTensor h;
    h.elem = x.elem;
    int64_t outer = numel(ArrayRef<int64_t>(x.shape).take_front(axis));
    int64_t inner = numel(ArrayRef<int64_t>(x.shape).drop_front(axis + 1));
    int64_t dim = x.shape[axis];
    h.shape.append(x.shape.begin(), x.shape.begin() + axis);
    h.shape.append(idx.shape.begin(), idx.shape.end());
    h.shape.append(x.shape.begin() + axis + 1, x.shape.end());
    if (numel(h.shape) > kMaxHostElements)
      return false;
    for (int64_t o = 0; o < outer; ++o)
      for (double iv : idx.v) {
        int64_t j = int64_t(iv);
        if (j < -dim || j >= dim)
          return fail("index " + Twine(j) + " out of range for dim " +
                      Twine(dim));
        if (j < 0)
          j += dim;
        for (int64_t in = 0; in < inner; ++in)
          h.v.push_back(x.v[(o * dim + j) * inner + in]);
      }
    setHost(0, std::move(h));
    return true;
  }
  if (onnx && type == "Slice") {
    // Slice-1 keeps starts and ends as attributes: not evaluated here.
    if (ins.size() < 3 || !ins[1] || !ins[2])
      return false;
    auto r = sliceRange(
        x.shape, ints(*ins[1]), ints(*ins[2]),
        ins.size() > 3 && ins[3] ? ints(*ins[3]) : SmallVector<int64_t>(),
        ins.size() > 4 && ins[4] ? ints(*ins[4]) : SmallVector<int64_t>(), why);
    if (!r)
      return failure();
    HostTensor h;
    h.elem = x.elem;
    h.shape = r->shape;
    int64_t rank = x.shape.size();
    for (int64_t k = 0, n = numel(h.shape); k < n; ++k) {
      int64_t rem = k, src = 0, stride = 1;
      SmallVector<int64_t> coord(rank);
      for (int64_t d = rank - 1; d >= 0; --d) {
        coord[d] = rem % h.shape[d];
        rem /= h.shape[d];
      }
      for (int64_t d = rank - 1; d >= 0; --d) {
        src += (r->start[d] + coord[d] * r->step[d]) * stride;
        stride *= x.shape[d];
      }
      h.v.push_back(x.v[src]);
    }
    setHost(0, std::move(h));
    return true;
  }
  if (onnx && type == "Transpose") {
    // timm's Swin computes its padding as a reversed [2, n] table,
    // transposed and flattened.
    int64_t rank = x.shape.size();
    SmallVector<int64_t> perm =
        getOnnxInts(node, "perm").value_or(SmallVector<int64_t>());
    if (perm.empty())
      for (int64_t d = rank - 1; d >= 0; --d)
        perm.push_back(d);
    SmallVector<bool> seen(rank, false);
    bool bad = int64_t(perm.size()) != rank;
    for (int64_t p : perm) {
      bad = bad || p < 0 || p >= rank || seen[p];
      if (!bad)
        seen[p] = true;
    }
    if (bad)
      return fail("perm is not a permutation of " + Twine(rank) + " dims");
    HostTensor h;
    h.elem = x.elem;
    for (int64_t p : perm)
      h.shape.push_back(x.shape[p]);
    SmallVector<int64_t> stride(rank, 1);
    for (int64_t d = rank - 2; d >= 0; --d)
      stride[d] = stride[d + 1] * x.shape[d + 1];
    for (int64_t k = 0, n = numel(h.shape); k < n; ++k) {
      int64_t rem = k, src = 0;
      for (int64_t d = rank - 1; d >= 0; --d) {
        src += (rem % h.shape[d]) * stride[perm[d]];
        rem /= h.shape[d];
      }
      h.v.push_back(x.v[src]);
    }
    setHost(0, std::move(h));
    return true;
  }
  if ((onnx && type == "Concat") || (ms && type == "ConcatTraining")) {
    int64_t rank = x.shape.size();
    int64_t axis = attrInt("axis", 0);
    if (!normAxis(axis, rank))
      return failure();
    HostTensor h;
    h.elem = x.elem;
    h.shape = x.shape;
    h.shape[axis] = 0;
    SmallVector<int64_t> lengths;
    for (auto &in : ins) {
      if (!in)
        continue;
      if (int64_t(in->shape.size()) != rank)
        return fail("inputs differ in rank");
      h.shape[axis] += in->shape[axis];
      lengths.push_back(in->shape[axis]);
    }
    int64_t outer = numel(ArrayRef<int64_t>(x.shape).take_front(axis));
    for (int64_t o = 0; o < outer; ++o)
      for (auto &in : ins) {
        if (!in)
          continue;
        int64_t chunk = numel(ArrayRef<int64_t>(in->shape).drop_front(axis));
        h.v.append(in->v.begin() + o * chunk, in->v.begin() + (o + 1) * chunk);
      }
    if (numel(h.shape) > kMaxHostElements)
      return false;
    setHost(0, std::move(h));
    if (type == "ConcatTraining" && resultUsed(1)) {
      HostTensor l;
      l.elem = i64;
      l.shape = {int64_t(lengths.size())};
      for (int64_t v : lengths)
        l.v.push_back(double(v));
      setHost(1, std::move(l));
    }
    return true;
  }
  if (onnx &&
      (type == "ConstantOfShape" || type == "Expand" || type == "Range")) {
    HostTensor h;
    if (type == "Range") {
      if (ins.size() < 3 || !ins[1] || !ins[2] || x.v.empty() ||
          ins[1]->v.empty() || ins[2]->v.empty())
        return false;
      double start = x.v[0], limit = ins[1]->v[0], delta = ins[2]->v[0];
      if (delta == 0)
        return fail("Range delta is 0");
      int64_t n =
          std::max<int64_t>(int64_t(std::ceil((limit - start) / delta)), 0);
      if (n > kMaxHostElements)
        return false;
      h.elem = x.elem;
      h.shape = {n};
      for (int64_t k = 0; k < n; ++k)
        h.v.push_back(start + double(k) * delta);
    } else if (type == "ConstantOfShape") {
      {
        auto d = ints(x);
        h.shape.assign(d.begin(), d.end());
      }
      if (llvm::any_of(h.shape, [](int64_t d) { return d < 0; }))
        return fail("negative dim in the shape");
      if (numel(h.shape) > kMaxHostElements)
        return false;
      h.elem = Float32Type::get(ctx);
      double fill = 0;
      Attribute v = nodeAttr("value");
      if (auto ta = dyn_cast_or_null<TensorAttr>(v))
        v = ta.getValue();
      if (auto e = dyn_cast_or_null<ElementsAttr>(v)) {
        auto ht = readHost(e);
        if (!ht || ht->v.size() != 1)
          return fail("value must be a one-element tensor");
        h.elem = ht->elem;
        fill = ht->v[0];
      }
      h.v.assign(numel(h.shape), fill);
    } else {
      if (ins.size() < 2 || !ins[1])
        return false;
      HostShape s;
      auto tgt = ints(*ins[1]);
      if (!broadcast({x.shape, HostShape(tgt.begin(), tgt.end())}, s))
        return fail("the shape does not broadcast");
      if (numel(s) > kMaxHostElements)
        return false;
      h.elem = x.elem;
      h.shape = s;
      for (int64_t k = 0, n = numel(s); k < n; ++k)
        h.v.push_back(x.v[broadcastIndex(s, x.shape, k)]);
    }
    setHost(0, std::move(h));
    return true;
  }
  return false;
}

} // namespace amp::train

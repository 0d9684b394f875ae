//===- Elementwise.cpp - unary, binary, gradient and select kernels -------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// Float kernels read f32/f16/bf16, compute in f32 and round the result once
// into the output's dtype (inputs and output may have different float
// dtypes). Binary kernels broadcast as numpy does and also take i64 / i32
// (all three tensors of the same integer dtype).
//
//===----------------------------------------------------------------------===//

#include "amp/Runtime/Math/Elementwise.h"
#include "Internal.h"
#include "amp/Runtime/Math/Random.h"

#include <algorithm>
#include <cmath>
#include <type_traits>

using namespace amprt;

namespace {

using T = const amprt_tensor *;

template <typename F>
amprt_status unaryFloat(amprt_context *ctx, const char *k, T x, T y, F fn) {
  AMPRT_TRY(checkFloat(ctx, k, "x", x));
  AMPRT_TRY(checkFloat(ctx, k, "y", y));
  AMPRT_TRY(checkShape(ctx, k, "y", y, shapeOf(x)));
  mapBlocks<1>({x}, y, 8, [&](const float *const *in, float *o, int64_t n) {
    for (int64_t i = 0; i < n; ++i)
      o[i] = fn(in[0][i]);
  });
  return AMPRT_OK;
}

template <typename F>
amprt_status gradFloat(amprt_context *ctx, const char *k, T dy, T x, T dx,
                       F fn) {
  AMPRT_TRY(checkFloat(ctx, k, "dy", dy));
  AMPRT_TRY(checkFloat(ctx, k, "x", x));
  AMPRT_TRY(checkFloat(ctx, k, "dx", dx));
  AMPRT_TRY(checkShape(ctx, k, "x", x, shapeOf(dy)));
  AMPRT_TRY(checkShape(ctx, k, "dx", dx, shapeOf(dy)));
  mapBlocks<2>({dy, x}, dx, 8,
               [&](const float *const *in, float *o, int64_t n) {
                 for (int64_t i = 0; i < n; ++i)
                   o[i] = fn(in[0][i], in[1][i]);
               });
  return AMPRT_OK;
}

/// f(c) with c an integral_constant of `op`: a loop over binaryF(c, ...)
/// is compiled per op (the switch folded, the loop vectorized) and chosen
/// once per call, not per element.
template <typename F> void withBin(Bin op, F &&f) {
  switch (op) {
#define AMPRT_BIN_CASE(X)                                                      \
  case Bin::X:                                                                 \
    return f(std::integral_constant<Bin, Bin::X>());
    AMPRT_BIN_CASE(Add)
    AMPRT_BIN_CASE(Sub)
    AMPRT_BIN_CASE(Mul)
    AMPRT_BIN_CASE(Div)
    AMPRT_BIN_CASE(Mod)
    AMPRT_BIN_CASE(Fmod)
    AMPRT_BIN_CASE(Pow)
    AMPRT_BIN_CASE(Min)
    AMPRT_BIN_CASE(Max)
#undef AMPRT_BIN_CASE
  }
}

/// Elements [lo, lo + n) of a float tensor's data along a step of `step`
/// (0: one element, broadcast; 1: dense) as floats with that step: the
/// data itself for f32 with step 0 or 1, else widened into buf.
const float *floatSpan(T t, int64_t lo, int64_t step, int64_t n, float *buf,
                       int64_t &outStep) {
  outStep = step == 0 ? 0 : 1;
  if (t->dtype == AMPRT_F32 && (step == 0 || step == 1))
    return static_cast<const float *>(t->data) + lo;
  if (step == 0)
    buf[0] = loadF(t->data, t->dtype, lo);
  else if (step == 1)
    widenBlock(t->data, t->dtype, lo, n, buf);
  else
    for (int64_t i = 0; i < n; ++i)
      buf[i] = loadF(t->data, t->dtype, lo + i * step);
  return buf;
}

/// Whether the bytes of a and b overlap.
bool overlapping(T a, T b) {
  auto *pa = static_cast<const char *>(a->data);
  auto *pb = static_cast<const char *>(b->data);
  size_t na = size_t(numel(a)) * amprt_dtype_size(a->dtype),
         nb = size_t(numel(b)) * amprt_dtype_size(b->dtype);
  return na && nb && pa < pb + nb && pb < pa + na;
}

/// A float binary op under broadcasting, row by row: each row in pieces
/// widened into (and rounded from) buffers on the stack, the loop over a
/// piece chosen by which operand is broadcast along it; the rows split
/// among the threads, or, when there are few, each row's pieces. The same
/// arithmetic as element by element. For an output that overlaps no input,
/// or is one of them (the same bytes, shape and dtype).
void binaryRows(Bin op, T a, T b, T y, const Shape &so) {
  Shape st[2] = {broadcastStrides(shapeOf(a), so),
                 broadcastStrides(shapeOf(b), so)};
  constexpr int64_t kPiece = 1024;
  int64_t rows = broadcastRows(so), inner = so.empty() ? 1 : so.back();
  int64_t pieces = (inner + kPiece - 1) / kPiece;
  withBin(op, [&](auto c) {
    // Pieces [p0, p1) of the row from output element o.
    auto row = [&](int64_t o, const int64_t *off, const int64_t *istr,
                   int64_t p0, int64_t p1) {
      float ba[kPiece], bb[kPiece], by[kPiece];
      for (int64_t p = p0 * kPiece; p < std::min(inner, p1 * kPiece);
           p += kPiece) {
        int64_t n = std::min(kPiece, inner - p), sa, sb;
        const float *xa =
            floatSpan(a, off[0] + p * istr[0], istr[0], n, ba, sa);
        const float *xb =
            floatSpan(b, off[1] + p * istr[1], istr[1], n, bb, sb);
        bool direct = y->dtype == AMPRT_F32;
        float *yo = direct ? static_cast<float *>(y->data) + o + p : by;
        if (sa && sb)
          for (int64_t i = 0; i < n; ++i)
            yo[i] = binaryF(c, xa[i], xb[i]);
        else if (sa)
          for (int64_t i = 0; i < n; ++i)
            yo[i] = binaryF(c, xa[i], xb[0]);
        else
          for (int64_t i = 0; i < n; ++i)
            yo[i] = binaryF(c, xa[0], sb ? xb[i] : xb[0]);
        if (!direct)
          narrowBlock(by, y->data, y->dtype, o + p, n);
      }
    };
    double work = 4.0 * double(numel(so));
    if (rows >= 4 * int64_t(cpuThreads()) || pieces < 2) {
      parallelFor(rows, work, [&](int64_t r0, int64_t r1) {
        forEachBroadcastRowSpan<2>(
            so, st, r0, r1,
            [&](int64_t o, const int64_t *off, const int64_t *istr, int64_t) {
              row(o, off, istr, 0, pieces);
            });
      });
      return;
    }
    forEachBroadcastRowSpan<2>(
        so, st, 0, rows,
        [&](int64_t o, const int64_t *off, const int64_t *istr, int64_t) {
          parallelFor(pieces, 4.0 * double(inner), [&](int64_t p0, int64_t p1) {
            row(o, off, istr, p0, p1);
          });
        });
  });
}

/// Whether y can take binaryRows: it overlaps neither input, or is one of
/// them (the same data, dtype and shape: an in-place plan).
bool rowsSafe(T in, T y, const Shape &so) {
  if (!overlapping(in, y))
    return true;
  return in->data == y->data && in->dtype == y->dtype && shapeOf(in) == so;
}

template <typename V, typename F>
void binaryLoop(const Shape &sa, const Shape &sb, const Shape &so, const V *a,
                const V *b, V *y, F fn) {
  if (sa == so && sb == so) {
    parallelElements(numel(so), 4, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i)
        y[i] = fn(a[i], b[i]);
    });
    return;
  }
  if (sa == so && numel(sb) == 1) {
    V s = b[0];
    parallelElements(numel(so), 4, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i)
        y[i] = fn(a[i], s);
    });
    return;
  }
  Shape st[2] = {broadcastStrides(sa, so), broadcastStrides(sb, so)};
  parallelForEachBroadcast<2>(so, st, 4, [&](int64_t o, const int64_t *off) {
    y[o] = fn(a[off[0]], b[off[1]]);
  });
}

template <typename I>
amprt_status intBinary(amprt_context *ctx, const char *k, Bin op, T a, T b, T y,
                       const Shape &so) {
  auto *pa = static_cast<const I *>(a->data);
  auto *pb = static_cast<const I *>(b->data);
  if (op == Bin::Div || op == Bin::Mod || op == Bin::Fmod) {
    int64_t nb = numel(b);
    for (int64_t i = 0; i < nb; ++i)
      if (pb[i] == 0)
        return ctx->fail(AMPRT_ERR_INVALID_ARGUMENT,
                         "%s: integer division by zero (b[%lld])", k,
                         (long long)i);
  }
  binaryLoop<I>(shapeOf(a), shapeOf(b), so, pa, pb, static_cast<I *>(y->data),
                [op](I u, I v) { return binaryI<I>(op, u, v); });
  return AMPRT_OK;
}

amprt_status binary(amprt_context *ctx, const char *k, Bin op, T a, T b, T y) {
  return guard(ctx, k, [&]() -> amprt_status {
    AMPRT_TRY(checkTensor(ctx, k, "a", a));
    AMPRT_TRY(checkTensor(ctx, k, "b", b));
    AMPRT_TRY(checkTensor(ctx, k, "y", y));
    Shape so;
    if (!broadcastShapes({shapeOf(a), shapeOf(b)}, so))
      return ctx->fail(AMPRT_ERR_SHAPE, "%s: shapes %s and %s do not broadcast",
                       k, shapeStr(a).c_str(), shapeStr(b).c_str());
    AMPRT_TRY(checkShape(ctx, k, "y", y, so));
    if (isLowOrF32(a->dtype) && isLowOrF32(b->dtype) && isLowOrF32(y->dtype) &&
        shapeOf(a) == so && shapeOf(b) == so) {
      withBin(op, [&](auto c) {
        mapBlocks<2>({a, b}, y, 4,
                     [&](const float *const *in, float *o, int64_t n) {
                       for (int64_t i = 0; i < n; ++i)
                         o[i] = binaryF(c, in[0][i], in[1][i]);
                     });
      });
      return AMPRT_OK;
    }
    bool floats =
        isLowOrF32(a->dtype) && isLowOrF32(b->dtype) && isLowOrF32(y->dtype);
    if (floats && rowsSafe(a, y, so) && rowsSafe(b, y, so)) {
      binaryRows(op, a, b, y, so);
      return AMPRT_OK;
    }
    if (floats) {
      F32In ia(a), ib(b);
      F32Out out(y);
      binaryLoop<float>(shapeOf(a), shapeOf(b), so, ia.p, ib.p, out.p,
                        [op](float u, float v) { return binaryF(op, u, v); });
      out.commit();
      return AMPRT_OK;
    }
    if (a->dtype == b->dtype && a->dtype == y->dtype) {
      if (a->dtype == AMPRT_I64)
        return intBinary<int64_t>(ctx, k, op, a, b, y, so);
      if (a->dtype == AMPRT_I32)
        return intBinary<int32_t>(ctx, k, op, a, b, y, so);
    }
    return ctx->fail(AMPRT_ERR_DTYPE,
                     "%s: dtypes %s, %s -> %s not supported (f32/f16/bf16 "
                     "mixed, or all i64, or all i32)",
                     k, amprt_dtype_name(a->dtype), amprt_dtype_name(b->dtype),
                     amprt_dtype_name(y->dtype));
  });
}

amprt_status logical(amprt_context *ctx, const char *k, Cmp op, T a, T b, T y) {
  return guard(ctx, k, [&]() -> amprt_status {
    AMPRT_TRY(checkDtype(ctx, k, "a", a, AMPRT_BOOL));
    AMPRT_TRY(checkDtype(ctx, k, "b", b, AMPRT_BOOL));
    AMPRT_TRY(checkDtype(ctx, k, "y", y, AMPRT_BOOL));
    Shape so;
    if (!broadcastShapes({shapeOf(a), shapeOf(b)}, so))
      return ctx->fail(AMPRT_ERR_SHAPE, "%s: shapes %s and %s do not broadcast",
                       k, shapeStr(a).c_str(), shapeStr(b).c_str());
    AMPRT_TRY(checkShape(ctx, k, "y", y, so));
    Shape st[2] = {broadcastStrides(shapeOf(a), so),
                   broadcastStrides(shapeOf(b), so)};
    auto *pa = static_cast<const uint8_t *>(a->data);
    auto *pb = static_cast<const uint8_t *>(b->data);
    auto *py = static_cast<uint8_t *>(y->data);
    forEachBroadcast<2>(so, st, [&](int64_t o, const int64_t *off) {
      py[o] = compareOp<int64_t>(op, pa[off[0]], pb[off[1]]);
    });
    return AMPRT_OK;
  });
}

amprt_status compare(amprt_context *ctx, const char *k, Cmp op, T a, T b, T y) {
  return guard(ctx, k, [&]() -> amprt_status {
    AMPRT_TRY(checkTensor(ctx, k, "a", a));
    AMPRT_TRY(checkTensor(ctx, k, "b", b));
    AMPRT_TRY(checkDtype(ctx, k, "y", y, AMPRT_BOOL));
    Shape so;
    if (!broadcastShapes({shapeOf(a), shapeOf(b)}, so))
      return ctx->fail(AMPRT_ERR_SHAPE, "%s: shapes %s and %s do not broadcast",
                       k, shapeStr(a).c_str(), shapeStr(b).c_str());
    AMPRT_TRY(checkShape(ctx, k, "y", y, so));
    Shape sa = shapeOf(a), sb = shapeOf(b);
    Shape st[2] = {broadcastStrides(sa, so), broadcastStrides(sb, so)};
    auto *py = static_cast<uint8_t *>(y->data);
    if (isLowOrF32(a->dtype) && isLowOrF32(b->dtype)) {
      F32In ia(a), ib(b);
      forEachBroadcast<2>(so, st, [&](int64_t o, const int64_t *off) {
        py[o] = compareOp(op, ia.p[off[0]], ib.p[off[1]]);
      });
      return AMPRT_OK;
    }
    if (a->dtype == b->dtype &&
        (a->dtype == AMPRT_I64 || a->dtype == AMPRT_I32 ||
         a->dtype == AMPRT_BOOL)) {
      auto load = [](T t, int64_t i) -> int64_t {
        if (t->dtype == AMPRT_I64)
          return static_cast<const int64_t *>(t->data)[i];
        if (t->dtype == AMPRT_I32)
          return static_cast<const int32_t *>(t->data)[i];
        return static_cast<const uint8_t *>(t->data)[i];
      };
      forEachBroadcast<2>(so, st, [&](int64_t o, const int64_t *off) {
        py[o] = compareOp(op, load(a, off[0]), load(b, off[1]));
      });
      return AMPRT_OK;
    }
    return ctx->fail(AMPRT_ERR_DTYPE, "%s: dtypes %s and %s not supported", k,
                     amprt_dtype_name(a->dtype), amprt_dtype_name(b->dtype));
  });
}

} // namespace

extern "C" {

#define AMPRT_BINARY(name, op)                                                 \
  amprt_status amprt_##name(amprt_context *ctx, T a, T b, T y) {               \
    AMPRT_DISPATCH(name, ctx, a, b, y);                                        \
    return binary(ctx, #name, op, a, b, y);                                    \
  }
AMPRT_BINARY(add, Bin::Add)
AMPRT_BINARY(sub, Bin::Sub)
AMPRT_BINARY(mul, Bin::Mul)
AMPRT_BINARY(div, Bin::Div)
AMPRT_BINARY(mod, Bin::Mod)
AMPRT_BINARY(fmod, Bin::Fmod)
AMPRT_BINARY(pow, Bin::Pow)
AMPRT_BINARY(min, Bin::Min)
AMPRT_BINARY(max, Bin::Max)
#undef AMPRT_BINARY

#define AMPRT_COMPARE(name, op)                                                \
  amprt_status amprt_##name(amprt_context *ctx, T a, T b, T y) {               \
    AMPRT_DISPATCH(name, ctx, a, b, y);                                        \
    return compare(ctx, #name, op, a, b, y);                                   \
  }
AMPRT_COMPARE(less, Cmp::Less)
AMPRT_COMPARE(greater, Cmp::Greater)
AMPRT_COMPARE(equal, Cmp::Equal)
AMPRT_COMPARE(less_or_equal, Cmp::LessEq)
AMPRT_COMPARE(greater_or_equal, Cmp::GreaterEq)
#undef AMPRT_COMPARE

#define AMPRT_LOGICAL(name, op)                                                \
  amprt_status amprt_##name(amprt_context *ctx, T a, T b, T y) {               \
    AMPRT_DISPATCH(name, ctx, a, b, y);                                        \
    return logical(ctx, #name, op, a, b, y);                                   \
  }
AMPRT_LOGICAL(logical_and, Cmp::And)
AMPRT_LOGICAL(logical_or, Cmp::Or)
AMPRT_LOGICAL(logical_xor, Cmp::Xor)
#undef AMPRT_LOGICAL

// The formulas are Math/Elementwise.h's activation(), which the CUDA kernels
// compute too.
#define AMPRT_UNARY(name, act)                                                 \
  amprt_status amprt_##name(amprt_context *ctx, T x, T y) {                    \
    AMPRT_DISPATCH(name, ctx, x, y);                                           \
    return guard(ctx, #name, [&] {                                             \
      return unaryFloat(ctx, #name, x, y,                                      \
                        [](float v) { return activation(act, v, 0.f); });      \
    });                                                                        \
  }
AMPRT_UNARY(neg, Act::Neg)
AMPRT_UNARY(abs, Act::Abs)
AMPRT_UNARY(relu, Act::Relu)
AMPRT_UNARY(sigmoid, Act::Sigmoid)
AMPRT_UNARY(tanh, Act::Tanh)
AMPRT_UNARY(exp, Act::Exp)
AMPRT_UNARY(log, Act::Log)
AMPRT_UNARY(sqrt, Act::Sqrt)
AMPRT_UNARY(reciprocal, Act::Recip)
AMPRT_UNARY(gelu, Act::Gelu)
AMPRT_UNARY(fast_gelu, Act::FastGelu)
AMPRT_UNARY(sign, Act::Sign)
AMPRT_UNARY(erf, Act::Erf)
AMPRT_UNARY(sin, Act::Sin)
AMPRT_UNARY(cos, Act::Cos)
AMPRT_UNARY(floor, Act::Floor)
AMPRT_UNARY(ceil, Act::Ceil)
AMPRT_UNARY(round, Act::Round)
#undef AMPRT_UNARY

amprt_status amprt_leaky_relu(amprt_context *ctx, T x, float alpha, T y) {
  AMPRT_DISPATCH(leaky_relu, ctx, x, alpha, y);
  return guard(ctx, "leaky_relu", [&] {
    return unaryFloat(ctx, "leaky_relu", x, y, [=](float v) {
      return activation(Act::Leaky, v, alpha);
    });
  });
}

amprt_status amprt_leaky_relu_grad(amprt_context *ctx, T dy, T x, float alpha,
                                   T dx) {
  AMPRT_DISPATCH(leaky_relu_grad, ctx, dy, x, alpha, dx);
  return guard(ctx, "leaky_relu_grad", [&] {
    return gradFloat(ctx, "leaky_relu_grad", dy, x, dx, [=](float g, float v) {
      return activationGrad(Act::Leaky, g, v, alpha);
    });
  });
}

amprt_status amprt_quick_gelu(amprt_context *ctx, T x, float alpha, T y) {
  AMPRT_DISPATCH(quick_gelu, ctx, x, alpha, y);
  return guard(ctx, "quick_gelu", [&] {
    return unaryFloat(ctx, "quick_gelu", x, y, [=](float v) {
      return activation(Act::QuickGelu, v, alpha);
    });
  });
}

amprt_status amprt_quick_gelu_grad(amprt_context *ctx, T dy, T x, float alpha,
                                   T dx) {
  AMPRT_DISPATCH(quick_gelu_grad, ctx, dy, x, alpha, dx);
  return guard(ctx, "quick_gelu_grad", [&] {
    return gradFloat(ctx, "quick_gelu_grad", dy, x, dx, [=](float g, float v) {
      return activationGrad(Act::QuickGelu, g, v, alpha);
    });
  });
}

#define AMPRT_GRAD(name, act)                                                  \
  amprt_status amprt_##name(amprt_context *ctx, T dy, T x, T dx) {             \
    AMPRT_DISPATCH(name, ctx, dy, x, dx);                                      \
    return guard(ctx, #name, [&] {                                             \
      return gradFloat(ctx, #name, dy, x, dx, [](float g, float v) {           \
        return activationGrad(act, g, v, 0.f);                                 \
      });                                                                      \
    });                                                                        \
  }
AMPRT_GRAD(relu_grad, Act::Relu)
AMPRT_GRAD(sigmoid_grad, Act::Sigmoid)
AMPRT_GRAD(tanh_grad, Act::Tanh)
AMPRT_GRAD(gelu_grad, Act::Gelu)
AMPRT_GRAD(fast_gelu_grad, Act::FastGelu)
#undef AMPRT_GRAD

amprt_status amprt_identity(amprt_context *ctx, T x, T y) {
  AMPRT_DISPATCH(identity, ctx, x, y);
  return guard(ctx, "identity", [&]() -> amprt_status {
    AMPRT_TRY(checkTensor(ctx, "identity", "x", x));
    AMPRT_TRY(checkDtype(ctx, "identity", "y", y, x->dtype));
    AMPRT_TRY(checkShape(ctx, "identity", "y", y, shapeOf(x)));
    size_t bytes = size_t(numel(x)) * amprt_dtype_size(x->dtype);
    if (bytes && x->data != y->data)
      std::memmove(y->data, x->data, bytes);
    return AMPRT_OK;
  });
}

static amprt_status classify(amprt_context *ctx, const char *k, T x, T y,
                             bool nan) {
  AMPRT_TRY(checkFloat(ctx, k, "x", x));
  AMPRT_TRY(checkDtype(ctx, k, "y", y, AMPRT_BOOL));
  AMPRT_TRY(checkShape(ctx, k, "y", y, shapeOf(x)));
  int64_t n = numel(x);
  auto *out = static_cast<uint8_t *>(y->data);
  for (int64_t i = 0; i < n; ++i) {
    float v = loadF(x->data, x->dtype, i);
    out[i] = nan ? std::isnan(v) : std::isinf(v);
  }
  return AMPRT_OK;
}

amprt_status amprt_isnan(amprt_context *ctx, T x, T y) {
  AMPRT_DISPATCH(isnan, ctx, x, y);
  return guard(ctx, "isnan",
               [&] { return classify(ctx, "isnan", x, y, true); });
}

amprt_status amprt_isinf(amprt_context *ctx, T x, T y) {
  AMPRT_DISPATCH(isinf, ctx, x, y);
  return guard(ctx, "isinf",
               [&] { return classify(ctx, "isinf", x, y, false); });
}

amprt_status amprt_logical_not(amprt_context *ctx, T x, T y) {
  AMPRT_DISPATCH(logical_not, ctx, x, y);
  return guard(ctx, "logical_not", [&]() -> amprt_status {
    AMPRT_TRY(checkDtype(ctx, "logical_not", "x", x, AMPRT_BOOL));
    AMPRT_TRY(checkDtype(ctx, "logical_not", "y", y, AMPRT_BOOL));
    AMPRT_TRY(checkShape(ctx, "logical_not", "y", y, shapeOf(x)));
    int64_t n = numel(x);
    auto *in = static_cast<const uint8_t *>(x->data);
    auto *out = static_cast<uint8_t *>(y->data);
    for (int64_t i = 0; i < n; ++i)
      out[i] = !in[i];
    return AMPRT_OK;
  });
}

amprt_status amprt_sum(amprt_context *ctx, T inputs, int64_t n, T y) {
  AMPRT_DISPATCH(sum, ctx, inputs, n, y);
  return guard(ctx, "sum", [&]() -> amprt_status {
    if (n < 1 || !inputs)
      return ctx->fail(AMPRT_ERR_INVALID_ARGUMENT,
                       "sum: needs at least one input (n = %lld)",
                       (long long)n);
    std::vector<Shape> shapes;
    for (int64_t i = 0; i < n; ++i) {
      AMPRT_TRY(checkFloat(ctx, "sum", "an input", &inputs[i]));
      shapes.push_back(shapeOf(&inputs[i]));
    }
    AMPRT_TRY(checkFloat(ctx, "sum", "y", y));
    Shape so;
    if (!broadcastShapes(shapes, so))
      return ctx->fail(AMPRT_ERR_SHAPE, "sum: input shapes do not broadcast");
    AMPRT_TRY(checkShape(ctx, "sum", "y", y, so));
    int64_t count = numel(so);
    bool dense = true;
    for (const Shape &sh : shapes)
      dense &= sh == so;
    if (dense) {
      // Element by element, every input in its own dtype: y may alias any
      // input, and no f32 copy of a large (or 16-bit) input is made.
      // In blocks: every input added into the block's sums in input
      // order (each element's sum the same as one at a time), then the
      // block stored (so y may alias an input).
      constexpr int64_t kBlock = 1024;
      int64_t blocks = (count + kBlock - 1) / kBlock;
      parallelFor(blocks, double(count) * n * 2, [&](int64_t b0, int64_t b1) {
        float acc[kBlock];
        for (int64_t b = b0; b < b1; ++b) {
          int64_t lo = b * kBlock, len = std::min(kBlock, count - lo);
          std::fill(acc, acc + len, 0.f);
          for (int64_t i = 0; i < n; ++i) {
            if (inputs[i].dtype == AMPRT_F32) {
              auto *in = static_cast<const float *>(inputs[i].data) + lo;
              for (int64_t j = 0; j < len; ++j)
                acc[j] += in[j];
            } else {
              for (int64_t j = 0; j < len; ++j)
                acc[j] += loadF(inputs[i].data, inputs[i].dtype, lo + j);
            }
          }
          if (y->dtype == AMPRT_F32)
            std::copy(acc, acc + len, static_cast<float *>(y->data) + lo);
          else
            for (int64_t j = 0; j < len; ++j)
              storeF(y->data, y->dtype, lo + j, acc[j]);
        }
      });
      return AMPRT_OK;
    }
    // Broadcast inputs: one f32 scratch, each input added in turn, rounded
    // once into y (which may alias an input: it is written last).
    std::vector<float> acc(size_t(count), 0.f);
    for (int64_t i = 0; i < n; ++i) {
      const amprt_tensor *in = &inputs[i];
      Shape st[1] = {broadcastStrides(shapes[size_t(i)], so)};
      forEachBroadcast<1>(so, st, [&](int64_t o, const int64_t *off) {
        acc[size_t(o)] += loadF(in->data, in->dtype, off[0]);
      });
    }
    fromF32(acc.data(), y->data, y->dtype, count);
    return AMPRT_OK;
  });
}

amprt_status amprt_scale(amprt_context *ctx, T x, T s, int32_t scale_down,
                         T y) {
  AMPRT_DISPATCH(scale, ctx, x, s, scale_down, y);
  return guard(ctx, "scale", [&]() -> amprt_status {
    AMPRT_TRY(checkTensor(ctx, "scale", "s", s));
    AMPRT_TRY(checkNumel(ctx, "scale", "s", s, 1));
    float f = float(scalarOf(s));
    return unaryFloat(ctx, "scale", x, y, [f, scale_down](float v) {
      return scale_down ? v / f : v * f;
    });
  });
}

amprt_status amprt_where(amprt_context *ctx, T cond, T a, T b, T y) {
  AMPRT_DISPATCH(where, ctx, cond, a, b, y);
  return guard(ctx, "where", [&]() -> amprt_status {
    AMPRT_TRY(checkDtype(ctx, "where", "cond", cond, AMPRT_BOOL));
    AMPRT_TRY(checkTensor(ctx, "where", "a", a));
    AMPRT_TRY(checkDtype(ctx, "where", "b", b, a->dtype));
    AMPRT_TRY(checkDtype(ctx, "where", "y", y, a->dtype));
    Shape so;
    if (!broadcastShapes({shapeOf(cond), shapeOf(a), shapeOf(b)}, so))
      return ctx->fail(
          AMPRT_ERR_SHAPE, "where: shapes %s, %s, %s do not broadcast",
          shapeStr(cond).c_str(), shapeStr(a).c_str(), shapeStr(b).c_str());
    AMPRT_TRY(checkShape(ctx, "where", "y", y, so));
    size_t es = amprt_dtype_size(a->dtype);
    auto *c = static_cast<const uint8_t *>(cond->data);
    auto *pa = static_cast<const char *>(a->data);
    auto *pb = static_cast<const char *>(b->data);
    auto *py = static_cast<char *>(y->data);
    Shape st[3] = {broadcastStrides(shapeOf(cond), so),
                   broadcastStrides(shapeOf(a), so),
                   broadcastStrides(shapeOf(b), so)};
    forEachBroadcast<3>(so, st, [&](int64_t o, const int64_t *off) {
      const char *src =
          c[off[0]] ? pa + off[1] * int64_t(es) : pb + off[2] * int64_t(es);
      std::memcpy(py + o * int64_t(es), src, es);
    });
    return AMPRT_OK;
  });
}

amprt_status amprt_fill(amprt_context *ctx, T y, double value) {
  AMPRT_DISPATCH(fill, ctx, y, value);
  return guard(ctx, "fill", [&]() -> amprt_status {
    AMPRT_TRY(checkTensor(ctx, "fill", "y", y));
    int64_t n = numel(y);
    if (n == 0)
      return AMPRT_OK;
    amprt_tensor one = {y->data, y->dtype, 0, nullptr};
    double v = value;
    if (y->dtype == AMPRT_F16 || y->dtype == AMPRT_BF16) {
      // One correct rounding from double.
      int64_t shape1 = 1;
      amprt_tensor src = {&v, AMPRT_F64, 1, &shape1};
      amprt_tensor dst = {y->data, y->dtype, 1, &shape1};
      AMPRT_TRY(amprt_cast(ctx, &src, &dst));
    } else {
      setScalar(&one, v);
    }
    // Element 0 copied to the rest, one store per element of its width.
    byElementSize(amprt_dtype_size(y->dtype), [&](auto element) {
      using E = decltype(element);
      auto *p = static_cast<E *>(y->data);
      E first = p[0];
      parallelElements(n, 1, [&](int64_t lo, int64_t hi) {
        std::fill(p + std::max<int64_t>(lo, 1), p + hi, first);
      });
    });
    return AMPRT_OK;
  });
}

amprt_status amprt_random_fill(amprt_context *ctx, T y, uint64_t seed,
                               uint64_t seed_step, int64_t classes) {
  AMPRT_DISPATCH(random_fill, ctx, y, seed, seed_step, classes);
  const char *k = "random_fill";
  return guard(ctx, k, [&]() -> amprt_status {
    AMPRT_TRY(checkRandomFill(ctx, k, y, classes));
    seed += seed_step * ctx->currentRandomOffset();
    int64_t n = numel(y);
    parallelFor(n, double(n) * 8, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i)
        storeRandom(y->data, y->dtype, i, seed, classes);
    });
    return AMPRT_OK;
  });
}

} // extern "C"

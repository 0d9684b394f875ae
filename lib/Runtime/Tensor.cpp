//===- Tensor.cpp - descriptor checks, shapes, broadcasting ---------------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//

#include "Internal.h"

#include <cinttypes>

using namespace amprt;

int64_t amprt::numel(const Shape &s) {
  int64_t n = 1;
  for (int64_t d : s)
    n *= d;
  return n;
}

int64_t amprt::numel(const amprt_tensor *t) {
  int64_t n = 1;
  for (int32_t i = 0; i < t->rank; ++i)
    n *= t->shape[i];
  return n;
}

std::string amprt::shapeStr(const Shape &s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) {
    if (i)
      r += ", ";
    r += std::to_string(s[i]);
  }
  return r + "]";
}

amprt_status amprt::checkTensor(amprt_context *ctx, const char *kernel,
                                const char *what, const amprt_tensor *t,
                                bool optional) {
  if (!t) {
    if (optional)
      return AMPRT_OK;
    return ctx->fail(AMPRT_ERR_INVALID_ARGUMENT, "%s: %s is NULL", kernel,
                     what);
  }
  if (t->dtype < 0 || t->dtype >= AMPRT_NUM_DTYPES)
    return ctx->fail(AMPRT_ERR_DTYPE, "%s: %s has invalid dtype %d", kernel,
                     what, t->dtype);
  if (t->rank < 0 || t->rank > AMPRT_MAX_RANK)
    return ctx->fail(AMPRT_ERR_SHAPE, "%s: %s has rank %d (0..%d allowed)",
                     kernel, what, t->rank, AMPRT_MAX_RANK);
  if (t->rank > 0 && !t->shape)
    return ctx->fail(AMPRT_ERR_INVALID_ARGUMENT,
                     "%s: %s has rank %d but no shape", kernel, what, t->rank);
  int64_t n = 1;
  for (int32_t i = 0; i < t->rank; ++i) {
    if (t->shape[i] < 0)
      return ctx->fail(AMPRT_ERR_SHAPE,
                       "%s: %s has negative dim %" PRId64 " at %d", kernel,
                       what, t->shape[i], i);
    n *= t->shape[i];
  }
  if (n > 0 && !t->data)
    return ctx->fail(AMPRT_ERR_INVALID_ARGUMENT,
                     "%s: %s has %" PRId64 " elements but no data", kernel,
                     what, n);
  return AMPRT_OK;
}

amprt_status amprt::checkFloat(amprt_context *ctx, const char *kernel,
                               const char *what, const amprt_tensor *t,
                               bool optional) {
  AMPRT_TRY(checkTensor(ctx, kernel, what, t, optional));
  if (t && !isLowOrF32(t->dtype))
    return ctx->fail(AMPRT_ERR_DTYPE,
                     "%s: %s has dtype %s, expected f32, f16 or bf16", kernel,
                     what, amprt_dtype_name(t->dtype));
  return AMPRT_OK;
}

amprt_status amprt::checkDtype(amprt_context *ctx, const char *kernel,
                               const char *what, const amprt_tensor *t,
                               int32_t dt, bool optional) {
  AMPRT_TRY(checkTensor(ctx, kernel, what, t, optional));
  if (t && t->dtype != dt)
    return ctx->fail(AMPRT_ERR_DTYPE, "%s: %s has dtype %s, expected %s",
                     kernel, what, amprt_dtype_name(t->dtype),
                     amprt_dtype_name(dt));
  return AMPRT_OK;
}

amprt_status amprt::checkShape(amprt_context *ctx, const char *kernel,
                               const char *what, const amprt_tensor *t,
                               const Shape &expected) {
  if (shapeOf(t) != expected)
    return ctx->fail(AMPRT_ERR_SHAPE, "%s: %s has shape %s, expected %s",
                     kernel, what, shapeStr(t).c_str(),
                     shapeStr(expected).c_str());
  return AMPRT_OK;
}

amprt_status amprt::checkNumel(amprt_context *ctx, const char *kernel,
                               const char *what, const amprt_tensor *t,
                               int64_t expected) {
  if (numel(t) != expected)
    return ctx->fail(AMPRT_ERR_SHAPE,
                     "%s: %s has shape %s (%" PRId64
                     " elements), expected %" PRId64 " elements",
                     kernel, what, shapeStr(t).c_str(), numel(t), expected);
  return AMPRT_OK;
}

amprt_status amprt::splitAtAxis(amprt_context *ctx, const char *kernel,
                                const amprt_tensor *x, int64_t axis, int64_t &a,
                                int64_t &outer, int64_t &len, int64_t &inner) {
  AMPRT_TRY(normAxis(ctx, kernel, axis, x->rank, a));
  outer = inner = 1;
  for (int64_t i = 0; i < x->rank; ++i)
    if (i < a)
      outer *= x->shape[i];
    else if (i > a)
      inner *= x->shape[i];
  len = x->shape[a];
  return AMPRT_OK;
}

amprt_status amprt::padShape(amprt_context *ctx, const char *kernel,
                             const amprt_tensor *x, const int64_t *pads,
                             int64_t npads, int32_t mode, Shape &out) {
  if (mode < 0 || mode > 3)
    return ctx->fail(AMPRT_ERR_INVALID_ARGUMENT,
                     "%s: mode %d (expected 0 constant, 1 reflect, 2 edge, "
                     "3 wrap)",
                     kernel, mode);
  int64_t rank = x->rank;
  if (npads != 2 * rank || (npads && !pads))
    return ctx->fail(AMPRT_ERR_INVALID_ARGUMENT,
                     "%s: %" PRId64 " pads for rank %" PRId64
                     " (expected %" PRId64 ")",
                     kernel, npads, rank, 2 * rank);
  out.assign(x->shape, x->shape + rank);
  // Each pad within +-2^62, so that index arithmetic cannot overflow.
  const int64_t lim = int64_t(1) << 62;
  for (int64_t d = 0; d < rank; ++d) {
    int64_t n = out[d], grow;
    if (pads[d] < -lim || pads[d] > lim || pads[d + rank] < -lim ||
        pads[d + rank] > lim ||
        __builtin_add_overflow(pads[d], pads[d + rank], &grow) ||
        __builtin_add_overflow(n, grow, &out[d]) || out[d] < 0)
      return ctx->fail(AMPRT_ERR_SHAPE,
                       "%s: pads %" PRId64 ", %" PRId64 " of dim %" PRId64
                       " (%" PRId64 ") give a negative or overflowing size",
                       kernel, pads[d], pads[d + rank], d, n);
    if (mode != 0 && n == 0 && out[d] > 0)
      return ctx->fail(AMPRT_ERR_SHAPE,
                       "%s: dim %" PRId64
                       " is empty: only constant mode can pad it",
                       kernel, d);
  }
  return AMPRT_OK;
}

amprt_status amprt::checkRandomFill(amprt_context *ctx, const char *kernel,
                                    const amprt_tensor *y, int64_t classes) {
  AMPRT_TRY(checkTensor(ctx, kernel, "y", y));
  switch (y->dtype) {
  case AMPRT_F32:
  case AMPRT_F16:
  case AMPRT_BF16:
  case AMPRT_F64:
  case AMPRT_BOOL:
    return AMPRT_OK;
  case AMPRT_I64:
  case AMPRT_I32:
    if (classes < 1 || (y->dtype == AMPRT_I32 && classes > INT32_MAX))
      return ctx->fail(AMPRT_ERR_INVALID_ARGUMENT,
                       "%s: classes is %" PRId64 ", expected 1 to %s", kernel,
                       classes,
                       y->dtype == AMPRT_I32 ? "2^31 - 1" : "2^63 - 1");
    return AMPRT_OK;
  default:
    return ctx->fail(AMPRT_ERR_DTYPE,
                     "%s: y has dtype %s, expected a float, i64, i32 or bool",
                     kernel, amprt_dtype_name(y->dtype));
  }
}

amprt_status amprt::normAxis(amprt_context *ctx, const char *kernel,
                             int64_t axis, int64_t rank, int64_t &out) {
  int64_t a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank)
    return ctx->fail(AMPRT_ERR_INVALID_ARGUMENT,
                     "%s: axis %" PRId64 " out of range for rank %" PRId64,
                     kernel, axis, rank);
  out = a;
  return AMPRT_OK;
}

bool amprt::broadcastShapes(const std::vector<Shape> &shapes, Shape &out) {
  size_t rank = 0;
  for (const Shape &s : shapes)
    rank = std::max(rank, s.size());
  out.assign(rank, 1);
  for (const Shape &s : shapes) {
    size_t off = rank - s.size();
    for (size_t i = 0; i < s.size(); ++i) {
      int64_t d = s[i], &o = out[off + i];
      if (d == o || d == 1)
        continue;
      if (o != 1)
        return false;
      o = d;
    }
  }
  return true;
}

Shape amprt::broadcastStrides(const Shape &in, const Shape &out) {
  Shape st(out.size(), 0);
  size_t off = out.size() - in.size();
  int64_t s = 1;
  for (size_t i = in.size(); i-- > 0;) {
    st[off + i] = in[i] == 1 ? 0 : s;
    s *= in[i];
  }
  return st;
}

double amprt::scalarOf(const amprt_tensor *t) {
  // Math/ElementAccess.h's readD, which the CUDA kernels read scalars with too.
  return readD(t->data, t->dtype, 0);
}

void amprt::setScalar(const amprt_tensor *t, double v) {
  switch (t->dtype) {
  case AMPRT_F32:
  case AMPRT_F16:
  case AMPRT_BF16:
    storeF(t->data, t->dtype, 0, float(v));
    break;
  case AMPRT_F64:
    *static_cast<double *>(t->data) = v;
    break;
  case AMPRT_I64:
    *static_cast<int64_t *>(t->data) = int64_t(v);
    break;
  case AMPRT_I32:
    *static_cast<int32_t *>(t->data) = int32_t(v);
    break;
  case AMPRT_I8:
    *static_cast<int8_t *>(t->data) = int8_t(v);
    break;
  case AMPRT_U8:
    *static_cast<uint8_t *>(t->data) = uint8_t(v);
    break;
  case AMPRT_BOOL:
    *static_cast<uint8_t *>(t->data) = v != 0;
    break;
  default:
    break;
  }
}

//===- Shape.cpp - data movement: reshape, transpose, concat, gather, ... -===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// Byte-moving kernels for any dtype, plus Dropout and the gradient
// accumulator, which are elementwise on the data they route.
//
//===----------------------------------------------------------------------===//

#include "Internal.h"
#include "amp/Runtime/Math/Random.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

using namespace amprt;

using T = const amprt_tensor *;

Shape amprt::stridesOf(const Shape &s) {
  Shape st(s.size(), 1);
  for (size_t i = s.size(); i-- > 1;)
    st[i - 1] = st[i] * s[i];
  return st;
}

void amprt::gatherStrided(T x, T y, const Shape &so, const Shape &strides,
                          int64_t base) {
  size_t es = amprt_dtype_size(x->dtype);
  auto *src = static_cast<const char *>(x->data) + base * int64_t(es);
  Shape st[1] = {strides};
  // One element type per width, so that each copy is a load and a store.
  // Row by row: a row contiguous in x (a head split's or merge's last
  // dim) is one copy.
  byElementSize(es, [&](auto element) {
    using E = decltype(element);
    auto *in = reinterpret_cast<const E *>(src);
    auto *out = static_cast<E *>(y->data);
    parallelFor(
        broadcastRows(so), double(numel(so)), [&](int64_t r0, int64_t r1) {
          forEachBroadcastRowSpan<1>(so, st, r0, r1,
                                     [&](int64_t o, const int64_t *off,
                                         const int64_t *istr, int64_t inner) {
                                       if (istr[0] == 1) {
                                         std::memcpy(out + o, in + off[0],
                                                     size_t(inner) * sizeof(E));
                                         return;
                                       }
                                       for (int64_t i = 0; i < inner; ++i)
                                         out[o + i] = in[off[0] + i * istr[0]];
                                     });
        });
  });
}

amprt_status amprt::sliceGeometry(amprt_context *ctx, const char *k,
                                  const Shape &sx, const int64_t *starts,
                                  const int64_t *ends, const int64_t *axes,
                                  const int64_t *steps, int64_t n, Shape &so,
                                  Shape &st, int64_t &base) {
  if (n < 0 || (n > 0 && (!starts || !ends)))
    return ctx->fail(AMPRT_ERR_INVALID_ARGUMENT, "%s: starts/ends missing", k);
  Shape sxs = stridesOf(sx);
  so = sx;
  st = sxs;
  base = 0;
  std::vector<bool> seen(sx.size(), false);
  for (int64_t i = 0; i < n; ++i) {
    int64_t a;
    AMPRT_TRY(normAxis(ctx, k, axes ? axes[i] : i, int64_t(sx.size()), a));
    if (seen[size_t(a)])
      return ctx->fail(AMPRT_ERR_INVALID_ARGUMENT, "%s: axis %lld repeated", k,
                       (long long)a);
    seen[size_t(a)] = true;
    int64_t d = sx[size_t(a)], step = steps ? steps[i] : 1;
    if (step == 0)
      return ctx->fail(AMPRT_ERR_INVALID_ARGUMENT, "%s: step 0", k);
    int64_t s = starts[i], e = ends[i];
    if (s < 0)
      s += d;
    if (e < 0 && e != std::numeric_limits<int64_t>::min())
      e += d;
    else if (e == std::numeric_limits<int64_t>::min())
      e = -1;
    int64_t cnt;
    if (step > 0) {
      s = std::clamp<int64_t>(s, 0, d);
      e = std::clamp<int64_t>(e, 0, d);
      cnt = e > s ? (e - s + step - 1) / step : 0;
    } else {
      s = std::clamp<int64_t>(s, 0, d - 1);
      e = std::clamp<int64_t>(e, -1, d - 1);
      cnt = s > e ? (s - e + (-step) - 1) / (-step) : 0;
    }
    so[size_t(a)] = cnt;
    st[size_t(a)] = sxs[size_t(a)] * step;
    if (cnt)
      base += s * sxs[size_t(a)];
  }
  return AMPRT_OK;
}

amprt_status amprt::concatShape(amprt_context *ctx, const char *k, T inputs,
                                int64_t n, int64_t axis, T y, int64_t &a,
                                Shape &so) {
  if (n < 1 || !inputs)
    return ctx->fail(AMPRT_ERR_INVALID_ARGUMENT, "%s: needs at least one input",
                     k);
  AMPRT_TRY(checkTensor(ctx, k, "inputs[0]", &inputs[0]));
  AMPRT_TRY(checkDtype(ctx, k, "y", y, inputs[0].dtype));
  AMPRT_TRY(normAxis(ctx, k, axis, inputs[0].rank, a));
  so = shapeOf(&inputs[0]);
  so[size_t(a)] = 0;
  for (int64_t i = 0; i < n; ++i) {
    T t = &inputs[i];
    AMPRT_TRY(checkDtype(ctx, k, "an input", t, inputs[0].dtype));
    bool ok = t->rank == inputs[0].rank;
    for (int32_t d = 0; ok && d < t->rank; ++d)
      ok = d == a || t->shape[d] == inputs[0].shape[d];
    if (!ok)
      return ctx->fail(AMPRT_ERR_SHAPE,
                       "%s: input %lld has shape %s, incompatible with %s "
                       "on axis %lld",
                       k, (long long)i, shapeStr(t).c_str(),
                       shapeStr(&inputs[0]).c_str(), (long long)a);
    so[size_t(a)] += t->shape[a];
  }
  AMPRT_TRY(checkShape(ctx, k, "y", y, so));
  return AMPRT_OK;
}

int64_t amprt::indexAt(T idx, int64_t i) {
  return idx->dtype == AMPRT_I64 ? static_cast<const int64_t *>(idx->data)[i]
                                 : static_cast<const int32_t *>(idx->data)[i];
}

amprt_status amprt::checkIndices(amprt_context *ctx, const char *k, T idx) {
  AMPRT_TRY(checkTensor(ctx, k, "indices", idx));
  if (idx->dtype != AMPRT_I64 && idx->dtype != AMPRT_I32)
    return ctx->fail(AMPRT_ERR_DTYPE,
                     "%s: indices have dtype %s, expected i64 or i32", k,
                     amprt_dtype_name(idx->dtype));
  return AMPRT_OK;
}

amprt_status amprt::gatherShape(amprt_context *ctx, const char *k,
                                const Shape &sd, T idx, int64_t axis,
                                int64_t &a, int64_t &outer, int64_t &len,
                                int64_t &inner, Shape &so, bool values) {
  AMPRT_TRY(normAxis(ctx, k, axis, int64_t(sd.size()), a));
  outer = inner = 1;
  for (int64_t i = 0; i < int64_t(sd.size()); ++i)
    if (i < a)
      outer *= sd[size_t(i)];
    else if (i > a)
      inner *= sd[size_t(i)];
  len = sd[size_t(a)];
  so.assign(sd.begin(), sd.begin() + a);
  for (int32_t i = 0; i < idx->rank; ++i)
    so.push_back(idx->shape[i]);
  so.insert(so.end(), sd.begin() + a + 1, sd.end());
  int64_t n = values ? numel(idx) : 0;
  for (int64_t i = 0; i < n; ++i) {
    int64_t v = indexAt(idx, i);
    if (v < -len || v >= len)
      return ctx->fail(AMPRT_ERR_INVALID_ARGUMENT,
                       "%s: index %lld at %lld outside [-%lld, %lld)", k,
                       (long long)v, (long long)i, (long long)len,
                       (long long)len);
  }
  return AMPRT_OK;
}

amprt_status amprt::transposeGeometry(amprt_context *ctx, const char *k, T x,
                                      const int64_t *perm, int64_t nperm,
                                      Shape &so, Shape &st) {
  Shape sx = shapeOf(x), p(size_t(x->rank));
  if (perm) {
    if (nperm != x->rank)
      return ctx->fail(AMPRT_ERR_INVALID_ARGUMENT,
                       "%s: perm has %lld entries for rank %d", k,
                       (long long)nperm, x->rank);
    std::vector<bool> seen(size_t(x->rank), false);
    for (int64_t i = 0; i < nperm; ++i) {
      if (perm[i] < 0 || perm[i] >= x->rank || seen[size_t(perm[i])])
        return ctx->fail(AMPRT_ERR_INVALID_ARGUMENT,
                         "%s: perm is not a permutation of 0..%d", k,
                         x->rank - 1);
      seen[size_t(perm[i])] = true;
      p[size_t(i)] = perm[i];
    }
  } else {
    for (int32_t i = 0; i < x->rank; ++i)
      p[size_t(i)] = x->rank - 1 - i;
  }
  Shape sxs = stridesOf(sx);
  so.assign(sx.size(), 0);
  st.assign(sx.size(), 0);
  for (size_t i = 0; i < sx.size(); ++i) {
    so[i] = sx[size_t(p[i])];
    st[i] = sxs[size_t(p[i])];
  }
  return AMPRT_OK;
}

amprt_status amprt::checkDropoutScalars(amprt_context *ctx, const char *k,
                                        T ratio, T training) {
  AMPRT_TRY(checkFloat(ctx, k, "ratio", ratio, true));
  AMPRT_TRY(checkDtype(ctx, k, "training", training, AMPRT_BOOL, true));
  if (ratio)
    AMPRT_TRY(checkNumel(ctx, k, "ratio", ratio, 1));
  if (training)
    AMPRT_TRY(checkNumel(ctx, k, "training", training, 1));
  return AMPRT_OK;
}

amprt_status amprt::dropoutValues(amprt_context *ctx, const char *k,
                                  const double *ratio, const double *training,
                                  float &r, bool &train) {
  r = ratio ? float(*ratio) : 0.5f;
  train = training && *training != 0;
  if (!(r >= 0.f && r < 1.f))
    return ctx->fail(AMPRT_ERR_INVALID_ARGUMENT, "%s: ratio %g outside [0, 1)",
                     k, double(r));
  return AMPRT_OK;
}

namespace {

/// Dropout's checks and scalars, read from host-visible memory.
amprt_status dropoutParams(amprt_context *ctx, const char *k, T ratio,
                           T training, float &r, bool &train) {
  AMPRT_TRY(checkDropoutScalars(ctx, k, ratio, training));
  double rv = ratio ? scalarOf(ratio) : 0,
         tv = training ? scalarOf(training) : 0;
  return dropoutValues(ctx, k, ratio ? &rv : nullptr, training ? &tv : nullptr,
                       r, train);
}

} // namespace

extern "C" {

amprt_status amprt_reshape(amprt_context *ctx, T x, T y) {
  AMPRT_DISPATCH(reshape, ctx, x, y);
  return guard(ctx, "reshape", [&]() -> amprt_status {
    AMPRT_TRY(checkTensor(ctx, "reshape", "x", x));
    AMPRT_TRY(checkDtype(ctx, "reshape", "y", y, x->dtype));
    AMPRT_TRY(checkNumel(ctx, "reshape", "y", y, numel(x)));
    size_t bytes = size_t(numel(x)) * amprt_dtype_size(x->dtype);
    if (bytes && x->data != y->data)
      std::memmove(y->data, x->data, bytes);
    return AMPRT_OK;
  });
}

amprt_status amprt_transpose(amprt_context *ctx, T x, const int64_t *perm,
                             int64_t nperm, T y) {
  AMPRT_DISPATCH(transpose, ctx, x, perm, nperm, y);
  return guard(ctx, "transpose", [&]() -> amprt_status {
    const char *k = "transpose";
    AMPRT_TRY(checkTensor(ctx, k, "x", x));
    AMPRT_TRY(checkDtype(ctx, k, "y", y, x->dtype));
    Shape so, st;
    AMPRT_TRY(transposeGeometry(ctx, k, x, perm, nperm, so, st));
    AMPRT_TRY(checkShape(ctx, k, "y", y, so));
    gatherStrided(x, y, so, st, 0);
    return AMPRT_OK;
  });
}

amprt_status amprt_concat(amprt_context *ctx, T inputs, int64_t n, int64_t axis,
                          T y) {
  AMPRT_DISPATCH(concat, ctx, inputs, n, axis, y);
  return guard(ctx, "concat", [&]() -> amprt_status {
    const char *k = "concat";
    int64_t a;
    Shape so;
    AMPRT_TRY(concatShape(ctx, k, inputs, n, axis, y, a, so));
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < int64_t(so.size()); ++d)
      if (d < a)
        outer *= so[size_t(d)];
      else if (d > a)
        inner *= so[size_t(d)];
    size_t es = amprt_dtype_size(y->dtype);
    int64_t rowOut = so[size_t(a)] * inner * int64_t(es);
    auto *dst = static_cast<char *>(y->data);
    int64_t col = 0;
    for (int64_t i = 0; i < n; ++i) {
      int64_t chunk = inputs[i].shape[a] * inner * int64_t(es);
      auto *src = static_cast<const char *>(inputs[i].data);
      for (int64_t o = 0; o < outer && chunk; ++o)
        std::memcpy(dst + o * rowOut + col, src + o * chunk, size_t(chunk));
      col += chunk;
    }
    return AMPRT_OK;
  });
}

amprt_status amprt_gather(amprt_context *ctx, T data, T indices, int64_t axis,
                          T y) {
  AMPRT_DISPATCH(gather, ctx, data, indices, axis, y);
  return guard(ctx, "gather", [&]() -> amprt_status {
    const char *k = "gather";
    AMPRT_TRY(checkTensor(ctx, k, "data", data));
    AMPRT_TRY(checkIndices(ctx, k, indices));
    AMPRT_TRY(checkDtype(ctx, k, "y", y, data->dtype));
    int64_t a, outer, len, inner;
    Shape so;
    AMPRT_TRY(gatherShape(ctx, k, shapeOf(data), indices, axis, a, outer, len,
                          inner, so));
    AMPRT_TRY(checkShape(ctx, k, "y", y, so));
    size_t es = amprt_dtype_size(data->dtype);
    int64_t ni = numel(indices), slab = inner * int64_t(es);
    auto *src = static_cast<const char *>(data->data);
    auto *dst = static_cast<char *>(y->data);
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t j = 0; j < ni; ++j) {
        int64_t v = indexAt(indices, j);
        if (v < 0)
          v += len;
        std::memcpy(dst + (o * ni + j) * slab, src + (o * len + v) * slab,
                    size_t(slab));
      }
    return AMPRT_OK;
  });
}

amprt_status amprt_gather_grad(amprt_context *ctx, T dy, T indices,
                               int64_t axis, T dx) {
  AMPRT_DISPATCH(gather_grad, ctx, dy, indices, axis, dx);
  return guard(ctx, "gather_grad", [&]() -> amprt_status {
    const char *k = "gather_grad";
    AMPRT_TRY(checkFloat(ctx, k, "dy", dy));
    AMPRT_TRY(checkIndices(ctx, k, indices));
    AMPRT_TRY(checkFloat(ctx, k, "dx", dx));
    int64_t a, outer, len, inner;
    Shape so;
    AMPRT_TRY(gatherShape(ctx, k, shapeOf(dx), indices, axis, a, outer, len,
                          inner, so));
    AMPRT_TRY(checkShape(ctx, k, "dy", dy, so));
    F32In idy(dy);
    std::vector<float> acc(size_t(numel(dx)), 0.f);
    int64_t ni = numel(indices);
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t j = 0; j < ni; ++j) {
        int64_t v = indexAt(indices, j);
        if (v < 0)
          v += len;
        const float *s = idy.p + (o * ni + j) * inner;
        float *d = acc.data() + (o * len + v) * inner;
        for (int64_t i = 0; i < inner; ++i)
          d[i] += s[i];
      }
    fromF32(acc.data(), dx->data, dx->dtype, numel(dx));
    return AMPRT_OK;
  });
}

amprt_status amprt_slice(amprt_context *ctx, T x, const int64_t *starts,
                         const int64_t *ends, const int64_t *axes,
                         const int64_t *steps, int64_t n, T y) {
  AMPRT_DISPATCH(slice, ctx, x, starts, ends, axes, steps, n, y);
  return guard(ctx, "slice", [&]() -> amprt_status {
    const char *k = "slice";
    AMPRT_TRY(checkTensor(ctx, k, "x", x));
    AMPRT_TRY(checkDtype(ctx, k, "y", y, x->dtype));
    Shape so, st;
    int64_t base;
    AMPRT_TRY(sliceGeometry(ctx, k, shapeOf(x), starts, ends, axes, steps, n,
                            so, st, base));
    AMPRT_TRY(checkShape(ctx, k, "y", y, so));
    if (numel(so))
      gatherStrided(x, y, so, st, base);
    return AMPRT_OK;
  });
}

amprt_status amprt_slice_grad(amprt_context *ctx, T dy, const int64_t *starts,
                              const int64_t *ends, const int64_t *axes,
                              const int64_t *steps, int64_t n, T dx) {
  AMPRT_DISPATCH(slice_grad, ctx, dy, starts, ends, axes, steps, n, dx);
  return guard(ctx, "slice_grad", [&]() -> amprt_status {
    const char *k = "slice_grad";
    AMPRT_TRY(checkTensor(ctx, k, "dx", dx));
    AMPRT_TRY(checkDtype(ctx, k, "dy", dy, dx->dtype));
    Shape so, st;
    int64_t base;
    AMPRT_TRY(sliceGeometry(ctx, k, shapeOf(dx), starts, ends, axes, steps, n,
                            so, st, base));
    AMPRT_TRY(checkShape(ctx, k, "dy", dy, so));
    size_t es = amprt_dtype_size(dx->dtype);
    std::memset(dx->data, 0, size_t(numel(dx)) * es);
    auto *src = static_cast<const char *>(dy->data);
    auto *dst = static_cast<char *>(dx->data) + base * int64_t(es);
    Shape sts[1] = {st};
    forEachBroadcast<1>(so, sts, [&](int64_t o, const int64_t *off) {
      std::memcpy(dst + off[0] * int64_t(es), src + o * int64_t(es), es);
    });
    return AMPRT_OK;
  });
}

amprt_status amprt_pad(amprt_context *ctx, T x, const int64_t *pads,
                       int64_t npads, int32_t mode, double value, T y) {
  AMPRT_DISPATCH(pad, ctx, x, pads, npads, mode, value, y);
  const char *k = "pad";
  return guard(ctx, k, [&]() -> amprt_status {
    AMPRT_TRY(checkTensor(ctx, k, "x", x));
    AMPRT_TRY(checkDtype(ctx, k, "y", y, x->dtype));
    Shape so;
    AMPRT_TRY(padShape(ctx, k, x, pads, npads, mode, so));
    AMPRT_TRY(checkShape(ctx, k, "y", y, so));
    size_t es = amprt_dtype_size(x->dtype);
    uint64_t fillBits = 0; // the pad value stored in x's dtype
    writeD(&fillBits, x->dtype, 0, value);
    int64_t rank = x->rank, n = numel(so);
    Shape st(size_t(rank), 1);
    for (int64_t d = rank - 2; d >= 0; --d)
      st[d] = st[d + 1] * x->shape[d + 1];
    auto *src = static_cast<const char *>(x->data);
    auto *dst = static_cast<char *>(y->data);
    for (int64_t o = 0; o < n; ++o) {
      int64_t r = o, off = 0;
      for (int64_t d = rank - 1; d >= 0 && off >= 0; --d) {
        int64_t i = padIndex(r % so[d] - pads[d], x->shape[d], mode);
        r /= so[d];
        off = i < 0 ? -1 : off + i * st[d];
      }
      std::memcpy(dst + o * int64_t(es),
                  off < 0 ? reinterpret_cast<const char *>(&fillBits)
                          : src + off * int64_t(es),
                  es);
    }
    return AMPRT_OK;
  });
}

amprt_status amprt_expand(amprt_context *ctx, T x, T y) {
  AMPRT_DISPATCH(expand, ctx, x, y);
  return guard(ctx, "expand", [&]() -> amprt_status {
    AMPRT_TRY(checkTensor(ctx, "expand", "x", x));
    AMPRT_TRY(checkDtype(ctx, "expand", "y", y, x->dtype));
    Shape so;
    if (!broadcastShapes({shapeOf(x), shapeOf(y)}, so) || so != shapeOf(y))
      return ctx->fail(AMPRT_ERR_SHAPE,
                       "expand: x %s does not broadcast to "
                       "y %s",
                       shapeStr(x).c_str(), shapeStr(y).c_str());
    gatherStrided(x, y, so, broadcastStrides(shapeOf(x), so), 0);
    return AMPRT_OK;
  });
}

amprt_status amprt_shape(amprt_context *ctx, T x, int64_t start, int64_t end,
                         T y) {
  AMPRT_DISPATCH(shape, ctx, x, start, end, y);
  return guard(ctx, "shape", [&]() -> amprt_status {
    AMPRT_TRY(checkTensor(ctx, "shape", "x", x));
    AMPRT_TRY(checkDtype(ctx, "shape", "y", y, AMPRT_I64));
    int64_t r = x->rank;
    if (start < 0)
      start += r;
    if (end < 0)
      end += r;
    start = std::clamp<int64_t>(start, 0, r);
    end = std::clamp<int64_t>(end, 0, r);
    int64_t cnt = std::max<int64_t>(0, end - start);
    AMPRT_TRY(checkShape(ctx, "shape", "y", y, {cnt}));
    for (int64_t i = 0; i < cnt; ++i)
      static_cast<int64_t *>(y->data)[i] = x->shape[start + i];
    return AMPRT_OK;
  });
}

amprt_status amprt_size(amprt_context *ctx, T x, T y) {
  AMPRT_DISPATCH(size, ctx, x, y);
  return guard(ctx, "size", [&]() -> amprt_status {
    AMPRT_TRY(checkTensor(ctx, "size", "x", x));
    AMPRT_TRY(checkDtype(ctx, "size", "y", y, AMPRT_I64));
    AMPRT_TRY(checkNumel(ctx, "size", "y", y, 1));
    *static_cast<int64_t *>(y->data) = numel(x);
    return AMPRT_OK;
  });
}

amprt_status amprt_dropout(amprt_context *ctx, T x, T ratio, T training,
                           uint64_t seed, T y, T mask) {
  AMPRT_DISPATCH(dropout, ctx, x, ratio, training, seed, y, mask);
  return guard(ctx, "dropout", [&]() -> amprt_status {
    const char *k = "dropout";
    AMPRT_TRY(checkFloat(ctx, k, "x", x));
    AMPRT_TRY(checkFloat(ctx, k, "y", y));
    AMPRT_TRY(checkShape(ctx, k, "y", y, shapeOf(x)));
    AMPRT_TRY(checkDtype(ctx, k, "mask", mask, AMPRT_BOOL, true));
    if (mask)
      AMPRT_TRY(checkShape(ctx, k, "mask", mask, shapeOf(x)));
    float r;
    bool train;
    AMPRT_TRY(dropoutParams(ctx, k, ratio, training, r, train));
    F32In ix(x);
    F32Out out(y);
    auto *m = mask ? static_cast<uint8_t *>(mask->data) : nullptr;
    int64_t n = numel(x);
    float sc = 1.f / (1.f - r);
    uint64_t key = streamKey(seed, ctx->currentRandomOffset());
    for (int64_t i = 0; i < n; ++i) {
      bool keep = !train || r == 0.f || uniform24At(key, i) >= r;
      out.p[i] = keep ? (train ? ix.p[i] * sc : ix.p[i]) : 0.f;
      if (m)
        m[i] = keep;
    }
    out.commit();
    return AMPRT_OK;
  });
}

amprt_status amprt_dropout_grad(amprt_context *ctx, T dy, T mask, T ratio,
                                T training, T dx) {
  AMPRT_DISPATCH(dropout_grad, ctx, dy, mask, ratio, training, dx);
  return guard(ctx, "dropout_grad", [&]() -> amprt_status {
    const char *k = "dropout_grad";
    AMPRT_TRY(checkFloat(ctx, k, "dy", dy));
    AMPRT_TRY(checkDtype(ctx, k, "mask", mask, AMPRT_BOOL));
    AMPRT_TRY(checkShape(ctx, k, "mask", mask, shapeOf(dy)));
    AMPRT_TRY(checkFloat(ctx, k, "dx", dx));
    AMPRT_TRY(checkShape(ctx, k, "dx", dx, shapeOf(dy)));
    float r;
    bool train;
    AMPRT_TRY(dropoutParams(ctx, k, ratio, training, r, train));
    F32In idy(dy);
    F32Out out(dx);
    auto *m = static_cast<const uint8_t *>(mask->data);
    int64_t n = numel(dy);
    float sc = train ? 1.f / (1.f - r) : 1.f;
    for (int64_t i = 0; i < n; ++i)
      out.p[i] = m[i] ? idy.p[i] * sc : 0.f;
    out.commit();
    return AMPRT_OK;
  });
}

amprt_status amprt_inplace_accumulate(amprt_context *ctx, T buffer, T value,
                                      T overwrite, T updated) {
  AMPRT_DISPATCH(inplace_accumulate, ctx, buffer, value, overwrite, updated);
  return guard(ctx, "inplace_accumulate", [&]() -> amprt_status {
    const char *k = "inplace_accumulate";
    AMPRT_TRY(checkFloat(ctx, k, "buffer", buffer));
    AMPRT_TRY(checkFloat(ctx, k, "value", value));
    AMPRT_TRY(checkNumel(ctx, k, "value", value, numel(buffer)));
    AMPRT_TRY(checkDtype(ctx, k, "overwrite", overwrite, AMPRT_BOOL, true));
    AMPRT_TRY(checkDtype(ctx, k, "updated", updated, AMPRT_BOOL, true));
    if (overwrite)
      AMPRT_TRY(checkNumel(ctx, k, "overwrite", overwrite, 1));
    if (updated)
      AMPRT_TRY(checkNumel(ctx, k, "updated", updated, 1));
    bool ow = overwrite && scalarOf(overwrite) != 0;
    F32In iv(value);
    F32Out out(buffer, /*load=*/!ow);
    parallelElements(numel(buffer), 2, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i)
        out.p[i] = ow ? iv.p[i] : out.p[i] + iv.p[i];
    });
    out.commit();
    if (updated)
      *static_cast<uint8_t *>(updated->data) = 1;
    return AMPRT_OK;
  });
}

} // extern "C"

//===- Select.cpp - ArgMax/ArgMin, TopK, Gather/ScatterElements/ND, Trilu ===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// Kernels that pick elements by position or by order along one axis. The
// axis splits a tensor into (outer, len, inner): element (o, i, j) lies at
// (o * len + i) * inner + j. Comparisons follow numpy's rules for NaN: a NaN
// is larger than any number for ArgMax and TopK(largest), smaller for ArgMin
// and TopK(smallest) (it is picked first either way); ties keep the lower
// index (ArgMax/ArgMin's select_last_index: the higher one).
//
//===----------------------------------------------------------------------===//

#include "amp/Runtime/Math/Select.h"
#include "Internal.h"

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstring>
#include <numeric>

using namespace amprt;

namespace {

using T = const amprt_tensor *;

/// (outer, len, inner) of x around `axis`, which is normalized in place.
amprt_status splitAxis(amprt_context *ctx, const char *k, T x, int64_t &axis,
                       int64_t &outer, int64_t &len, int64_t &inner) {
  return splitAtAxis(ctx, k, x, axis, axis, outer, len, inner);
}

amprt_status argExtreme(amprt_context *ctx, const char *k, T x, int64_t axis,
                        int32_t keepdims, int32_t last, T y, bool largest) {
  int64_t outer, len, inner;
  AMPRT_TRY(checkArgExtreme(ctx, k, x, axis, keepdims, y, outer, len, inner));
  auto *out = static_cast<int64_t *>(y->data);
  bool integer = isInteger(x->dtype) || x->dtype == AMPRT_BOOL;
  F32In in(integer ? nullptr : x);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < inner; ++j) {
      int64_t base = o * len * inner + j;
      out[o * inner + j] = integer
                               ? argOfLine(base, len, inner, largest, last != 0,
                                           [&](int64_t i) {
                                             return readI(x->data, x->dtype, i);
                                           })
                               : argOfLine(base, len, inner, largest, last != 0,
                                           [&](int64_t i) { return in.p[i]; });
    }
  return AMPRT_OK;
}

/// GatherElements' checks, the index values included (host memory).
amprt_status checkGatherElements(amprt_context *ctx, const char *k, T data,
                                 T indices, int64_t &axis, T y) {
  AMPRT_TRY(checkGatherElementsShape(ctx, k, data, indices, axis, y));
  int64_t len = data->shape[axis], n = numel(indices);
  for (int64_t i = 0; i < n; ++i) {
    int64_t v = indexAt(indices, i);
    if (v < -len || v >= len)
      return ctx->fail(AMPRT_ERR_INVALID_ARGUMENT,
                       "%s: index %" PRId64 " at %" PRId64 " outside [-%" PRId64
                       ", %" PRId64 ")",
                       k, v, i, len, len);
  }
  return AMPRT_OK;
}

/// Calls f(i, offset into data) for each element i of the indices.
template <typename F>
void forEachGathered(T data, T indices, int64_t axis, F &&f) {
  ElementsMap m = elementsMap(data, indices, axis);
  int64_t n = numel(indices);
  for (int64_t i = 0; i < n; ++i)
    f(i, gatheredOffset(m, i, indexAt(indices, i)));
}

/// Per index tuple of a GatherND / ScatterND geometry `m`, in order, the
/// offset of its slab (in slab units) in data; every index is checked
/// against [-d, d).
amprt_status ndSlabs(amprt_context *ctx, const char *k, const NDMap &m,
                     T indices, std::vector<int64_t> &slabs) {
  int64_t n = m.batch * m.tuples;
  for (int64_t e = 0; e < n * m.kk; ++e) {
    int64_t d = m.dims[e % m.kk], v = indexAt(indices, e);
    if (v < -d || v >= d)
      return ctx->fail(AMPRT_ERR_INVALID_ARGUMENT,
                       "%s: index %" PRId64 " of tuple %" PRId64
                       " outside [-%" PRId64 ", %" PRId64 ")",
                       k, v, e / m.kk, d, d);
  }
  slabs.assign(size_t(n), 0);
  for (int64_t t = 0; t < n; ++t)
    slabs[size_t(t)] =
        ndSlabOffset(m, t, [&](int64_t e) { return indexAt(indices, e); });
  return AMPRT_OK;
}

/// GatherND's geometry (gatherNDShape) and its slabs (ndSlabs).
amprt_status gatherNDGeometry(amprt_context *ctx, const char *k, T data,
                              T indices, int64_t b, T y,
                              std::vector<int64_t> &slabs, int64_t &slab) {
  NDMap m;
  AMPRT_TRY(gatherNDShape(ctx, k, data, indices, b, y, m));
  slab = m.slab;
  return ndSlabs(ctx, k, m, indices, slabs);
}

/// The scatter reductions' dtypes: floats and the wide integers.
bool reducible(int32_t dt) {
  return isLowOrF32(dt) || dt == AMPRT_I64 || dt == AMPRT_I32;
}

} // namespace

amprt_status amprt::checkArgExtreme(amprt_context *ctx, const char *k, T x,
                                    int64_t axis, int32_t keepdims, T y,
                                    int64_t &outer, int64_t &len,
                                    int64_t &inner) {
  AMPRT_TRY(checkTensor(ctx, k, "x", x));
  bool integer = isInteger(x->dtype) || x->dtype == AMPRT_BOOL;
  if (!integer)
    AMPRT_TRY(checkFloat(ctx, k, "x", x));
  AMPRT_TRY(checkDtype(ctx, k, "y", y, AMPRT_I64));
  AMPRT_TRY(splitAxis(ctx, k, x, axis, outer, len, inner));
  Shape so = shapeOf(x);
  if (keepdims)
    so[size_t(axis)] = 1;
  else
    so.erase(so.begin() + axis);
  AMPRT_TRY(checkShape(ctx, k, "y", y, so));
  if (len == 0 && outer * inner > 0)
    return ctx->fail(AMPRT_ERR_SHAPE, "%s: the axis of x %s is empty", k,
                     shapeStr(x).c_str());
  return AMPRT_OK;
}

amprt_status amprt::checkGatherElementsShape(amprt_context *ctx, const char *k,
                                             T data, T indices, int64_t &axis,
                                             T y) {
  AMPRT_TRY(checkIndices(ctx, k, indices));
  AMPRT_TRY(normAxis(ctx, k, axis, data->rank, axis));
  if (indices->rank != data->rank)
    return ctx->fail(AMPRT_ERR_SHAPE,
                     "%s: indices %s and data %s have different ranks", k,
                     shapeStr(indices).c_str(), shapeStr(data).c_str());
  AMPRT_TRY(checkShape(ctx, k, "y", y, shapeOf(indices)));
  for (int32_t d = 0; d < data->rank; ++d)
    if (d != axis && indices->shape[d] > data->shape[d])
      return ctx->fail(AMPRT_ERR_SHAPE,
                       "%s: indices %s exceed data %s at dim %d", k,
                       shapeStr(indices).c_str(), shapeStr(data).c_str(), d);
  return AMPRT_OK;
}

ElementsMap amprt::elementsMap(T data, T indices, int64_t axis) {
  ElementsMap m = {};
  m.rank = data->rank;
  m.axis = int32_t(axis);
  m.len = data->rank ? data->shape[axis] : 1;
  int64_t stride = 1;
  for (int32_t d = data->rank - 1; d >= 0; --d) {
    m.ishape[d] = indices->shape[d];
    m.dstride[d] = stride;
    stride *= data->shape[d];
  }
  return m;
}

amprt_status amprt::checkTrilu(amprt_context *ctx, T x, T y, int64_t &rows,
                               int64_t &cols) {
  const char *k = "trilu";
  AMPRT_TRY(checkTensor(ctx, k, "x", x));
  AMPRT_TRY(checkDtype(ctx, k, "y", y, x->dtype));
  AMPRT_TRY(checkShape(ctx, k, "y", y, shapeOf(x)));
  if (x->rank < 2)
    return ctx->fail(AMPRT_ERR_SHAPE, "%s: x has shape %s, need rank >= 2", k,
                     shapeStr(x).c_str());
  rows = x->shape[x->rank - 2];
  cols = x->shape[x->rank - 1];
  return AMPRT_OK;
}

amprt_status amprt::gatherNDShape(amprt_context *ctx, const char *k, T data,
                                  T indices, int64_t b, T y, NDMap &m,
                                  const char *yName) {
  AMPRT_TRY(checkIndices(ctx, k, indices));
  int32_t r = data->rank, q = indices->rank;
  int64_t kk = q ? indices->shape[q - 1] : 0;
  if (q < 1 || b < 0 || b >= std::min(r, q) || kk < 1 || kk > r - b)
    return ctx->fail(AMPRT_ERR_SHAPE,
                     "%s: indices %s, data %s and batch_dims %" PRId64
                     " do not fit (need 0 <= batch_dims < both ranks and 1 "
                     "<= indices' last dim <= data rank - batch_dims)",
                     k, shapeStr(indices).c_str(), shapeStr(data).c_str(), b);
  Shape so;
  m = NDMap();
  m.kk = int32_t(kk);
  for (int64_t d = 0; d < b; ++d) {
    if (indices->shape[d] != data->shape[d])
      return ctx->fail(AMPRT_ERR_SHAPE,
                       "%s: batch dim %" PRId64 " differs: indices %s, data %s",
                       k, d, shapeStr(indices).c_str(), shapeStr(data).c_str());
    m.batch *= data->shape[d];
    so.push_back(data->shape[d]);
  }
  for (int32_t d = int32_t(b); d < q - 1; ++d) {
    m.tuples *= indices->shape[d];
    so.push_back(indices->shape[d]);
  }
  for (int32_t d = int32_t(b + kk); d < r; ++d) {
    m.slab *= data->shape[d];
    so.push_back(data->shape[d]);
  }
  AMPRT_TRY(checkShape(ctx, k, yName, y, so));
  for (int64_t j = 0; j < kk; ++j) {
    m.dims[j] = data->shape[b + j];
    m.inBatch *= m.dims[j];
  }
  return AMPRT_OK;
}

/// A scatter's `reduction`: 0 none, 1 add, 2 mul, 3 max, 4 min.
static amprt_status checkReductionKind(amprt_context *ctx, const char *k,
                                       int32_t reduction) {
  if (reduction < 0 || reduction > 4)
    return ctx->fail(AMPRT_ERR_INVALID_ARGUMENT,
                     "%s: reduction %d (expected 0 none, 1 add, 2 mul, 3 "
                     "max, 4 min)",
                     k, reduction);
  return AMPRT_OK;
}

amprt_status amprt::checkScatterElements(amprt_context *ctx, T data, T indices,
                                         T updates, int64_t &axis,
                                         int32_t reduction, T y) {
  const char *k = "scatter_elements";
  AMPRT_TRY(checkTensor(ctx, k, "data", data));
  AMPRT_TRY(checkDtype(ctx, k, "updates", updates, data->dtype));
  AMPRT_TRY(checkDtype(ctx, k, "y", y, data->dtype));
  AMPRT_TRY(checkShape(ctx, k, "y", y, shapeOf(data)));
  AMPRT_TRY(checkGatherElementsShape(ctx, k, data, indices, axis, updates));
  AMPRT_TRY(checkReductionKind(ctx, k, reduction));
  if (reduction && !isLowOrF32(data->dtype))
    return ctx->fail(AMPRT_ERR_DTYPE,
                     "%s: a reduction needs f32, f16 or bf16 data, not %s", k,
                     amprt_dtype_name(data->dtype));
  return AMPRT_OK;
}

amprt_status amprt::checkScatterND(amprt_context *ctx, T data, T indices,
                                   T updates, int32_t reduction, T y,
                                   NDMap &m) {
  const char *k = "scatter_nd";
  AMPRT_TRY(checkTensor(ctx, k, "data", data));
  AMPRT_TRY(checkDtype(ctx, k, "updates", updates, data->dtype));
  AMPRT_TRY(checkDtype(ctx, k, "y", y, data->dtype));
  AMPRT_TRY(checkShape(ctx, k, "y", y, shapeOf(data)));
  AMPRT_TRY(gatherNDShape(ctx, k, data, indices, 0, updates, m, "updates"));
  AMPRT_TRY(checkReductionKind(ctx, k, reduction));
  if (reduction && !reducible(data->dtype))
    return ctx->fail(AMPRT_ERR_DTYPE,
                     "%s: a reduction needs f32, f16, bf16, i64 or i32 "
                     "data, not %s",
                     k, amprt_dtype_name(data->dtype));
  return AMPRT_OK;
}

amprt_status amprt::checkTopK(amprt_context *ctx, T x, int64_t k, int64_t &axis,
                              T values, T indices, int64_t &outer, int64_t &len,
                              int64_t &inner) {
  const char *kn = "top_k";
  AMPRT_TRY(checkFloat(ctx, kn, "x", x));
  AMPRT_TRY(checkDtype(ctx, kn, "values", values, x->dtype));
  AMPRT_TRY(checkDtype(ctx, kn, "indices", indices, AMPRT_I64));
  AMPRT_TRY(splitAxis(ctx, kn, x, axis, outer, len, inner));
  if (k < 0 || k > len)
    return ctx->fail(AMPRT_ERR_INVALID_ARGUMENT,
                     "%s: k = %" PRId64 " for an axis of %" PRId64, kn, k, len);
  Shape so = shapeOf(x);
  so[size_t(axis)] = k;
  AMPRT_TRY(checkShape(ctx, kn, "values", values, so));
  return checkShape(ctx, kn, "indices", indices, so);
}

extern "C" {

amprt_status amprt_arg_max(amprt_context *ctx, T x, int64_t axis,
                           int32_t keepdims, int32_t select_last_index, T y) {
  AMPRT_DISPATCH(arg_max, ctx, x, axis, keepdims, select_last_index, y);
  return guard(ctx, "arg_max", [&] {
    return argExtreme(ctx, "arg_max", x, axis, keepdims, select_last_index, y,
                      true);
  });
}

amprt_status amprt_arg_min(amprt_context *ctx, T x, int64_t axis,
                           int32_t keepdims, int32_t select_last_index, T y) {
  AMPRT_DISPATCH(arg_min, ctx, x, axis, keepdims, select_last_index, y);
  return guard(ctx, "arg_min", [&] {
    return argExtreme(ctx, "arg_min", x, axis, keepdims, select_last_index, y,
                      false);
  });
}

amprt_status amprt_top_k(amprt_context *ctx, T x, int64_t k, int64_t axis,
                         int32_t largest, int32_t sorted, T values, T indices) {
  AMPRT_DISPATCH(top_k, ctx, x, k, axis, largest, sorted, values, indices);
  const char *kn = "top_k";
  return guard(ctx, kn, [&]() -> amprt_status {
    int64_t outer, len, inner;
    AMPRT_TRY(checkTopK(ctx, x, k, axis, values, indices, outer, len, inner));
    F32In in(x);
    F32Out out(values);
    auto *idx = static_cast<int64_t *>(indices->data);
    std::vector<int64_t> order(static_cast<size_t>(len));
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t j = 0; j < inner; ++j) {
        const float *p = in.p + o * len * inner + j;
        std::iota(order.begin(), order.end(), 0);
        // The first k in ranked order, ties by index (a total order, so
        // the result is unique); `sorted` = 0 may give any order, so this
        // one serves both.
        std::partial_sort(order.begin(), order.begin() + k, order.end(),
                          [&](int64_t a, int64_t b) {
                            return topKBefore(p[a * inner], a, p[b * inner], b,
                                              largest != 0);
                          });
        for (int64_t i = 0; i < k; ++i) {
          int64_t at = (o * k + i) * inner + j;
          out.p[at] = p[order[size_t(i)] * inner];
          idx[at] = order[size_t(i)];
        }
      }
    out.commit();
    (void)sorted;
    return AMPRT_OK;
  });
}

amprt_status amprt_gather_elements(amprt_context *ctx, T data, T indices,
                                   int64_t axis, T y) {
  AMPRT_DISPATCH(gather_elements, ctx, data, indices, axis, y);
  const char *k = "gather_elements";
  return guard(ctx, k, [&]() -> amprt_status {
    AMPRT_TRY(checkTensor(ctx, k, "data", data));
    AMPRT_TRY(checkDtype(ctx, k, "y", y, data->dtype));
    AMPRT_TRY(checkGatherElements(ctx, k, data, indices, axis, y));
    size_t es = amprt_dtype_size(data->dtype);
    auto *src = static_cast<const char *>(data->data);
    auto *dst = static_cast<char *>(y->data);
    forEachGathered(data, indices, axis, [&](int64_t i, int64_t off) {
      std::memcpy(dst + i * int64_t(es), src + off * int64_t(es), es);
    });
    return AMPRT_OK;
  });
}

amprt_status amprt_gather_elements_grad(amprt_context *ctx, T dy, T indices,
                                        int64_t axis, T dx) {
  AMPRT_DISPATCH(gather_elements_grad, ctx, dy, indices, axis, dx);
  const char *k = "gather_elements_grad";
  return guard(ctx, k, [&]() -> amprt_status {
    AMPRT_TRY(checkFloat(ctx, k, "dy", dy));
    AMPRT_TRY(checkFloat(ctx, k, "dx", dx));
    AMPRT_TRY(checkGatherElements(ctx, k, dx, indices, axis, dy));
    F32In g(dy);
    std::vector<float> acc(size_t(numel(dx)), 0.f);
    forEachGathered(dx, indices, axis, [&](int64_t i, int64_t off) {
      acc[size_t(off)] += g.p[i];
    });
    fromF32(acc.data(), dx->data, dx->dtype, int64_t(acc.size()));
    return AMPRT_OK;
  });
}

amprt_status amprt_gather_nd(amprt_context *ctx, T data, T indices,
                             int64_t batch_dims, T y) {
  AMPRT_DISPATCH(gather_nd, ctx, data, indices, batch_dims, y);
  const char *k = "gather_nd";
  return guard(ctx, k, [&]() -> amprt_status {
    AMPRT_TRY(checkTensor(ctx, k, "data", data));
    AMPRT_TRY(checkDtype(ctx, k, "y", y, data->dtype));
    std::vector<int64_t> slabs;
    int64_t slab;
    AMPRT_TRY(
        gatherNDGeometry(ctx, k, data, indices, batch_dims, y, slabs, slab));
    size_t bytes = size_t(slab) * amprt_dtype_size(data->dtype);
    auto *src = static_cast<const char *>(data->data);
    auto *dst = static_cast<char *>(y->data);
    for (size_t t = 0; t < slabs.size(); ++t)
      std::memcpy(dst + t * bytes, src + size_t(slabs[t]) * bytes, bytes);
    return AMPRT_OK;
  });
}

amprt_status amprt_gather_nd_grad(amprt_context *ctx, T dy, T indices,
                                  int64_t batch_dims, T dx) {
  AMPRT_DISPATCH(gather_nd_grad, ctx, dy, indices, batch_dims, dx);
  const char *k = "gather_nd_grad";
  return guard(ctx, k, [&]() -> amprt_status {
    AMPRT_TRY(checkFloat(ctx, k, "dy", dy));
    AMPRT_TRY(checkFloat(ctx, k, "dx", dx));
    std::vector<int64_t> slabs;
    int64_t slab;
    AMPRT_TRY(
        gatherNDGeometry(ctx, k, dx, indices, batch_dims, dy, slabs, slab));
    F32In g(dy);
    std::vector<float> acc(size_t(numel(dx)), 0.f);
    for (size_t t = 0; t < slabs.size(); ++t)
      for (int64_t e = 0; e < slab; ++e)
        acc[size_t(slabs[t] * slab + e)] += g.p[int64_t(t) * slab + e];
    fromF32(acc.data(), dx->data, dx->dtype, int64_t(acc.size()));
    return AMPRT_OK;
  });
}

amprt_status amprt_scatter_elements(amprt_context *ctx, T data, T indices,
                                    T updates, int64_t axis, int32_t reduction,
                                    T y) {
  AMPRT_DISPATCH(scatter_elements, ctx, data, indices, updates, axis, reduction,
                 y);
  const char *k = "scatter_elements";
  return guard(ctx, k, [&]() -> amprt_status {
    AMPRT_TRY(
        checkScatterElements(ctx, data, indices, updates, axis, reduction, y));
    AMPRT_TRY(checkGatherElements(ctx, k, data, indices, axis, updates));
    size_t es = amprt_dtype_size(data->dtype);
    if (y->data != data->data)
      std::memcpy(y->data, data->data, size_t(numel(data)) * es);
    auto *src = static_cast<const char *>(updates->data);
    auto *dst = static_cast<char *>(y->data);
    forEachGathered(data, indices, axis, [&](int64_t i, int64_t off) {
      if (!reduction) {
        std::memcpy(dst + off * int64_t(es), src + i * int64_t(es), es);
        return;
      }
      storeF(y->data, y->dtype, off,
             scatterCombine(reduction, loadF(y->data, y->dtype, off),
                            loadF(updates->data, updates->dtype, i)));
    });
    return AMPRT_OK;
  });
}

amprt_status amprt_scatter_nd(amprt_context *ctx, T data, T indices, T updates,
                              int32_t reduction, T y) {
  AMPRT_DISPATCH(scatter_nd, ctx, data, indices, updates, reduction, y);
  const char *k = "scatter_nd";
  return guard(ctx, k, [&]() -> amprt_status {
    NDMap m;
    AMPRT_TRY(checkScatterND(ctx, data, indices, updates, reduction, y, m));
    std::vector<int64_t> slabs;
    AMPRT_TRY(ndSlabs(ctx, k, m, indices, slabs));
    int32_t dt = data->dtype;
    size_t es = amprt_dtype_size(dt), bytes = size_t(m.slab) * es;
    if (y->data != data->data)
      std::memcpy(y->data, data->data, size_t(numel(data)) * es);
    auto *src = static_cast<const char *>(updates->data);
    auto *dst = static_cast<char *>(y->data);
    bool integer = isInteger(dt);
    // Tuple by tuple, in order: a repeated place sees every earlier write.
    for (size_t t = 0; t < slabs.size(); ++t) {
      int64_t to = slabs[t] * m.slab, from = int64_t(t) * m.slab;
      if (!reduction) {
        std::memcpy(dst + size_t(to) * es, src + t * bytes, bytes);
        continue;
      }
      for (int64_t e = 0; e < m.slab; ++e) {
        if (integer)
          writeI(y->data, dt, to + e,
                 scatterCombine(reduction, readI(y->data, dt, to + e),
                                readI(updates->data, dt, from + e)));
        else
          storeF(y->data, dt, to + e,
                 scatterCombine(reduction, loadF(y->data, dt, to + e),
                                loadF(updates->data, dt, from + e)));
      }
    }
    return AMPRT_OK;
  });
}

amprt_status amprt_trilu(amprt_context *ctx, T x, int64_t k, int32_t upper,
                         T y) {
  AMPRT_DISPATCH(trilu, ctx, x, k, upper, y);
  const char *kn = "trilu";
  return guard(ctx, kn, [&]() -> amprt_status {
    int64_t rows, cols;
    AMPRT_TRY(checkTrilu(ctx, x, y, rows, cols));
    int64_t n = numel(x);
    size_t es = amprt_dtype_size(x->dtype);
    auto *src = static_cast<const char *>(x->data);
    auto *dst = static_cast<char *>(y->data);
    for (int64_t e = 0; e < n; ++e) {
      if (triluKeeps(e, rows, cols, k, upper != 0))
        std::memmove(dst + e * int64_t(es), src + e * int64_t(es), es);
      else
        std::memset(dst + e * int64_t(es), 0, es);
    }
    return AMPRT_OK;
  });
}

} // extern "C"

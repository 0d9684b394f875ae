//===- Select.cu - arg_max/min, top_k, gathers, scatter, cumsum, trilu ----===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// The CUDA versions of the selections along an axis that training graphs
// run on their data every step (Select.cpp, and Reduce.cpp's cumsum):
// sequence classifiers take an ArgMax of a mask, RoBERTa-style models a
// CumSum for their position ids and a GatherElements, causal masks a Trilu,
// dynamo exports a GatherND for x[arange(b), idx], mixture-of-experts
// routers a TopK and a ScatterElements, encoder-decoder exports a ScatterND
// for their causal masks and shifted decoder inputs. One thread per line
// (arg_max/min, cumsum) or per element (top_k by ranks, gathers, scatter,
// trilu), running the CPU's own walks (argOfLine, scanLine, gatheredOffset,
// ndSlabOffset, triluKeeps, scatterCombine of amp/Runtime/Math), so the
// results are the CPU's bits; gather_elements_grad and gather_nd_grad add into
// f32 with atomics, in another order. scatter_nd sorts its tuples by the slab
// they update (a stable radix sort, so repeats keep their order) and one
// thread per slab element applies a slab's tuples in order: every reduction
// gives the CPU's bits. Index values are checked on the device first:
// immediate data checks wait, and a bad one is reported by the CPU code,
// nothing written; deferred ones record it for the next wait, and the
// kernels that index with the values write nothing either (IndexCheck).
//
//===----------------------------------------------------------------------===//

#include "Common.cuh"
#include "amp/Runtime/Math/Select.h"

#include <cub/device/device_radix_sort.cuh>

using namespace amprt;
using namespace amprt::cuda;

namespace {

constexpr int kThreads = 256;

/// y[line] = the position of the extreme element of each (outer, inner)
/// line of x.
__global__ void argKernel(const void *x, int32_t dx, bool integer, int64_t *y,
                          int64_t lines, int64_t len, int64_t inner,
                          bool largest, bool last) {
  for (int64_t l = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; l < lines;
       l += int64_t(gridDim.x) * blockDim.x) {
    int64_t base = (l / inner) * len * inner + l % inner;
    y[l] = integer ? argOfLine(base, len, inner, largest, last,
                               [&](int64_t i) { return readI(x, dx, i); })
                   : argOfLine(base, len, inner, largest, last,
                               [&](int64_t i) { return loadF(x, dx, i); });
  }
}

template <bool Largest>
amprt_status cudaArg(amprt_context *ctx, T x, int64_t axis, int32_t keepdims,
                     int32_t last, T y) {
  const char *k = Largest ? "arg_max" : "arg_min";
  return guard(ctx, k, [&]() -> amprt_status {
    int64_t outer, len, inner;
    if (checkArgExtreme(ctx, k, x, axis, keepdims, y, outer, len, inner))
      return onHost(ctx, [&] {
        return (Largest ? amprt_arg_max : amprt_arg_min)(ctx, x, axis, keepdims,
                                                         last, y);
      });
    int64_t lines = outer * inner;
    if (lines == 0)
      return AMPRT_OK;
    argKernel<<<gridFor(lines, kThreads), kThreads, 0, stream(ctx)>>>(
        x->data, x->dtype, isInteger(x->dtype) || x->dtype == AMPRT_BOOL,
        static_cast<int64_t *>(y->data), lines, len, inner, Largest, last != 0);
    AMPRT_CUDA_LAUNCHED(ctx, k);
    return AMPRT_OK;
  });
}

__device__ __forceinline__ int64_t ldIdx(const void *idx, int32_t dt,
                                         int64_t i) {
  return indexValue(idx, dt, i);
}

/// Where element e of a gather's output reads, and the scatter-add of its
/// gradient writes: GatherElements' map, and GatherND's (below).
struct ElementsSource {
  ElementsMap m;
  __device__ int64_t operator()(const void *idx, int32_t di, int64_t e) const {
    return gatheredOffset(m, e, ldIdx(idx, di, e));
  }
};

struct NDSource {
  NDMap m;
  __device__ int64_t operator()(const void *idx, int32_t di, int64_t e) const {
    int64_t at = ndSlabOffset(m, e / m.slab,
                              [&](int64_t j) { return ldIdx(idx, di, j); });
    return at * m.slab + e % m.slab;
  }
};

template <typename E, typename Src>
__global__ void indexedGatherKernel(Src src, const E *data, const void *idx,
                                    int32_t di, E *y, int64_t n,
                                    const int64_t *failed) {
  if (checkFailed(failed))
    return;
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < n;
       e += int64_t(gridDim.x) * blockDim.x)
    y[e] = data[src(idx, di, e)];
}

template <typename Src>
__global__ void indexedScatterAddKernel(Src src, const void *dy, int32_t ddy,
                                        const void *idx, int32_t di, float *acc,
                                        int64_t n, const int64_t *failed) {
  if (checkFailed(failed))
    return;
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < n;
       e += int64_t(gridDim.x) * blockDim.x)
    atomicAdd(acc + src(idx, di, e), loadF(dy, ddy, e));
}

/// y[e] = data[src(e)] for every element of y (any dtype; indices checked,
/// nothing written when a deferred check failed).
template <typename Src>
amprt_status indexedGather(amprt_context *ctx, const char *k, Src src, T data,
                           T indices, T y, const IndexCheck &check) {
  int64_t n = numel(y);
  if (n == 0)
    return AMPRT_OK;
  cudaStream_t s = stream(ctx);
  byElementSize(amprt_dtype_size(data->dtype), [&](auto e) {
    using E = decltype(e);
    indexedGatherKernel<<<gridFor(n, kThreads, 4), kThreads, 0, s>>>(
        src, static_cast<const E *>(data->data), indices->data, indices->dtype,
        static_cast<E *>(y->data), n, check.failed);
  });
  AMPRT_CUDA_LAUNCHED(ctx, k);
  return AMPRT_OK;
}

/// dx = 0, then dx[src(e)] += dy[e] in f32 with atomics, rounded once.
template <typename Src>
amprt_status indexedGatherGrad(amprt_context *ctx, const char *k, Src src, T dy,
                               T indices, T dx, const IndexCheck &check) {
  if (numel(dx) == 0)
    return AMPRT_OK;
  F32Accumulator acc;
  AMPRT_TRY(acc.begin(ctx, k, dx));
  int64_t n = numel(dy);
  if (n) {
    indexedScatterAddKernel<<<gridFor(n, kThreads, 4), kThreads, 0,
                              stream(ctx)>>>(src, dy->data, dy->dtype,
                                             indices->data, indices->dtype,
                                             acc.p, n, check.failed);
    AMPRT_CUDA_LAUNCHED(ctx, k);
  }
  return acc.finish(ctx, k, dx);
}

amprt_status cudaGatherElements(amprt_context *ctx, T data, T indices,
                                int64_t axis, T y) {
  const char *k = "gather_elements";
  return guard(ctx, k, [&]() -> amprt_status {
    auto cpu = [&] {
      return amprt_gather_elements(ctx, data, indices, axis, y);
    };
    int64_t a = axis;
    if (checkTensor(ctx, k, "data", data) ||
        checkDtype(ctx, k, "y", y, data->dtype) ||
        checkGatherElementsShape(ctx, k, data, indices, a, y))
      return onHost(ctx, cpu);
    IndexCheck check;
    AMPRT_TRY(indicesInRange(ctx, k, indices, data->shape[a], check));
    if (!check.ok)
      return onHost(ctx, cpu);
    return indexedGather(ctx, k, ElementsSource{elementsMap(data, indices, a)},
                         data, indices, y, check);
  });
}

amprt_status cudaGatherElementsGrad(amprt_context *ctx, T dy, T indices,
                                    int64_t axis, T dx) {
  const char *k = "gather_elements_grad";
  return guard(ctx, k, [&]() -> amprt_status {
    auto cpu = [&] {
      return amprt_gather_elements_grad(ctx, dy, indices, axis, dx);
    };
    int64_t a = axis;
    if (checkFloat(ctx, k, "dy", dy) || checkFloat(ctx, k, "dx", dx) ||
        checkGatherElementsShape(ctx, k, dx, indices, a, dy))
      return onHost(ctx, cpu);
    IndexCheck check;
    AMPRT_TRY(indicesInRange(ctx, k, indices, dx->shape[a], check));
    if (!check.ok)
      return onHost(ctx, cpu);
    return indexedGatherGrad(ctx, k,
                             ElementsSource{elementsMap(dx, indices, a)}, dy,
                             indices, dx, check);
  });
}

/// One thread per (outer, inner) line: Reduce.cpp's scan (floats summed in
/// f64 and rounded once per element, integers wrapping in 64 bits and
/// stored in their type).
__global__ void cumsumKernel(const void *x, void *y, int32_t dt, int64_t lines,
                             int64_t len, int64_t inner, bool exclusive,
                             bool reverse) {
  for (int64_t l = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; l < lines;
       l += int64_t(gridDim.x) * blockDim.x) {
    int64_t base = (l / inner) * len * inner + l % inner;
    if (dt == AMPRT_I64 || dt == AMPRT_I32)
      scanLine<uint64_t>(
          base, len, inner, exclusive, reverse,
          [&](int64_t i) { return uint64_t(readI(x, dt, i)); },
          [&](int64_t i, uint64_t v) { writeI(y, dt, i, int64_t(v)); });
    else
      scanLine<double>(
          base, len, inner, exclusive, reverse,
          [&](int64_t i) { return double(loadF(x, dt, i)); },
          [&](int64_t i, double v) { writeD(y, dt, i, v); });
  }
}

amprt_status cudaCumSum(amprt_context *ctx, T x, int64_t axis,
                        int32_t exclusive, int32_t reverse, T y) {
  const char *k = "cumsum";
  return guard(ctx, k, [&]() -> amprt_status {
    int64_t outer, len, inner;
    if (checkCumSum(ctx, k, x, axis, y, outer, len, inner))
      return onHost(ctx, [&] {
        return amprt_cumsum(ctx, x, axis, exclusive, reverse, y);
      });
    int64_t lines = outer * inner;
    if (lines == 0 || len == 0)
      return AMPRT_OK;
    cumsumKernel<<<gridFor(lines, kThreads), kThreads, 0, stream(ctx)>>>(
        x->data, y->data, x->dtype, lines, len, inner, exclusive != 0,
        reverse != 0);
    AMPRT_CUDA_LAUNCHED(ctx, k);
    return AMPRT_OK;
  });
}

template <typename E>
__global__ void triluKernel(const E *x, E *y, int64_t n, int64_t rows,
                            int64_t cols, int64_t k, bool upper) {
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < n;
       e += int64_t(gridDim.x) * blockDim.x)
    y[e] = triluKeeps(e, rows, cols, k, upper) ? x[e] : E(0);
}

amprt_status cudaTrilu(amprt_context *ctx, T x, int64_t k, int32_t upper, T y) {
  const char *kn = "trilu";
  return guard(ctx, kn, [&]() -> amprt_status {
    int64_t rows, cols;
    if (checkTrilu(ctx, x, y, rows, cols))
      return onHost(ctx, [&] { return amprt_trilu(ctx, x, k, upper, y); });
    int64_t n = numel(x);
    if (n == 0)
      return AMPRT_OK;
    cudaStream_t s = stream(ctx);
    byElementSize(amprt_dtype_size(x->dtype), [&](auto e) {
      using E = decltype(e);
      triluKernel<<<gridFor(n, kThreads, 4), kThreads, 0, s>>>(
          static_cast<const E *>(x->data), static_cast<E *>(y->data), n, rows,
          cols, k, upper != 0);
    });
    AMPRT_CUDA_LAUNCHED(ctx, kn);
    return AMPRT_OK;
  });
}

/// The smallest e whose index lies outside [-d, d) of its dim goes to
/// *status.
__global__ void checkNDKernel(NDMap m, const void *idx, int32_t di, int64_t n,
                              int64_t *status) {
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < n;
       e += int64_t(gridDim.x) * blockDim.x) {
    int64_t d = m.dims[e % m.kk], v = ldIdx(idx, di, e);
    if (v < -d || v >= d)
      atomicMin(reinterpret_cast<unsigned long long *>(status),
                static_cast<unsigned long long>(e));
  }
}

/// Select.cpp's words (ndSlabs) for the bad index at element `bad`.
struct TupleIndexOutside {
  NDMap m;
  const void *idx;
  int32_t dt;
  __device__ bool operator()(int64_t bad, DeferredCheck &c) const {
    c.message = kTupleIndexOutside;
    c.value = ldIdx(idx, dt, bad);
    c.at = bad / m.kk;
    c.bound = m.dims[bad % m.kk];
    return true;
  }
};

/// The device check of GatherND's indices (indicesInRange's outcomes).
amprt_status ndIndicesInRange(amprt_context *ctx, const char *k, const NDMap &m,
                              T indices, IndexCheck &check) {
  check = IndexCheck();
  int64_t n = numel(indices);
  if (n == 0)
    return AMPRT_OK;
  AMPRT_TRY(clearStatus(ctx, k));
  checkNDKernel<<<gridFor(n, kThreads), kThreads, 0, stream(ctx)>>>(
      m, indices->data, indices->dtype, n, state(ctx).devStatus);
  AMPRT_CUDA_LAUNCHED(ctx, k);
  int64_t bad;
  AMPRT_TRY(statusOrDefer(
      ctx, k, TupleIndexOutside{m, indices->data, indices->dtype}, bad));
  check.ok = bad == kNoError;
  if (deferChecks(ctx))
    check.failed = state(ctx).devStatus;
  return AMPRT_OK;
}

amprt_status cudaGatherND(amprt_context *ctx, T data, T indices,
                          int64_t batch_dims, T y) {
  const char *k = "gather_nd";
  return guard(ctx, k, [&]() -> amprt_status {
    auto cpu = [&] {
      return amprt_gather_nd(ctx, data, indices, batch_dims, y);
    };
    NDMap m;
    if (checkTensor(ctx, k, "data", data) ||
        checkDtype(ctx, k, "y", y, data->dtype) ||
        gatherNDShape(ctx, k, data, indices, batch_dims, y, m))
      return onHost(ctx, cpu);
    IndexCheck check;
    AMPRT_TRY(ndIndicesInRange(ctx, k, m, indices, check));
    if (!check.ok)
      return onHost(ctx, cpu);
    return indexedGather(ctx, k, NDSource{m}, data, indices, y, check);
  });
}

amprt_status cudaGatherNDGrad(amprt_context *ctx, T dy, T indices,
                              int64_t batch_dims, T dx) {
  const char *k = "gather_nd_grad";
  return guard(ctx, k, [&]() -> amprt_status {
    auto cpu = [&] {
      return amprt_gather_nd_grad(ctx, dy, indices, batch_dims, dx);
    };
    NDMap m;
    if (checkFloat(ctx, k, "dy", dy) || checkFloat(ctx, k, "dx", dx) ||
        gatherNDShape(ctx, k, dx, indices, batch_dims, dy, m))
      return onHost(ctx, cpu);
    IndexCheck check;
    AMPRT_TRY(ndIndicesInRange(ctx, k, m, indices, check));
    if (!check.ok)
      return onHost(ctx, cpu);
    return indexedGatherGrad(ctx, k, NDSource{m}, dy, indices, dx, check);
  });
}

/// top_k by ranks: each element of a line counts the elements that come
/// before it in top_k's total order (topKBefore: ties by position, so the
/// ranks are distinct) and, when its rank is below k, writes itself there:
/// the CPU's partial sort, element for element. One thread per element,
/// len reads each.
__global__ void topKKernel(const void *x, int32_t dx, void *values, int32_t dv,
                           int64_t *indices, int64_t outer, int64_t len,
                           int64_t inner, int64_t k, bool largest) {
  int64_t n = outer * len * inner;
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < n;
       e += int64_t(gridDim.x) * blockDim.x) {
    int64_t j = e % inner, a = (e / inner) % len, o = e / (inner * len);
    int64_t base = o * len * inner + j;
    float u = loadF(x, dx, e);
    int64_t rank = 0;
    for (int64_t b = 0; b < len && rank < k; ++b)
      rank += b != a &&
              topKBefore(loadF(x, dx, base + b * inner), b, u, a, largest);
    if (rank < k) {
      int64_t at = (o * k + rank) * inner + j;
      storeF(values, dv, at, u);
      indices[at] = a;
    }
  }
}

amprt_status cudaTopK(amprt_context *ctx, T x, int64_t k, int64_t axis,
                      int32_t largest, int32_t sorted, T values, T indices) {
  const char *kn = "top_k";
  return guard(ctx, kn, [&]() -> amprt_status {
    int64_t a = axis, outer, len, inner;
    if (checkTopK(ctx, x, k, a, values, indices, outer, len, inner))
      return onHost(ctx, [&] {
        return amprt_top_k(ctx, x, k, axis, largest, sorted, values, indices);
      });
    int64_t n = numel(x);
    if (n == 0 || k == 0)
      return AMPRT_OK;
    topKKernel<<<gridFor(n, kThreads), kThreads, 0, stream(ctx)>>>(
        x->data, x->dtype, values->data, values->dtype,
        static_cast<int64_t *>(indices->data), outer, len, inner, k,
        largest != 0);
    AMPRT_CUDA_LAUNCHED(ctx, kn);
    return AMPRT_OK;
  });
}

/// winner[pos] = 1 + the last update element i that targets pos.
__global__ void scatterWinnerKernel(ElementsMap m, const void *idx, int32_t di,
                                    unsigned long long *winner, int64_t n,
                                    const int64_t *failed) {
  if (checkFailed(failed))
    return;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    atomicMax(winner + gatheredOffset(m, i, ldIdx(idx, di, i)),
              static_cast<unsigned long long>(i + 1));
}

template <typename E>
__global__ void scatterWriteKernel(ElementsMap m, const void *idx, int32_t di,
                                   const unsigned long long *winner,
                                   const E *updates, E *y, int64_t n,
                                   const int64_t *failed) {
  if (checkFailed(failed))
    return;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t pos = gatheredOffset(m, i, ldIdx(idx, di, i));
    if (winner[pos] == static_cast<unsigned long long>(i + 1))
      y[pos] = updates[i];
  }
}

/// scatter_elements without a reduction (the last write of a place wins,
/// as in the CPU's sequential loop): y = data, then each place written by
/// the last update that targets it. The reductions, whose rounding at each
/// step depends on the order, run on the CPU.
amprt_status cudaScatterElements(amprt_context *ctx, T data, T indices,
                                 T updates, int64_t axis, int32_t reduction,
                                 T y) {
  const char *k = "scatter_elements";
  return guard(ctx, k, [&]() -> amprt_status {
    auto cpu = [&] {
      return amprt_scatter_elements(ctx, data, indices, updates, axis,
                                    reduction, y);
    };
    int64_t a = axis;
    if (checkScatterElements(ctx, data, indices, updates, a, reduction, y) ||
        reduction != 0)
      return onHost(ctx, cpu);
    IndexCheck check;
    AMPRT_TRY(indicesInRange(ctx, k, indices, data->shape[a], check));
    if (!check.ok)
      return onHost(ctx, cpu);
    cudaStream_t s = stream(ctx);
    int64_t ny = numel(y), n = numel(indices);
    size_t es = amprt_dtype_size(data->dtype);
    if (ny && y->data != data->data)
      AMPRT_CUDA(ctx, k,
                 cudaMemcpyAsync(y->data, data->data, size_t(ny) * es,
                                 cudaMemcpyDeviceToDevice, s));
    if (n == 0)
      return AMPRT_OK;
    Scratch winner;
    AMPRT_TRY(winner.get(ctx, k, size_t(ny) * sizeof(unsigned long long)));
    auto *w = static_cast<unsigned long long *>(winner.p);
    AMPRT_CUDA(
        ctx, k,
        cudaMemsetAsync(w, 0, size_t(ny) * sizeof(unsigned long long), s));
    ElementsMap m = elementsMap(data, indices, a);
    scatterWinnerKernel<<<gridFor(n, kThreads, 4), kThreads, 0, s>>>(
        m, indices->data, indices->dtype, w, n, check.failed);
    AMPRT_CUDA_LAUNCHED(ctx, k);
    byElementSize(es, [&](auto e) {
      using E = decltype(e);
      scatterWriteKernel<<<gridFor(n, kThreads, 4), kThreads, 0, s>>>(
          m, indices->data, indices->dtype, w,
          static_cast<const E *>(updates->data), static_cast<E *>(y->data), n,
          check.failed);
    });
    AMPRT_CUDA_LAUNCHED(ctx, k);
    return AMPRT_OK;
  });
}

/// keys[t] = the slab of y that index tuple t updates, tuples[t] = t.
__global__ void ndTargetKernel(NDMap m, const void *idx, int32_t di,
                               int64_t *keys, int64_t *tuples, int64_t n) {
  for (int64_t t = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; t < n;
       t += int64_t(gridDim.x) * blockDim.x) {
    keys[t] = ndSlabOffset(m, t, [&](int64_t j) { return ldIdx(idx, di, j); });
    tuples[t] = t;
  }
}

/// Element e of every slab scatter_nd writes: `keys` (sorted) and `tuples`
/// list the tuples grouped by the slab they update, each group in the
/// tuples' order; the thread of (group head j, e) applies its group.
/// Reduction none: the last tuple's element (moved as E).
template <typename E>
__global__ void scatterNDReplaceKernel(const int64_t *keys,
                                       const int64_t *tuples, int64_t n,
                                       int64_t slab, const E *updates, E *y,
                                       const int64_t *failed) {
  if (checkFailed(failed))
    return;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n * slab;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t j = i / slab, e = i % slab, key = keys[j];
    if (j > 0 && keys[j - 1] == key)
      continue;
    while (j + 1 < n && keys[j + 1] == key)
      ++j;
    y[key * slab + e] = updates[tuples[j] * slab + e];
  }
}

/// The reductions: each tuple of the group in turn, rounded into the dtype
/// at each step (the CPU's loop).
__global__ void
scatterNDReduceKernel(const int64_t *keys, const int64_t *tuples, int64_t n,
                      int64_t slab, const void *updates, void *y, int32_t dt,
                      bool integer, int32_t reduction, const int64_t *failed) {
  if (checkFailed(failed))
    return;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n * slab;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t j = i / slab, e = i % slab, key = keys[j];
    if (j > 0 && keys[j - 1] == key)
      continue;
    int64_t at = key * slab + e;
    for (; j < n && keys[j] == key; ++j) {
      int64_t from = tuples[j] * slab + e;
      if (integer)
        writeI(y, dt, at,
               scatterCombine(reduction, readI(y, dt, at),
                              readI(updates, dt, from)));
      else
        storeF(y, dt, at,
               scatterCombine(reduction, loadF(y, dt, at),
                              loadF(updates, dt, from)));
    }
  }
}

/// scatter_nd: y = data, the tuples' target slabs sorted (stable, so
/// repeated targets keep the tuples' order), then one thread per (target,
/// slab element) applies that target's tuples in order: the CPU's bits for
/// every reduction and for repeats.
amprt_status cudaScatterND(amprt_context *ctx, T data, T indices, T updates,
                           int32_t reduction, T y) {
  const char *k = "scatter_nd";
  return guard(ctx, k, [&]() -> amprt_status {
    auto cpu = [&] {
      return amprt_scatter_nd(ctx, data, indices, updates, reduction, y);
    };
    NDMap m;
    if (checkScatterND(ctx, data, indices, updates, reduction, y, m))
      return onHost(ctx, cpu);
    IndexCheck check;
    AMPRT_TRY(ndIndicesInRange(ctx, k, m, indices, check));
    if (!check.ok)
      return onHost(ctx, cpu);
    cudaStream_t s = stream(ctx);
    int64_t ny = numel(y), n = m.tuples;
    size_t es = amprt_dtype_size(data->dtype);
    if (ny && y->data != data->data)
      AMPRT_CUDA(ctx, k,
                 cudaMemcpyAsync(y->data, data->data, size_t(ny) * es,
                                 cudaMemcpyDeviceToDevice, s));
    if (n == 0 || m.slab == 0)
      return AMPRT_OK;
    // keys and tuples, in and sorted, then cub's workspace.
    Scratch lists, work;
    AMPRT_TRY(lists.get(ctx, k, 4 * size_t(n) * sizeof(int64_t)));
    auto *keys = static_cast<int64_t *>(lists.p);
    int64_t *tuples = keys + n, *sortedKeys = keys + 2 * n,
            *sortedTuples = keys + 3 * n;
    ndTargetKernel<<<gridFor(n, kThreads), kThreads, 0, s>>>(
        m, indices->data, indices->dtype, keys, tuples, n);
    AMPRT_CUDA_LAUNCHED(ctx, k);
    // Only the bits a slab number can have take part in the sort.
    int bits = 1;
    while (bits < 63 && (int64_t(1) << bits) < m.inBatch)
      ++bits;
    size_t workBytes = 0;
    AMPRT_CUDA(ctx, k,
               cub::DeviceRadixSort::SortPairs(nullptr, workBytes, keys,
                                               sortedKeys, tuples, sortedTuples,
                                               n, 0, bits, s));
    AMPRT_TRY(work.get(ctx, k, workBytes));
    AMPRT_CUDA(ctx, k,
               cub::DeviceRadixSort::SortPairs(work.p, workBytes, keys,
                                               sortedKeys, tuples, sortedTuples,
                                               n, 0, bits, s));
    unsigned grid = gridFor(n * m.slab, kThreads, 4);
    if (!reduction)
      byElementSize(es, [&](auto e) {
        using E = decltype(e);
        scatterNDReplaceKernel<<<grid, kThreads, 0, s>>>(
            sortedKeys, sortedTuples, n, m.slab,
            static_cast<const E *>(updates->data), static_cast<E *>(y->data),
            check.failed);
      });
    else
      scatterNDReduceKernel<<<grid, kThreads, 0, s>>>(
          sortedKeys, sortedTuples, n, m.slab, updates->data, y->data,
          data->dtype, isInteger(data->dtype), reduction, check.failed);
    AMPRT_CUDA_LAUNCHED(ctx, k);
    return AMPRT_OK;
  });
}

} // namespace

void amprt::cuda::registerSelect(KernelTable &t) {
  t.arg_max = cudaArg<true>;
  t.arg_min = cudaArg<false>;
  t.gather_elements = cudaGatherElements;
  t.gather_elements_grad = cudaGatherElementsGrad;
  t.cumsum = cudaCumSum;
  t.trilu = cudaTrilu;
  t.gather_nd = cudaGatherND;
  t.gather_nd_grad = cudaGatherNDGrad;
  t.top_k = cudaTopK;
  t.scatter_elements = cudaScatterElements;
  t.scatter_nd = cudaScatterND;
}

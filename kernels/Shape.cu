//===- Shape.cu - transpose, expand, gather and its gradient --------------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// The CUDA versions of Shape.cpp's data movement that training graphs run
// every step: transpose and expand (one strided copy of any dtype), gather
// (embedding lookups) and gather_grad (scatter-add in f32 with atomics, so
// the sum of the rows that share an index runs in another order than the
// CPU's). The geometry is Shape.cpp's own (transposeGeometry, gatherShape);
// the index values are checked on the device first, and a bad one is
// reported by the CPU code, which words the error (nothing is written).
//
//===----------------------------------------------------------------------===//

#include "Common.cuh"

using namespace amprt;
using namespace amprt::cuda;

namespace {

constexpr int kThreads = 256;

/// The dims and strides of a strided copy in index type I (unsigned 32-bit
/// index math when every offset is below 2^31, so that o plus the grid's
/// stride cannot wrap: 64-bit division is several times slower).
template <typename I> struct StridedMap {
  int32_t rank;
  I dims[AMPRT_MAX_RANK], st[AMPRT_MAX_RANK];
};

/// y[o] = x[sum_d idx_d(o) * st[d]] for the elements of y's shape.
template <typename E, typename I>
__global__ void stridedCopyKernel(StridedMap<I> m, const E *x, E *y, I n) {
  for (I o = blockIdx.x * I(blockDim.x) + threadIdx.x; o < n;
       o += I(gridDim.x) * blockDim.x) {
    I r = o, off = 0;
    for (int d = m.rank - 1; d >= 0; --d) {
      off += (r % m.dims[d]) * m.st[d];
      r /= m.dims[d];
    }
    y[o] = x[off];
  }
}

template <typename E, typename I>
void launchStridedCopy(const Shape &so, const Shape &st, const void *x,
                       void *y, int64_t n, cudaStream_t s) {
  StridedMap<I> m;
  m.rank = int32_t(so.size());
  for (size_t d = 0; d < so.size(); ++d) {
    m.dims[d] = I(so[d]);
    m.st[d] = I(st[d]);
  }
  stridedCopyKernel<<<gridFor(n, 256, 4), 256, 0, s>>>(
      m, static_cast<const E *>(x), static_cast<E *>(y), I(n));
}

template <typename E>
void stridedCopyAs(const Shape &so, const Shape &st, int64_t xElems,
                   const void *x, void *y, int64_t n, cudaStream_t s) {
  if (n < (int64_t(1) << 31) && xElems < (int64_t(1) << 31))
    launchStridedCopy<E, uint32_t>(so, st, x, y, n, s);
  else
    launchStridedCopy<E, int64_t>(so, st, x, y, n, s);
}

amprt_status stridedCopy(amprt_context *ctx, const char *k, T x, T y,
                         const Shape &so, const Shape &st) {
  int64_t n = numel(so), nx = numel(x);
  if (n == 0)
    return AMPRT_OK;
  cudaStream_t s = stream(ctx);
  byElementSize(amprt_dtype_size(x->dtype), [&](auto e) {
    stridedCopyAs<decltype(e)>(so, st, nx, x->data, y->data, n, s);
  });
  AMPRT_CUDA_LAUNCHED(ctx, k);
  return AMPRT_OK;
}

amprt_status cudaTranspose(amprt_context *ctx, T x, const int64_t *perm,
                           int64_t nperm, T y) {
  const char *k = "transpose";
  return guard(ctx, k, [&]() -> amprt_status {
    Shape so, st;
    if (checkTensor(ctx, k, "x", x) || checkDtype(ctx, k, "y", y, x->dtype) ||
        transposeGeometry(ctx, k, x, perm, nperm, so, st) ||
        checkShape(ctx, k, "y", y, so))
      return onHost(ctx,
                    [&] { return amprt_transpose(ctx, x, perm, nperm, y); });
    return stridedCopy(ctx, k, x, y, so, st);
  });
}

amprt_status cudaExpand(amprt_context *ctx, T x, T y) {
  const char *k = "expand";
  return guard(ctx, k, [&]() -> amprt_status {
    Shape so;
    if (checkTensor(ctx, k, "x", x) || checkDtype(ctx, k, "y", y, x->dtype) ||
        !broadcastShapes({shapeOf(x), shapeOf(y)}, so) || so != shapeOf(y))
      return onHost(ctx, [&] { return amprt_expand(ctx, x, y); });
    return stridedCopy(ctx, k, x, y, so, broadcastStrides(shapeOf(x), so));
  });
}

/// Pad: x's dims and strides, y's dims, the begin pads.
struct PadMap {
  int32_t rank, mode;
  int64_t xd[AMPRT_MAX_RANK], xs[AMPRT_MAX_RANK], yd[AMPRT_MAX_RANK],
      begin[AMPRT_MAX_RANK];
};

/// One thread per element of y (Shape.cpp's amprt_pad).
template <typename E>
__global__ void padKernel(PadMap m, const E *x, E *y, E fill, int64_t n) {
  for (int64_t o = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; o < n;
       o += int64_t(gridDim.x) * blockDim.x) {
    int64_t r = o, off = 0;
    for (int d = m.rank - 1; d >= 0 && off >= 0; --d) {
      int64_t i = padIndex(r % m.yd[d] - m.begin[d], m.xd[d], m.mode);
      r /= m.yd[d];
      off = i < 0 ? -1 : off + i * m.xs[d];
    }
    y[o] = off < 0 ? fill : x[off];
  }
}

amprt_status cudaPad(amprt_context *ctx, T x, const int64_t *pads,
                     int64_t npads, int32_t mode, double value, T y) {
  const char *k = "pad";
  return guard(ctx, k, [&]() -> amprt_status {
    Shape so;
    if (checkTensor(ctx, k, "x", x) || checkDtype(ctx, k, "y", y, x->dtype) ||
        padShape(ctx, k, x, pads, npads, mode, so) ||
        checkShape(ctx, k, "y", y, so))
      return onHost(ctx, [&] {
        return amprt_pad(ctx, x, pads, npads, mode, value, y);
      });
    int64_t n = numel(so);
    if (n == 0)
      return AMPRT_OK;
    PadMap m = {};
    m.rank = x->rank;
    m.mode = mode;
    int64_t stride = 1;
    for (int d = x->rank - 1; d >= 0; --d) {
      m.xd[d] = x->shape[d];
      m.xs[d] = stride;
      stride *= x->shape[d];
      m.yd[d] = so[d];
      m.begin[d] = pads[d];
    }
    uint64_t fillBits = 0; // the CPU's conversion of the value
    writeD(&fillBits, x->dtype, 0, value);
    byElementSize(amprt_dtype_size(x->dtype), [&](auto e) {
      using E = decltype(e);
      E fill;
      std::memcpy(&fill, &fillBits, sizeof(E));
      padKernel<<<gridFor(n, kThreads, 4), kThreads, 0, stream(ctx)>>>(
          m, static_cast<const E *>(x->data), static_cast<E *>(y->data), fill,
          n);
    });
    AMPRT_CUDA_LAUNCHED(ctx, k);
    return AMPRT_OK;
  });
}

__device__ __forceinline__ int64_t ldIndex(const void *idx, int32_t dt,
                                           int64_t j, int64_t len) {
  int64_t v = dt == AMPRT_I64 ? static_cast<const int64_t *>(idx)[j]
                              : static_cast<const int32_t *>(idx)[j];
  return v < 0 ? v + len : v;
}

/// The smallest j with idx[j] outside [-len, len) goes to *status.
__global__ void checkIndicesKernel(const void *idx, int32_t di, int64_t ni,
                                   int64_t len, int64_t *status) {
  for (int64_t j = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; j < ni;
       j += int64_t(gridDim.x) * blockDim.x) {
    int64_t v = di == AMPRT_I64 ? static_cast<const int64_t *>(idx)[j]
                                : static_cast<const int32_t *>(idx)[j];
    if (v < -len || v >= len)
      atomicMin(reinterpret_cast<unsigned long long *>(status),
                static_cast<unsigned long long>(j));
  }
}

/// Waits for the index check; true when every index is in range.
amprt_status indicesInRange(amprt_context *ctx, const char *k, T indices,
                            int64_t len, bool &ok) {
  int64_t ni = numel(indices);
  ok = true;
  if (ni == 0)
    return AMPRT_OK;
  AMPRT_TRY(clearStatus(ctx, k));
  checkIndicesKernel<<<gridFor(ni, kThreads), kThreads, 0, stream(ctx)>>>(
      indices->data, indices->dtype, ni, len, state(ctx).devStatus);
  AMPRT_CUDA_LAUNCHED(ctx, k);
  int64_t bad;
  AMPRT_TRY(readStatus(ctx, k, bad));
  ok = bad == kNoError;
  return AMPRT_OK;
}

/// y[o, j, t] = data[o, idx[j], t]; one thread per output element.
template <typename E>
__global__ void gatherKernel(const E *data, const void *idx, int32_t di,
                             E *y, int64_t ni, int64_t len, int64_t inner,
                             int64_t n) {
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < n;
       e += int64_t(gridDim.x) * blockDim.x) {
    int64_t t = e % inner, r = e / inner;
    int64_t j = r % ni, o = r / ni;
    y[e] = data[(o * len + ldIndex(idx, di, j, len)) * inner + t];
  }
}

/// acc[o, idx[j], t] += dy[o, j, t] (f32 atomics).
__global__ void scatterAddKernel(const void *dy, int32_t ddy, const void *idx,
                                 int32_t di, float *acc, int64_t ni,
                                 int64_t len, int64_t inner, int64_t n) {
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < n;
       e += int64_t(gridDim.x) * blockDim.x) {
    int64_t t = e % inner, r = e / inner;
    int64_t j = r % ni, o = r / ni;
    atomicAdd(acc + (o * len + ldIndex(idx, di, j, len)) * inner + t,
              loadF(dy, ddy, e));
  }
}

amprt_status cudaGather(amprt_context *ctx, T data, T indices, int64_t axis,
                        T y) {
  const char *k = "gather";
  return guard(ctx, k, [&]() -> amprt_status {
    auto cpu = [&] { return amprt_gather(ctx, data, indices, axis, y); };
    int64_t a, outer, len, inner;
    Shape so;
    if (checkTensor(ctx, k, "data", data) || checkIndices(ctx, k, indices) ||
        checkDtype(ctx, k, "y", y, data->dtype) ||
        gatherShape(ctx, k, shapeOf(data), indices, axis, a, outer, len,
                    inner, so, /*values=*/false) ||
        checkShape(ctx, k, "y", y, so))
      return onHost(ctx, cpu);
    bool ok;
    AMPRT_TRY(indicesInRange(ctx, k, indices, len, ok));
    if (!ok)
      return onHost(ctx, cpu);
    int64_t ni = numel(indices), n = numel(so);
    if (n == 0)
      return AMPRT_OK;
    unsigned grid = gridFor(n, kThreads, 4);
    cudaStream_t s = stream(ctx);
    const void *ix = indices->data;
    int32_t di = indices->dtype;
    byElementSize(amprt_dtype_size(data->dtype), [&](auto e) {
      using E = decltype(e);
      gatherKernel<<<grid, kThreads, 0, s>>>(
          static_cast<const E *>(data->data), ix, di,
          static_cast<E *>(y->data), ni, len, inner, n);
    });
    AMPRT_CUDA_LAUNCHED(ctx, k);
    return AMPRT_OK;
  });
}

amprt_status cudaGatherGrad(amprt_context *ctx, T dy, T indices, int64_t axis,
                            T dx) {
  const char *k = "gather_grad";
  return guard(ctx, k, [&]() -> amprt_status {
    auto cpu = [&] { return amprt_gather_grad(ctx, dy, indices, axis, dx); };
    int64_t a, outer, len, inner;
    Shape so;
    if (checkFloat(ctx, k, "dy", dy) || checkIndices(ctx, k, indices) ||
        checkFloat(ctx, k, "dx", dx) ||
        gatherShape(ctx, k, shapeOf(dx), indices, axis, a, outer, len, inner,
                    so, /*values=*/false) ||
        checkShape(ctx, k, "dy", dy, so))
      return onHost(ctx, cpu);
    bool ok;
    AMPRT_TRY(indicesInRange(ctx, k, indices, len, ok));
    if (!ok)
      return onHost(ctx, cpu);
    int64_t nx = numel(dx), n = numel(dy);
    if (nx == 0)
      return AMPRT_OK;
    F32Accumulator acc;
    AMPRT_TRY(acc.begin(ctx, k, dx));
    if (n) {
      scatterAddKernel<<<gridFor(n, kThreads, 4), kThreads, 0, stream(ctx)>>>(
          dy->data, dy->dtype, indices->data, indices->dtype, acc.p,
          numel(indices), len, inner, n);
      AMPRT_CUDA_LAUNCHED(ctx, k);
    }
    return acc.finish(ctx, k, dx);
  });
}

} // namespace

void amprt::cuda::registerShape(KernelTable &t) {
  t.transpose = cudaTranspose;
  t.expand = cudaExpand;
  t.pad = cudaPad;
  t.gather = cudaGather;
  t.gather_grad = cudaGatherGrad;
}

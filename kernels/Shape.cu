//===- Shape.cu - strided copies, gather, dropout and their gradients -----===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// The CUDA versions of Shape.cpp's data movement that training graphs run
// every step: reshape (a device copy), inplace_accumulate, transpose, expand,
// concat, slice and slice_grad (strided copies of any dtype, one launch per
// concat input; slice_grad zeroes dx first), pad, gather (embedding lookups)
// and gather_grad (scatter-add in f32 with atomics, so the sum of the rows that
// share an index runs in another order than the CPU's), dropout and
// dropout_grad (the CPU's counter-based mask, bit for bit; the kernels read
// the ratio, the training flag and the context's random offset on the
// device). The geometry is Shape.cpp's own (transposeGeometry, sliceGeometry,
// concatShape, gatherShape). Index values and dropout's ratio are checked on
// the device first: immediate data checks wait for the stream, and a bad one
// is reported by the CPU code, which words the error (nothing is written);
// deferred ones record it for the next wait, and nothing is written either.
//
//===----------------------------------------------------------------------===//

#include "Common.cuh"
#include "amp/Runtime/Math/Random.h"

using namespace amprt;
using namespace amprt::cuda;

namespace {

constexpr int kThreads = 256;

/// A strided copy in index type I: y[yBase + sum_d i_d ys[d]] = x[xBase +
/// sum_d i_d xs[d]] over the indices i of `dims`. Unsigned 32-bit index math
/// when every offset is below 2^31, so that o plus the grid's stride cannot
/// wrap (64-bit division is several times slower); a negative stride (a
/// slice with a negative step) wraps modulo 2^32 there, which gives the
/// right offset because the sum with its base is a valid, non-negative one.
template <typename I> struct StridedMap {
  int32_t rank;
  I xBase, yBase;
  I dims[AMPRT_MAX_RANK], xs[AMPRT_MAX_RANK], ys[AMPRT_MAX_RANK];
};

/// Which side of a strided copy is dense (row-major in the order of
/// `dims`, from offset 0): that side's offset is the element number itself.
enum class Dense { None, X, Y };

template <typename E, typename I, Dense D>
__global__ void stridedCopyKernel(StridedMap<I> m, const E *x, E *y, I n) {
  for (I o = blockIdx.x * I(blockDim.x) + threadIdx.x; o < n;
       o += I(gridDim.x) * blockDim.x) {
    I r = o, xo = m.xBase, yo = m.yBase;
    for (int d = m.rank - 1; d >= 0; --d) {
      I i = r % m.dims[d];
      if (D != Dense::X)
        xo += i * m.xs[d];
      if (D != Dense::Y)
        yo += i * m.ys[d];
      r /= m.dims[d];
    }
    y[D == Dense::Y ? o : yo] = x[D == Dense::X ? o : xo];
  }
}

/// The geometry of one strided copy (strides of a dense side unused).
struct CopyPlan {
  Shape dims, xs, ys;
  int64_t xBase = 0, yBase = 0;
  Dense dense = Dense::None;
};

template <typename E, typename I>
void launchStridedCopy(const CopyPlan &p, const void *x, void *y, int64_t n,
                       cudaStream_t s) {
  StridedMap<I> m = {};
  m.rank = int32_t(p.dims.size());
  m.xBase = I(p.xBase);
  m.yBase = I(p.yBase);
  for (size_t d = 0; d < p.dims.size(); ++d) {
    m.dims[d] = I(p.dims[d]);
    m.xs[d] = p.dense == Dense::X ? 0 : I(p.xs[d]);
    m.ys[d] = p.dense == Dense::Y ? 0 : I(p.ys[d]);
  }
  auto *xe = static_cast<const E *>(x);
  auto *ye = static_cast<E *>(y);
  unsigned grid = gridFor(n, 256, 4);
  switch (p.dense) {
  case Dense::X:
    stridedCopyKernel<E, I, Dense::X><<<grid, 256, 0, s>>>(m, xe, ye, I(n));
    break;
  case Dense::Y:
    stridedCopyKernel<E, I, Dense::Y><<<grid, 256, 0, s>>>(m, xe, ye, I(n));
    break;
  default:
    stridedCopyKernel<E, I, Dense::None><<<grid, 256, 0, s>>>(m, xe, ye, I(n));
  }
}

/// Runs plan p from x into y (dtype of x; every element of p.dims moved).
amprt_status stridedCopy(amprt_context *ctx, const char *k, T x, T y,
                         const CopyPlan &p) {
  int64_t n = numel(p.dims);
  if (n == 0)
    return AMPRT_OK;
  cudaStream_t s = stream(ctx);
  bool small = !state(ctx).forceIndex64 && n < (int64_t(1) << 31) &&
               numel(x) < (int64_t(1) << 31) && numel(y) < (int64_t(1) << 31);
  byElementSize(amprt_dtype_size(x->dtype), [&](auto e) {
    using E = decltype(e);
    if (small)
      launchStridedCopy<E, uint32_t>(p, x->data, y->data, n, s);
    else
      launchStridedCopy<E, int64_t>(p, x->data, y->data, n, s);
  });
  AMPRT_CUDA_LAUNCHED(ctx, k);
  return AMPRT_OK;
}

/// y = the elements of x at st-strided offsets, in the order of so.
amprt_status gatherCopy(amprt_context *ctx, const char *k, T x, T y,
                        const Shape &so, const Shape &st, int64_t base = 0) {
  CopyPlan p;
  p.dims = so;
  p.xs = st;
  p.xBase = base;
  p.dense = Dense::Y;
  return stridedCopy(ctx, k, x, y, p);
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
    return gatherCopy(ctx, k, x, y, so, st);
  });
}

amprt_status cudaExpand(amprt_context *ctx, T x, T y) {
  const char *k = "expand";
  return guard(ctx, k, [&]() -> amprt_status {
    Shape so;
    if (checkTensor(ctx, k, "x", x) || checkDtype(ctx, k, "y", y, x->dtype) ||
        !broadcastShapes({shapeOf(x), shapeOf(y)}, so) || so != shapeOf(y))
      return onHost(ctx, [&] { return amprt_expand(ctx, x, y); });
    return gatherCopy(ctx, k, x, y, so, broadcastStrides(shapeOf(x), so));
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
      return onHost(
          ctx, [&] { return amprt_pad(ctx, x, pads, npads, mode, value, y); });
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

/// y[o, j, t] = data[o, idx[j], t]; one thread per output element.
template <typename E>
__global__ void gatherKernel(const E *data, const void *idx, int32_t di, E *y,
                             int64_t ni, int64_t len, int64_t inner, int64_t n,
                             const int64_t *failed) {
  if (checkFailed(failed))
    return;
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
                                 int64_t len, int64_t inner, int64_t n,
                                 const int64_t *failed) {
  if (checkFailed(failed))
    return;
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
        gatherShape(ctx, k, shapeOf(data), indices, axis, a, outer, len, inner,
                    so, /*values=*/false) ||
        checkShape(ctx, k, "y", y, so))
      return onHost(ctx, cpu);
    IndexCheck check;
    AMPRT_TRY(indicesInRange(ctx, k, indices, len, check));
    if (!check.ok)
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
      gatherKernel<<<grid, kThreads, 0, s>>>(static_cast<const E *>(data->data),
                                             ix, di, static_cast<E *>(y->data),
                                             ni, len, inner, n, check.failed);
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
    IndexCheck check;
    AMPRT_TRY(indicesInRange(ctx, k, indices, len, check));
    if (!check.ok)
      return onHost(ctx, cpu);
    int64_t nx = numel(dx), n = numel(dy);
    if (nx == 0)
      return AMPRT_OK;
    F32Accumulator acc;
    AMPRT_TRY(acc.begin(ctx, k, dx));
    if (n) {
      scatterAddKernel<<<gridFor(n, kThreads, 4), kThreads, 0, stream(ctx)>>>(
          dy->data, dy->dtype, indices->data, indices->dtype, acc.p,
          numel(indices), len, inner, n, check.failed);
      AMPRT_CUDA_LAUNCHED(ctx, k);
    }
    return acc.finish(ctx, k, dx);
  });
}

amprt_status cudaConcat(amprt_context *ctx, T inputs, int64_t n, int64_t axis,
                        T y) {
  const char *k = "concat";
  return guard(ctx, k, [&]() -> amprt_status {
    int64_t a;
    Shape so;
    if (concatShape(ctx, k, inputs, n, axis, y, a, so))
      return onHost(ctx, [&] { return amprt_concat(ctx, inputs, n, axis, y); });
    // One copy per input into its columns of y: x dense, y strided.
    CopyPlan p;
    p.ys = stridesOf(so);
    p.dense = Dense::X;
    int64_t col = 0;
    for (int64_t i = 0; i < n; ++i) {
      p.dims = shapeOf(&inputs[i]);
      p.yBase = col * p.ys[size_t(a)];
      AMPRT_TRY(stridedCopy(ctx, k, &inputs[i], y, p));
      col += p.dims[size_t(a)];
    }
    return AMPRT_OK;
  });
}

amprt_status cudaSlice(amprt_context *ctx, T x, const int64_t *starts,
                       const int64_t *ends, const int64_t *axes,
                       const int64_t *steps, int64_t n, T y) {
  const char *k = "slice";
  return guard(ctx, k, [&]() -> amprt_status {
    Shape so, st;
    int64_t base;
    if (checkTensor(ctx, k, "x", x) || checkDtype(ctx, k, "y", y, x->dtype) ||
        sliceGeometry(ctx, k, shapeOf(x), starts, ends, axes, steps, n, so, st,
                      base) ||
        checkShape(ctx, k, "y", y, so))
      return onHost(ctx, [&] {
        return amprt_slice(ctx, x, starts, ends, axes, steps, n, y);
      });
    return gatherCopy(ctx, k, x, y, so, st, base);
  });
}

amprt_status cudaSliceGrad(amprt_context *ctx, T dy, const int64_t *starts,
                           const int64_t *ends, const int64_t *axes,
                           const int64_t *steps, int64_t n, T dx) {
  const char *k = "slice_grad";
  return guard(ctx, k, [&]() -> amprt_status {
    CopyPlan p;
    if (checkTensor(ctx, k, "dx", dx) ||
        checkDtype(ctx, k, "dy", dy, dx->dtype) ||
        sliceGeometry(ctx, k, shapeOf(dx), starts, ends, axes, steps, n, p.dims,
                      p.ys, p.yBase) ||
        checkShape(ctx, k, "dy", dy, p.dims))
      return onHost(ctx, [&] {
        return amprt_slice_grad(ctx, dy, starts, ends, axes, steps, n, dx);
      });
    size_t bytes = size_t(numel(dx)) * amprt_dtype_size(dx->dtype);
    if (bytes)
      AMPRT_CUDA(ctx, k, cudaMemsetAsync(dx->data, 0, bytes, stream(ctx)));
    p.dense = Dense::X; // dy, into the slice of dx it came from
    return stridedCopy(ctx, k, dy, dx, p);
  });
}

/// Dropout's ratio and training flag where the kernels read them (NULL:
/// absent), read as Shape.cpp's dropoutValues reads them.
struct DropoutScalars {
  const void *ratio;
  int32_t dr;
  const void *training;
  int32_t dt;
  /// r (0.5 without a ratio) and the flag; false for r outside [0, 1).
  __device__ bool read(float &r, bool &train) const {
    r = ratio ? float(readD(ratio, dr, 0)) : 0.5f;
    train = training && readD(training, dt, 0) != 0;
    return r >= 0.f && r < 1.f;
  }
};

DropoutScalars dropoutScalars(T ratio, T training) {
  return {ratio ? ratio->data : nullptr, ratio ? ratio->dtype : 0,
          training ? training->data : nullptr, training ? training->dtype : 0};
}

/// A ratio outside [0, 1) seen by a dropout kernel: the first thread
/// records it when the checks are deferred (rec; NULL: the host checked).
__device__ __forceinline__ void badRatio(float r, DeferredCheck *rec,
                                         const char *k) {
  if (!rec || blockIdx.x != 0 || threadIdx.x != 0)
    return;
  DeferredCheck c = {};
  c.message = kRatioOutside;
  c.real = double(r);
  recordFailure(rec, k, c);
}

/// Shape.cpp's dropout expressions: keep iff not training, ratio 0 or the
/// element's uniform draw >= r; kept elements scaled by 1 / (1 - r) (f32,
/// as the CPU) when training. Nothing is written for a bad ratio.
__global__ void dropoutKernel(const void *x, int32_t dx, void *y, int32_t dy,
                              uint8_t *mask, int64_t n, DropoutScalars d,
                              uint64_t seed, const uint64_t *offset,
                              DeferredCheck *rec, const char *k) {
  float r;
  bool train;
  if (!d.read(r, train)) {
    badRatio(r, rec, k);
    return;
  }
  float sc = 1.f / (1.f - r);
  uint64_t key = streamKey(seed, *offset);
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    bool keep = !train || r == 0.f || uniform24At(key, i) >= r;
    float v = loadF(x, dx, i);
    storeF(y, dy, i, keep ? (train ? v * sc : v) : 0.f);
    if (mask)
      mask[i] = keep;
  }
}

__global__ void dropoutGradKernel(const void *g, int32_t dg,
                                  const uint8_t *mask, void *dx, int32_t ddx,
                                  int64_t n, DropoutScalars d,
                                  DeferredCheck *rec, const char *k) {
  float r;
  bool train;
  if (!d.read(r, train)) {
    badRatio(r, rec, k);
    return;
  }
  float sc = train ? 1.f / (1.f - r) : 1.f;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    storeF(dx, ddx, i, mask[i] ? loadF(g, dg, i) * sc : 0.f);
}

/// Dropout's ratio alone (a call with no elements): records a bad one.
struct RatioOutside {
  DropoutScalars d;
  __device__ bool operator()(int64_t, DeferredCheck &c) const {
    float r;
    bool train;
    if (d.read(r, train))
      return false;
    c.message = kRatioOutside;
    c.real = double(r);
    return true;
  }
};

/// Dropout's scalars: their dtypes and shapes are checked at once (false:
/// the CPU code runs, and reports the error). Their values are data: an
/// immediate check reads them back to the host (one wait for the stream)
/// and checks the ratio as the CPU does; a deferred one leaves the check
/// to the kernels, which record a bad ratio in `rec` (a call with no
/// elements queues the check alone).
amprt_status dropoutChecks(amprt_context *ctx, const char *k, T ratio,
                           T training, int64_t n, DeferredCheck *&rec,
                           bool &ok) {
  ok = false;
  rec = nullptr;
  if (checkDropoutScalars(ctx, k, ratio, training))
    return AMPRT_OK;
  if (deferChecks(ctx)) {
    ok = true;
    rec = state(ctx).deferredOnDevice;
    if (n == 0 && ratio)
      return deferCheck(ctx, k, RatioOutside{dropoutScalars(ratio, training)},
                        /*fromStatus=*/false);
    return AMPRT_OK;
  }
  double v[2] = {0, 0};
  AMPRT_TRY(readScalars(ctx, k, {ratio, training}, v));
  float r;
  bool train;
  ok = !dropoutValues(ctx, k, ratio ? &v[0] : nullptr,
                      training ? &v[1] : nullptr, r, train);
  return AMPRT_OK;
}

amprt_status cudaDropout(amprt_context *ctx, T x, T ratio, T training,
                         uint64_t seed, T y, T mask) {
  const char *k = "dropout";
  return guard(ctx, k, [&]() -> amprt_status {
    auto cpu = [&] {
      return amprt_dropout(ctx, x, ratio, training, seed, y, mask);
    };
    if (checkFloat(ctx, k, "x", x) || checkFloat(ctx, k, "y", y) ||
        checkShape(ctx, k, "y", y, shapeOf(x)) ||
        checkDtype(ctx, k, "mask", mask, AMPRT_BOOL, true) ||
        (mask && checkShape(ctx, k, "mask", mask, shapeOf(x))))
      return onHost(ctx, cpu);
    int64_t n = numel(x);
    DeferredCheck *rec;
    bool ok;
    AMPRT_TRY(dropoutChecks(ctx, k, ratio, training, n, rec, ok));
    if (!ok)
      return onHost(ctx, cpu);
    if (n == 0)
      return AMPRT_OK;
    dropoutKernel<<<gridFor(n, kThreads, 4), kThreads, 0, stream(ctx)>>>(
        x->data, x->dtype, y->data, y->dtype,
        mask ? static_cast<uint8_t *>(mask->data) : nullptr, n,
        dropoutScalars(ratio, training), seed, randomOffset(ctx), rec, k);
    AMPRT_CUDA_LAUNCHED(ctx, k);
    return AMPRT_OK;
  });
}

amprt_status cudaDropoutGrad(amprt_context *ctx, T dy, T mask, T ratio,
                             T training, T dx) {
  const char *k = "dropout_grad";
  return guard(ctx, k, [&]() -> amprt_status {
    auto cpu = [&] {
      return amprt_dropout_grad(ctx, dy, mask, ratio, training, dx);
    };
    if (checkFloat(ctx, k, "dy", dy) ||
        checkDtype(ctx, k, "mask", mask, AMPRT_BOOL) ||
        checkShape(ctx, k, "mask", mask, shapeOf(dy)) ||
        checkFloat(ctx, k, "dx", dx) ||
        checkShape(ctx, k, "dx", dx, shapeOf(dy)))
      return onHost(ctx, cpu);
    int64_t n = numel(dy);
    DeferredCheck *rec;
    bool ok;
    AMPRT_TRY(dropoutChecks(ctx, k, ratio, training, n, rec, ok));
    if (!ok)
      return onHost(ctx, cpu);
    if (n == 0)
      return AMPRT_OK;
    dropoutGradKernel<<<gridFor(n, kThreads, 4), kThreads, 0, stream(ctx)>>>(
        dy->data, dy->dtype, static_cast<const uint8_t *>(mask->data), dx->data,
        dx->dtype, n, dropoutScalars(ratio, training), rec, k);
    AMPRT_CUDA_LAUNCHED(ctx, k);
    return AMPRT_OK;
  });
}

//===----------------------------------------------------------------------===//
// reshape, inplace_accumulate
//===----------------------------------------------------------------------===//

amprt_status cudaReshape(amprt_context *ctx, T x, T y) {
  const char *k = "reshape";
  return guard(ctx, k, [&]() -> amprt_status {
    if (checkTensor(ctx, k, "x", x) || checkDtype(ctx, k, "y", y, x->dtype) ||
        checkNumel(ctx, k, "y", y, numel(x)))
      return onHost(ctx, [&] { return amprt_reshape(ctx, x, y); });
    return copyBytes(ctx, k, y->data, x->data,
                     size_t(numel(x)) * amprt_dtype_size(x->dtype));
  });
}

__global__ void accumulateKernel(void *buf, int32_t db, const void *v,
                                 int32_t dv, const uint8_t *overwrite,
                                 uint8_t *updated, int64_t n) {
  bool ow = ldFlag(overwrite, false);
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    float x = loadF(v, dv, i);
    storeF(buf, db, i, ow ? x : loadF(buf, db, i) + x);
  }
  if (updated && blockIdx.x == 0 && threadIdx.x == 0)
    *updated = 1;
}

amprt_status cudaInplaceAccumulate(amprt_context *ctx, T buffer, T value,
                                   T overwrite, T updated) {
  const char *k = "inplace_accumulate";
  return guard(ctx, k, [&]() -> amprt_status {
    if (checkFloat(ctx, k, "buffer", buffer) ||
        checkFloat(ctx, k, "value", value) ||
        checkNumel(ctx, k, "value", value, numel(buffer)) ||
        checkDtype(ctx, k, "overwrite", overwrite, AMPRT_BOOL, true) ||
        checkDtype(ctx, k, "updated", updated, AMPRT_BOOL, true) ||
        (overwrite && checkNumel(ctx, k, "overwrite", overwrite, 1)) ||
        (updated && checkNumel(ctx, k, "updated", updated, 1)))
      return onHost(ctx, [&] {
        return amprt_inplace_accumulate(ctx, buffer, value, overwrite, updated);
      });
    int64_t n = numel(buffer);
    accumulateKernel<<<gridFor(n, kThreads, 4), kThreads, 0, stream(ctx)>>>(
        buffer->data, buffer->dtype, value->data, value->dtype,
        overwrite ? static_cast<const uint8_t *>(overwrite->data) : nullptr,
        updated ? static_cast<uint8_t *>(updated->data) : nullptr, n);
    AMPRT_CUDA_LAUNCHED(ctx, k);
    return AMPRT_OK;
  });
}

} // namespace

void amprt::cuda::registerShape(KernelTable &t) {
  t.transpose = cudaTranspose;
  t.expand = cudaExpand;
  t.pad = cudaPad;
  t.gather = cudaGather;
  t.gather_grad = cudaGatherGrad;
  t.concat = cudaConcat;
  t.slice = cudaSlice;
  t.slice_grad = cudaSliceGrad;
  t.dropout = cudaDropout;
  t.dropout_grad = cudaDropoutGrad;
  t.reshape = cudaReshape;
  t.inplace_accumulate = cudaInplaceAccumulate;
}

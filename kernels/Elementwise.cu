//===- Elementwise.cu - cast, arithmetic, activations, fill, copies -------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// The CUDA versions of Convert.cpp's cast (every dtype pair, the same
// rounding: RNE, f64 -> f16/bf16 through an f32 rounded to odd, saturating
// float -> integer), the float binary ops add/sub/mul/div with numpy
// broadcasting (integer ones stay on the CPU), relu, gelu and their
// gradients, fill, identity/reshape (a device copy) and inplace_accumulate.
// Float math is f32 with one rounding into the output dtype.
//
//===----------------------------------------------------------------------===//

#include "Common.cuh"

#include <cmath>

using namespace amprt;
using namespace amprt::cuda;

namespace {

constexpr int kThreads = 256;

//===----------------------------------------------------------------------===//
// cast
//===----------------------------------------------------------------------===//

__host__ __device__ inline bool isFloatDt(int32_t dt) {
  return dt == AMPRT_F32 || dt == AMPRT_F16 || dt == AMPRT_BF16 ||
         dt == AMPRT_F64;
}

/// f64 -> f32 rounded to odd (Convert.cpp's f64ToF32Odd).

__host__ __device__ inline bool isLow(int32_t dt) {
  return dt == AMPRT_F32 || dt == AMPRT_F16 || dt == AMPRT_BF16;
}

__global__ void castKernel(const void *x, int32_t s, void *y, int32_t d,
                           int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    if (isLow(s) && isLow(d))
      storeF(y, d, i, loadF(x, s, i)); // f16/bf16 -> f32 is exact: one rounding
    else if (isFloatDt(s))
      writeD(y, d, i, readD(x, s, i));
    else if (isFloatDt(d))
      writeD(y, d, i, double(readI(x, s, i)));
    else
      writeI(y, d, i, readI(x, s, i));
  }
}

/// Device copy of `bytes` unless source and destination are one buffer.
amprt_status copyBytes(amprt_context *ctx, const char *k, void *dst,
                       const void *src, size_t bytes) {
  if (bytes && dst != src)
    AMPRT_CUDA(ctx, k,
               cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice,
                               stream(ctx)));
  return AMPRT_OK;
}

amprt_status cudaCast(amprt_context *ctx, T x, T y) {
  const char *k = "cast";
  return guard(ctx, k, [&]() -> amprt_status {
    if (checkTensor(ctx, k, "x", x) || checkTensor(ctx, k, "y", y) ||
        checkShape(ctx, k, "y", y, shapeOf(x)))
      return onHost(ctx, [&] { return amprt_cast(ctx, x, y); });
    int64_t n = numel(x);
    if (x->dtype == y->dtype)
      return copyBytes(ctx, k, y->data, x->data,
                       size_t(n) * amprt_dtype_size(x->dtype));
    if (n == 0)
      return AMPRT_OK;
    castKernel<<<gridFor(n, kThreads, 4), kThreads, 0, stream(ctx)>>>(
        x->data, x->dtype, y->data, y->dtype, n);
    AMPRT_CUDA_LAUNCHED(ctx, k);
    return AMPRT_OK;
  });
}

//===----------------------------------------------------------------------===//
// Binary float ops with broadcasting
//===----------------------------------------------------------------------===//

enum class Bin : int { Add, Sub, Mul, Div };

__device__ __forceinline__ float binOp(Bin op, float a, float b) {
  switch (op) {
  case Bin::Add:
    return a + b;
  case Bin::Sub:
    return a - b;
  case Bin::Mul:
    return a * b;
  default:
    return a / b;
  }
}

/// mode 0: same shapes; 1: b is one element; 2: general broadcast.
__global__ void binaryKernel(Bin op, int mode, Bcast bc, const void *a,
                             int32_t da, const void *b, int32_t db, void *y,
                             int32_t dy, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t oa = i, ob = i;
    if (mode == 1) {
      ob = 0;
    } else if (mode == 2) {
      int64_t off[2];
      bcastOffsets<2>(bc, i, off);
      oa = off[0];
      ob = off[1];
    }
    storeF(y, dy, i, binOp(op, loadF(a, da, oa), loadF(b, db, ob)));
  }
}

template <Bin Op, amprt_status (*Cpu)(amprt_context *, T, T, T)>
amprt_status cudaBinary(amprt_context *ctx, T a, T b, T y) {
  static const char *names[] = {"add", "sub", "mul", "div"};
  const char *k = names[int(Op)];
  return guard(ctx, k, [&]() -> amprt_status {
    Shape so;
    if (checkTensor(ctx, k, "a", a) || checkTensor(ctx, k, "b", b) ||
        checkTensor(ctx, k, "y", y) ||
        !broadcastShapes({shapeOf(a), shapeOf(b)}, so) ||
        checkShape(ctx, k, "y", y, so) || !isLowOrF32(a->dtype) ||
        !isLowOrF32(b->dtype) || !isLowOrF32(y->dtype))
      return onHost(ctx, [&] { return Cpu(ctx, a, b, y); }); // + integers
    int64_t n = numel(so);
    if (n == 0)
      return AMPRT_OK;
    Shape sa = shapeOf(a), sb = shapeOf(b);
    int mode = sa == so && sb == so ? 0 : sa == so && numel(sb) == 1 ? 1 : 2;
    Bcast bc;
    if (mode == 2)
      bc = makeBcast(so, {sa, sb});
    binaryKernel<<<gridFor(n, kThreads, 4), kThreads, 0, stream(ctx)>>>(
        Op, mode, bc, a->data, a->dtype, b->data, b->dtype, y->data, y->dtype,
        n);
    AMPRT_CUDA_LAUNCHED(ctx, k);
    return AMPRT_OK;
  });
}

//===----------------------------------------------------------------------===//
// Activations and their gradients (Elementwise.cpp's formulas)
//===----------------------------------------------------------------------===//

enum class Act : int { Relu, Gelu };

constexpr float kSqrt1_2 = 0.70710678118654752440f;
constexpr float kInvSqrt2Pi = 0.39894228040143267794f;

__global__ void actKernel(Act act, const void *x, int32_t dx, void *y,
                          int32_t dy, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    float v = loadF(x, dx, i);
    float r = act == Act::Relu ? (v > 0.f ? v : 0.f)
                               : 0.5f * v * (1.f + erff(v * kSqrt1_2));
    storeF(y, dy, i, r);
  }
}

__global__ void actGradKernel(Act act, const void *g, int32_t dg,
                              const void *x, int32_t dx, void *out,
                              int32_t dout, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    float gv = loadF(g, dg, i), v = loadF(x, dx, i);
    float r = act == Act::Relu
                  ? (v > 0.f ? gv : 0.f)
                  : gv * (0.5f * (1.f + erff(v * kSqrt1_2)) +
                          v * kInvSqrt2Pi * expf(-0.5f * v * v));
    storeF(out, dout, i, r);
  }
}

template <Act A, amprt_status (*Cpu)(amprt_context *, T, T)>
amprt_status cudaUnary(amprt_context *ctx, T x, T y) {
  const char *k = A == Act::Relu ? "relu" : "gelu";
  return guard(ctx, k, [&]() -> amprt_status {
    if (checkFloat(ctx, k, "x", x) || checkFloat(ctx, k, "y", y) ||
        checkShape(ctx, k, "y", y, shapeOf(x)))
      return onHost(ctx, [&] { return Cpu(ctx, x, y); });
    int64_t n = numel(x);
    if (n == 0)
      return AMPRT_OK;
    actKernel<<<gridFor(n, kThreads, 4), kThreads, 0, stream(ctx)>>>(
        A, x->data, x->dtype, y->data, y->dtype, n);
    AMPRT_CUDA_LAUNCHED(ctx, k);
    return AMPRT_OK;
  });
}

template <Act A, amprt_status (*Cpu)(amprt_context *, T, T, T)>
amprt_status cudaGrad(amprt_context *ctx, T dy, T x, T dx) {
  const char *k = A == Act::Relu ? "relu_grad" : "gelu_grad";
  return guard(ctx, k, [&]() -> amprt_status {
    if (checkFloat(ctx, k, "dy", dy) || checkFloat(ctx, k, "x", x) ||
        checkFloat(ctx, k, "dx", dx) ||
        checkShape(ctx, k, "x", x, shapeOf(dy)) ||
        checkShape(ctx, k, "dx", dx, shapeOf(dy)))
      return onHost(ctx, [&] { return Cpu(ctx, dy, x, dx); });
    int64_t n = numel(dy);
    if (n == 0)
      return AMPRT_OK;
    actGradKernel<<<gridFor(n, kThreads, 4), kThreads, 0, stream(ctx)>>>(
        A, dy->data, dy->dtype, x->data, x->dtype, dx->data, dx->dtype, n);
    AMPRT_CUDA_LAUNCHED(ctx, k);
    return AMPRT_OK;
  });
}

//===----------------------------------------------------------------------===//
// fill, identity, reshape, inplace_accumulate
//===----------------------------------------------------------------------===//

__global__ void fillKernel(void *y, int32_t es, uint64_t pattern,
                           int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    switch (es) {
    case 8:
      static_cast<uint64_t *>(y)[i] = pattern;
      break;
    case 4:
      static_cast<uint32_t *>(y)[i] = uint32_t(pattern);
      break;
    case 2:
      static_cast<uint16_t *>(y)[i] = uint16_t(pattern);
      break;
    default:
      static_cast<uint8_t *>(y)[i] = uint8_t(pattern);
    }
  }
}

amprt_status cudaFill(amprt_context *ctx, T y, double value) {
  const char *k = "fill";
  return guard(ctx, k, [&]() -> amprt_status {
    if (checkTensor(ctx, k, "y", y))
      return onHost(ctx, [&] { return amprt_fill(ctx, y, value); });
    int64_t n = numel(y);
    if (n == 0)
      return AMPRT_OK;
    // The element's bytes, computed on the host as the CPU kernel does:
    // f16/bf16 with one rounding from double, the rest as setScalar.
    uint64_t pattern = 0;
    if (y->dtype == AMPRT_F16)
      pattern = f32ToF16(f64ToF32Odd(value));
    else if (y->dtype == AMPRT_BF16)
      pattern = f32ToBf16(f64ToF32Odd(value));
    else {
      amprt_tensor one = {&pattern, y->dtype, 0, nullptr};
      setScalar(&one, value);
    }
    int32_t es = int32_t(amprt_dtype_size(y->dtype));
    fillKernel<<<gridFor(n, kThreads, 4), kThreads, 0, stream(ctx)>>>(
        y->data, es, pattern, n);
    AMPRT_CUDA_LAUNCHED(ctx, k);
    return AMPRT_OK;
  });
}

amprt_status cudaIdentity(amprt_context *ctx, T x, T y) {
  const char *k = "identity";
  return guard(ctx, k, [&]() -> amprt_status {
    if (checkTensor(ctx, k, "x", x) || checkDtype(ctx, k, "y", y, x->dtype) ||
        checkShape(ctx, k, "y", y, shapeOf(x)))
      return onHost(ctx, [&] { return amprt_identity(ctx, x, y); });
    return copyBytes(ctx, k, y->data, x->data,
                     size_t(numel(x)) * amprt_dtype_size(x->dtype));
  });
}

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
        return amprt_inplace_accumulate(ctx, buffer, value, overwrite,
                                        updated);
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

void amprt::cuda::registerElementwise(KernelTable &t) {
  t.cast = cudaCast;
  t.add = cudaBinary<Bin::Add, amprt_add>;
  t.sub = cudaBinary<Bin::Sub, amprt_sub>;
  t.mul = cudaBinary<Bin::Mul, amprt_mul>;
  t.div = cudaBinary<Bin::Div, amprt_div>;
  t.relu = cudaUnary<Act::Relu, amprt_relu>;
  t.gelu = cudaUnary<Act::Gelu, amprt_gelu>;
  t.relu_grad = cudaGrad<Act::Relu, amprt_relu_grad>;
  t.gelu_grad = cudaGrad<Act::Gelu, amprt_gelu_grad>;
  t.fill = cudaFill;
  t.identity = cudaIdentity;
  t.reshape = cudaReshape;
  t.inplace_accumulate = cudaInplaceAccumulate;
}

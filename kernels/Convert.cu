//===- Convert.cu - cast on the device ------------------------------------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// The CUDA version of Convert.cpp's cast: every dtype pair with the CPU's
// rounding (RNE, f64 -> f16/bf16 through an f32 rounded to odd, saturating
// float -> integer), the conversions being amp/Runtime/Math/ElementAccess.h's
// own; f32 <-> f16/bf16 (every mixed-precision step's weight and gradient
// casts) with the dtypes fixed at compile time, in packets when aligned.
//
//===----------------------------------------------------------------------===//

#include "Common.cuh"

using namespace amprt;
using namespace amprt::cuda;

namespace {

constexpr int kThreads = 256;

__host__ __device__ inline bool isFloatDt(int32_t dt) {
  return dt == AMPRT_F32 || dt == AMPRT_F16 || dt == AMPRT_BF16 ||
         dt == AMPRT_F64;
}

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

/// castKernel for one pair of f32/f16/bf16 dtypes known at compile time:
/// the per-element dtype dispatch folds away (the weight and gradient casts
/// of every mixed-precision step take this path).
template <int32_t S, int32_t D>
__global__ void floatCastKernel(const void *x, void *y, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    storeF(y, D, i, loadF(x, S, i));
}

/// The identity on f32: packetMapKernel<S, D> with it is the cast S -> D.
struct Widened {
  __device__ float operator()(float v) const { return v; }
};

/// Launches a cast kernel for dtypes S -> D known at compile time: in
/// packets when both pointers allow, else one element per iteration.
template <int32_t S, int32_t D>
void launchFloatCastAs(cudaStream_t st, const void *x, void *y, int64_t n) {
  if (packetAligned(x, S) && packetAligned(y, D))
    packetMapKernel<S, S, D, 1>
        <<<packetGrid(n), 256, 0, st>>>(x, nullptr, y, n, Widened());
  else
    floatCastKernel<S, D>
        <<<gridFor(n, kThreads, 4), kThreads, 0, st>>>(x, y, n);
}

/// Launches a typed cast kernel when s -> d is f32 to or from f16 or bf16;
/// false otherwise (the generic kernel takes the other pairs).
bool launchFloatCast(amprt_context *ctx, const void *x, int32_t s, void *y,
                     int32_t d, int64_t n) {
  cudaStream_t st = stream(ctx);
  auto pair = [&](int32_t a, int32_t b) { return s == a && d == b; };
  if (pair(AMPRT_F32, AMPRT_F16))
    launchFloatCastAs<AMPRT_F32, AMPRT_F16>(st, x, y, n);
  else if (pair(AMPRT_F16, AMPRT_F32))
    launchFloatCastAs<AMPRT_F16, AMPRT_F32>(st, x, y, n);
  else if (pair(AMPRT_F32, AMPRT_BF16))
    launchFloatCastAs<AMPRT_F32, AMPRT_BF16>(st, x, y, n);
  else if (pair(AMPRT_BF16, AMPRT_F32))
    launchFloatCastAs<AMPRT_BF16, AMPRT_F32>(st, x, y, n);
  else
    return false;
  return true;
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
    if (!launchFloatCast(ctx, x->data, x->dtype, y->data, y->dtype, n))
      castKernel<<<gridFor(n, kThreads, 4), kThreads, 0, stream(ctx)>>>(
          x->data, x->dtype, y->data, y->dtype, n);
    AMPRT_CUDA_LAUNCHED(ctx, k);
    return AMPRT_OK;
  });
}

} // namespace

void amprt::cuda::registerConvert(KernelTable &t) { t.cast = cudaCast; }

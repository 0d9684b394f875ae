//===- Random.cu - RandomUniform, RandomNormal and Bernoulli --------------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// The CUDA versions of Random.cpp's generators, one thread per element of
// the same counter-based stream (uniformAt, normalAt, bernoulliAt of
// amp/Runtime/Math/Random.h), so random_uniform and bernoulli give the
// CPU's bits and random_normal differs at most where the device's double
// log, sqrt or cos differs from the host's in the last bit. Every kernel
// reads the context's random offset on the device when it runs (a recorded
// graph draws anew after each advance). bernoulli checks p on the device
// first: immediate data checks wait for the stream, and a p outside [0, 1] is
// reported by the CPU code, nothing written; deferred ones record it for the
// next wait, and nothing is written either.
//
//===----------------------------------------------------------------------===//

#include "Common.cuh"
#include "amp/Runtime/Math/Random.h"

using namespace amprt;
using namespace amprt::cuda;

namespace {

constexpr int kThreads = 256;

enum class Gen { Uniform, Normal };

template <Gen G>
__global__ void generateKernel(void *y, int32_t dy, int64_t n, uint64_t seed,
                               const uint64_t *offset, double a, double b) {
  uint64_t key = streamKey(seed, *offset);
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    writeD(y, dy, i,
           G == Gen::Uniform ? uniformAt(key, uint64_t(i), a, b)
                             : normalAt(key, uint64_t(i), a, b));
}

template <Gen G>
amprt_status launchGenerate(amprt_context *ctx, const char *k, T y,
                            uint64_t seed, double a, double b) {
  int64_t n = numel(y);
  if (n == 0)
    return AMPRT_OK;
  generateKernel<G><<<gridFor(n, kThreads, 4), kThreads, 0, stream(ctx)>>>(
      y->data, y->dtype, n, seed, randomOffset(ctx), a, b);
  AMPRT_CUDA_LAUNCHED(ctx, k);
  return AMPRT_OK;
}

amprt_status cudaRandomUniform(amprt_context *ctx, T y, uint64_t seed,
                               double low, double high) {
  const char *k = "random_uniform";
  return guard(ctx, k, [&]() -> amprt_status {
    if (checkRandomUniform(ctx, y, low, high))
      return onHost(
          ctx, [&] { return amprt_random_uniform(ctx, y, seed, low, high); });
    return launchGenerate<Gen::Uniform>(ctx, k, y, seed, low, high);
  });
}

amprt_status cudaRandomNormal(amprt_context *ctx, T y, uint64_t seed,
                              double mean, double scale) {
  const char *k = "random_normal";
  return guard(ctx, k, [&]() -> amprt_status {
    if (checkRandomNormal(ctx, y, mean, scale))
      return onHost(
          ctx, [&] { return amprt_random_normal(ctx, y, seed, mean, scale); });
    return launchGenerate<Gen::Normal>(ctx, k, y, seed, mean, scale);
  });
}

/// The smallest i with p[i] outside [0, 1] (NaN included) goes to *status.
__global__ void checkProbabilitiesKernel(const void *p, int32_t dp, int64_t n,
                                         int64_t *status) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    float v = loadF(p, dp, i);
    if (!(v >= 0.f && v <= 1.f))
      atomicMin(reinterpret_cast<unsigned long long *>(status),
                static_cast<unsigned long long>(i));
  }
}

/// Random.cpp's words (bernoulli) for the bad probability at `bad`.
struct ProbabilityOutside {
  const void *p;
  int32_t dp;
  __device__ bool operator()(int64_t bad, DeferredCheck &c) const {
    c.message = kProbabilityOutside;
    c.real = double(loadF(p, dp, bad));
    c.at = bad;
    return true;
  }
};

/// y[i] = a draw of p[i]; nothing when the deferred check failed.
__global__ void bernoulliKernel(const void *p, int32_t dp, void *y, int32_t dy,
                                int64_t n, uint64_t seed,
                                const uint64_t *offset, const int64_t *failed) {
  if (checkFailed(failed))
    return;
  uint64_t key = streamKey(seed, *offset);
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    writeD(y, dy, i, bernoulliAt(key, i, loadF(p, dp, i)));
}

amprt_status cudaBernoulli(amprt_context *ctx, T p, T y, uint64_t seed) {
  const char *k = "bernoulli";
  return guard(ctx, k, [&]() -> amprt_status {
    auto cpu = [&] { return amprt_bernoulli(ctx, p, y, seed); };
    if (checkBernoulli(ctx, p, y))
      return onHost(ctx, cpu);
    int64_t n = numel(p);
    if (n == 0)
      return AMPRT_OK;
    cudaStream_t s = stream(ctx);
    AMPRT_TRY(clearStatus(ctx, k));
    checkProbabilitiesKernel<<<gridFor(n, kThreads, 4), kThreads, 0, s>>>(
        p->data, p->dtype, n, state(ctx).devStatus);
    AMPRT_CUDA_LAUNCHED(ctx, k);
    int64_t bad;
    AMPRT_TRY(
        statusOrDefer(ctx, k, ProbabilityOutside{p->data, p->dtype}, bad));
    if (bad != kNoError)
      return onHost(ctx, cpu); // the CPU code words the error
    bernoulliKernel<<<gridFor(n, kThreads, 4), kThreads, 0, s>>>(
        p->data, p->dtype, y->data, y->dtype, n, seed, randomOffset(ctx),
        deferChecks(ctx) ? state(ctx).devStatus : nullptr);
    AMPRT_CUDA_LAUNCHED(ctx, k);
    return AMPRT_OK;
  });
}

} // namespace

void amprt::cuda::registerRandom(KernelTable &t) {
  t.random_uniform = cudaRandomUniform;
  t.random_normal = cudaRandomNormal;
  t.bernoulli = cudaBernoulli;
}

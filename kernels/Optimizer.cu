//===- Optimizer.cu - fused FP32 SGD and AdamW gated on the device --------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// One launch updates every parameter of the call (a device table of
// tensors, one chunk per block, as MultiTensor.cu). The `update` flag, the
// learning rate and the step are read on the device: with update false no
// block writes anything, so weights and states stay bit-identical. A
// one-thread tail kernel, queued after the update, writes `updated` and
// (SGD) increments `step`, so no block reads a step that another has
// already advanced. The arithmetic is the CPU's own (sgdStep, adamwScalars,
// adamwStep of amp/Runtime/Math/Optimizer.h, compiled without FMA
// contraction), so results match the CPU bit for bit up to the device's pow
// in the AdamW bias corrections.
//
//===----------------------------------------------------------------------===//

#include "Common.cuh"
#include "amp/Runtime/Math/Optimizer.h"

#include <vector>

using namespace amprt;
using namespace amprt::cuda;

namespace {

constexpr int kThreads = 256;
constexpr int64_t kChunk = 4096;

struct Entry {
  float *p;
  const void *g;
  float *s1; // SGD: momentum buffer (or NULL); AdamW: m1
  float *s2; // AdamW: m2
  int64_t n;
  int64_t firstChunk;
  int32_t gDt;
};

__device__ int findEntry(const Entry *tab, int count, int64_t chunk) {
  int lo = 0, hi = count - 1;
  while (lo < hi) {
    int mid = (lo + hi + 1) / 2;
    if (tab[mid].firstChunk <= chunk)
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}

struct SgdArgs {
  const float *lr;
  const int64_t *step; // NULL: not first
  const uint8_t *update;
  float momentum, dampening, weightDecay;
  int32_t nesterov;
};

__global__ void sgdKernel(const Entry *tab, int count, SgdArgs a) {
  if (!ldFlag(a.update, true))
    return;
  int64_t chunk = blockIdx.x;
  const Entry e = tab[findEntry(tab, count, chunk)];
  int64_t begin = (chunk - e.firstChunk) * kChunk;
  int64_t end = min(e.n, begin + kChunk);
  SgdStep s = {*a.lr,         a.momentum,      a.dampening,
               a.weightDecay, a.nesterov != 0, a.step && *a.step == 0};
  for (int64_t j = begin + threadIdx.x; j < end; j += blockDim.x)
    e.p[j] =
        sgdStep(s, e.p[j], loadF(e.g, e.gDt, j), e.s1 ? e.s1 + j : nullptr);
}

/// After the update: updated = flag; step += 1 when applied.
__global__ void tailKernel(const uint8_t *update, uint8_t *updated,
                           int64_t *step) {
  bool apply = ldFlag(update, true);
  if (updated)
    *updated = apply;
  if (step && apply)
    ++*step;
}

struct AdamArgs {
  const float *lr;
  const int64_t *step;
  const uint8_t *update;
  float beta1, beta2, epsilon, weightDecay;
  int32_t mode, correctBias;
};

__global__ void adamwKernel(const Entry *tab, int count, AdamArgs a) {
  if (!ldFlag(a.update, true))
    return;
  // The call's scalars (the bias corrections: pow in double), once per
  // block.
  __shared__ AdamWStep sh;
  if (threadIdx.x == 0)
    sh = adamwScalars(*a.lr, *a.step, a.beta1, a.beta2, a.epsilon,
                      a.weightDecay, a.mode, a.correctBias);
  __syncthreads();
  const AdamWStep s = sh;
  int64_t chunk = blockIdx.x;
  const Entry e = tab[findEntry(tab, count, chunk)];
  int64_t begin = (chunk - e.firstChunk) * kChunk;
  int64_t end = min(e.n, begin + kChunk);
  for (int64_t j = begin + threadIdx.x; j < end; j += blockDim.x) {
    float p = e.p[j], m = e.s1[j], v = e.s2[j];
    adamwStep(s, loadF(e.g, e.gDt, j), p, m, v);
    e.s1[j] = m;
    e.s2[j] = v;
    e.p[j] = p;
  }
}

/// The device table: one entry per non-empty tensor.
int64_t buildTable(int64_t n, T params, T grads, T s1, T s2,
                   std::vector<Entry> &tab) {
  int64_t chunks = 0;
  for (int64_t i = 0; i < n; ++i) {
    int64_t m = numel(&params[i]);
    if (m == 0)
      continue;
    tab.push_back({static_cast<float *>(params[i].data), grads[i].data,
                   s1 ? static_cast<float *>(s1[i].data) : nullptr,
                   s2 ? static_cast<float *>(s2[i].data) : nullptr, m, chunks,
                   grads[i].dtype});
    chunks += (m + kChunk - 1) / kChunk;
  }
  return chunks;
}

template <typename P> P *dataOf(T t) {
  return t ? static_cast<P *>(t->data) : nullptr;
}

amprt_status cudaSgd(amprt_context *ctx, int64_t n, T params, T grads,
                     T momentum_bufs, T lr, T step, float momentum,
                     float dampening, float weight_decay, int32_t nesterov,
                     T update, T updated) {
  const char *k = "sgd";
  return guard(ctx, k, [&]() -> amprt_status {
    bool useMomentum = momentum != 0.f;
    if (checkSgd(ctx, n, params, grads, momentum_bufs, lr, step, momentum,
                 dampening, nesterov, update, updated))
      return onHost(ctx, [&] {
        return amprt_sgd(ctx, n, params, grads, momentum_bufs, lr, step,
                         momentum, dampening, weight_decay, nesterov, update,
                         updated);
      });
    std::vector<Entry> tab;
    int64_t chunks = buildTable(
        n, params, grads, useMomentum ? momentum_bufs : nullptr, nullptr, tab);
    if (chunks > INT32_MAX)
      return ctx->fail(AMPRT_ERR_UNSUPPORTED, "%s: %lld chunks in one call", k,
                       (long long)chunks);
    Scratch dtab;
    if (!tab.empty()) {
      AMPRT_TRY(upload(ctx, k, tab.data(), tab.size() * sizeof(Entry), dtab));
      SgdArgs a = {dataOf<const float>(lr),
                   dataOf<const int64_t>(step),
                   dataOf<const uint8_t>(update),
                   momentum,
                   dampening,
                   weight_decay,
                   nesterov};
      sgdKernel<<<unsigned(chunks), kThreads, 0, stream(ctx)>>>(
          static_cast<const Entry *>(dtab.p), int(tab.size()), a);
      AMPRT_CUDA_LAUNCHED(ctx, k);
    }
    tailKernel<<<1, 1, 0, stream(ctx)>>>(dataOf<const uint8_t>(update),
                                         dataOf<uint8_t>(updated),
                                         dataOf<int64_t>(step));
    AMPRT_CUDA_LAUNCHED(ctx, k);
    return AMPRT_OK;
  });
}

amprt_status cudaAdamw(amprt_context *ctx, int64_t n, T params, T grads, T m1,
                       T m2, T lr, T step, float beta1, float beta2,
                       float epsilon, float weight_decay, int32_t mode,
                       int32_t correct_bias, T update, T updated) {
  const char *k = "adamw";
  return guard(ctx, k, [&]() -> amprt_status {
    if (checkAdamw(ctx, n, params, grads, m1, m2, lr, step, mode, update,
                   updated))
      return onHost(ctx, [&] {
        return amprt_adamw(ctx, n, params, grads, m1, m2, lr, step, beta1,
                           beta2, epsilon, weight_decay, mode, correct_bias,
                           update, updated);
      });
    std::vector<Entry> tab;
    int64_t chunks = buildTable(n, params, grads, m1, m2, tab);
    if (chunks > INT32_MAX)
      return ctx->fail(AMPRT_ERR_UNSUPPORTED, "%s: %lld chunks in one call", k,
                       (long long)chunks);
    Scratch dtab;
    if (!tab.empty()) {
      AMPRT_TRY(upload(ctx, k, tab.data(), tab.size() * sizeof(Entry), dtab));
      AdamArgs a = {dataOf<const float>(lr),
                    dataOf<const int64_t>(step),
                    dataOf<const uint8_t>(update),
                    beta1,
                    beta2,
                    epsilon,
                    weight_decay,
                    mode,
                    correct_bias};
      adamwKernel<<<unsigned(chunks), kThreads, 0, stream(ctx)>>>(
          static_cast<const Entry *>(dtab.p), int(tab.size()), a);
      AMPRT_CUDA_LAUNCHED(ctx, k);
    }
    tailKernel<<<1, 1, 0, stream(ctx)>>>(dataOf<const uint8_t>(update),
                                         dataOf<uint8_t>(updated), nullptr);
    AMPRT_CUDA_LAUNCHED(ctx, k);
    return AMPRT_OK;
  });
}

} // namespace

void amprt::cuda::registerOptimizer(KernelTable &t) {
  t.sgd = cudaSgd;
  t.adamw = cudaAdamw;
}

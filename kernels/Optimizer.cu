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
// already advanced. The arithmetic is Optimizer.cpp's, expression by
// expression (compiled without FMA contraction), so results match the CPU
// bit for bit up to the device's pow in the AdamW bias corrections.
//
//===----------------------------------------------------------------------===//

#include "Common.cuh"

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
  float rate = *a.lr;
  bool first = a.step && *a.step == 0;
  for (int64_t j = begin + threadIdx.x; j < end; j += blockDim.x) {
    float pj = e.p[j];
    float d = loadF(e.g, e.gDt, j) + a.weightDecay * pj;
    if (e.s1) {
      float b = first ? d : a.momentum * e.s1[j] + (1.f - a.dampening) * d;
      e.s1[j] = b;
      d = a.nesterov ? d + a.momentum * b : b;
    }
    e.p[j] = pj - rate * d;
  }
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
  __shared__ float sh[3];
  float rate = *a.lr;
  if (threadIdx.x == 0) {
    // As ONNX Runtime (and Optimizer.cpp): corrections from pow in double,
    // kept as float; none before step 1.
    int64_t t = *a.step;
    float bc1 = 1.f, bc2 = 1.f, rc = rate;
    if (a.correctBias && t > 0) {
      bc1 = 1.f - float(pow(double(a.beta1), double(t)));
      bc2 = 1.f - float(pow(double(a.beta2), double(t)));
      rc *= sqrtf(bc2) / bc1;
    }
    sh[0] = bc1;
    sh[1] = bc2;
    sh[2] = rc;
  }
  __syncthreads();
  float bc1 = sh[0], bc2 = sh[1], rateCorrected = sh[2];
  int64_t chunk = blockIdx.x;
  const Entry e = tab[findEntry(tab, count, chunk)];
  int64_t begin = (chunk - e.firstChunk) * kChunk;
  int64_t end = min(e.n, begin + kChunk);
  const float b1 = a.beta1, b2 = a.beta2, wd = a.weightDecay;
  for (int64_t j = begin + threadIdx.x; j < end; j += blockDim.x) {
    float gj = loadF(e.g, e.gDt, j);
    float p = e.p[j];
    if (a.mode == 0)
      p -= p * rate * wd;
    else if (a.mode == 2)
      gj += wd * p;
    float m = b1 * e.s1[j] + (1.f - b1) * gj;
    float v = b2 * e.s2[j] + (1.f - b2) * gj * gj;
    if (a.mode == 1) {
      p -= rateCorrected * m / (sqrtf(v) + a.epsilon);
      p -= rate * wd * p;
    } else {
      float denom = sqrtf(v / bc2) + a.epsilon;
      p -= (rate * m) / (bc1 * denom);
    }
    e.s1[j] = m;
    e.s2[j] = v;
    e.p[j] = p;
  }
}

/// Optimizer.cpp's checkGroup; non-OK means "let the CPU report it".
amprt_status
checkGroup(amprt_context *ctx, const char *k, int64_t n, T params, T grads,
           std::initializer_list<std::pair<const char *, T>> states) {
  if (n < 0 || (n > 0 && (!params || !grads)))
    return AMPRT_ERR_INVALID_ARGUMENT;
  for (auto &s : states)
    if (n > 0 && !s.second)
      return AMPRT_ERR_INVALID_ARGUMENT;
  for (int64_t i = 0; i < n; ++i) {
    AMPRT_TRY(checkDtype(ctx, k, "params[i]", &params[i], AMPRT_F32));
    AMPRT_TRY(checkFloat(ctx, k, "grads[i]", &grads[i]));
    Shape sp = shapeOf(&params[i]);
    if (shapeOf(&grads[i]) != sp)
      return AMPRT_ERR_SHAPE;
    for (auto &s : states) {
      AMPRT_TRY(checkDtype(ctx, k, s.first, &s.second[i], AMPRT_F32));
      if (shapeOf(&s.second[i]) != sp)
        return AMPRT_ERR_SHAPE;
    }
  }
  return AMPRT_OK;
}

amprt_status checkScalar(amprt_context *ctx, const char *k, const char *what,
                         T t, int32_t dt, bool optional = false) {
  AMPRT_TRY(checkDtype(ctx, k, what, t, dt, optional));
  if (t)
    AMPRT_TRY(checkNumel(ctx, k, what, t, 1));
  return AMPRT_OK;
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
    amprt_status bad = useMomentum
                           ? checkGroup(ctx, k, n, params, grads,
                                        {{"momentum_bufs", momentum_bufs}})
                           : checkGroup(ctx, k, n, params, grads, {});
    if (bad || checkScalar(ctx, k, "lr", lr, AMPRT_F32) ||
        checkScalar(ctx, k, "step", step, AMPRT_I64, true) ||
        checkScalar(ctx, k, "update", update, AMPRT_BOOL, true) ||
        checkScalar(ctx, k, "updated", updated, AMPRT_BOOL, true) ||
        (nesterov && (momentum <= 0.f || dampening != 0.f)))
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
    if (checkGroup(ctx, k, n, params, grads, {{"m1", m1}, {"m2", m2}}) ||
        checkScalar(ctx, k, "lr", lr, AMPRT_F32) ||
        checkScalar(ctx, k, "step", step, AMPRT_I64) ||
        checkScalar(ctx, k, "update", update, AMPRT_BOOL, true) ||
        checkScalar(ctx, k, "updated", updated, AMPRT_BOOL, true) || mode < 0 ||
        mode > 2)
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

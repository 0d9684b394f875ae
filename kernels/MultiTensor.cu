//===- MultiTensor.cu - fused unscale, finite check and gate --------------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// multi_tensor_unscale / multi_tensor_all_finite /
// multi_tensor_unscale_check: one launch over every tensor of the call. A
// table of the tensors goes to the device; each block takes a chunk of one
// tensor (found by binary search over the chunk offsets). The flag stays on
// the device: with `reset` it is first set to 1 (a memset queued before the
// kernel), then any block that sees a NaN/Inf in its inputs stores 0, so
// `reset == 0` only ever clears it, as in MultiTensor.cpp.
// unscale_gate(_accumulate) is one elementwise pass that reads the gate flag
// on the device.
//
//===----------------------------------------------------------------------===//

#include "Common.cuh"
#include "amp/Runtime/Math/Optimizer.h"

#include <type_traits>
#include <vector>

using namespace amprt;
using namespace amprt::cuda;

namespace {

constexpr int kThreads = 256;
constexpr int64_t kChunk = 4096; // elements per block

struct Entry {
  const void *in;
  void *out; // NULL: check only
  int64_t n;
  int64_t firstChunk;
  int32_t inDt, outDt;
  bool packets; // check only, `in` packetAligned: read in packets
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

/// Whether an element of [begin, end) of `in` is NaN or Inf (products:
/// after multiplying by s), read in packets; begin is a multiple of kPacket.
template <int32_t D>
__device__ int badInPackets(const void *in, int64_t begin, int64_t end, float s,
                            bool products) {
  int bad = 0;
  auto *p = static_cast<const Packet<D> *>(in);
  int64_t last = end / kPacket;
  for (int64_t q = begin / kPacket + threadIdx.x; q < last; q += blockDim.x) {
    Packet<D> v = p[q];
#pragma unroll
    for (int j = 0; j < kPacket; ++j) {
      float f = widen<D>(v.v[j]);
      bad |= nonFiniteF32(products ? f * s : f);
    }
  }
  auto *e = static_cast<const StorageOf<D> *>(in);
  for (int64_t i = last * kPacket + threadIdx.x; i < end; i += blockDim.x) {
    float f = widen<D>(e[i]);
    bad |= nonFiniteF32(products ? f * s : f);
  }
  return bad;
}

/// products: test in * s (multi_tensor_unscale_check), else the stored
/// inputs (multi_tensor_unscale, multi_tensor_all_finite).
__global__ void unscaleKernel(const Entry *tab, int count, const void *invScale,
                              int32_t scaleDt, bool products, uint8_t *flag) {
  int64_t chunk = blockIdx.x;
  const Entry e = tab[findEntry(tab, count, chunk)];
  int64_t begin = (chunk - e.firstChunk) * kChunk;
  int64_t end = min(e.n, begin + kChunk);
  float s = invScale ? loadF(invScale, scaleDt, 0) : 1.f;
  int bad = 0;
  if (e.packets && e.inDt == AMPRT_F16)
    bad = badInPackets<AMPRT_F16>(e.in, begin, end, s, products);
  else if (e.packets && e.inDt == AMPRT_BF16)
    bad = badInPackets<AMPRT_BF16>(e.in, begin, end, s, products);
  else if (e.packets)
    bad = badInPackets<AMPRT_F32>(e.in, begin, end, s, products);
  else
    for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) {
      bad |= products ? nonFiniteF32(loadF(e.in, e.inDt, i) * s)
                      : nonFinite(e.in, e.inDt, i);
      if (e.out)
        storeF(e.out, e.outDt, i, loadF(e.in, e.inDt, i) * s);
    }
  if (__syncthreads_or(bad) && threadIdx.x == 0)
    *flag = 0;
}

/// Checks shared by both entries (MultiTensor.cpp's order); non-OK means
/// "let the CPU code report it".
amprt_status checkFlag(amprt_context *ctx, const char *k, T t) {
  AMPRT_TRY(checkDtype(ctx, k, "all_finite", t, AMPRT_BOOL));
  return checkNumel(ctx, k, "all_finite", t, 1);
}

amprt_status launch(amprt_context *ctx, const char *k, T ins, T outs, int64_t n,
                    T invScale, bool products, T flag, int32_t reset) {
  std::vector<Entry> tab;
  int64_t chunks = 0;
  for (int64_t i = 0; i < n; ++i) {
    int64_t m = numel(&ins[i]);
    if (m == 0)
      continue;
    tab.push_back({ins[i].data, outs ? outs[i].data : nullptr, m, chunks,
                   ins[i].dtype, outs ? outs[i].dtype : 0,
                   !outs && packetAligned(ins[i].data, ins[i].dtype)});
    chunks += (m + kChunk - 1) / kChunk;
  }
  auto *f = static_cast<uint8_t *>(flag->data);
  if (reset)
    AMPRT_CUDA(ctx, k, cudaMemsetAsync(f, 1, 1, stream(ctx)));
  if (tab.empty())
    return AMPRT_OK;
  if (chunks > INT32_MAX)
    return ctx->fail(AMPRT_ERR_UNSUPPORTED, "%s: %lld chunks in one call", k,
                     (long long)chunks);
  Scratch dtab;
  AMPRT_TRY(upload(ctx, k, tab.data(), tab.size() * sizeof(Entry), dtab));
  unscaleKernel<<<unsigned(chunks), kThreads, 0, stream(ctx)>>>(
      static_cast<const Entry *>(dtab.p), int(tab.size()),
      invScale ? invScale->data : nullptr, invScale ? invScale->dtype : 0,
      products, f);
  AMPRT_CUDA_LAUNCHED(ctx, k);
  return AMPRT_OK;
}

amprt_status cudaUnscale(amprt_context *ctx, T ins, T outs, int64_t n,
                         T inv_scale, T all_finite, int32_t reset) {
  const char *k = "multi_tensor_unscale";
  return guard(ctx, k, [&]() -> amprt_status {
    auto cpu = [&] {
      return amprt_multi_tensor_unscale(ctx, ins, outs, n, inv_scale,
                                        all_finite, reset);
    };
    if (n < 0 || (n > 0 && (!ins || !outs)) ||
        checkFloat(ctx, k, "inv_scale", inv_scale) ||
        checkNumel(ctx, k, "inv_scale", inv_scale, 1) ||
        checkFlag(ctx, k, all_finite))
      return onHost(ctx, cpu);
    for (int64_t i = 0; i < n; ++i)
      if (checkFloat(ctx, k, "ins[i]", &ins[i]) ||
          checkFloat(ctx, k, "outs[i]", &outs[i]) ||
          shapeOf(&ins[i]) != shapeOf(&outs[i]))
        return onHost(ctx, cpu);
    return launch(ctx, k, ins, outs, n, inv_scale, false, all_finite, reset);
  });
}

amprt_status cudaAllFinite(amprt_context *ctx, T ins, int64_t n, T all_finite,
                           int32_t reset) {
  const char *k = "multi_tensor_all_finite";
  return guard(ctx, k, [&]() -> amprt_status {
    auto cpu = [&] {
      return amprt_multi_tensor_all_finite(ctx, ins, n, all_finite, reset);
    };
    if (n < 0 || (n > 0 && !ins) || checkFlag(ctx, k, all_finite))
      return onHost(ctx, cpu);
    for (int64_t i = 0; i < n; ++i)
      if (checkFloat(ctx, k, "ins[i]", &ins[i]))
        return onHost(ctx, cpu);
    return launch(ctx, k, ins, nullptr, n, nullptr, false, all_finite, reset);
  });
}

amprt_status cudaUnscaleCheck(amprt_context *ctx, T ins, int64_t n, T inv_scale,
                              T all_finite, int32_t reset) {
  const char *k = "multi_tensor_unscale_check";
  return guard(ctx, k, [&]() -> amprt_status {
    if (checkUnscaleCheck(ctx, ins, n, inv_scale, all_finite))
      return onHost(ctx, [&] {
        return amprt_multi_tensor_unscale_check(ctx, ins, n, inv_scale,
                                                all_finite, reset);
      });
    return launch(ctx, k, ins, nullptr, n, inv_scale, true, all_finite, reset);
  });
}

//===----------------------------------------------------------------------===//
// unscale_gate, unscale_gate_accumulate
//===----------------------------------------------------------------------===//

/// y = v or y = ow ? v : y + v with v = gate ? x * s : 0 (unscaleGateStep, as
/// MultiTensor.cpp). The dtypes are template parameters, so the loads and
/// stores compile to one access each.
template <int32_t DX, int32_t DY>
__global__ void gateKernel(const void *x, const void *invScale, int32_t scaleDt,
                           const uint8_t *gate, void *y, bool accumulate,
                           const uint8_t *overwrite, uint8_t *updated,
                           int64_t n) {
  bool ow = !accumulate || ldFlag(overwrite, false);
  bool pass = *gate != 0;
  float s = loadF(invScale, scaleDt, 0);
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    float old = ow ? 0.f : loadF(y, DY, i);
    storeF(y, DY, i, unscaleGateStep(loadF(x, DX, i), old, s, pass, ow));
  }
  if (updated && blockIdx.x == 0 && threadIdx.x == 0)
    *updated = 1;
}

/// gateKernel's element operation for packetMapKernel (x, old y -> y),
/// its flags and scale read once per thread.
struct GateF {
  const void *invScale;
  int32_t scaleDt;
  const uint8_t *gate, *overwrite;
  bool accumulate;
  struct Bound {
    float s;
    bool pass, ow;
    __device__ float operator()(float x, float y) const {
      return unscaleGateStep(x, y, s, pass, ow);
    }
    __device__ bool readsSecond() const { return !ow; }
  };
  __device__ Bound bind() const {
    return {loadF(invScale, scaleDt, 0), *gate != 0,
            !accumulate || ldFlag(overwrite, false)};
  }
};

template <typename Cpu>
amprt_status gate(amprt_context *ctx, const char *k, T x, T inv_scale,
                  T gateFlag, T y, bool accumulate, T overwrite, T updated,
                  Cpu &&cpu) {
  if (checkUnscaleGate(ctx, k, x, inv_scale, gateFlag, y, accumulate, overwrite,
                       updated))
    return onHost(ctx, cpu);
  int64_t n = numel(y);
  unsigned grid = gridFor(n, kThreads, 4);
  const auto *gf = static_cast<const uint8_t *>(gateFlag->data);
  const auto *of =
      overwrite ? static_cast<const uint8_t *>(overwrite->data) : nullptr;
  if (packetAligned(x->data, x->dtype) && packetAligned(y->data, y->dtype)) {
    // In packets; the updated flag is set by a copy of the constant 1.
    GateF op{inv_scale->data, inv_scale->dtype, gf, of, accumulate};
    byFloatDtype(x->dtype, [&](auto dx) {
      byFloatDtype(y->dtype, [&](auto dy) {
        constexpr int32_t DX = decltype(dx)::value, DY = decltype(dy)::value;
        packetMapKernel<DX, DY, DY, 2><<<packetGrid(n), 256, 0, stream(ctx)>>>(
            x->data, y->data, y->data, n, op);
      });
    });
    AMPRT_CUDA_LAUNCHED(ctx, k);
    if (updated)
      AMPRT_CUDA(ctx, k, cudaMemsetAsync(updated->data, 1, 1, stream(ctx)));
    return AMPRT_OK;
  }
  byFloatDtype(x->dtype, [&](auto dx) {
    byFloatDtype(y->dtype, [&](auto dy) {
      gateKernel<decltype(dx)::value, decltype(dy)::value>
          <<<grid, kThreads, 0, stream(ctx)>>>(
              x->data, inv_scale->data, inv_scale->dtype,
              static_cast<const uint8_t *>(gateFlag->data), y->data, accumulate,
              overwrite ? static_cast<const uint8_t *>(overwrite->data)
                        : nullptr,
              updated ? static_cast<uint8_t *>(updated->data) : nullptr, n);
    });
  });
  AMPRT_CUDA_LAUNCHED(ctx, k);
  return AMPRT_OK;
}

/// unscale_check_accumulate: each element's product tested (as
/// unscaleKernel) and accumulated (as gateKernel with the gate open) in one
/// pass over x.
template <int32_t DX, int32_t DY>
__global__ void
checkAccumulateKernel(const void *x, const void *invScale, int32_t scaleDt,
                      void *y, const uint8_t *overwrite, uint8_t *updated,
                      uint8_t *flag, int64_t n) {
  bool ow = ldFlag(overwrite, false);
  float s = loadF(invScale, scaleDt, 0);
  int bad = 0;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    float xv = loadF(x, DX, i);
    bad |= nonFiniteF32(xv * s);
    float old = ow ? 0.f : loadF(y, DY, i);
    storeF(y, DY, i, unscaleGateStep(xv, old, s, true, ow));
  }
  if (__syncthreads_or(bad) && threadIdx.x == 0)
    *flag = 0;
  if (updated && blockIdx.x == 0 && threadIdx.x == 0)
    *updated = 1;
}

amprt_status cudaUnscaleCheckAccumulate(amprt_context *ctx, T buffer, T x,
                                        T inv_scale, T all_finite, T overwrite,
                                        T updated) {
  const char *k = "unscale_check_accumulate";
  return guard(ctx, k, [&]() -> amprt_status {
    if (checkUnscaleCheckAccumulate(ctx, buffer, x, inv_scale, all_finite,
                                    overwrite, updated))
      return onHost(ctx, [&] {
        return amprt_unscale_check_accumulate(ctx, buffer, x, inv_scale,
                                              all_finite, overwrite, updated);
      });
    int64_t n = numel(buffer);
    if (n == 0) {
      if (updated)
        AMPRT_CUDA(ctx, k, cudaMemsetAsync(updated->data, 1, 1, stream(ctx)));
      return AMPRT_OK;
    }
    byFloatDtype(x->dtype, [&](auto dx) {
      byFloatDtype(buffer->dtype, [&](auto dy) {
        checkAccumulateKernel<decltype(dx)::value, decltype(dy)::value>
            <<<gridFor(n, kThreads, 4), kThreads, 0, stream(ctx)>>>(
                x->data, inv_scale->data, inv_scale->dtype, buffer->data,
                overwrite ? static_cast<const uint8_t *>(overwrite->data)
                          : nullptr,
                updated ? static_cast<uint8_t *>(updated->data) : nullptr,
                static_cast<uint8_t *>(all_finite->data), n);
      });
    });
    AMPRT_CUDA_LAUNCHED(ctx, k);
    return AMPRT_OK;
  });
}

amprt_status cudaUnscaleGate(amprt_context *ctx, T x, T inv_scale, T g, T y) {
  const char *k = "unscale_gate";
  return guard(ctx, k, [&] {
    return gate(ctx, k, x, inv_scale, g, y, false, nullptr, nullptr,
                [&] { return amprt_unscale_gate(ctx, x, inv_scale, g, y); });
  });
}

amprt_status cudaUnscaleGateAccumulate(amprt_context *ctx, T buffer, T x,
                                       T inv_scale, T g, T overwrite,
                                       T updated) {
  const char *k = "unscale_gate_accumulate";
  return guard(ctx, k, [&] {
    return gate(ctx, k, x, inv_scale, g, buffer, true, overwrite, updated, [&] {
      return amprt_unscale_gate_accumulate(ctx, buffer, x, inv_scale, g,
                                           overwrite, updated);
    });
  });
}

//===----------------------------------------------------------------------===//
// multi_tensor_zero_unless
//===----------------------------------------------------------------------===//

struct ZeroEntry {
  uint8_t *p;
  int64_t bytes;
};

/// Zeroes every tensor of the table unless *keep: one block row per
/// tensor (blockIdx.y), threads striding over its bytes; with keep set,
/// each thread reads the flag and returns, touching nothing else.
__global__ void zeroUnlessKernel(const ZeroEntry *tab, const uint8_t *keep) {
  if (*keep)
    return;
  ZeroEntry e = tab[blockIdx.y];
  int64_t stride = int64_t(gridDim.x) * blockDim.x;
  int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  // 16-byte stores where the tensor is aligned, bytes for the rest.
  int64_t words =
      (reinterpret_cast<uintptr_t>(e.p) % 16 == 0) ? e.bytes / 16 : 0;
  for (int64_t w = i; w < words; w += stride)
    reinterpret_cast<uint4 *>(e.p)[w] = make_uint4(0, 0, 0, 0);
  for (int64_t b = words * 16 + i; b < e.bytes; b += stride)
    e.p[b] = 0;
}

amprt_status cudaZeroUnless(amprt_context *ctx, T ins, int64_t n, T keep) {
  const char *k = "multi_tensor_zero_unless";
  return guard(ctx, k, [&]() -> amprt_status {
    auto cpu = [&] {
      return amprt_multi_tensor_zero_unless(ctx, ins, n, keep);
    };
    if (n < 0 || (n > 0 && !ins) || checkFlag(ctx, k, keep))
      return onHost(ctx, cpu);
    if (n == 0)
      return AMPRT_OK;
    if (n > 65535)
      return onHost(ctx, cpu);
    std::vector<ZeroEntry> table(static_cast<size_t>(n));
    int64_t most = 0;
    for (int64_t i = 0; i < n; ++i) {
      if (checkTensor(ctx, k, "ins[i]", &ins[i]))
        return onHost(ctx, cpu);
      int64_t bytes = numel(&ins[i]) * int64_t(amprt_dtype_size(ins[i].dtype));
      table[size_t(i)] = {static_cast<uint8_t *>(ins[i].data), bytes};
      most = std::max(most, bytes);
    }
    Scratch dev;
    AMPRT_TRY(
        upload(ctx, k, table.data(), table.size() * sizeof(ZeroEntry), dev));
    dim3 grid(std::min<unsigned>(gridFor(most / 16 + 1, kThreads), 1024),
              unsigned(n));
    zeroUnlessKernel<<<grid, kThreads, 0, stream(ctx)>>>(
        static_cast<const ZeroEntry *>(dev.p),
        static_cast<const uint8_t *>(keep->data));
    AMPRT_CUDA_LAUNCHED(ctx, k);
    return AMPRT_OK;
  });
}

} // namespace

void amprt::cuda::registerMultiTensor(KernelTable &t) {
  t.multi_tensor_zero_unless = cudaZeroUnless;
  t.multi_tensor_unscale = cudaUnscale;
  t.multi_tensor_all_finite = cudaAllFinite;
  t.multi_tensor_unscale_check = cudaUnscaleCheck;
  t.unscale_gate = cudaUnscaleGate;
  t.unscale_gate_accumulate = cudaUnscaleGateAccumulate;
  t.unscale_check_accumulate = cudaUnscaleCheckAccumulate;
}

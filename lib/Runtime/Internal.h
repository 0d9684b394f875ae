//===- Internal.h - shared helpers of the runtime's CPU backend -*- C++ -*-===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// Private to lib/Runtime, what only the CPU kernels use: bulk f16/bf16
// conversion, f32 views of float tensors, a broadcasting walker, the f32
// GEMM and the thread pool's loop. The backend interface and the argument
// checks (shared with the CUDA kernels) are in include/amp/Runtime/Backend,
// the scalar arithmetic of both backends in include/amp/Runtime/Math.
// Nothing here is part of the ABI.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_LIB_RUNTIME_INTERNAL_H
#define AMP_LIB_RUNTIME_INTERNAL_H

#include "amp/Runtime/Backend/Backend.h"
#include "amp/Runtime/Backend/Checks.h"
#include "amp/Runtime/Math/ElementAccess.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <memory>
#include <utility>
#include <vector>

namespace amprt {

/// Runs f(begin, end) over [0, n) split into one contiguous piece per
/// thread of the CPU pool (CpuConfig.cpp) when `work` (a rough operation
/// count) makes it worth it; an exception thrown by f is rethrown here.
void parallelFor(int64_t n, double work,
                 const std::function<void(int64_t, int64_t)> &f);

/// Bulk conversions (Convert.cpp).
void toF32(const void *src, int32_t dt, float *dst, int64_t n);
void fromF32(const float *src, void *dst, int32_t dt, int64_t n);

/// An uninitialized f32 buffer of n elements, from the buffers the calling
/// thread's kernels gave back before (Scratch.cpp), given back when
/// destroyed: large copies reuse pages instead of faulting in new ones.
class ScratchFloats {
public:
  ScratchFloats() = default;
  explicit ScratchFloats(int64_t n);
  ~ScratchFloats();
  ScratchFloats(ScratchFloats &&o) noexcept
      : p(std::exchange(o.p, nullptr)), capacity(o.capacity) {}
  ScratchFloats &operator=(ScratchFloats &&o) noexcept {
    std::swap(p, o.p);
    std::swap(capacity, o.capacity);
    return *this;
  }
  float *get() const { return p; }
  void reset(int64_t n) { *this = ScratchFloats(n); }

private:
  float *p = nullptr;
  size_t capacity = 0;
};

/// An f32 view of a float tensor: the data itself for f32, else a widened
/// copy (in an uninitialized buffer: no zero fill before the conversion).
struct F32In {
  const float *p = nullptr;
  ScratchFloats buf;
  explicit F32In(const amprt_tensor *t) {
    if (!t)
      return;
    int64_t n = numel(t);
    if (t->dtype == AMPRT_F32) {
      p = static_cast<const float *>(t->data);
      return;
    }
    buf.reset(n);
    toF32(t->data, t->dtype, buf.get(), n);
    p = buf.get();
  }
};

/// An f32 destination for a float tensor: writes go to the tensor for f32,
/// else to a buffer rounded once into the tensor by commit(). With
/// `load`, the buffer starts with the tensor's values (in-place updates);
/// without, it starts undefined, as the tensor's own memory does for f32.
struct F32Out {
  float *p = nullptr;
  ScratchFloats buf;
  const amprt_tensor *t = nullptr;
  explicit F32Out(const amprt_tensor *t, bool load = false) : t(t) {
    if (!t)
      return;
    int64_t n = numel(t);
    if (t->dtype == AMPRT_F32) {
      p = static_cast<float *>(t->data);
      return;
    }
    buf.reset(n);
    if (load)
      toF32(t->data, t->dtype, buf.get(), n);
    p = buf.get();
  }
  void commit() {
    if (t && t->dtype != AMPRT_F32)
      fromF32(buf.get(), t->data, t->dtype, numel(t));
  }
};

/// dst[0, n) = src[0, n) widened from f16: eight at a time with F16C,
/// exactly as f16ToF32 (which the tail and other hosts use).
inline void widenF16(const uint16_t *src, float *dst, int64_t n) {
  int64_t i = 0;
#ifdef AMPRT_HOST_F16C
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128(
                                  reinterpret_cast<const __m128i *>(src + i))));
#endif
  for (; i < n; ++i)
    dst[i] = f16ToF32(src[i]);
}

/// dst[0, n) = src[0, n) rounded to f16 (nearest even), as f32ToF16. Each
/// group of eight is read before it is written, so dst may start where
/// src does (an in-place narrowing, run forwards).
inline void narrowF16(const float *src, uint16_t *dst, int64_t n) {
  int64_t i = 0;
#ifdef AMPRT_HOST_F16C
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(
        reinterpret_cast<__m128i *>(dst + i),
        _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT));
#endif
  for (; i < n; ++i)
    dst[i] = f32ToF16(src[i]);
}

/// dst[0, len) = elements [lo, lo + len) of a float tensor's data of dtype
/// dt as f32; one loop per dtype, so that each vectorizes.
inline void widenBlock(const void *src, int32_t dt, int64_t lo, int64_t len,
                       float *dst) {
  auto *s16 = static_cast<const uint16_t *>(src) + lo;
  if (dt == AMPRT_BF16)
    for (int64_t i = 0; i < len; ++i)
      dst[i] = bf16ToF32(s16[i]);
  else if (dt == AMPRT_F16)
    widenF16(s16, dst, len);
  else if (dt == AMPRT_F32)
    std::memcpy(dst, static_cast<const float *>(src) + lo, size_t(len) * 4);
  else
    for (int64_t i = 0; i < len; ++i)
      dst[i] = loadF(src, dt, lo + i);
}

/// Elements [lo, lo + len) of a float tensor's data of dtype dt = src,
/// rounded once; the inverse of widenBlock.
inline void narrowBlock(const float *src, void *dst, int32_t dt, int64_t lo,
                        int64_t len) {
  auto *d16 = static_cast<uint16_t *>(dst) + lo;
  if (dt == AMPRT_BF16)
    for (int64_t i = 0; i < len; ++i)
      d16[i] = f32ToBf16(src[i]);
  else if (dt == AMPRT_F16)
    narrowF16(src, d16, len);
  else
    for (int64_t i = 0; i < len; ++i)
      storeF(dst, dt, lo + i, src[i]);
}

/// Runs fn(in, out, len) over the n elements of dense float tensors of
/// one element count, `ins` (K of them) and `out`, in blocks on the thread
/// pool: an f32 tensor is read or written in place, an f16/bf16 one is
/// widened into (or rounded from) a block on the stack, so 16-bit
/// operands cost no whole-tensor copies. Each output element is the same
/// as through F32In/F32Out (computed in f32, rounded once), and out may be
/// one of the inputs (each block is read before it is written).
template <int K, typename F>
void mapBlocks(const amprt_tensor *const (&ins)[K], const amprt_tensor *out,
               double cost, F &&fn) {
  constexpr int64_t kBlock = 1024;
  int64_t n = numel(out);
  int64_t blocks = (n + kBlock - 1) / kBlock;
  parallelFor(blocks, double(n) * cost, [&](int64_t b0, int64_t b1) {
    float inBuf[K][kBlock], outBuf[kBlock];
    for (int64_t b = b0; b < b1; ++b) {
      int64_t lo = b * kBlock, len = std::min(kBlock, n - lo);
      const float *in[K];
      for (int j = 0; j < K; ++j) {
        if (ins[j]->dtype == AMPRT_F32) {
          in[j] = static_cast<const float *>(ins[j]->data) + lo;
        } else {
          widenBlock(ins[j]->data, ins[j]->dtype, lo, len, inBuf[j]);
          in[j] = inBuf[j];
        }
      }
      bool direct = out->dtype == AMPRT_F32;
      float *o = direct ? static_cast<float *>(out->data) + lo : outBuf;
      fn(in, o, len);
      if (!direct)
        narrowBlock(outBuf, out->data, out->dtype, lo, len);
    }
  });
}

/// Index i of an i64 / i32 tensor.
int64_t indexAt(const amprt_tensor *idx, int64_t i);

/// Calls f(o, off, istr, inner) for each row [r0, r1) of `out` (a row: the
/// last dim, `inner` elements from output element o), where off[j] is the
/// element offset into input j of the row's first element under
/// broadcasting and istr[j] input j's step along the row (0 or 1 for a
/// dense input).
template <int K, typename F>
void forEachBroadcastRowSpan(const Shape &out, const Shape (&strides)[K],
                             int64_t r0, int64_t r1, F &&f) {
  int64_t rank = int64_t(out.size());
  if (numel(out) == 0 || r0 >= r1)
    return;
  std::vector<int64_t> idx(size_t(rank), 0);
  int64_t off[K] = {};
  int64_t inner = rank ? out[size_t(rank - 1)] : 1;
  // The multi-index of row r0 (all dims but the last).
  for (int64_t d = rank - 2, r = r0; d >= 0; --d) {
    idx[size_t(d)] = r % out[size_t(d)];
    r /= out[size_t(d)];
    for (int j = 0; j < K; ++j)
      off[j] += idx[size_t(d)] * strides[j][size_t(d)];
  }
  int64_t istr[K];
  for (int j = 0; j < K; ++j)
    istr[j] = rank ? strides[j][size_t(rank - 1)] : 0;
  for (int64_t o = r0 * inner, end = r1 * inner; o < end; o += inner) {
    f(o, static_cast<const int64_t *>(off), static_cast<const int64_t *>(istr),
      inner);
    // Advance the outer index (all dims but the last).
    for (int64_t d = rank - 2; d >= 0; --d) {
      ++idx[size_t(d)];
      for (int j = 0; j < K; ++j)
        off[j] += strides[j][size_t(d)];
      if (idx[size_t(d)] < out[size_t(d)])
        break;
      for (int j = 0; j < K; ++j)
        off[j] -= strides[j][size_t(d)] * out[size_t(d)];
      idx[size_t(d)] = 0;
    }
  }
}

/// Calls f(outIndex, off[0..k)) for every element of the rows [r0, r1) of
/// `out` (a row: the last dim), where off[j] is the element offset into
/// input j under broadcasting.
template <int K, typename F>
void forEachBroadcastRows(const Shape &out, const Shape (&strides)[K],
                          int64_t r0, int64_t r1, F &&f) {
  forEachBroadcastRowSpan<K>(
      out, strides, r0, r1,
      [&](int64_t o, const int64_t *off, const int64_t *istr, int64_t inner) {
        int64_t cur[K];
        for (int j = 0; j < K; ++j)
          cur[j] = off[j];
        for (int64_t i = 0; i < inner; ++i) {
          f(o + i, static_cast<const int64_t *>(cur));
          for (int j = 0; j < K; ++j)
            cur[j] += istr[j];
        }
      });
}

/// The rows of `out` under broadcasting.
inline int64_t broadcastRows(const Shape &out) {
  int64_t inner = out.empty() ? 1 : out.back();
  return inner ? numel(out) / inner : 0;
}

/// forEachBroadcastRows over every element of `out`, in order.
template <int K, typename F>
void forEachBroadcast(const Shape &out, const Shape (&strides)[K], F &&f) {
  forEachBroadcastRows<K>(out, strides, 0, broadcastRows(out), f);
}

/// forEachBroadcast on the thread pool, rows split among the threads: for
/// an f whose calls write only their own output element. `cost` is a
/// rough operation count per element.
template <int K, typename F>
void parallelForEachBroadcast(const Shape &out, const Shape (&strides)[K],
                              double cost, F &&f) {
  parallelFor(broadcastRows(out), double(numel(out)) * cost,
              [&](int64_t r0, int64_t r1) {
                forEachBroadcastRows<K>(out, strides, r0, r1, f);
              });
}

/// Runs f(lo, hi) over the elements [0, n) on the thread pool, for an f
/// whose element i writes only element i; `cost` per element as above.
template <typename F> void parallelElements(int64_t n, double cost, F &&f) {
  parallelFor(n, double(n) * cost, f);
}

/// Runs f(i, lo, hi) over the elements [lo, hi) of tensor i of `count`
/// tensors (count[i] elements each), every element once, the flattened
/// elements split among the threads (an optimizer over many tensors).
void parallelOverTensors(
    const std::vector<int64_t> &count, double cost,
    const std::function<void(int64_t, int64_t, int64_t)> &f);

/// C[M,N] = alpha * A[M,K] B[K,N] + (accumulate ? C : 0), all f32
/// row-major with leading dimensions lda, ldb, ldc; f32 accumulation
/// (Gemm.cpp): oneDNN's sgemm on the fast path, else the blocked loops
/// over the pool's threads.
void sgemm(int64_t M, int64_t N, int64_t K, float alpha, const float *A,
           int64_t lda, const float *B, int64_t ldb, bool accumulate, float *C,
           int64_t ldc);
/// dst[c, r] = src[r, c] for an R x C row-major src.
void transpose2d(const float *src, int64_t R, int64_t C, float *dst);
/// Copies the elements of x at base + sum(idx[d] * strides[d]) in the order
/// of `so` into y (Shape.cpp; y of x's dtype).
void gatherStrided(const amprt_tensor *x, const amprt_tensor *y,
                   const Shape &so, const Shape &strides, int64_t base);

/// Runs a windowed kernel's channels-first `body` for a call whose window
/// is channels last (Layout.cpp): each tensor (checked first, named as the
/// kernel `k` names it) of `ins` [N, spatial..., C]
/// is copied to [N, C, spatial...] and the caller's pointer repointed at
/// the copy, each of `outs` repointed at a channels-first buffer that is
/// copied back after the body; `body` gets the window as channels first.
/// `indices`, when one of `outs`, holds flat indices into ins[0], moved to
/// its channels-last position. Tensors of rank below 3 stay (the body's
/// checks refuse them). A window that is not channels last runs the body
/// as it is. The same bits as the channels-first kernel by construction.
using NamedTensor = std::pair<const char *, const amprt_tensor **>;
amprt_status
viaChannelsFirst(amprt_context *ctx, const char *k, const amprt_window *win,
                 std::initializer_list<NamedTensor> ins,
                 std::initializer_list<NamedTensor> outs,
                 const std::function<amprt_status(const amprt_window *)> &body,
                 const amprt_tensor **indices = nullptr);

/// The CPU backend's thread count and arithmetic path (CpuConfig.cpp,
/// amprt_cpu_set_threads / amprt_cpu_set_path).
int cpuThreads();
bool cpuReference();

} // namespace amprt

#endif // AMP_LIB_RUNTIME_INTERNAL_H

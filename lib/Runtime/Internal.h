//===- Internal.h - shared helpers of the runtime's CPU backend -*- C++ -*-===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// Private to lib/Runtime, what only the CPU kernels use: bulk f16/bf16
// conversion, f32 views of float tensors, a broadcasting walker, the f32
// GEMM and the two-thread loop. The backend interface and the argument
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

#include <cstdint>
#include <cstring>
#include <functional>
#include <vector>

namespace amprt {

/// Bulk conversions (Convert.cpp).
void toF32(const void *src, int32_t dt, float *dst, int64_t n);
void fromF32(const float *src, void *dst, int32_t dt, int64_t n);

/// An f32 view of a float tensor: the data itself for f32, else a widened
/// copy.
struct F32In {
  const float *p = nullptr;
  std::vector<float> buf;
  explicit F32In(const amprt_tensor *t) {
    if (!t)
      return;
    int64_t n = numel(t);
    if (t->dtype == AMPRT_F32) {
      p = static_cast<const float *>(t->data);
      return;
    }
    buf.resize(size_t(n));
    toF32(t->data, t->dtype, buf.data(), n);
    p = buf.data();
  }
};

/// An f32 destination for a float tensor: writes go to the tensor for f32,
/// else to a buffer rounded once into the tensor by commit(). With
/// `load`, the buffer starts with the tensor's values (in-place updates).
struct F32Out {
  float *p = nullptr;
  std::vector<float> buf;
  const amprt_tensor *t = nullptr;
  explicit F32Out(const amprt_tensor *t, bool load = false) : t(t) {
    if (!t)
      return;
    int64_t n = numel(t);
    if (t->dtype == AMPRT_F32) {
      p = static_cast<float *>(t->data);
      return;
    }
    buf.resize(size_t(n));
    if (load)
      toF32(t->data, t->dtype, buf.data(), n);
    p = buf.data();
  }
  void commit() {
    if (t && t->dtype != AMPRT_F32)
      fromF32(buf.data(), t->data, t->dtype, numel(t));
  }
};

/// Index i of an i64 / i32 tensor.
int64_t indexAt(const amprt_tensor *idx, int64_t i);

/// Calls f(outIndex, off[0..k)) for every element of `out`, where off[j] is
/// the element offset into input j under broadcasting.
template <int K, typename F>
void forEachBroadcast(const Shape &out, const Shape (&strides)[K], F &&f) {
  int64_t rank = int64_t(out.size());
  int64_t n = numel(out);
  if (n == 0)
    return;
  std::vector<int64_t> idx(size_t(rank), 0);
  int64_t off[K] = {};
  int64_t inner = rank ? out[size_t(rank - 1)] : 1;
  int64_t istr[K];
  for (int j = 0; j < K; ++j)
    istr[j] = rank ? strides[j][size_t(rank - 1)] : 0;
  for (int64_t o = 0; o < n; o += inner) {
    int64_t cur[K];
    for (int j = 0; j < K; ++j)
      cur[j] = off[j];
    for (int64_t i = 0; i < inner; ++i) {
      f(o + i, cur);
      for (int j = 0; j < K; ++j)
        cur[j] += istr[j];
    }
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

/// C[M,N] = alpha * A[M,K] B[K,N] + (accumulate ? C : 0), all f32
/// row-major with leading dimensions lda, ldb, ldc; f32 accumulation
/// (Gemm.cpp). Large products use two threads.
void sgemm(int64_t M, int64_t N, int64_t K, float alpha, const float *A,
           int64_t lda, const float *B, int64_t ldb, bool accumulate, float *C,
           int64_t ldc);
/// dst[c, r] = src[r, c] for an R x C row-major src.
void transpose2d(const float *src, int64_t R, int64_t C, float *dst);

/// Runs f(begin, end) over [0, n) on up to two threads when `work` (a rough
/// flop count) makes it worth it.
void parallelFor(int64_t n, double work,
                 const std::function<void(int64_t, int64_t)> &f);

} // namespace amprt

#endif // AMP_LIB_RUNTIME_INTERNAL_H

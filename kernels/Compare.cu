//===- Compare.cu - a value against its fp32 reference on the device ------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// Compare.cpp's abs_max_finite and compare_stats on the device: one block
// takes the sample that says whether x carries the loss scale; then each
// block accumulates Math/Compare.h's statistics in f64 over a grid-stride
// share of the elements and writes them to a scratch row; one block merges
// the rows in a fixed order. The grid depends only on the element count, so a
// result is the same run after run (the f64 sums differ from the CPU's by their
// order only).
//
//===----------------------------------------------------------------------===//

#include "Common.cuh"
#include "amp/Runtime/Math/Compare.h"

using namespace amprt;
using namespace amprt::cuda;

namespace {

constexpr int kThreads = 256;

unsigned compareGrid(int64_t n) {
  int64_t g = (n + kThreads * 16 - 1) / (kThreads * 16);
  return unsigned(g < 1 ? 1 : g > 512 ? 512 : g);
}

/// The largest of every thread's m into sh[0] (a tree over the block).
__device__ void blockMax(float *sh, float m) {
  sh[threadIdx.x] = m;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s /= 2) {
    if (int(threadIdx.x) < s)
      sh[threadIdx.x] = fmaxf(sh[threadIdx.x], sh[threadIdx.x + s]);
    __syncthreads();
  }
}

__global__ void absMaxKernel(const void *x, int32_t dt, int64_t n,
                             float *part) {
  __shared__ float sh[kThreads];
  float m = 0.f;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    float v = loadF(x, dt, i);
    if (isfinite(v))
      m = fmaxf(m, fabsf(v));
  }
  blockMax(sh, m);
  if (threadIdx.x == 0)
    part[blockIdx.x] = sh[0];
}

/// y = the largest of the blocks' maxima: one block, each thread a strided
/// share, then a tree (the largest does not depend on the order).
__global__ void absMaxFinish(const float *part, int blocks, float *y) {
  __shared__ float sh[kThreads];
  float m = 0.f;
  for (int b = threadIdx.x; b < blocks; b += blockDim.x)
    m = fmaxf(m, part[b]);
  blockMax(sh, m);
  if (threadIdx.x == 0)
    *y = sh[0];
}

/// Merges every thread's statistics `acc` into sh[0] (a tree over the
/// block's threads: a fixed order).
__device__ void blockMerge(double (*sh)[kCompareStats], const double *acc) {
  for (int s = 0; s < kCompareStats; ++s)
    sh[threadIdx.x][s] = acc[s];
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s /= 2) {
    if (int(threadIdx.x) < s)
      compareMerge(sh[threadIdx.x], sh[threadIdx.x + s]);
    __syncthreads();
  }
}

/// One of the sample's two forms (compareSampleIndex) summed into sh[0]
/// by the block: a tree in f64, every thread past its last barrier.
__device__ void sampleSums(double (*sh)[2], const void *x, int32_t dt,
                           const float *ref, int64_t n, bool spread) {
  double acc[kCompareStats] = {};
  int64_t stride = compareSampleStride(n);
  for (int64_t j = threadIdx.x, i = 0;
       (i = compareSampleIndex(j, stride, spread)) < n; j += blockDim.x)
    compareSample(acc, loadF(x, dt, i), ref[i]);
  sh[threadIdx.x][0] = acc[kLogSum];
  sh[threadIdx.x][1] = acc[kLogCount];
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s /= 2) {
    if (int(threadIdx.x) < s) {
      sh[threadIdx.x][0] += sh[threadIdx.x + s][0];
      sh[threadIdx.x][1] += sh[threadIdx.x + s][1];
    }
    __syncthreads();
  }
}

/// The sample (compareSampleIndex: in runs, spread where the runs find too
/// few nonzeros) into out's kLogSum, kLogCount and kCarries: one block.
__global__ void sampleKernel(const void *x, int32_t dt, const float *ref,
                             int64_t n, float scale, double *out,
                             float *factor) {
  __shared__ double sh[kThreads][2];
  sampleSums(sh, x, dt, ref, n, false);
  // The same for every thread: all read sh[0] after the last barrier.
  if (sh[0][1] < kCompareSampleMin) {
    __syncthreads();
    sampleSums(sh, x, dt, ref, n, true);
  }
  if (threadIdx.x == 0) {
    out[kLogSum] = sh[0][0];
    out[kLogCount] = sh[0][1];
    bool carries = carriesScale(sh[0][0], sh[0][1], scale);
    out[kCarries] = carries;
    if (factor)
      *factor = carries ? scale : 1.f;
  }
}

/// Each block's statistics of x / (out[kCarries] ? scale : 1) into its row
/// of part.
__global__ void compareKernel(const void *x, int32_t dt, const float *ref,
                              const float *refMax, int64_t n, double scale,
                              const double *out, double *part) {
  __shared__ double sh[kThreads][kCompareStats];
  double acc[kCompareStats] = {};
  float floor = compareFloor(*refMax);
  float inv = compareInv(out[kCarries] != 0, float(scale));
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    compareElement(acc, loadF(x, dt, i), ref[i], floor, inv);
  blockMerge(sh, acc);
  if (threadIdx.x == 0)
    for (int s = 0; s < kCompareStats; ++s)
      part[blockIdx.x * kCompareStats + s] = sh[0][s];
}

/// out's element statistics = the blocks' rows merged: one block, thread t
/// merging rows t, t + 256, ... in order, then a tree over the threads (a
/// fixed order: the same sums run after run). One thread walking all rows
/// waited on each load in turn (about 100 us for 512 rows).
__global__ void compareFinish(const double *part, int blocks, double *out) {
  __shared__ double sh[kThreads][kCompareStats];
  double acc[kCompareStats] = {};
  for (int b = threadIdx.x; b < blocks; b += blockDim.x)
    compareMerge(acc, part + b * kCompareStats);
  blockMerge(sh, acc);
  if (threadIdx.x == 0)
    for (int s = 0; s < kCompareStats; ++s)
      if (s != kLogSum && s != kLogCount && s != kCarries)
        out[s] = sh[0][s];
}

amprt_status cudaAbsMaxFinite(amprt_context *ctx, T x, T y) {
  const char *k = "abs_max_finite";
  return guard(ctx, k, [&]() -> amprt_status {
    if (checkAbsMaxFinite(ctx, x, y))
      return onHost(ctx, [&] { return amprt_abs_max_finite(ctx, x, y); });
    int64_t n = numel(x);
    unsigned g = compareGrid(n);
    Scratch part;
    AMPRT_TRY(part.get(ctx, k, size_t(g) * sizeof(float)));
    absMaxKernel<<<g, kThreads, 0, stream(ctx)>>>(x->data, x->dtype, n,
                                                  static_cast<float *>(part.p));
    AMPRT_CUDA_LAUNCHED(ctx, k);
    absMaxFinish<<<1, kThreads, 0, stream(ctx)>>>(
        static_cast<float *>(part.p), int(g), static_cast<float *>(y->data));
    AMPRT_CUDA_LAUNCHED(ctx, k);
    return AMPRT_OK;
  });
}

amprt_status cudaCompareStats(amprt_context *ctx, T x, T ref, T ref_max,
                              float scale, T stats, T factor) {
  const char *k = "compare_stats";
  return guard(ctx, k, [&]() -> amprt_status {
    if (checkCompareStats(ctx, x, ref, ref_max, scale, stats, factor))
      return onHost(ctx, [&] {
        return amprt_compare_stats(ctx, x, ref, ref_max, scale, stats, factor);
      });
    int64_t n = numel(x);
    unsigned g = compareGrid(n);
    Scratch part;
    AMPRT_TRY(part.get(ctx, k, size_t(g) * kCompareStats * sizeof(double)));
    double *out = static_cast<double *>(stats->data);
    sampleKernel<<<1, kThreads, 0, stream(ctx)>>>(
        x->data, x->dtype, static_cast<const float *>(ref->data), n, scale, out,
        factor ? static_cast<float *>(factor->data) : nullptr);
    AMPRT_CUDA_LAUNCHED(ctx, k);
    compareKernel<<<g, kThreads, 0, stream(ctx)>>>(
        x->data, x->dtype, static_cast<const float *>(ref->data),
        static_cast<const float *>(ref_max->data), n, double(scale), out,
        static_cast<double *>(part.p));
    AMPRT_CUDA_LAUNCHED(ctx, k);
    compareFinish<<<1, kThreads, 0, stream(ctx)>>>(
        static_cast<double *>(part.p), int(g),
        static_cast<double *>(stats->data));
    AMPRT_CUDA_LAUNCHED(ctx, k);
    return AMPRT_OK;
  });
}

} // namespace

void amprt::cuda::registerCompare(KernelTable &t) {
  t.abs_max_finite = cudaAbsMaxFinite;
  t.compare_stats = cudaCompareStats;
}

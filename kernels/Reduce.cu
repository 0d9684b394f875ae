//===- Reduce.cu - reduce_sum, reduce_mean, reduce_max, reduce_min --------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// The CUDA versions of Reduce.cpp's float reductions over any axes:
// reduce_sum and reduce_mean in double (row sums by blocks, split into
// chunks when the outputs are few; column sums one thread per output over
// runs of rows), reduce_max and reduce_min by Reduce.cpp's walk (the first
// NaN, else the first of the extreme values: the CPU's bits). reduceFloat
// also serves global_average_pool (Pool.cu). Integer reductions and cumsum
// are elsewhere (the CPU; Select.cu).
//
//===----------------------------------------------------------------------===//

#include "Common.cuh"

#include <algorithm>
#include <vector>

using namespace amprt;
using namespace amprt::cuda;

namespace {

//===----------------------------------------------------------------------===//
// reduce_sum
//===----------------------------------------------------------------------===//

/// x's dims split into kept ones (the output's order) and reduced ones,
/// each with its element stride in x.
struct ReduceMap {
  int32_t nk = 0, nr = 0;
  int64_t kd[AMPRT_MAX_RANK], ks[AMPRT_MAX_RANK];
  int64_t rd[AMPRT_MAX_RANK], rs[AMPRT_MAX_RANK];
};

__device__ __forceinline__ int64_t decompose(int64_t i, int32_t n,
                                             const int64_t *dims,
                                             const int64_t *strides) {
  if (n == 1) // i < dims[0] always: no division (the common merged case)
    return i * strides[0];
  int64_t off = 0;
  for (int d = n - 1; d >= 0; --d) {
    off += (i % dims[d]) * strides[d];
    i /= dims[d];
  }
  return off;
}

/// mean: divide by count (0 when count is 0), as Reduce.cpp.
__device__ __forceinline__ float reduceResult(double acc, int64_t count,
                                              bool mean) {
  return float(mean ? (count ? acc / double(count) : 0.0) : acc);
}

/// One thread per output element and run of `count` (short reductions into
/// many outputs, e.g. a bias gradient): blockIdx.y's run of the count;
/// with one run the thread stores the result, else its f64 partial sum goes
/// to partial[y * outs + o] for reducePartsKernel.
__global__ void reduceThreadKernel(ReduceMap m, const void *x, int32_t dx,
                                   void *y, int32_t dy, int64_t outs,
                                   int64_t count, bool mean, int64_t runs,
                                   double *partial) {
  int64_t len = (count + runs - 1) / runs;
  int64_t lo = blockIdx.y * len, hi = lo + len < count ? lo + len : count;
  for (int64_t o = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; o < outs;
       o += int64_t(gridDim.x) * blockDim.x) {
    int64_t base = decompose(o, m.nk, m.kd, m.ks);
    double acc = 0;
    for (int64_t r = lo; r < hi; ++r)
      acc += loadF(x, dx, base + decompose(r, m.nr, m.rd, m.rs));
    if (runs == 1)
      storeF(y, dy, o, reduceResult(acc, count, mean));
    else
      partial[blockIdx.y * outs + o] = acc;
  }
}

/// y[o] = the sum over c < parts of partial[o * so + c * sc], in c order
/// (the second step of the chunked and the run-split reductions).
__global__ void reducePartsKernel(const double *partial, int64_t so, int64_t sc,
                                  int64_t parts, void *y, int32_t dy,
                                  int64_t outs, int64_t count, bool mean) {
  for (int64_t o = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; o < outs;
       o += int64_t(gridDim.x) * blockDim.x) {
    double acc = 0;
    for (int64_t c = 0; c < parts; ++c)
      acc += partial[o * so + c * sc];
    storeF(y, dy, o, reduceResult(acc, count, mean));
  }
}

/// One block per output element (long reductions).
__global__ void reduceBlockKernel(ReduceMap m, const void *x, int32_t dx,
                                  void *y, int32_t dy, int64_t outs,
                                  int64_t count, bool mean) {
  __shared__ double part[32];
  for (int64_t o = blockIdx.x; o < outs; o += gridDim.x) {
    int64_t base = decompose(o, m.nk, m.kd, m.ks);
    double acc = 0;
    for (int64_t r = threadIdx.x; r < count; r += blockDim.x)
      acc += loadF(x, dx, base + decompose(r, m.nr, m.rd, m.rs));
    acc = warpSum(acc);
    if (threadIdx.x % 32 == 0)
      part[threadIdx.x / 32] = acc;
    __syncthreads();
    if (threadIdx.x == 0) {
      double t = 0;
      for (int i = 0; i < int(blockDim.x / 32); ++i)
        t += part[i];
      storeF(y, dy, o, reduceResult(t, count, mean));
    }
    __syncthreads();
  }
}

/// Long reductions into few outputs: output o's count splits into `chunks`
/// equal runs, one block each, whose f64 partial sums go to part[o * chunks
/// + c]; reducePartsKernel adds them in chunk order.
__global__ void reducePartialKernel(ReduceMap m, const void *x, int32_t dx,
                                    double *partial, int64_t outs,
                                    int64_t count, int64_t chunks) {
  __shared__ double part[32];
  int64_t len = (count + chunks - 1) / chunks;
  for (int64_t b = blockIdx.x; b < outs * chunks; b += gridDim.x) {
    int64_t o = b / chunks, c = b % chunks;
    int64_t base = decompose(o, m.nk, m.kd, m.ks);
    int64_t lo = c * len, hi = lo + len < count ? lo + len : count;
    double acc = 0;
    for (int64_t r = lo + threadIdx.x; r < hi; r += blockDim.x)
      acc += loadF(x, dx, base + decompose(r, m.nr, m.rd, m.rs));
    acc = blockSum(acc, part);
    if (threadIdx.x == 0)
      partial[b] = acc;
  }
}

/// Merges neighbouring dims of one list that are contiguous in x (dim i's
/// stride = dim i+1's extent times its stride): fewer divisions per element.
void mergeDims(int32_t &n, int64_t *dims, int64_t *strides) {
  int32_t w = 0;
  for (int32_t i = 0; i < n; ++i) {
    if (w > 0 && strides[w - 1] == dims[i] * strides[i]) {
      dims[w - 1] *= dims[i];
      strides[w - 1] = strides[i];
      continue;
    }
    dims[w] = dims[i];
    strides[w] = strides[i];
    ++w;
  }
  n = w;
}

/// x's dims split by `red` into kept and reduced ones, neighbours that are
/// contiguous merged; count and outs their element counts.
void makeReduceMap(const Shape &sx, const std::vector<bool> &red, ReduceMap &m,
                   int64_t &count, int64_t &outs) {
  count = outs = 1;
  int64_t stride = 1;
  std::vector<int64_t> xs(sx.size());
  for (size_t i = sx.size(); i-- > 0;) {
    xs[i] = stride;
    stride *= sx[i];
  }
  for (size_t i = 0; i < sx.size(); ++i) {
    if (red[i]) {
      m.rd[m.nr] = sx[i];
      m.rs[m.nr++] = xs[i];
      count *= sx[i];
    } else {
      m.kd[m.nk] = sx[i];
      m.ks[m.nk++] = xs[i];
      outs *= sx[i];
    }
  }
  mergeDims(m.nk, m.kd, m.ks);
  mergeDims(m.nr, m.rd, m.rs);
}

/// Reduce.cpp's max / min step: a NaN stays; else v replaces a when
/// strictly larger (smaller), so the first of equal values (+0 and -0
/// included) is kept.
__device__ __forceinline__ bool takes(float a, float v, bool max) {
  return !(a != a) && (v != v || (max ? v > a : v < a));
}

/// One thread per output element, the reduced elements in x's order (as
/// Reduce.cpp): the CPU's result bit for bit.
__global__ void extremeThreadKernel(ReduceMap m, const void *x, int32_t dx,
                                    void *y, int32_t dy, int64_t outs,
                                    int64_t count, bool max) {
  for (int64_t o = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; o < outs;
       o += int64_t(gridDim.x) * blockDim.x) {
    int64_t base = decompose(o, m.nk, m.kd, m.ks);
    float a = max ? -INFINITY : INFINITY;
    for (int64_t r = 0; r < count; ++r) {
      float v = loadF(x, dx, base + decompose(r, m.nr, m.rd, m.rs));
      if (takes(a, v, max))
        a = v;
    }
    storeF(y, dy, o, a);
  }
}

/// One block per output element (long reductions): each thread walks its
/// strided share in order, then (value, first index) pairs combine so that
/// the result is the sequential one: the first NaN, else the first extreme.
__global__ void extremeBlockKernel(ReduceMap m, const void *x, int32_t dx,
                                   void *y, int32_t dy, int64_t outs,
                                   int64_t count, bool max) {
  __shared__ float val[256];
  __shared__ int64_t at[256];
  for (int64_t o = blockIdx.x; o < outs; o += gridDim.x) {
    int64_t base = decompose(o, m.nk, m.kd, m.ks);
    float a = max ? -INFINITY : INFINITY;
    int64_t ia = INT64_MAX;
    for (int64_t r = threadIdx.x; r < count; r += blockDim.x) {
      float v = loadF(x, dx, base + decompose(r, m.nr, m.rd, m.rs));
      if (ia == INT64_MAX || takes(a, v, max)) {
        a = v;
        ia = r;
      }
    }
    val[threadIdx.x] = a;
    at[threadIdx.x] = ia;
    __syncthreads();
    for (int w = blockDim.x / 2; w > 0; w /= 2) {
      if (threadIdx.x < w) {
        float b = val[threadIdx.x + w];
        int64_t ib = at[threadIdx.x + w];
        float c = val[threadIdx.x];
        int64_t ic = at[threadIdx.x];
        // The pair that comes first in the sequential walk's result.
        bool nb = b != b, nc = c != c;
        bool second = ib != INT64_MAX &&
                      (ic == INT64_MAX || (nb || nc ? nb && (!nc || ib < ic)
                                                    : (max ? b > c : b < c) ||
                                                          (b == c && ib < ic)));
        if (second) {
          val[threadIdx.x] = b;
          at[threadIdx.x] = ib;
        }
      }
      __syncthreads();
    }
    if (threadIdx.x == 0)
      storeF(y, dy, o, val[0]);
    __syncthreads();
  }
}

} // namespace

amprt_status amprt::cuda::reduceFloat(amprt_context *ctx, const char *k, T x,
                                      const std::vector<bool> &red, T y,
                                      bool mean) {
  ReduceMap m;
  int64_t count, outs;
  makeReduceMap(shapeOf(x), red, m, count, outs);
  if (outs == 0)
    return AMPRT_OK;
  // When the reduced dims hold x's innermost one, a block reads each
  // output's elements contiguously (few outputs split their count into
  // chunks, one block each). Otherwise neighbouring outputs are
  // neighbours in x (a column sum, e.g. a bias gradient): one thread per
  // output reads coalesced with the others, over runs of the count.
  bool rows = m.nr > 0 && m.rs[m.nr - 1] == 1;
  int64_t chunks = std::min<int64_t>(std::max<int64_t>(1024 / outs, 1),
                                     (count + 4095) / 4096);
  if (rows && chunks > 1) {
    Scratch partial;
    AMPRT_TRY(partial.get(ctx, k, size_t(outs * chunks) * sizeof(double)));
    auto *pp = static_cast<double *>(partial.p);
    reducePartialKernel<<<unsigned(
                              std::min<int64_t>(outs * chunks, 65535LL * 32)),
                          256, 0, stream(ctx)>>>(m, x->data, x->dtype, pp, outs,
                                                 count, chunks);
    AMPRT_CUDA_LAUNCHED(ctx, k);
    reducePartsKernel<<<gridFor(outs, 256), 256, 0, stream(ctx)>>>(
        pp, chunks, 1, chunks, y->data, y->dtype, outs, count, mean);
  } else if (rows && (count >= 1024 || outs < 1024))
    reduceBlockKernel<<<unsigned(std::min<int64_t>(outs, 65535LL * 32)), 256, 0,
                        stream(ctx)>>>(m, x->data, x->dtype, y->data, y->dtype,
                                       outs, count, mean);
  else {
    // About 128K threads: split the count into runs when outs is short.
    int64_t runs = std::max<int64_t>(
        1,
        std::min<int64_t>({(131072 + outs - 1) / outs, (count + 7) / 8, 4096}));
    Scratch partial;
    double *pp = nullptr;
    if (runs > 1) {
      AMPRT_TRY(partial.get(ctx, k, size_t(outs * runs) * sizeof(double)));
      pp = static_cast<double *>(partial.p);
    }
    reduceThreadKernel<<<dim3(unsigned(std::min<int64_t>((outs + 255) / 256,
                                                         65535LL * 32)),
                              unsigned(runs)),
                         256, 0, stream(ctx)>>>(
        m, x->data, x->dtype, y->data, y->dtype, outs, count, mean, runs, pp);
    if (runs > 1) {
      AMPRT_CUDA_LAUNCHED(ctx, k);
      reducePartsKernel<<<gridFor(outs, 256), 256, 0, stream(ctx)>>>(
          pp, 1, outs, runs, y->data, y->dtype, outs, count, mean);
    }
  }
  AMPRT_CUDA_LAUNCHED(ctx, k);
  return AMPRT_OK;
}

namespace {

/// reduce_max (max) or reduce_min of float x over the dims marked in `red`.
amprt_status reduceExtreme(amprt_context *ctx, const char *k, T x,
                           const std::vector<bool> &red, T y, bool max) {
  ReduceMap m;
  int64_t count, outs;
  makeReduceMap(shapeOf(x), red, m, count, outs);
  if (outs == 0)
    return AMPRT_OK;
  if (count >= 1024 && outs < 4096)
    extremeBlockKernel<<<unsigned(std::min<int64_t>(outs, 65535LL * 32)), 256,
                         0, stream(ctx)>>>(m, x->data, x->dtype, y->data,
                                           y->dtype, outs, count, max);
  else
    extremeThreadKernel<<<gridFor(outs, 256), 256, 0, stream(ctx)>>>(
        m, x->data, x->dtype, y->data, y->dtype, outs, count, max);
  AMPRT_CUDA_LAUNCHED(ctx, k);
  return AMPRT_OK;
}

enum class Red { Sum, Mean, Max, Min };

template <Red Op>
amprt_status cudaReduce(amprt_context *ctx, T x, const int64_t *axes,
                        int64_t naxes, int32_t keepdims,
                        int32_t noop_with_empty_axes, T y) {
  static const char *names[] = {"reduce_sum", "reduce_mean", "reduce_max",
                                "reduce_min"};
  const char *k = names[int(Op)];
  return guard(ctx, k, [&]() -> amprt_status {
    auto cpu = [&] {
      auto *f = Op == Red::Sum    ? amprt_reduce_sum
                : Op == Red::Mean ? amprt_reduce_mean
                : Op == Red::Max  ? amprt_reduce_max
                                  : amprt_reduce_min;
      return f(ctx, x, axes, naxes, keepdims, noop_with_empty_axes, y);
    };
    if (checkFloat(ctx, k, "x", x) || checkFloat(ctx, k, "y", y) || naxes < 0 ||
        (naxes > 0 && !axes))
      return onHost(ctx, cpu);
    Shape sx = shapeOf(x);
    std::vector<bool> red(sx.size(), naxes == 0 && !noop_with_empty_axes);
    for (int64_t i = 0; i < naxes; ++i) {
      int64_t a;
      if (normAxis(ctx, k, axes[i], x->rank, a) || red[size_t(a)])
        return onHost(ctx, cpu);
      red[size_t(a)] = true;
    }
    Shape so;
    for (size_t i = 0; i < sx.size(); ++i)
      if (!red[i] || keepdims)
        so.push_back(red[i] ? 1 : sx[i]);
    if (checkShape(ctx, k, "y", y, so))
      return onHost(ctx, cpu);
    if (Op == Red::Max || Op == Red::Min)
      return reduceExtreme(ctx, k, x, red, y, Op == Red::Max);
    return reduceFloat(ctx, k, x, red, y, Op == Red::Mean);
  });
}

} // namespace

void amprt::cuda::registerReduce(KernelTable &t) {
  t.reduce_sum = cudaReduce<Red::Sum>;
  t.reduce_mean = cudaReduce<Red::Mean>;
  t.reduce_max = cudaReduce<Red::Max>;
  t.reduce_min = cudaReduce<Red::Min>;
}

//===- Conv.cu - Conv, ConvGrad and ConvTranspose through cuDNN -----------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// Conv.cpp's semantics on cuDNN (legacy convolution API; 1-D windows as H =
// 1, 3-D ones with 5-D descriptors): cudnnConvolutionForward,
// BackwardData and BackwardFilter with an f32 compute type; ConvTranspose is
// BackwardData of the convolution its window describes. f16/bf16 tensors
// allow Tensor Core math; f32 ones use FMA math (no TF32) unless
// AMPRT_CUDA_ALLOW_TF32 is set. The bias of conv is added by cudnnAddTensor
// and db is our own per-channel sum in double.
// A channels-last window (amprt_window::layout) describes x, y, dx, dy as
// NHWC / NDHWC tensors and the weight [M, kernel..., C/g] as an NHWC
// (KRSC) filter, so that cuDNN runs its channels-last kernels (the Tensor
// Core ones for f16/bf16) on the tensors as stored, with no transposes.
// What cuDNN's legacy API cannot express runs the CPU code (which takes
// either layout: Layout.cpp): mixed dtypes, asymmetric pads, ceil mode, and
// any configuration cuDNN rejects.
//
// Rounding: an f16/bf16 conv or conv_transpose with a bias rounds twice
// (the convolution into y, then y + bias); without a bias, and in f32, once.
//
// Built only when cuDNN's headers are found (AMPRT_HAVE_CUDNN); otherwise
// conv, conv_grad and conv_transpose stay on the CPU.
//
//===----------------------------------------------------------------------===//

#include "Common.cuh"

#include <algorithm>
#include <cstdio>
#include <mutex>
#include <set>
#include <string>

using namespace amprt;
using namespace amprt::cuda;

#ifdef AMPRT_HAVE_CUDNN

namespace {

#define AMPRT_DNN(ctx, k, call)                                                \
  do {                                                                         \
    cudnnStatus_t amprt_dnn_s_ = (call);                                       \
    if (amprt_dnn_s_ != CUDNN_STATUS_SUCCESS)                                  \
      return (ctx)->fail(AMPRT_ERR_BACKEND, "%s: %s failed: %s", (k), #call,   \
                         cudnnGetErrorString(amprt_dnn_s_));                   \
  } while (0)

cudnnDataType_t dnnType(int32_t dt) {
  return dt == AMPRT_F16    ? CUDNN_DATA_HALF
         : dt == AMPRT_BF16 ? CUDNN_DATA_BFLOAT16
                            : CUDNN_DATA_FLOAT;
}

/// The descriptors of one convolution, destroyed with the object.
struct Conv {
  cudnnTensorDescriptor_t x = nullptr, y = nullptr, b = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  ~Conv() {
    if (x)
      cudnnDestroyTensorDescriptor(x);
    if (y)
      cudnnDestroyTensorDescriptor(y);
    if (b)
      cudnnDestroyTensorDescriptor(b);
    if (w)
      cudnnDestroyFilterDescriptor(w);
    if (conv)
      cudnnDestroyConvolutionDescriptor(conv);
  }
};

/// The geometry, when the call is one the GPU path takes (else false: the
/// CPU code runs, and reports any error); g.channelsLast is the layout.
struct Geometry {
  Window g;
  int64_t M = 0, G = 1;
  int32_t sr = 2; // spatial rank: 1 and 2 use 4-D descriptors, 3 5-D ones
};

bool geometry(amprt_context *ctx, const char *k, T x, T w,
              const amprt_window *win, Geometry &s) {
  if (!win || w->rank != x->rank || win->ceil_mode || win->spatial_rank > 3)
    return false;
  if (makeWindow(ctx, k, x, weightKernel(w, win), win, s.g) != AMPRT_OK)
    return false;
  s.G = win->group ? win->group : 1;
  s.M = w->shape[0];
  if (s.G < 1 || s.g.C % s.G != 0 || s.M % s.G != 0 ||
      weightChannels(w, win) * s.G != s.g.C)
    return false;
  // cuDNN's legacy descriptors take one pad per dimension.
  if (s.g.pt != s.g.pb || s.g.pl != s.g.pr || s.g.pf != s.g.pk)
    return false;
  s.sr = win->spatial_rank;
  // 32-bit dimensions.
  const int64_t lim = INT32_MAX;
  return s.g.N <= lim && s.g.C <= lim && s.g.D <= lim && s.g.H <= lim &&
         s.g.W <= lim && s.M <= lim && s.g.N * s.g.C * s.g.inPlane() <= lim &&
         s.g.N * s.M * s.g.outPlane() <= lim;
}

Shape outShape(const Geometry &s, int32_t sr) {
  return windowShape(s.g, sr, s.M);
}

/// The algorithm cache key of a problem: direction, dtype, layout and
/// geometry.
std::string algoKey(char dir, int32_t dt, const Geometry &s) {
  const Window &g = s.g;
  int64_t v[] = {dt,   g.N,  g.C,  g.D,  g.H,  g.W,  s.M,  s.G,
                 g.kd, g.kh, g.kw, g.sd, g.sh, g.sw, g.pf, g.pt,
                 g.pl, g.pk, g.pb, g.pr, g.dd, g.dh, g.dw};
  std::string key(1, dir);
  key += std::to_string(s.sr); // 4-D or 5-D descriptors
  key += g.channelsLast ? "nhwc" : "nchw";
  for (int64_t x : v)
    key += "," + std::to_string(x);
  return key;
}

amprt_status handle(amprt_context *ctx, const char *k, cudnnHandle_t &h) {
  State &st = state(ctx);
  if (!st.cudnn) {
    // cudnnCreate allocates and waits: not while recording a graph.
    AMPRT_TRY(ctx->refuseWhileRecording(
        k, "it would create the cuDNN handle (run a convolution first)"));
    AMPRT_DNN(ctx, k, cudnnCreate(&st.cudnn));
    AMPRT_DNN(ctx, k, cudnnSetStream(st.cudnn, st.stream));
  }
  h = st.cudnn;
  return AMPRT_OK;
}

/// cuDNN's name for the window's layout, of tensors and filters alike:
/// NCHW (NCDHW, and weights KCRS) or NHWC (NDHWC, weights KRSC).
cudnnTensorFormat_t dnnFormat(const Geometry &s) {
  return s.g.channelsLast ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
}

/// A 4-D (N, C, H, W) or, for 3-D windows, 5-D (N, C, D, H, W) packed
/// tensor descriptor, stored in the window's layout (dims are given in
/// NCHW order either way; the format sets the strides).
amprt_status tensorDesc(amprt_context *ctx, const char *k, const Geometry &s,
                        cudnnTensorDescriptor_t d, cudnnDataType_t t, int64_t n,
                        int64_t c, int64_t dd, int64_t h, int64_t w) {
  if (s.sr < 3) {
    AMPRT_DNN(ctx, k,
              cudnnSetTensor4dDescriptor(d, dnnFormat(s), t, int(n), int(c),
                                         int(h), int(w)));
    return AMPRT_OK;
  }
  int dims[5] = {int(n), int(c), int(dd), int(h), int(w)};
  AMPRT_DNN(ctx, k, cudnnSetTensorNdDescriptorEx(d, dnnFormat(s), t, 5, dims));
  return AMPRT_OK;
}

/// The math type of a convolution of dtype dt: Tensor Cores for f16/bf16;
/// for f32, FMA unless TF32 is allowed.
cudnnMathType_t convMath(amprt_context *ctx, int32_t dt) {
  return dt != AMPRT_F32        ? CUDNN_TENSOR_OP_MATH
         : state(ctx).allowTf32 ? CUDNN_DEFAULT_MATH
                                : CUDNN_FMA_MATH;
}

amprt_status describe(amprt_context *ctx, const char *k, const Geometry &s,
                      int32_t dt, Conv &c) {
  const Window &g = s.g;
  cudnnDataType_t t = dnnType(dt);
  AMPRT_DNN(ctx, k, cudnnCreateTensorDescriptor(&c.x));
  AMPRT_DNN(ctx, k, cudnnCreateTensorDescriptor(&c.y));
  AMPRT_DNN(ctx, k, cudnnCreateFilterDescriptor(&c.w));
  AMPRT_DNN(ctx, k, cudnnCreateConvolutionDescriptor(&c.conv));
  AMPRT_TRY(tensorDesc(ctx, k, s, c.x, t, g.N, g.C, g.D, g.H, g.W));
  if (s.sr < 3) {
    AMPRT_DNN(ctx, k,
              cudnnSetFilter4dDescriptor(c.w, t, dnnFormat(s), int(s.M),
                                         int(g.C / s.G), int(g.kh), int(g.kw)));
    AMPRT_DNN(ctx, k,
              cudnnSetConvolution2dDescriptor(
                  c.conv, int(g.pt), int(g.pl), int(g.sh), int(g.sw), int(g.dh),
                  int(g.dw), CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
  } else {
    int fd[5] = {int(s.M), int(g.C / s.G), int(g.kd), int(g.kh), int(g.kw)};
    int pad[3] = {int(g.pf), int(g.pt), int(g.pl)};
    int str[3] = {int(g.sd), int(g.sh), int(g.sw)};
    int dil[3] = {int(g.dd), int(g.dh), int(g.dw)};
    AMPRT_DNN(ctx, k, cudnnSetFilterNdDescriptor(c.w, t, dnnFormat(s), 5, fd));
    AMPRT_DNN(ctx, k,
              cudnnSetConvolutionNdDescriptor(c.conv, 3, pad, str, dil,
                                              CUDNN_CROSS_CORRELATION,
                                              CUDNN_DATA_FLOAT));
  }
  AMPRT_DNN(ctx, k, cudnnSetConvolutionGroupCount(c.conv, int(s.G)));
  AMPRT_DNN(ctx, k, cudnnSetConvolutionMathType(c.conv, convMath(ctx, dt)));
  return tensorDesc(ctx, k, s, c.y, t, g.N, s.M, g.Do, g.Ho, g.Wo);
}

/// Whether cuDNN turned the problem down (a parameter or configuration
/// this algorithm does not take), as opposed to failing on the device.
bool refused(cudnnStatus_t st) {
#if CUDNN_MAJOR >= 9
  int category = CUDNN_STATUS_CATEGORY(int(st));
  return category == CUDNN_STATUS_BAD_PARAM ||
         category == CUDNN_STATUS_NOT_SUPPORTED;
#else
  return st == CUDNN_STATUS_BAD_PARAM || st == CUDNN_STATUS_NOT_SUPPORTED;
#endif
}

/// Runs exec(algo) with the algorithms cuDNN's heuristics rank for the
/// problem (`get`), best first, skipping those that need more than the
/// workspace and those that then refuse to run (the heuristics can offer
/// one that answers CUDNN_STATUS_BAD_PARAM, e.g. for a 3-channel f16
/// input's backward filter). With AMPRT_CUDNN_FIND=1 the ranking is
/// cuDNN's measurement on the call's own buffers (`find`: every algorithm
/// runs once, writing the call's output, which exec then writes again),
/// fastest first, keeping only the entries timed with the descriptor's
/// math type `math` (what exec runs); the heuristics' ranking when the
/// measurement fails or none of its entries runs. AMPRT_ERR_UNSUPPORTED,
/// with what each one answered in `why`, when none ran. An answer outside
/// BAD_PARAM and NOT_SUPPORTED (an execution failure, an internal error: the
/// device, not the problem) is an error at once, not a reason to try the next
/// algorithm or the CPU.
template <typename Perf, typename Get, typename Find, typename Exec>
amprt_status runAlgos(amprt_context *ctx, const char *k, const std::string &key,
                      cudnnMathType_t math, Get get, Find find, Exec exec,
                      std::string &why) {
  using Algo = decltype(Perf().algo);
  std::map<std::string, int> &cache = state(ctx).convAlgos;
  auto fault = [&](Algo algo, cudnnStatus_t st) {
    return ctx->fail(AMPRT_ERR_BACKEND, "%s: cuDNN algorithm %d failed: %s", k,
                     int(algo), cudnnGetErrorString(st));
  };
  auto hit = cache.find(key);
  if (hit != cache.end()) {
    auto algo = static_cast<Algo>(hit->second);
    cudnnStatus_t st = exec(algo);
    if (st == CUDNN_STATUS_SUCCESS)
      return AMPRT_OK;
    if (!refused(st))
      return fault(algo, st);
  }
  Perf perf[16];
  int found = 0;
  // Tries the ranked entries in order (with `sameMath`, only those timed
  // with the descriptor's math type); OK once one ran, a fault at once,
  // AMPRT_ERR_UNSUPPORTED when none ran.
  auto tryRanked = [&](int n, bool sameMath) -> amprt_status {
    for (int i = 0; i < n; ++i) {
      if (perf[i].status != CUDNN_STATUS_SUCCESS ||
          (sameMath && perf[i].mathType != math))
        continue;
      why += " algo " + std::to_string(int(perf[i].algo)) + ": ";
      if (perf[i].memory > state(ctx).workspaceBytes) {
        why += "needs " + std::to_string(perf[i].memory) + " bytes;";
        continue;
      }
      cudnnStatus_t st = exec(perf[i].algo);
      if (st == CUDNN_STATUS_SUCCESS) {
        cache[key] = int(perf[i].algo);
        return AMPRT_OK;
      }
      if (!refused(st))
        return fault(perf[i].algo, st);
      why += std::string(cudnnGetErrorString(st)) + ";";
    }
    return AMPRT_ERR_UNSUPPORTED;
  };
  // The measurement waits for the device: while recording a graph the
  // heuristics rank.
  if (state(ctx).cudnnFind && !ctx->capturing &&
      find(perf, 16, &found) == CUDNN_STATUS_SUCCESS) {
    amprt_status st = tryRanked(found, /*sameMath=*/true);
    if (st != AMPRT_ERR_UNSUPPORTED)
      return st;
    found = 0; // nothing measured ran: the heuristics' ranking
  }
  // The heuristics refusing the problem (a layout, group or dtype cuDNN
  // has no engine for) is no algorithm running: the CPU takes the call.
  cudnnStatus_t ranked = get(perf, 16, &found);
  if (ranked != CUDNN_STATUS_SUCCESS) {
    if (!refused(ranked))
      return ctx->fail(AMPRT_ERR_BACKEND, "%s: cuDNN's heuristics failed: %s",
                       k, cudnnGetErrorString(ranked));
    why += std::string(" heuristics: ") + cudnnGetErrorString(ranked) + ";";
    return AMPRT_ERR_UNSUPPORTED;
  }
  return tryRanked(found, /*sameMath=*/false);
}

/// No cuDNN algorithm ran the call: it runs on the CPU (managed memory),
/// which is right but slow, so say so once per kernel and problem kind.
template <typename F>
amprt_status cpuFallback(amprt_context *ctx, const char *k,
                         const std::string &why, F cpu) {
  static std::mutex mu;
  static std::set<std::string> said;
  {
    std::lock_guard<std::mutex> lock(mu);
    if (said.insert(std::string(k) + why).second)
      std::fprintf(stderr,
                   "amprt: %s: no cuDNN algorithm ran (%s ); running it on "
                   "the CPU\n",
                   k, why.c_str());
  }
  return onHost(ctx, cpu);
}

/// out += bias[channel] (cudnnAddTensor: an f16/bf16 out rounds a second
/// time); nothing when bias is NULL.
amprt_status addBias(amprt_context *ctx, const char *k, cudnnHandle_t h,
                     const Geometry &s, Conv &c, T bias, int64_t channels,
                     cudnnTensorDescriptor_t outDesc, T out) {
  if (!bias)
    return AMPRT_OK;
  float one = 1.f;
  AMPRT_DNN(ctx, k, cudnnCreateTensorDescriptor(&c.b));
  AMPRT_TRY(
      tensorDesc(ctx, k, s, c.b, dnnType(bias->dtype), 1, channels, 1, 1, 1));
  AMPRT_DNN(ctx, k,
            cudnnAddTensor(h, &one, c.b, bias->data, &one, outDesc, out->data));
  return AMPRT_OK;
}

/// db[m] = sum of dy[n, m, :] (double, as Conv.cpp), one block per channel.
__global__ void biasGradKernel(const void *dy, int32_t ddy, void *db,
                               int32_t ddb, int64_t N, int64_t M, int64_t P) {
  __shared__ double part[32];
  for (int64_t m = blockIdx.x; m < M; m += gridDim.x) {
    double acc = 0;
    for (int64_t i = threadIdx.x; i < N * P; i += blockDim.x) {
      int64_t n = i / P, p = i % P;
      acc += loadF(dy, ddy, (n * M + m) * P + p);
    }
    acc = blockSum(acc, part);
    if (threadIdx.x == 0)
      storeF(db, ddb, m, float(acc));
  }
}

// Channels last, dy is [rows, M] (rows = N * Do * Ho * Wo) and db its
// column sums: a block per 32 adjacent channels and run of rows, its 8
// warps on every 8th row of the run (each warp reads 32 adjacent elements
// of a row), then the runs added in order.
constexpr int kDbCols = 32, kDbLanes = 8;

/// part[j][m] = the sum of dy[r, m] over run j of the rows, in double.
__global__ void biasGradRowsKernel(const void *dy, int32_t ddy, double *part,
                                   int64_t rows, int64_t M, int64_t chunks) {
  __shared__ double lane[kDbLanes][kDbCols];
  int tx = threadIdx.x % kDbCols, ty = threadIdx.x / kDbCols;
  int64_t m = blockIdx.x * int64_t(kDbCols) + tx, j = blockIdx.y;
  int64_t len = (rows + chunks - 1) / chunks;
  int64_t r1 = (j + 1) * len < rows ? (j + 1) * len : rows;
  double acc = 0;
  if (m < M)
    for (int64_t r = j * len + ty; r < r1; r += kDbLanes)
      acc += loadF(dy, ddy, r * M + m);
  lane[ty][tx] = acc;
  __syncthreads();
  if (ty == 0 && m < M) {
    for (int l = 1; l < kDbLanes; ++l)
      acc += lane[l][tx];
    part[j * M + m] = acc;
  }
}

/// db[m] = the runs' sums of channel m, added in run order.
__global__ void biasGradTotalKernel(const double *part, void *db, int32_t ddb,
                                    int64_t M, int64_t chunks) {
  for (int64_t m = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; m < M;
       m += int64_t(gridDim.x) * blockDim.x) {
    double acc = 0;
    for (int64_t j = 0; j < chunks; ++j)
      acc += part[j * M + m];
    storeF(db, ddb, m, float(acc));
  }
}

/// db = the sum of dy over everything but its channels, in dy's layout.
amprt_status biasGrad(amprt_context *ctx, const char *k, const Geometry &s,
                      T dy, T db) {
  cudaStream_t st = stream(ctx);
  int64_t M = s.M, rows = s.g.N * s.g.outPlane();
  if (!s.g.channelsLast) {
    biasGradKernel<<<unsigned(std::min<int64_t>(M, 65535)), 256, 0, st>>>(
        dy->data, dy->dtype, db->data, db->dtype, s.g.N, M, s.g.outPlane());
    AMPRT_CUDA_LAUNCHED(ctx, k);
    return AMPRT_OK;
  }
  // About 2048 blocks, runs of at least 64 rows.
  int64_t colBlocks = (M + kDbCols - 1) / kDbCols;
  int64_t chunks = std::max<int64_t>(
      1, std::min<int64_t>({(rows + 63) / 64,
                            std::max<int64_t>(2048 / colBlocks, 1), 65535}));
  Scratch part;
  AMPRT_TRY(part.get(ctx, k, size_t(chunks * M) * sizeof(double)));
  auto *pp = static_cast<double *>(part.p);
  biasGradRowsKernel<<<dim3(unsigned(colBlocks), unsigned(chunks)),
                       kDbCols * kDbLanes, 0, st>>>(dy->data, dy->dtype, pp,
                                                    rows, M, chunks);
  AMPRT_CUDA_LAUNCHED(ctx, k);
  biasGradTotalKernel<<<gridFor(M, 256), 256, 0, st>>>(pp, db->data, db->dtype,
                                                       M, chunks);
  AMPRT_CUDA_LAUNCHED(ctx, k);
  return AMPRT_OK;
}

/// Whether the cuDNN path takes a conv (x -> y) or conv_transpose call (the
/// convolution y -> x, its bias over y's channels): float tensors of one
/// dtype, none empty, a geometry cuDNN expresses, the shapes right. Else
/// the CPU code runs the call (and reports any error). Fills s.
bool takesConv(amprt_context *ctx, const char *k, T x, T w, T bias, T y,
               const amprt_window *win, bool transpose, Geometry &s) {
  T in = transpose ? y : x, out = transpose ? x : y;
  if (checkFloat(ctx, k, "x", x) || checkFloat(ctx, k, "w", w) ||
      checkFloat(ctx, k, "bias", bias, true) || checkFloat(ctx, k, "y", y) ||
      !geometry(ctx, k, in, w, win, s) ||
      checkShape(ctx, k, transpose ? "x" : "y", out,
                 outShape(s, win->spatial_rank)) ||
      (bias && checkShape(ctx, k, "bias", bias, {transpose ? s.g.C : s.M})))
    return false;
  int32_t dt = x->dtype;
  return w->dtype == dt && y->dtype == dt && (!bias || bias->dtype == dt) &&
         numel(y) > 0 && numel(x) > 0;
}

amprt_status cudaConv(amprt_context *ctx, T x, T w, T bias, T y,
                      const amprt_window *win) {
  const char *k = "conv";
  return guard(ctx, k, [&]() -> amprt_status {
    auto cpu = [&] { return amprt_conv(ctx, x, w, bias, y, win); };
    Geometry s;
    if (!takesConv(ctx, k, x, w, bias, y, win, /*transpose=*/false, s))
      return onHost(ctx, cpu);
    int32_t dt = x->dtype;
    cudnnHandle_t h;
    AMPRT_TRY(handle(ctx, k, h));
    Conv c;
    AMPRT_TRY(describe(ctx, k, s, dt, c));
    float one = 1.f, zero = 0.f;
    State &S = state(ctx);
    std::string why;
    amprt_status st = runAlgos<cudnnConvolutionFwdAlgoPerf_t>(
        ctx, k, algoKey('f', dt, s), convMath(ctx, dt),
        [&](cudnnConvolutionFwdAlgoPerf_t *p, int n, int *found) {
          return cudnnGetConvolutionForwardAlgorithm_v7(h, c.x, c.w, c.conv,
                                                        c.y, n, found, p);
        },
        [&](cudnnConvolutionFwdAlgoPerf_t *p, int n, int *found) {
          return cudnnFindConvolutionForwardAlgorithmEx(
              h, c.x, x->data, c.w, w->data, c.conv, c.y, y->data, n, found, p,
              S.workspace, S.workspaceBytes);
        },
        [&](cudnnConvolutionFwdAlgo_t algo) {
          return cudnnConvolutionForward(h, &one, c.x, x->data, c.w, w->data,
                                         c.conv, algo, S.workspace,
                                         S.workspaceBytes, &zero, c.y, y->data);
        },
        why);
    if (st == AMPRT_ERR_UNSUPPORTED)
      return cpuFallback(ctx, k, why, cpu);
    AMPRT_TRY(st);
    return addBias(ctx, k, h, s, c, bias, s.M, c.y, y);
  });
}

/// dx = the data gradient of convolution c for output gradient dy
/// (cudnnConvolutionBackwardData; conv_grad's dx, conv_transpose's y).
amprt_status backwardData(amprt_context *ctx, const char *k, cudnnHandle_t h,
                          const Geometry &s, int32_t dt, const Conv &c, T w,
                          T dy, T dx, std::string &why) {
  float one = 1.f, zero = 0.f;
  State &S = state(ctx);
  return runAlgos<cudnnConvolutionBwdDataAlgoPerf_t>(
      ctx, k, algoKey('d', dt, s), convMath(ctx, dt),
      [&](cudnnConvolutionBwdDataAlgoPerf_t *p, int n, int *found) {
        return cudnnGetConvolutionBackwardDataAlgorithm_v7(h, c.w, c.y, c.conv,
                                                           c.x, n, found, p);
      },
      [&](cudnnConvolutionBwdDataAlgoPerf_t *p, int n, int *found) {
        return cudnnFindConvolutionBackwardDataAlgorithmEx(
            h, c.w, w->data, c.y, dy->data, c.conv, c.x, dx->data, n, found, p,
            S.workspace, S.workspaceBytes);
      },
      [&](cudnnConvolutionBwdDataAlgo_t algo) {
        return cudnnConvolutionBackwardData(
            h, &one, c.w, w->data, c.y, dy->data, c.conv, algo, S.workspace,
            S.workspaceBytes, &zero, c.x, dx->data);
      },
      why);
}

amprt_status cudaConvGrad(amprt_context *ctx, T dy, T x, T w, T dx, T dw, T db,
                          const amprt_window *win) {
  const char *k = "conv_grad";
  return guard(ctx, k, [&]() -> amprt_status {
    auto cpu = [&] { return amprt_conv_grad(ctx, dy, x, w, dx, dw, db, win); };
    Geometry s;
    if (checkFloat(ctx, k, "dy", dy) || checkFloat(ctx, k, "x", x) ||
        checkFloat(ctx, k, "w", w) || checkFloat(ctx, k, "dx", dx, true) ||
        checkFloat(ctx, k, "dw", dw, true) ||
        checkFloat(ctx, k, "db", db, true) || !geometry(ctx, k, x, w, win, s) ||
        checkShape(ctx, k, "dy", dy, outShape(s, win->spatial_rank)) ||
        (dx && checkShape(ctx, k, "dx", dx, shapeOf(x))) ||
        (dw && checkShape(ctx, k, "dw", dw, shapeOf(w))) ||
        (db && checkShape(ctx, k, "db", db, {s.M})))
      return onHost(ctx, cpu);
    int32_t dt = x->dtype;
    if (w->dtype != dt || dy->dtype != dt || (dx && dx->dtype != dt) ||
        (dw && dw->dtype != dt) || numel(x) == 0 || numel(dy) == 0)
      return onHost(ctx, cpu); // mixed dtypes, empty tensors
    if (db)
      AMPRT_TRY(biasGrad(ctx, k, s, dy, db));
    if (!dx && !dw)
      return AMPRT_OK;
    cudnnHandle_t h;
    AMPRT_TRY(handle(ctx, k, h));
    Conv c;
    AMPRT_TRY(describe(ctx, k, s, dt, c));
    float one = 1.f, zero = 0.f;
    State &S = state(ctx);
    if (dx) {
      std::string why;
      amprt_status st = backwardData(ctx, k, h, s, dt, c, w, dy, dx, why);
      if (st == AMPRT_ERR_UNSUPPORTED)
        return cpuFallback(ctx, k, why, cpu);
      AMPRT_TRY(st);
    }
    if (dw) {
      std::string why;
      amprt_status st = runAlgos<cudnnConvolutionBwdFilterAlgoPerf_t>(
          ctx, k, algoKey('w', dt, s), convMath(ctx, dt),
          [&](cudnnConvolutionBwdFilterAlgoPerf_t *p, int n, int *found) {
            return cudnnGetConvolutionBackwardFilterAlgorithm_v7(
                h, c.x, c.y, c.conv, c.w, n, found, p);
          },
          [&](cudnnConvolutionBwdFilterAlgoPerf_t *p, int n, int *found) {
            return cudnnFindConvolutionBackwardFilterAlgorithmEx(
                h, c.x, x->data, c.y, dy->data, c.conv, c.w, dw->data, n, found,
                p, S.workspace, S.workspaceBytes);
          },
          [&](cudnnConvolutionBwdFilterAlgo_t algo) {
            return cudnnConvolutionBackwardFilter(
                h, &one, c.x, x->data, c.y, dy->data, c.conv, algo, S.workspace,
                S.workspaceBytes, &zero, c.w, dw->data);
          },
          why);
      if (st == AMPRT_ERR_UNSUPPORTED)
        return cpuFallback(ctx, k, why, cpu);
      AMPRT_TRY(st);
    }
    return AMPRT_OK;
  });
}

/// ConvTranspose is the data gradient of the convolution `win` describes
/// from y's shape to x's: cudnnConvolutionBackwardData with x as the output
/// gradient, then the bias (over y's channels).
amprt_status cudaConvTranspose(amprt_context *ctx, T x, T w, T bias, T y,
                               const amprt_window *win) {
  const char *k = "conv_transpose";
  return guard(ctx, k, [&]() -> amprt_status {
    auto cpu = [&] { return amprt_conv_transpose(ctx, x, w, bias, y, win); };
    Geometry s; // of the convolution y -> x
    if (!takesConv(ctx, k, x, w, bias, y, win, /*transpose=*/true, s))
      return onHost(ctx, cpu);
    int32_t dt = x->dtype;
    cudnnHandle_t h;
    AMPRT_TRY(handle(ctx, k, h));
    Conv c;
    AMPRT_TRY(describe(ctx, k, s, dt, c));
    std::string why;
    amprt_status st = backwardData(ctx, k, h, s, dt, c, w, x, y, why);
    if (st == AMPRT_ERR_UNSUPPORTED)
      return cpuFallback(ctx, k, why, cpu);
    AMPRT_TRY(st);
    return addBias(ctx, k, h, s, c, bias, s.g.C, c.x, y);
  });
}

} // namespace

void amprt::cuda::registerConv(KernelTable &t) {
  t.conv = cudaConv;
  t.conv_grad = cudaConvGrad;
  t.conv_transpose = cudaConvTranspose;
}

#else // !AMPRT_HAVE_CUDNN

void amprt::cuda::registerConv(KernelTable &) {}

#endif

//===- Attention.cu - attention and attention_grad on cuDNN's fused SDPA --===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// Attention.cpp's semantics on cuDNN's fused scaled dot-product attention
// (flash attention), built with the cuDNN frontend, the header-only C++ API
// over cuDNN's graph API (AttentionGraph.cpp): graph::Graph::sdpa for
// attention (y and, when lse is given, cuDNN's "Stats", the natural-log
// log-sum-exp of each row of scale q k^T + bias, which is our lse) and
// sdpa_backward for attention_grad (dq, dk, dv from q, k, v, y, dy and
// lse; no dbias). Both run in f32 inside (io f16/bf16, intermediate and
// compute f32).
//
// Layout: the leading dims of q [.., Sq, D] become cuDNN's [b, h, s, d]:
// rank 3 is [b, 1, s, d]; from rank 4 the last leading dim is h and the
// others fold into b. Every operand is contiguous, so its strides are the
// packed ones; lse [.., Sq] is Stats [b, h, Sq, 1]. cuDNN wants the
// head dim innermost (stride 1), so a k_trans k [.., D, Sk] is transposed
// into scratch first, and attention_grad's dk comes back through one too.
// The bias, seen through its broadcast to [.., Sq, Sk], is passed as it is
// when it is a [b or 1, h or 1, Sq, Sk] tensor with rows of stride Sk, a
// multiple of 8 (16-byte aligned rows); any other (a broadcast over Sq,
// over Sk, over part of the dims folded into b, or rows of another length)
// is first expanded into scratch of that form, rows padded to 8 elements.
//
// Differences from the CPU reference (runtime_cuda.py's tolerances): the
// flash kernels round p to the io dtype before p v, and the backward takes
// rowsum(dy * y), y rounded, for rowsum(p * dp) (Ops.def allows it); sums
// run in another order.
//
// What runs on the host (onHost, the CPU code on managed memory): a call
// the shared checks refuse (for the CPU's error), f32 (cuDNN's fused
// attention takes f16 and bf16 only), a bias of another dtype than q's,
// empty tensors, an operand not 16-byte aligned, and every problem for
// which building the graph fails (validation, no engine that supports it,
// e.g. a head dim that is not a multiple of 8 or is too large, or a GPU
// older than sm_80). Built graphs, and refusals, are kept per context by
// problem (State::attentionPlans), so a problem is built once.
//
// Without the frontend's headers (AMPRT_HAVE_CUDNN_FRONTEND, from
// kernels/CMakeLists.txt; utils/setup.sh fetches them) or without cuDNN,
// both kernels are still registered and always run on the host.
//
//===----------------------------------------------------------------------===//

#include "Common.cuh"

#ifdef AMPRT_HAVE_CUDNN_FRONTEND
#include "AttentionGraph.h"

#include <cstring>
#endif

using namespace amprt;
using namespace amprt::cuda;

namespace {

#ifdef AMPRT_HAVE_CUDNN_FRONTEND

using namespace amprt::cuda::attention;

/// dst[i] = src[i]^T for n matrices of rows x cols 16-bit elements (f16,
/// bf16), one element per thread and trip (k is small next to the
/// attention over it).
__global__ void transposeKernel(const uint16_t *src, uint16_t *dst, int64_t n,
                                int64_t rows, int64_t cols) {
  int64_t per = rows * cols;
  for (int64_t o = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; o < n * per;
       o += int64_t(gridDim.x) * blockDim.x) {
    int64_t i = o / per, r = o % per / cols, c = o % cols;
    dst[i * per + c * rows + r] = src[o];
  }
}

amprt_status transpose16(amprt_context *ctx, const char *k, const void *src,
                         void *dst, int64_t n, int64_t rows, int64_t cols) {
  transposeKernel<<<gridFor(n * rows * cols, 256), 256, 0, stream(ctx)>>>(
      static_cast<const uint16_t *>(src), static_cast<uint16_t *>(dst), n, rows,
      cols);
  AMPRT_CUDA_LAUNCHED(ctx, k);
  return AMPRT_OK;
}

/// y[row * ld + col] = x at the broadcast offset of element o = row * cols
/// + col of b's shape (16-bit elements; ld >= cols, the rows' stride): a
/// broadcast bias expanded into scratch.
__global__ void expandKernel(const uint16_t *x, uint16_t *y, int64_t n,
                             int64_t cols, int64_t ld, Bcast b) {
  for (int64_t o = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; o < n;
       o += int64_t(gridDim.x) * blockDim.x) {
    int64_t off[1];
    bcastOffsets<1>(b, o, off);
    y[o / cols * ld + o % cols] = x[off[0]];
  }
}

/// A call cuDNN may take: its problem and, for a bias that cuDNN cannot
/// read in place, the broadcast shape to expand it from into scratch of
/// the problem's bias shape and strides.
struct Call {
  Problem p;
  bool expand = false;
  Shape bshape;
};

/// The cache key of a problem: direction and every field the graph bakes.
std::string planKey(char dir, const Problem &p) {
  uint32_t scaleBits;
  std::memcpy(&scaleBits, &p.scale, sizeof scaleBits);
  int64_t v[] = {p.f16,        p.b,          p.h,          p.sq,
                 p.sk,         p.d,          p.dv,         scaleBits,
                 p.stats,      p.bias,       p.bb,         p.bh,
                 p.bstride[0], p.bstride[1], p.bstride[2], p.bstride[3]};
  std::string key(1, dir);
  key.append(reinterpret_cast<const char *>(v), sizeof(v));
  return key;
}

/// cuDNN's tensors are 16-byte aligned (the frontend's default alignment,
/// which its execute() enforces).
bool aligned16(T t) {
  return !t || reinterpret_cast<uintptr_t>(t->data) % 16 == 0;
}

/// Fills c from the checked geometry when cuDNN may take the call (a 16-bit
/// float dtype, no empty dim, aligned operands, a bias of q's dtype);
/// false: the host runs it.
bool describe(const AttentionGeometry &g, T q, T bias, float scale, bool stats,
              std::initializer_list<T> operands, Call &c) {
  if (q->dtype != AMPRT_F16 && q->dtype != AMPRT_BF16)
    return false;
  if (g.batch == 0 || g.sq == 0 || g.sk == 0 || g.d == 0 || g.dv == 0)
    return false;
  for (T t : operands)
    if (!aligned16(t))
      return false;
  Problem &p = c.p;
  size_t r = g.lead.size();
  p.f16 = q->dtype == AMPRT_F16;
  p.h = r >= 2 ? g.lead[r - 1] : 1;
  p.b = g.batch / p.h;
  p.sq = g.sq;
  p.sk = g.sk;
  p.d = g.d;
  p.dv = g.dv;
  p.scale = scale;
  p.stats = stats;
  if (!bias)
    return true;
  if (bias->dtype != q->dtype || !aligned16(bias))
    return false;
  p.bias = true;
  // The bias's strides over b's dims (the leading dims but h), h's, the
  // rows' and the columns'. A dim of size 1 says nothing.
  const Shape &s = g.biasStrides;
  size_t nb = r >= 2 ? r - 1 : 1;
  int64_t hs = r >= 2 && p.h > 1 ? s[r - 1] : 0;
  int64_t rs = g.sq > 1 ? s[r] : g.sk, cs = g.sk > 1 ? s[r + 1] : 1;
  // b's dims fold into one stride when the bias is constant over all of
  // them, or varies over all and is packed over them (each stride the next
  // inner one's times that one's size).
  int64_t bs = 0, next = 0;
  bool anyB = false, allB = true, packedB = true;
  for (size_t j = nb; j-- > 0;) {
    if (g.lead[j] == 1)
      continue;
    if (s[j] == 0) {
      allB = false;
      continue;
    }
    if (!anyB)
      bs = s[j];
    else if (s[j] != next)
      packedB = false;
    anyB = true;
    next = s[j] * g.lead[j];
  }
  bool foldB = !anyB || (allB && packedB);
  p.bb = anyB ? p.b : 1;
  p.bh = hs != 0 ? p.h : 1;
  // Rows of a multiple of 8 elements keep every row 16-byte aligned.
  bool alignedRows = g.sk % 8 == 0;
  c.expand = !(foldB && rs == g.sk && cs == 1 && alignedRows);
  p.bstride[3] = 1;
  if (!c.expand) {
    p.bstride[2] = g.sk;
    p.bstride[1] = p.bh > 1 ? hs : g.sq * g.sk;
    p.bstride[0] = p.bb > 1 ? bs : p.bh * g.sq * g.sk;
    return true;
  }
  // [bb, bh, sq, sk] with rows padded to a multiple of 8 elements, expanded
  // from the bias's broadcast to the scores' shape with the dims it is
  // constant over set to 1.
  p.bstride[2] = (g.sk + 7) / 8 * 8;
  p.bstride[1] = g.sq * p.bstride[2];
  p.bstride[0] = p.bh * p.bstride[1];
  c.bshape = g.lead;
  if (!anyB)
    for (size_t j = 0; j < nb; ++j)
      c.bshape[j] = 1;
  if (r >= 2 && p.bh == 1)
    c.bshape[r - 1] = 1;
  c.bshape.push_back(g.sq);
  c.bshape.push_back(g.sk);
  return true;
}

/// The context's cuDNN handle, bound to its stream (Conv.cu's too).
amprt_status dnnHandle(amprt_context *ctx, const char *k, cudnnHandle_t &h) {
  State &st = state(ctx);
  if (!st.cudnn) {
    cudnnStatus_t s = cudnnCreate(&st.cudnn);
    if (s == CUDNN_STATUS_SUCCESS)
      s = cudnnSetStream(st.cudnn, st.stream);
    if (s != CUDNN_STATUS_SUCCESS)
      return ctx->fail(AMPRT_ERR_BACKEND, "%s: cuDNN handle: %s", k,
                       cudnnGetErrorString(s));
  }
  h = st.cudnn;
  return AMPRT_OK;
}

/// The plan of p, built on first use (null: cuDNN turned it down, and the
/// host runs the call).
amprt_status findPlan(amprt_context *ctx, const char *k, bool backward,
                      const Problem &p, cudnnHandle_t &h,
                      std::shared_ptr<Plan> &plan) {
  AMPRT_TRY(dnnHandle(ctx, k, h));
  auto &cache = state(ctx).attentionPlans;
  std::string key = planKey(backward ? 'b' : 'f', p);
  auto it = cache.find(key);
  if (it == cache.end())
    it = cache.emplace(std::move(key), buildPlan(h, p, backward)).first;
  plan = std::static_pointer_cast<Plan>(it->second);
  return AMPRT_OK;
}

/// The bias as the graph reads it: in place, or expanded into `tmp`.
amprt_status biasData(amprt_context *ctx, const char *k, const Call &c, T bias,
                      Scratch &tmp, void *&data) {
  data = bias ? bias->data : nullptr;
  if (!c.p.bias || !c.expand)
    return AMPRT_OK;
  const Problem &p = c.p;
  int64_t n = numel(c.bshape);
  AMPRT_TRY(tmp.get(ctx, k, size_t(p.bb * p.bstride[0]) * sizeof(uint16_t)));
  expandKernel<<<gridFor(n, 256), 256, 0, stream(ctx)>>>(
      static_cast<const uint16_t *>(bias->data), static_cast<uint16_t *>(tmp.p),
      n, p.sk, p.bstride[2], makeBcast(c.bshape, {shapeOf(bias)}));
  AMPRT_CUDA_LAUNCHED(ctx, k);
  data = tmp.p;
  return AMPRT_OK;
}

/// Queues the plan with its workspace as scratch.
amprt_status run(amprt_context *ctx, const char *k, cudnnHandle_t h,
                 const Plan &plan, std::unordered_map<int64_t, void *> &ptrs) {
  Scratch ws;
  if (planWorkspace(plan) > 0)
    AMPRT_TRY(ws.get(ctx, k, size_t(planWorkspace(plan))));
  std::string why = runPlan(plan, h, ptrs, ws.p);
  if (!why.empty())
    return ctx->fail(AMPRT_ERR_BACKEND, "%s: cuDNN fused attention failed: %s",
                     k, why.c_str());
  return AMPRT_OK;
}

/// The cuDNN path of attention; `ran` false: the host runs the call.
amprt_status dnnAttention(amprt_context *ctx, const AttentionGeometry &g, T q,
                          T key, T v, T bias, T y, T lse, float scale,
                          bool kTrans, bool &ran) {
  const char *k = "attention";
  ran = false;
  Call c;
  if (!describe(g, q, bias, scale, lse != nullptr, {q, key, v, y, lse}, c))
    return AMPRT_OK;
  cudnnHandle_t h;
  std::shared_ptr<Plan> plan;
  AMPRT_TRY(findPlan(ctx, k, /*backward=*/false, c.p, h, plan));
  if (!plan)
    return AMPRT_OK;
  ran = true;
  // With k_trans, k goes through an [.., Sk, D] copy.
  Scratch kt, bt;
  void *kData = key->data, *bData;
  if (kTrans) {
    AMPRT_TRY(kt.get(ctx, k, size_t(numel(key)) * sizeof(uint16_t)));
    AMPRT_TRY(transpose16(ctx, k, key->data, kt.p, g.batch, g.d, g.sk));
    kData = kt.p;
  }
  AMPRT_TRY(biasData(ctx, k, c, bias, bt, bData));
  std::unordered_map<int64_t, void *> ptrs = {
      {kQ, q->data}, {kK, kData}, {kV, v->data}, {kO, y->data}};
  if (lse)
    ptrs[kStats] = lse->data;
  if (bias)
    ptrs[kBias] = bData;
  return run(ctx, k, h, *plan, ptrs);
}

/// The cuDNN path of attention_grad; `ran` false: the host runs the call.
amprt_status dnnAttentionGrad(amprt_context *ctx, const AttentionGeometry &g,
                              T q, T key, T v, T bias, T y, T lse, T dy, T dq,
                              T dk, T dv, float scale, bool kTrans, bool &ran) {
  const char *k = "attention_grad";
  ran = false;
  Call c;
  if (!describe(g, q, bias, scale, /*stats=*/true,
                {q, key, v, y, lse, dy, dq, dk, dv}, c))
    return AMPRT_OK;
  cudnnHandle_t h;
  std::shared_ptr<Plan> plan;
  AMPRT_TRY(findPlan(ctx, k, /*backward=*/true, c.p, h, plan));
  if (!plan)
    return AMPRT_OK;
  ran = true;
  // With k_trans, k and dk go through [.., Sk, D] copies.
  Scratch kt, dkt, bt;
  void *kData = key->data, *dkData = dk->data, *bData;
  if (kTrans) {
    size_t bytes = size_t(numel(key)) * sizeof(uint16_t);
    AMPRT_TRY(kt.get(ctx, k, bytes));
    AMPRT_TRY(dkt.get(ctx, k, bytes));
    AMPRT_TRY(transpose16(ctx, k, key->data, kt.p, g.batch, g.d, g.sk));
    kData = kt.p;
    dkData = dkt.p;
  }
  AMPRT_TRY(biasData(ctx, k, c, bias, bt, bData));
  std::unordered_map<int64_t, void *> ptrs = {
      {kQ, q->data},   {kK, kData},     {kV, v->data},
      {kO, y->data},   {kDO, dy->data}, {kStats, lse->data},
      {kDQ, dq->data}, {kDK, dkData},   {kDV, dv->data}};
  if (bias)
    ptrs[kBias] = bData;
  AMPRT_TRY(run(ctx, k, h, *plan, ptrs));
  if (kTrans)
    AMPRT_TRY(transpose16(ctx, k, dkt.p, dk->data, g.batch, g.sk, g.d));
  return AMPRT_OK;
}

#endif // AMPRT_HAVE_CUDNN_FRONTEND

amprt_status cudaAttention(amprt_context *ctx, T q, T key, T v, T bias, T y,
                           T lse, float scale, int32_t k_trans,
                           const int64_t *views, int64_t nviews) {
  const char *k = "attention";
  return guard(ctx, k, [&]() -> amprt_status {
    auto cpu = [&] {
      return amprt_attention(ctx, q, key, v, bias, y, lse, scale, k_trans,
                             views, nviews);
    };
    AttentionGeometry g;
    // Strided views run on the host for now.
    if (nviews || checkAttention(ctx, k, q, key, v, bias, y, lse, k_trans != 0,
                                 /*lseOptional=*/true, views, nviews, g))
      return onHost(ctx, cpu);
#ifdef AMPRT_HAVE_CUDNN_FRONTEND
    bool ran;
    AMPRT_TRY(dnnAttention(ctx, g, q, key, v, bias, y, lse, scale, k_trans != 0,
                           ran));
    if (ran)
      return AMPRT_OK;
#endif
    return onHost(ctx, cpu);
  });
}

amprt_status cudaAttentionGrad(amprt_context *ctx, T q, T key, T v, T bias, T y,
                               T lse, T dy, T dq, T dk, T dv, float scale,
                               int32_t k_trans, const int64_t *views,
                               int64_t nviews) {
  const char *k = "attention_grad";
  return guard(ctx, k, [&]() -> amprt_status {
    auto cpu = [&] {
      return amprt_attention_grad(ctx, q, key, v, bias, y, lse, dy, dq, dk, dv,
                                  scale, k_trans, views, nviews);
    };
    AttentionGeometry g;
    if (nviews || checkAttentionGrad(ctx, q, key, v, bias, y, lse, dy, dq, dk,
                                     dv, k_trans != 0, views, nviews, g))
      return onHost(ctx, cpu);
#ifdef AMPRT_HAVE_CUDNN_FRONTEND
    bool ran;
    AMPRT_TRY(dnnAttentionGrad(ctx, g, q, key, v, bias, y, lse, dy, dq, dk, dv,
                               scale, k_trans != 0, ran));
    if (ran)
      return AMPRT_OK;
#endif
    return onHost(ctx, cpu);
  });
}

} // namespace

void amprt::cuda::registerAttention(KernelTable &t) {
  t.attention = cudaAttention;
  t.attention_grad = cudaAttentionGrad;
}

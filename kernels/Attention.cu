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
// others fold into b. Each of q, k, v, y (and dy, dq, dk, dv) is read or
// written in place through its view (Ops.def's views; a contiguous
// operand's are its packed strides): the buffer's data plus the view's
// offset, and its strides as cuDNN's (mapView), which takes them when the
// head dim is innermost (stride 1), the dims folded into b fold into one
// stride, the other strides are multiples of 16 bytes and the first
// element is 16-byte aligned (cuDNN's kernels move 16-byte vectors and do
// not check); graphs bake the strides, which the plans' keys hold. A
// k_trans k [.., D, Sk] is read as [.., Sk,
// D] (its view's last two dims swapped): in place when that puts D
// innermost (k^T as a view of a [.., Sk, D] buffer), else gathered through
// its view into packed scratch, and attention_grad's dk likewise, scattered
// back through dk's view. lse [.., Sq] is Stats [b, h, Sq, 1], packed.
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
// empty tensors, an operand other than a k_trans k or dk that cuDNN cannot
// take in place (above: e.g. a view whose head dim is not innermost, or
// not 16-byte aligned), an unaligned lse or bias, and every problem for
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

#include <algorithm>
#include <cstring>
#endif

using namespace amprt;
using namespace amprt::cuda;

namespace {

#ifdef AMPRT_HAVE_CUDNN_FRONTEND

using namespace amprt::cuda::attention;

/// dst[o] = src[the view offset of element o of m's dims] (m.st[0]; 16-bit
/// elements, f16 or bf16): an operand read through its view into packed
/// scratch, one element per thread and trip (k is small next to the
/// attention over it).
__global__ void gatherKernel(const uint16_t *src, uint16_t *dst, int64_t n,
                             Bcast m) {
  for (int64_t o = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; o < n;
       o += int64_t(gridDim.x) * blockDim.x) {
    int64_t off[1];
    bcastOffsets<1>(m, o, off);
    dst[o] = src[off[0]];
  }
}

/// gatherKernel's inverse: packed src written through the view (whose
/// elements are distinct).
__global__ void scatterKernel(const uint16_t *src, uint16_t *dst, int64_t n,
                              Bcast m) {
  for (int64_t o = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; o < n;
       o += int64_t(gridDim.x) * blockDim.x) {
    int64_t off[1];
    bcastOffsets<1>(m, o, off);
    dst[off[0]] = src[o];
  }
}

/// The dims and strides of view w, its last two swapped when `swap` (k and
/// dk with k_trans: [.., d, sk] read as [.., sk, d]).
void viewDims(const AttentionView &w, bool swap, Shape &dims, Shape &strides) {
  dims = w.dims;
  strides = w.strides;
  if (swap) {
    size_t n = dims.size();
    std::swap(dims[n - 2], dims[n - 1]);
    std::swap(strides[n - 2], strides[n - 1]);
  }
}

/// Copies operand t, read through view w (swapped as viewDims), into packed
/// dst ([.., rows, cols]), or with `back` packed src into t through the
/// view.
amprt_status stage(amprt_context *ctx, const char *k, T t,
                   const AttentionView &w, bool swap, void *packed, bool back) {
  Shape dims, strides;
  viewDims(w, swap, dims, strides);
  Bcast m;
  m.rank = int32_t(dims.size());
  for (size_t j = 0; j < dims.size(); ++j) {
    m.dims[j] = dims[j];
    m.st[0][j] = strides[j];
  }
  int64_t n = numel(dims);
  uint16_t *view = static_cast<uint16_t *>(t->data) + w.offset;
  uint16_t *flat = static_cast<uint16_t *>(packed);
  if (back)
    scatterKernel<<<gridFor(n, 256), 256, 0, stream(ctx)>>>(flat, view, n, m);
  else
    gatherKernel<<<gridFor(n, 256), 256, 0, stream(ctx)>>>(view, flat, n, m);
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

/// A call cuDNN may take: its problem; each operand's first element (an
/// operand that is `staged` goes through packed scratch instead); for a
/// bias that cuDNN cannot read in place, the broadcast shape to expand it
/// from into scratch of the problem's bias shape and strides.
struct Call {
  Problem p;
  void *ptr[kOperands] = {};
  bool staged[kOperands] = {};
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
  key.append(reinterpret_cast<const char *>(p.stride), sizeof(p.stride));
  return key;
}

/// cuDNN's tensors are 16-byte aligned (the frontend's default alignment,
/// which its execute() enforces).
bool aligned16(const void *p) {
  return reinterpret_cast<uintptr_t>(p) % 16 == 0;
}
bool aligned16(T t) { return !t || aligned16(t->data); }

/// View w (swapped as viewDims) as cuDNN's [b, h, rows, cols] (rank 3:
/// [b, 1, rows, cols]; from rank 4 the last leading dim is h and the
/// others fold into b): its element strides into st. False when cuDNN
/// cannot read it in place: a cols stride other than 1, b's dims whose
/// strides do not fold into one (each the next inner one's times that
/// one's size), or a stride of b, h or rows that is 0 or not a multiple of
/// 8 elements (16 bytes). A dim of size 1 says nothing: it takes the
/// packed stride over the dims inside it, as a contiguous operand's.
bool mapView(const AttentionView &w, bool swap, int64_t (&st)[4]) {
  Shape dims, strides;
  viewDims(w, swap, dims, strides);
  size_t r = dims.size() - 2;
  int64_t h = r >= 2 ? dims[r - 1] : 1, rows = dims[r], cols = dims[r + 1];
  if (cols > 1 && strides[r + 1] != 1)
    return false;
  st[3] = 1;
  st[2] = rows > 1 ? strides[r] : cols;
  st[1] = h > 1 ? strides[r - 1] : st[2] * rows;
  st[0] = st[1] * h;
  size_t nb = r >= 2 ? r - 1 : 1;
  int64_t b = 1, next = 0;
  for (size_t j = nb; j-- > 0;) {
    if (dims[j] == 1)
      continue;
    if (b == 1)
      st[0] = strides[j];
    else if (strides[j] != next)
      return false;
    b *= dims[j];
    next = strides[j] * dims[j];
  }
  int64_t n[3] = {b, h, rows};
  for (int i = 0; i < 3; ++i)
    if (n[i] > 1 && (st[i] <= 0 || st[i] % 8 != 0))
      return false;
  return true;
}

/// Fills c from the checked geometry when cuDNN may take the call: a 16-bit
/// float dtype, no empty dim, the operands `ops` (in Operand order: q, k,
/// v, y, then dy, dq, dk, dv) each read or written in place through its
/// view (mapView, first element 16-byte aligned) or, k and dk with k_trans,
/// through packed scratch, an aligned lse, a bias of q's dtype; false: the
/// host runs it.
bool describe(const AttentionGeometry &g, std::initializer_list<T> ops, T bias,
              T lse, float scale, bool stats, bool kTrans, Call &c) {
  T q = *ops.begin();
  if (q->dtype != AMPRT_F16 && q->dtype != AMPRT_BF16)
    return false;
  if (g.batch == 0 || g.sq == 0 || g.sk == 0 || g.d == 0 || g.dv == 0)
    return false;
  if (!aligned16(lse))
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
  int i = 0;
  for (T t : ops) {
    const AttentionView &w = g.view[i];
    bool kt = kTrans && (i == opK || i == opDK);
    void *first = static_cast<uint16_t *>(t->data) + w.offset;
    if (mapView(w, kt, p.stride[i]) && aligned16(first)) {
      c.ptr[i++] = first;
      continue;
    }
    if (!kt)
      return false;
    // k [.., d, sk] gathered into (dk scattered from) packed [.., sk, d].
    c.staged[i] = true;
    int64_t packed[4] = {p.h * g.sk * g.d, g.sk * g.d, g.d, 1};
    std::copy(packed, packed + 4, p.stride[i++]);
  }
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
    // cudnnCreate allocates and waits: not while recording a graph.
    AMPRT_TRY(ctx->refuseWhileRecording(
        k, "it would create the cuDNN handle (run the call once first)"));
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
  if (it == cache.end()) {
    std::shared_ptr<Plan> built = buildPlan(h, p, backward);
    // A plan turned down while a graph is recorded may have been turned
    // down for the recording's sake: not kept, the call runs eagerly
    // later and builds it again.
    if (!built && ctx->capturing) {
      plan = nullptr;
      return AMPRT_OK;
    }
    it = cache.emplace(std::move(key), std::move(built)).first;
  }
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

/// Packed scratch for a staged operand of the problem's k ([b, h, sk, d]).
amprt_status kScratch(amprt_context *ctx, const char *k,
                      const AttentionGeometry &g, Scratch &tmp) {
  return tmp.get(ctx, k, size_t(g.batch * g.sk * g.d) * sizeof(uint16_t));
}

/// The cuDNN path of attention; `ran` false: the host runs the call.
amprt_status dnnAttention(amprt_context *ctx, const AttentionGeometry &g, T q,
                          T key, T v, T bias, T y, T lse, float scale,
                          bool kTrans, bool &ran) {
  const char *k = "attention";
  ran = false;
  Call c;
  if (!describe(g, {q, key, v, y}, bias, lse, scale, lse != nullptr, kTrans, c))
    return AMPRT_OK;
  cudnnHandle_t h;
  std::shared_ptr<Plan> plan;
  AMPRT_TRY(findPlan(ctx, k, /*backward=*/false, c.p, h, plan));
  if (!plan)
    return AMPRT_OK;
  ran = true;
  // A k_trans k that cuDNN cannot read in place goes through a packed
  // [.., sk, d] copy.
  Scratch kt, bt;
  void *bData;
  if (c.staged[opK]) {
    AMPRT_TRY(kScratch(ctx, k, g, kt));
    AMPRT_TRY(stage(ctx, k, key, g.view[opK], true, kt.p, /*back=*/false));
    c.ptr[opK] = kt.p;
  }
  AMPRT_TRY(biasData(ctx, k, c, bias, bt, bData));
  std::unordered_map<int64_t, void *> ptrs = {
      {kQ, c.ptr[opQ]}, {kK, c.ptr[opK]}, {kV, c.ptr[opV]}, {kO, c.ptr[opO]}};
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
  if (!describe(g, {q, key, v, y, dy, dq, dk, dv}, bias, lse, scale,
                /*stats=*/true, kTrans, c))
    return AMPRT_OK;
  cudnnHandle_t h;
  std::shared_ptr<Plan> plan;
  AMPRT_TRY(findPlan(ctx, k, /*backward=*/true, c.p, h, plan));
  if (!plan)
    return AMPRT_OK;
  ran = true;
  // A k_trans k or dk that cuDNN cannot read or write in place goes through
  // a packed [.., sk, d] copy.
  Scratch kt, dkt, bt;
  void *bData;
  if (c.staged[opK]) {
    AMPRT_TRY(kScratch(ctx, k, g, kt));
    AMPRT_TRY(stage(ctx, k, key, g.view[opK], true, kt.p, /*back=*/false));
    c.ptr[opK] = kt.p;
  }
  if (c.staged[opDK]) {
    AMPRT_TRY(kScratch(ctx, k, g, dkt));
    c.ptr[opDK] = dkt.p;
  }
  AMPRT_TRY(biasData(ctx, k, c, bias, bt, bData));
  std::unordered_map<int64_t, void *> ptrs = {
      {kQ, c.ptr[opQ]},   {kK, c.ptr[opK]},   {kV, c.ptr[opV]},
      {kO, c.ptr[opO]},   {kDO, c.ptr[opDO]}, {kStats, lse->data},
      {kDQ, c.ptr[opDQ]}, {kDK, c.ptr[opDK]}, {kDV, c.ptr[opDV]}};
  if (bias)
    ptrs[kBias] = bData;
  AMPRT_TRY(run(ctx, k, h, *plan, ptrs));
  if (c.staged[opDK])
    AMPRT_TRY(stage(ctx, k, dk, g.view[opDK], true, dkt.p, /*back=*/true));
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
    if (checkAttention(ctx, k, q, key, v, bias, y, lse, k_trans != 0,
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
    if (checkAttentionGrad(ctx, q, key, v, bias, y, lse, dy, dq, dk, dv,
                           k_trans != 0, views, nviews, g))
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

//===- Attention.cpp - fused scaled dot-product attention -----------------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// attention and attention_grad (Ops.def): the attention subgraph of a
// training graph (amprt-fuse, FuseAttention.cpp) as two calls whose scores
// and probabilities live only inside the call, one batch (a head of a
// sample) at a time. This is the CPU reference of the fusion and its CPU
// implementation: s = scale q k^T + bias and p = softmax(s) are computed in
// f32 into a per-thread scratch, never rounded to the operands' dtype (the
// unfused calls round s and p to it); the backward recomputes p from the
// forward's log-sum-exp instead of reading a stored p, as flash attention
// and cuDNN's fused attention do.
//
// Each operand is read and written through its view (AttentionView: an
// offset and strides into its buffer, the packed ones without `views`), a
// batch's matrix at a time: gathered into f32 scratch, results rounded once
// and scattered. The products are amprt::sgemm's (f32 accumulation); the
// batches are split over the thread pool, each thread's products then run
// on that thread.
//
//===----------------------------------------------------------------------===//

#include "Internal.h"
#include "amp/Runtime/Math/ElementAccess.h"

#include <algorithm>
#include <cmath>
#include <limits>

using namespace amprt;

namespace {

using T = const amprt_tensor *;

/// The operands in the order of Ops.def's views.
enum Operand { Q, K, V, Y, DY, DQ, DK, DV };
/// The most elements a view may have, and a batch's scores (2^40: every
/// product of two of them fits in int64, and no real tensor is near it).
constexpr int64_t kMaxViewElements = int64_t(1) << 40;
const char *const kNames[] = {"q", "k", "v", "y", "dy", "dq", "dk", "dv"};

/// f(element offset of row a's first element, a, cols, column stride) for
/// each row a of batch i's [rows, cols] matrix through view `w`.
template <typename F>
void forEachRow(const AttentionView &w, const Shape &lead, int64_t i, F &&f) {
  size_t r = lead.size();
  int64_t base = w.batchOffset(lead, i);
  for (int64_t a = 0; a < w.dims[r]; ++a)
    f(base + a * w.strides[r], a, w.dims[r + 1], w.strides[r + 1]);
}

/// Batch i's matrix of operand `t` through view `w`, widened into dst
/// (row-major, ld cols), a row at a time on this thread.
void gather(T t, const AttentionView &w, const Shape &lead, int64_t i,
            float *dst) {
  forEachRow(w, lead, i, [&](int64_t o, int64_t a, int64_t cols, int64_t cs) {
    if (cs == 1)
      return widenBlock(t->data, t->dtype, o, cols, dst + a * cols);
    for (int64_t b = 0; b < cols; ++b)
      dst[a * cols + b] = loadF(t->data, t->dtype, o + b * cs);
  });
}

/// The inverse of gather: src rounded once into batch i's matrix of `t`.
void scatter(const float *src, T t, const AttentionView &w, const Shape &lead,
             int64_t i) {
  forEachRow(w, lead, i, [&](int64_t o, int64_t a, int64_t cols, int64_t cs) {
    if (cs == 1)
      return narrowBlock(src + a * cols, t->data, t->dtype, o, cols);
    for (int64_t b = 0; b < cols; ++b)
      storeF(t->data, t->dtype, o + b * cs, src[a * cols + b]);
  });
}

/// s[sq, sk] = scale * q kt + bias for batch i, kt [d, sk] (ld sk).
void scores(const AttentionGeometry &g, float scale, const float *q,
            const float *kt, const float *bias, int64_t i, float *s) {
  sgemm(g.sq, g.sk, g.d, scale, q, g.d, kt, g.sk, false, s, g.sk);
  if (!bias)
    return;
  size_t r = g.lead.size();
  int64_t base = 0;
  for (int64_t j = int64_t(r) - 1, rest = i; j >= 0; --j) {
    base += (rest % g.lead[size_t(j)]) * g.biasStrides[size_t(j)];
    rest /= g.lead[size_t(j)];
  }
  int64_t rs = g.biasStrides[r], cs = g.biasStrides[r + 1];
  for (int64_t a = 0; a < g.sq; ++a)
    for (int64_t b = 0; b < g.sk; ++b)
      s[a * g.sk + b] += bias[base + a * rs + b * cs];
}

/// A view's checks against its buffer `t`: non-negative offset, dims and
/// strides, every element inside the buffer, and (`distinct`, an output)
/// no element reached twice: with the dims of more than one element in
/// ascending order of stride, each stride passes the last element that the
/// smaller ones reach.
amprt_status checkView(amprt_context *ctx, const char *k, const char *name, T t,
                       const AttentionView &w, bool distinct) {
  // Every sum and product below is checked: a view is caller data.
  int64_t last = w.offset, count = 1;
  bool empty = false, overflow = w.offset < 0;
  std::vector<std::pair<int64_t, int64_t>> order;
  for (size_t j = 0; j < w.dims.size(); ++j) {
    if (w.dims[j] < 0 || w.strides[j] < 0)
      return ctx->fail(AMPRT_ERR_SHAPE,
                       "%s: %s's view has a negative dim or stride", k, name);
    empty = empty || w.dims[j] == 0;
    int64_t span = 0;
    overflow = overflow || __builtin_mul_overflow(count, w.dims[j], &count) ||
               count > kMaxViewElements ||
               __builtin_mul_overflow(std::max<int64_t>(w.dims[j] - 1, 0),
                                      w.strides[j], &span) ||
               __builtin_add_overflow(last, span, &last);
    if (w.dims[j] > 1)
      order.emplace_back(w.strides[j], w.dims[j]);
  }
  if (overflow && !empty)
    return ctx->fail(AMPRT_ERR_SHAPE,
                     "%s: %s's view (offset %lld, dims %s) is too large or "
                     "has a negative offset",
                     k, name, (long long)w.offset, shapeStr(w.dims).c_str());
  if (!empty && last >= numel(t))
    return ctx->fail(AMPRT_ERR_SHAPE,
                     "%s: %s's view (offset %lld, dims %s) reaches element "
                     "%lld of a buffer of %lld",
                     k, name, (long long)w.offset, shapeStr(w.dims).c_str(),
                     (long long)last, (long long)numel(t));
  if (!distinct || empty)
    return AMPRT_OK;
  std::sort(order.begin(), order.end());
  int64_t reach = 0; // the largest offset the smaller strides reach (<= last)
  for (auto [stride, dim] : order) {
    if (stride <= reach)
      return ctx->fail(AMPRT_ERR_SHAPE,
                       "%s: %s's view writes an element twice (dims %s)", k,
                       name, shapeStr(w.dims).c_str());
    reach += (dim - 1) * stride;
  }
  return AMPRT_OK;
}

/// The views of `ts` (in Operand order) from Ops.def's `views`, or their
/// shapes and packed strides when nviews is 0.
amprt_status readViews(amprt_context *ctx, const char *k,
                       std::initializer_list<T> ts, const int64_t *views,
                       int64_t nviews, AttentionGeometry &g) {
  int64_t n = int64_t(ts.size());
  if (nviews == 0) {
    int i = 0;
    for (T t : ts) {
      AttentionView &w = g.view[i++];
      w.offset = 0;
      w.dims = shapeOf(t);
      w.strides = stridesOf(w.dims);
    }
    return AMPRT_OK;
  }
  int64_t per = nviews / n, r = (per - 1) / 2;
  if (!views || nviews < 0 || nviews % n || per % 2 == 0 || r < 3 ||
      r > AMPRT_MAX_RANK)
    return ctx->fail(AMPRT_ERR_INVALID_ARGUMENT,
                     "%s: %lld view values for %lld operands: expected "
                     "(1 + 2 r) each, 3 <= r <= %d",
                     k, (long long)nviews, (long long)n, AMPRT_MAX_RANK);
  int i = 0;
  for (T t : ts) {
    AttentionView &w = g.view[i];
    const int64_t *e = views + i * per;
    w.offset = e[0];
    w.dims.assign(e + 1, e + 1 + r);
    w.strides.assign(e + 1 + r, e + 1 + 2 * r);
    AMPRT_TRY(checkView(ctx, k, kNames[i], t, w, i == Y || i >= DQ));
    ++i;
  }
  return AMPRT_OK;
}

} // namespace

int64_t AttentionView::batchOffset(const Shape &lead, int64_t i) const {
  int64_t off = offset;
  for (int64_t j = int64_t(lead.size()) - 1; j >= 0; --j) {
    off += (i % lead[size_t(j)]) * strides[size_t(j)];
    i /= lead[size_t(j)];
  }
  return off;
}

/// The checks of attention's operands once their views are read: dtypes,
/// the logical shapes, the bias and lse.
static amprt_status checkOperands(amprt_context *ctx, const char *k, T q, T key,
                                  T v, T bias, T y, T lse, bool kTrans,
                                  bool lseOptional, AttentionGeometry &g) {
  AMPRT_TRY(checkFloat(ctx, k, "q", q));
  for (auto [name, t] : {std::pair{"k", key}, {"v", v}, {"y", y}})
    if (t->dtype != q->dtype)
      return ctx->fail(AMPRT_ERR_DTYPE, "%s: %s has dtype %s, q %s", k, name,
                       amprt_dtype_name(t->dtype), amprt_dtype_name(q->dtype));
  const Shape &sq = g.view[Q].dims, &sk = g.view[K].dims, &sv = g.view[V].dims;
  if (sq.size() < 3)
    return ctx->fail(AMPRT_ERR_SHAPE,
                     "%s: q has shape %s, expected rank 3 or more", k,
                     shapeStr(sq).c_str());
  size_t r = sq.size() - 2;
  g.lead.assign(sq.begin(), sq.begin() + long(r));
  g.sq = sq[r];
  g.d = sq[r + 1];
  if (sk.size() != r + 2 ||
      !std::equal(g.lead.begin(), g.lead.end(), sk.begin()))
    return ctx->fail(AMPRT_ERR_SHAPE, "%s: k has shape %s, q %s", k,
                     shapeStr(sk).c_str(), shapeStr(sq).c_str());
  g.sk = kTrans ? sk[r + 1] : sk[r];
  if ((kTrans ? sk[r] : sk[r + 1]) != g.d)
    return ctx->fail(AMPRT_ERR_SHAPE,
                     "%s: k has shape %s (k_trans %d), q's last dim is %lld", k,
                     shapeStr(sk).c_str(), int(kTrans), (long long)g.d);
  if (sv.size() != r + 2 ||
      !std::equal(g.lead.begin(), g.lead.end(), sv.begin()) || sv[r] != g.sk)
    return ctx->fail(AMPRT_ERR_SHAPE,
                     "%s: v has shape %s, expected [.., %lld, dv]", k,
                     shapeStr(sv).c_str(), (long long)g.sk);
  g.dv = sv[r + 1];
  Shape want = g.lead;
  want.push_back(g.sq);
  want.push_back(g.dv);
  if (g.view[Y].dims != want)
    return ctx->fail(AMPRT_ERR_SHAPE, "%s: y has shape %s, expected %s", k,
                     shapeStr(g.view[Y].dims).c_str(), shapeStr(want).c_str());
  g.batch = numel(g.lead);
  // Each thread keeps a batch's scores in f32.
  int64_t scores = 0;
  if (__builtin_mul_overflow(g.sq, g.sk, &scores) || scores > kMaxViewElements)
    return ctx->fail(AMPRT_ERR_SHAPE,
                     "%s: %lld x %lld scores per batch are too many", k,
                     (long long)g.sq, (long long)g.sk);
  Shape s = g.lead;
  s.push_back(g.sq);
  s.push_back(g.sk);
  g.biasStrides.clear();
  if (bias) {
    AMPRT_TRY(checkFloat(ctx, k, "bias", bias));
    Shape out;
    if (!broadcastShapes({shapeOf(bias), s}, out) || out != s)
      return ctx->fail(AMPRT_ERR_SHAPE,
                       "%s: bias has shape %s, which does not broadcast to the "
                       "scores' %s",
                       k, shapeStr(bias).c_str(), shapeStr(s).c_str());
    g.biasStrides = broadcastStrides(shapeOf(bias), s);
  }
  if (!lse && lseOptional)
    return AMPRT_OK;
  AMPRT_TRY(checkDtype(ctx, k, "lse", lse, AMPRT_F32));
  Shape rows = g.lead;
  rows.push_back(g.sq);
  return checkShape(ctx, k, "lse", lse, rows);
}

amprt_status amprt::checkAttention(amprt_context *ctx, const char *k, T q,
                                   T key, T v, T bias, T y, T lse, bool kTrans,
                                   bool lseOptional, const int64_t *views,
                                   int64_t nviews, AttentionGeometry &g) {
  int i = 0;
  for (T t : {q, key, v, y})
    AMPRT_TRY(checkFloat(ctx, k, kNames[i++], t));
  AMPRT_TRY(readViews(ctx, k, {q, key, v, y}, views, nviews, g));
  return checkOperands(ctx, k, q, key, v, bias, y, lse, kTrans, lseOptional, g);
}

amprt_status amprt::checkAttentionGrad(amprt_context *ctx, T q, T key, T v,
                                       T bias, T y, T lse, T dy, T dq, T dk,
                                       T dv, bool kTrans, const int64_t *views,
                                       int64_t nviews, AttentionGeometry &g) {
  const char *k = "attention_grad";
  int i = 0;
  for (T t : {q, key, v, y, dy, dq, dk, dv})
    AMPRT_TRY(checkFloat(ctx, k, kNames[i++], t));
  AMPRT_TRY(
      readViews(ctx, k, {q, key, v, y, dy, dq, dk, dv}, views, nviews, g));
  AMPRT_TRY(checkOperands(ctx, k, q, key, v, bias, y, lse, kTrans,
                          /*lseOptional=*/false, g));
  for (auto [j, t, like] :
       {std::tuple{DY, dy, Y}, {DQ, dq, Q}, {DK, dk, K}, {DV, dv, V}}) {
    AMPRT_TRY(checkDtype(ctx, k, kNames[j], t, q->dtype));
    if (g.view[j].dims != g.view[like].dims)
      return ctx->fail(AMPRT_ERR_SHAPE, "%s: %s has shape %s, expected %s", k,
                       kNames[j], shapeStr(g.view[j].dims).c_str(),
                       shapeStr(g.view[like].dims).c_str());
  }
  return AMPRT_OK;
}

extern "C" {

amprt_status amprt_attention(amprt_context *ctx, T q, T k, T v, T bias, T y,
                             T lse, float scale, int32_t k_trans,
                             const int64_t *views, int64_t nviews) {
  AMPRT_DISPATCH(attention, ctx, q, k, v, bias, y, lse, scale, k_trans, views,
                 nviews);
  return guard(ctx, "attention", [&]() -> amprt_status {
    AttentionGeometry g;
    AMPRT_TRY(checkAttention(ctx, "attention", q, k, v, bias, y, lse,
                             k_trans != 0, /*lseOptional=*/true, views, nviews,
                             g));
    F32In ib(bias);
    float *lp = lse ? static_cast<float *>(lse->data) : nullptr;
    double work =
        double(g.batch) * double(g.sq) * double(g.sk) * double(g.d + g.dv) * 2;
    parallelFor(g.batch, work, [&](int64_t i0, int64_t i1) {
      std::vector<float> qb(size_t(g.sq * g.d)), kb(size_t(g.sk * g.d)),
          kt(size_t(g.d * g.sk)), vb(size_t(g.sk * g.dv)),
          yb(size_t(g.sq * g.dv)), s(size_t(g.sq * g.sk));
      for (int64_t i = i0; i < i1; ++i) {
        gather(q, g.view[Q], g.lead, i, qb.data());
        gather(v, g.view[V], g.lead, i, vb.data());
        if (k_trans) {
          gather(k, g.view[K], g.lead, i, kt.data());
        } else {
          gather(k, g.view[K], g.lead, i, kb.data());
          transpose2d(kb.data(), g.sk, g.d, kt.data());
        }
        scores(g, scale, qb.data(), kt.data(), ib.p, i, s.data());
        for (int64_t a = 0; a < g.sq; ++a) {
          float *row = s.data() + a * g.sk;
          float m = -std::numeric_limits<float>::infinity();
          for (int64_t b = 0; b < g.sk; ++b)
            m = std::max(m, row[b]);
          float sum = 0.f;
          for (int64_t b = 0; b < g.sk; ++b)
            sum += row[b] = std::exp(row[b] - m);
          for (int64_t b = 0; b < g.sk; ++b)
            row[b] /= sum;
          if (lp)
            lp[i * g.sq + a] = m + std::log(sum);
        }
        sgemm(g.sq, g.dv, g.sk, 1.f, s.data(), g.sk, vb.data(), g.dv, false,
              yb.data(), g.dv);
        scatter(yb.data(), y, g.view[Y], g.lead, i);
      }
    });
    return AMPRT_OK;
  });
}

amprt_status amprt_attention_grad(amprt_context *ctx, T q, T k, T v, T bias,
                                  T y, T lse, T dy, T dq, T dk, T dv,
                                  float scale, int32_t k_trans,
                                  const int64_t *views, int64_t nviews) {
  AMPRT_DISPATCH(attention_grad, ctx, q, k, v, bias, y, lse, dy, dq, dk, dv,
                 scale, k_trans, views, nviews);
  return guard(ctx, "attention_grad", [&]() -> amprt_status {
    AttentionGeometry g;
    AMPRT_TRY(checkAttentionGrad(ctx, q, k, v, bias, y, lse, dy, dq, dk, dv,
                                 k_trans != 0, views, nviews, g));
    bool kTrans = k_trans != 0;
    F32In ib(bias);
    const float *lp = static_cast<const float *>(lse->data);
    double work = double(g.batch) * double(g.sq) * double(g.sk) *
                  double(3 * g.d + 2 * g.dv) * 2;
    parallelFor(g.batch, work, [&](int64_t i0, int64_t i1) {
      size_t ss = size_t(g.sq * g.sk), kd = size_t(g.sk * g.d);
      std::vector<float> qb(size_t(g.sq * g.d)), kb(kd), kt(kd),
          vb(size_t(g.sk * g.dv)), dyb(size_t(g.sq * g.dv)), p(ss), dp(ss),
          t(ss), m, out;
      for (int64_t i = i0; i < i1; ++i) {
        gather(q, g.view[Q], g.lead, i, qb.data());
        gather(v, g.view[V], g.lead, i, vb.data());
        gather(dy, g.view[DY], g.lead, i, dyb.data());
        // kb: k as [sk, d]; kt: as [d, sk].
        if (kTrans) {
          gather(k, g.view[K], g.lead, i, kt.data());
          transpose2d(kt.data(), g.d, g.sk, kb.data());
        } else {
          gather(k, g.view[K], g.lead, i, kb.data());
          transpose2d(kb.data(), g.sk, g.d, kt.data());
        }
        // p = exp(s - lse), the forward's probabilities.
        scores(g, scale, qb.data(), kt.data(), ib.p, i, p.data());
        for (int64_t a = 0; a < g.sq; ++a) {
          float l = lp[i * g.sq + a];
          for (int64_t b = 0; b < g.sk; ++b)
            p[size_t(a * g.sk + b)] = std::exp(p[size_t(a * g.sk + b)] - l);
        }
        // dv = p^T dy.
        transpose2d(p.data(), g.sq, g.sk, t.data());
        out.resize(size_t(g.sk * g.dv));
        sgemm(g.sk, g.dv, g.sq, 1.f, t.data(), g.sq, dyb.data(), g.dv, false,
              out.data(), g.dv);
        scatter(out.data(), dv, g.view[DV], g.lead, i);
        // dp = dy v^T; ds = p (dp - rowsum(p dp)), over dp.
        m.resize(size_t(g.dv * g.sk));
        transpose2d(vb.data(), g.sk, g.dv, m.data());
        sgemm(g.sq, g.sk, g.dv, 1.f, dyb.data(), g.dv, m.data(), g.sk, false,
              dp.data(), g.sk);
        for (int64_t a = 0; a < g.sq; ++a) {
          float *pr = p.data() + a * g.sk, *dr = dp.data() + a * g.sk;
          float sum = 0.f;
          for (int64_t b = 0; b < g.sk; ++b)
            sum += pr[b] * dr[b];
          for (int64_t b = 0; b < g.sk; ++b)
            dr[b] = pr[b] * (dr[b] - sum);
        }
        // dq = scale ds k.
        out.resize(size_t(g.sq * g.d));
        sgemm(g.sq, g.d, g.sk, scale, dp.data(), g.sk, kb.data(), g.d, false,
              out.data(), g.d);
        scatter(out.data(), dq, g.view[DQ], g.lead, i);
        out.resize(kd);
        if (kTrans) {
          // dk [d, sk] = scale q^T ds.
          m.resize(size_t(g.d * g.sq));
          transpose2d(qb.data(), g.sq, g.d, m.data());
          sgemm(g.d, g.sk, g.sq, scale, m.data(), g.sq, dp.data(), g.sk, false,
                out.data(), g.sk);
        } else {
          // dk [sk, d] = scale ds^T q.
          transpose2d(dp.data(), g.sq, g.sk, t.data());
          sgemm(g.sk, g.d, g.sq, scale, t.data(), g.sq, qb.data(), g.d, false,
                out.data(), g.d);
        }
        scatter(out.data(), dk, g.view[DK], g.lead, i);
      }
    });
    return AMPRT_OK;
  });
}

} // extern "C"

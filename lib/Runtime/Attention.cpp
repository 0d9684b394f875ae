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
// The products are amprt::sgemm's (f32 accumulation); the batches are split
// over the thread pool, each thread's products then run on that thread.
//
//===----------------------------------------------------------------------===//

#include "Internal.h"

#include <cmath>
#include <limits>

using namespace amprt;

namespace {

using T = const amprt_tensor *;

/// Element offset of batch `i` (a flat index over g.lead) into a tensor
/// whose leading dims have element strides `strides` (aligned to lead).
int64_t batchOffset(const AttentionGeometry &g, const Shape &strides,
                    int64_t i) {
  int64_t off = 0;
  for (int64_t j = int64_t(g.lead.size()) - 1; j >= 0; --j) {
    off += (i % g.lead[size_t(j)]) * strides[size_t(j)];
    i /= g.lead[size_t(j)];
  }
  return off;
}

/// s[sq, sk] = scale * q kt + bias for one batch, kt [d, sk] (ld sk).
void scores(const AttentionGeometry &g, float scale, const float *q,
            const float *kt, const float *bias, int64_t i, float *s) {
  sgemm(g.sq, g.sk, g.d, scale, q, g.d, kt, g.sk, false, s, g.sk);
  if (!bias)
    return;
  size_t r = g.lead.size();
  int64_t base = batchOffset(g, g.biasStrides, i);
  int64_t rs = g.biasStrides[r], cs = g.biasStrides[r + 1];
  for (int64_t a = 0; a < g.sq; ++a)
    for (int64_t b = 0; b < g.sk; ++b)
      s[a * g.sk + b] += bias[base + a * rs + b * cs];
}

/// kt [d, sk] of one batch's k: the data itself with k_trans, else a
/// transposed copy in `buf`.
const float *keyColumns(const AttentionGeometry &g, const float *k, bool kTrans,
                        std::vector<float> &buf) {
  if (kTrans)
    return k;
  buf.resize(size_t(g.d * g.sk));
  transpose2d(k, g.sk, g.d, buf.data());
  return buf.data();
}

} // namespace

amprt_status amprt::checkAttention(amprt_context *ctx, const char *k, T q,
                                   T key, T v, T bias, T y, T lse, bool kTrans,
                                   bool lseOptional, AttentionGeometry &g) {
  AMPRT_TRY(checkFloat(ctx, k, "q", q));
  AMPRT_TRY(checkFloat(ctx, k, "k", key));
  AMPRT_TRY(checkFloat(ctx, k, "v", v));
  AMPRT_TRY(checkFloat(ctx, k, "y", y));
  for (auto [name, t] : {std::pair{"k", key}, {"v", v}, {"y", y}})
    if (t->dtype != q->dtype)
      return ctx->fail(AMPRT_ERR_DTYPE, "%s: %s has dtype %s, q %s", k, name,
                       amprt_dtype_name(t->dtype), amprt_dtype_name(q->dtype));
  if (q->rank < 3)
    return ctx->fail(AMPRT_ERR_SHAPE,
                     "%s: q has shape %s, expected rank 3 or more", k,
                     shapeStr(q).c_str());
  Shape sq = shapeOf(q), sk = shapeOf(key), sv = shapeOf(v);
  size_t r = size_t(q->rank) - 2;
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
  AMPRT_TRY(checkShape(ctx, k, "y", y, want));
  g.batch = numel(g.lead);
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

amprt_status amprt::checkAttentionGrad(amprt_context *ctx, T q, T key, T v,
                                       T bias, T y, T lse, T dy, T dq, T dk,
                                       T dv, bool kTrans,
                                       AttentionGeometry &g) {
  const char *k = "attention_grad";
  AMPRT_TRY(checkAttention(ctx, k, q, key, v, bias, y, lse, kTrans,
                           /*lseOptional=*/false, g));
  for (auto [name, t, like] : {std::tuple{"dy", dy, y},
                               {"dq", dq, q},
                               {"dk", dk, key},
                               {"dv", dv, v}}) {
    AMPRT_TRY(checkDtype(ctx, k, name, t, q->dtype));
    AMPRT_TRY(checkShape(ctx, k, name, t, shapeOf(like)));
  }
  return AMPRT_OK;
}

extern "C" {

amprt_status amprt_attention(amprt_context *ctx, T q, T k, T v, T bias, T y,
                             T lse, float scale, int32_t k_trans) {
  AMPRT_DISPATCH(attention, ctx, q, k, v, bias, y, lse, scale, k_trans);
  return guard(ctx, "attention", [&]() -> amprt_status {
    AttentionGeometry g;
    AMPRT_TRY(checkAttention(ctx, "attention", q, k, v, bias, y, lse,
                             k_trans != 0, /*lseOptional=*/true, g));
    F32In iq(q), ik(k), iv(v), ib(bias);
    F32Out out(y);
    float *lp = lse ? static_cast<float *>(lse->data) : nullptr;
    double work =
        double(g.batch) * double(g.sq) * double(g.sk) * double(g.d + g.dv) * 2;
    parallelFor(g.batch, work, [&](int64_t i0, int64_t i1) {
      std::vector<float> kt, s(size_t(g.sq * g.sk));
      for (int64_t i = i0; i < i1; ++i) {
        const float *kb =
            keyColumns(g, ik.p + i * g.sk * g.d, k_trans != 0, kt);
        scores(g, scale, iq.p + i * g.sq * g.d, kb, ib.p, i, s.data());
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
        sgemm(g.sq, g.dv, g.sk, 1.f, s.data(), g.sk, iv.p + i * g.sk * g.dv,
              g.dv, false, out.p + i * g.sq * g.dv, g.dv);
      }
    });
    out.commit();
    return AMPRT_OK;
  });
}

amprt_status amprt_attention_grad(amprt_context *ctx, T q, T k, T v, T bias,
                                  T y, T lse, T dy, T dq, T dk, T dv,
                                  float scale, int32_t k_trans) {
  AMPRT_DISPATCH(attention_grad, ctx, q, k, v, bias, y, lse, dy, dq, dk, dv,
                 scale, k_trans);
  return guard(ctx, "attention_grad", [&]() -> amprt_status {
    AttentionGeometry g;
    AMPRT_TRY(checkAttentionGrad(ctx, q, k, v, bias, y, lse, dy, dq, dk, dv,
                                 k_trans != 0, g));
    bool kTrans = k_trans != 0;
    F32In iq(q), ik(k), iv(v), ib(bias), idy(dy);
    F32Out oq(dq), ok(dk), ov(dv);
    const float *lp = static_cast<const float *>(lse->data);
    double work = double(g.batch) * double(g.sq) * double(g.sk) *
                  double(3 * g.d + 2 * g.dv) * 2;
    parallelFor(g.batch, work, [&](int64_t i0, int64_t i1) {
      size_t ss = size_t(g.sq * g.sk);
      std::vector<float> kt, p(ss), dp(ss), t(ss), m;
      for (int64_t i = i0; i < i1; ++i) {
        const float *qb = iq.p + i * g.sq * g.d;
        const float *kb = ik.p + i * g.sk * g.d;
        const float *vb = iv.p + i * g.sk * g.dv;
        const float *dyb = idy.p + i * g.sq * g.dv;
        // p = exp(s - lse), the forward's probabilities.
        scores(g, scale, qb, keyColumns(g, kb, kTrans, kt), ib.p, i, p.data());
        for (int64_t a = 0; a < g.sq; ++a) {
          float l = lp[i * g.sq + a];
          for (int64_t b = 0; b < g.sk; ++b)
            p[size_t(a * g.sk + b)] = std::exp(p[size_t(a * g.sk + b)] - l);
        }
        // dv = p^T dy.
        transpose2d(p.data(), g.sq, g.sk, t.data());
        sgemm(g.sk, g.dv, g.sq, 1.f, t.data(), g.sq, dyb, g.dv, false,
              ov.p + i * g.sk * g.dv, g.dv);
        // dp = dy v^T; ds = p (dp - rowsum(p dp)), over dp.
        m.resize(size_t(g.dv * g.sk));
        transpose2d(vb, g.sk, g.dv, m.data());
        sgemm(g.sq, g.sk, g.dv, 1.f, dyb, g.dv, m.data(), g.sk, false,
              dp.data(), g.sk);
        for (int64_t a = 0; a < g.sq; ++a) {
          float *pr = p.data() + a * g.sk, *dr = dp.data() + a * g.sk;
          float sum = 0.f;
          for (int64_t b = 0; b < g.sk; ++b)
            sum += pr[b] * dr[b];
          for (int64_t b = 0; b < g.sk; ++b)
            dr[b] = pr[b] * (dr[b] - sum);
        }
        // dq = scale ds k, k as [sk, d].
        const float *kRows = kb;
        if (kTrans) {
          m.resize(size_t(g.sk * g.d));
          transpose2d(kb, g.d, g.sk, m.data());
          kRows = m.data();
        }
        sgemm(g.sq, g.d, g.sk, scale, dp.data(), g.sk, kRows, g.d, false,
              oq.p + i * g.sq * g.d, g.d);
        float *dkb = ok.p + i * g.sk * g.d;
        if (kTrans) {
          // dk [d, sk] = scale q^T ds.
          m.resize(size_t(g.d * g.sq));
          transpose2d(qb, g.sq, g.d, m.data());
          sgemm(g.d, g.sk, g.sq, scale, m.data(), g.sq, dp.data(), g.sk, false,
                dkb, g.sk);
        } else {
          // dk [sk, d] = scale ds^T q.
          transpose2d(dp.data(), g.sq, g.sk, t.data());
          sgemm(g.sk, g.d, g.sq, scale, t.data(), g.sq, qb, g.d, false, dkb,
                g.d);
        }
      }
    });
    oq.commit();
    ok.commit();
    ov.commit();
    return AMPRT_OK;
  });
}

} // extern "C"

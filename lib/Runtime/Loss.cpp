//===- Loss.cpp - SoftmaxCrossEntropyLoss, MSELoss and their gradients ----===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// The loss is a reduction: it accumulates in f64. scores [N, C, d...] are
// viewed as [N, C, D] with D the product of the extra dims; labels [N, D].
//
//===----------------------------------------------------------------------===//

#include "Internal.h"

#include <algorithm>
#include <cmath>
#include <memory>

using namespace amprt;

namespace {

using T = const amprt_tensor *;

int64_t labelAt(T labels, int64_t i) {
  return labels->dtype == AMPRT_I64
             ? static_cast<const int64_t *>(labels->data)[i]
             : static_cast<const int32_t *>(labels->data)[i];
}

struct SceShape {
  int64_t N = 0, C = 0, D = 1;
  Shape lossNone; // [N, d...]
};

amprt_status sceCheck(amprt_context *ctx, const char *k, T scores, T labels,
                      T weight, int32_t reduction, SceShape &s) {
  if (scores->rank < 2)
    return ctx->fail(AMPRT_ERR_SHAPE,
                     "%s: scores have shape %s, need rank >= 2 ([N, C, ...])",
                     k, shapeStr(scores).c_str());
  AMPRT_TRY(checkTensor(ctx, k, "labels", labels));
  if (labels->dtype != AMPRT_I64 && labels->dtype != AMPRT_I32)
    return ctx->fail(AMPRT_ERR_DTYPE,
                     "%s: labels have dtype %s, expected "
                     "i64 or i32",
                     k, amprt_dtype_name(labels->dtype));
  if (reduction < 0 || reduction > 2)
    return ctx->fail(AMPRT_ERR_INVALID_ARGUMENT,
                     "%s: reduction %d (0 none, 1 sum, 2 mean)", k, reduction);
  s.N = scores->shape[0];
  s.C = scores->shape[1];
  s.lossNone = {s.N};
  for (int32_t i = 2; i < scores->rank; ++i) {
    s.D *= scores->shape[i];
    s.lossNone.push_back(scores->shape[i]);
  }
  AMPRT_TRY(checkShape(ctx, k, "labels", labels, s.lossNone));
  AMPRT_TRY(checkFloat(ctx, k, "weight", weight, true));
  if (weight)
    AMPRT_TRY(checkShape(ctx, k, "weight", weight, {s.C}));
  return AMPRT_OK;
}

/// The negative log-likelihood of `lp` (log-probabilities [N, C, D] as
/// f32) at the labels, weighted, reduced (0 none, 1 sum, 2 mean over the
/// counted labels' weights) into `loss`: softmax_cross_entropy_loss after
/// its log-softmax, and nll_loss.
amprt_status nllReduce(amprt_context *ctx, const char *k, const float *lp,
                       T labels, T weight, const SceShape &s, int32_t reduction,
                       int32_t has_ignore_index, int64_t ignore_index, T loss) {
  F32In iw(weight);
  double total = 0, wsum = 0;
  std::vector<float> per(size_t(s.N * s.D), 0.f);
  for (int64_t n = 0; n < s.N; ++n)
    for (int64_t d = 0; d < s.D; ++d) {
      int64_t lab = labelAt(labels, n * s.D + d);
      if (has_ignore_index && lab == ignore_index)
        continue;
      if (lab < 0 || lab >= s.C)
        return ctx->fail(AMPRT_ERR_INVALID_ARGUMENT,
                         "%s: label %lld at %lld outside [0, %lld)", k,
                         (long long)lab, (long long)(n * s.D + d),
                         (long long)s.C);
      double w = weight ? iw.p[lab] : 1.0;
      double l = -w * lp[size_t(n * s.C * s.D + lab * s.D + d)];
      per[size_t(n * s.D + d)] = float(l);
      total += l;
      wsum += w;
    }
  if (reduction == 0)
    fromF32(per.data(), loss->data, loss->dtype, s.N * s.D);
  else if (reduction == 1)
    storeF(loss->data, loss->dtype, 0, float(total));
  else
    storeF(loss->data, loss->dtype, 0, float(wsum != 0 ? total / wsum : 0));
  return AMPRT_OK;
}

/// The forward losses' checks: the float input `x` (named `what`), labels,
/// weight and reduction (sceCheck, which fills `s`), and the loss output's
/// dtype and shape for `reduction`.
amprt_status lossCheck(amprt_context *ctx, const char *k, const char *what, T x,
                       T labels, T weight, int32_t reduction, T loss,
                       SceShape &s) {
  AMPRT_TRY(checkFloat(ctx, k, what, x));
  AMPRT_TRY(sceCheck(ctx, k, x, labels, weight, reduction, s));
  AMPRT_TRY(checkFloat(ctx, k, "loss", loss));
  if (reduction == 0)
    return checkShape(ctx, k, "loss", loss, s.lossNone);
  return checkNumel(ctx, k, "loss", loss, 1);
}

} // namespace

extern "C" {

amprt_status amprt_softmax_cross_entropy_loss(
    amprt_context *ctx, T scores, T labels, T weight, int32_t reduction,
    int32_t has_ignore_index, int64_t ignore_index, T loss, T log_prob) {
  AMPRT_DISPATCH(softmax_cross_entropy_loss, ctx, scores, labels, weight,
                 reduction, has_ignore_index, ignore_index, loss, log_prob);
  return guard(ctx, "softmax_cross_entropy_loss", [&]() -> amprt_status {
    const char *k = "softmax_cross_entropy_loss";
    SceShape s;
    AMPRT_TRY(lossCheck(ctx, k, "scores", scores, labels, weight, reduction,
                        loss, s));
    AMPRT_TRY(checkFloat(ctx, k, "log_prob", log_prob, true));
    if (log_prob)
      AMPRT_TRY(checkShape(ctx, k, "log_prob", log_prob, shapeOf(scores)));
    F32In is(scores);
    // The log-probabilities go straight into log_prob when it is f32.
    F32Out lpOut(log_prob);
    std::unique_ptr<float[]> own;
    float *lp = lpOut.p;
    if (!lp) {
      own.reset(new float[size_t(numel(scores))]);
      lp = own.get();
    }
    // Each (n, d) line is reduced over the classes in class order, by one
    // thread; kW neighbouring lines together, so that every class reads
    // one contiguous piece of the scores ([N, C, D]: a line's classes are
    // D apart).
    constexpr int64_t kW = 16;
    int64_t dBlocks = (s.D + kW - 1) / kW;
    parallelFor(
        s.N * dBlocks, double(numel(scores)) * 40, [&](int64_t u0, int64_t u1) {
          for (int64_t u = u0; u < u1; ++u) {
            int64_t n = u / dBlocks, d0 = u % dBlocks * kW;
            int64_t w = std::min(kW, s.D - d0);
            const float *p = is.p + n * s.C * s.D + d0;
            float *q = lp + n * s.C * s.D + d0;
            float mx[kW];
            double sum[kW], ls[kW];
            for (int64_t j = 0; j < w; ++j)
              mx[j] = -INFINITY, sum[j] = 0;
            for (int64_t c = 0; c < s.C; ++c)
              for (int64_t j = 0; j < w; ++j)
                mx[j] = std::fmax(mx[j], p[c * s.D + j]);
            for (int64_t c = 0; c < s.C; ++c)
              for (int64_t j = 0; j < w; ++j)
                sum[j] += std::exp(double(p[c * s.D + j]) - mx[j]);
            for (int64_t j = 0; j < w; ++j)
              ls[j] = std::log(sum[j]);
            for (int64_t c = 0; c < s.C; ++c)
              for (int64_t j = 0; j < w; ++j)
                q[c * s.D + j] = float(double(p[c * s.D + j]) - mx[j] - ls[j]);
          }
        });
    AMPRT_TRY(nllReduce(ctx, k, lp, labels, weight, s, reduction,
                        has_ignore_index, ignore_index, loss));
    lpOut.commit();
    return AMPRT_OK;
  });
}

amprt_status amprt_nll_loss(amprt_context *ctx, T input, T labels, T weight,
                            int32_t reduction, int32_t has_ignore_index,
                            int64_t ignore_index, T loss) {
  AMPRT_DISPATCH(nll_loss, ctx, input, labels, weight, reduction,
                 has_ignore_index, ignore_index, loss);
  return guard(ctx, "nll_loss", [&]() -> amprt_status {
    const char *k = "nll_loss";
    SceShape s;
    AMPRT_TRY(
        lossCheck(ctx, k, "input", input, labels, weight, reduction, loss, s));
    F32In in(input);
    return nllReduce(ctx, k, in.p, labels, weight, s, reduction,
                     has_ignore_index, ignore_index, loss);
  });
}

amprt_status amprt_softmax_cross_entropy_loss_grad(amprt_context *ctx, T dloss,
                                                   T log_prob, T labels,
                                                   T weight, int32_t reduction,
                                                   int32_t has_ignore_index,
                                                   int64_t ignore_index, T dx) {
  AMPRT_DISPATCH(softmax_cross_entropy_loss_grad, ctx, dloss, log_prob, labels,
                 weight, reduction, has_ignore_index, ignore_index, dx);
  return guard(ctx, "softmax_cross_entropy_loss_grad", [&]() -> amprt_status {
    const char *k = "softmax_cross_entropy_loss_grad";
    AMPRT_TRY(checkFloat(ctx, k, "log_prob", log_prob));
    SceShape s;
    AMPRT_TRY(sceCheck(ctx, k, log_prob, labels, weight, reduction, s));
    AMPRT_TRY(checkFloat(ctx, k, "dloss", dloss));
    if (reduction == 0)
      AMPRT_TRY(checkShape(ctx, k, "dloss", dloss, s.lossNone));
    else
      AMPRT_TRY(checkNumel(ctx, k, "dloss", dloss, 1));
    AMPRT_TRY(checkFloat(ctx, k, "dx", dx));
    AMPRT_TRY(checkShape(ctx, k, "dx", dx, shapeOf(log_prob)));
    F32In ilp(log_prob), iw(weight), idl(dloss);
    // Mean: divide by the total weight of the counted labels.
    double wsum = 0;
    for (int64_t i = 0; i < s.N * s.D; ++i) {
      int64_t lab = labelAt(labels, i);
      if (has_ignore_index && lab == ignore_index)
        continue;
      if (lab < 0 || lab >= s.C)
        return ctx->fail(AMPRT_ERR_INVALID_ARGUMENT,
                         "%s: label %lld at %lld outside [0, %lld)", k,
                         (long long)lab, (long long)i, (long long)s.C);
      wsum += weight ? iw.p[lab] : 1.0;
    }
    // The factor of each (n, d) line, then every element in memory order.
    std::vector<double> factor(size_t(s.N * s.D), 0.0);
    for (int64_t i = 0; i < s.N * s.D; ++i) {
      int64_t lab = labelAt(labels, i);
      if (has_ignore_index && lab == ignore_index)
        continue;
      double w = weight ? iw.p[lab] : 1.0;
      double g = reduction == 0 ? idl.p[i] : idl.p[0];
      factor[size_t(i)] =
          reduction == 2 ? (wsum != 0 ? g * w / wsum : 0) : g * w;
    }
    F32Out out(dx);
    parallelFor(s.N * s.C, double(numel(dx)) * 20, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        int64_t n = r / s.C, c = r % s.C;
        for (int64_t d = 0; d < s.D; ++d) {
          int64_t i = n * s.D + d, o = r * s.D + d;
          double p = std::exp(double(ilp.p[o]));
          out.p[o] = float(factor[size_t(i)] *
                           (p - (c == labelAt(labels, i) ? 1.0 : 0.0)));
        }
      }
    });
    out.commit();
    return AMPRT_OK;
  });
}

amprt_status amprt_mse_loss(amprt_context *ctx, T x, T target, T loss) {
  AMPRT_DISPATCH(mse_loss, ctx, x, target, loss);
  return guard(ctx, "mse_loss", [&]() -> amprt_status {
    const char *k = "mse_loss";
    AMPRT_TRY(checkFloat(ctx, k, "x", x));
    AMPRT_TRY(checkFloat(ctx, k, "target", target));
    AMPRT_TRY(checkShape(ctx, k, "target", target, shapeOf(x)));
    AMPRT_TRY(checkFloat(ctx, k, "loss", loss));
    AMPRT_TRY(checkNumel(ctx, k, "loss", loss, 1));
    F32In ix(x), it(target);
    int64_t n = numel(x);
    double s = 0;
    for (int64_t i = 0; i < n; ++i) {
      double d = double(ix.p[i]) - it.p[i];
      s += d * d;
    }
    storeF(loss->data, loss->dtype, 0, float(n ? s / double(n) : 0));
    return AMPRT_OK;
  });
}

amprt_status amprt_mse_loss_grad(amprt_context *ctx, T dloss, T x, T target,
                                 T dx) {
  AMPRT_DISPATCH(mse_loss_grad, ctx, dloss, x, target, dx);
  return guard(ctx, "mse_loss_grad", [&]() -> amprt_status {
    const char *k = "mse_loss_grad";
    AMPRT_TRY(checkFloat(ctx, k, "dloss", dloss, true));
    if (dloss)
      AMPRT_TRY(checkNumel(ctx, k, "dloss", dloss, 1));
    AMPRT_TRY(checkFloat(ctx, k, "x", x));
    AMPRT_TRY(checkFloat(ctx, k, "target", target));
    AMPRT_TRY(checkShape(ctx, k, "target", target, shapeOf(x)));
    AMPRT_TRY(checkFloat(ctx, k, "dx", dx));
    AMPRT_TRY(checkShape(ctx, k, "dx", dx, shapeOf(x)));
    F32In ix(x), it(target);
    F32Out out(dx);
    int64_t n = numel(x);
    float f = (dloss ? float(scalarOf(dloss)) : 1.f) * 2.f / float(n ? n : 1);
    for (int64_t i = 0; i < n; ++i)
      out.p[i] = f * (ix.p[i] - it.p[i]);
    out.commit();
    return AMPRT_OK;
  });
}

} // extern "C"

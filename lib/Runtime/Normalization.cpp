//===- Normalization.cpp - BatchNorm and LayerNorm, forward and backward --===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// Statistics (means, variances, the reductions of the gradients) accumulate
// in f64 and are stored in the dtype of their tensors; elementwise results
// are computed in f32 and rounded once.
//
//===----------------------------------------------------------------------===//

#include "amp/Runtime/Math/Normalization.h"
#include "Internal.h"

#include <cmath>

using namespace amprt;

namespace {

using T = const amprt_tensor *;

/// x as [N, C, S] (S = product of the spatial dims).
amprt_status bnShape(amprt_context *ctx, const char *k, T x, int64_t &N,
                     int64_t &C, int64_t &S) {
  if (x->rank < 2)
    return ctx->fail(AMPRT_ERR_SHAPE, "%s: x has shape %s, need rank >= 2", k,
                     shapeStr(x).c_str());
  N = x->shape[0];
  C = x->shape[1];
  S = 1;
  for (int32_t i = 2; i < x->rank; ++i)
    S *= x->shape[i];
  return AMPRT_OK;
}

amprt_status checkVec(amprt_context *ctx, const char *k, const char *what, T t,
                      int64_t C, bool optional = false) {
  AMPRT_TRY(checkFloat(ctx, k, what, t, optional));
  if (t)
    AMPRT_TRY(checkNumel(ctx, k, what, t, C));
  return AMPRT_OK;
}

std::vector<float> vec(T t, int64_t n, float def) {
  std::vector<float> v(size_t(n), def);
  if (t)
    toF32(t->data, t->dtype, v.data(), n);
  return v;
}

/// x as [outer, inner] split at `axis`.
amprt_status lnShape(amprt_context *ctx, const char *k, T x, int64_t axis,
                     int64_t &outer, int64_t &inner) {
  int64_t a;
  AMPRT_TRY(normAxis(ctx, k, axis, x->rank, a));
  outer = inner = 1;
  for (int64_t i = 0; i < x->rank; ++i)
    (i < a ? outer : inner) *= x->shape[i];
  return AMPRT_OK;
}

/// The optional outputs of a normalization gradient: dx shaped as x,
/// dscale and dbias of n elements.
amprt_status checkGradOutputs(amprt_context *ctx, const char *k, T x, T dx,
                              T dscale, T dbias, int64_t n) {
  AMPRT_TRY(checkFloat(ctx, k, "dx", dx, true));
  if (dx)
    AMPRT_TRY(checkShape(ctx, k, "dx", dx, shapeOf(x)));
  AMPRT_TRY(checkVec(ctx, k, "dscale", dscale, n, true));
  AMPRT_TRY(checkVec(ctx, k, "dbias", dbias, n, true));
  return AMPRT_OK;
}

} // namespace

amprt_status amprt::checkBatchNormTraining(
    amprt_context *ctx, T x, T scale, T bias, T running_mean, T running_var,
    T y, T running_mean_out, T running_var_out, T saved_mean, T saved_inv_std,
    int64_t &N, int64_t &C, int64_t &S) {
  const char *k = "batch_norm_training";
  AMPRT_TRY(checkFloat(ctx, k, "x", x));
  AMPRT_TRY(bnShape(ctx, k, x, N, C, S));
  AMPRT_TRY(checkVec(ctx, k, "scale", scale, C));
  AMPRT_TRY(checkVec(ctx, k, "bias", bias, C));
  AMPRT_TRY(checkVec(ctx, k, "running_mean", running_mean, C, true));
  AMPRT_TRY(checkVec(ctx, k, "running_var", running_var, C, true));
  AMPRT_TRY(checkVec(ctx, k, "running_mean_out", running_mean_out, C, true));
  AMPRT_TRY(checkVec(ctx, k, "running_var_out", running_var_out, C, true));
  AMPRT_TRY(checkVec(ctx, k, "saved_mean", saved_mean, C, true));
  AMPRT_TRY(checkVec(ctx, k, "saved_inv_std", saved_inv_std, C, true));
  AMPRT_TRY(checkFloat(ctx, k, "y", y));
  AMPRT_TRY(checkShape(ctx, k, "y", y, shapeOf(x)));
  if ((running_mean_out && !running_mean) || (running_var_out && !running_var))
    return ctx->fail(AMPRT_ERR_INVALID_ARGUMENT,
                     "%s: running_*_out needs the running_* input", k);
  return AMPRT_OK;
}

amprt_status amprt::checkBatchNormGrad(amprt_context *ctx, T dy, T x, T scale,
                                       T saved_mean, T saved_inv_std, T dx,
                                       T dscale, T dbias, int64_t &N,
                                       int64_t &C, int64_t &S) {
  const char *k = "batch_norm_grad";
  AMPRT_TRY(checkFloat(ctx, k, "dy", dy));
  AMPRT_TRY(checkFloat(ctx, k, "x", x));
  AMPRT_TRY(checkShape(ctx, k, "x", x, shapeOf(dy)));
  AMPRT_TRY(bnShape(ctx, k, x, N, C, S));
  AMPRT_TRY(checkVec(ctx, k, "scale", scale, C));
  AMPRT_TRY(checkVec(ctx, k, "saved_mean", saved_mean, C));
  AMPRT_TRY(checkVec(ctx, k, "saved_inv_std", saved_inv_std, C));
  AMPRT_TRY(checkGradOutputs(ctx, k, x, dx, dscale, dbias, C));
  return AMPRT_OK;
}

amprt_status amprt::checkLayerNorm(amprt_context *ctx, T x, T scale, T bias,
                                   int64_t axis, T y, T mean, T inv_std,
                                   int64_t &outer, int64_t &inner) {
  const char *k = "layer_norm";
  AMPRT_TRY(checkFloat(ctx, k, "x", x));
  AMPRT_TRY(lnShape(ctx, k, x, axis, outer, inner));
  AMPRT_TRY(checkVec(ctx, k, "scale", scale, inner));
  AMPRT_TRY(checkVec(ctx, k, "bias", bias, inner, true));
  AMPRT_TRY(checkFloat(ctx, k, "y", y));
  AMPRT_TRY(checkShape(ctx, k, "y", y, shapeOf(x)));
  AMPRT_TRY(checkVec(ctx, k, "mean", mean, outer, true));
  AMPRT_TRY(checkVec(ctx, k, "inv_std", inv_std, outer, true));
  return AMPRT_OK;
}

amprt_status amprt::checkLayerNormGrad(amprt_context *ctx, T dy, T x, T scale,
                                       T mean, T inv_std, int64_t axis, T dx,
                                       T dscale, T dbias, int64_t &outer,
                                       int64_t &inner) {
  const char *k = "layer_norm_grad";
  AMPRT_TRY(checkFloat(ctx, k, "dy", dy));
  AMPRT_TRY(checkFloat(ctx, k, "x", x));
  AMPRT_TRY(checkShape(ctx, k, "x", x, shapeOf(dy)));
  AMPRT_TRY(lnShape(ctx, k, x, axis, outer, inner));
  AMPRT_TRY(checkVec(ctx, k, "scale", scale, inner));
  AMPRT_TRY(checkVec(ctx, k, "mean", mean, outer));
  AMPRT_TRY(checkVec(ctx, k, "inv_std", inv_std, outer));
  AMPRT_TRY(checkGradOutputs(ctx, k, x, dx, dscale, dbias, inner));
  return AMPRT_OK;
}

amprt_status amprt::checkRmsNorm(amprt_context *ctx, T x, T scale, int64_t axis,
                                 T y, T inv_std, int64_t &outer,
                                 int64_t &inner) {
  const char *k = "rms_norm";
  AMPRT_TRY(checkFloat(ctx, k, "x", x));
  AMPRT_TRY(lnShape(ctx, k, x, axis, outer, inner));
  AMPRT_TRY(checkVec(ctx, k, "scale", scale, inner));
  AMPRT_TRY(checkFloat(ctx, k, "y", y));
  AMPRT_TRY(checkShape(ctx, k, "y", y, shapeOf(x)));
  AMPRT_TRY(checkVec(ctx, k, "inv_std", inv_std, outer, true));
  return AMPRT_OK;
}

amprt_status amprt::checkRmsNormGrad(amprt_context *ctx, T dy, T x, T scale,
                                     T inv_std, int64_t axis, T dx, T dscale,
                                     int64_t &outer, int64_t &inner) {
  const char *k = "rms_norm_grad";
  AMPRT_TRY(checkFloat(ctx, k, "dy", dy));
  AMPRT_TRY(checkFloat(ctx, k, "x", x));
  AMPRT_TRY(checkShape(ctx, k, "x", x, shapeOf(dy)));
  AMPRT_TRY(lnShape(ctx, k, x, axis, outer, inner));
  AMPRT_TRY(checkVec(ctx, k, "scale", scale, inner));
  AMPRT_TRY(checkVec(ctx, k, "inv_std", inv_std, outer));
  AMPRT_TRY(checkGradOutputs(ctx, k, x, dx, dscale, nullptr, inner));
  return AMPRT_OK;
}

extern "C" {} // extern "C"

namespace {

/// The sums of each channel over every rank of the context's communicator
/// (SyncBatchNorm), in place; nothing without one. `count` (the elements
/// per channel) becomes the global count.
amprt_status sumOverRanks(amprt_context *ctx, bool sync,
                          std::vector<double> &sums, double &count) {
  if (!sync || !ctx->comm)
    return AMPRT_OK;
  int64_t n = int64_t(sums.size());
  amprt_tensor t = {sums.data(), AMPRT_F64, 1, &n};
  AMPRT_TRY(amprt_all_reduce(ctx, &t, &t, AMPRT_REDUCE_SUM));
  count *= double(amprt_comm_size(ctx->comm));
  return AMPRT_OK;
}

amprt_status batchNormTraining(amprt_context *ctx, const char *k, bool sync,
                               T x, T scale, T bias, T running_mean,
                               T running_var, float momentum, float epsilon,
                               T y, T running_mean_out, T running_var_out,
                               T saved_mean, T saved_inv_std) {
  return guard(ctx, k, [&]() -> amprt_status {
    int64_t N, C, S;
    AMPRT_TRY(checkBatchNormTraining(
        ctx, x, scale, bias, running_mean, running_var, y, running_mean_out,
        running_var_out, saved_mean, saved_inv_std, N, C, S));
    F32In ix(x);
    std::vector<float> sc = vec(scale, C, 1.f), bs = vec(bias, C, 0.f);
    std::vector<float> rm = vec(running_mean, C, 0.f),
                       rv = vec(running_var, C, 1.f);
    std::vector<double> mean(static_cast<size_t>(C)),
        var(static_cast<size_t>(C));
    // Two passes: the mean, then the squared deviations from it (each sum
    // over the ranks when synchronized).
    double M = double(N * S);
    parallelFor(C, double(N * C * S), [&](int64_t c0, int64_t c1) {
      for (int64_t c = c0; c < c1; ++c) {
        double s = 0;
        for (int64_t n = 0; n < N; ++n) {
          const float *p = ix.p + (n * C + c) * S;
          for (int64_t i = 0; i < S; ++i)
            s += p[i];
        }
        mean[size_t(c)] = s;
      }
    });
    double count = M;
    AMPRT_TRY(sumOverRanks(ctx, sync, mean, count));
    for (double &m : mean)
      m = count > 0 ? m / count : 0;
    parallelFor(C, double(N * C * S * 2), [&](int64_t c0, int64_t c1) {
      for (int64_t c = c0; c < c1; ++c) {
        double m = mean[size_t(c)], q = 0;
        for (int64_t n = 0; n < N; ++n) {
          const float *p = ix.p + (n * C + c) * S;
          for (int64_t i = 0; i < S; ++i)
            q += (p[i] - m) * (p[i] - m);
        }
        var[size_t(c)] = q;
      }
    });
    count = M;
    AMPRT_TRY(sumOverRanks(ctx, sync, var, count));
    for (double &v : var)
      v = count > 0 ? v / count : 0;
    F32Out out(y);
    parallelFor(C, double(N * C * S * 2), [&](int64_t c0, int64_t c1) {
      for (int64_t c = c0; c < c1; ++c) {
        float m = float(mean[size_t(c)]);
        float inv = invStd(var[size_t(c)], epsilon);
        float a = inv * sc[size_t(c)], b = bs[size_t(c)];
        for (int64_t n = 0; n < N; ++n) {
          const float *p = ix.p + (n * C + c) * S;
          float *q = out.p + (n * C + c) * S;
          for (int64_t i = 0; i < S; ++i)
            q[i] = batchNormApply(p[i], m, a, b);
        }
        if (saved_mean)
          storeF(saved_mean->data, saved_mean->dtype, c, m);
        if (saved_inv_std)
          storeF(saved_inv_std->data, saved_inv_std->dtype, c, inv);
        if (running_mean_out)
          storeF(running_mean_out->data, running_mean_out->dtype, c,
                 runningStat(momentum, rm[size_t(c)], mean[size_t(c)]));
        if (running_var_out)
          storeF(running_var_out->data, running_var_out->dtype, c,
                 runningStat(momentum, rv[size_t(c)], var[size_t(c)]));
      }
    });
    out.commit();
    return AMPRT_OK;
  });
}

amprt_status batchNormGrad(amprt_context *ctx, const char *k, bool sync, T dy,
                           T x, T scale, T saved_mean, T saved_inv_std, T dx,
                           T dscale, T dbias) {
  return guard(ctx, k, [&]() -> amprt_status {
    int64_t N, C, S;
    AMPRT_TRY(checkBatchNormGrad(ctx, dy, x, scale, saved_mean, saved_inv_std,
                                 dx, dscale, dbias, N, C, S));
    std::vector<float> sc = vec(scale, C, 1.f), mu = vec(saved_mean, C, 0.f),
                       is = vec(saved_inv_std, C, 1.f);
    F32In idy(dy), ix(x);
    // Per channel: the sums of dy and dy * xhat (the rank's own: dbias and
    // dscale), then dx from their means over every rank when synchronized.
    std::vector<double> sums(2 * static_cast<size_t>(C));
    parallelFor(C, double(N * C * S * 4), [&](int64_t c0, int64_t c1) {
      for (int64_t c = c0; c < c1; ++c) {
        double sdy = 0, sdyx = 0;
        float m = mu[size_t(c)], inv = is[size_t(c)];
        for (int64_t n = 0; n < N; ++n)
          for (int64_t i = 0; i < S; ++i) {
            int64_t o = (n * C + c) * S + i;
            sdy += idy.p[o];
            sdyx += double(idy.p[o]) * double((ix.p[o] - m) * inv);
          }
        if (dbias)
          storeF(dbias->data, dbias->dtype, c, float(sdy));
        if (dscale)
          storeF(dscale->data, dscale->dtype, c, float(sdyx));
        sums[size_t(2 * c)] = sdy;
        sums[size_t(2 * c + 1)] = sdyx;
      }
    });
    if (!dx)
      return AMPRT_OK;
    double M = double(N * S);
    AMPRT_TRY(sumOverRanks(ctx, sync, sums, M));
    F32Out out(dx);
    parallelFor(C, double(N * C * S * 4), [&](int64_t c0, int64_t c1) {
      for (int64_t c = c0; c < c1; ++c) {
        float m = mu[size_t(c)], inv = is[size_t(c)];
        float a = sc[size_t(c)] * inv;
        float mdy = M > 0 ? float(sums[size_t(2 * c)] / M) : 0.f;
        float mdyx = M > 0 ? float(sums[size_t(2 * c + 1)] / M) : 0.f;
        for (int64_t n = 0; n < N; ++n)
          for (int64_t i = 0; i < S; ++i) {
            int64_t o = (n * C + c) * S + i;
            float xh = (ix.p[o] - m) * inv;
            out.p[o] = batchNormGradDx(a, idy.p[o], mdy, xh, mdyx);
          }
      }
    });
    out.commit();
    return AMPRT_OK;
  });
}

} // namespace

extern "C" {

amprt_status amprt_batch_norm_training(amprt_context *ctx, T x, T scale, T bias,
                                       T running_mean, T running_var,
                                       float momentum, float epsilon, T y,
                                       T running_mean_out, T running_var_out,
                                       T saved_mean, T saved_inv_std) {
  AMPRT_DISPATCH(batch_norm_training, ctx, x, scale, bias, running_mean,
                 running_var, momentum, epsilon, y, running_mean_out,
                 running_var_out, saved_mean, saved_inv_std);
  return batchNormTraining(ctx, "batch_norm_training", false, x, scale, bias,
                           running_mean, running_var, momentum, epsilon, y,
                           running_mean_out, running_var_out, saved_mean,
                           saved_inv_std);
}

amprt_status amprt_batch_norm_training_sync(
    amprt_context *ctx, T x, T scale, T bias, T running_mean, T running_var,
    float momentum, float epsilon, T y, T running_mean_out, T running_var_out,
    T saved_mean, T saved_inv_std) {
  AMPRT_DISPATCH(batch_norm_training_sync, ctx, x, scale, bias, running_mean,
                 running_var, momentum, epsilon, y, running_mean_out,
                 running_var_out, saved_mean, saved_inv_std);
  return batchNormTraining(ctx, "batch_norm_training_sync", true, x, scale,
                           bias, running_mean, running_var, momentum, epsilon,
                           y, running_mean_out, running_var_out, saved_mean,
                           saved_inv_std);
}

amprt_status amprt_batch_norm_inference(amprt_context *ctx, T x, T scale,
                                        T bias, T mean, T var, float epsilon,
                                        T y) {
  AMPRT_DISPATCH(batch_norm_inference, ctx, x, scale, bias, mean, var, epsilon,
                 y);
  return guard(ctx, "batch_norm_inference", [&]() -> amprt_status {
    const char *k = "batch_norm_inference";
    AMPRT_TRY(checkFloat(ctx, k, "x", x));
    int64_t N, C, S;
    AMPRT_TRY(bnShape(ctx, k, x, N, C, S));
    AMPRT_TRY(checkVec(ctx, k, "scale", scale, C));
    AMPRT_TRY(checkVec(ctx, k, "bias", bias, C));
    AMPRT_TRY(checkVec(ctx, k, "mean", mean, C));
    AMPRT_TRY(checkVec(ctx, k, "var", var, C));
    AMPRT_TRY(checkFloat(ctx, k, "y", y));
    AMPRT_TRY(checkShape(ctx, k, "y", y, shapeOf(x)));
    std::vector<float> sc = vec(scale, C, 1.f), bs = vec(bias, C, 0.f),
                       mu = vec(mean, C, 0.f), vr = vec(var, C, 1.f);
    F32In ix(x);
    F32Out out(y);
    for (int64_t c = 0; c < C; ++c) {
      float a = sc[size_t(c)] / std::sqrt(vr[size_t(c)] + epsilon);
      float m = mu[size_t(c)], b = bs[size_t(c)];
      for (int64_t n = 0; n < N; ++n)
        for (int64_t i = 0; i < S; ++i) {
          int64_t o = (n * C + c) * S + i;
          out.p[o] = (ix.p[o] - m) * a + b;
        }
    }
    out.commit();
    return AMPRT_OK;
  });
}

amprt_status amprt_batch_norm_grad(amprt_context *ctx, T dy, T x, T scale,
                                   T saved_mean, T saved_inv_std, T dx,
                                   T dscale, T dbias) {
  AMPRT_DISPATCH(batch_norm_grad, ctx, dy, x, scale, saved_mean, saved_inv_std,
                 dx, dscale, dbias);
  return batchNormGrad(ctx, "batch_norm_grad", false, dy, x, scale, saved_mean,
                       saved_inv_std, dx, dscale, dbias);
}

amprt_status amprt_batch_norm_grad_sync(amprt_context *ctx, T dy, T x, T scale,
                                        T saved_mean, T saved_inv_std, T dx,
                                        T dscale, T dbias) {
  AMPRT_DISPATCH(batch_norm_grad_sync, ctx, dy, x, scale, saved_mean,
                 saved_inv_std, dx, dscale, dbias);
  return batchNormGrad(ctx, "batch_norm_grad_sync", true, dy, x, scale,
                       saved_mean, saved_inv_std, dx, dscale, dbias);
}

amprt_status amprt_layer_norm(amprt_context *ctx, T x, T scale, T bias,
                              int64_t axis, float epsilon, T y, T mean,
                              T inv_std) {
  AMPRT_DISPATCH(layer_norm, ctx, x, scale, bias, axis, epsilon, y, mean,
                 inv_std);
  return guard(ctx, "layer_norm", [&]() -> amprt_status {
    int64_t outer, inner;
    AMPRT_TRY(checkLayerNorm(ctx, x, scale, bias, axis, y, mean, inv_std, outer,
                             inner));
    std::vector<float> sc = vec(scale, inner, 1.f), bs = vec(bias, inner, 0.f);
    F32In ix(x);
    F32Out out(y);
    parallelFor(outer, double(outer * inner * 6), [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const float *p = ix.p + r * inner;
        double s = 0;
        for (int64_t i = 0; i < inner; ++i)
          s += p[i];
        double m = inner ? s / double(inner) : 0;
        double q = 0;
        for (int64_t i = 0; i < inner; ++i)
          q += (p[i] - m) * (p[i] - m);
        double var = inner ? q / double(inner) : 0;
        float inv = invStd(var, epsilon);
        float mf = float(m);
        float *o = out.p + r * inner;
        for (int64_t i = 0; i < inner; ++i)
          o[i] = layerNormApply(p[i], mf, inv, sc[size_t(i)], bs[size_t(i)]);
        if (mean)
          storeF(mean->data, mean->dtype, r, mf);
        if (inv_std)
          storeF(inv_std->data, inv_std->dtype, r, inv);
      }
    });
    out.commit();
    return AMPRT_OK;
  });
}

amprt_status amprt_layer_norm_grad(amprt_context *ctx, T dy, T x, T scale,
                                   T mean, T inv_std, int64_t axis, T dx,
                                   T dscale, T dbias) {
  AMPRT_DISPATCH(layer_norm_grad, ctx, dy, x, scale, mean, inv_std, axis, dx,
                 dscale, dbias);
  return guard(ctx, "layer_norm_grad", [&]() -> amprt_status {
    int64_t outer, inner;
    AMPRT_TRY(checkLayerNormGrad(ctx, dy, x, scale, mean, inv_std, axis, dx,
                                 dscale, dbias, outer, inner));
    std::vector<float> sc = vec(scale, inner, 1.f), mu = vec(mean, outer, 0.f),
                       is = vec(inv_std, outer, 1.f);
    F32In idy(dy), ix(x);
    F32Out out(dx);
    std::vector<double> ds(size_t(inner), 0.0), db(size_t(inner), 0.0);
    // dscale and dbias: each column summed over the rows in order by one
    // thread (the result does not depend on the thread count).
    parallelFor(inner, double(outer) * inner * 4, [&](int64_t i0, int64_t i1) {
      for (int64_t r = 0; r < outer; ++r) {
        const float *g = idy.p + r * inner, *p = ix.p + r * inner;
        float m = mu[size_t(r)], inv = is[size_t(r)];
        for (int64_t i = i0; i < i1; ++i) {
          float xh = (p[i] - m) * inv;
          ds[size_t(i)] += double(g[i]) * xh;
          db[size_t(i)] += g[i];
        }
      }
    });
    if (dx)
      parallelFor(
          outer, double(outer) * inner * 8, [&](int64_t r0, int64_t r1) {
            for (int64_t r = r0; r < r1; ++r) {
              const float *g = idy.p + r * inner, *p = ix.p + r * inner;
              float m = mu[size_t(r)], inv = is[size_t(r)];
              double sg = 0, sgx = 0;
              for (int64_t i = 0; i < inner; ++i) {
                float xh = (p[i] - m) * inv;
                float gs = g[i] * sc[size_t(i)];
                sg += gs;
                sgx += double(gs) * xh;
              }
              float mg = float(sg / double(inner)),
                    mgx = float(sgx / double(inner));
              float *o = out.p + r * inner;
              for (int64_t i = 0; i < inner; ++i) {
                float xh = (p[i] - m) * inv;
                o[i] = layerNormGradDx(inv, g[i] * sc[size_t(i)], mg, xh, mgx);
              }
            }
          });
    for (int64_t i = 0; i < inner; ++i) {
      if (dscale)
        storeF(dscale->data, dscale->dtype, i, float(ds[size_t(i)]));
      if (dbias)
        storeF(dbias->data, dbias->dtype, i, float(db[size_t(i)]));
    }
    out.commit();
    return AMPRT_OK;
  });
}

amprt_status amprt_rms_norm(amprt_context *ctx, T x, T scale, int64_t axis,
                            float epsilon, T y, T inv_std) {
  AMPRT_DISPATCH(rms_norm, ctx, x, scale, axis, epsilon, y, inv_std);
  return guard(ctx, "rms_norm", [&]() -> amprt_status {
    int64_t outer, inner;
    AMPRT_TRY(checkRmsNorm(ctx, x, scale, axis, y, inv_std, outer, inner));
    std::vector<float> sc = vec(scale, inner, 1.f);
    F32In ix(x);
    F32Out out(y);
    parallelFor(outer, double(outer * inner * 4), [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const float *p = ix.p + r * inner;
        double q = 0;
        for (int64_t i = 0; i < inner; ++i)
          q += double(p[i]) * p[i];
        double ms = inner ? q / double(inner) : 0;
        float inv = invStd(ms, epsilon);
        float *o = out.p + r * inner;
        for (int64_t i = 0; i < inner; ++i)
          o[i] = rmsNormApply(p[i], inv, sc[size_t(i)]);
        if (inv_std)
          storeF(inv_std->data, inv_std->dtype, r, inv);
      }
    });
    out.commit();
    return AMPRT_OK;
  });
}

amprt_status amprt_rms_norm_grad(amprt_context *ctx, T dy, T x, T scale,
                                 T inv_std, int64_t axis, T dx, T dscale) {
  AMPRT_DISPATCH(rms_norm_grad, ctx, dy, x, scale, inv_std, axis, dx, dscale);
  return guard(ctx, "rms_norm_grad", [&]() -> amprt_status {
    int64_t outer, inner;
    AMPRT_TRY(checkRmsNormGrad(ctx, dy, x, scale, inv_std, axis, dx, dscale,
                               outer, inner));
    std::vector<float> sc = vec(scale, inner, 1.f),
                       is = vec(inv_std, outer, 1.f);
    F32In idy(dy), ix(x);
    F32Out out(dx);
    std::vector<double> ds(size_t(inner), 0.0);
    for (int64_t r = 0; r < outer; ++r) {
      const float *g = idy.p + r * inner, *p = ix.p + r * inner;
      float inv = is[size_t(r)];
      double sgx = 0;
      for (int64_t i = 0; i < inner; ++i) {
        float xh = p[i] * inv;
        ds[size_t(i)] += double(g[i]) * xh;
        sgx += double(g[i] * sc[size_t(i)]) * xh;
      }
      if (!dx)
        continue;
      float mgx = float(sgx / double(inner));
      float *o = out.p + r * inner;
      for (int64_t i = 0; i < inner; ++i)
        o[i] = rmsNormGradDx(inv, g[i] * sc[size_t(i)], p[i] * inv, mgx);
    }
    if (dscale)
      for (int64_t i = 0; i < inner; ++i)
        storeF(dscale->data, dscale->dtype, i, float(ds[size_t(i)]));
    out.commit();
    return AMPRT_OK;
  });
}

} // extern "C"

//===- Pool.cpp - MaxPool, AveragePool, GlobalAveragePool and grads -------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// Windows as in Conv.cpp (1-D and 2-D). MaxPool's indices are ONNX's flat
// indices into x (storage_order 0), which MaxPoolGrad scatters back through.
// Averages accumulate in f32.
//
//===----------------------------------------------------------------------===//

#include "Internal.h"

#include <cmath>
#include <limits>

using namespace amprt;

namespace {

using T = const amprt_tensor *;

Shape poolShape(const Window &g, int32_t sr) { return windowShape(g, sr, g.C); }

/// Calls visit(o, od, oh, ow, base, taps) for every output position o of
/// the window (N, C, then output depth, rows and columns), where base is
/// the offset of that (n, c) plane in the input and taps(fn) calls
/// fn((d * H + h) * W + w) for each window element inside the input, in
/// kernel order: the one traversal of the pooling kernels forward and
/// backward.
template <typename Visit> void forEachWindow(const Window &g, Visit visit) {
  int64_t o = 0;
  for (int64_t nc = 0; nc < g.N * g.C; ++nc)
    for (int64_t od = 0; od < g.Do; ++od)
      for (int64_t oh = 0; oh < g.Ho; ++oh)
        for (int64_t ow = 0; ow < g.Wo; ++ow, ++o) {
          auto taps = [&](auto fn) { forEachTap(g, od, oh, ow, fn); };
          visit(o, od, oh, ow, nc * g.inPlane(), taps);
        }
}

} // namespace

amprt_status amprt::checkMaxPool(amprt_context *ctx, T x, T y, T indices,
                                 const amprt_window *win, Window &g,
                                 Shape &so) {
  const char *k = "max_pool";
  AMPRT_TRY(checkFloat(ctx, k, "x", x));
  AMPRT_TRY(checkFloat(ctx, k, "y", y));
  AMPRT_TRY(checkDtype(ctx, k, "indices", indices, AMPRT_I64, true));
  if (!win)
    return ctx->fail(AMPRT_ERR_INVALID_ARGUMENT, "%s: window is NULL", k);
  AMPRT_TRY(makeWindow(ctx, k, x, win->kernel, win, g));
  so = poolShape(g, win->spatial_rank);
  AMPRT_TRY(checkShape(ctx, k, "y", y, so));
  if (indices)
    AMPRT_TRY(checkShape(ctx, k, "indices", indices, so));
  return AMPRT_OK;
}

amprt_status amprt::checkMaxPoolGrad(amprt_context *ctx, T dy, T indices,
                                     T dx) {
  const char *k = "max_pool_grad";
  AMPRT_TRY(checkFloat(ctx, k, "dy", dy));
  AMPRT_TRY(checkDtype(ctx, k, "indices", indices, AMPRT_I64));
  AMPRT_TRY(checkFloat(ctx, k, "dx", dx));
  AMPRT_TRY(checkShape(ctx, k, "indices", indices, shapeOf(dy)));
  return AMPRT_OK;
}

amprt_status amprt::checkAveragePool(amprt_context *ctx, bool grad, T x, T y,
                                     const amprt_window *win, Window &g) {
  const char *k = grad ? "average_pool_grad" : "average_pool";
  AMPRT_TRY(checkFloat(ctx, k, grad ? "dy" : "x", grad ? y : x));
  AMPRT_TRY(checkFloat(ctx, k, grad ? "dx" : "y", grad ? x : y));
  if (!win)
    return ctx->fail(AMPRT_ERR_INVALID_ARGUMENT, "%s: window is NULL", k);
  AMPRT_TRY(makeWindow(ctx, k, x, win->kernel, win, g));
  return checkShape(ctx, k, grad ? "dy" : "y", y,
                    poolShape(g, win->spatial_rank));
}

amprt_status amprt::checkGlobalPool(amprt_context *ctx, bool grad, T x, T y,
                                    int64_t &NC, int64_t &S) {
  const char *k = grad ? "global_average_pool_grad" : "global_average_pool";
  AMPRT_TRY(checkFloat(ctx, k, grad ? "dy" : "x", grad ? y : x));
  AMPRT_TRY(checkFloat(ctx, k, grad ? "dx" : "y", grad ? x : y));
  if (x->rank < 3)
    return ctx->fail(AMPRT_ERR_SHAPE, "%s: %s has shape %s, need rank >= 3", k,
                     grad ? "dx" : "x", shapeStr(x).c_str());
  Shape sy = shapeOf(x);
  S = 1;
  for (size_t i = 2; i < sy.size(); ++i) {
    S *= sy[i];
    sy[i] = 1;
  }
  NC = sy[0] * sy[1];
  return checkShape(ctx, k, grad ? "dy" : "y", y, sy);
}

extern "C" {

amprt_status amprt_max_pool(amprt_context *ctx, T x, T y, T indices,
                            const amprt_window *win) {
  AMPRT_DISPATCH(max_pool, ctx, x, y, indices, win);
  return guard(ctx, "max_pool", [&]() -> amprt_status {
    return viaChannelsFirst(
        ctx, "max_pool", win, {{"x", &x}}, {{"y", &y}, {"indices", &indices}},
        [&](const amprt_window *fw) -> amprt_status {
          Window g;
          Shape so;
          AMPRT_TRY(checkMaxPool(ctx, x, y, indices, fw, g, so));
          F32In ix(x);
          F32Out out(y);
          auto *idx = indices ? static_cast<int64_t *>(indices->data) : nullptr;
          forEachWindow(g, [&](int64_t o, int64_t, int64_t, int64_t,
                               int64_t base, auto taps) {
            float best = -std::numeric_limits<float>::infinity();
            int64_t arg = -1;
            taps([&](int64_t t) {
              float v = ix.p[base + t];
              // NaN wins, as in ONNX Runtime's (v > best || isnan) loop.
              if (arg < 0 || v > best || (std::isnan(v) && !std::isnan(best))) {
                best = v;
                arg = t;
              }
            });
            out.p[o] = best;
            if (idx)
              idx[o] = arg < 0 ? -1 : base + arg;
          });
          out.commit();
          return AMPRT_OK;
        },
        &indices);
  });
}

amprt_status amprt_max_pool_grad(amprt_context *ctx, T dy, T indices, T dx) {
  AMPRT_DISPATCH(max_pool_grad, ctx, dy, indices, dx);
  return guard(ctx, "max_pool_grad", [&]() -> amprt_status {
    const char *k = "max_pool_grad";
    AMPRT_TRY(checkMaxPoolGrad(ctx, dy, indices, dx));
    F32In idy(dy);
    std::vector<float> acc(size_t(numel(dx)), 0.f);
    auto *idx = static_cast<const int64_t *>(indices->data);
    int64_t n = numel(dy), nx = numel(dx);
    for (int64_t i = 0; i < n; ++i) {
      if (idx[i] < 0)
        continue;
      if (idx[i] >= nx)
        return ctx->fail(AMPRT_ERR_INVALID_ARGUMENT,
                         "%s: indices[%lld] = %lld outside dx (%lld "
                         "elements)",
                         k, (long long)i, (long long)idx[i], (long long)nx);
      acc[size_t(idx[i])] += idy.p[i];
    }
    fromF32(acc.data(), dx->data, dx->dtype, nx);
    return AMPRT_OK;
  });
}

amprt_status amprt_average_pool(amprt_context *ctx, T x, T y,
                                const amprt_window *win) {
  AMPRT_DISPATCH(average_pool, ctx, x, y, win);
  return guard(ctx, "average_pool", [&]() -> amprt_status {
    return viaChannelsFirst(
        ctx, "average_pool", win, {{"x", &x}}, {{"y", &y}},
        [&](const amprt_window *fw) -> amprt_status {
          Window g;
          AMPRT_TRY(checkAveragePool(ctx, false, x, y, fw, g));
          F32In ix(x);
          F32Out out(y);
          forEachWindow(g, [&](int64_t o, int64_t od, int64_t oh, int64_t ow,
                               int64_t base, auto taps) {
            float s = 0.f;
            taps([&](int64_t t) { s += ix.p[base + t]; });
            int64_t cnt = avgCount(g, od, oh, ow, fw->count_include_pad);
            out.p[o] = cnt ? s / float(cnt) : 0.f;
          });
          out.commit();
          return AMPRT_OK;
        });
  });
}

amprt_status amprt_average_pool_grad(amprt_context *ctx, T dy, T dx,
                                     const amprt_window *win) {
  AMPRT_DISPATCH(average_pool_grad, ctx, dy, dx, win);
  return guard(ctx, "average_pool_grad", [&]() -> amprt_status {
    return viaChannelsFirst(
        ctx, "average_pool_grad", win, {{"dy", &dy}}, {{"dx", &dx}},
        [&](const amprt_window *fw) -> amprt_status {
          Window g;
          AMPRT_TRY(checkAveragePool(ctx, true, dx, dy, fw, g));
          F32In idy(dy);
          std::vector<float> acc(size_t(numel(dx)), 0.f);
          forEachWindow(g, [&](int64_t o, int64_t od, int64_t oh, int64_t ow,
                               int64_t base, auto taps) {
            int64_t cnt = avgCount(g, od, oh, ow, fw->count_include_pad);
            if (!cnt)
              return;
            float v = idy.p[o] / float(cnt);
            taps([&](int64_t t) { acc[size_t(base + t)] += v; });
          });
          fromF32(acc.data(), dx->data, dx->dtype, numel(dx));
          return AMPRT_OK;
        });
  });
}

amprt_status amprt_global_average_pool(amprt_context *ctx, T x, T y) {
  AMPRT_DISPATCH(global_average_pool, ctx, x, y);
  return guard(ctx, "global_average_pool", [&]() -> amprt_status {
    int64_t NC, S;
    AMPRT_TRY(checkGlobalPool(ctx, false, x, y, NC, S));
    F32In ix(x);
    F32Out out(y);
    for (int64_t i = 0; i < NC; ++i) {
      float s = 0.f;
      for (int64_t p = 0; p < S; ++p)
        s += ix.p[i * S + p];
      out.p[i] = S ? s / float(S) : 0.f;
    }
    out.commit();
    return AMPRT_OK;
  });
}

amprt_status amprt_global_average_pool_grad(amprt_context *ctx, T dy, T dx) {
  AMPRT_DISPATCH(global_average_pool_grad, ctx, dy, dx);
  return guard(ctx, "global_average_pool_grad", [&]() -> amprt_status {
    int64_t NC, S;
    AMPRT_TRY(checkGlobalPool(ctx, true, dx, dy, NC, S));
    F32In idy(dy);
    F32Out out(dx);
    for (int64_t i = 0; i < NC; ++i) {
      float v = idy.p[i] / float(S);
      for (int64_t p = 0; p < S; ++p)
        out.p[i * S + p] = v;
    }
    out.commit();
    return AMPRT_OK;
  });
}

} // extern "C"

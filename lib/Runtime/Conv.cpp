//===- Conv.cpp - Conv and ConvGrad (NCHW / NCW) --------------------------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// im2col per (image, group) followed by the f32 GEMM of Gemm.cpp; 1x1
// convolutions with unit strides and no padding use the image directly.
// ConvGrad: dW = dY col^T, dcol = W^T dY scattered back (col2im), dB the sum
// of dY over images and positions. f32 accumulation, one rounding out.
//
//===----------------------------------------------------------------------===//

#include "Internal.h"

#include "amp/Runtime/Window.h"

#include <algorithm>

using namespace amprt;

amprt_status amprt::makeWindow(amprt_context *ctx, const char *k,
                               const amprt_tensor *x, const int64_t *kernel,
                               const amprt_window *win, Window &g) {
  if (!win)
    return ctx->fail(AMPRT_ERR_INVALID_ARGUMENT, "%s: window is NULL", k);
  int32_t sr = win->spatial_rank;
  if (sr < 1 || sr > 3)
    return ctx->fail(AMPRT_ERR_UNSUPPORTED,
                     "%s: spatial rank %d not supported (1, 2 or 3)", k, sr);
  if (win->layout != AMPRT_LAYOUT_CHANNELS_FIRST &&
      win->layout != AMPRT_LAYOUT_CHANNELS_LAST)
    return ctx->fail(AMPRT_ERR_INVALID_ARGUMENT,
                     "%s: layout %d not supported (0 channels first, 1 "
                     "channels last)",
                     k, win->layout);
  bool last = win->layout == AMPRT_LAYOUT_CHANNELS_LAST;
  if (x->rank != sr + 2)
    return ctx->fail(
        AMPRT_ERR_SHAPE, "%s: x has shape %s, expected rank %d (%s)", k,
        shapeStr(x).c_str(), sr + 2, last ? "N, spatial, C" : "N, C, spatial");
  // Where x keeps its spatial dims and its channels.
  int32_t spatial0 = last ? 1 : 2, channelDim = last ? sr + 1 : 1;
  // The window per dim, (D, H, W) order; the dims x lacks are 1 wide.
  int64_t in[3] = {1, 1, 1}, ker[3] = {1, 1, 1}, st[3] = {1, 1, 1},
          pb[3] = {0, 0, 0}, pe[3] = {0, 0, 0}, dl[3] = {1, 1, 1}, out[3];
  for (int i = 0; i < sr; ++i) {
    int a = 3 - sr + i;
    in[a] = x->shape[spatial0 + i];
    ker[a] = kernel[i];
    if (win->kernel[i] != 0 && win->kernel[i] != kernel[i])
      return ctx->fail(AMPRT_ERR_SHAPE,
                       "%s: kernel_shape[%d] = %lld but the weight has %lld", k,
                       i, (long long)win->kernel[i], (long long)kernel[i]);
    st[a] = win->strides[i] ? win->strides[i] : 1;
    dl[a] = win->dilations[i] ? win->dilations[i] : 1;
    pb[a] = win->pads[i];
    pe[a] = win->pads[i + sr];
    if (ker[a] < 1 || st[a] < 1 || dl[a] < 1 || pb[a] < 0 || pe[a] < 0)
      return ctx->fail(AMPRT_ERR_INVALID_ARGUMENT,
                       "%s: bad window at dim %d (kernel %lld, stride %lld, "
                       "dilation %lld, pads %lld/%lld)",
                       k, i, (long long)ker[a], (long long)st[a],
                       (long long)dl[a], (long long)pb[a], (long long)pe[a]);
  }
  for (int a = 0; a < 3; ++a) {
    out[a] =
        amprt_window_count(in[a] + pb[a] + pe[a] - (dl[a] * (ker[a] - 1) + 1),
                           st[a], win->ceil_mode, in[a] + pb[a]);
    if (out[a] < 1)
      return ctx->fail(AMPRT_ERR_SHAPE,
                       "%s: window larger than the padded input %s", k,
                       shapeStr(x).c_str());
  }
  g.N = x->shape[0];
  g.C = x->shape[channelDim];
  g.channelsLast = last;
  g.D = in[0], g.H = in[1], g.W = in[2];
  g.kd = ker[0], g.kh = ker[1], g.kw = ker[2];
  g.sd = st[0], g.sh = st[1], g.sw = st[2];
  g.pf = pb[0], g.pt = pb[1], g.pl = pb[2];
  g.pk = pe[0], g.pb = pe[1], g.pr = pe[2];
  g.dd = dl[0], g.dh = dl[1], g.dw = dl[2];
  g.Do = out[0], g.Ho = out[1], g.Wo = out[2];
  return AMPRT_OK;
}

namespace {

using T = const amprt_tensor *;

Shape outShape(const Window &g, int32_t sr, int64_t channels) {
  return windowShape(g, sr, channels);
}

bool isPointwise(const Window &g) {
  return g.taps() == 1 && g.sd == 1 && g.sh == 1 && g.sw == 1 && g.pf == 0 &&
         g.pt == 0 && g.pl == 0 && g.pk == 0 && g.pb == 0 && g.pr == 0;
}

/// Calls row(c, tap, j, od, oh, d, h) for each row of im2col's matrix: the
/// output row (od, oh) of channel c and kernel tap (a, i, j) = `tap` (j, the
/// tap's column, places the columns), with the input depth d and row h it
/// reads (negative or past the input when the row lies in the padding).
template <typename F>
void forEachColRow(const Window &g, int64_t channels, F &&row) {
  for (int64_t c = 0; c < channels; ++c)
    for (int64_t a = 0; a < g.kd; ++a)
      for (int64_t i = 0; i < g.kh; ++i)
        for (int64_t j = 0; j < g.kw; ++j) {
          int64_t tap = (a * g.kh + i) * g.kw + j;
          for (int64_t od = 0; od < g.Do; ++od)
            for (int64_t oh = 0; oh < g.Ho; ++oh)
              row(c, tap, j, od, oh, od * g.sd - g.pf + a * g.dd,
                  oh * g.sh - g.pt + i * g.dh);
        }
}

/// col[(c, a, i, j), (od, oh, ow)] =
///   x[c, od*sd - pf + a*dd, oh*sh - pt + i*dh, ow*sw - pl + j*dw].
void im2col(const Window &g, int64_t channels, const float *x, float *col) {
  int64_t P = g.outPlane();
  forEachColRow(g, channels,
                [&](int64_t c, int64_t tap, int64_t j, int64_t od, int64_t oh,
                    int64_t d, int64_t h) {
                  float *r =
                      col + (c * g.taps() + tap) * P + (od * g.Ho + oh) * g.Wo;
                  if (d < 0 || d >= g.D || h < 0 || h >= g.H) {
                    std::fill(r, r + g.Wo, 0.f);
                    return;
                  }
                  const float *xr = x + c * g.inPlane() + (d * g.H + h) * g.W;
                  for (int64_t ow = 0; ow < g.Wo; ++ow) {
                    int64_t w = ow * g.sw - g.pl + j * g.dw;
                    r[ow] = (w >= 0 && w < g.W) ? xr[w] : 0.f;
                  }
                });
}

/// The adjoint of im2col: dx[c, d, h, w] += col[(c, a, i, j), (od, oh, ow)].
void col2im(const Window &g, int64_t channels, const float *col, float *dx) {
  int64_t P = g.outPlane();
  forEachColRow(g, channels,
                [&](int64_t c, int64_t tap, int64_t j, int64_t od, int64_t oh,
                    int64_t d, int64_t h) {
                  if (d < 0 || d >= g.D || h < 0 || h >= g.H)
                    return;
                  const float *r =
                      col + (c * g.taps() + tap) * P + (od * g.Ho + oh) * g.Wo;
                  float *dr = dx + c * g.inPlane() + (d * g.H + h) * g.W;
                  for (int64_t ow = 0; ow < g.Wo; ++ow) {
                    int64_t w = ow * g.sw - g.pl + j * g.dw;
                    if (w >= 0 && w < g.W)
                      dr[w] += r[ow];
                  }
                });
}

struct ConvShape {
  Window g;
  int64_t M = 0, G = 1, Cg = 0, Mg = 0;
};

amprt_status convShape(amprt_context *ctx, const char *k, T x, T w,
                       const amprt_window *win, ConvShape &s) {
  if (!win)
    return ctx->fail(AMPRT_ERR_INVALID_ARGUMENT, "%s: window is NULL", k);
  if (w->rank != x->rank)
    return ctx->fail(AMPRT_ERR_SHAPE, "%s: w has shape %s, x %s: ranks differ",
                     k, shapeStr(w).c_str(), shapeStr(x).c_str());
  AMPRT_TRY(makeWindow(ctx, k, x, weightKernel(w, win), win, s.g));
  s.G = win->group ? win->group : 1;
  s.M = w->shape[0];
  if (s.G < 1 || s.g.C % s.G != 0 || s.M % s.G != 0 ||
      weightChannels(w, win) * s.G != s.g.C)
    return ctx->fail(AMPRT_ERR_SHAPE,
                     "%s: group %lld does not fit x %s and w %s (need C = "
                     "w's channels * group, M %% group == 0)",
                     k, (long long)s.G, shapeStr(x).c_str(),
                     shapeStr(w).c_str());
  s.Cg = s.g.C / s.G;
  s.Mg = s.M / s.G;
  return AMPRT_OK;
}

/// The arguments of conv (x -> y) and conv_transpose (x -> y through the
/// data gradient of the convolution of y's shape): dtypes, the window on
/// the convolution's input (x, or y when transposed), the other side's
/// shape, and bias [channels of y].
amprt_status checkConvCall(amprt_context *ctx, const char *k, T x, T w, T bias,
                           T y, const amprt_window *win, bool transposed,
                           ConvShape &s) {
  AMPRT_TRY(checkFloat(ctx, k, "x", x));
  AMPRT_TRY(checkFloat(ctx, k, "w", w));
  AMPRT_TRY(checkFloat(ctx, k, "bias", bias, true));
  AMPRT_TRY(checkFloat(ctx, k, "y", y));
  T input = transposed ? y : x, output = transposed ? x : y;
  AMPRT_TRY(convShape(ctx, k, input, w, win, s));
  AMPRT_TRY(checkShape(ctx, k, transposed ? "x" : "y", output,
                       outShape(s.g, win->spatial_rank, s.M)));
  if (bias)
    AMPRT_TRY(checkShape(ctx, k, "bias", bias, {transposed ? s.g.C : s.M}));
  return AMPRT_OK;
}

/// W_g^T for every group: the weight as the data gradient reads it.
std::vector<float> groupTransposes(const ConvShape &s, const float *w) {
  int64_t CKK = s.Cg * s.g.taps();
  std::vector<float> wT(size_t(s.M * CKK));
  for (int64_t gi = 0; gi < s.G; ++gi)
    transpose2d(w + gi * s.Mg * CKK, s.Mg, CKK, wT.data() + gi * s.Mg * CKK);
  return wT;
}

/// dx (one image, one group) += the data gradient of dy (W_g^T dy, then
/// col2im); `col` is scratch of CKK x P.
void dataGradSlice(const ConvShape &s, const float *wT, const float *dy,
                   float *dx, float *col) {
  const Window &g = s.g;
  int64_t P = g.outPlane(), CKK = s.Cg * g.taps();
  if (isPointwise(g)) {
    sgemm(CKK, P, s.Mg, 1.f, wT, s.Mg, dy, P, true, dx, P);
    return;
  }
  sgemm(CKK, P, s.Mg, 1.f, wT, s.Mg, dy, P, false, col, P);
  col2im(g, s.Cg, col, dx);
}

} // namespace

extern "C" {

amprt_status amprt_conv_transpose(amprt_context *ctx, T x, T w, T bias, T y,
                                  const amprt_window *win) {
  AMPRT_DISPATCH(conv_transpose, ctx, x, w, bias, y, win);
  return guard(ctx, "conv_transpose", [&]() -> amprt_status {
    return viaChannelsFirst(
        ctx, "conv_transpose", win, {{"x", &x}, {"w", &w}}, {{"y", &y}},
        [&](const amprt_window *fw) -> amprt_status {
          const char *k = "conv_transpose";
          ConvShape s;
          AMPRT_TRY(checkConvCall(ctx, k, x, w, bias, y, fw, true, s));
          const Window &g = s.g;
          F32In ix(x), iw(w), ib(bias);
          int64_t P = g.outPlane(), CKK = s.Cg * g.taps(), HW = g.inPlane();
          std::vector<float> wT = groupTransposes(s, iw.p);
          std::vector<float> col(size_t(CKK * P)), acc(size_t(numel(y)), 0.f);
          for (int64_t n = 0; n < g.N; ++n)
            for (int64_t gi = 0; gi < s.G; ++gi)
              dataGradSlice(s, wT.data() + gi * s.Mg * CKK,
                            ix.p + (n * s.M + gi * s.Mg) * P,
                            acc.data() + (n * g.C + gi * s.Cg) * HW,
                            col.data());
          if (bias)
            for (int64_t n = 0; n < g.N; ++n)
              for (int64_t c = 0; c < g.C; ++c)
                for (int64_t p = 0; p < HW; ++p)
                  acc[size_t((n * g.C + c) * HW + p)] += ib.p[c];
          fromF32(acc.data(), y->data, y->dtype, numel(y));
          return AMPRT_OK;
        });
  });
}

amprt_status amprt_conv(amprt_context *ctx, T x, T w, T bias, T y,
                        const amprt_window *win) {
  AMPRT_DISPATCH(conv, ctx, x, w, bias, y, win);
  return guard(ctx, "conv", [&]() -> amprt_status {
    return viaChannelsFirst(
        ctx, "conv", win, {{"x", &x}, {"w", &w}}, {{"y", &y}},
        [&](const amprt_window *fw) -> amprt_status {
          const char *k = "conv";
          ConvShape s;
          AMPRT_TRY(checkConvCall(ctx, k, x, w, bias, y, fw, false, s));
          const Window &g = s.g;
          F32In ix(x), iw(w), ib(bias);
          F32Out out(y);
          int64_t P = g.outPlane(), CKK = s.Cg * g.taps();
          bool direct = isPointwise(g);
          std::vector<float> col(direct ? 0 : size_t(CKK * P));
          for (int64_t n = 0; n < g.N; ++n)
            for (int64_t gi = 0; gi < s.G; ++gi) {
              const float *xs = ix.p + (n * g.C + gi * s.Cg) * g.inPlane();
              const float *B = xs;
              if (!direct) {
                im2col(g, s.Cg, xs, col.data());
                B = col.data();
              }
              float *ys = out.p + (n * s.M + gi * s.Mg) * P;
              sgemm(s.Mg, P, CKK, 1.f, iw.p + gi * s.Mg * CKK, CKK, B, P, false,
                    ys, P);
              if (bias)
                for (int64_t m = 0; m < s.Mg; ++m) {
                  float bv = ib.p[gi * s.Mg + m];
                  for (int64_t p = 0; p < P; ++p)
                    ys[m * P + p] += bv;
                }
            }
          out.commit();
          return AMPRT_OK;
        });
  });
}

amprt_status amprt_conv_grad(amprt_context *ctx, T dy, T x, T w, T dx, T dw,
                             T db, const amprt_window *win) {
  AMPRT_DISPATCH(conv_grad, ctx, dy, x, w, dx, dw, db, win);
  return guard(ctx, "conv_grad", [&]() -> amprt_status {
    return viaChannelsFirst(
        ctx, "conv_grad", win, {{"dy", &dy}, {"x", &x}, {"w", &w}},
        {{"dx", &dx}, {"dw", &dw}},
        [&](const amprt_window *fw) -> amprt_status {
          const char *k = "conv_grad";
          AMPRT_TRY(checkFloat(ctx, k, "dy", dy));
          AMPRT_TRY(checkFloat(ctx, k, "x", x));
          AMPRT_TRY(checkFloat(ctx, k, "w", w));
          AMPRT_TRY(checkFloat(ctx, k, "dx", dx, true));
          AMPRT_TRY(checkFloat(ctx, k, "dw", dw, true));
          AMPRT_TRY(checkFloat(ctx, k, "db", db, true));
          ConvShape s;
          AMPRT_TRY(convShape(ctx, k, x, w, fw, s));
          const Window &g = s.g;
          AMPRT_TRY(
              checkShape(ctx, k, "dy", dy, outShape(g, fw->spatial_rank, s.M)));
          if (dx)
            AMPRT_TRY(checkShape(ctx, k, "dx", dx, shapeOf(x)));
          if (dw)
            AMPRT_TRY(checkShape(ctx, k, "dw", dw, shapeOf(w)));
          if (db)
            AMPRT_TRY(checkShape(ctx, k, "db", db, {s.M}));
          F32In idy(dy), ix(x), iw(w);
          int64_t P = g.outPlane(), CKK = s.Cg * g.taps();
          bool direct = isPointwise(g);
          if (db) {
            std::vector<double> acc(size_t(s.M), 0.0);
            for (int64_t n = 0; n < g.N; ++n)
              for (int64_t m = 0; m < s.M; ++m) {
                const float *r = idy.p + (n * s.M + m) * P;
                float part = 0.f;
                for (int64_t p = 0; p < P; ++p)
                  part += r[p];
                acc[size_t(m)] += part;
              }
            for (int64_t m = 0; m < s.M; ++m)
              storeF(db->data, db->dtype, m, float(acc[size_t(m)]));
          }
          if (!dx && !dw)
            return AMPRT_OK;
          std::vector<float> col(size_t(CKK * P)), colT, wT;
          std::vector<float> dwAcc(dw ? size_t(s.M * CKK) : 0, 0.f);
          std::vector<float> dxAcc(dx ? size_t(numel(x)) : 0, 0.f);
          if (dx)
            wT = groupTransposes(s, iw.p);
          if (dw)
            colT.resize(size_t(CKK * P));
          for (int64_t n = 0; n < g.N; ++n)
            for (int64_t gi = 0; gi < s.G; ++gi) {
              const float *dys = idy.p + (n * s.M + gi * s.Mg) * P;
              if (dw) {
                const float *xs = ix.p + (n * g.C + gi * s.Cg) * g.inPlane();
                const float *C = xs;
                if (!direct) {
                  im2col(g, s.Cg, xs, col.data());
                  C = col.data();
                }
                transpose2d(C, CKK, P, colT.data());
                sgemm(s.Mg, CKK, P, 1.f, dys, P, colT.data(), CKK, true,
                      dwAcc.data() + gi * s.Mg * CKK, CKK);
              }
              if (dx)
                dataGradSlice(s, wT.data() + gi * s.Mg * CKK, dys,
                              dxAcc.data() +
                                  (n * g.C + gi * s.Cg) * g.inPlane(),
                              col.data());
            }
          if (dw)
            fromF32(dwAcc.data(), dw->data, dw->dtype, numel(w));
          if (dx)
            fromF32(dxAcc.data(), dx->data, dx->dtype, numel(x));
          return AMPRT_OK;
        });
  });
}

} // extern "C"

//===- Recurrent.cpp - LSTM and GRU, forward and backward -----------------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// ONNX's LSTM and GRU in layout 0 (X [S, B, I], Y [S, D, B, H]) with the
// default activations, and ONNX Runtime's training forms: the forward
// keeps what the backward needs (every cell state, the gates after their
// activations), and the backward runs the steps in reverse. Everything is
// f32 (bf16/f16 inputs widened, outputs rounded once); each step's
// products are sgemm calls (Gemm.cpp), its cell equations those of
// amp/Runtime/Math/Recurrent.h (lstmCell, gruGates, ..., which the CUDA
// kernels run too; the equations are written out there).
//
// A reverse direction runs t = S-1 .. 0; bidirectional runs both, the
// forward one at direction index 0.
//
//===----------------------------------------------------------------------===//

#include "amp/Runtime/Math/Recurrent.h"
#include "Internal.h"

#include <cinttypes>

using namespace amprt;

namespace {

using T = const amprt_tensor *;

amprt_status checkRecurrent(amprt_context *ctx, const char *k, T x, T w, T r,
                            T b, T h0, T c0, int32_t direction, int64_t G,
                            RnnDims &d) {
  AMPRT_TRY(checkFloat(ctx, k, "x", x));
  AMPRT_TRY(checkFloat(ctx, k, "w", w));
  AMPRT_TRY(checkFloat(ctx, k, "r", r));
  AMPRT_TRY(checkFloat(ctx, k, "b", b, true));
  AMPRT_TRY(checkFloat(ctx, k, "initial_h", h0, true));
  AMPRT_TRY(checkFloat(ctx, k, "initial_c", c0, true));
  if (direction < 0 || direction > 2)
    return ctx->fail(AMPRT_ERR_INVALID_ARGUMENT,
                     "%s: direction %d (expected 0 forward, 1 reverse, 2 "
                     "bidirectional)",
                     k, direction);
  if (x->rank != 3 || w->rank != 3 || w->shape[1] % G != 0)
    return ctx->fail(AMPRT_ERR_SHAPE,
                     "%s: x %s and w %s: expected [S, B, I] and [D, %" PRId64
                     "H, I]",
                     k, shapeStr(x).c_str(), shapeStr(w).c_str(), G);
  d.S = x->shape[0];
  d.B = x->shape[1];
  d.I = x->shape[2];
  d.G = G;
  d.H = w->shape[1] / G;
  d.D = direction == 2 ? 2 : 1;
  AMPRT_TRY(checkShape(ctx, k, "w", w, {d.D, G * d.H, d.I}));
  AMPRT_TRY(checkShape(ctx, k, "r", r, {d.D, G * d.H, d.H}));
  if (b)
    AMPRT_TRY(checkShape(ctx, k, "b", b, {d.D, 2 * G * d.H}));
  if (h0)
    AMPRT_TRY(checkShape(ctx, k, "initial_h", h0, {d.D, d.B, d.H}));
  if (c0)
    AMPRT_TRY(checkShape(ctx, k, "initial_c", c0, {d.D, d.B, d.H}));
  return AMPRT_OK;
}

/// Rounds v into the optional output t.
void store(const std::vector<float> &v, T t) {
  if (t)
    fromF32(v.data(), t->data, t->dtype, int64_t(v.size()));
}

/// Checks an optional float output of `shape`.
amprt_status checkOut(amprt_context *ctx, const char *k, const char *what, T t,
                      const Shape &shape) {
  AMPRT_TRY(checkFloat(ctx, k, what, t, true));
  if (t)
    AMPRT_TRY(checkShape(ctx, k, what, t, shape));
  return AMPRT_OK;
}

/// The widened operands of a call, and the per-direction slices of them.
struct Operands {
  F32In x, w, r, b, h0, c0;
  Operands(T x, T w, T r, T b, T h0, T c0)
      : x(x), w(w), r(r), b(b), h0(h0), c0(c0) {}
};

/// One direction's weights transposed once, and x W^T for every step (one
/// product over all S * B rows: each row is computed as a per-step product
/// would be, Gemm.cpp's sgemm being position independent).
struct Prepared {
  std::vector<float> wT, rT, xw; // [I, GH], [H, GH], [S * B, GH]
  Prepared(const RnnDims &d, const float *x, const float *W, const float *R) {
    int64_t GH = d.G * d.H;
    wT.resize(size_t(d.I * GH));
    rT.resize(size_t(d.H * GH));
    xw.resize(size_t(d.S * d.B * GH));
    transpose2d(W, GH, d.I, wT.data());
    transpose2d(R, GH, d.H, rT.data());
    sgemm(d.S * d.B, GH, d.I, 1.f, x, d.I, wT.data(), GH, false, xw.data(), GH);
  }
};

/// acc[N, K] += g[rows, N]^T v[rows, K] (g's leading dimension ldg).
void addOuter(int64_t rows, int64_t N, int64_t K, const float *g, int64_t ldg,
              const float *v, int64_t ldv, float *acc, int64_t ldacc,
              std::vector<float> &scratch) {
  scratch.resize(size_t(N * rows));
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t n = 0; n < N; ++n)
      scratch[size_t(n * rows + i)] = g[i * ldg + n];
  sgemm(N, K, rows, 1.f, scratch.data(), rows, v, ldv, true, acc, ldacc);
}

} // namespace

amprt_status amprt::checkLstm(amprt_context *ctx, T x, T w, T r, T b, T h0,
                              T c0, int32_t direction, T y, T y_h, T y_c,
                              T all_c, T gates, RnnDims &d) {
  const char *k = "lstm";
  AMPRT_TRY(checkRecurrent(ctx, k, x, w, r, b, h0, c0, direction, 4, d));
  AMPRT_TRY(checkOut(ctx, k, "y", y, {d.S, d.D, d.B, d.H}));
  AMPRT_TRY(checkOut(ctx, k, "y_h", y_h, {d.D, d.B, d.H}));
  AMPRT_TRY(checkOut(ctx, k, "y_c", y_c, {d.D, d.B, d.H}));
  AMPRT_TRY(checkOut(ctx, k, "all_c", all_c, {d.S, d.D, d.B, d.H}));
  return checkOut(ctx, k, "gates", gates, {d.S, d.D, d.B, 4 * d.H});
}

amprt_status amprt::checkLstmGrad(amprt_context *ctx, T x, T w, T r, T b, T h0,
                                  T c0, T y, T all_c, T gates, T dy, T dy_h,
                                  T dy_c, int32_t direction, T dx, T dw, T dr,
                                  T db, T dh0, T dc0, RnnDims &d) {
  const char *k = "lstm_grad";
  AMPRT_TRY(checkRecurrent(ctx, k, x, w, r, b, h0, c0, direction, 4, d));
  int64_t S = d.S, B = d.B, H = d.H, D = d.D, G4 = 4 * H;
  Shape seq = {S, D, B, H}, last = {D, B, H};
  for (auto [what, t, shape] : {std::tuple<const char *, T, Shape>{"y", y, seq},
                                {"all_c", all_c, seq},
                                {"gates", gates, {S, D, B, G4}}}) {
    AMPRT_TRY(checkFloat(ctx, k, what, t));
    AMPRT_TRY(checkShape(ctx, k, what, t, shape));
  }
  AMPRT_TRY(checkOut(ctx, k, "dy", dy, seq));
  AMPRT_TRY(checkOut(ctx, k, "dy_h", dy_h, last));
  AMPRT_TRY(checkOut(ctx, k, "dy_c", dy_c, last));
  AMPRT_TRY(checkOut(ctx, k, "dx", dx, shapeOf(x)));
  AMPRT_TRY(checkOut(ctx, k, "dw", dw, shapeOf(w)));
  AMPRT_TRY(checkOut(ctx, k, "dr", dr, shapeOf(r)));
  AMPRT_TRY(checkOut(ctx, k, "db", db, {D, 8 * H}));
  AMPRT_TRY(checkOut(ctx, k, "dh0", dh0, last));
  return checkOut(ctx, k, "dc0", dc0, last);
}

amprt_status amprt::checkGru(amprt_context *ctx, T x, T w, T r, T b, T h0,
                             int32_t direction, T y, T y_h, T gates,
                             RnnDims &d) {
  const char *k = "gru";
  AMPRT_TRY(checkRecurrent(ctx, k, x, w, r, b, h0, nullptr, direction, 3, d));
  AMPRT_TRY(checkOut(ctx, k, "y", y, {d.S, d.D, d.B, d.H}));
  AMPRT_TRY(checkOut(ctx, k, "y_h", y_h, {d.D, d.B, d.H}));
  return checkOut(ctx, k, "gates", gates, {d.S, d.D, d.B, 3 * d.H});
}

amprt_status amprt::checkGruGrad(amprt_context *ctx, T x, T w, T r, T b, T h0,
                                 T y, T gates, T dy, T dy_h, int32_t direction,
                                 T dx, T dw, T dr, T db, T dh0, RnnDims &d) {
  const char *k = "gru_grad";
  AMPRT_TRY(checkRecurrent(ctx, k, x, w, r, b, h0, nullptr, direction, 3, d));
  int64_t S = d.S, B = d.B, H = d.H, D = d.D, G3 = 3 * H;
  Shape seq = {S, D, B, H}, last = {D, B, H};
  AMPRT_TRY(checkFloat(ctx, k, "y", y));
  AMPRT_TRY(checkShape(ctx, k, "y", y, seq));
  AMPRT_TRY(checkFloat(ctx, k, "gates", gates));
  AMPRT_TRY(checkShape(ctx, k, "gates", gates, {S, D, B, G3}));
  AMPRT_TRY(checkOut(ctx, k, "dy", dy, seq));
  AMPRT_TRY(checkOut(ctx, k, "dy_h", dy_h, last));
  AMPRT_TRY(checkOut(ctx, k, "dx", dx, shapeOf(x)));
  AMPRT_TRY(checkOut(ctx, k, "dw", dw, shapeOf(w)));
  AMPRT_TRY(checkOut(ctx, k, "dr", dr, shapeOf(r)));
  AMPRT_TRY(checkOut(ctx, k, "db", db, {D, 6 * H}));
  return checkOut(ctx, k, "dh0", dh0, last);
}

extern "C" {

amprt_status amprt_lstm(amprt_context *ctx, T x, T w, T r, T b, T h0, T c0,
                        int32_t direction, T y, T y_h, T y_c, T all_c,
                        T gates) {
  AMPRT_DISPATCH(lstm, ctx, x, w, r, b, h0, c0, direction, y, y_h, y_c, all_c,
                 gates);
  const char *k = "lstm";
  return guard(ctx, k, [&]() -> amprt_status {
    RnnDims d;
    AMPRT_TRY(checkLstm(ctx, x, w, r, b, h0, c0, direction, y, y_h, y_c, all_c,
                        gates, d));
    Operands in(x, w, r, b, h0, c0);
    int64_t S = d.S, B = d.B, I = d.I, H = d.H, D = d.D, G4 = 4 * H;
    std::vector<float> Y(size_t(S * D * B * H)), C(Y.size()),
        A(size_t(S * D * B * G4)), Yh(size_t(D * B * H)), Yc(Yh.size());
    for (int64_t dir = 0; dir < D; ++dir) {
      const float *W = in.w.p + dir * G4 * I, *R = in.r.p + dir * G4 * H;
      std::vector<float> a(size_t(B * G4)), hPrev(size_t(B * H), 0.f),
          cPrev(hPrev);
      // The initial states, when given (the vectors start as zeros).
      if (auto *h =
              stateBefore(d, 0, direction, dir, nullptr, in.h0.p, nullptr))
        std::copy(h, h + B * H, hPrev.begin());
      if (auto *c =
              stateBefore(d, 0, direction, dir, nullptr, in.c0.p, nullptr))
        std::copy(c, c + B * H, cPrev.begin());
      Prepared p(d, in.x.p, W, R);
      for (int64_t n = 0; n < S; ++n) {
        int64_t t = stepAt(d, n, direction, dir);
        std::copy(p.xw.begin() + t * B * G4, p.xw.begin() + (t + 1) * B * G4,
                  a.begin());
        sgemm(B, G4, H, 1.f, hPrev.data(), H, p.rT.data(), G4, true, a.data(),
              G4);
        float *gt = A.data() + (t * D + dir) * B * G4;
        float *ht = Y.data() + (t * D + dir) * B * H;
        float *ct = C.data() + (t * D + dir) * B * H;
        const float *bias = in.b.p ? in.b.p + dir * 2 * G4 : nullptr;
        for (int64_t bi = 0; bi < B; ++bi)
          for (int64_t h = 0; h < H; ++h) {
            float gv[4];
            lstmCell(a.data() + bi * G4, bias, h, H, cPrev[size_t(bi * H + h)],
                     gv, ct[bi * H + h], ht[bi * H + h]);
            for (int g = 0; g < 4; ++g)
              gt[bi * G4 + g * H + h] = gv[g];
          }
        std::copy(ht, ht + B * H, hPrev.begin());
        std::copy(ct, ct + B * H, cPrev.begin());
      }
      std::copy(hPrev.begin(), hPrev.end(), Yh.begin() + dir * B * H);
      std::copy(cPrev.begin(), cPrev.end(), Yc.begin() + dir * B * H);
    }
    store(Y, y);
    store(Yh, y_h);
    store(Yc, y_c);
    store(C, all_c);
    store(A, gates);
    return AMPRT_OK;
  });
}

amprt_status amprt_lstm_grad(amprt_context *ctx, T x, T w, T r, T b, T h0, T c0,
                             T y, T all_c, T gates, T dy, T dy_h, T dy_c,
                             int32_t direction, T dx, T dw, T dr, T db, T dh0,
                             T dc0) {
  AMPRT_DISPATCH(lstm_grad, ctx, x, w, r, b, h0, c0, y, all_c, gates, dy, dy_h,
                 dy_c, direction, dx, dw, dr, db, dh0, dc0);
  const char *k = "lstm_grad";
  return guard(ctx, k, [&]() -> amprt_status {
    RnnDims d;
    AMPRT_TRY(checkLstmGrad(ctx, x, w, r, b, h0, c0, y, all_c, gates, dy, dy_h,
                            dy_c, direction, dx, dw, dr, db, dh0, dc0, d));
    int64_t S = d.S, B = d.B, I = d.I, H = d.H, D = d.D, G4 = 4 * H;
    Operands in(x, w, r, b, h0, c0);
    F32In Y(y), C(all_c), A(gates), gY(dy), gYh(dy_h), gYc(dy_c);
    std::vector<float> dX(size_t(S * B * I), 0.f), dW(size_t(D * G4 * I), 0.f),
        dR(size_t(D * G4 * H), 0.f), dB(size_t(D * 8 * H), 0.f),
        dH0(size_t(D * B * H), 0.f), dC0(dH0.size(), 0.f), scratch;
    std::vector<float> zeros(size_t(B * H), 0.f);
    for (int64_t dir = 0; dir < D; ++dir) {
      const float *W = in.w.p + dir * G4 * I, *R = in.r.p + dir * G4 * H;
      std::vector<float> dH(size_t(B * H), 0.f), dC(dH), da(size_t(B * G4));
      if (gYh.p)
        std::copy(gYh.p + dir * B * H, gYh.p + (dir + 1) * B * H, dH.begin());
      if (gYc.p)
        std::copy(gYc.p + dir * B * H, gYc.p + (dir + 1) * B * H, dC.begin());
      for (int64_t n = S - 1; n >= 0; --n) {
        int64_t t = stepAt(d, n, direction, dir);
        const float *hPrev = stateBefore(d, n, direction, dir, Y.p, in.h0.p,
                                         zeros.data()),
                    *cPrev = stateBefore(d, n, direction, dir, C.p, in.c0.p,
                                         zeros.data());
        const float *ct = C.p + (t * D + dir) * B * H;
        const float *gt = A.p + (t * D + dir) * B * G4;
        for (int64_t bi = 0; bi < B; ++bi)
          for (int64_t h = 0; h < H; ++h) {
            size_t e = size_t(bi * H + h);
            float gh = dH[e] + (gY.p ? gY.p[(t * D + dir) * B * H + e] : 0.f);
            lstmCellGrad(gt + bi * G4, h, H, ct[e], cPrev[e], gh, dC[e],
                         da.data() + bi * G4);
          }
        // dX_t += da W, dH_{t-1} = da R, dW += da^T X_t, dR += da^T H_{t-1}.
        sgemm(B, I, G4, 1.f, da.data(), G4, W, I, true, dX.data() + t * B * I,
              I);
        sgemm(B, H, G4, 1.f, da.data(), G4, R, H, false, dH.data(), H);
        addOuter(B, G4, I, da.data(), G4, in.x.p + t * B * I, I,
                 dW.data() + dir * G4 * I, I, scratch);
        addOuter(B, G4, H, da.data(), G4, hPrev, H, dR.data() + dir * G4 * H, H,
                 scratch);
        for (int64_t bi = 0; bi < B; ++bi)
          for (int64_t j = 0; j < G4; ++j) {
            dB[size_t(dir * 8 * H + j)] += da[size_t(bi * G4 + j)];
            dB[size_t(dir * 8 * H + G4 + j)] += da[size_t(bi * G4 + j)];
          }
      }
      std::copy(dH.begin(), dH.end(), dH0.begin() + dir * B * H);
      std::copy(dC.begin(), dC.end(), dC0.begin() + dir * B * H);
    }
    store(dX, dx);
    store(dW, dw);
    store(dR, dr);
    store(dB, db);
    store(dH0, dh0);
    store(dC0, dc0);
    return AMPRT_OK;
  });
}

amprt_status amprt_gru(amprt_context *ctx, T x, T w, T r, T b, T h0,
                       int32_t direction, int32_t linear_before_reset, T y,
                       T y_h, T gates) {
  AMPRT_DISPATCH(gru, ctx, x, w, r, b, h0, direction, linear_before_reset, y,
                 y_h, gates);
  const char *k = "gru";
  return guard(ctx, k, [&]() -> amprt_status {
    RnnDims d;
    AMPRT_TRY(checkGru(ctx, x, w, r, b, h0, direction, y, y_h, gates, d));
    Operands in(x, w, r, b, h0, nullptr);
    int64_t S = d.S, B = d.B, I = d.I, H = d.H, D = d.D, G3 = 3 * H;
    std::vector<float> Y(size_t(S * D * B * H)), A(size_t(S * D * B * G3)),
        Yh(size_t(D * B * H));
    for (int64_t dir = 0; dir < D; ++dir) {
      const float *W = in.w.p + dir * G3 * I, *R = in.r.p + dir * G3 * H;
      const float *bias = in.b.p ? in.b.p + dir * 2 * G3 : nullptr;
      std::vector<float> ax(size_t(B * G3)), ah(size_t(B * G3)),
          rh(size_t(B * H)), hPrev(size_t(B * H), 0.f);
      if (auto *h =
              stateBefore(d, 0, direction, dir, nullptr, in.h0.p, nullptr))
        std::copy(h, h + B * H, hPrev.begin());
      Prepared p(d, in.x.p, W, R);
      for (int64_t n = 0; n < S; ++n) {
        int64_t t = stepAt(d, n, direction, dir);
        std::copy(p.xw.begin() + t * B * G3, p.xw.begin() + (t + 1) * B * G3,
                  ax.begin());
        // H_{t-1} R^T for z, r (and h when linear before reset).
        sgemm(B, linear_before_reset ? G3 : 2 * H, H, 1.f, hPrev.data(), H,
              p.rT.data(), G3, false, ah.data(), G3);
        float *gt = A.data() + (t * D + dir) * B * G3;
        for (int64_t bi = 0; bi < B; ++bi)
          for (int64_t h = 0; h < H; ++h)
            rh[size_t(bi * H + h)] =
                gruGates(ax.data() + bi * G3, ah.data() + bi * G3, bias, h, H,
                         hPrev[size_t(bi * H + h)], gt + bi * G3);
        if (!linear_before_reset) // (r H_{t-1}) R_h^T
          sgemm(B, H, H, 1.f, rh.data(), H, p.rT.data() + 2 * H, G3, false,
                ah.data() + 2 * H, G3);
        float *ht = Y.data() + (t * D + dir) * B * H;
        for (int64_t bi = 0; bi < B; ++bi)
          for (int64_t h = 0; h < H; ++h)
            ht[bi * H + h] = gruOut(ax.data() + bi * G3, ah.data() + bi * G3,
                                    bias, h, H, hPrev[size_t(bi * H + h)],
                                    linear_before_reset != 0, gt + bi * G3);
        std::copy(ht, ht + B * H, hPrev.begin());
      }
      std::copy(hPrev.begin(), hPrev.end(), Yh.begin() + dir * B * H);
    }
    store(Y, y);
    store(Yh, y_h);
    store(A, gates);
    return AMPRT_OK;
  });
}

amprt_status amprt_gru_grad(amprt_context *ctx, T x, T w, T r, T b, T h0, T y,
                            T gates, T dy, T dy_h, int32_t direction,
                            int32_t linear_before_reset, T dx, T dw, T dr, T db,
                            T dh0) {
  AMPRT_DISPATCH(gru_grad, ctx, x, w, r, b, h0, y, gates, dy, dy_h, direction,
                 linear_before_reset, dx, dw, dr, db, dh0);
  const char *k = "gru_grad";
  return guard(ctx, k, [&]() -> amprt_status {
    RnnDims d;
    AMPRT_TRY(checkGruGrad(ctx, x, w, r, b, h0, y, gates, dy, dy_h, direction,
                           dx, dw, dr, db, dh0, d));
    int64_t S = d.S, B = d.B, I = d.I, H = d.H, D = d.D, G3 = 3 * H;
    Operands in(x, w, r, b, h0, nullptr);
    F32In Y(y), A(gates), gY(dy), gYh(dy_h);
    std::vector<float> dX(size_t(S * B * I), 0.f), dW(size_t(D * G3 * I), 0.f),
        dR(size_t(D * G3 * H), 0.f), dB(size_t(D * 6 * H), 0.f),
        dH0(size_t(D * B * H), 0.f), zeros(size_t(B * H), 0.f), scratch;
    for (int64_t dir = 0; dir < D; ++dir) {
      const float *W = in.w.p + dir * G3 * I, *R = in.r.p + dir * G3 * H;
      const float *Rh = R + 2 * H * H;
      std::vector<float> rhT(size_t(H * H));
      transpose2d(Rh, H, H, rhT.data());
      const float *bias = in.b.p ? in.b.p + dir * 2 * G3 : nullptr;
      std::vector<float> dH(size_t(B * H), 0.f), dPrev(dH), da(size_t(B * G3)),
          q(size_t(B * H)), rh(size_t(B * H)), dq(size_t(B * H)),
          ds(size_t(B * H));
      if (gYh.p)
        std::copy(gYh.p + dir * B * H, gYh.p + (dir + 1) * B * H, dH.begin());
      for (int64_t n = S - 1; n >= 0; --n) {
        int64_t t = stepAt(d, n, direction, dir);
        const float *hPrev =
            stateBefore(d, n, direction, dir, Y.p, in.h0.p, zeros.data());
        const float *gt = A.p + (t * D + dir) * B * G3;
        if (linear_before_reset) // q = H_{t-1} R_h^T (+ Rb_h below)
          sgemm(B, H, H, 1.f, hPrev, H, rhT.data(), H, false, q.data(), H);
        for (int64_t bi = 0; bi < B; ++bi)
          for (int64_t h = 0; h < H; ++h) {
            size_t e = size_t(bi * H + h);
            float gh = dH[e] + (gY.p ? gY.p[(t * D + dir) * B * H + e] : 0.f);
            gruCellGrad(gt + bi * G3, bias, h, H, hPrev[e], gh,
                        linear_before_reset != 0,
                        linear_before_reset ? q[e] : 0.f, da.data() + bi * G3,
                        dPrev[e], dq[e], rh[e]);
          }
        if (!linear_before_reset) {
          // a_h reads (r H_{t-1}) R_h^T: ds = da_h R_h.
          for (int64_t bi = 0; bi < B; ++bi)
            std::copy(da.data() + bi * G3 + 2 * H, da.data() + bi * G3 + G3,
                      dq.data() + bi * H);
          sgemm(B, H, H, 1.f, dq.data(), H, Rh, H, false, ds.data(), H);
          for (int64_t bi = 0; bi < B; ++bi)
            for (int64_t h = 0; h < H; ++h) {
              size_t e = size_t(bi * H + h);
              gruResetGrad(gt + bi * G3, h, H, ds[e], hPrev[e],
                           da.data() + bi * G3, dPrev[e]);
            }
          // dR_h += da_h^T (r H_{t-1}); dq holds da_h for the bias below.
          addOuter(B, H, H, dq.data(), H, rh.data(), H,
                   dR.data() + dir * G3 * H + 2 * H * H, H, scratch);
        } else {
          // dR_h += dq^T H_{t-1}, dH_{t-1} += dq R_h.
          addOuter(B, H, H, dq.data(), H, hPrev, H,
                   dR.data() + dir * G3 * H + 2 * H * H, H, scratch);
          sgemm(B, H, H, 1.f, dq.data(), H, Rh, H, true, dPrev.data(), H);
        }
        // z and r: dR_zr += da_zr^T H_{t-1}, dH_{t-1} += da_zr R_zr.
        addOuter(B, 2 * H, H, da.data(), G3, hPrev, H, dR.data() + dir * G3 * H,
                 H, scratch);
        sgemm(B, H, 2 * H, 1.f, da.data(), G3, R, H, true, dPrev.data(), H);
        // dX_t += da W, dW += da^T X_t.
        sgemm(B, I, G3, 1.f, da.data(), G3, W, I, true, dX.data() + t * B * I,
              I);
        addOuter(B, G3, I, da.data(), G3, in.x.p + t * B * I, I,
                 dW.data() + dir * G3 * I, I, scratch);
        float *bW = dB.data() + dir * 6 * H, *bR = bW + G3;
        for (int64_t bi = 0; bi < B; ++bi) {
          for (int64_t j = 0; j < G3; ++j)
            bW[j] += da[size_t(bi * G3 + j)];
          for (int64_t j = 0; j < 2 * H; ++j)
            bR[j] += da[size_t(bi * G3 + j)];
          for (int64_t h = 0; h < H; ++h)
            bR[2 * H + h] += dq[size_t(bi * H + h)];
        }
        dH.swap(dPrev);
      }
      std::copy(dH.begin(), dH.end(), dH0.begin() + dir * B * H);
    }
    store(dX, dx);
    store(dW, dw);
    store(dR, dr);
    store(dB, db);
    store(dH0, dh0);
    return AMPRT_OK;
  });
}

} // extern "C"

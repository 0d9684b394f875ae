//===- Recurrent.cu - LSTM and GRU, forward and backward, on the device ---===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// The CUDA version of Recurrent.cpp's LSTM and GRU (layout 0, default
// activations, ONNX Runtime's training forms), in f32 like the CPU code: the
// inputs are widened once, the products run on cuBLASLt (sgemmRows) and the
// gates in one element-wise kernel per step, and the outputs are rounded once.
// The cell equations are the CPU's own (lstmCell, lstmCellGrad, gruGates,
// gruOut, gruCellGrad, gruResetGrad of amp/Runtime/Math/Recurrent.h).
//
//   forward, per direction:  XW = X W^T for all steps (one product), then
//     per step a = XW_t + H_{t-1} R^T and the cell kernel (gates, C_t, H_t)
//   backward, per direction: per step the cell's gradient kernel (da_t, and
//     dC carried) and dH_{t-1} = da_t R; then, over all steps at once,
//     dX += DA W, dW = DA^T X, dR = DA^T H_prev and db = the column sums
//     of DA.
//
// The sums run in cuBLASLt's order (the CPU sums step by step), and the
// device's expf/tanhf are within a few ulp of glibc's: results agree with
// the CPU within tolerances, not bit for bit. GRU follows the same plan;
// without linear_before_reset each step has a second product,
// (r H_{t-1}) R_h^T, and its backward one more, da_h R_h.
//
//===----------------------------------------------------------------------===//

#include "Common.cuh"
#include "amp/Runtime/Math/Recurrent.h"

#include <vector>

using namespace amprt;
using namespace amprt::cuda;

namespace {

constexpr int kThreads = 256;

__global__ void widenKernel(const void *x, int32_t dt, float *y, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    y[i] = loadF(x, dt, i);
}

/// f32 device copies of the operands (the data itself when already f32;
/// NULL for an absent optional one).
struct F32Operands {
  static constexpr int kMax = 10;
  Scratch buf[kMax];
  int used = 0;
  amprt_status get(amprt_context *ctx, const char *k, T t, const float *&p) {
    p = nullptr;
    if (!t)
      return AMPRT_OK;
    if (t->dtype == AMPRT_F32) {
      p = static_cast<const float *>(t->data);
      return AMPRT_OK;
    }
    if (used == kMax)
      return ctx->fail(AMPRT_ERR_INTERNAL, "%s: too many operands to widen", k);
    int64_t n = numel(t);
    Scratch &s = buf[used++];
    AMPRT_TRY(s.get(ctx, k, size_t(n) * sizeof(float)));
    widenKernel<<<gridFor(n, kThreads, 4), kThreads, 0, stream(ctx)>>>(
        t->data, t->dtype, static_cast<float *>(s.p), n);
    AMPRT_CUDA_LAUNCHED(ctx, k);
    p = static_cast<const float *>(s.p);
    return AMPRT_OK;
  }
};

/// An f32 scratch of n floats, zeroed when asked.
amprt_status scratchF32(amprt_context *ctx, const char *k, Scratch &s,
                        int64_t n, float *&p, bool zero = false) {
  AMPRT_TRY(s.get(ctx, k, size_t(n) * sizeof(float)));
  p = static_cast<float *>(s.p);
  if (zero)
    AMPRT_CUDA(ctx, k,
               cudaMemsetAsync(p, 0, size_t(n) * sizeof(float), stream(ctx)));
  return AMPRT_OK;
}

/// Rounds the f32 result into an optional output.
amprt_status storeOut(amprt_context *ctx, const char *k, const float *v, T t) {
  return t ? storeFromF32(ctx, k, v, t) : AMPRT_OK;
}

amprt_status copyF32(amprt_context *ctx, const char *k, float *dst,
                     const float *src, int64_t n) {
  AMPRT_CUDA(ctx, k,
             cudaMemcpyAsync(dst, src, size_t(n) * sizeof(float),
                             cudaMemcpyDeviceToDevice, stream(ctx)));
  return AMPRT_OK;
}

/// One step's cell (lstmCell, as Recurrent.cpp): a [B, 4H] the products,
/// bias [8H] (Wb then Rb) or NULL, cPrev [B, H]; writes the gates (after
/// their activations), C_t and H_t.
__global__ void lstmCellKernel(const float *a, const float *bias,
                               const float *cPrev, float *gates, float *ct,
                               float *ht, int64_t B, int64_t H) {
  int64_t G4 = 4 * H;
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < B * H;
       e += int64_t(gridDim.x) * blockDim.x) {
    int64_t bi = e / H, h = e % H;
    float gv[4], cn, hn;
    lstmCell(a + bi * G4, bias, h, H, cPrev[e], gv, cn, hn);
    for (int g = 0; g < 4; ++g)
      gates[bi * G4 + g * H + h] = gv[g];
    ct[e] = cn;
    ht[e] = hn;
  }
}

/// One step's cell gradient (lstmCellGrad): from the gates, C_t, C_{t-1}, the
/// carried dH (plus dY_t when given) and dC, writes da [B, 4H] and carries dC
/// back.
__global__ void lstmCellGradKernel(const float *gates, const float *ct,
                                   const float *cPrev, const float *gy,
                                   const float *dH, float *dC, float *da,
                                   int64_t B, int64_t H) {
  int64_t G4 = 4 * H;
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < B * H;
       e += int64_t(gridDim.x) * blockDim.x) {
    int64_t bi = e / H, h = e % H;
    float gh = dH[e] + (gy ? gy[e] : 0.f);
    float dc = dC[e];
    lstmCellGrad(gates + bi * G4, h, H, ct[e], cPrev[e], gh, dc, da + bi * G4);
    dC[e] = dc;
  }
}

/// db[j] and db[G + j] = the sum over rows of da[rows, G] (f64, in order).
__global__ void biasGradKernel(const float *da, int64_t rows, int64_t G,
                               float *db) {
  for (int64_t j = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; j < G;
       j += int64_t(gridDim.x) * blockDim.x) {
    double s = 0;
    for (int64_t r = 0; r < rows; ++r)
      s += da[r * G + j];
    db[j] = db[G + j] = float(s);
  }
}

/// GRU's db [6H]: Wb = the column sums of da [rows, 3H]; Rb's z and r
/// likewise, its h the column sums of dq [rows, H] (f64, in order).
__global__ void gruBiasGradKernel(const float *da, const float *dq,
                                  int64_t rows, int64_t H, float *db) {
  int64_t G3 = 3 * H;
  for (int64_t j = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; j < G3;
       j += int64_t(gridDim.x) * blockDim.x) {
    double s = 0, sq = 0;
    for (int64_t r = 0; r < rows; ++r) {
      s += da[r * G3 + j];
      if (j >= 2 * H)
        sq += dq[r * H + j - 2 * H];
    }
    db[j] = float(s);
    db[G3 + j] = float(j < 2 * H ? s : sq);
  }
}

/// The input-side gradients of one direction over all steps: dX (+)= DA W
/// (accumulating over directions) and dW = DA^T X, DA [rows, G] the gate
/// gradients of every step.
amprt_status inputGrads(amprt_context *ctx, const char *k, int64_t rows,
                        int64_t I, int64_t G, const float *DA, const float *W,
                        const float *X, float *dX, float *dW, bool accumulate) {
  AMPRT_TRY(sgemmRows(ctx, k, false, false, rows, I, G, DA, G, W, I, dX, I,
                      accumulate ? 1.f : 0.f));
  return sgemmRows(ctx, k, true, false, G, I, rows, DA, G, X, I, dW, I, 0.f);
}

amprt_status cudaLstm(amprt_context *ctx, T x, T w, T r, T b, T h0, T c0,
                      int32_t direction, T y, T y_h, T y_c, T all_c, T gates) {
  const char *k = "lstm";
  return guard(ctx, k, [&]() -> amprt_status {
    auto cpu = [&] {
      return amprt_lstm(ctx, x, w, r, b, h0, c0, direction, y, y_h, y_c, all_c,
                        gates);
    };
    RnnDims d;
    if (checkLstm(ctx, x, w, r, b, h0, c0, direction, y, y_h, y_c, all_c, gates,
                  d) ||
        d.S == 0 || d.B == 0 || d.I == 0 || d.H == 0)
      return onHost(ctx, cpu); // errors and empty problems
    int64_t S = d.S, B = d.B, I = d.I, H = d.H, D = d.D, G4 = 4 * H;
    F32Operands in;
    const float *X, *W, *R, *Bs, *H0, *C0;
    AMPRT_TRY(in.get(ctx, k, x, X));
    AMPRT_TRY(in.get(ctx, k, w, W));
    AMPRT_TRY(in.get(ctx, k, r, R));
    AMPRT_TRY(in.get(ctx, k, b, Bs));
    AMPRT_TRY(in.get(ctx, k, h0, H0));
    AMPRT_TRY(in.get(ctx, k, c0, C0));
    Scratch sY, sC, sA, sYh, sYc, sXW, sa, sZ;
    float *Y, *C, *A, *Yh, *Yc, *XW, *a, *Z;
    AMPRT_TRY(scratchF32(ctx, k, sY, S * D * B * H, Y));
    AMPRT_TRY(scratchF32(ctx, k, sC, S * D * B * H, C));
    AMPRT_TRY(scratchF32(ctx, k, sA, S * D * B * G4, A));
    AMPRT_TRY(scratchF32(ctx, k, sYh, D * B * H, Yh));
    AMPRT_TRY(scratchF32(ctx, k, sYc, D * B * H, Yc));
    AMPRT_TRY(scratchF32(ctx, k, sXW, S * B * G4, XW));
    AMPRT_TRY(scratchF32(ctx, k, sa, B * G4, a));
    AMPRT_TRY(scratchF32(ctx, k, sZ, B * H, Z, /*zero=*/true));
    cudaStream_t st = stream(ctx);
    unsigned grid = gridFor(B * H, kThreads);
    for (int64_t dir = 0; dir < D; ++dir) {
      const float *Wd = W + dir * G4 * I, *Rd = R + dir * G4 * H;
      const float *bias = Bs ? Bs + dir * 2 * G4 : nullptr;
      AMPRT_TRY(sgemmRows(ctx, k, false, true, S * B, G4, I, X, I, Wd, I, XW,
                          G4, 0.f));
      const float *hPrev = stateBefore(d, 0, direction, dir, nullptr, H0, Z);
      const float *cPrev = stateBefore(d, 0, direction, dir, nullptr, C0, Z);
      for (int64_t n = 0; n < S; ++n) {
        int64_t t = stepAt(d, n, direction, dir);
        AMPRT_TRY(copyF32(ctx, k, a, XW + t * B * G4, B * G4));
        AMPRT_TRY(sgemmRows(ctx, k, false, true, B, G4, H, hPrev, H, Rd, H, a,
                            G4, 1.f));
        float *ht = Y + (t * D + dir) * B * H, *ct = C + (t * D + dir) * B * H;
        lstmCellKernel<<<grid, kThreads, 0, st>>>(
            a, bias, cPrev, A + (t * D + dir) * B * G4, ct, ht, B, H);
        AMPRT_CUDA_LAUNCHED(ctx, k);
        hPrev = ht;
        cPrev = ct;
      }
      AMPRT_TRY(copyF32(ctx, k, Yh + dir * B * H, hPrev, B * H));
      AMPRT_TRY(copyF32(ctx, k, Yc + dir * B * H, cPrev, B * H));
    }
    AMPRT_TRY(storeOut(ctx, k, Y, y));
    AMPRT_TRY(storeOut(ctx, k, Yh, y_h));
    AMPRT_TRY(storeOut(ctx, k, Yc, y_c));
    AMPRT_TRY(storeOut(ctx, k, C, all_c));
    return storeOut(ctx, k, A, gates);
  });
}

amprt_status cudaLstmGrad(amprt_context *ctx, T x, T w, T r, T b, T h0, T c0,
                          T y, T all_c, T gates, T dy, T dy_h, T dy_c,
                          int32_t direction, T dx, T dw, T dr, T db, T dh0,
                          T dc0) {
  const char *k = "lstm_grad";
  return guard(ctx, k, [&]() -> amprt_status {
    auto cpu = [&] {
      return amprt_lstm_grad(ctx, x, w, r, b, h0, c0, y, all_c, gates, dy, dy_h,
                             dy_c, direction, dx, dw, dr, db, dh0, dc0);
    };
    RnnDims d;
    if (checkLstmGrad(ctx, x, w, r, b, h0, c0, y, all_c, gates, dy, dy_h, dy_c,
                      direction, dx, dw, dr, db, dh0, dc0, d) ||
        d.S == 0 || d.B == 0 || d.I == 0 || d.H == 0)
      return onHost(ctx, cpu); // errors and empty problems
    int64_t S = d.S, B = d.B, I = d.I, H = d.H, D = d.D, G4 = 4 * H;
    F32Operands in;
    const float *X, *W, *R, *H0, *C0, *Yf, *Cf, *Af, *gY, *gYh, *gYc;
    AMPRT_TRY(in.get(ctx, k, x, X));
    AMPRT_TRY(in.get(ctx, k, w, W));
    AMPRT_TRY(in.get(ctx, k, r, R));
    AMPRT_TRY(in.get(ctx, k, h0, H0));
    AMPRT_TRY(in.get(ctx, k, c0, C0));
    AMPRT_TRY(in.get(ctx, k, y, Yf));
    AMPRT_TRY(in.get(ctx, k, all_c, Cf));
    AMPRT_TRY(in.get(ctx, k, gates, Af));
    F32Operands grads; // the output gradients
    AMPRT_TRY(grads.get(ctx, k, dy, gY));
    AMPRT_TRY(grads.get(ctx, k, dy_h, gYh));
    AMPRT_TRY(grads.get(ctx, k, dy_c, gYc));
    Scratch sDX, sDW, sDR, sDB, sDH0, sDC0, sDA, sHP, sdH, sdC, sZ;
    float *dX, *dW, *dR, *dB, *dH0, *dC0, *DA, *HP, *dH, *dC, *Z;
    AMPRT_TRY(scratchF32(ctx, k, sDX, S * B * I, dX));
    AMPRT_TRY(scratchF32(ctx, k, sDW, D * G4 * I, dW));
    AMPRT_TRY(scratchF32(ctx, k, sDR, D * G4 * H, dR));
    AMPRT_TRY(scratchF32(ctx, k, sDB, D * 8 * H, dB));
    AMPRT_TRY(scratchF32(ctx, k, sDH0, D * B * H, dH0));
    AMPRT_TRY(scratchF32(ctx, k, sDC0, D * B * H, dC0));
    AMPRT_TRY(scratchF32(ctx, k, sDA, S * B * G4, DA));
    AMPRT_TRY(scratchF32(ctx, k, sHP, S * B * H, HP));
    AMPRT_TRY(scratchF32(ctx, k, sdH, B * H, dH));
    AMPRT_TRY(scratchF32(ctx, k, sdC, B * H, dC));
    AMPRT_TRY(scratchF32(ctx, k, sZ, B * H, Z, /*zero=*/true));
    cudaStream_t st = stream(ctx);
    unsigned grid = gridFor(B * H, kThreads);
    for (int64_t dir = 0; dir < D; ++dir) {
      const float *Wd = W + dir * G4 * I, *Rd = R + dir * G4 * H;
      AMPRT_TRY(copyF32(ctx, k, dH, gYh ? gYh + dir * B * H : Z, B * H));
      AMPRT_TRY(copyF32(ctx, k, dC, gYc ? gYc + dir * B * H : Z, B * H));
      for (int64_t n = S - 1; n >= 0; --n) {
        int64_t t = stepAt(d, n, direction, dir);
        // The states before step n: step n-1's, or the initial ones.
        const float *hPrev = stateBefore(d, n, direction, dir, Yf, H0, Z);
        const float *cPrev = stateBefore(d, n, direction, dir, Cf, C0, Z);
        int64_t at = (t * D + dir) * B;
        float *da = DA + t * B * G4;
        lstmCellGradKernel<<<grid, kThreads, 0, st>>>(
            Af + at * G4, Cf + at * H, cPrev, gY ? gY + at * H : nullptr, dH,
            dC, da, B, H);
        AMPRT_CUDA_LAUNCHED(ctx, k);
        // dH_{t-1} = da R (written after the cell kernel read dH).
        AMPRT_TRY(sgemmRows(ctx, k, false, false, B, H, G4, da, G4, Rd, H, dH,
                            H, 0.f));
        AMPRT_TRY(copyF32(ctx, k, HP + t * B * H, hPrev, B * H));
      }
      // Over all steps at once (rows of DA, X and HP are time steps).
      AMPRT_TRY(inputGrads(ctx, k, S * B, I, G4, DA, Wd, X, dX,
                           dW + dir * G4 * I, dir > 0));
      AMPRT_TRY(sgemmRows(ctx, k, true, false, G4, H, S * B, DA, G4, HP, H,
                          dR + dir * G4 * H, H, 0.f));
      biasGradKernel<<<gridFor(G4, kThreads), kThreads, 0, st>>>(
          DA, S * B, G4, dB + dir * 8 * H);
      AMPRT_CUDA_LAUNCHED(ctx, k);
      AMPRT_TRY(copyF32(ctx, k, dH0 + dir * B * H, dH, B * H));
      AMPRT_TRY(copyF32(ctx, k, dC0 + dir * B * H, dC, B * H));
    }
    AMPRT_TRY(storeOut(ctx, k, dX, dx));
    AMPRT_TRY(storeOut(ctx, k, dW, dw));
    AMPRT_TRY(storeOut(ctx, k, dR, dr));
    AMPRT_TRY(storeOut(ctx, k, dB, db));
    AMPRT_TRY(storeOut(ctx, k, dH0, dh0));
    return storeOut(ctx, k, dC0, dc0);
  });
}

//===----------------------------------------------------------------------===//
// GRU (gates z, r, h; linear_before_reset or not)
//===----------------------------------------------------------------------===//

/// z and r of one step (gruGates): ax [B, 3H] = X_t W^T, ah = H_{t-1} R^T (z
/// and r columns; all three with linear_before_reset), bias [6H] (Wb, Rb) or
/// NULL. Writes gates z, r and rh = r H_{t-1}.
__global__ void gruGatesKernel(const float *ax, const float *ah,
                               const float *bias, const float *hPrev,
                               float *gates, float *rh, int64_t B, int64_t H) {
  int64_t G3 = 3 * H;
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < B * H;
       e += int64_t(gridDim.x) * blockDim.x) {
    int64_t o = (e / H) * G3;
    rh[e] = gruGates(ax + o, ah + o, bias, e % H, H, hPrev[e], gates + o);
  }
}

/// h and H_t of one step (gruOut); ah's h columns hold H_{t-1} R_h^T (linear
/// before reset) or (r H_{t-1}) R_h^T.
__global__ void gruOutKernel(const float *ax, const float *ah,
                             const float *bias, const float *hPrev, bool lbr,
                             float *gates, float *ht, int64_t B, int64_t H) {
  int64_t G3 = 3 * H;
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < B * H;
       e += int64_t(gridDim.x) * blockDim.x) {
    int64_t o = (e / H) * G3;
    ht[e] = gruOut(ax + o, ah + o, bias, e % H, H, hPrev[e], lbr, gates + o);
  }
}

amprt_status cudaGru(amprt_context *ctx, T x, T w, T r, T b, T h0,
                     int32_t direction, int32_t linear_before_reset, T y, T y_h,
                     T gates) {
  const char *k = "gru";
  return guard(ctx, k, [&]() -> amprt_status {
    auto cpu = [&] {
      return amprt_gru(ctx, x, w, r, b, h0, direction, linear_before_reset, y,
                       y_h, gates);
    };
    RnnDims d;
    if (checkGru(ctx, x, w, r, b, h0, direction, y, y_h, gates, d) ||
        d.S == 0 || d.B == 0 || d.I == 0 || d.H == 0)
      return onHost(ctx, cpu); // errors and empty problems
    int64_t S = d.S, B = d.B, I = d.I, H = d.H, D = d.D, G3 = 3 * H;
    bool lbr = linear_before_reset != 0;
    F32Operands in;
    const float *X, *W, *R, *Bs, *H0;
    AMPRT_TRY(in.get(ctx, k, x, X));
    AMPRT_TRY(in.get(ctx, k, w, W));
    AMPRT_TRY(in.get(ctx, k, r, R));
    AMPRT_TRY(in.get(ctx, k, b, Bs));
    AMPRT_TRY(in.get(ctx, k, h0, H0));
    Scratch sY, sA, sYh, sXW, sah, srh, sZ;
    float *Y, *A, *Yh, *XW, *ah, *rh, *Z;
    AMPRT_TRY(scratchF32(ctx, k, sY, S * D * B * H, Y));
    AMPRT_TRY(scratchF32(ctx, k, sA, S * D * B * G3, A));
    AMPRT_TRY(scratchF32(ctx, k, sYh, D * B * H, Yh));
    AMPRT_TRY(scratchF32(ctx, k, sXW, S * B * G3, XW));
    AMPRT_TRY(scratchF32(ctx, k, sah, B * G3, ah));
    AMPRT_TRY(scratchF32(ctx, k, srh, B * H, rh));
    AMPRT_TRY(scratchF32(ctx, k, sZ, B * H, Z, /*zero=*/true));
    cudaStream_t st = stream(ctx);
    unsigned grid = gridFor(B * H, kThreads);
    for (int64_t dir = 0; dir < D; ++dir) {
      const float *Wd = W + dir * G3 * I, *Rd = R + dir * G3 * H;
      const float *bias = Bs ? Bs + dir * 2 * G3 : nullptr;
      AMPRT_TRY(sgemmRows(ctx, k, false, true, S * B, G3, I, X, I, Wd, I, XW,
                          G3, 0.f));
      const float *hPrev = stateBefore(d, 0, direction, dir, nullptr, H0, Z);
      for (int64_t n = 0; n < S; ++n) {
        int64_t t = stepAt(d, n, direction, dir);
        const float *ax = XW + t * B * G3;
        float *gt = A + (t * D + dir) * B * G3;
        float *ht = Y + (t * D + dir) * B * H;
        AMPRT_TRY(sgemmRows(ctx, k, false, true, B, lbr ? G3 : 2 * H, H, hPrev,
                            H, Rd, H, ah, G3, 0.f));
        gruGatesKernel<<<grid, kThreads, 0, st>>>(ax, ah, bias, hPrev, gt, rh,
                                                  B, H);
        AMPRT_CUDA_LAUNCHED(ctx, k);
        if (!lbr) // (r H_{t-1}) R_h^T
          AMPRT_TRY(sgemmRows(ctx, k, false, true, B, H, H, rh, H,
                              Rd + 2 * H * H, H, ah + 2 * H, G3, 0.f));
        gruOutKernel<<<grid, kThreads, 0, st>>>(ax, ah, bias, hPrev, lbr, gt,
                                                ht, B, H);
        AMPRT_CUDA_LAUNCHED(ctx, k);
        hPrev = ht;
      }
      AMPRT_TRY(copyF32(ctx, k, Yh + dir * B * H, hPrev, B * H));
    }
    AMPRT_TRY(storeOut(ctx, k, Y, y));
    AMPRT_TRY(storeOut(ctx, k, Yh, y_h));
    return storeOut(ctx, k, A, gates);
  });
}

/// One step's gate gradients (gruCellGrad, as Recurrent.cpp): da's z and h
/// columns, dPrev = gh z, hPrev kept in hp; with linear_before_reset also
/// da's r column and dq = da_h r (q = H_{t-1} R_h^T is given, Rb_h added
/// here), else rh = r H_{t-1}.
__global__ void gruGradKernel(const float *gates, const float *hPrev,
                              const float *gy, const float *dH, const float *q,
                              const float *bias, bool lbr, float *da,
                              float *dPrev, float *dq, float *rh, float *hp,
                              int64_t B, int64_t H) {
  int64_t G3 = 3 * H;
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < B * H;
       e += int64_t(gridDim.x) * blockDim.x) {
    int64_t o = (e / H) * G3;
    float gh = dH[e] + (gy ? gy[e] : 0.f);
    float dp, dqe = 0.f, rhe = 0.f;
    gruCellGrad(gates + o, bias, e % H, H, hPrev[e], gh, lbr, lbr ? q[e] : 0.f,
                da + o, dp, dqe, rhe);
    dPrev[e] = dp;
    hp[e] = hPrev[e];
    if (lbr)
      dq[e] = dqe;
    else
      rh[e] = rhe;
  }
}

/// Without linear_before_reset (gruResetGrad): ds = da_h R_h (given) gives
/// da's r column and adds ds r to dPrev; dq = da_h.
__global__ void gruResetGradKernel(const float *gates, const float *hPrev,
                                   const float *ds, float *da, float *dPrev,
                                   float *dq, int64_t B, int64_t H) {
  int64_t G3 = 3 * H;
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < B * H;
       e += int64_t(gridDim.x) * blockDim.x) {
    int64_t h = e % H, o = (e / H) * G3;
    float dp = dPrev[e];
    gruResetGrad(gates + o, h, H, ds[e], hPrev[e], da + o, dp);
    dPrev[e] = dp;
    dq[e] = da[o + 2 * H + h];
  }
}

amprt_status cudaGruGrad(amprt_context *ctx, T x, T w, T r, T b, T h0, T y,
                         T gates, T dy, T dy_h, int32_t direction,
                         int32_t linear_before_reset, T dx, T dw, T dr, T db,
                         T dh0) {
  const char *k = "gru_grad";
  return guard(ctx, k, [&]() -> amprt_status {
    auto cpu = [&] {
      return amprt_gru_grad(ctx, x, w, r, b, h0, y, gates, dy, dy_h, direction,
                            linear_before_reset, dx, dw, dr, db, dh0);
    };
    RnnDims d;
    if (checkGruGrad(ctx, x, w, r, b, h0, y, gates, dy, dy_h, direction, dx, dw,
                     dr, db, dh0, d) ||
        d.S == 0 || d.B == 0 || d.I == 0 || d.H == 0)
      return onHost(ctx, cpu); // errors and empty problems
    int64_t S = d.S, B = d.B, I = d.I, H = d.H, D = d.D, G3 = 3 * H;
    bool lbr = linear_before_reset != 0;
    F32Operands in;
    const float *X, *W, *R, *Bs, *H0, *Yf, *Af;
    AMPRT_TRY(in.get(ctx, k, x, X));
    AMPRT_TRY(in.get(ctx, k, w, W));
    AMPRT_TRY(in.get(ctx, k, r, R));
    AMPRT_TRY(in.get(ctx, k, b, Bs));
    AMPRT_TRY(in.get(ctx, k, h0, H0));
    AMPRT_TRY(in.get(ctx, k, y, Yf));
    AMPRT_TRY(in.get(ctx, k, gates, Af));
    F32Operands grads;
    const float *gY, *gYh;
    AMPRT_TRY(grads.get(ctx, k, dy, gY));
    AMPRT_TRY(grads.get(ctx, k, dy_h, gYh));
    Scratch sDX, sDW, sDR, sDB, sDH0, sDA, sDQ, sHP, sRH, sdH, sdP, sq, sds, sZ;
    float *dX, *dW, *dR, *dB, *dH0, *DA, *DQ, *HP, *RH, *dH, *dP, *q, *ds, *Z;
    AMPRT_TRY(scratchF32(ctx, k, sDX, S * B * I, dX));
    AMPRT_TRY(scratchF32(ctx, k, sDW, D * G3 * I, dW));
    AMPRT_TRY(scratchF32(ctx, k, sDR, D * G3 * H, dR));
    AMPRT_TRY(scratchF32(ctx, k, sDB, D * 6 * H, dB));
    AMPRT_TRY(scratchF32(ctx, k, sDH0, D * B * H, dH0));
    AMPRT_TRY(scratchF32(ctx, k, sDA, S * B * G3, DA));
    AMPRT_TRY(scratchF32(ctx, k, sDQ, S * B * H, DQ));
    AMPRT_TRY(scratchF32(ctx, k, sHP, S * B * H, HP));
    AMPRT_TRY(scratchF32(ctx, k, sRH, S * B * H, RH));
    AMPRT_TRY(scratchF32(ctx, k, sdH, B * H, dH));
    AMPRT_TRY(scratchF32(ctx, k, sdP, B * H, dP));
    AMPRT_TRY(scratchF32(ctx, k, sq, B * H, q));
    AMPRT_TRY(scratchF32(ctx, k, sds, B * H, ds));
    AMPRT_TRY(scratchF32(ctx, k, sZ, B * H, Z, /*zero=*/true));
    cudaStream_t st = stream(ctx);
    unsigned grid = gridFor(B * H, kThreads);
    for (int64_t dir = 0; dir < D; ++dir) {
      const float *Wd = W + dir * G3 * I, *Rd = R + dir * G3 * H;
      const float *Rh = Rd + 2 * H * H;
      const float *bias = Bs ? Bs + dir * 2 * G3 : nullptr;
      AMPRT_TRY(copyF32(ctx, k, dH, gYh ? gYh + dir * B * H : Z, B * H));
      for (int64_t n = S - 1; n >= 0; --n) {
        int64_t t = stepAt(d, n, direction, dir);
        const float *hPrev = stateBefore(d, n, direction, dir, Yf, H0, Z);
        int64_t at = (t * D + dir) * B;
        float *da = DA + t * B * G3, *dq = DQ + t * B * H;
        if (lbr) // q = H_{t-1} R_h^T
          AMPRT_TRY(sgemmRows(ctx, k, false, true, B, H, H, hPrev, H, Rh, H, q,
                              H, 0.f));
        gruGradKernel<<<grid, kThreads, 0, st>>>(
            Af + at * G3, hPrev, gY ? gY + at * H : nullptr, dH, q, bias, lbr,
            da, dP, dq, RH + t * B * H, HP + t * B * H, B, H);
        AMPRT_CUDA_LAUNCHED(ctx, k);
        if (!lbr) {
          // ds = da_h R_h, then da_r, dPrev += ds r and dq = da_h.
          AMPRT_TRY(sgemmRows(ctx, k, false, false, B, H, H, da + 2 * H, G3, Rh,
                              H, ds, H, 0.f));
          gruResetGradKernel<<<grid, kThreads, 0, st>>>(Af + at * G3, hPrev, ds,
                                                        da, dP, dq, B, H);
          AMPRT_CUDA_LAUNCHED(ctx, k);
        } else { // dPrev += dq R_h
          AMPRT_TRY(sgemmRows(ctx, k, false, false, B, H, H, dq, H, Rh, H, dP,
                              H, 1.f));
        }
        // dPrev += da_zr R_zr; it is the next (earlier) step's dH.
        AMPRT_TRY(sgemmRows(ctx, k, false, false, B, H, 2 * H, da, G3, Rd, H,
                            dP, H, 1.f));
        std::swap(dH, dP);
      }
      // Over all steps at once.
      AMPRT_TRY(inputGrads(ctx, k, S * B, I, G3, DA, Wd, X, dX,
                           dW + dir * G3 * I, dir > 0));
      AMPRT_TRY(sgemmRows(ctx, k, true, false, 2 * H, H, S * B, DA, G3, HP, H,
                          dR + dir * G3 * H, H, 0.f));
      AMPRT_TRY(sgemmRows(ctx, k, true, false, H, H, S * B, DQ, H,
                          lbr ? HP : RH, H, dR + dir * G3 * H + 2 * H * H, H,
                          0.f));
      float *bW = dB + dir * 6 * H;
      gruBiasGradKernel<<<gridFor(G3, kThreads), kThreads, 0, st>>>(
          DA, DQ, S * B, H, bW);
      AMPRT_CUDA_LAUNCHED(ctx, k);
      AMPRT_TRY(copyF32(ctx, k, dH0 + dir * B * H, dH, B * H));
    }
    AMPRT_TRY(storeOut(ctx, k, dX, dx));
    AMPRT_TRY(storeOut(ctx, k, dW, dw));
    AMPRT_TRY(storeOut(ctx, k, dR, dr));
    AMPRT_TRY(storeOut(ctx, k, dB, db));
    return storeOut(ctx, k, dH0, dh0);
  });
}

} // namespace

void amprt::cuda::registerRecurrent(KernelTable &t) {
  t.lstm = cudaLstm;
  t.lstm_grad = cudaLstmGrad;
  t.gru = cudaGru;
  t.gru_grad = cudaGruGrad;
}

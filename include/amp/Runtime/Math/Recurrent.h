//===- Recurrent.h - LSTM and GRU steps and cells ---------------*- C++ -*-===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// The LSTM and GRU of the CPU kernels (Recurrent.cpp) and the CUDA kernels
// (kernels/Recurrent.cu): the order of the time steps of a direction, the
// state each step starts from, and the cell equations of one element
// (batch row b, hidden unit h) forward and backward. The products (X W^T,
// H R^T, and those of the backward) are the callers': sgemm on the CPU,
// cuBLASLt on the device.
//
//   LSTM, gates i, o, f, c:  a = X_t W^T + H_{t-1} R^T + Wb + Rb
//     i, o, f = sigmoid(a_i, a_o, a_f), c = tanh(a_c)
//     C_t = f C_{t-1} + i c,  H_t = o tanh(C_t)
//   GRU, gates z, r, h:      z, r = sigmoid(X_t W_zr^T + H_{t-1} R_zr^T + b)
//     h = tanh(X_t W_h^T + Wb_h + r (H_{t-1} R_h^T + Rb_h))  linear before
//     reset h = tanh(X_t W_h^T + Wb_h + (r H_{t-1}) R_h^T + Rb_h)  otherwise
//     H_t = (1 - z) h + z H_{t-1}
//
// A row below is one batch row of a [B, G * H] matrix (the gates side by
// side, G = 4 or 3), `bias` a direction's [2 G H] biases (Wb then Rb) or
// NULL.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_RUNTIME_MATH_RECURRENT_H
#define AMP_RUNTIME_MATH_RECURRENT_H

#include "amp/Runtime/Math/Elementwise.h"
#include "amp/Runtime/Math/HostDevice.h"

#include <cmath>
#include <cstdint>

namespace amprt {

/// The sizes of an LSTM / GRU call: sequence, batch, input, hidden,
/// directions, gates.
struct RnnDims {
  int64_t S = 0, B = 0, I = 0, H = 0, D = 0, G = 0;
};
/// The time step of the n-th step of direction `dir` (1: reversed).
AMPRT_HD inline int64_t stepAt(const RnnDims &d, int64_t n, int32_t direction,
                               int64_t dir) {
  bool reversed = direction == 1 || (direction == 2 && dir == 1);
  return reversed ? d.S - 1 - n : n;
}
/// The state ([B, H]) before the n-th step of direction dir: the previous
/// step's (in `all`, [S, D, B, H]), or the initial one (`initial`, [D, B,
/// H]; `zeros` when absent). Host and device pointers alike.
inline const float *stateBefore(const RnnDims &d, int64_t n, int32_t direction,
                                int64_t dir, const float *all,
                                const float *initial, const float *zeros) {
  if (n > 0)
    return all + (stepAt(d, n - 1, direction, dir) * d.D + dir) * d.B * d.H;
  return initial ? initial + dir * d.B * d.H : zeros;
}

//===----------------------------------------------------------------------===//
// LSTM
//===----------------------------------------------------------------------===//

/// The forward cell of element h: from the row of products `a` ([4H]) and
/// C_{t-1}, the activated gates (i, o, f, c into gates[0..3]), C_t and H_t.
AMPRT_HD inline void lstmCell(const float *a, const float *bias, int64_t h,
                              int64_t H, float cPrev, float gates[4],
                              float &cNext, float &hNext) {
  int64_t G4 = 4 * H;
  float v[4];
  for (int g = 0; g < 4; ++g) {
    v[g] = a[g * H + h];
    if (bias)
      v[g] += bias[g * H + h] + bias[G4 + g * H + h];
  }
  float ig = sigmoid(v[0]), og = sigmoid(v[1]), fg = sigmoid(v[2]),
        cg = tanhf(v[3]);
  cNext = fg * cPrev + ig * cg;
  hNext = og * tanhf(cNext);
  gates[0] = ig;
  gates[1] = og;
  gates[2] = fg;
  gates[3] = cg;
}

/// The backward cell of element h: from the row of activated gates
/// ([4H]), C_t, C_{t-1} and gh = dH_t (the carried gradient plus dY_t),
/// the row of gate gradients da ([4H], before the activations); dC carries
/// dC_t in and dC_{t-1} out.
AMPRT_HD inline void lstmCellGrad(const float *gates, int64_t h, int64_t H,
                                  float c, float cPrev, float gh, float &dC,
                                  float *da) {
  float ig = gates[h], og = gates[H + h], fg = gates[2 * H + h],
        cg = gates[3 * H + h];
  float tc = tanhf(c);
  float gc = dC + gh * og * (1.f - tc * tc);
  da[h] = gc * cg * ig * (1.f - ig);
  da[H + h] = gh * tc * og * (1.f - og);
  da[2 * H + h] = gc * cPrev * fg * (1.f - fg);
  da[3 * H + h] = gc * ig * (1.f - cg * cg);
  dC = gc * fg;
}

//===----------------------------------------------------------------------===//
// GRU
//===----------------------------------------------------------------------===//

/// Gates z and r of element h from the rows ax = X_t W^T and ah = H_{t-1}
/// R^T ([3H]; their z and r columns), into the row `gates`; returns r
/// H_{t-1} (the operand of (r H_{t-1}) R_h^T).
AMPRT_HD inline float gruGates(const float *ax, const float *ah,
                               const float *bias, int64_t h, int64_t H,
                               float hPrev, float *gates) {
  int64_t G3 = 3 * H;
  float z = ax[h] + ah[h], rr = ax[H + h] + ah[H + h];
  if (bias) {
    z += bias[h] + bias[G3 + h];
    rr += bias[H + h] + bias[G3 + H + h];
  }
  gates[h] = sigmoid(z);
  gates[H + h] = sigmoid(rr);
  return sigmoid(rr) * hPrev;
}

/// Gate h of element h and H_t: ah's h column holds H_{t-1} R_h^T (linear
/// before reset, `lbr`) or (r H_{t-1}) R_h^T. Writes the gate into the row
/// `gates` (z and r already there); returns H_t.
AMPRT_HD inline float gruOut(const float *ax, const float *ah,
                             const float *bias, int64_t h, int64_t H,
                             float hPrev, bool lbr, float *gates) {
  int64_t G3 = 3 * H;
  float z = gates[h], rr = gates[H + h];
  float q = ah[2 * H + h] + (bias ? bias[G3 + 2 * H + h] : 0.f);
  float a = ax[2 * H + h] + (bias ? bias[2 * H + h] : 0.f) + (lbr ? rr * q : q);
  float hc = tanhf(a);
  gates[2 * H + h] = hc;
  return (1.f - z) * hc + z * hPrev;
}

/// The backward cell of element h: from the row of gates and gh = dH_t,
/// the gradients of the row da's z and h columns and dPrev = gh z (dH_{t-1}
/// before the products). With lbr, q is H_{t-1} R_h^T (without Rb_h), and
/// da's r column and dq = da_h r are written too; without, rh = r H_{t-1}
/// (gruResetGrad completes da's r column once da_h R_h is known).
AMPRT_HD inline void gruCellGrad(const float *gates, const float *bias,
                                 int64_t h, int64_t H, float hPrev, float gh,
                                 bool lbr, float q, float *da, float &dPrev,
                                 float &dq, float &rh) {
  int64_t G3 = 3 * H;
  float z = gates[h], rr = gates[H + h], hc = gates[2 * H + h];
  da[h] = gh * (hPrev - hc) * z * (1.f - z);
  da[2 * H + h] = gh * (1.f - z) * (1.f - hc * hc);
  dPrev = gh * z;
  if (lbr) {
    float qq = q + (bias ? bias[G3 + 2 * H + h] : 0.f);
    da[H + h] = da[2 * H + h] * qq * rr * (1.f - rr);
    dq = da[2 * H + h] * rr;
  } else {
    rh = rr * hPrev;
  }
}

/// Without linear_before_reset: from ds = da_h R_h, da's r column of
/// element h, and ds r added to dPrev.
AMPRT_HD inline void gruResetGrad(const float *gates, int64_t h, int64_t H,
                                  float ds, float hPrev, float *da,
                                  float &dPrev) {
  float rr = gates[H + h];
  da[H + h] = ds * hPrev * rr * (1.f - rr);
  dPrev += ds * rr;
}

} // namespace amprt

#endif // AMP_RUNTIME_MATH_RECURRENT_H

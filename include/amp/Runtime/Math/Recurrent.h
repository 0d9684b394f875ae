//===- Recurrent.h - LSTM and GRU steps and cells ---------------*- C++ -*-===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// The LSTM and GRU of the CPU kernels (Recurrent.cpp) and the CUDA kernels
// (kernels/Recurrent.cu): the order of the time steps of a direction and
// the state each step starts from.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_RUNTIME_MATH_RECURRENT_H
#define AMP_RUNTIME_MATH_RECURRENT_H

#include "amp/Runtime/Math/HostDevice.h"

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

} // namespace amprt

#endif // AMP_RUNTIME_MATH_RECURRENT_H

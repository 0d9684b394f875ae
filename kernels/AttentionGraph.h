//===- AttentionGraph.h - cuDNN frontend graphs of attention ----*- C++ -*-===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// Private to kernels/: what Attention.cu (the calls, their kernels) asks of
// AttentionGraph.cpp (the cuDNN frontend's fused-attention graphs). The
// frontend's headers are compiled there by the host C++ compiler alone:
// under nvcc, which parses them once per GPU architecture, they take
// minutes. Plain C++ (no CUDA syntax), so both sides include it.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_KERNELS_ATTENTIONGRAPH_H
#define AMP_KERNELS_ATTENTIONGRAPH_H

#include <cudnn.h>

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>

namespace amprt {
namespace cuda {
namespace attention {

/// The [b, h, s, d] operands, in the order of Ops.def's views: q, k, v,
/// o (y), then the backward's dO (dy), dQ, dK, dV.
enum Operand : int { opQ, opK, opV, opO, opDO, opDQ, opDK, opDV, kOperands };

/// One attention problem as cuDNN sees it: q [b, h, sq, d], k [b, h, sk,
/// d], v [b, h, sk, dv], o and dO [b, h, sq, dv], dQ, dK, dV as q, k, v,
/// each with its own element strides (stride[3] is 1; the forward's
/// problem leaves the backward's operands at 0), Stats [b, h, sq, 1] f32
/// packed.
struct Problem {
  bool f16 = true; // else bf16
  int64_t b = 0, h = 0, sq = 0, sk = 0, d = 0, dv = 0;
  int64_t stride[kOperands][4] = {};
  float scale = 0;
  bool stats = false; // the forward writes lse
  /// The bias, when `bias`: [bb, bh, sq, sk] with element strides
  /// `bstride` (bstride[3] is 1).
  bool bias = false;
  int64_t bb = 1, bh = 1;
  int64_t bstride[4] = {};
};

/// The UIDs of the graphs' tensors, the keys of runPlan's pointers.
enum Uid : int64_t { kQ = 1, kK, kV, kO, kStats, kBias, kDO, kDQ, kDK, kDV };

/// A built graph (opaque here).
struct Plan;

/// Builds the forward (sdpa: q, k, v, bias -> o, stats) or, with
/// `backward`, the backward graph (sdpa_backward: q, k, v, bias, o, do,
/// stats -> dq, dk, dv) of p on handle h, and its execution plan. Null when
/// the frontend or cuDNN turns the problem down at any step (validation, no
/// engine, an engine that does not support it) or throws.
std::shared_ptr<Plan> buildPlan(cudnnHandle_t h, const Problem &p,
                                bool backward);

/// The device workspace, in bytes, that running the plan needs.
int64_t planWorkspace(const Plan &plan);

/// Queues the plan on h's stream with the tensors' device pointers by Uid
/// and `workspace` (planWorkspace bytes); an empty string when it was
/// queued, else the frontend's message.
std::string runPlan(const Plan &plan, cudnnHandle_t h,
                    std::unordered_map<int64_t, void *> &pointers,
                    void *workspace);

} // namespace attention
} // namespace cuda
} // namespace amprt

#endif // AMP_KERNELS_ATTENTIONGRAPH_H

//===- AMPRanges.h - measured value ranges for the AMP policy ---*- C++ -*-===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// What `amp-run --collect-ranges stats.json` measures over K fp32 steps and
// `auto-mixed-precision{ranges=stats.json}` reads: per ONNX value, the
// largest magnitude, the smallest nonzero magnitude and the fraction of its
// nonzero elements below the smallest normal of fp16 (a gradient's values
// taken as the loss scale would make them), and the fraction of its varying
// elements that fp16 and bf16 would not tell from its mean. The pass keeps
// fp32 the nodes whose outputs or inputs would overflow the low type, lose
// more than a stated fraction to underflow, or lose their variation to
// rounding (docs/Diagnostics.md, "A policy from measured ranges"). The
// file is JSON (unresolved_* may be absent: 0):
//
//   {"format": "amp-ranges", "version": 1, "steps": 4,
//    "loss_scale": 65536,
//    "values": {"fc_out": {"max_abs": 1.3e5, "min_nonzero": 2.1e-3,
//                          "below_normal": 0.0, "count": 32,
//                          "gradient": false, "unresolved_fp16": 0.0,
//                          "unresolved_bf16": 0.0}, ...}}
//
//===----------------------------------------------------------------------===//

#ifndef AMP_DIALECT_TRAIN_TRANSFORMS_AMPRANGES_H
#define AMP_DIALECT_TRAIN_TRANSFORMS_AMPRANGES_H

#include "amp/Dialect/Train/Transforms/AMPPolicy.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <optional>
#include <string>

namespace amp::train {

/// fp16's smallest normal value, 2^-14.
inline constexpr double kFp16SmallestNormal = 6.103515625e-05;

struct AMPValueRange {
  /// Largest |x| over the steps (finite values).
  double maxAbs = 0;
  /// Smallest nonzero |x| over the steps (0: none was nonzero).
  double minNonzero = 0;
  /// Of the nonzero elements seen, the fraction whose |x| (times the loss
  /// scale for a gradient) is below kFp16SmallestNormal.
  double belowNormal = 0;
  /// Elements seen (over all steps).
  int64_t count = 0;
  /// A gradient (ORT's `<x>_grad` names): scaled by the loss scale.
  bool gradient = false;
  /// Of the elements that differ from their step's mean m, the fraction
  /// within half of fp16's (bf16's) spacing at m of it: the part of the
  /// value that varies, which the type would lose (a base weight plus a
  /// small trained change).
  double unresolvedFp16 = 0, unresolvedBf16 = 0;
};

struct AMPRanges {
  int64_t steps = 0;
  /// The loss scale gradients were taken under (belowNormal).
  double lossScale = 1;
  llvm::StringMap<AMPValueRange> values;
};

/// Reads a ranges file; an error names the file and what is wrong.
llvm::Expected<AMPRanges> readAMPRanges(llvm::StringRef path);
/// Writes `ranges` to `path` (whole, or not at all).
llvm::Error writeAMPRanges(llvm::StringRef path, const AMPRanges &ranges);

/// The thresholds of the ranges policy (auto-mixed-precision options).
struct AMPRangePolicy {
  const AMPRanges *ranges = nullptr;
  /// Keep fp32 when max |x| times this reaches the low type's largest
  /// finite value.
  double margin = 2;
  /// Keep fp32 when more than this fraction of the nonzero values fall
  /// below fp16's smallest normal (fp16 only).
  double underflowLimit = 0.25;
  /// Keep fp32 when more than this fraction of a value's varying elements
  /// lie within half the low type's spacing of its mean (the change is
  /// lost to rounding).
  double resolutionLimit = 0.5;

  /// Why a node with these output values must stay fp32 in `mode` ("max
  /// |y| 1.3e+05 over 4 steps > 65504 / 2"), or nullopt.
  std::optional<std::string> keepReason(llvm::ArrayRef<llvm::StringRef> outputs,
                                        AMPMode mode) const;
};

} // namespace amp::train

#endif // AMP_DIALECT_TRAIN_TRANSFORMS_AMPRANGES_H

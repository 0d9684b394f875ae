//===- AMPReport.h - Summary and JSON report of the AMP pass ----*- C++ -*-===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//

#ifndef AMP_DIALECT_TRAIN_TRANSFORMS_AMPREPORT_H
#define AMP_DIALECT_TRAIN_TRANSFORMS_AMPREPORT_H

#include "amp/Dialect/Train/Transforms/AMPPolicy.h"
#include "amp/Dialect/Train/Transforms/TensorCoreAlignment.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"
#include <string>
#include <vector>

namespace amp::train {

/// The counters of the summary (docs/AutoMixedPrecision.md defines each).
struct AMPSummary {
  unsigned totalProcessable = 0;
  unsigned recognized = 0;
  unsigned converted = 0;
  unsigned lowPrecisionCasts = 0;
  unsigned allowlistedConverted = 0;
  unsigned denylistedBlocking = 0;
  unsigned blockedByDenylisted = 0;

  /// Counts one processable node: its list, whether it was converted, and
  /// whether deny paint reached one of its vertices.
  void countNode(AMPList list, bool converted, bool denied);
};

/// The decision about one node.
struct AMPNodeRecord {
  std::string name, domain, opType;
  AMPList list = AMPList::None;
  bool lowPrecision = false;
  std::string reason;
};

/// A GEMM or convolution the pass converted, and its Tensor Core sizes.
struct AMPTensorCoreRecord {
  std::string name, opType;
  std::vector<TensorCoreSize> sizes;
  /// Every known size is a multiple of kTensorCoreMultiple.
  bool aligned() const {
    for (const TensorCoreSize &s : sizes)
      if (!s.aligned())
        return false;
    return true;
  }
  /// Some size is symbolic (judged on the others).
  bool partlyKnown() const {
    for (const TensorCoreSize &s : sizes)
      if (s.value < 0)
        return true;
    return false;
  }
};

/// One inserted cast.
struct AMPCastRecord {
  std::string name;  ///< node name of the Cast
  std::string input; ///< ONNX name of the value cast
  std::string to;    ///< "fp16", "bf16" or "fp32"
};

struct AMPReport {
  AMPMode mode = AMPMode::FP16;
  AMPSummary summary;
  std::vector<AMPNodeRecord> nodes;
  std::vector<AMPCastRecord> casts;
  /// The converted GEMMs and convolutions, in graph order.
  std::vector<AMPTensorCoreRecord> tensorCore;
  /// A node the measured ranges kept fp32 (ranges=): name, op type, why.
  struct RangeKept {
    std::string name, opType, why;
  };
  std::vector<RangeKept> rangeKept;
  /// The ranges file (ranges=), for the summary; empty without one.
  std::string rangesPath;
  /// Whether any graph had an allow-list node to convert. Without one the
  /// pass leaves the module unchanged and, as Grappler does, prints no
  /// summary ("No allowlist ops found, nothing to do").
  bool foundAllowOps = false;

  /// The stable seven-line summary text, then (when the pass converted a
  /// GEMM or convolution) the Tensor Core alignment: one line of counts and
  /// one per misaligned node (the first ten).
  void printSummary(llvm::raw_ostream &os) const;
  /// Writes the JSON report to `path`.
  llvm::Error writeJSON(llvm::StringRef path) const;
};

} // namespace amp::train

#endif // AMP_DIALECT_TRAIN_TRANSFORMS_AMPREPORT_H

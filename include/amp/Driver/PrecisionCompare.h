//===- PrecisionCompare.h - every value of AMP against fp32 -----*- C++ -*-===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// amp-run --compare-precision: the same weights and batches train K steps
// in fp32 and in AMP, each step's programs call by call. Every value a
// call writes that holds a named ONNX value is compared with the fp32 run's
// value of that name: the error it carries (relative, max and mean over its
// significant elements), the error its node adds (the node's AMP call run
// again on the fp32 run's inputs, rounded to the call's types), the nonzero
// values that became 0 and the finite ones that became inf or NaN. Worst
// first on stderr, all of it as JSON, and the nodes to keep fp32 (the AMP
// pass's keep-fp32=), checked by a third run (docs/Diagnostics.md).
//
//===----------------------------------------------------------------------===//

#ifndef AMP_DRIVER_PRECISIONCOMPARE_H
#define AMP_DRIVER_PRECISIONCOMPARE_H

#include "amp/Driver/Trainer.h"

namespace amp::driver {

struct CompareOptions {
  std::string mode = "fp16"; ///< the AMP run's low type
  std::string reportPath;    ///< JSON with every value, or empty
  /// The training graph as Graphviz dot, each node filled by the error it
  /// adds, or empty.
  std::string dotPath;
  unsigned top = 20; ///< rows of the table on stderr
  /// A value is within tolerance when its relative error is at most this.
  double tolerance = 1e-2;
  /// On the CPU: the fp32 run records the next step while the AMP run
  /// compares this one, from copies of its values (while one program's fit
  /// a 32nd of the memory); else the runs take turns, one step's
  /// values read in place.
  bool overlap = true;
};

/// Runs the comparison for the model and data of `train` (its steps; its
/// output files are not written).
llvm::Error comparePrecision(const TrainOptions &train,
                             const CompareOptions &opts,
                             llvm::raw_ostream &status);

} // namespace amp::driver

#endif // AMP_DRIVER_PRECISIONCOMPARE_H
